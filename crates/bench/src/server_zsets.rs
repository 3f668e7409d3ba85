//! The server suite's sorted-set cases from issue #31 ("sorted sets and lists as dense as the
//! rest of densekv"): what they load, how their memory is read, and the prefills of the
//! redis-benchmark tests that need a sorted set in place.
//!
//! Every case uses one member and score pattern, so the figures of one case can be compared with
//! the others and a loaded entry can be regenerated from its index alone:
//!
//! ```text
//! member i = member:%012d          19 bytes, redis-benchmark's __rand_int__ spelling
//! score i  = i       (i even)      an integer, which Redis stores as a double all the same
//!            i × 1.5 (i odd)       k.5, exact in binary floating point
//! ```
//!
//! | case / test   | load                                                    | figure            |
//! |---------------|---------------------------------------------------------|-------------------|
//! | zset_big      | one key, 10⁶ members, ZADD of 5,000 members a command   | ΔVmRSS / member   |
//! | zset_mid      | keys of 129, 300 and 1,000 members, one ZADD each       | MEMORY USAGE / member |
//! | zrangebyscore | `zbench`, 1,000 members; `ZRANGEBYSCORE zbench <r> +inf LIMIT 0 10`, -r 1000 | rps |
//! | zrank         | `zbench`, 1,000 members; `ZRANK zbench member:<r>`, -r 1000     | rps       |
//! | zadd_big      | `zbig`, 10⁶ members; `ZADD zbig <r> member:<r>`, -r 2·10⁶       | rps       |
//!
//! The issue's targets: ≤ 48 bytes of resident memory per member of the big zset (redis-server
//! pays about 100: a skiplist node, a dict entry and an sds per member); at most half of
//! redis-server's `MEMORY USAGE` per member for the mid-size zsets, all past
//! `zset-max-listpack-entries` (128), where redis-server has switched to the skiplist; and
//! throughput at least redis-server's.
//!
//! `zset_big` follows the server suite's memory protocol (`server_memory.rs`: VmRSS and
//! `used_memory` before, the load, the settle, VmRSS and `used_memory` after, a sampled read-back)
//! with one difference taken from the types suite: the load's connection is closed before the
//! second reading, so a 200 KB ZADD left in a query buffer is not charged to the zset. `zset_mid`
//! reads `MEMORY USAGE key SAMPLES 0`, which counts every member (the default samples five
//! and extrapolates); a server that refuses it is `n/a`.
//!
//! In `zadd_big` every `__rand_int__` is a draw of its own below `-r` 2·10⁶: the member is one of
//! the prefilled 10⁶ half the time (an update that moves it to a new score) and a new member the
//! other half, so the test exercises both paths of an insert into a large sorted set.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use serde::Serialize;

use crate::server_memory::{MemoryMeasurement, Outcome, QUIET_SLACK, QUIET_STILL, SAMPLE_COUNT};
use crate::server_proc::{REPLY_TIMEOUT, ServerProcess};
use crate::server_resp::{Connection, Reply};
use crate::server_workload::sample_indices;

/// Members of the big zset…
pub const BIG_MEMBERS: u64 = 1_000_000;
/// …and with `--quick`.
pub const BIG_MEMBERS_QUICK: u64 = 20_000;
/// Members per ZADD of a load (the big zset's and the throughput prefills').
pub const MEMBERS_PER_ZADD: u64 = 5000;
/// The mid-size zsets' member counts: just past `zset-max-listpack-entries`, and two larger.
pub const MID_SIZES: [u64; 3] = [129, 300, 1000];
/// The issue's target for the big zset: resident bytes per member.
pub const BIG_TARGET_BYTES_PER_MEMBER: f64 = 48.0;
/// The issue's target for the mid-size zsets: densekv / redis of `MEMORY USAGE` per member.
pub const MID_TARGET_RATIO: f64 = 0.5;
const BIG_KEY: &str = "zset:big";

/// A sorted-set memory case; a value of `--workload` beside the per-N workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize)]
pub enum ZsetCase {
    /// One zset of 10⁶ members: resident bytes per member.
    #[value(name = "zset_big")]
    #[serde(rename = "zset_big")]
    Big,
    /// Zsets of 129, 300 and 1,000 members: `MEMORY USAGE` per member.
    #[value(name = "zset_mid")]
    #[serde(rename = "zset_mid")]
    Mid,
}

