//! What the append-only file records for the commands whose verbatim form would not replay to
//! the same dataset: relative times (SET EX, SETEX, GETEX, EXPIRE, RESTORE), random picks
//! (SPOP), float formatting (INCRBYFLOAT, HINCRBYFLOAT), blocking and multi-key pops (BLPOP,
//! BLMOVE, BZPOPMIN, LMPOP, ZMPOP…, also when a blocked client is served later), and the
//! commands Redis writes even when they changed nothing (FLUSHALL, FLUSHDB, SWAPDB).
//!
//! Each is checked byte for byte against what Redis 7.0.15 writes instead
//! (`rewriteClientCommandVector`, `alsoPropagate`, `forceCommandPropagation`), read from the
//! incremental files of `appendonlydir` with `persist::aof::Commands`; an absolute time a
//! relative one became must lie in the window the command ran in. Then each test replays the
//! file twice: densekv restarted on the same directory, and redis-server started on a copy of
//! `appendonlydir`; both must hold what densekv held (DEBUG DIGEST, and per key DEBUG
//! DIGEST-VALUE, TYPE and PEXPIRETIME).

#[macro_use]
mod support;

use persist::aof::{self, Item};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::persist::{copy_dir, densekv_in, redis_aof_in, temp_dir};
use support::{Client, Server};

/// densekv's AOF options in every test: every reply waits until its command is on disk.
const AOF_OPTS: [&str; 4] = ["--appendonly", "yes", "--appendfsync", "always"];

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}

/// One argument of an expected command.
#[derive(Clone, Debug)]
enum Arg {
    /// These bytes exactly.
    Is(Vec<u8>),
    /// A decimal Unix time in ms within `lo..=hi`.
    Within(u64, u64),
}

/// An expected command, word for word.
fn exact(words: &[&str]) -> Vec<Arg> {
    words
        .iter()
        .map(|w| Arg::Is(w.as_bytes().to_vec()))
        .collect()
}

/// An expected command whose `@` word is a Unix time in ms within `window` (plus `offset_ms`:
/// the relative time the command was given).
fn timed(words: &[&str], window: (u64, u64), offset_ms: u64) -> Vec<Arg> {
    let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
    timed_bytes(&words, window, offset_ms)
}

/// `timed` with byte arguments (a DUMP payload).
fn timed_bytes(words: &[&[u8]], window: (u64, u64), offset_ms: u64) -> Vec<Arg> {
    words
        .iter()
        .map(|&w| {
            if w == b"@" {
                Arg::Within(window.0 + offset_ms, window.1 + offset_ms)
            } else {
                Arg::Is(w.to_vec())
            }
        })
        .collect()
}

/// An expected command with byte arguments (members and values taken from replies).
fn bytes(words: &[&[u8]]) -> Vec<Arg> {
    words.iter().map(|w| Arg::Is(w.to_vec())).collect()
}

fn matches(got: &[Vec<u8>], want: &[Arg]) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| match w {
            Arg::Is(b) => g == b,
            Arg::Within(lo, hi) => std::str::from_utf8(g)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .is_some_and(|t| (*lo..=*hi).contains(&t)),
        })
}

