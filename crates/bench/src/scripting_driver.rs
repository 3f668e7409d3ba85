//! The scripting suite's two measurements, each against a server already listening on a port (so
//! they run against any server, and the tests below run them against a redis-server they start):
//!
//! ```text
//! evalsha  SCRIPT LOAD "return redis.call('INCR', KEYS[1])" → SHA (40 hex digits), EVALSHA SHA 1
//!          bench:probe → :1, then
//!          redis-benchmark -h 127.0.0.1 -p P -c 50 -n N -r 100000 -P <1|16> --csv
//!                          evalsha SHA 1 key:__rand_int__
//!          → requests/s (and p50/p99), then DBSIZE: the keys the run created
//! kill     CONFIG SET busy-reply-threshold 100 (else lua-time-limit 100), SET x 1; per kill:
//!          the script connection sends EVAL "<busy loop>" 0; a pinger sends PING every 2 ms
//!          until it reads -BUSY; a third connection sends GET x a few times (each -BUSY is
//!          counted); the killer (opened before the EVAL or only now) sends SCRIPT KILL
//!          → ms from sending SCRIPT KILL to its +OK, ms from that +OK to the script
//!            connection's error reply, and a PING after it must answer +PONG
//! ```
//!
//! redis-benchmark's custom-command syntax: every option goes *before* the command, because
//! everything from the first argument that is not an option on is the command's words (an
//! `-r 100000` after them is sent to the server as two more EVALSHA arguments, and without `-r`
//! `__rand_int__` stays literal: every request then hits the one key `key:__rand_int__`). With
//! `-r R` each `__rand_int__` becomes a 12-digit number below R, drawn anew per request. The
//! run's `DBSIZE` above 1 shows the substitution happened; 1 fails the measurement.
//!
//! A server that refuses a command (`-ERR unknown command`, `-NOSCRIPT`, `-NOTBUSY`, a script
//! that finishes or fails before the server turns busy) makes the measurement an `Err` naming
//! the command and the reply, never a panic or a figure.

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use serde::Serialize;

use crate::server_rb::{self, BenchSample};
use crate::server_resp::{Connection, Reply, encode, read_reply};
use crate::stats::median;

/// The script EVALSHA runs.
pub const INCR_SCRIPT: &str = "return redis.call('INCR', KEYS[1])";
/// The key of every EVALSHA request; redis-benchmark substitutes `__rand_int__` (module doc).
pub const KEY_PATTERN: &str = "key:__rand_int__";
/// redis-benchmark's `-r`: the number of distinct keys.
pub const KEYSPACE: u64 = 100_000;
/// redis-benchmark's `-c`.
pub const CLIENTS: u32 = 50;
/// `busy-reply-threshold` (`lua-time-limit`), in ms: how long a script runs before the server
/// answers other clients with -BUSY.
pub const BUSY_THRESHOLD_MS: u64 = 100;
/// Between the pinger's PINGs while it waits for -BUSY.
pub const POLL_INTERVAL: Duration = Duration::from_millis(2);
/// The key the third connection reads while the script is busy.
const GET_KEY: &str = "x";
/// How long setup and probe replies may take.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// A script that runs until it is killed; the value of `--script`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BusyScript {
    /// `local i = 0 while true do i = i + 1 end`
    While,
    /// `for i = 1, 1e9 do end`: a counted loop (seconds long, not endless).
    Counted,
}

impl BusyScript {
    pub const ALL: [Self; 2] = [Self::While, Self::Counted];

    /// The Lua source sent with EVAL.
    pub fn source(self) -> &'static str {
        match self {
            Self::While => "local i = 0 while true do i = i + 1 end",
            Self::Counted => "for i = 1, 1e9 do end",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::While => "while loop",
            Self::Counted => "counted loop",
        }
    }
}

/// When the connection that sends SCRIPT KILL is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KillerOpened {
    /// Before the EVAL is sent: a server with I/O threads may have given it the script
    /// connection's thread.
    Before,
    /// After the pinger read -BUSY: accepted while the script runs.
    After,
}

impl KillerOpened {
    pub const BOTH: [Self; 2] = [Self::Before, Self::After];

    pub fn name(self) -> &'static str {
        match self {
            Self::Before => "before",
            Self::After => "after",
        }
    }
}

/// One EVALSHA throughput measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalshaParams {
    pub requests: u64,
    /// redis-benchmark's `-P`.
    pub pipeline: u32,
}

/// Its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalshaResult {
    pub requests: u64,
    pub rps: f64,
    pub avg_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// `DBSIZE` after the run: distinct keys hit, plus the probe's.
    pub keys: u64,
}