/// Member `i`: `member:%012d`, as redis-benchmark spells `member:__rand_int__`.
pub fn member(i: u64) -> String {
    format!("member:{i:012}")
}

/// Score of member `i`: `i` when even, `i × 1.5` when odd.
pub fn score(i: u64) -> f64 {
    if i.is_multiple_of(2) {
        i as f64
    } else {
        i as f64 * 1.5
    }
}

/// `ZADD key score member …` for members `first..end`.
pub fn zadd_command(key: &str, first: u64, end: u64) -> Vec<String> {
    let mut args = Vec::with_capacity(2 + 2 * (end - first) as usize);
    args.extend(["ZADD".to_owned(), key.to_owned()]);
    for i in first..end {
        args.push(score(i).to_string());
        args.push(member(i));
    }
    args
}

/// Loads members `0..members` into `key` (which must not exist), [`MEMBERS_PER_ZADD`] a command,
/// one command at a time (a command carries up to 200 KB; its ZADD takes longer than the round
/// trip). An error reply to the first command is `NotApplicable`; any other surprise `Failed`.
pub fn load(connection: &mut Connection, key: &str, members: u64) -> Result<(), Outcome> {
    let mut first = 0;
    while first < members {
        let end = (first + MEMBERS_PER_ZADD).min(members);
        let reply = connection
            .command(&zadd_command(key, first, end))
            .map_err(|e| Outcome::Failed(format!("ZADD {key} of members {first}..{end}: {e}")))?;
        match reply {
            Reply::Integer(added) if added == (end - first) as i64 => {}
            Reply::Error(text) if first == 0 => {
                return Err(Outcome::NotApplicable(format!("ZADD replied -{text}")));
            }
            other => {
                return Err(Outcome::Failed(format!(
                    "ZADD {key} of members {first}..{end} replied {other}, expected :{}",
                    end - first
                )));
            }
        }
        first = end;
    }
    Ok(())
}

/// Checks `key` holds members `0..members`: ZCARD, and ZSCORE of [`SAMPLE_COUNT`] sampled
/// members compared as numbers (`4.5` and `4.50` are one score). Returns how many were read.
pub fn verify(connection: &mut Connection, key: &str, members: u64) -> Result<usize, String> {
    match connection.command(&["ZCARD", key]) {
        Ok(Reply::Integer(n)) if n == members as i64 => {}
        Ok(other) => return Err(format!("ZCARD {key} replied {other}, expected :{members}")),
        Err(e) => return Err(format!("ZCARD {key}: {e}")),
    }
    let sample = sample_indices(members, SAMPLE_COUNT);
    for &i in &sample {
        let reply = connection
            .command(&["ZSCORE", key, &member(i)])
            .map_err(|e| format!("ZSCORE {key} {}: {e}", member(i)))?;
        let read = match &reply {
            Reply::Bulk(Some(bytes)) => std::str::from_utf8(bytes)
                .ok()
                .and_then(|s| s.parse::<f64>().ok()),
            _ => None,
        };
        if read != Some(score(i)) {
            return Err(format!(
                "ZSCORE {key} {} replied {reply}, expected {}",
                member(i),
                score(i)
            ));
        }
    }
    Ok(sample.len())
}

/// The big zset's memory on a fresh `server`: `members` members in one key (module doc).
pub fn measure_big(
    server: &mut ServerProcess,
    members: u64,
    settle: Duration,
) -> MemoryMeasurement {
    let failed = |why: String| MemoryMeasurement::failed(members, why);
    let mut result = MemoryMeasurement::not_applicable(members, String::new());
    result.outcome = Outcome::Ok;
    result.rss_before_bytes =
        server.wait_quiet(Duration::from_millis(300), Duration::ZERO, QUIET_SLACK);
    result.used_memory_before_bytes = server.used_memory();
    let mut connection = match Connection::open(server.port, REPLY_TIMEOUT) {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot connect: {e}")),
    };
    let started = Instant::now();
    if let Err(outcome) = load(&mut connection, BIG_KEY, members) {
        let mut m = MemoryMeasurement::not_applicable(members, String::new());
        m.outcome = outcome;
        if let Outcome::Failed(why) = &mut m.outcome
            && !server.is_running()
        {
            let _ = write!(why, " (server exited: {})", server.log_tail());
        }
        return m;
    }
    result.load_secs = started.elapsed().as_secs_f64();
    drop(connection);
    let still = if settle.is_zero() {
        Duration::from_millis(300)
    } else {
        QUIET_STILL
    };
    result.rss_after_bytes = server.wait_quiet(still, settle, settle + QUIET_SLACK);
    result.used_memory_after_bytes = server.used_memory();
    let verified = Connection::open(server.port, REPLY_TIMEOUT)
        .map_err(|e| format!("cannot connect to read back: {e}"))
        .and_then(|mut c| verify(&mut c, BIG_KEY, members));
    match verified {
        Ok(count) => result.verified_entries = count,
        Err(why) => result.outcome = Outcome::Failed(why),
    }
    result
}

