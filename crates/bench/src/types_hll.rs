//! The types suite's HyperLogLog scenarios, both through redis-benchmark after a prefill that
//! makes every HyperLogLog the command touches a dense one:
//!
//! ```text
//! pfadd    prefill: PFADD hll:<i as 12 digits> pre:<j> … (1,000 elements a command) for
//!          i < 100, j < E (20,000; quick 5,000), then PFCOUNT of each within 5 % of E;
//!          PFDEBUG ENCODING of each (if answered) → dense keys
//!          redis-benchmark -h 127.0.0.1 -p P -c 50 -n N -r 100 -P <1|16> --csv
//!                          PFADD hll:__rand_int__ ele:__rand_int__:__rand_int__:__rand_int__
//!          → requests/s; then DBSIZE must still be 100
//! pfcount  prefill: PFADD hllc:<k> c<k>:<j> … (1,000 elements a command) for k < 10,
//!          j < 100,000; PFCOUNT of each within 3 % of 100,000, of all ten within 3 % of 10⁶
//!          redis-benchmark -h 127.0.0.1 -p P -c 50 -n N -P <1|16> --csv
//!                          PFCOUNT hllc:0 hllc:1 … hllc:9
//! ```
//!
//! redis-benchmark replaces *each* `__rand_int__` of a command by its own draw below `-r`, as a
//! 12-digit zero-padded number (checked against redis-benchmark 7.0.15: `SADD s
//! __rand_int__:__rand_int__` with `-r 3` makes 9 members). One `-r` serves the key and the
//! element, so `PFADD hll:__rand_int__ ele:__rand_int__` with `-r 100` would add only 100
//! distinct elements to each key, and a large `-r` would spread the requests over as many new,
//! sparse keys. Three placeholders in the element give each of the 100 keys 10⁶ possible
//! elements: a run of 5·10⁶ requests (-P 16; 2·10⁵ at -P 1) adds ~5·10⁴ mostly new elements to
//! each key (a new element raises its register about once in E/16,384 + 1 times, E growing from
//! 20,000 to ~70,000 over the run, so the write path after a register change is exercised
//! throughout), and every request hits one of the 100 prefilled keys, which are
//! dense: Redis turns a sparse HyperLogLog dense past `hll-sparse-max-bytes` (3,000), which
//! a few thousand elements exceed. DBSIZE after the run shows no request created a key.
//!
//! PFCOUNT over several keys merges their registers into a temporary HyperLogLog on every call
//! (redis-server caches the cardinality only of a single key), so the second scenario measures
//! a merge of ten dense HyperLogLogs and an estimate per request.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::machine;
use crate::server_proc::ServerProcess;
use crate::server_rb::{self, BenchSample};
use crate::server_resp::{Connection, Reply, encode};
use crate::types_driver::{MeasureError, Step, ask_integer, open, run_steps};

/// redis-benchmark's `-c`.
pub const CLIENTS: u32 = 50;
/// The PFADD scenario's keys, and its `-r`.
pub const PFADD_KEYS: u64 = 100;
/// The PFADD command redis-benchmark sends (module doc).
pub const PFADD_COMMAND: [&str; 3] = [
    "PFADD",
    "hll:__rand_int__",
    "ele:__rand_int__:__rand_int__:__rand_int__",
];
/// The PFCOUNT scenario's keys…
pub const PFCOUNT_KEYS: usize = 10;
/// …and the elements of each.
pub const PFCOUNT_ELEMENTS: u64 = 100_000;
/// Elements per PFADD of a prefill.
pub const PREFILL_ELEMENTS_PER_COMMAND: u64 = 1000;
/// How far PFCOUNT of one prefilled key may be from its element count: 6 standard errors of a
/// 16,384-register HyperLogLog (0.81 %) rounded up.
const KEY_TOLERANCE: f64 = 0.05;
/// Likewise for the union of the ten PFCOUNT keys, and of each of them.
const UNION_TOLERANCE: f64 = 0.03;

/// The key redis-benchmark makes of `hll:__rand_int__` for draw `i`.
pub fn pfadd_key(i: u64) -> String {
    format!("hll:{i:012}")
}

/// The PFCOUNT scenario's keys.
pub fn pfcount_keys() -> Vec<String> {
    (0..PFCOUNT_KEYS).map(|k| format!("hllc:{k}")).collect()
}

