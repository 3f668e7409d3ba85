//! Differential test of the GEO commands against redis-server 7.0.15: GEOADD (NX, XX, CH),
//! GEODIST, GEOHASH, GEOPOS, GEORADIUS and GEORADIUSBYMEMBER (and their `_RO` forms, with STORE
//! and STOREDIST), GEOSEARCH and GEOSEARCHSTORE (FROMMEMBER, FROMLONLAT, BYRADIUS, BYBOX, ASC,
//! DESC, COUNT [ANY], WITHCOORD, WITHDIST, WITHHASH, STOREDIST), in RESP2 and RESP3.
//!
//! The stream's points cluster around centres chosen to hit the edges of the geohash grid: the
//! poles' limits (latitudes at, just inside and just outside ±85.05112878), both sides of the
//! antimeridian (longitudes at and just across ±180), the origin, and a few cities, with exact
//! duplicates (equal distances, where only the sort algorithm decides the order) and uniform
//! points anywhere. Radii and boxes range from 0 to larger than the Earth, in every unit and
//! any case, with bad numbers, bad units and every option error mixed in; ZADD puts arbitrary
//! scores (negative, fractional, huge, infinite) into the GEO keys, which the commands must
//! decode as Redis does. A set of 1,500 points is searched with COUNT (Redis's partial
//! quicksort over ties). Every reply is compared byte for byte — unsorted results included, as
//! both servers walk the same boxes in the same score order — and every few batches each key
//! is compared whole (TYPE, OBJECT ENCODING, ZRANGE … WITHSCORES): the STORE destinations
//! with them.
//!
//! The other tests: scripted edge cases one command at a time in both protocols; the keyspace
//! events of GEOADD and the STORE forms; and what the append-only file gets (GEOADD as the
//! ZADD it became, the STORE forms as themselves), compared with what redis-server writes and
//! replayed by both servers.
//!
//! The seed is fixed; `DENSEKV_SEED` and `DENSEKV_DIFF_COMMANDS` change the stream.

#[macro_use]
mod support;

use rand::Rng;
use support::diff::{Check, Cmd, Gen, Twin, command_count, seed};
use support::persist::{copy_dir, densekv_in, redis_aof_in, temp_dir};
use support::{Client, Server, Value, decode, show};

const COMMANDS: usize = 150_000;
const BATCH: usize = 200;

/// Where points gather: (longitude, latitude, spread in degrees).
const CENTRES: &[(f64, f64, f64)] = &[
    (0.0, 0.0, 1.0),
    (13.361_389, 38.115_556, 0.5),
    (179.999, 0.0, 0.01),
    (-179.999, 45.0, 0.5),
    (180.0, 85.051_128_78, 0.001),
    (-180.0, -85.051_128_78, 0.2),
    (100.0, 85.0, 0.1),
    (-45.0, -84.99, 2.0),
    (2.35, 48.85, 0.0001),
    (-122.4, 37.77, 5.0),
];

const LON_EDGES: &[&str] = &[
    "180",
    "-180",
    "180.0000001",
    "-180.00001",
    "179.99999999",
    "-179.9999999999",
    "0",
    "-0",
    "abc",
    "",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "0x10",
    " 1",
    "181",
    "-200.5",
    "1e-320",
    "200.0078125",
    "-1e300",
];

const LAT_EDGES: &[&str] = &[
    "85.05112878",
    "-85.05112878",
    "85.05112879",
    "-85.0511288",
    "85.051128779",
    "-85.051128779999",
    "90",
    "-90",
    "85",
    "0",
    "-0.0",
    "x",
    "1e-400",
    "85.05112877999999",
];

const UNITS: &[&str] = &["m", "km", "ft", "mi", "M", "KM", "Ft", "mI", "Km", "FT"];
const BAD_UNITS: &[&str] = &["miles", "", "cm", "m\0", "km\0x", "k m", "meters"];
const RADIUS_EDGES: &[&str] = &[
    "0",
    "-0",
    "-1",
    "abc",
    "",
    "inf",
    "1e400",
    "0.00001",
    "1e300",
    "nan",
    "20037726.37",
    "1e-320",
    "+5",
    "5e3",
];
const COUNT_EDGES: &[&str] = &[
    "0",
    "-1",
    "abc",
    "9223372036854775807",
    "9223372036854775808",
    "1.5",
    "",
];
const SCORE_EDGES: &[&str] = &[
    "-1.5",
    "1e30",
    "-1e30",
    "inf",
    "-inf",
    "1.9",
    "4503599627370496",
    "4503599627370495.5",
    "0",
    "-0",
    "3471579339700058",
    "3471579339700058.25",
    "9007199254740993",
    "1e19",
];