/// `MEMORY USAGE … SAMPLES 0` of one mid-size zset on one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MidFigure {
    pub members: u64,
    pub bytes: u64,
}

/// Loads a zset of each of `sizes` members into `server` and reads each one's `MEMORY USAGE`.
/// `Err(NotApplicable)` when the server refuses ZADD or MEMORY USAGE.
pub fn measure_mid(server: &ServerProcess, sizes: &[u64]) -> Result<Vec<MidFigure>, Outcome> {
    let mut connection = Connection::open(server.port, REPLY_TIMEOUT)
        .map_err(|e| Outcome::Failed(format!("cannot connect: {e}")))?;
    let mut figures = Vec::new();
    for &members in sizes {
        let key = format!("zset:mid:{members}");
        load(&mut connection, &key, members)?;
        verify(&mut connection, &key, members).map_err(Outcome::Failed)?;
        let usage = ["MEMORY", "USAGE", key.as_str(), "SAMPLES", "0"];
        match connection.command(&usage) {
            Ok(Reply::Integer(bytes)) if bytes > 0 => figures.push(MidFigure {
                members,
                bytes: bytes as u64,
            }),
            Ok(Reply::Error(text)) => {
                return Err(Outcome::NotApplicable(format!(
                    "MEMORY USAGE replied -{text}"
                )));
            }
            Ok(other) => {
                return Err(Outcome::Failed(format!(
                    "MEMORY USAGE {key} SAMPLES 0 replied {other}"
                )));
            }
            Err(e) => return Err(Outcome::Failed(format!("MEMORY USAGE {key}: {e}"))),
        }
    }
    Ok(figures)
}

/// A redis-benchmark test that runs a command of its own against a prefilled zset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZsetTest {
    pub name: &'static str,
    /// The zset the prefill loads (after a DEL) before each run of the test.
    pub key: &'static str,
    pub members: u64,
    /// redis-benchmark's `-r`.
    pub keyspace: u64,
    /// The command's words, `__rand_int__` standing for each draw below `keyspace`.
    pub command: &'static [&'static str],
}

/// The throughput tests of issue #31 that redis-benchmark has no built-in test for, in the
/// order they run (after the built-in tests); `quick` shrinks `zadd_big`'s zset.
pub fn zset_tests(quick: bool) -> [ZsetTest; 3] {
    let big = if quick {
        BIG_MEMBERS_QUICK
    } else {
        BIG_MEMBERS
    };
    [
        ZsetTest {
            name: "zrangebyscore",
            key: "zbench",
            members: 1000,
            keyspace: 1000,
            command: &[
                "ZRANGEBYSCORE",
                "zbench",
                "__rand_int__",
                "+inf",
                "LIMIT",
                "0",
                "10",
            ],
        },
        ZsetTest {
            name: "zrank",
            key: "zbench",
            members: 1000,
            keyspace: 1000,
            command: &["ZRANK", "zbench", "member:__rand_int__"],
        },
        ZsetTest {
            name: "zadd_big",
            key: "zbig",
            members: big,
            keyspace: 2 * big,
            command: &["ZADD", "zbig", "__rand_int__", "member:__rand_int__"],
        },
    ]
}

/// The zset test named `name`.
pub fn zset_test(name: &str, quick: bool) -> Option<ZsetTest> {
    zset_tests(quick).into_iter().find(|t| t.name == name)
}

