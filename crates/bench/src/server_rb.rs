//! Throughput and latency through `redis-benchmark`, the tool both servers are measured with.
//!
//! ```text
//! redis-benchmark -h 127.0.0.1 -p P -c 50 -n <requests> -r 1000000 -P <1|16> --csv -t <tests>
//! "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
//! "SET","83333.34","0.351","0.040","0.327","0.607","1.247","1.599"
//! ```
//!
//! redis-benchmark 7 prints one CSV row per test (rps and latency percentiles in ms). The parser
//! finds the columns by the header's names, ignores lines that are not CSV (redis-benchmark
//! prints `Error from server: ...` when a command fails and then skips that test), and drops the
//! `LPUSH (needed to benchmark LRANGE)` fill row. A test densekv does not implement is detected
//! before the run by [`probe`], which sends that test's commands once and looks for an error reply.
//!
//! Each test runs in an invocation of its own, the `lrange_*` tests with fewer requests (each of
//! their replies carries 100–600 elements, so they take up to ten times as long per request).
//! Tests run in [`TESTS`] order, redis-benchmark's own, so `lpop` pops what `lpush` pushed, on
//! both servers alike.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Serialize;

use crate::server_resp::{Connection, Reply};

/// redis-benchmark's standard tests, in its own order.
pub const TESTS: [&str; 19] = [
    "ping_inline",
    "ping_mbulk",
    "set",
    "get",
    "incr",
    "lpush",
    "rpush",
    "lpop",
    "rpop",
    "sadd",
    "hset",
    "spop",
    "zadd",
    "zpopmin",
    "lrange_100",
    "lrange_300",
    "lrange_500",
    "lrange_600",
    "mset",
];
/// The tests of issue #31 that redis-benchmark has no built-in test for: commands of their own
/// against a prefilled zset (`server_zsets.rs`), run after [`TESTS`].
pub const ZSET_TESTS: [&str; 3] = ["zrangebyscore", "zrank", "zadd_big"];
pub const CLIENTS: u32 = 50;
pub const KEYSPACE: u64 = 1_000_000;
const RUN_TIMEOUT: Duration = Duration::from_secs(900);

/// One test's result from one redis-benchmark run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchSample {
    pub test: String,
    pub rps: f64,
    pub avg_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// The commands redis-benchmark sends for `test`, as a probe sends them once.
fn probe_commands(test: &str) -> Vec<Vec<&'static str>> {
    let cmd = |args: &[&'static str]| args.to_vec();
    match test {
        "ping_inline" | "ping_mbulk" => vec![cmd(&["PING"])],
        "set" => vec![cmd(&["SET", "probe:k", "xxx"])],
        "get" => vec![cmd(&["GET", "probe:k"])],
        "incr" => vec![cmd(&["INCR", "probe:n"])],
        "lpush" => vec![cmd(&["LPUSH", "probe:l", "xxx"])],
        "rpush" => vec![cmd(&["RPUSH", "probe:l", "xxx"])],
        "lpop" => vec![cmd(&["LPOP", "probe:l"])],
        "rpop" => vec![cmd(&["RPOP", "probe:l"])],
        "sadd" => vec![cmd(&["SADD", "probe:s", "xxx"])],
        "hset" => vec![cmd(&["HSET", "probe:h", "f", "xxx"])],
        "spop" => vec![cmd(&["SPOP", "probe:s"])],
        "zadd" | "zadd_big" => vec![cmd(&["ZADD", "probe:z", "1", "xxx"])],
        "zpopmin" => vec![cmd(&["ZPOPMIN", "probe:z"])],
        "mset" => vec![cmd(&["MSET", "probe:a", "xxx", "probe:b", "xxx"])],
        "zrangebyscore" => vec![
            cmd(&["ZADD", "probe:z", "1", "xxx"]),
            cmd(&["ZRANGEBYSCORE", "probe:z", "0", "+inf", "LIMIT", "0", "10"]),
        ],
        "zrank" => vec![
            cmd(&["ZADD", "probe:z", "1", "xxx"]),
            cmd(&["ZRANK", "probe:z", "xxx"]),
        ],
        _ if test.starts_with("lrange_") => vec![
            cmd(&["LPUSH", "probe:r", "xxx"]),
            cmd(&["LRANGE", "probe:r", "0", "99"]),
        ],
        _ => Vec::new(),
    }
}

