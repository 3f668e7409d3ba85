//! The geohash arithmetic of Redis 7.0 (`geohash.c` and `geohash_helper.c`), ported expression
//! by expression so that every double comes out bit for bit as redis-server computes it: a point
//! that Redis finds at the edge of a radius is found here too, and the distances print alike.
//!
//! A GEO member's score is a 52-bit interleaved geohash (step 26: 26 bits of latitude on the even
//! bit positions, 26 of longitude on the odd ones), over longitude [-180, 180] and latitude
//! [-85.05112878, 85.05112878] (the Web Mercator limits), read back as an integer-valued double:
//!
//! ```text
//!  bit  51 50 49 48 … 1  0
//!       x25 y25 x24 y24 … x0 y0      y = latitude cell  (lat - min) / (max - min) * 2^26
//!                                     x = longitude cell (lon + 180) / 360 * 2^26
//! ```
//!
//! A search covers its shape with the 3×3 geohash boxes of one step around the centre
//! (`areas_by_shape`): each box is one score range `[hash << (52 - 2·step), (hash + 1) << …)`,
//! so the search reads at most nine ranges of the sorted set. Boxes that cannot touch the shape's
//! bounding box are dropped (their hash zeroed), as Redis drops them.
//!
//! The trigonometry goes through the platform's libm (`f64::sin` and friends call glibc's `sin`,
//! the same function redis-server links), and the expressions keep C's order of operations; x86-64
//! C does not contract `a * b + c` into an FMA without `-mfma`, and Rust never does.

// Every comparison here is one Redis makes on doubles, exactly.
#![allow(clippy::float_cmp)]

/// Bits of precision per coordinate of a stored score (26 × 2 = 52 bits).
pub const STEP_MAX: u8 = 26;
pub const LAT_MIN: f64 = -85.051_128_78;
pub const LAT_MAX: f64 = 85.051_128_78;
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;

/// `M_PI / 180.0`, Redis's `D_R`.
const D_R: f64 = std::f64::consts::PI / 180.0;
/// Earth's quadratic mean radius for WGS-84, as Redis takes it.
pub const EARTH_RADIUS_IN_METERS: f64 = 6_372_797.560_856;
const MERCATOR_MAX: f64 = 20_037_726.37;

/// A geohash of `step` bits per coordinate (`GeoHashBits`); all zero means "no box".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bits {
    pub bits: u64,
    pub step: u8,
}

impl Bits {
    /// `HASHISZERO`: a box removed from the search.
    pub fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// `geohashAlign52Bits`: the hash as the first score of its box.
    pub fn align52(self) -> u64 {
        self.bits << (52 - u32::from(self.step) * 2)
    }

    /// `scoresOfGeoHashBox`: the box's scores, `min` included and `max` excluded.
    pub fn score_range(self) -> (f64, f64) {
        let next = Bits {
            bits: self.bits.wrapping_add(1),
            step: self.step,
        };
        (self.align52() as f64, next.align52() as f64)
    }
}

/// A coordinate interval (`GeoHashRange`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// The WGS84 ranges every stored score is relative to (`geohashGetCoordRange`).
pub const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
pub const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// The rectangle a hash designates (`GeoHashArea`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

/// The eight boxes around one, in Redis's struct order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Neighbors {
    pub north: Bits,
    pub east: Bits,
    pub west: Bits,
    pub south: Bits,
    pub north_east: Bits,
    pub south_east: Bits,
    pub north_west: Bits,
    pub south_west: Bits,
}

/// `interleave64`: the bits of `xlo` on the even positions, those of `ylo` on the odd ones.
fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555_5555_5555_5555,
        0x3333_3333_3333_3333,
        0x0F0F_0F0F_0F0F_0F0F,
        0x00FF_00FF_00FF_00FF,
        0x0000_FFFF_0000_FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let mut x = u64::from(xlo);
    let mut y = u64::from(ylo);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// `deinterleave64`: the even bits in the low half, the odd bits in the high half.
fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555_5555_5555_5555,
        0x3333_3333_3333_3333,
        0x0F0F_0F0F_0F0F_0F0F,
        0x00FF_00FF_00FF_00FF,
        0x0000_FFFF_0000_FFFF,
        0x0000_0000_FFFF_FFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = interleaved;
    let mut y = interleaved >> 1;
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// `geohashEncode`: the hash of a point at `step` bits per coordinate, or `None` outside the
/// WGS84 limits or the given ranges.
pub fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<Bits> {
    if step > 32 || step == 0 {
        return None;
    }
    // Callers pass parsed or decoded coordinates, never NaN (for which C would go on).
    if !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude) {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let mut lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min);
    let mut long_offset = (longitude - long_range.min) / (long_range.max - long_range.min);
    lat_offset *= (1u64 << step) as f64;
    long_offset *= (1u64 << step) as f64;
    Some(Bits {
        bits: interleave64(lat_offset as u32, long_offset as u32),
        step,
    })
}

/// `geohashEncodeWGS84`.
pub fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<Bits> {
    encode(LONG_RANGE, LAT_RANGE, longitude, latitude, step)
}

/// `geohashDecode`: the rectangle of `hash`, or `None` for a zeroed hash.
pub fn decode(long_range: Range, lat_range: Range, hash: Bits) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let step = hash.step;
    let hash_sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = hash_sep as u32;
    let ilono = (hash_sep >> 32) as u32;
    let cells = (1u64 << step) as f64;
    // `ilato + 1` is unsigned int arithmetic in C: it wraps.
    Some(Area {
        latitude: Range {
            min: lat_range.min + (f64::from(ilato) * 1.0 / cells) * lat_scale,
            max: lat_range.min + (f64::from(ilato.wrapping_add(1)) * 1.0 / cells) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (f64::from(ilono) * 1.0 / cells) * long_scale,
            max: long_range.min + (f64::from(ilono.wrapping_add(1)) * 1.0 / cells) * long_scale,
        },
    })
}

/// `geohashDecodeAreaToLongLat`: the centre of `area`, clamped to the WGS84 limits. The C
/// expression `(min + max) / 2` is kept as written.
#[allow(clippy::manual_midpoint)]
fn area_center(area: &Area) -> [f64; 2] {
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [lon, lat]
}

/// `(uint64_t)score` as gcc compiles it for x86-64 (no AVX-512): below 2^63 a signed truncation
/// (so -1.5 becomes 2^64 - 1), above it the truncation of `score - 2^63` with bit 63 flipped;
/// out of range or NaN gives the CPU's "integer indefinite" 0x8000_0000_0000_0000 before that.
/// Scores of GEOADD are exact integers below 2^53, but any ZADD score can be decoded.
pub fn score_to_u64(score: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if score >= TWO_63 {
        (truncate_i64(score - TWO_63) as u64) ^ (1 << 63)
    } else {
        truncate_i64(score) as u64
    }
}

/// `(long long)value` on x86-64 (`cvttsd2si`): truncation, and `i64::MIN` when out of range.
pub fn truncate_i64(value: f64) -> i64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if (-TWO_63..TWO_63).contains(&value) {
        value as i64
    } else {
        i64::MIN
    }
}

/// `decodeGeohash`: the (longitude, latitude) a score stands for. Redis never fails here: its
/// hash has step 26, so it is never the zero hash, whatever the score.
pub fn decode_score(score: f64) -> [f64; 2] {
    let hash = Bits {
        bits: score_to_u64(score),
        step: STEP_MAX,
    };
    let area = decode(LONG_RANGE, LAT_RANGE, hash).expect("a step-26 hash is never zero");
    area_center(&area)
}

/// The score GEOADD stores for a point already checked against the limits.
pub fn score_of(longitude: f64, latitude: f64) -> u64 {
    encode_wgs84(longitude, latitude, STEP_MAX).map_or(0, Bits::align52)
}