/// Loads `test`'s zset into the server at `port` afresh (DEL, then the load, then a check).
pub fn prefill(port: u16, test: &ZsetTest) -> Result<(), String> {
    let mut connection =
        Connection::open(port, REPLY_TIMEOUT).map_err(|e| format!("cannot connect: {e}"))?;
    match connection.command(&["DEL", test.key]) {
        Ok(Reply::Integer(_)) => {}
        Ok(other) => return Err(format!("DEL {} replied {other}", test.key)),
        Err(e) => return Err(format!("DEL {}: {e}", test.key)),
    }
    load(&mut connection, test.key, test.members).map_err(|outcome| match outcome {
        Outcome::NotApplicable(why) | Outcome::Failed(why) => why,
        Outcome::Ok => String::new(),
    })?;
    verify(&mut connection, test.key, test.members).map(|_| ())
}

#[cfg(test)]
// Scores are integers and halves, exact in binary floating point.
#[allow(clippy::float_cmp)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::{
        BIG_MEMBERS, MID_SIZES, ZsetCase, measure_big, measure_mid, member, prefill, score,
        zadd_command, zset_test, zset_tests,
    };
    use crate::server_memory::Outcome;
    use crate::server_proc::{ServerKind, ServerProcess};
    use clap::ValueEnum;

    #[test]
    fn members_and_scores_follow_the_pattern() {
        assert_eq!(member(42), "member:000000000042");
        assert_eq!(member(999_999).len(), 19);
        assert_eq!(score(4), 4.0);
        assert_eq!(score(3), 4.5);
        assert_eq!(score(999_999).to_string(), "1499998.5");
        assert_eq!(score(1_000_000).to_string(), "1000000");
        assert_eq!(
            zadd_command("z", 2, 4),
            [
                "ZADD",
                "z",
                "2",
                "member:000000000002",
                "4.5",
                "member:000000000003"
            ]
        );
    }

    #[test]
    fn cases_parse_by_name() {
        assert_eq!(ZsetCase::from_str("zset_big", false), Ok(ZsetCase::Big));
        assert_eq!(ZsetCase::from_str("zset_mid", false), Ok(ZsetCase::Mid));
        assert!(ZsetCase::from_str("zset-big", false).is_err());
        assert_eq!(
            serde_json::to_string(&ZsetCase::Big).unwrap(),
            "\"zset_big\""
        );
    }

    #[test]
    fn zset_tests_draw_present_members_or_mix_new_ones() {
        let names: Vec<&str> = zset_tests(false).iter().map(|t| t.name).collect();
        assert_eq!(names, ["zrangebyscore", "zrank", "zadd_big"]);
        for t in zset_tests(false) {
            // The command names the key the prefill loads.
            assert_eq!(t.command[1], t.key, "{}", t.name);
        }
        let zrank = zset_test("zrank", false).unwrap();
        assert_eq!(zrank.keyspace, zrank.members, "every ZRANK hits a member");
        let big = zset_test("zadd_big", false).unwrap();
        assert_eq!((big.members, big.keyspace), (BIG_MEMBERS, 2 * BIG_MEMBERS));
        assert!(zset_test("zadd_big", true).unwrap().members < BIG_MEMBERS);
        assert!(zset_test("zadd", false).is_none());
    }

    /// Against a redis-server this test starts: the big case at a small size, the mid case, a
    /// prefill that replaces what a previous run left.
    #[test]
    fn measures_a_real_redis_server() {
        let mut server = ServerProcess::start(ServerKind::Redis, Path::new("redis-server"))
            .expect("redis-server starts (the suite's tests need it, as the workspace's do)");
        let m = measure_big(&mut server, 12_345, Duration::ZERO);
        assert_eq!(m.outcome, Outcome::Ok, "{m:?}");
        assert_eq!(m.verified_entries, 1000);
        assert!(m.used_per_entry().unwrap() > 19.0, "{m:?}");
        let mid = measure_mid(&server, &MID_SIZES).unwrap();
        assert_eq!(mid.len(), 3);
        assert!(mid.iter().all(|f| f.bytes > f.members * 19), "{mid:?}");
        let zrank = zset_test("zrank", true).unwrap();
        prefill(server.port, &zrank).unwrap();
        prefill(server.port, &zrank).unwrap();
    }
}