fn geo_key(g: &mut Gen) -> Vec<u8> {
    match g.below(24) {
        0 => b"s0".to_vec(),
        1 => b"missing".to_vec(),
        2..=5 => b"big".to_vec(),
        6 | 7 => format!("d{}", g.below(3)).into_bytes(),
        _ => format!("g{}", g.below(4)).into_bytes(),
    }
}

fn dest_key(g: &mut Gen) -> Vec<u8> {
    match g.below(30) {
        0 | 1 => b"s0".to_vec(),
        2 | 3 => b"missing".to_vec(),
        4 => format!("g{}", g.below(4)).into_bytes(),
        _ => format!("d{}", g.below(3)).into_bytes(),
    }
}

/// A member to search around: one of `key`'s most of the time.
fn centre_member(g: &mut Gen, key: &[u8]) -> Vec<u8> {
    if g.chance(0.1) {
        member(g)
    } else if key == b"big" {
        format!("b{}_{}", g.below(15), g.below(100)).into_bytes()
    } else {
        format!("m{}", g.below(30)).into_bytes()
    }
}

fn member(g: &mut Gen) -> Vec<u8> {
    match g.below(60) {
        0 => vec![b'L'; 70],
        1 => b"".to_vec(),
        2 => b"\r\n\0".to_vec(),
        3 => b"123".to_vec(),
        4 => b"-7".to_vec(),
        _ => format!("m{}", g.below(60)).into_bytes(),
    }
}

/// `value` printed in full (its shortest exact form) or, one time in five, with a random number
/// of decimals — which may round a limit (85.05112878) out of range, as a client's may.
fn decimal(g: &mut Gen, value: f64) -> Vec<u8> {
    if g.chance(0.8) {
        return format!("{value}").into_bytes();
    }
    let digits = g.below(13);
    format!("{value:.digits$}").into_bytes()
}

/// A point as GEOADD, FROMLONLAT or GEORADIUS take it: an edge value with probability
/// `edges`, else near a centre (exactly on it a quarter of the time) or anywhere.
fn point_or_edge(g: &mut Gen, edges: f64) -> (Vec<u8>, Vec<u8>) {
    if g.chance(edges) {
        return if g.chance(0.5) {
            (g.pick(LON_EDGES).as_bytes().to_vec(), lat(g))
        } else {
            (lon(g), g.pick(LAT_EDGES).as_bytes().to_vec())
        };
    }
    if g.chance(0.2) {
        return (lon(g), lat(g));
    }
    let &(x, y, spread) = g.pick(CENTRES);
    let (x, y) = if g.chance(0.25) {
        (x, y)
    } else {
        let dx = g.rng.gen_range(-spread..=spread);
        let dy = g.rng.gen_range(-spread..=spread);
        (
            (x + dx).clamp(-180.0, 180.0),
            (y + dy).clamp(-85.051_128_78, 85.051_128_78),
        )
    };
    (decimal(g, x), decimal(g, y))
}

fn point(g: &mut Gen) -> (Vec<u8>, Vec<u8>) {
    point_or_edge(g, 0.08)
}

fn lon(g: &mut Gen) -> Vec<u8> {
    let v = g.rng.gen_range(-180.0..=180.0);
    decimal(g, v)
}

fn lat(g: &mut Gen) -> Vec<u8> {
    let v = g.rng.gen_range(-85.051_128_78..=85.051_128_78);
    decimal(g, v)
}

/// A non-negative distance number (metres to thousands of kilometres once the unit applies),
/// or an edge.
fn distance(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.08) {
        return g.pick(RADIUS_EDGES).as_bytes().to_vec();
    }
    let v = 10f64.powf(g.rng.gen_range(-1.0..6.5));
    decimal(g, v)
}

fn unit(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.03) {
        g.pick(BAD_UNITS).as_bytes().to_vec()
    } else {
        g.pick(UNITS).as_bytes().to_vec()
    }
}

fn count(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.05) {
        g.pick(COUNT_EDGES).as_bytes().to_vec()
    } else {
        g.rng.gen_range(1..25).to_string().into_bytes()
    }
}

fn geoadd(g: &mut Gen, key: Vec<u8>) -> Vec<Vec<u8>> {
    let mut a = vec![g.name("GEOADD"), key];
    for opt in ["NX", "XX", "CH"] {
        if g.chance(0.1) {
            a.push(g.name(opt));
        }
    }
    let n = match g.below(10) {
        0 => g.rng.gen_range(20..60),
        1..=3 => g.rng.gen_range(2..8),
        _ => 1,
    };
    // Any bad point fails the whole command: keep them rare in long ones.
    let edges = 0.1 / n as f64;
    for _ in 0..n {
        let (x, y) = point_or_edge(g, edges);
        a.extend([x, y, member(g)]);
    }
    if g.chance(0.02) {
        a.pop();
    }
    a
}

