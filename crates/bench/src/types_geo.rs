//! The types suite's geo scenario: one key of N members (10⁶; quick 10⁵) added by GEOADD,
//! its resident memory per member, and GEOSEARCH throughput from a pipelined RESP client.
//!
//! ```text
//! warm-up  the load's first 10 GEOADDs, then DEL geo (types_driver: first-use costs)
//! load     GEOADD geo <lon> <lat> m:<i> … (100 members a command, 10 commands a write)
//!          → :100 each; points uniform over the sphere between latitudes ±85.05
//! queries  Q points drawn the same way (another seed), each
//!          GEOSEARCH geo FROMLONLAT <lon> <lat> BYRADIUS <r> km ASC COUNT 10
//!          → an array of ≤ 10 members; Q queries 16 in flight (written 16 at a time on one
//!          connection, the 16 replies read, repeated) and Q one at a time: queries/s
//! check    the first 100 points again without COUNT (not timed): members within r
//! ```
//!
//! Uniform *over the sphere* (longitude uniform, latitude = asin of a uniform sine), not
//! uniform in degrees: then every circle of radius r holds the same number of members on
//! average, wherever it is drawn, and the radius can be chosen for it. With N members over the
//! 5.084·10⁸ km² between ±85.05° (Redis's earth radius, 6,372.797 km), r = √(100 · area /
//! (π N)) holds ~100 members: 127 km at 10⁶, 402 km at 10⁵. Uniform degrees would crowd the
//! members towards the poles (6× the equator's density at 80°) and make a query's cost depend on
//! its latitude.
//!
//! `ASC COUNT 10` over ~100 members within r: both servers must find every member within the
//! radius and order them by distance (redis-server collects all ~100 and sorts them; `ANY`
//! would let it stop early, which we do not want), and the reply stays small, so the figure is
//! the search rather than the reply's encoding. GEOSEARCH goes through our own client rather
//! than redis-benchmark because each query needs a random point, which redis-benchmark's
//! integer placeholders cannot give; the same Q points go to both servers, and a digest of every
//! reply shows whether they answered alike (the digests of the two depths must agree on one
//! server, or the measurement fails).

use std::f64::consts::PI;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::rng::SplitMix64;
use crate::server_proc::ServerProcess;
use crate::server_resp::{Connection, Reply, encode};
use crate::types_driver::{MeasureError, MemoryDelta, Step, measure_load, open, run_steps, unit};

/// The one key.
pub const KEY: &str = "geo";
/// Members per GEOADD…
pub const MEMBERS_PER_GEOADD: u64 = 100;
/// …and GEOADDs per pipelined write.
const GEOADDS_PER_WRITE: usize = 10;
/// The warm-up's members (the load's first ten GEOADDs: past the listpack limit, so both of a
/// sorted set's encodings are in the baseline's code).
const WARM_UP_MEMBERS: u64 = 1_000;
/// GEOSEARCH's COUNT.
pub const COUNT: usize = 10;
/// Members a query's circle holds on average (module doc).
pub const MEMBERS_IN_RADIUS: f64 = 100.0;
/// Queries without COUNT that count the members within the radius.
pub const CALIBRATION_QUERIES: usize = 100;
/// The queries in flight of the pipelined measurement.
pub const DEPTH: usize = 16;
/// The members' latitudes stay within ±this, inside Redis's ±85.05112878 even once printed
/// with six decimals.
pub const LATITUDE_MAX_DEG: f64 = 85.05;
/// Redis's earth radius (`EARTH_RADIUS_IN_METERS` in `geohash_helper.c`), in km.
const EARTH_RADIUS_KM: f64 = 6_372.797_560_856;
const LOAD_SEED: u64 = 0x6e0_1a4d;
const QUERY_SEED: u64 = 0x6e0_5ea7;

/// A point uniform over the sphere between ±[`LATITUDE_MAX_DEG`]: (longitude, latitude).
pub fn point(rng: &mut SplitMix64) -> (f64, f64) {
    let lon = -180.0 + 360.0 * unit(rng);
    let sin_max = LATITUDE_MAX_DEG.to_radians().sin();
    let lat = (sin_max * (2.0 * unit(rng) - 1.0)).asin().to_degrees();
    (lon, lat)
}

/// The radius, in whole km, whose circle holds [`MEMBERS_IN_RADIUS`] of `members` on average.
pub fn radius_km(members: u64) -> u64 {
    let area = 4.0 * PI * EARTH_RADIUS_KM * EARTH_RADIUS_KM * LATITUDE_MAX_DEG.to_radians().sin();
    let density = members.max(1) as f64 / area;
    (MEMBERS_IN_RADIUS / (PI * density)).sqrt().round() as u64
}