/// One PFADD or PFCOUNT throughput measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HllParams {
    /// Elements prefilled into each key.
    pub prefill_per_key: u64,
    pub requests: u64,
    /// redis-benchmark's `-P`.
    pub pipeline: u32,
}

/// Its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HllResult {
    pub requests: u64,
    pub rps: f64,
    pub avg_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// The server's CPU time (user and system, all threads) over the run per request, µs: the
    /// work a request costs the server, which the rate shows only when the server is the
    /// bottleneck (at -P 16 on two cores the client's share of the CPU decides as much).
    pub server_cpu_us_per_request: Option<f64>,
    pub prefill_secs: f64,
    /// PFCOUNT after the prefill: of the first key (pfadd), of all ten keys (pfcount).
    pub count_after_prefill: u64,
    /// Keys that `PFDEBUG ENCODING` calls dense after the prefill; `None` when it is refused.
    pub dense_keys: Option<u64>,
    /// `DBSIZE` after the run.
    pub keys_after: u64,
}

/// The redis-benchmark arguments: every option before the command, whose words follow.
pub fn benchmark_arguments(
    port: u16,
    params: HllParams,
    keyspace: Option<u64>,
    command: &[String],
) -> Vec<String> {
    let mut args: Vec<String> = [
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-c",
        &CLIENTS.to_string(),
        "-n",
        &params.requests.to_string(),
    ]
    .map(str::to_owned)
    .to_vec();
    if let Some(keyspace) = keyspace {
        args.extend(["-r".to_owned(), keyspace.to_string()]);
    }
    args.extend([
        "-P".to_owned(),
        params.pipeline.to_string(),
        "--csv".to_owned(),
    ]);
    args.extend(command.iter().cloned());
    args
}

/// The PFADD scenario's redis-benchmark arguments.
pub fn pfadd_arguments(port: u16, params: HllParams) -> Vec<String> {
    let command = PFADD_COMMAND.map(str::to_owned);
    benchmark_arguments(port, params, Some(PFADD_KEYS), &command)
}

/// The PFCOUNT scenario's redis-benchmark arguments.
pub fn pfcount_arguments(port: u16, params: HllParams) -> Vec<String> {
    let mut command = vec!["PFCOUNT".to_owned()];
    command.extend(pfcount_keys());
    benchmark_arguments(port, params, None, &command)
}

/// The row of `command` in redis-benchmark's CSV (its test name is the command, lowercased).
pub fn command_sample(samples: Vec<BenchSample>, command: &str) -> Result<BenchSample, String> {
    let prefix = format!("{} ", command.to_ascii_lowercase());
    samples
        .into_iter()
        .find(|s| s.test.starts_with(&prefix))
        .ok_or_else(|| format!("redis-benchmark printed no {command} result"))
}

/// The prefill's PFADDs: `elements` elements `<prefix><j>` into each key, in commands of
/// [`PREFILL_ELEMENTS_PER_COMMAND`]; a key's first PFADD answers :1 (the key is new), a later
/// one :0 or :1 (whether a register changed).
fn prefill_steps(keys: &[String], prefix: impl Fn(usize) -> String, elements: u64) -> Vec<Step> {
    let mut steps = Vec::new();
    for (k, key) in keys.iter().enumerate() {
        let prefix = prefix(k);
        let mut start = 0;
        while start < elements {
            let end = (start + PREFILL_ELEMENTS_PER_COMMAND).min(elements);
            let mut args = vec!["PFADD".to_owned(), key.clone()];
            args.extend((start..end).map(|j| format!("{prefix}{j}")));
            steps.push(if start == 0 {
                Step::new(&args, 1)
            } else {
                Step::any_integer(&args)
            });
            start = end;
        }
    }
    steps
}

/// PFCOUNT of `keys`, checked to be within `tolerance` of `expected`.
fn checked_count(
    connection: &mut Connection,
    keys: &[String],
    expected: u64,
    tolerance: f64,
) -> Result<u64, MeasureError> {
    let mut args = vec!["PFCOUNT".to_owned()];
    args.extend(keys.iter().cloned());
    let count = ask_integer(connection, &args)? as u64;
    if (count as f64 - expected as f64).abs() > expected as f64 * tolerance {
        return Err(MeasureError::Failed(format!(
            "PFCOUNT {} replied {count}, more than {:.0} % from {expected}",
            keys.join(" "),
            tolerance * 100.0
        )));
    }
    Ok(count)
}