/// GEOHASH's 11 characters for a score: the point re-encoded over latitude ±90 (the standard
/// geohash), 52 bits in ten base-32 characters and a final `0`.
pub fn standard_geohash(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [lon, lat] = decode_score(score);
    let lat_range = Range {
        min: -90.0,
        max: 90.0,
    };
    let bits = encode(LONG_RANGE, lat_range, lon, lat, STEP_MAX).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

/// `geohash_move_x`: the box `d` (±1) columns east or west, wrapping around the antimeridian.
fn move_x(hash: &mut Bits, d: i8) {
    if d == 0 {
        return;
    }
    let mut x = hash.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = hash.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64 >> (64 - u32::from(hash.step) * 2);
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64 >> (64 - u32::from(hash.step) * 2);
    hash.bits = x | y;
}

/// `geohash_move_y`: the box `d` (±1) rows north or south.
fn move_y(hash: &mut Bits, d: i8) {
    if d == 0 {
        return;
    }
    let x = hash.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = hash.bits & 0x5555_5555_5555_5555;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64 >> (64 - u32::from(hash.step) * 2);
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555_5555_5555_5555u64 >> (64 - u32::from(hash.step) * 2);
    hash.bits = x | y;
}

/// `geohashNeighbors`.
pub fn neighbors(hash: Bits) -> Neighbors {
    let moved = |dx: i8, dy: i8| {
        let mut h = hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    Neighbors {
        east: moved(1, 0),
        west: moved(-1, 0),
        south: moved(0, -1),
        north: moved(0, 1),
        north_west: moved(-1, 1),
        north_east: moved(1, 1),
        south_east: moved(1, -1),
        south_west: moved(-1, -1),
    }
}

fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// `geohashEstimateStepsByRadius`: the step whose boxes are about as wide as the radius, one or
/// two coarser towards the poles, within 1..=26.
pub fn estimate_steps_by_radius(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range_meters = range_meters;
    let mut step: i32 = 1;
    // Bounded: the radius doubles each turn (at most ~1100 turns from the smallest double; a NaN
    // radius never enters, as in C).
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2;
    // Written as Redis writes it (a range test would differ for NaN, which never comes).
    #[allow(clippy::manual_range_contains)]
    if lat > 66.0 || lat < -66.0 {
        step -= 1;
        if lat > 80.0 || lat < -80.0 {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// The shape of a search (`GeoShape`): a circle of `radius` or a `width` × `height` box, in the
/// request's unit, `conversion` metres per unit, around `xy` (longitude, latitude).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub kind: ShapeKind,
    pub xy: [f64; 2],
    pub conversion: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ShapeKind {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// `geohashBoundingBox`: [min longitude, min latitude, max longitude, max latitude].
pub fn bounding_box(shape: &Shape) -> [f64; 4] {
    let [longitude, latitude] = shape.xy;
    let (height, width) = match shape.kind {
        ShapeKind::Radius(r) => (shape.conversion * r, shape.conversion * r),
        ShapeKind::Box { width, height } => (
            shape.conversion * (height / 2.0),
            shape.conversion * (width / 2.0),
        ),
    };
    let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
    let long_delta_top =
        rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude + lat_delta).cos());
    let long_delta_bottom =
        rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude - lat_delta).cos());
    // The wider edge is the one nearer the equator.
    let long_delta = if latitude < 0.0 {
        long_delta_bottom
    } else {
        long_delta_top
    };
    [
        longitude - long_delta,
        latitude - lat_delta,
        longitude + long_delta,
        latitude + lat_delta,
    ]
}

/// The nine boxes a search reads, centre first then N, S, E, W, NE, NW, SE, SW (the order of
/// `membersOfAllNeighbors`); a removed box is the zero hash.
pub fn areas_by_shape(shape: &Shape) -> [Bits; 9] {
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(shape);
    let [longitude, latitude] = shape.xy;
    let mut radius_meters = match shape.kind {
        ShapeKind::Radius(r) => r,
        ShapeKind::Box { width, height } => {
            ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
        }
    };
    radius_meters *= shape.conversion;
    let mut steps = estimate_steps_by_radius(radius_meters, latitude);
    let (mut hash, mut around, mut area) = boxes_at(longitude, latitude, steps);
    // The estimated step may be too fine when the area sits near an edge of its box: one of the
    // four sides then does not reach the bounding box, and one step coarser is used.
    let side = |h: Bits| decode(LONG_RANGE, LAT_RANGE, h).unwrap_or_default();
    let decrease_step = side(around.north).latitude.max < max_lat
        || side(around.south).latitude.min > min_lat
        || side(around.east).longitude.max < max_lon
        || side(around.west).longitude.min > min_lon;
    if steps > 1 && decrease_step {
        steps -= 1;
        (hash, around, area) = boxes_at(longitude, latitude, steps);
    }
    if steps >= 2 {
        prune(&mut around, &area, [min_lon, min_lat, max_lon, max_lat]);
    }
    let n = around;
    [
        hash,
        n.north,
        n.south,
        n.east,
        n.west,
        n.north_east,
        n.north_west,
        n.south_east,
        n.south_west,
    ]
}

/// The box of a point at `steps`, its neighbours and its rectangle.
fn boxes_at(longitude: f64, latitude: f64, steps: u8) -> (Bits, Neighbors, Area) {
    // In range by construction (a centre is validated or decoded); Redis ignores the result and
    // would search the zero-bits hash of this step, as the default does.
    let hash = encode(LONG_RANGE, LAT_RANGE, longitude, latitude, steps).unwrap_or(Bits {
        bits: 0,
        step: steps,
    });
    let area = decode(LONG_RANGE, LAT_RANGE, hash).unwrap_or_default();
    (hash, neighbors(hash), area)
}

/// Removes the neighbours on the sides where the centre box already covers the bounding box.
fn prune(n: &mut Neighbors, area: &Area, [min_lon, min_lat, max_lon, max_lat]: [f64; 4]) {
    let zero = Bits::default();
    if area.latitude.min < min_lat {
        (n.south, n.south_west, n.south_east) = (zero, zero, zero);
    }
    if area.latitude.max > max_lat {
        (n.north, n.north_east, n.north_west) = (zero, zero, zero);
    }
    if area.longitude.min < min_lon {
        (n.west, n.south_west, n.north_west) = (zero, zero, zero);
    }
    if area.longitude.max > max_lon {
        (n.east, n.south_east, n.north_east) = (zero, zero, zero);
    }
}

/// `geohashGetLatDistance`: metres between two latitudes on one meridian.
fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// `geohashGetDistance`: the haversine great-circle distance in metres.
pub fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lon1r = deg_rad(lon1d);
    let lon2r = deg_rad(lon2d);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let lat1r = deg_rad(lat1d);
    let lat2r = deg_rad(lat2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// `geoWithinShape`: the distance from the shape's centre to the point `xy` when the point is
/// inside the shape (Redis's radius and box tests, including their order of evaluation).
pub fn within(shape: &Shape, xy: [f64; 2]) -> Option<f64> {
    let [x1, y1] = shape.xy;
    let [x2, y2] = xy;
    match shape.kind {
        ShapeKind::Radius(r) => {
            let d = distance(x1, y1, x2, y2);
            // Only `d > radius` rejects: a NaN distance is kept, as in C.
            if d > r * shape.conversion {
                None
            } else {
                Some(d)
            }
        }
        ShapeKind::Box { width, height } => {
            let (width_m, height_m) = (width * shape.conversion, height * shape.conversion);
            if lat_distance(y2, y1) > height_m / 2.0 {
                return None;
            }
            if distance(x2, y2, x1, y2) > width_m / 2.0 {
                return None;
            }
            Some(distance(x1, y1, x2, y2))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_round_trips() {
        for (x, y) in [
            (0u32, 0u32),
            (1, 0),
            (0, 1),
            (0x3ff_ffff, 0x155_5555),
            (u32::MAX, 7),
        ] {
            let i = interleave64(x, y);
            let d = deinterleave64(i);
            assert_eq!((d as u32, (d >> 32) as u32), (x, y));
        }
        assert_eq!(interleave64(1, 0), 1);
        assert_eq!(interleave64(0, 1), 2);
    }

    /// Scores, positions and hashes as redis-server 7.0.15 gives them (GEOADD, ZSCORE, GEOPOS,
    /// GEOHASH of Redis's documentation examples).
    #[test]
    fn scores_match_redis() {
        assert_eq!(score_of(13.361_389, 38.115_556), 3_479_099_956_230_698);
        assert_eq!(score_of(15.087_269, 37.502_669), 3_479_447_370_796_909);
        let [lon, lat] = decode_score(3_479_099_956_230_698.0);
        assert_eq!(resp::double::human(lon).as_str(), "13.36138933897018433");
        assert_eq!(resp::double::human(lat).as_str(), "38.11555639549629859");
        assert_eq!(&standard_geohash(3_479_099_956_230_698.0), b"sqc8b49rny0");
        assert_eq!(&standard_geohash(3_479_447_370_796_909.0), b"sqdtr74hyu0");
    }

    #[test]
    fn distances_match_redis() {
        // GEODIST Sicily Palermo Catania: "166274.1516" m in redis-server 7.0.15.
        let [a, b] = decode_score(3_479_099_956_230_698.0);
        let [c, d] = decode_score(3_479_447_370_796_909.0);
        let m = distance(a, b, c, d);
        assert!((m - 166_274.151_6).abs() < 1e-4, "{m}");
        assert_eq!(distance(10.0, 20.0, 10.0, 20.0), 0.0);
    }

    #[test]
    fn casts_follow_x86_64() {
        assert_eq!(score_to_u64(-1.5), u64::MAX);
        assert_eq!(score_to_u64(1.9), 1);
        assert_eq!(score_to_u64(f64::INFINITY), 0);
        assert_eq!(score_to_u64(f64::NEG_INFINITY), 1 << 63);
        assert_eq!(score_to_u64(1e19), 10_000_000_000_000_000_000);
        assert_eq!(score_to_u64(1e20), 0);
        assert_eq!(truncate_i64(1e19), i64::MIN);
        assert_eq!(truncate_i64(-2.7), -2);
    }

    #[test]
    fn steps_by_radius() {
        assert_eq!(estimate_steps_by_radius(0.0, 0.0), 26);
        assert_eq!(estimate_steps_by_radius(1.0, 0.0), 24);
        assert_eq!(estimate_steps_by_radius(1000.0, 0.0), 14);
        assert_eq!(estimate_steps_by_radius(1000.0, 70.0), 13);
        assert_eq!(estimate_steps_by_radius(1000.0, -85.0), 12);
        assert_eq!(estimate_steps_by_radius(1e9, 0.0), 1);
    }

    #[test]
    fn neighbours_wrap_around_the_antimeridian() {
        let h = encode_wgs84(179.99, 0.0, 4).unwrap();
        let n = neighbors(h);
        let east = decode(LONG_RANGE, LAT_RANGE, n.east).unwrap();
        assert_eq!(east.longitude.min, -180.0);
        let west = decode(LONG_RANGE, LAT_RANGE, n.west).unwrap();
        assert!(west.longitude.max < 179.99);
    }

    #[test]
    fn box_membership() {
        let shape = Shape {
            kind: ShapeKind::Box {
                width: 200.0,
                height: 200.0,
            },
            xy: [0.0, 0.0],
            conversion: 1000.0,
        };
        assert!(within(&shape, [0.5, 0.5]).is_some());
        assert!(within(&shape, [0.5, 1.0]).is_none());
        assert!(within(&shape, [1.0, 0.0]).is_none());
        let areas = areas_by_shape(&shape);
        assert!(!areas[0].is_zero());
    }
}