/// Sends each test's commands once; returns the error reply of every test that got one.
pub fn probe(port: u16, tests: &[&str]) -> Result<Vec<(String, String)>, String> {
    let mut connection =
        Connection::open(port, Duration::from_secs(10)).map_err(|e| format!("probe: {e}"))?;
    let mut unsupported = Vec::new();
    for &test in tests {
        for args in probe_commands(test) {
            let reply = connection
                .command(&args)
                .map_err(|e| format!("probe {test}: {e}"))?;
            if let Reply::Error(text) = reply {
                unsupported.push((test.to_owned(), format!("{}: -{text}", args[0])));
                break;
            }
        }
    }
    Ok(unsupported)
}

/// The redis-benchmark arguments of one invocation.
pub fn arguments(
    port: u16,
    requests: u64,
    keyspace: u64,
    pipeline: u32,
    tests: &[&str],
) -> Vec<String> {
    [
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-c",
        &CLIENTS.to_string(),
        "-n",
        &requests.to_string(),
        "-r",
        &keyspace.to_string(),
        "-P",
        &pipeline.to_string(),
        "--csv",
        "-t",
        &tests.join(","),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// Every test the suite knows: [`TESTS`], then [`ZSET_TESTS`].
pub fn all_tests() -> impl Iterator<Item = &'static str> {
    TESTS.iter().chain(ZSET_TESTS.iter()).copied()
}

/// The redis-benchmark arguments of a test with a command of its own (`command`'s words follow
/// the options; redis-benchmark replaces each `__rand_int__` by its own draw below `keyspace`).
pub fn command_arguments(
    port: u16,
    requests: u64,
    keyspace: u64,
    pipeline: u32,
    command: &[&str],
) -> Vec<String> {
    let mut args = arguments(port, requests, keyspace, pipeline, &[]);
    args.truncate(args.len() - 2);
    args.extend(command.iter().map(|word| (*word).to_owned()));
    args
}

/// The sample of a run of `command`, renamed `test`: redis-benchmark names the row of a command
/// of its own by the whole command line (`zrank zbench member:__rand_int__` once lowercased).
pub fn command_sample(
    samples: Vec<BenchSample>,
    command: &[&str],
    test: &str,
) -> Option<BenchSample> {
    let line = command.join(" ").to_ascii_lowercase();
    let mut sample = samples.into_iter().find(|s| s.test == line)?;
    test.clone_into(&mut sample.test);
    Some(sample)
}

/// Runs redis-benchmark with `args` and parses its CSV. A run that takes longer than 15 minutes
/// is killed (through its handle) and reported as an error.
pub fn run(binary: &Path, args: &[String]) -> Result<Vec<BenchSample>, String> {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    let (status, stdout, stderr) = crate::machine::wait_with_timeout(&mut child, RUN_TIMEOUT)?;
    match status {
        None => Err(format!(
            "redis-benchmark killed after {} s",
            RUN_TIMEOUT.as_secs()
        )),
        Some(status) if !status.success() => Err(format!(
            "redis-benchmark exited with {status}: {}",
            stderr.trim()
        )),
        Some(_) => Ok(parse_csv(&stdout)),
    }
}

/// Parses redis-benchmark's `--csv` output into one sample per test, keyed by the `-t` name
/// (`"LRANGE_100 (first 100 elements)"` → `lrange_100`).
pub fn parse_csv(text: &str) -> Vec<BenchSample> {
    let mut columns: Vec<String> = [
        "test",
        "rps",
        "avg_latency_ms",
        "min_latency_ms",
        "p50_latency_ms",
        "p95_latency_ms",
        "p99_latency_ms",
        "max_latency_ms",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut samples = Vec::new();
    for line in text.lines().map(str::trim) {
        if !line.starts_with('"') {
            continue;
        }
        let fields = split_csv_line(line);
        if fields.first().is_some_and(|f| f == "test") {
            columns = fields;
            continue;
        }
        let field = |name: &str| {
            columns
                .iter()
                .position(|c| c == name)
                .and_then(|index| fields.get(index))
                .and_then(|value| value.parse::<f64>().ok())
        };
        let Some(label) = fields.first() else {
            continue;
        };
        if label.contains("needed to benchmark") {
            continue;
        }
        let test = label
            .split(" (")
            .next()
            .unwrap_or(label)
            .trim()
            .to_ascii_lowercase();
        if let Some(rps) = field("rps") {
            samples.push(BenchSample {
                test,
                rps,
                avg_ms: field("avg_latency_ms"),
                p50_ms: field("p50_latency_ms"),
                p99_ms: field("p99_latency_ms"),
            });
        }
    }
    samples
}

/// Splits one CSV line of quoted fields (redis-benchmark quotes every field and never embeds
/// a quote in one, but a doubled `""` is still read as a quote).
fn split_csv_line(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                current.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    fields.push(current);
    fields
}

/// The version line of `redis-benchmark --version` / `redis-server --version`.
pub fn version(binary: &Path) -> Option<String> {
    let out = Command::new(binary).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.trim().to_owned();
    (!line.is_empty()).then_some(line)
}

#[cfg(test)]
// The expected figures are sums and halves of small integers, exact in binary floating point.
#[allow(clippy::float_cmp)]
mod tests {
    use super::{
        TESTS, ZSET_TESTS, all_tests, arguments, command_arguments, command_sample, parse_csv,
        probe_commands,
    };

    /// Captured from redis-benchmark 7.0.15 against redis-server 7.0.15 on the dev machine,
    /// including the error line it prints when a command is missing on the server.
    const SAMPLE: &str = "\
Error from server: ERR unknown command 'LPUSH', with args beginning with: 'mylist' 'VXK' 
\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"
\"PING_INLINE\",\"80000.00\",\"0.357\",\"0.064\",\"0.351\",\"0.615\",\"0.807\",\"1.871\"
\"SET\",\"83333.34\",\"0.351\",\"0.040\",\"0.327\",\"0.607\",\"1.247\",\"1.599\"
\"ZPOPMIN\",\"62500.00\",\"0.516\",\"0.048\",\"0.479\",\"0.959\",\"1.359\",\"1.735\"
\"LPUSH (needed to benchmark LRANGE)\",\"52631.58\",\"0.623\",\"0.048\",\"0.535\",\"1.463\",\"2.487\",\"2.655\"
\"LRANGE_100 (first 100 elements)\",\"32258.06\",\"1.088\",\"0.232\",\"0.983\",\"1.975\",\"3.063\",\"3.287\"
\"MSET (10 keys)\",\"43478.26\",\"1.001\",\"0.216\",\"0.927\",\"1.999\",\"2.471\",\"2.735\"
";

    #[test]
    fn parses_captured_csv() {
        let samples = parse_csv(SAMPLE);
        let tests: Vec<&str> = samples.iter().map(|s| s.test.as_str()).collect();
        assert_eq!(
            tests,
            ["ping_inline", "set", "zpopmin", "lrange_100", "mset"]
        );
        let set = &samples[1];
        assert!((set.rps - 83_333.34).abs() < 1e-6);
        assert_eq!(set.p50_ms, Some(0.327));
        assert_eq!(set.p99_ms, Some(1.247));
        assert_eq!(set.avg_ms, Some(0.351));
        assert!((samples[3].rps - 32_258.06).abs() < 1e-6);
    }

    #[test]
    fn columns_are_found_by_name() {
        let reordered = "\"test\",\"p99_latency_ms\",\"rps\"\n\"GET\",\"2.5\",\"1000\"\n";
        let samples = parse_csv(reordered);
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0].rps, 1000.0);
        assert_eq!(samples[0].p99_ms, Some(2.5));
        assert_eq!(samples[0].p50_ms, None);
        assert!(parse_csv("").is_empty());
        assert!(parse_csv("\"GET\",\"not a number\"\n").is_empty());
    }

    #[test]
    fn every_test_has_a_probe() {
        for test in all_tests() {
            assert!(!probe_commands(test).is_empty(), "{test}");
        }
        assert_eq!(all_tests().count(), TESTS.len() + ZSET_TESTS.len());
    }

    #[test]
    fn command_line() {
        let args = arguments(7000, 100_000, 1_000_000, 16, &["set", "get"]);
        assert_eq!(
            args.join(" "),
            "-h 127.0.0.1 -p 7000 -c 50 -n 100000 -r 1000000 -P 16 --csv -t set,get"
        );
        let command = ["ZRANK", "zbench", "member:__rand_int__"];
        let args = command_arguments(7000, 1000, 1000, 1, &command);
        assert_eq!(
            args.join(" "),
            "-h 127.0.0.1 -p 7000 -c 50 -n 1000 -r 1000 -P 1 --csv ZRANK zbench member:__rand_int__"
        );
    }

    /// The row redis-benchmark 7.0.15 prints for a command of its own.
    #[test]
    fn a_command_of_its_own_is_found_and_renamed() {
        let csv = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"
\"ZRANK zbench member:__rand_int__\",\"90090.09\",\"0.295\",\"0.080\",\"0.279\",\"0.447\",\"0.647\",\"1.423\"
";
        let command = ["ZRANK", "zbench", "member:__rand_int__"];
        let sample = command_sample(parse_csv(csv), &command, "zrank").unwrap();
        assert_eq!(sample.test, "zrank");
        assert_eq!(sample.p50_ms, Some(0.279));
        assert!(command_sample(parse_csv(csv), &["ZADD", "zbig"], "zadd_big").is_none());
    }
}