/// The GEOADDs of members `first..end`, with the same points every run.
fn load_steps(rng: &mut SplitMix64, first: u64, end: u64) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut start = first;
    while start < end {
        let stop = (start + MEMBERS_PER_GEOADD).min(end);
        let mut args = vec!["GEOADD".to_owned(), KEY.to_owned()];
        for i in start..stop {
            let (lon, lat) = point(rng);
            args.extend([format!("{lon:.6}"), format!("{lat:.6}"), format!("m:{i}")]);
        }
        steps.push(Step::new(&args, (stop - start) as i64));
        start = stop;
    }
    steps
}

/// Adds `members` members in pipelined writes of [`GEOADDS_PER_WRITE`] GEOADDs; the commands
/// are made write by write so the harness never holds 3·10⁶ strings at once.
fn load(connection: &mut Connection, members: u64) -> Result<(), MeasureError> {
    let mut rng = SplitMix64::new(LOAD_SEED);
    let per_write = MEMBERS_PER_GEOADD * GEOADDS_PER_WRITE as u64;
    let mut first = 0;
    while first < members {
        let end = (first + per_write).min(members);
        run_steps(connection, &load_steps(&mut rng, first, end))?;
        first = end;
    }
    Ok(())
}

/// One geo measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeoParams {
    pub members: u64,
    /// Queries at each depth.
    pub queries: usize,
    pub settle: Duration,
}

/// Its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeoResult {
    pub members: u64,
    pub radius_km: u64,
    #[serde(flatten)]
    pub memory: MemoryDelta,
    pub queries: usize,
    /// Queries a second, [`DEPTH`] in flight and one at a time.
    pub pipelined_per_sec: f64,
    pub single_per_sec: f64,
    /// Members per reply, over every query (at most [`COUNT`]).
    pub results_mean: f64,
    /// Members within the radius, over the calibration queries.
    pub within_radius_mean: f64,
    /// FNV-1a of every reply's members in order, as 16 hex digits.
    pub digest: String,
}

impl GeoResult {
    /// ΔVmRSS per member, bytes.
    pub fn rss_per_member(&self) -> f64 {
        self.memory.rss_delta_bytes() / self.members.max(1) as f64
    }

    /// Δused_memory per member, bytes.
    pub fn used_per_member(&self) -> Option<f64> {
        Some(self.memory.used_delta_bytes()? / self.members.max(1) as f64)
    }
}

fn search_args(point: (f64, f64), radius_km: u64, count: bool) -> Vec<String> {
    let mut args: Vec<String> = ["GEOSEARCH", KEY, "FROMLONLAT"].map(str::to_owned).to_vec();
    args.extend([
        format!("{:.6}", point.0),
        format!("{:.6}", point.1),
        "BYRADIUS".to_owned(),
        radius_km.to_string(),
        "km".to_owned(),
    ]);
    if count {
        args.extend(["ASC", "COUNT", &COUNT.to_string()].map(str::to_owned));
    }
    args
}

/// FNV-1a, 64 bits: the digest of the replies.
#[derive(Debug, Clone, Copy)]
struct Digest(u64);