/// `PFDEBUG ENCODING` of every key: how many are dense, or `None` if the server refuses it
/// (densekv need not have redis-server's debugging command).
fn dense_keys(connection: &mut Connection, keys: &[String]) -> Result<Option<u64>, MeasureError> {
    let mut encoded = Vec::new();
    for key in keys {
        encode(&["PFDEBUG", "ENCODING", key.as_str()], &mut encoded);
    }
    let replies = connection
        .pipeline(&encoded, keys.len())
        .map_err(|e| MeasureError::Failed(format!("PFDEBUG ENCODING: {e}")))?;
    if replies.iter().any(|r| matches!(r, Reply::Error(_))) {
        return Ok(None);
    }
    let dense = replies
        .iter()
        .filter(|r| matches!(r, Reply::Simple(s) if s == "dense"))
        .count();
    Ok(Some(dense as u64))
}

/// What a redis-benchmark run gave: its row of the command, the server's CPU time over the run,
/// and DBSIZE afterwards.
struct Run {
    sample: BenchSample,
    server_cpu_secs: Option<f64>,
    keys_after: u64,
}

/// redis-benchmark with `args` against `server`, its row of `command`, the server's CPU seconds
/// over the run, and DBSIZE afterwards.
fn benchmark(
    redis_benchmark: &Path,
    (server, admin): (&ServerProcess, &mut Connection),
    args: &[String],
    command: &str,
) -> Result<Run, MeasureError> {
    let cpu_before = machine::cpu_secs(server.pid());
    let samples = server_rb::run(redis_benchmark, args).map_err(MeasureError::Failed)?;
    let cpu_after = machine::cpu_secs(server.pid());
    let sample = command_sample(samples, command).map_err(MeasureError::Failed)?;
    let keys_after = ask_integer(admin, &["DBSIZE"])? as u64;
    let server_cpu_secs = cpu_before.zip(cpu_after).map(|(a, b)| b - a);
    Ok(Run {
        sample,
        server_cpu_secs,
        keys_after,
    })
}

fn result(
    params: HllParams,
    run: &Run,
    prefill_secs: f64,
    count_after_prefill: u64,
    dense_keys: Option<u64>,
) -> HllResult {
    let sample = &run.sample;
    HllResult {
        requests: params.requests,
        rps: sample.rps,
        avg_ms: sample.avg_ms,
        p50_ms: sample.p50_ms,
        p99_ms: sample.p99_ms,
        server_cpu_us_per_request: run
            .server_cpu_secs
            .map(|secs| secs * 1e6 / params.requests as f64),
        prefill_secs,
        count_after_prefill,
        dense_keys,
        keys_after: run.keys_after,
    }
}

/// The PFADD scenario on `server` (fresh).
pub fn pfadd_throughput(
    redis_benchmark: &Path,
    server: &ServerProcess,
    params: HllParams,
) -> Result<HllResult, MeasureError> {
    let port = server.port;
    let mut admin = open(port, "prefill")?;
    let keys: Vec<String> = (0..PFADD_KEYS).map(pfadd_key).collect();
    let steps = prefill_steps(&keys, |_| "pre:".to_owned(), params.prefill_per_key);
    let started = Instant::now();
    run_steps(&mut admin, &steps)?;
    let prefill_secs = started.elapsed().as_secs_f64();
    let counts = keys
        .iter()
        .map(|key| {
            let one = std::slice::from_ref(key);
            checked_count(&mut admin, one, params.prefill_per_key, KEY_TOLERANCE)
        })
        .collect::<Result<Vec<u64>, MeasureError>>()?;
    let count = counts[0];
    let dense = dense_keys(&mut admin, &keys)?;
    let args = pfadd_arguments(port, params);
    let run = benchmark(redis_benchmark, (server, &mut admin), &args, "PFADD")?;
    let keys_after = run.keys_after;
    if keys_after != PFADD_KEYS {
        return Err(MeasureError::Failed(format!(
            "DBSIZE is {keys_after} after the PFADD run, not {PFADD_KEYS}: the requests did not \
             all hit the prefilled keys"
        )));
    }
    Ok(result(params, &run, prefill_secs, count, dense))
}