/// The options shared by the searches, in random order. `store`: STORE/STOREDIST take a key
/// (GEORADIUS), `bare_storedist`: GEOSEARCHSTORE's flag.
fn search_options(g: &mut Gen, a: &mut Vec<Vec<u8>>, store: bool, bare_storedist: bool) {
    let mut opts: Vec<Vec<Vec<u8>>> = Vec::new();
    let with_chance = if store || bare_storedist { 0.02 } else { 0.35 };
    for w in ["WITHDIST", "WITHHASH", "WITHCOORD"] {
        if g.chance(with_chance) {
            opts.push(vec![g.name(w)]);
        }
    }
    match g.below(4) {
        0 => opts.push(vec![g.name("ASC")]),
        1 => opts.push(vec![g.name("DESC")]),
        _ => {}
    }
    if g.chance(0.45) {
        let c = count(g);
        opts.push(vec![g.name("COUNT"), c]);
        if g.chance(0.35) {
            opts.push(vec![g.name("ANY")]);
        }
    } else if g.chance(0.02) {
        opts.push(vec![g.name("ANY")]);
    }
    if store && g.chance(0.25) {
        let word = if g.chance(0.5) { "STORE" } else { "STOREDIST" };
        opts.push(vec![g.name(word), dest_key(g)]);
    }
    if bare_storedist && g.chance(0.4) {
        opts.push(vec![g.name("STOREDIST")]);
    }
    if g.chance(0.02) {
        let junk: &[&str] = &["WITHDISTS", "STORE", "COUNT", "BYRADIUS", "FROMMEMBER", "x"];
        opts.push(vec![g.pick(junk).as_bytes().to_vec()]);
    }
    // Shuffle; `ANY` may then come before its COUNT, which Redis accepts.
    for i in (1..opts.len()).rev() {
        let j = g.below(i + 1);
        opts.swap(i, j);
    }
    a.extend(opts.into_iter().flatten());
}

/// GEOSEARCH's FROM and BY parts (one of each, now and then none, two, or both kinds).
fn from_and_by(g: &mut Gen, a: &mut Vec<Vec<u8>>, key: &[u8]) {
    let mut parts: Vec<Vec<Vec<u8>>> = Vec::new();
    let froms = match g.below(40) {
        0 => 0,
        1 => 2,
        _ => 1,
    };
    for _ in 0..froms {
        if g.chance(0.5) {
            parts.push(vec![g.name("FROMMEMBER"), centre_member(g, key)]);
        } else {
            let (x, y) = point(g);
            parts.push(vec![g.name("FROMLONLAT"), x, y]);
        }
    }
    let bys = match g.below(40) {
        0 => 0,
        1 => 2,
        _ => 1,
    };
    for _ in 0..bys {
        if g.chance(0.5) {
            parts.push(vec![g.name("BYRADIUS"), distance(g), unit(g)]);
        } else {
            parts.push(vec![g.name("BYBOX"), distance(g), distance(g), unit(g)]);
        }
    }
    if g.chance(0.3) {
        parts.reverse();
    }
    a.extend(parts.into_iter().flatten());
}

fn georadius(g: &mut Gen) -> Vec<Vec<u8>> {
    let ro = g.chance(0.3);
    let by_member = g.chance(0.4);
    let name = match (by_member, ro) {
        (false, false) => "GEORADIUS",
        (false, true) => "GEORADIUS_RO",
        (true, false) => "GEORADIUSBYMEMBER",
        (true, true) => "GEORADIUSBYMEMBER_RO",
    };
    let key = geo_key(g);
    let mut a = vec![g.name(name), key.clone()];
    if by_member {
        a.push(centre_member(g, &key));
    } else {
        let (x, y) = point(g);
        a.extend([x, y]);
    }
    a.extend([distance(g), unit(g)]);
    search_options(g, &mut a, !ro, false);
    a
}

fn geosearch(g: &mut Gen) -> Vec<Vec<u8>> {
    let store = g.chance(0.3);
    let key = geo_key(g);
    let mut a = if store {
        vec![g.name("GEOSEARCHSTORE"), dest_key(g), key.clone()]
    } else {
        vec![g.name("GEOSEARCH"), key.clone()]
    };
    from_and_by(g, &mut a, &key);
    search_options(g, &mut a, false, store);
    a
}