impl Digest {
    const fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The members of one GEOSEARCH reply, added to `digest`; `Err` for anything but an array of
/// at most `max` member names.
fn reply_members(reply: &Reply, max: usize, digest: &mut Digest) -> Result<usize, String> {
    let Reply::Array(Some(items)) = reply else {
        return Err(format!("replied {reply}, not an array"));
    };
    if items.len() > max {
        return Err(format!("replied {} members, more than {max}", items.len()));
    }
    for item in items {
        match item {
            Reply::Bulk(Some(name)) if name.starts_with(b"m:") => digest.add(name),
            other => return Err(format!("replied a member {other}")),
        }
        digest.add(b",");
    }
    digest.add(b";");
    Ok(items.len())
}

/// Sends the queries `depth` at a time; returns the seconds taken, the members replied in all
/// and the digest.
fn run_queries(
    connection: &mut Connection,
    queries: &[Vec<String>],
    depth: usize,
    max: usize,
) -> Result<(f64, u64, Digest), MeasureError> {
    let mut digest = Digest::new();
    let mut members = 0;
    let mut encoded = Vec::new();
    let started = Instant::now();
    for group in queries.chunks(depth.max(1)) {
        encoded.clear();
        for args in group {
            encode(args, &mut encoded);
        }
        let replies = connection
            .pipeline(&encoded, group.len())
            .map_err(|e| MeasureError::Failed(format!("GEOSEARCH: {e}")))?;
        for (args, reply) in group.iter().zip(&replies) {
            if let Reply::Error(text) = reply {
                return Err(MeasureError::Refused(format!(
                    "{} replied -{text}",
                    args.join(" ")
                )));
            }
            members += reply_members(reply, max, &mut digest)
                .map_err(|why| MeasureError::Failed(format!("{}: {why}", args.join(" "))))?
                as u64;
        }
    }
    Ok((started.elapsed().as_secs_f64(), members, digest))
}

/// Loads the key into `server` (fresh), reads its memory, and times the queries.
pub fn measure(server: &ServerProcess, params: GeoParams) -> Result<GeoResult, MeasureError> {
    let warm_up = load_steps(&mut SplitMix64::new(LOAD_SEED), 0, WARM_UP_MEMBERS);
    let ((), memory) = measure_load(server, params.settle, (&warm_up, KEY), |c| {
        load(c, params.members)
    })?;
    let radius = radius_km(params.members);
    let mut rng = SplitMix64::new(QUERY_SEED);
    let points: Vec<(f64, f64)> = (0..params.queries.max(CALIBRATION_QUERIES))
        .map(|_| point(&mut rng))
        .collect();
    let mut connection = open(server.port, "GEOSEARCH")?;
    let calibration: Vec<Vec<String>> = points[..CALIBRATION_QUERIES]
        .iter()
        .map(|&p| search_args(p, radius, false))
        .collect();
    let (_, within, _) = run_queries(&mut connection, &calibration, DEPTH, usize::MAX)?;
    let queries: Vec<Vec<String>> = points[..params.queries.max(1)]
        .iter()
        .map(|&p| search_args(p, radius, true))
        .collect();
    let (pipelined_secs, results, digest) = run_queries(&mut connection, &queries, DEPTH, COUNT)?;
    let (single_secs, _, single_digest) = run_queries(&mut connection, &queries, 1, COUNT)?;
    if single_digest.0 != digest.0 {
        return Err(MeasureError::Failed(
            "the same GEOSEARCH queries gave different replies one at a time than 16 in flight"
                .to_owned(),
        ));
    }
    let count = queries.len() as f64;
    Ok(GeoResult {
        members: params.members,
        radius_km: radius,
        memory,
        queries: queries.len(),
        pipelined_per_sec: count / pipelined_secs,
        single_per_sec: count / single_secs,
        results_mean: results as f64 / count,
        within_radius_mean: within as f64 / CALIBRATION_QUERIES as f64,
        digest: format!("{:016x}", digest.0),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::{
        Digest, GeoParams, LATITUDE_MAX_DEG, load_steps, measure, point, radius_km, reply_members,
    };
    use crate::rng::SplitMix64;
    use crate::server_proc::{ServerKind, ServerProcess};
    use crate::server_resp::Reply;

    #[test]
    fn points_are_uniform_over_the_sphere() {
        let mut rng = SplitMix64::new(1);
        let n = 100_000;
        let mut polar = 0;
        for _ in 0..n {
            let (lon, lat) = point(&mut rng);
            assert!((-180.0..180.0).contains(&lon));
            assert!(lat.abs() < LATITUDE_MAX_DEG);
            polar += usize::from(lat.abs() > 60.0);
        }
        // Above 60° lies (sin 85.05° − sin 60°) / sin 85.05° = 13.1 % of the area.
        let share = polar as f64 / n as f64;
        assert!((share - 0.131).abs() < 0.005, "{share}");
    }

    #[test]
    fn the_radius_holds_a_hundred_members() {
        assert_eq!(radius_km(1_000_000), 127);
        assert_eq!(radius_km(100_000), 402);
    }

    #[test]
    fn loads_a_hundred_members_a_command() {
        let steps = load_steps(&mut SplitMix64::new(2), 0, 250);
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[2].reply, Some(50));
        assert_eq!(steps[0].args.len(), 2 + 300);
        assert_eq!(steps[2].args.last().unwrap(), b"m:249");
    }

    #[test]
    fn replies_are_checked_and_digested() {
        let mut digest = Digest::new();
        let reply = Reply::Array(Some(vec![Reply::bulk("m:1"), Reply::bulk("m:2")]));
        assert_eq!(reply_members(&reply, 10, &mut digest), Ok(2));
        assert!(reply_members(&reply, 1, &mut digest).is_err());
        assert!(reply_members(&Reply::Integer(1), 10, &mut digest).is_err());
        let mut other = Digest::new();
        let swapped = Reply::Array(Some(vec![Reply::bulk("m:2"), Reply::bulk("m:1")]));
        reply_members(&swapped, 10, &mut other).unwrap();
        let mut again = Digest::new();
        reply_members(&reply, 10, &mut again).unwrap();
        assert_ne!(other.0, again.0);
    }

    /// 20,000 members against a redis-server this test starts.
    #[test]
    fn measures_a_real_redis_server() {
        let server = ServerProcess::start(ServerKind::Redis, Path::new("redis-server"))
            .expect("redis-server starts");
        let params = GeoParams {
            members: 20_000,
            queries: 200,
            settle: Duration::ZERO,
        };
        let result = measure(&server, params).unwrap();
        assert!(result.rss_per_member() > 20.0, "{result:?}");
        assert!(
            (60.0..140.0).contains(&result.within_radius_mean),
            "{result:?}"
        );
        assert!(result.results_mean > 9.0 && result.results_mean <= 10.0);
        assert!(result.pipelined_per_sec > 0.0 && result.single_per_sec > 0.0);
    }
}