fn show_expected(command: &[Arg]) -> String {
    command
        .iter()
        .map(|a| match a {
            Arg::Is(b) => String::from_utf8_lossy(b).into_owned(),
            Arg::Within(lo, hi) => format!("<{lo}..={hi}>"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn show(command: &[Vec<u8>]) -> String {
    command
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every command of the incremental files `dir`'s manifest names, in order.
fn incr_commands(dir: &Path) -> Vec<Vec<Vec<u8>>> {
    let aof_dir = dir.join("appendonlydir");
    let Ok(text) = std::fs::read(aof_dir.join("appendonly.aof.manifest")) else {
        return Vec::new();
    };
    let manifest = aof::parse_manifest(&text).expect("densekv's manifest reads");
    let mut commands = Vec::new();
    for file in &manifest.incrs {
        let name = String::from_utf8(file.name.clone()).expect("a UTF-8 file name");
        let bytes = std::fs::read(aof_dir.join(name)).expect("an incremental file");
        for item in aof::Commands::new(&bytes) {
            // A command being appended may be cut at the end: read again on the next poll.
            match item {
                Ok(Item::Command(args)) => {
                    commands.push(args.iter().map(|a| a.to_vec()).collect());
                }
                Ok(Item::Annotation(_)) => {}
                Err(aof::StreamError::Truncated { .. }) => break,
                Err(e) => panic!("densekv's incremental file does not read: {e:?}"),
            }
        }
    }
    commands
}

/// A densekv with the AOF on in a directory of its own, a client, and how much of its
/// incremental files the test has checked.
struct Fixture {
    name: &'static str,
    dir: PathBuf,
    server: Server,
    c: Client,
    /// Commands of the incremental files already checked.
    seen: usize,
}

impl Fixture {
    fn start(name: &'static str) -> Fixture {
        let dir = temp_dir("aof-effects", name);
        let server = densekv_in(&dir, &AOF_OPTS);
        let c = server.connect();
        Fixture {
            name,
            dir,
            server,
            c,
            seen: 0,
        }
    }

    fn cmd(&mut self, words: &[&str]) -> Vec<u8> {
        self.c.cmd(words)
    }

    /// Runs `words`: its reply and the window of Unix ms it ran in.
    fn timed(&mut self, words: &[&str]) -> (Vec<u8>, (u64, u64)) {
        let before = unix_ms();
        let reply = self.c.cmd(words);
        (reply, (before, unix_ms()))
    }

    /// The commands appended since the last check are exactly `expected`, in order.
    fn expect(&mut self, expected: &[Vec<Arg>]) {
        let want = self.seen + expected.len();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut all = incr_commands(&self.dir);
        while all.len() < want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            all = incr_commands(&self.dir);
        }
        let got = &all[self.seen.min(all.len())..];
        let ok =
            got.len() == expected.len() && got.iter().zip(expected).all(|(g, w)| matches(g, w));
        assert!(
            ok,
            "{}: the AOF got\n  {}\nexpected\n  {}",
            self.name,
            got.iter().map(|c| show(c)).collect::<Vec<_>>().join("\n  "),
            expected
                .iter()
                .map(|c| show_expected(c))
                .collect::<Vec<_>>()
                .join("\n  "),
        );
        self.seen = all.len();
    }

    /// Nothing was appended since the last check.
    fn expect_nothing(&mut self) {
        self.expect(&[]);
    }

    /// The file replays to what densekv holds now: densekv restarted on the same directory,
    /// and redis-server on a copy of its `appendonlydir`. `keys` (of database 0) are compared
    /// one by one besides the digest of every database.
    fn replays(mut self, keys: &[&str]) {
        self.cmd(&["SELECT", "0"]);
        self.expect_nothing();
        let Fixture {
            name,
            dir,
            server,
            mut c,
            ..
        } = self;
        let before = snapshot(&mut c, keys);
        assert_ne!(
            before[0],
            b"$40\r\n0000000000000000000000000000000000000000\r\n".to_vec(),
            "{name}: the test leaves data to replay"
        );
        drop(c);
        drop(server);
        let restarted = densekv_in(&dir, &AOF_OPTS);
        assert_eq!(
            snapshot(&mut restarted.connect(), keys),
            before,
            "{name}: densekv restarted on its AOF holds the same data"
        );
        drop(restarted);
        let copy = temp_dir("aof-effects", &format!("{name}-redis"));
        copy_dir(&dir.join("appendonlydir"), &copy.join("appendonlydir"));
        // Server::redis fails the test, rather than skipping it, when redis-server is missing.
        let redis = redis_aof_in(&copy, &[]);
        assert_eq!(
            snapshot(&mut redis.connect(), keys),
            before,
            "{name}: redis-server loading densekv's AOF holds the same data"
        );
        drop(redis);
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&copy);
    }
}

/// DEBUG DIGEST, then for each key of database 0: DEBUG DIGEST-VALUE, TYPE and PEXPIRETIME.
fn snapshot(c: &mut Client, keys: &[&str]) -> Vec<Vec<u8>> {
    let mut out = vec![c.cmd(&["DEBUG", "DIGEST"])];
    for &key in keys {
        out.push(c.cmd(&["DEBUG", "DIGEST-VALUE", key]));
        out.push(c.cmd(&["TYPE", key]));
        out.push(c.cmd(&["PEXPIRETIME", key]));
    }
    out
}

/// The bulk strings of an array reply (a SPOP's members, in reply order).
fn members(reply: &[u8]) -> Vec<Vec<u8>> {
    support::decode(reply)
        .array()
        .iter()
        .map(|v| v.bulk().to_vec())
        .collect()
}

/// A bulk reply's bytes.
fn bulk(reply: &[u8]) -> Vec<u8> {
    support::decode(reply).bulk().to_vec()
}

/// Waits until INFO clients counts `n` blocked clients.
fn wait_blocked(c: &mut Client, n: usize) {
    let want = format!("blocked_clients:{n}\r\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !String::from_utf8_lossy(&c.cmd(&["INFO", "clients"])).contains(&want) {
        assert!(Instant::now() < deadline, "no {n} blocked clients");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SET with an expire time, SETEX, PSETEX: `SET key value PXAT <ms>`, other options dropped;
/// SET … GET without one: SET without its GET tokens; nothing when NX or XX refused.
#[test]
fn set_commands_are_written_with_absolute_times() {
    let mut f = Fixture::start("set");
    let (_, w) = f.timed(&["SET", "s1", "v", "EX", "100"]);
    f.expect(&[
        exact(&["SELECT", "0"]),
        timed(&["SET", "s1", "v", "PXAT", "@"], w, 100_000),
    ]);
    let (reply, w) = f.timed(&["SET", "s2", "v", "px", "100000", "GET", "NX"]);
    assert_eq!(reply, b"$-1\r\n");
    f.expect(&[timed(&["SET", "s2", "v", "PXAT", "@"], w, 100_000)]);
    let at_s = unix_ms() / 1000 + 3600;
    f.cmd(&["SET", "s3", "v", "EXAT", &at_s.to_string(), "XX"]);
    f.expect_nothing();
    f.cmd(&["SET", "s3", "v", "EXAT", &at_s.to_string()]);
    let at_ms = (at_s * 1000).to_string();
    f.expect(&[exact(&["SET", "s3", "v", "PXAT", &at_ms])]);
    f.cmd(&["SET", "s4", "v", "PXAT", &at_ms]);
    f.cmd(&["SET", "s4", "w", "nx", "EX", "10"]);
    f.cmd(&["SET", "s4", "w", "KEEPTTL", "PXAT", &at_ms]);
    f.expect(&[exact(&["SET", "s4", "v", "PXAT", &at_ms])]);

    let (_, w) = f.timed(&["SET", "s5", "old", "EX", "500"]);
    f.expect(&[timed(&["SET", "s5", "old", "PXAT", "@"], w, 500_000)]);
    let reply = f.cmd(&["SET", "s5", "new", "get", "KEEPTTL", "GET", "XX"]);
    assert_eq!(reply, b"$3\r\nold\r\n");
    f.expect(&[exact(&["SET", "s5", "new", "KEEPTTL", "XX"])]);
    f.cmd(&["SET", "s6", "v", "GET"]);
    f.expect(&[exact(&["SET", "s6", "v"])]);

    let (_, w) = f.timed(&["SETEX", "s7", "100", "v"]);
    f.expect(&[timed(&["SET", "s7", "v", "PXAT", "@"], w, 100_000)]);
    let (_, w) = f.timed(&["PSETEX", "s8", "200000", "v"]);
    f.expect(&[timed(&["SET", "s8", "v", "PXAT", "@"], w, 200_000)]);
    f.replays(&["s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"]);
}

/// GETEX: PEXPIREAT, PERSIST or DEL, or nothing when it changed nothing; GETDEL: DEL; GETSET:
/// SET; INCRBYFLOAT: `SET key <value> KEEPTTL`.
#[test]
fn get_variants_and_incrbyfloat_are_written_as_their_effects() {
    let mut f = Fixture::start("get");
    let at_ms = (unix_ms() + 3_600_000).to_string();
    f.cmd(&["SET", "g1", "v"]);
    f.cmd(&["GETEX", "g1"]);
    f.cmd(&["GETEX", "g1", "PERSIST"]);
    f.cmd(&["GETEX", "missing", "EX", "10"]);
    f.expect(&[exact(&["SELECT", "0"]), exact(&["SET", "g1", "v"])]);
    let (reply, w) = f.timed(&["GETEX", "g1", "EX", "100"]);
    assert_eq!(reply, b"$1\r\nv\r\n");
    f.expect(&[timed(&["PEXPIREAT", "g1", "@"], w, 100_000)]);
    f.cmd(&["GETEX", "g1", "PXAT", &at_ms]);
    f.expect(&[exact(&["PEXPIREAT", "g1", &at_ms])]);
    f.cmd(&["GETEX", "g1", "PERSIST"]);
    f.cmd(&["GETEX", "g1", "PERSIST"]);
    f.expect(&[exact(&["PERSIST", "g1"])]);
    f.cmd(&["SET", "g2", "v"]);
    assert_eq!(f.cmd(&["GETEX", "g2", "EXAT", "1"]), b"$1\r\nv\r\n");
    f.expect(&[exact(&["SET", "g2", "v"]), exact(&["DEL", "g2"])]);

    f.cmd(&["SET", "g3", "v"]);
    assert_eq!(f.cmd(&["GETDEL", "g3"]), b"$1\r\nv\r\n");
    f.cmd(&["GETDEL", "g3"]);
    f.expect(&[exact(&["SET", "g3", "v"]), exact(&["DEL", "g3"])]);
    f.cmd(&["getset", "g4", "v"]);
    f.cmd(&["getset", "g4", "w"]);
    f.expect(&[exact(&["SET", "g4", "v"]), exact(&["SET", "g4", "w"])]);

    assert_eq!(f.cmd(&["INCRBYFLOAT", "f1", "10.5"]), b"$4\r\n10.5\r\n");
    assert_eq!(f.cmd(&["INCRBYFLOAT", "f1", "0.1"]), b"$4\r\n10.6\r\n");
    f.cmd(&["INCRBYFLOAT", "f1", "nope"]);
    f.expect(&[
        exact(&["SET", "f1", "10.5", "KEEPTTL"]),
        exact(&["SET", "f1", "10.6", "KEEPTTL"]),
    ]);
    f.cmd(&["SET", "f2", "3", "PXAT", &at_ms]);
    assert_eq!(f.cmd(&["INCRBYFLOAT", "f2", "1.5e3"]), b"$4\r\n1503\r\n");
    f.expect(&[
        exact(&["SET", "f2", "3", "PXAT", &at_ms]),
        exact(&["SET", "f2", "1503", "KEEPTTL"]),
    ]);
    f.replays(&["g1", "g2", "g3", "g4", "f1", "f2"]);
}

/// EXPIRE, PEXPIRE and EXPIREAT: `PEXPIREAT key <ms>` and the options as sent; PEXPIREAT as
/// sent; a time already past: DEL (UNLINK with lazyfree-lazy-expire); nothing when the
/// options refused or the key is missing.
#[test]
fn expire_commands_are_written_as_absolute_times() {
    let mut f = Fixture::start("expire");
    f.cmd(&["SET", "e1", "v"]);
    let (reply, w) = f.timed(&["EXPIRE", "e1", "100"]);
    assert_eq!(reply, b":1\r\n");
    f.expect(&[
        exact(&["SELECT", "0"]),
        exact(&["SET", "e1", "v"]),
        timed(&["PEXPIREAT", "e1", "@"], w, 100_000),
    ]);
    let (_, w) = f.timed(&["pexpire", "e1", "200000", "GT"]);
    f.expect(&[timed(&["PEXPIREAT", "e1", "@", "GT"], w, 200_000)]);
    let at_s = unix_ms() / 1000 + 150;
    assert_eq!(
        f.cmd(&["EXPIREAT", "e1", &at_s.to_string(), "lt"]),
        b":1\r\n"
    );
    f.expect(&[exact(&[
        "PEXPIREAT",
        "e1",
        &(at_s * 1000).to_string(),
        "lt",
    ])]);
    let at_ms = (unix_ms() + 120_000).to_string();
    assert_eq!(f.cmd(&["pexpireat", "e1", &at_ms, "XX"]), b":1\r\n");
    f.expect(&[exact(&["pexpireat", "e1", &at_ms, "XX"])]);
    assert_eq!(f.cmd(&["EXPIRE", "e1", "100", "NX"]), b":0\r\n");
    assert_eq!(f.cmd(&["EXPIRE", "missing", "100"]), b":0\r\n");
    f.expect_nothing();

    f.cmd(&["SET", "e2", "v"]);
    assert_eq!(f.cmd(&["EXPIRE", "e2", "-1"]), b":1\r\n");
    f.cmd(&["SET", "e3", "v"]);
    assert_eq!(f.cmd(&["PEXPIREAT", "e3", "1"]), b":1\r\n");
    f.expect(&[
        exact(&["SET", "e2", "v"]),
        exact(&["DEL", "e2"]),
        exact(&["SET", "e3", "v"]),
        exact(&["DEL", "e3"]),
    ]);
    f.cmd(&["CONFIG", "SET", "lazyfree-lazy-expire", "yes"]);
    f.cmd(&["SET", "e4", "v"]);
    assert_eq!(f.cmd(&["PEXPIRE", "e4", "0"]), b":1\r\n");
    f.cmd(&["SET", "e5", "v"]);
    assert_eq!(f.cmd(&["GETEX", "e5", "PXAT", "1"]), b"$1\r\nv\r\n");
    f.expect(&[
        exact(&["SET", "e4", "v"]),
        exact(&["UNLINK", "e4"]),
        exact(&["SET", "e5", "v"]),
        exact(&["UNLINK", "e5"]),
    ]);
    f.cmd(&["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"]);
    f.cmd(&["SET", "e6", "v"]);
    assert_eq!(f.cmd(&["GETDEL", "e6"]), b"$1\r\nv\r\n");
    f.expect(&[exact(&["SET", "e6", "v"]), exact(&["UNLINK", "e6"])]);
    f.cmd(&["CONFIG", "SET", "lazyfree-lazy-user-del", "no"]);
    f.cmd(&["CONFIG", "SET", "lazyfree-lazy-expire", "no"]);
    f.replays(&["e1", "e2", "e3", "e4", "e5", "e6"]);
}

/// HINCRBYFLOAT: HSET of the new value. SPOP: one SREM per member (a MULTI … EXEC block for
/// more than one), DEL when the count takes the whole set, nothing when nothing was popped.
#[test]
fn hincrbyfloat_and_spop_are_written_as_their_effects() {
    let mut f = Fixture::start("hash-set");
    assert_eq!(f.cmd(&["HINCRBYFLOAT", "h", "f", "1.5"]), b"$3\r\n1.5\r\n");
    assert_eq!(
        f.cmd(&["HINCRBYFLOAT", "h", "f", "2.25"]),
        b"$4\r\n3.75\r\n"
    );
    f.expect(&[
        exact(&["SELECT", "0"]),
        exact(&["HSET", "h", "f", "1.5"]),
        exact(&["HSET", "h", "f", "3.75"]),
    ]);

    f.cmd(&["SADD", "s", "a", "b", "c", "d", "e", "f", "g", "h"]);
    let one = bulk(&f.cmd(&["SPOP", "s"]));
    let popped = members(&f.cmd(&["SPOP", "s", "3"]));
    assert_eq!(popped.len(), 3);
    let single = members(&f.cmd(&["SPOP", "s", "1"]));
    f.cmd(&["SPOP", "s", "0"]);
    f.cmd(&["SPOP", "missing"]);
    f.cmd(&["SPOP", "missing", "2"]);
    let mut want = vec![
        exact(&["SADD", "s", "a", "b", "c", "d", "e", "f", "g", "h"]),
        bytes(&[b"SREM", b"s", &one]),
        exact(&["MULTI"]),
    ];
    want.extend(popped.iter().map(|m| bytes(&[b"SREM", b"s", m])));
    want.push(exact(&["EXEC"]));
    want.push(bytes(&[b"SREM", b"s", &single[0]]));
    f.expect(&want);
    f.cmd(&["SADD", "gone", "1", "2", "3"]);
    f.cmd(&["SPOP", "gone", "3"]);
    f.cmd(&["SADD", "ints", "1", "2", "3"]);
    let int = bulk(&f.cmd(&["SPOP", "ints"]));
    f.expect(&[
        exact(&["SADD", "gone", "1", "2", "3"]),
        exact(&["DEL", "gone"]),
        exact(&["SADD", "ints", "1", "2", "3"]),
        bytes(&[b"SREM", b"ints", &int]),
    ]);

    // Inside MULTI the rewritten commands join the transaction's one block.
    f.cmd(&["MULTI"]);
    f.cmd(&["SET", "m", "v", "EX", "100"]);
    f.cmd(&["SPOP", "s", "2"]);
    let before = unix_ms();
    let replies = support::decode(&f.cmd(&["EXEC"]));
    let w = (before, unix_ms());
    let pair: Vec<Vec<u8>> = replies.array()[1]
        .array()
        .iter()
        .map(|v| v.bulk().to_vec())
        .collect();
    f.expect(&[
        exact(&["MULTI"]),
        timed(&["SET", "m", "v", "PXAT", "@"], w, 100_000),
        bytes(&[b"SREM", b"s", &pair[0]]),
        bytes(&[b"SREM", b"s", &pair[1]]),
        exact(&["EXEC"]),
    ]);
    f.replays(&["h", "s", "gone", "ints", "m"]);
}

/// LMPOP, ZMPOP and the blocking pops that found data at once: the plain pop, with the number
/// popped for the M forms; BRPOPLPUSH: RPOPLPUSH; BLMOVE: LMOVE with its directions as sent.
#[test]
fn pops_served_at_once_are_written_as_plain_pops() {
    let mut f = Fixture::start("pops");
    f.cmd(&["RPUSH", "l", "a", "b", "c", "d", "e"]);
    f.cmd(&["LMPOP", "2", "nokey", "l", "LEFT", "COUNT", "2"]);
    f.cmd(&["LMPOP", "1", "l", "RIGHT", "COUNT", "10"]);
    f.cmd(&["LMPOP", "1", "l", "RIGHT"]);
    f.expect(&[
        exact(&["SELECT", "0"]),
        exact(&["RPUSH", "l", "a", "b", "c", "d", "e"]),
        exact(&["LPOP", "l", "2"]),
        exact(&["RPOP", "l", "3"]),
    ]);
    f.cmd(&["RPUSH", "l2", "x", "y", "z", "w"]);
    assert_eq!(
        f.cmd(&["BLPOP", "nokey", "l2", "0"]),
        b"*2\r\n$2\r\nl2\r\n$1\r\nx\r\n"
    );
    f.cmd(&["BRPOP", "l2", "1"]);
    f.cmd(&["BLMPOP", "0", "1", "l2", "RIGHT", "COUNT", "5"]);
    f.expect(&[
        exact(&["RPUSH", "l2", "x", "y", "z", "w"]),
        exact(&["LPOP", "l2"]),
        exact(&["RPOP", "l2"]),
        exact(&["RPOP", "l2", "2"]),
    ]);
    f.cmd(&["RPUSH", "src", "1", "2", "3"]);
    assert_eq!(f.cmd(&["BRPOPLPUSH", "src", "dst", "0"]), b"$1\r\n3\r\n");
    assert_eq!(
        f.cmd(&["BLMOVE", "src", "dst", "Left", "rIGHT", "0"]),
        b"$1\r\n1\r\n"
    );
    f.cmd(&["RPOPLPUSH", "src", "dst"]);
    f.cmd(&["LMOVE", "nokey", "dst", "LEFT", "LEFT"]);
    f.expect(&[
        exact(&["RPUSH", "src", "1", "2", "3"]),
        exact(&["RPOPLPUSH", "src", "dst"]),
        exact(&["LMOVE", "src", "dst", "Left", "rIGHT"]),
        exact(&["RPOPLPUSH", "src", "dst"]),
    ]);

    f.cmd(&[
        "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
    ]);
    f.cmd(&["ZMPOP", "2", "nokey", "z", "MIN", "COUNT", "2"]);
    f.cmd(&["ZMPOP", "1", "z", "MAX"]);
    assert_eq!(
        f.cmd(&["BZPOPMAX", "z", "0"]),
        b"*3\r\n$1\r\nz\r\n$1\r\nd\r\n$1\r\n4\r\n"
    );
    f.cmd(&["BZPOPMIN", "nokey", "z", "0"]);
    f.cmd(&["ZADD", "z", "7", "x", "8", "y"]);
    f.cmd(&["BZMPOP", "0", "1", "z", "MAX", "COUNT", "5"]);
    f.cmd(&["ZMPOP", "1", "z", "MIN"]);
    f.expect(&[
        exact(&[
            "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
        ]),
        exact(&["ZPOPMIN", "z", "2"]),
        exact(&["ZPOPMAX", "z", "1"]),
        exact(&["ZPOPMAX", "z"]),
        exact(&["ZPOPMIN", "z"]),
        exact(&["ZADD", "z", "7", "x", "8", "y"]),
        exact(&["ZPOPMAX", "z", "2"]),
    ]);
    f.cmd(&["ZADD", "z2", "1", "a", "2", "b"]);
    f.expect(&[exact(&["ZADD", "z2", "1", "a", "2", "b"])]);
    f.replays(&["l", "l2", "src", "dst", "z", "z2"]);
}

/// One blocked client served later: what it blocks in, the push that serves it, its reply,
/// and what the pop is written as (after the push, written as it was).
struct Served {
    block: &'static [&'static str],
    push: &'static [&'static str],
    reply: &'static [u8],
    pop: &'static [&'static str],
}

const SERVED: &[Served] = &[
    Served {
        block: &["BLPOP", "q1", "0"],
        push: &["RPUSH", "q1", "a", "b"],
        reply: b"*2\r\n$2\r\nq1\r\n$1\r\na\r\n",
        pop: &["LPOP", "q1"],
    },
    Served {
        block: &["BRPOP", "nokey", "q2", "0"],
        push: &["LPUSH", "q2", "a", "b"],
        reply: b"*2\r\n$2\r\nq2\r\n$1\r\na\r\n",
        pop: &["RPOP", "q2"],
    },
    Served {
        block: &["BLMPOP", "0", "1", "q3", "LEFT", "COUNT", "5"],
        push: &["RPUSH", "q3", "a", "b"],
        reply: b"*2\r\n$2\r\nq3\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n",
        pop: &["LPOP", "q3", "2"],
    },
    Served {
        block: &["BRPOPLPUSH", "q4", "d4", "0"],
        push: &["RPUSH", "q4", "a", "b"],
        reply: b"$1\r\nb\r\n",
        pop: &["RPOPLPUSH", "q4", "d4"],
    },
    // Served BLMOVE takes Redis's own lower-case words, whatever case the client sent.
    Served {
        block: &["BLMOVE", "q5", "d5", "RIGHT", "Left", "0"],
        push: &["RPUSH", "q5", "a", "b"],
        reply: b"$1\r\nb\r\n",
        pop: &["LMOVE", "q5", "d5", "right", "left"],
    },
    Served {
        block: &["BZPOPMIN", "zq1", "0"],
        push: &["ZADD", "zq1", "1", "a", "2", "b"],
        reply: b"*3\r\n$3\r\nzq1\r\n$1\r\na\r\n$1\r\n1\r\n",
        pop: &["ZPOPMIN", "zq1"],
    },
    Served {
        block: &["BZMPOP", "0", "2", "nokey", "zq2", "MAX", "COUNT", "3"],
        push: &["ZADD", "zq2", "1", "a", "2", "b"],
        reply: b"*2\r\n$3\r\nzq2\r\n*2\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",
        pop: &["ZPOPMAX", "zq2", "2"],
    },
];

/// A client blocked in BLPOP, BRPOP, BLMPOP, BRPOPLPUSH, BLMOVE, BZPOPMIN or BZMPOP and served
/// by another connection's push: the push, then the pop it amounted to, on its own (not in
/// a MULTI block with the push), in the blocked client's database.
#[test]
fn blocked_clients_served_later_are_written_as_plain_pops() {
    let mut f = Fixture::start("served");
    let mut b = f.server.connect();
    for (i, case) in SERVED.iter().enumerate() {
        if i == SERVED.len() - 1 {
            // The last one in database 3: its pop follows the push's SELECT.
            b.cmd(&["SELECT", "3"]);
            f.cmd(&["SELECT", "3"]);
        }
        b.send(&support::encode(
            &case.block.iter().map(|w| w.as_bytes()).collect::<Vec<_>>(),
        ));
        wait_blocked(&mut f.c, 1);
        f.cmd(case.push);
        assert_eq!(b.read_reply(), case.reply, "{:?} is served", case.block);
        let mut want = Vec::new();
        if i == 0 {
            want.push(exact(&["SELECT", "0"]));
        } else if i == SERVED.len() - 1 {
            want.push(exact(&["SELECT", "3"]));
        }
        want.push(exact(case.push));
        want.push(exact(case.pop));
        f.expect(&want);
    }
    f.cmd(&["SELECT", "0"]);
    f.replays(&["q1", "q2", "q3", "q4", "d4", "q5", "d5", "zq1"]);
}

/// RESTORE with a relative TTL: the absolute time and ABSTTL; with none or an absolute one: as
/// sent; a TTL already past: DEL when REPLACE deleted a key, else nothing.
#[test]
fn restore_is_written_with_an_absolute_ttl() {
    let mut f = Fixture::start("restore");
    f.cmd(&["RPUSH", "src", "a", "b", "c"]);
    let payload = bulk(&f.cmd(&["DUMP", "src"]));
    let p = payload.as_slice();
    let restore = |f: &mut Fixture, args: &[&[u8]]| {
        let mut all: Vec<&[u8]> = vec![b"RESTORE"];
        all.extend_from_slice(args);
        let before = unix_ms();
        let reply = f.c.command(&all);
        (reply, (before, unix_ms()))
    };
    let (reply, w) = restore(&mut f, &[b"r1", b"100000", p]);
    assert_eq!(reply, b"+OK\r\n");
    let (_, w2) = restore(&mut f, &[b"r1", b"200000", p, b"replace"]);
    restore(&mut f, &[b"r2", b"0", p]);
    let at_ms = (unix_ms() + 300_000).to_string();
    restore(&mut f, &[b"r3", at_ms.as_bytes(), p, b"ABSTTL"]);
    f.expect(&[
        exact(&["SELECT", "0"]),
        exact(&["RPUSH", "src", "a", "b", "c"]),
        timed_bytes(&[b"RESTORE", b"r1", b"@", p, b"ABSTTL"], w, 100_000),
        timed_bytes(
            &[b"RESTORE", b"r1", b"@", p, b"replace", b"ABSTTL"],
            w2,
            200_000,
        ),
        bytes(&[b"RESTORE", b"r2", b"0", p]),
        bytes(&[b"RESTORE", b"r3", at_ms.as_bytes(), p, b"ABSTTL"]),
    ]);
    // A TTL already past: the key replaced is deleted, no key is restored.
    let replaced = restore(&mut f, &[b"r2", b"1", p, b"REPLACE", b"ABSTTL"]);
    assert_eq!(replaced.0, b"+OK\r\n");
    assert_eq!(restore(&mut f, &[b"r4", b"1", p, b"ABSTTL"]).0, b"+OK\r\n");
    assert_eq!(restore(&mut f, &[b"r4", b"-5", p]).0[0], b'-');
    f.expect(&[exact(&["DEL", "r2"])]);
    f.replays(&["src", "r1", "r2", "r3", "r4"]);
}

/// FLUSHALL and FLUSHDB are written even when there was nothing to flush, SWAPDB always (even
/// of a database with itself), as Redis forces or counts them.
#[test]
fn flushes_and_swapdb_are_written_even_when_nothing_changed() {
    let mut f = Fixture::start("flush");
    f.cmd(&["FLUSHALL"]);
    f.cmd(&["SELECT", "9"]);
    f.cmd(&["FLUSHDB"]);
    f.cmd(&["FLUSHDB", "ASYNC"]);
    f.cmd(&["SWAPDB", "10", "11"]);
    f.cmd(&["FLUSHDB", "NOPE"]);
    f.expect(&[
        exact(&["SELECT", "0"]),
        exact(&["FLUSHALL"]),
        exact(&["SELECT", "9"]),
        exact(&["FLUSHDB"]),
        exact(&["FLUSHDB", "ASYNC"]),
        exact(&["SWAPDB", "10", "11"]),
    ]);
    f.cmd(&["SELECT", "1"]);
    f.cmd(&["SET", "in1", "v"]);
    f.cmd(&["SWAPDB", "1", "2"]);
    f.cmd(&["SWAPDB", "4", "4"]);
    f.cmd(&["SWAPDB", "4", "99"]);
    f.cmd(&["SELECT", "0"]);
    f.cmd(&["SET", "in0", "v"]);
    f.expect(&[
        exact(&["SELECT", "1"]),
        exact(&["SET", "in1", "v"]),
        exact(&["SWAPDB", "1", "2"]),
        exact(&["SWAPDB", "4", "4"]),
        exact(&["SELECT", "0"]),
        exact(&["SET", "in0", "v"]),
    ]);
    f.replays(&["in0", "in1"]);
}