fn next_command(g: &mut Gen) -> Cmd {
    let args: Vec<Vec<u8>> = match g.below(40) {
        0..=7 => {
            let k = geo_key(g);
            geoadd(g, k)
        }
        8..=9 => vec![g.name("GEOPOS"), geo_key(g), member(g), member(g)],
        10 => vec![g.name("GEOHASH"), geo_key(g), member(g), member(g)],
        11 | 12 => {
            let mut a = vec![g.name("GEODIST"), geo_key(g), member(g), member(g)];
            if g.chance(0.6) {
                a.push(unit(g));
            }
            a
        }
        13..=21 => georadius(g),
        22..=31 => geosearch(g),
        32 => vec![
            g.name("ZADD"),
            geo_key(g),
            g.pick(SCORE_EDGES).as_bytes().to_vec(),
            member(g),
        ],
        33 => vec![g.name("ZREM"), geo_key(g), member(g), member(g)],
        34 => vec![g.name("SET"), b"s0".to_vec(), g.value()],
        35 if g.chance(0.3) => vec![g.name("DEL"), dest_key(g)],
        36 if g.chance(0.1) => {
            return Cmd::new(vec![
                g.name("HELLO"),
                g.pick(&["2", "3"]).as_bytes().to_vec(),
            ])
            .with(Check::Shape);
        }
        _ => vec![g.name("ZCARD"), geo_key(g)],
    };
    g.maybe_break_arity(Cmd::new(args))
}

fn compare_all(twin: &mut Twin, pool: &[Vec<u8>]) {
    let batch: Vec<Cmd> = pool
        .iter()
        .flat_map(|k| {
            [
                cmd!["TYPE", k],
                cmd!["OBJECT", "ENCODING", k],
                cmd!["ZRANGE", k, "0", "-1", "WITHSCORES"],
            ]
        })
        .collect();
    twin.run(&batch);
}

/// 1,500 points on both servers: around the centres, many of them on the same spots.
fn fill_big(twin: &mut Twin, g: &mut Gen) {
    for chunk in 0..15 {
        let mut a = vec![b"GEOADD".to_vec(), b"big".to_vec()];
        for i in 0..100 {
            let (x, y) = if i % 3 == 0 {
                let &(x, y, _) = g.pick(CENTRES);
                (format!("{x}").into_bytes(), format!("{y}").into_bytes())
            } else {
                let x = g.rng.gen_range(-180.0..=180.0);
                let y = g.rng.gen_range(-85.051_128_78..=85.051_128_78);
                (format!("{x}").into_bytes(), format!("{y}").into_bytes())
            };
            a.extend([x, y, format!("b{chunk}_{i}").into_bytes()]);
        }
        assert_eq!(twin.one(&Cmd::new(a)), b":100\r\n");
    }
}

#[test]
fn geo_commands_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0x6e0_0001);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let mut pool: Vec<Vec<u8>> = (0..4).map(|i| format!("g{i}").into_bytes()).collect();
    pool.extend((0..3).map(|i| format!("d{i}").into_bytes()));
    pool.extend([b"big".to_vec(), b"s0".to_vec(), b"missing".to_vec()]);
    let mut g = Gen::new(seed, pool.clone());
    fill_big(&mut twin, &mut g);
    let total = command_count(COMMANDS);
    let mut batches = 0;
    while twin.sent < total {
        let batch: Vec<Cmd> = (0..BATCH).map(|_| next_command(&mut g)).collect();
        twin.run(&batch);
        batches += 1;
        if batches % 10 == 0 {
            twin.one(&cmd!["HELLO", "2"].with(Check::Shape));
            compare_all(&mut twin, &pool);
        }
    }
    twin.one(&cmd!["HELLO", "2"].with(Check::Shape));
    compare_all(&mut twin, &pool);
    twin.one(&cmd!["KEYS", "*"].with(Check::Sorted));
}