/// One kill-latency measurement: `kills` kills of `script` on one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KillParams {
    pub script: BusyScript,
    pub killer: KillerOpened,
    pub kills: usize,
    /// `GET x` commands the third connection sends during each busy period.
    pub gets: usize,
}

/// Its result: medians over the kills, and the GET counts summed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KillResult {
    pub kills: usize,
    /// From sending the EVAL to reading the first -BUSY reply to PING.
    pub busy_after_ms: f64,
    /// From sending SCRIPT KILL to reading its +OK.
    pub kill_ok_ms: f64,
    pub kill_ok_max_ms: f64,
    /// From reading SCRIPT KILL's +OK to the script connection reading its error reply
    /// (negative when the harness read the error first).
    pub script_error_ms: f64,
    /// `GET x` commands sent while the script was busy, and how many were answered -BUSY.
    pub gets: u64,
    pub gets_busy: u64,
    /// The first reply to `GET x` that was not -BUSY, if any.
    pub get_other_reply: Option<String>,
    /// The script connection's error reply (the first kill's).
    pub script_error: String,
}

/// One kill's figures.
#[derive(Debug, Clone, PartialEq)]
struct Timing {
    busy_after_ms: f64,
    kill_ok_ms: f64,
    script_error_ms: f64,
    gets_busy: u64,
    get_other_reply: Option<String>,
    script_error: String,
}

fn open(port: u16, timeout: Duration, role: &str) -> Result<Connection, String> {
    Connection::open(port, timeout).map_err(|e| format!("{role}: cannot connect: {e}"))
}

/// Sends `args` and returns the reply, an I/O error as `Err` naming the command.
fn ask(connection: &mut Connection, args: &[&str]) -> Result<Reply, String> {
    connection
        .command(args)
        .map_err(|e| format!("{}: {e}", args.join(" ")))
}

/// The SHA of a `SCRIPT LOAD` reply: a bulk of 40 hex digits; anything else is the server
/// refusing (`-ERR unknown command 'SCRIPT'`) or not speaking the command.
pub fn parse_sha(reply: &Reply) -> Result<String, String> {
    match reply {
        Reply::Bulk(Some(bytes))
            if bytes.len() == 40 && bytes.iter().all(u8::is_ascii_hexdigit) =>
        {
            Ok(String::from_utf8_lossy(bytes).to_ascii_lowercase())
        }
        other => Err(format!("SCRIPT LOAD replied {other}")),
    }
}

/// Loads [`INCR_SCRIPT`] and runs it once on `bench:probe`; returns its SHA.
pub fn load_incr(connection: &mut Connection) -> Result<String, String> {
    let sha = parse_sha(&ask(connection, &["SCRIPT", "LOAD", INCR_SCRIPT])?)?;
    match ask(connection, &["EVALSHA", &sha, "1", "bench:probe"])? {
        Reply::Integer(_) => Ok(sha),
        other => Err(format!("EVALSHA {sha} 1 bench:probe replied {other}")),
    }
}