/// The PFCOUNT scenario on `server` (fresh).
pub fn pfcount_throughput(
    redis_benchmark: &Path,
    server: &ServerProcess,
    params: HllParams,
) -> Result<HllResult, MeasureError> {
    let port = server.port;
    let mut admin = open(port, "prefill")?;
    let keys = pfcount_keys();
    let steps = prefill_steps(&keys, |k| format!("c{k}:"), params.prefill_per_key);
    let started = Instant::now();
    run_steps(&mut admin, &steps)?;
    let prefill_secs = started.elapsed().as_secs_f64();
    for key in &keys {
        checked_count(
            &mut admin,
            std::slice::from_ref(key),
            params.prefill_per_key,
            UNION_TOLERANCE,
        )?;
    }
    let total = params.prefill_per_key * keys.len() as u64;
    let count = checked_count(&mut admin, &keys, total, UNION_TOLERANCE)?;
    let dense = dense_keys(&mut admin, &keys)?;
    let args = pfcount_arguments(port, params);
    let run = benchmark(redis_benchmark, (server, &mut admin), &args, "PFCOUNT")?;
    Ok(result(params, &run, prefill_secs, count, dense))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{
        HllParams, PFADD_KEYS, command_sample, pfadd_arguments, pfadd_key, pfadd_throughput,
        pfcount_arguments, pfcount_throughput,
    };
    use crate::server_proc::{ServerKind, ServerProcess};
    use crate::server_rb::parse_csv;
    use crate::types_driver::MeasureError;

    /// Captured from redis-benchmark 7.0.15 against redis-server 7.0.15.
    const CAPTURED: &str = "\
\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"
\"PFCOUNT hllc:0 hllc:1 hllc:2 hllc:3 hllc:4 hllc:5 hllc:6 hllc:7 hllc:8 hllc:9\",\"2844.14\",\"17.496\",\"0.448\",\"16.623\",\"24.943\",\"27.871\",\"45.183\"
";

    #[test]
    fn finds_the_row_of_the_command() {
        let sample = command_sample(parse_csv(CAPTURED), "PFCOUNT").unwrap();
        assert!((sample.rps - 2844.14).abs() < 1e-6);
        assert!(command_sample(parse_csv(CAPTURED), "PFADD").is_err());
    }

    #[test]
    fn options_come_before_the_command() {
        let params = HllParams {
            prefill_per_key: 10,
            requests: 1000,
            pipeline: 16,
        };
        assert_eq!(
            pfadd_arguments(7000, params).join(" "),
            "-h 127.0.0.1 -p 7000 -c 50 -n 1000 -r 100 -P 16 --csv PFADD hll:__rand_int__ \
             ele:__rand_int__:__rand_int__:__rand_int__"
        );
        assert_eq!(
            pfcount_arguments(7000, params).join(" "),
            "-h 127.0.0.1 -p 7000 -c 50 -n 1000 -P 16 --csv PFCOUNT hllc:0 hllc:1 hllc:2 \
             hllc:3 hllc:4 hllc:5 hllc:6 hllc:7 hllc:8 hllc:9"
        );
        assert_eq!(pfadd_key(PFADD_KEYS - 1), "hll:000000000099");
    }

    /// Both scenarios, small, against a redis-server this test starts; then one whose PFADD is
    /// renamed away, which must be a refusal.
    #[test]
    fn measures_a_real_redis_server() {
        let server = ServerProcess::start(ServerKind::Redis, Path::new("redis-server"))
            .expect("redis-server starts");
        let params = HllParams {
            prefill_per_key: 3000,
            requests: 2000,
            pipeline: 16,
        };
        let bench = Path::new("redis-benchmark");
        let result = pfadd_throughput(bench, &server, params).unwrap();
        assert!(result.rps > 0.0);
        assert_eq!(
            (result.keys_after, result.dense_keys),
            (PFADD_KEYS, Some(PFADD_KEYS))
        );
        let server = ServerProcess::start(ServerKind::Redis, Path::new("redis-server"))
            .expect("redis-server starts");
        let result = pfcount_throughput(bench, &server, params).unwrap();
        assert!(result.count_after_prefill.abs_diff(30_000) < 900);
        assert_eq!(result.keys_after, 10);

        let refusing = ServerProcess::start_with(
            ServerKind::Redis,
            Path::new("redis-server"),
            &["--rename-command", "PFADD", ""].map(String::from),
        )
        .expect("redis-server starts");
        match pfcount_throughput(bench, &refusing, params) {
            Err(MeasureError::Refused(why)) => {
                assert!(why.starts_with("PFADD hllc:0 c0:0"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }
}