/// Edge cases one command at a time, in both protocols.
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its table of cases stays together"
)]
#[test]
fn geo_edges_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    #[rustfmt::skip]
    let cases: &[&[&str]] = &[
        &["GEOADD", "Sicily", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"],
        &["ZRANGE", "Sicily", "0", "-1", "WITHSCORES"],
        &["GEODIST", "Sicily", "Palermo", "Catania"],
        &["GEODIST", "Sicily", "Palermo", "Catania", "km"],
        &["GEODIST", "Sicily", "Palermo", "Catania", "MI"],
        &["GEODIST", "Sicily", "Palermo", "Catania", "ft", "x"],
        &["GEODIST", "Sicily", "Palermo", "Catania", "parsec"],
        &["GEODIST", "Sicily", "Palermo", "nope"],
        &["GEODIST", "nokey", "a", "b", "parsec"],
        &["GEODIST", "nokey", "a", "b"],
        &["GEOPOS", "Sicily", "Palermo", "nope", "Catania"],
        &["GEOPOS", "nokey", "a", "b"],
        &["GEOPOS", "Sicily"],
        &["GEOHASH", "Sicily", "Palermo", "Catania", "nope"],
        &["GEOHASH", "nokey", "a"],
        &["GEOHASH", "Sicily"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "WITHCOORD", "WITHHASH", "ASC"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "DESC", "COUNT", "1"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "1", "ANY"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "ANY"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "0"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "-3"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "x"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "dst", "WITHDIST"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "dst"],
        &["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "dst", "STORE", "dst2"],
        &["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "dst2", "STOREDIST", "dst"],
        &["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        &["ZRANGE", "dst2", "0", "-1", "WITHSCORES"],
        &["GEORADIUS", "Sicily", "15", "37", "1", "m", "STORE", "dst"],
        &["EXISTS", "dst"],
        &["GEORADIUS", "nokey", "15", "37", "1", "m", "STORE", "dst2"],
        &["EXISTS", "dst2"],
        &["GEORADIUS", "nokey", "15", "37", "1", "m"],
        &["GEORADIUS", "nokey", "195", "37", "1", "m"],
        &["GEORADIUS", "nokey", "15", "37", "-1", "m"],
        &["GEORADIUS", "Sicily", "15", "37", "x", "m"],
        &["GEORADIUS", "Sicily", "15", "37", "1", "parsec"],
        &["GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STORE", "dst"],
        &["GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "WITHDIST"],
        &["GEORADIUSBYMEMBER", "Sicily", "Palermo", "200", "km", "WITHDIST"],
        &["GEORADIUSBYMEMBER", "Sicily", "nope", "200", "km"],
        &["GEORADIUSBYMEMBER", "nokey", "nope", "x", "km", "COUNT", "1"],
        &["GEORADIUSBYMEMBER", "nokey", "nope", "x", "km", "COUNT", "0"],
        &["GEORADIUSBYMEMBER", "nokey", "nope", "x", "parsec", "STORE", "dst"],
        &["GEORADIUSBYMEMBER_RO", "Sicily", "Catania", "1", "m", "WITHHASH"],
        &["GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km", "WITHDIST"],
        &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "ASC", "WITHCOORD"],
        &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "10", "km"],
        &["GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "m"],
        &["GEOSEARCH", "Sicily", "BYRADIUS", "1", "m", "BYBOX", "1", "1", "m"],
        &["GEOSEARCH", "Sicily", "BYRADIUS", "1", "m"],
        &["geoSearch", "Sicily", "FROMMEMBER", "Palermo"],
        &["GEOSEARCH", "Sicily", "FROMMEMBER", "nope", "BYRADIUS", "1", "m"],
        &["GEOSEARCH", "nokey", "FROMMEMBER", "nope", "BYRADIUS", "1", "m"],
        &["GEOSEARCH", "nokey", "FROMMEMBER", "nope"],
        &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "-1", "1", "m"],
        &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "x", "1", "m"],
        &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "x", "m"],
        &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "1", "yd"],
        &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "m", "STORE", "x"],
        &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "m", "STOREDIST"],
        &["GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "STOREDIST"],
        &["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        &["GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "WITHDIST"],
        &["GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km"],
        &["EXISTS", "dst"],
        &["GEOSEARCHSTORE", "dst", "nokey", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km"],
        &["GEOADD", "Sicily", "NX", "XX", "1", "2", "x"],
        &["GEOADD", "Sicily", "1", "2", "x", "3"],
        &["GEOADD", "Sicily", "NX", "CH"],
        &["GEOADD", "Sicily", "CH", "13.361389", "38.115556", "Palermo", "1", "2", "new"],
        &["GEOADD", "Sicily", "XX", "CH", "13", "38", "Palermo", "1", "2", "new2"],
        &["GEOADD", "Sicily", "NX", "13", "38", "Palermo", "1", "2", "new3"],
        &["GEOADD", "Sicily", "GT", "13", "38", "Palermo"],
        &["GEOADD", "Sicily", "181", "2", "bad"],
        &["GEOADD", "Sicily", "1", "-85.06", "bad"],
        &["GEOADD", "Sicily", "1", "x", "bad"],
        &["GEOADD", "Sicily", "inf", "0", "bad"],
        &["GEOADD", "Sicily", "-0", "-0", "zero"],
        &["GEOADD", "Sicily", "ch\0", "1", "2", "nul"],
        &["GEOADD", "poles", "180", "85.05112878", "ne", "-180", "-85.05112878", "sw", "-180", "85.05112878", "nw", "180", "-85.05112878", "se"],
        &["ZRANGE", "poles", "0", "-1", "WITHSCORES"],
        &["GEOPOS", "poles", "ne", "sw", "nw", "se"],
        &["GEOHASH", "poles", "ne", "sw", "nw", "se"],
        &["GEODIST", "poles", "ne", "sw"],
        &["GEODIST", "poles", "ne", "nw", "km"],
        &["GEOSEARCH", "poles", "FROMLONLAT", "0", "0", "BYRADIUS", "inf", "m", "WITHDIST", "ASC"],
        &["GEOSEARCH", "poles", "FROMLONLAT", "0", "0", "BYRADIUS", "20037726.37", "m", "WITHDIST", "ASC"],
        &["GEOSEARCH", "poles", "FROMMEMBER", "ne", "BYBOX", "1e10", "1e10", "km", "WITHDIST", "WITHHASH", "WITHCOORD"],
        &["GEORADIUSBYMEMBER", "poles", "ne", "1", "km", "WITHDIST"],
        &["GEORADIUSBYMEMBER", "poles", "ne", "0", "km", "WITHDIST"],
        &["ZADD", "weird", "-1.5", "a", "1e30", "b", "-1e30", "c", "inf", "d", "-inf", "e", "1.9", "f", "4503599627370496", "g", "-0", "h", "0", "i"],
        &["GEOPOS", "weird", "a", "b", "c", "d", "e", "f", "g", "h", "i"],
        &["GEOHASH", "weird", "a", "b", "c", "d", "e", "f", "g", "h", "i"],
        &["GEODIST", "weird", "a", "b"],
        &["GEODIST", "weird", "d", "e", "mi"],
        &["GEOSEARCH", "weird", "FROMMEMBER", "f", "BYRADIUS", "100", "km", "WITHHASH", "WITHDIST", "WITHCOORD"],
        &["GEOSEARCHSTORE", "weirdst", "weird", "FROMMEMBER", "h", "BYRADIUS", "100", "km"],
        &["ZRANGE", "weirdst", "0", "-1", "WITHSCORES"],
        &["GEORADIUS", "weird", "180", "85", "1000", "km", "WITHDIST"],
        &["GEOADD", "anti", "0", "0", "a", "180", "0", "b", "-90", "45", "c", "90", "-45", "d", "45", "85", "e", "-135", "-85", "f"],
        &["GEODIST", "anti", "a", "b"],
        &["GEODIST", "anti", "c", "d", "km"],
        &["GEODIST", "anti", "e", "f", "mi"],
        &["GEOSEARCH", "anti", "FROMMEMBER", "a", "BYRADIUS", "inf", "km", "WITHDIST", "DESC"],
        &["GEOSEARCH", "anti", "FROMMEMBER", "e", "BYBOX", "40000", "40000", "km", "WITHDIST", "ASC", "COUNT", "3"],
        &["EVAL", "return redis.call('GEORADIUS', KEYS[1], 15, 37, 200, 'km', 'STORE', KEYS[2])", "2", "Sicily", "evaldst"],
        &["EVAL", "return redis.call('GEOPOS', KEYS[1], 'Palermo')", "1", "Sicily"],
        &["ZRANGE", "evaldst", "0", "-1", "WITHSCORES"],
        &["MULTI"],
        &["GEORADIUSBYMEMBER", "Sicily", "Palermo", "300", "km", "STOREDIST", "multidst"],
        &["GEOSEARCH", "multidst", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km"],
        &["EXEC"],
        &["COMMAND", "GETKEYS", "GEORADIUS", "k", "1", "2", "3", "m", "STORE", "a", "STOREDIST", "b"],
        &["COMMAND", "GETKEYS", "GEOSEARCHSTORE", "dst", "src", "FROMMEMBER", "a", "BYRADIUS", "1", "m"],
        &["SET", "str", "x"],
        &["GEOADD", "str", "1", "2", "m"],
        &["GEOADD", "str", "1", "200", "m"],
        &["GEOPOS", "str", "m"],
        &["GEOHASH", "str", "m"],
        &["GEODIST", "str", "a", "b"],
        &["GEODIST", "str", "a", "b", "parsec"],
        &["GEORADIUS", "str", "195", "0", "1", "m"],
        &["GEORADIUSBYMEMBER", "str", "a", "1", "m"],
        &["GEOSEARCH", "str", "BYRADIUS"],
        &["GEOSEARCHSTORE", "dst", "str", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"],
        &["GEOSEARCHSTORE", "str", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"],
        &["TYPE", "str"],
        &["GEOADD", "k", "1", "2"],
        &["GEODIST", "k", "a"],
        &["GEORADIUS", "k", "1", "2", "3"],
        &["GEORADIUSBYMEMBER", "k", "a", "3"],
        &["GEOSEARCH", "k", "FROMMEMBER", "a"],
        &["GEOSEARCHSTORE", "d", "k", "FROMMEMBER", "a", "BYBOX"],
    ];
    for proto in ["2", "3"] {
        twin.one(&cmd!["HELLO", proto].with(Check::Shape));
        for case in cases {
            twin.one(&Cmd::new(
                case.iter().map(|a| a.as_bytes().to_vec()).collect(),
            ));
        }
        twin.one(&cmd!["FLUSHALL"]);
    }
}

/// A command from its words (none of which holds a space).
fn words(line: &str) -> Cmd {
    Cmd::new(line.split(' ').map(|w| w.as_bytes().to_vec()).collect())
}

/// Ties at equal distances under every sort path: a thousand points on a handful of spots,
/// searched with COUNT below, at and above the number found (pqsort and glibc's merge sort),
/// ascending and descending, with and without ANY.
#[test]
fn equal_distances_order_as_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let spots = ["0 0", "0.001 0", "0 0.001", "-0.001 0", "0.0005 0.0005"];
    for chunk in 0..10 {
        let points: Vec<String> = (0..100)
            .map(|i| {
                let spot = spots[(i * 7 + chunk) % spots.len()];
                format!("{spot} t{}", (i * 37 + chunk * 11) % 1000)
            })
            .collect();
        twin.one(&words(&format!("GEOADD ties {}", points.join(" "))));
    }
    for count in ["1", "3", "7", "8", "40", "41", "200", "999", "1000", "5000"] {
        for order in ["ASC", "DESC"] {
            for any in ["", " ANY"] {
                twin.one(&words(&format!(
                    "GEOSEARCH ties FROMLONLAT 0 0 BYRADIUS 1 km {order} COUNT {count} WITHDIST{any}"
                )));
            }
        }
        twin.one(&words(&format!(
            "GEORADIUS ties 0.0002 0 1 km COUNT {count}"
        )));
    }
    twin.one(&words("GEOSEARCH ties FROMLONLAT 0 0 BYRADIUS 1 km"));
    twin.one(&words("GEOSEARCH ties FROMLONLAT 0 0 BYBOX 1 1 km DESC"));
}

/// A pattern subscriber's messages up to a sentinel published after the commands.
fn events(listener: &mut Client, publisher: &mut Client) -> Vec<String> {
    publisher.cmd(&["PUBLISH", "__keysentinel__", "end"]);
    let mut out = Vec::new();
    loop {
        let frame = listener.read_reply();
        let Value::Array(parts) = decode(&frame) else {
            panic!("not a message: {}", show(&frame));
        };
        let channel = String::from_utf8_lossy(parts[2].bulk()).into_owned();
        if channel == "__keysentinel__" {
            return out;
        }
        out.push(format!(
            "{channel} {}",
            String::from_utf8_lossy(parts[3].bulk())
        ));
    }
}

/// GEOADD's events are ZADD's (`new`, `zadd`); the STORE forms send `georadiusstore` and
/// `geosearchstore`, or `del` for an emptied destination; reads of missing keys `keymiss`.
#[test]
fn keyspace_events_match_redis() {
    let options = ["--notify-keyspace-events", "KEAnm"];
    let (densekv, redis) = Server::pair(&options);
    #[rustfmt::skip]
    let script: &[&[&str]] = &[
        &["GEOADD", "g", "1", "2", "a", "3", "4", "b"],
        &["GEOADD", "g", "1", "2", "a"],
        &["GEOADD", "g", "XX", "5", "6", "a"],
        &["GEOADD", "g", "1", "200", "a"],
        &["GEORADIUS", "g", "1", "2", "1000", "km", "STORE", "d1"],
        &["GEORADIUS", "g", "1", "2", "1000", "km", "STOREDIST", "d1"],
        &["GEORADIUSBYMEMBER", "g", "a", "1", "m", "STORE", "d1"],
        &["GEORADIUSBYMEMBER", "g", "a", "1", "m", "STORE", "d1"],
        &["GEOSEARCHSTORE", "d2", "g", "FROMMEMBER", "b", "BYBOX", "10", "10", "km"],
        &["GEOSEARCHSTORE", "d2", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"],
        &["GEOSEARCHSTORE", "d2", "nokey", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"],
        &["GEOSEARCHSTORE", "d2", "g", "FROMLONLAT", "5", "6", "BYRADIUS", "1", "km"],
        &["GEOSEARCHSTORE", "d2", "nokey", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"],
        &["GEORADIUS", "nokey", "1", "2", "1", "m", "STORE", "g"],
        &["GEOPOS", "nokey", "a"],
        &["GEOHASH", "nokey", "a"],
        &["GEODIST", "nokey", "a", "b"],
        &["GEOSEARCH", "nokey", "FROMMEMBER", "a", "BYRADIUS", "1", "m"],
        &["GEORADIUS_RO", "nokey", "1", "2", "1", "m"],
    ];
    let mut got = Vec::new();
    for server in [&densekv, &redis] {
        let mut listener = server.connect();
        let reply = listener.cmd(&["PSUBSCRIBE", "__key*"]);
        assert!(show(&reply).contains("psubscribe"), "{}", show(&reply));
        let mut c = server.connect();
        let mut replies = Vec::new();
        for args in script {
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            replies.push(show(&c.command(&args)));
        }
        got.push((replies, events(&mut listener, &mut c)));
    }
    assert_eq!(
        got[0], got[1],
        "densekv (left) and redis-server (right) differ"
    );
}

/// Commands of the incremental files of `dir`'s append-only directory, SELECTs left out.
fn appended(dir: &std::path::Path) -> Vec<Vec<Vec<u8>>> {
    use persist::aof::{self, Item};
    let aof_dir = dir.join("appendonlydir");
    let text = std::fs::read(aof_dir.join("appendonly.aof.manifest")).expect("a manifest");
    let manifest = aof::parse_manifest(&text).expect("the manifest reads");
    let mut commands = Vec::new();
    for file in &manifest.incrs {
        let name = String::from_utf8(file.name.clone()).expect("a UTF-8 file name");
        let bytes = std::fs::read(aof_dir.join(name)).expect("an incremental file");
        for item in aof::Commands::new(&bytes) {
            if let Item::Command(args) = item.expect("the file reads")
                && !args[0].eq_ignore_ascii_case(b"select")
            {
                commands.push(args.iter().map(|a| a.to_vec()).collect());
            }
        }
    }
    commands
}

/// What the append-only file gets is what redis-server writes (GEOADD as its ZADD, with the
/// scores; the STORE forms as sent; nothing for reads and for writes that changed nothing),
/// and it replays to the same data on densekv and on redis-server.
#[test]
fn aof_matches_redis_and_replays() {
    let opts = ["--appendonly", "yes", "--appendfsync", "always"];
    let ours = temp_dir("geo", "aof-densekv");
    let theirs = temp_dir("geo", "aof-redis");
    #[rustfmt::skip]
    let script: &[&[&str]] = &[
        &["GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"],
        &["GEOADD", "g", "NX", "CH", "13", "38", "Palermo", "1", "2", "x"],
        &["GEOADD", "g", "nx", "13", "38", "Palermo"],
        &["GEOADD", "g", "1", "200", "bad"],
        &["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "d1"],
        &["GEORADIUS", "g", "15", "37", "200", "km"],
        &["GEORADIUSBYMEMBER", "g", "x", "1", "m", "STOREDIST", "d2"],
        &["GEOSEARCHSTORE", "d3", "g", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "STOREDIST"],
        &["GEOSEARCHSTORE", "d1", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"],
        &["GEOSEARCHSTORE", "d9", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"],
        &["GEOSEARCH", "g", "FROMMEMBER", "x", "BYRADIUS", "1", "m"],
    ];
    let run = |server: &Server| {
        let mut c = server.connect();
        for args in script {
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            c.command(&args);
        }
    };
    let densekv = densekv_in(&ours, &opts);
    run(&densekv);
    let digest = densekv.connect().cmd(&["DEBUG", "DIGEST"]);
    drop(densekv);
    let redis = redis_aof_in(&theirs, &["--appendfsync", "always"]);
    run(&redis);
    assert_eq!(redis.connect().cmd(&["DEBUG", "DIGEST"]), digest);
    drop(redis);
    let show_all = |c: &[Vec<Vec<u8>>]| {
        c.iter()
            .map(|a| a.iter().map(|x| show(x)).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
    };
    assert_eq!(show_all(&appended(&ours)), show_all(&appended(&theirs)));
    let restarted = densekv_in(&ours, &opts);
    assert_eq!(restarted.connect().cmd(&["DEBUG", "DIGEST"]), digest);
    drop(restarted);
    let copy = temp_dir("geo", "aof-copy");
    copy_dir(&ours.join("appendonlydir"), &copy.join("appendonlydir"));
    let redis = redis_aof_in(&copy, &[]);
    assert_eq!(redis.connect().cmd(&["DEBUG", "DIGEST"]), digest);
    drop(redis);
    for dir in [ours, theirs, copy] {
        let _ = std::fs::remove_dir_all(dir);
    }
}