/// The redis-benchmark arguments: every option before the command (module doc).
pub fn benchmark_arguments(port: u16, params: EvalshaParams, sha: &str) -> Vec<String> {
    [
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-c",
        &CLIENTS.to_string(),
        "-n",
        &params.requests.to_string(),
        "-r",
        &KEYSPACE.to_string(),
        "-P",
        &params.pipeline.to_string(),
        "--csv",
        "evalsha",
        sha,
        "1",
        KEY_PATTERN,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// The EVALSHA row of redis-benchmark's CSV (its test name is the command line, lowercased).
pub fn evalsha_sample(samples: Vec<BenchSample>) -> Result<BenchSample, String> {
    samples
        .into_iter()
        .find(|s| s.test.starts_with("evalsha "))
        .ok_or_else(|| "redis-benchmark printed no EVALSHA result".to_owned())
}

/// Loads the script, runs redis-benchmark, and checks that the requests spread over keys.
pub fn evalsha_throughput(
    redis_benchmark: &Path,
    port: u16,
    params: EvalshaParams,
) -> Result<EvalshaResult, String> {
    let mut admin = open(port, REPLY_TIMEOUT, "setup")?;
    let sha = load_incr(&mut admin)?;
    let args = benchmark_arguments(port, params, &sha);
    let sample = evalsha_sample(server_rb::run(redis_benchmark, &args)?)?;
    let keys = match ask(&mut admin, &["DBSIZE"])? {
        Reply::Integer(n) if n > 1 => n as u64,
        Reply::Integer(n) => {
            return Err(format!(
                "DBSIZE is {n} after the run: {KEY_PATTERN} was not substituted"
            ));
        }
        other => return Err(format!("DBSIZE replied {other}")),
    };
    Ok(EvalshaResult {
        requests: params.requests,
        rps: sample.rps,
        avg_ms: sample.avg_ms,
        p50_ms: sample.p50_ms,
        p99_ms: sample.p99_ms,
        keys,
    })
}

/// Sets the busy threshold: `busy-reply-threshold` (Redis 7), else its old name
/// `lua-time-limit`; both refused is an `Err` with both replies.
pub fn set_busy_threshold(connection: &mut Connection, ms: u64) -> Result<(), String> {
    let ms = ms.to_string();
    let mut refused = Vec::new();
    for name in ["busy-reply-threshold", "lua-time-limit"] {
        match ask(connection, &["CONFIG", "SET", name, &ms])? {
            Reply::Simple(ok) if ok == "OK" => return Ok(()),
            other => refused.push(format!("CONFIG SET {name} replied {other}")),
        }
    }
    Err(refused.join("; "))
}

/// Whether `reply` is the -BUSY error.
fn is_busy(reply: &Reply) -> bool {
    matches!(reply, Reply::Error(text) if text.starts_with("BUSY"))
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// `later − earlier` in ms, negative when `later` is earlier.
fn signed_ms(later: Instant, earlier: Instant) -> f64 {
    match later.checked_duration_since(earlier) {
        Some(d) => ms(d),
        None => -ms(earlier - later),
    }
}

/// What the script connection's reader thread hands back: when the reply was read, and it.
type ScriptReply = (Instant, Result<Reply, String>);

/// Sends the EVAL on a raw socket of its own and reads the reply on a thread, so its arrival is
/// timed while this thread kills. The thread ends with the reply or when the server closes.
fn start_script(
    port: u16,
    script: BusyScript,
    limit: Duration,
) -> Result<(Instant, mpsc::Receiver<ScriptReply>), String> {
    let connect = || -> std::io::Result<TcpStream> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(limit))?;
        Ok(stream)
    };
    let mut stream = connect().map_err(|e| format!("script connection: {e}"))?;
    let mut reader = BufReader::new(
        stream
            .try_clone()
            .map_err(|e| format!("script connection: {e}"))?,
    );
    let (sender, receiver) = mpsc::channel();
    let mut eval = Vec::new();
    encode(&["EVAL", script.source(), "0"], &mut eval);
    let sent = Instant::now();
    stream.write_all(&eval).map_err(|e| format!("EVAL: {e}"))?;
    thread::spawn(move || {
        let reply = read_reply(&mut reader).map_err(|e| e.to_string());
        let _ = sender.send((Instant::now(), reply));
        drop(stream);
    });
    Ok((sent, receiver))
}

/// PINGs every [`POLL_INTERVAL`] until a -BUSY reply; returns when it was read. A script reply
/// meanwhile means the server never turned busy.
fn wait_busy(
    pinger: &mut Connection,
    script: &mpsc::Receiver<ScriptReply>,
    sent: Instant,
    limit: Duration,
) -> Result<Instant, String> {
    loop {
        if let Ok((_, reply)) = script.try_recv() {
            let reply = reply.map_or_else(|e| format!("an error ({e})"), |r| r.to_string());
            return Err(format!("EVAL replied {reply} before the server was busy"));
        }
        match ask(pinger, &["PING"])? {
            reply if is_busy(&reply) => return Ok(Instant::now()),
            Reply::Simple(pong) if pong == "PONG" => {}
            other => return Err(format!("PING replied {other}")),
        }
        if sent.elapsed() > limit {
            return Err(format!(
                "no -BUSY reply to PING within {} s of the EVAL",
                limit.as_secs()
            ));
        }
        thread::sleep(POLL_INTERVAL);
    }
}

/// One kill: busy script, -BUSY seen, GETs, SCRIPT KILL, the script's error, PONG again.
fn one_kill(port: u16, params: KillParams, limit: Duration) -> Result<Timing, String> {
    let mut pinger = open(port, limit, "pinger")?;
    let mut getter = open(port, limit, "GET connection")?;
    let mut killer = match params.killer {
        KillerOpened::Before => Some(open(port, limit, "killer")?),
        KillerOpened::After => None,
    };
    let (sent, script) = start_script(port, params.script, limit)?;
    let busy_at = wait_busy(&mut pinger, &script, sent, limit)?;
    let mut gets_busy = 0;
    let mut get_other_reply = None;
    for _ in 0..params.gets {
        let reply = ask(&mut getter, &["GET", GET_KEY])?;
        if is_busy(&reply) {
            gets_busy += 1;
        } else if get_other_reply.is_none() {
            get_other_reply = Some(reply.to_string());
        }
    }
    let mut killer = match killer.take() {
        Some(connection) => connection,
        None => open(port, limit, "killer")?,
    };
    let kill_sent = Instant::now();
    let reply = ask(&mut killer, &["SCRIPT", "KILL"])?;
    let kill_ok = Instant::now();
    if reply != Reply::Simple("OK".to_owned()) {
        return Err(format!("SCRIPT KILL replied {reply}"));
    }
    let (error_at, script_reply) = script.recv_timeout(limit).map_err(|_| {
        format!(
            "no reply to the EVAL within {} s of SCRIPT KILL",
            limit.as_secs()
        )
    })?;
    let script_error = match script_reply? {
        Reply::Error(text) => text,
        other => return Err(format!("the killed script replied {other}, not an error")),
    };
    match ask(&mut pinger, &["PING"])? {
        Reply::Simple(pong) if pong == "PONG" => {}
        other => return Err(format!("PING after the kill replied {other}")),
    }
    Ok(Timing {
        busy_after_ms: ms(busy_at - sent),
        kill_ok_ms: ms(kill_ok - kill_sent),
        script_error_ms: signed_ms(error_at, kill_ok),
        gets_busy,
        get_other_reply,
        script_error,
    })
}

/// `params.kills` kills on the server at `port`, after setting its busy threshold.
pub fn kill_latency(port: u16, params: KillParams, limit: Duration) -> Result<KillResult, String> {
    let mut admin = open(port, REPLY_TIMEOUT, "setup")?;
    set_busy_threshold(&mut admin, BUSY_THRESHOLD_MS)?;
    match ask(&mut admin, &["SET", GET_KEY, "1"])? {
        Reply::Simple(ok) if ok == "OK" => {}
        other => return Err(format!("SET {GET_KEY} 1 replied {other}")),
    }
    let kills = (0..params.kills.max(1))
        .map(|_| one_kill(port, params, limit))
        .collect::<Result<Vec<Timing>, String>>()?;
    summarize(&kills, params.gets)
}

/// Medians over the kills, the GET counts summed.
fn summarize(kills: &[Timing], gets_per_kill: usize) -> Result<KillResult, String> {
    let pick = |f: fn(&Timing) -> f64| median(&kills.iter().map(f).collect::<Vec<f64>>());
    let (Some(busy_after_ms), Some(kill_ok_ms), Some(script_error_ms)) = (
        pick(|k| k.busy_after_ms),
        pick(|k| k.kill_ok_ms),
        pick(|k| k.script_error_ms),
    ) else {
        return Err("no kill was measured".to_owned());
    };
    Ok(KillResult {
        kills: kills.len(),
        busy_after_ms,
        kill_ok_ms,
        kill_ok_max_ms: kills.iter().map(|k| k.kill_ok_ms).fold(0.0, f64::max),
        script_error_ms,
        gets: (kills.len() * gets_per_kill) as u64,
        gets_busy: kills.iter().map(|k| k.gets_busy).sum(),
        get_other_reply: kills.iter().find_map(|k| k.get_other_reply.clone()),
        script_error: kills
            .first()
            .map(|k| k.script_error.clone())
            .unwrap_or_default(),
    })
}

#[cfg(test)]
// The expected figures are small integers and halves, exact in binary floating point.
#[allow(clippy::float_cmp)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::{
        BusyScript, EvalshaParams, KillParams, KillerOpened, Timing, benchmark_arguments,
        evalsha_sample, evalsha_throughput, kill_latency, parse_sha, summarize,
    };
    use crate::server_proc::{ServerKind, ServerProcess};
    use crate::server_rb::parse_csv;
    use crate::server_resp::Reply;

    const SHA: &str = "61636018f4e6b5817b89791bbed242f93fa089e3";

    /// Captured from redis-benchmark 7.0.15 against redis-server 7.0.15 (the `-P 16` run).
    const CAPTURED: &str = "\
\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"
\"evalsha 61636018f4e6b5817b89791bbed242f93fa089e3 1 key:__rand_int__\",\"245098.05\",\"3.099\",\"0.384\",\"2.783\",\"6.551\",\"9.407\",\"11.343\"
";

    #[test]
    fn parses_the_evalsha_row() {
        let sample = evalsha_sample(parse_csv(CAPTURED)).unwrap();
        assert!((sample.rps - 245_098.05).abs() < 1e-6);
        assert_eq!(sample.p50_ms, Some(2.783));
        assert_eq!(sample.p99_ms, Some(9.407));
        // A failed run prints the header and an error line, and no row.
        let failed = "\"test\",\"rps\"\nError from server: NOSCRIPT No matching script.\n";
        assert!(evalsha_sample(parse_csv(failed)).is_err());
    }

    #[test]
    fn options_come_before_the_command() {
        let params = EvalshaParams {
            requests: 1000,
            pipeline: 16,
        };
        assert_eq!(
            benchmark_arguments(7000, params, SHA).join(" "),
            format!(
                "-h 127.0.0.1 -p 7000 -c 50 -n 1000 -r 100000 -P 16 --csv evalsha {SHA} 1 \
                 key:__rand_int__"
            )
        );
    }

    #[test]
    fn the_sha_is_forty_hex_digits() {
        assert_eq!(parse_sha(&Reply::bulk(SHA.to_uppercase())).unwrap(), SHA);
        let unknown = Reply::Error("ERR unknown command 'SCRIPT'".to_owned());
        assert_eq!(
            parse_sha(&unknown).unwrap_err(),
            "SCRIPT LOAD replied -ERR unknown command 'SCRIPT'"
        );
        assert!(parse_sha(&Reply::bulk("abc")).is_err());
        assert!(parse_sha(&Reply::bulk("z".repeat(40))).is_err());
    }

    #[test]
    fn kills_summarize_to_medians_and_sums() {
        let kill = |kill_ok_ms: f64, gets_busy: u64| Timing {
            busy_after_ms: 100.0,
            kill_ok_ms,
            script_error_ms: -0.5,
            gets_busy,
            get_other_reply: (gets_busy < 3).then(|| "\"1\"".to_owned()),
            script_error: "ERR killed".to_owned(),
        };
        let result = summarize(&[kill(1.0, 3), kill(3.0, 2), kill(2.0, 3)], 3).unwrap();
        assert_eq!((result.kill_ok_ms, result.kill_ok_max_ms), (2.0, 3.0));
        assert_eq!((result.gets, result.gets_busy), (9, 8));
        assert_eq!(result.get_other_reply.as_deref(), Some("\"1\""));
        assert_eq!(result.script_error_ms, -0.5);
        assert!(summarize(&[], 3).is_err());
    }

    /// Both measurements, small, against a redis-server this test starts (stopped by pid when
    /// the test ends); then against one whose EVAL and SCRIPT are renamed away, which must give
    /// errors naming the refused command.
    #[test]
    fn the_driver_measures_a_real_redis_server() {
        let redis = ServerProcess::start(ServerKind::Redis, Path::new("redis-server"))
            .expect("redis-server starts (the suite's tests need it, as the workspace's do)");
        let limit = Duration::from_secs(30);
        let params = EvalshaParams {
            requests: 2000,
            pipeline: 16,
        };
        let result = evalsha_throughput(Path::new("redis-benchmark"), redis.port, params).unwrap();
        assert!(result.rps > 0.0);
        assert!(result.keys > 100 && result.keys <= 2001, "{}", result.keys);
        for script in BusyScript::ALL {
            for killer in KillerOpened::BOTH {
                let params = KillParams {
                    script,
                    killer,
                    kills: 1,
                    gets: 2,
                };
                let result = kill_latency(redis.port, params, limit).unwrap();
                assert!(result.busy_after_ms >= 100.0, "{result:?}");
                assert!(result.kill_ok_ms > 0.0 && result.kill_ok_ms < 5000.0);
                assert_eq!((result.gets, result.gets_busy), (2, 2));
                assert!(result.script_error.contains("killed"), "{result:?}");
            }
        }
        let refusing = ServerProcess::start_with(
            ServerKind::Redis,
            Path::new("redis-server"),
            &[
                "--rename-command",
                "SCRIPT",
                "",
                "--rename-command",
                "EVAL",
                "",
            ]
            .map(String::from),
        )
        .expect("redis-server starts");
        let error =
            evalsha_throughput(Path::new("redis-benchmark"), refusing.port, params).unwrap_err();
        assert!(
            error.starts_with("SCRIPT LOAD replied -ERR unknown command"),
            "{error}"
        );
        let params = KillParams {
            script: BusyScript::While,
            killer: KillerOpened::After,
            kills: 1,
            gets: 1,
        };
        let error = kill_latency(refusing.port, params, limit).unwrap_err();
        assert!(
            error.starts_with("EVAL replied -ERR unknown command"),
            "{error}"
        );
    }
}
