//! Differential test of keyspace notifications (`notify-keyspace-events`): densekv and
//! redis-server 7.0 both start with every class on (`KEA`, plus `n` for new keys and `m` for key
//! misses), a pattern subscriber `PSUBSCRIBE __key*__:*` listens on each, and one seeded stream
//! of commands goes to both. After each batch a sentinel `PUBLISH __keysentinel__:end` (which
//! the pattern matches) marks the end of what the batch published; the messages each subscriber
//! got before it must be the same, channel by channel and in order.
//!
//! The stream writes every type (strings, hashes, lists, sets, sorted sets) on a small pool of
//! keys over two databases, so keys are created, emptied, overwritten by another type, renamed,
//! moved, copied and restored, and the generic commands (DEL, EXPIRE with future and past times,
//! PERSIST, RENAME, MOVE, COPY, RESTORE, SORT … STORE), the *STORE commands, LMOVE and the pops
//! (blocking ones included, with data present, with none, and inside MULTI) meet them; reads run
//! against missing keys for `keymiss`. Now and then a key gets a 1 ms TTL (`PEXPIRE k 1`,
//! `SET … PX 1`, `PSETEX`) at the end of a batch; the driver sleeps past it, so the next
//! commands on the key find it expired and the `expired` event must come before their own, as
//! Redis's lazy expiry sends it. Active expiry would send `expired` at times of its own, so
//! `DEBUG SET-ACTIVE-EXPIRE 0` turns it off on both for the stream; every other TTL is far off.
//!
//! Replies are compared as in the other differential tests (unordered ones sorted, random picks
//! by shape, TTLs within a drift), so the two datasets stay equal and so must the events.
//! Orders Redis leaves undefined stay out of the stream: SORT … BY runs only on lists, SPOP
//! only takes whole sets, ZREMRANGEBYLEX (undefined over members of different scores) runs only
//! in a scripted case, NX/XX/GT/LT compare absolute expiry times, and SCAN, KEYS and RANDOMKEY
//! (whose walks differ) are not sent.
//!
//! The other tests: scripted cases the stream meets too rarely (several expired keys looked up
//! by one command, whose `expired` events must keep the order of the lookups; the reads of a
//! missing key, each a `keymiss`; writes that change nothing; the expired destination of a
//! *STORE, RENAME, COPY, MOVE or RESTORE); blocked clients served by a push (BLPOP, BRPOP,
//! BLMPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN, BZMPOP) must send the events of their pops after the
//! push's; active expiry must send `expired` for a key nobody reads; eviction
//! (`allkeys-random`) must send `evicted` (the names of the events are compared, not their
//! counts).
//!
//! The seed is fixed; `DENSEKV_SEED` and `DENSEKV_DIFF_COMMANDS` change the stream and its
//! length.

#[macro_use]
mod support;

use rand::Rng;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use support::diff::{Check, Cmd, Gen, Twin, command_count, seed};
use support::{Client, Server, Value, decode, show};

const COMMANDS: usize = 6_000;
const BATCH: usize = 40;
const PATTERN: &str = "__key*__:*";
const SENTINEL: &str = "__keysentinel__:end";
/// Every class, `n` and `m` included (both servers accept `KEAnm` in 7.0), and DEBUG.
const OPTIONS: &[&str] = &[
    "--notify-keyspace-events",
    "KEAnm",
    "--enable-debug-command",
    "yes",
];

/// Collection elements: no NUL byte (SORT ALPHA compares C strings), numbers and words mixed.
const ELEMENTS: &[&str] = &["a", "b", "c", "1", "2", "3", "10", "-5", "x y", "2.5"];

/// The keys: each type has three of its own (`s*` strings, `h*` hashes, `l*` lists, `t*` sets,
/// `z*` sorted sets) that its commands use most of the time, so they meet data of their type;
/// k0…k5 and every other key take any type; w_* are SORT's weight and GET keys; q0 and q1 (not
/// in the pool) hold only lists, for SORT … BY; and three awkward names.
fn pool() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..6).map(|i| format!("k{i}").into_bytes()).collect();
    for prefix in ["s", "h", "l", "t", "z"] {
        keys.extend((0..3).map(|i| format!("{prefix}{i}").into_bytes()));
    }
    keys.extend(["w_a", "w_1", "w_b", "", "sp ace", "\r\n"].map(|k| k.as_bytes().to_vec()));
    keys
}

/// A key of the type `prefix` names (see `pool`) three times out of four, else any key.
fn home(g: &mut Gen, prefix: &str) -> Vec<u8> {
    if g.chance(0.75) {
        format!("{prefix}{}", g.below(3)).into_bytes()
    } else {
        g.key()
    }
}

/// The two pattern subscribers, one per server.
struct Listener {
    densekv: Client,
    redis: Client,
}

impl Listener {
    fn new(densekv: &Server, redis: &Server, pattern: &str) -> Listener {
        let subscribe = |server: &Server| {
            let mut c = server.connect();
            let reply = c.cmd(&["PSUBSCRIBE", pattern]);
            assert!(show(&reply).contains("psubscribe"), "{}", show(&reply));
            c
        };
        Listener {
            densekv: subscribe(densekv),
            redis: subscribe(redis),
        }
    }

    /// The messages each subscriber got since the last call: a sentinel is published through
    /// `twin` (after the batch's replies were read, so after everything it published), and
    /// each subscriber is read up to it.
    fn drain(&mut self, twin: &mut Twin) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        twin.one(&cmd!["PUBLISH", SENTINEL, "end"]);
        (
            up_to_sentinel(&mut self.densekv),
            up_to_sentinel(&mut self.redis),
        )
    }
}

/// The `pmessage` frames before the sentinel's, raw.
fn up_to_sentinel(c: &mut Client) -> Vec<Vec<u8>> {
    let mut messages = Vec::new();
    loop {
        let frame = c.read_reply();
        if channel_of(&frame).as_deref() == Some(SENTINEL.as_bytes()) {
            return messages;
        }
        messages.push(frame);
    }
}

/// The channel of a `pmessage` frame.
fn channel_of(frame: &[u8]) -> Option<Vec<u8>> {
    match decode(frame) {
        Value::Array(parts) if parts.len() == 4 => Some(parts[2].bulk().to_vec()),
        _ => None,
    }
}

/// A message as `channel → payload`, for failure reports.
fn describe(frame: &[u8]) -> String {
    match decode(frame) {
        Value::Array(parts) if parts.len() == 4 => {
            format!("{} → {}", show(parts[2].bulk()), show(parts[3].bulk()))
        }
        _ => show(frame),
    }
}

/// Fails with both message lists and the commands that caused them unless they are equal.
fn compare(what: &str, batch: &[Cmd], ours: &[Vec<u8>], theirs: &[Vec<u8>]) {
    if ours == theirs {
        return;
    }
    let first = ours
        .iter()
        .zip(theirs)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(theirs.len()));
    let list = |m: &[Vec<u8>]| {
        m.iter()
            .enumerate()
            .map(|(i, f)| format!("    {i:3} {}", describe(f)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let commands = batch
        .iter()
        .map(|c| {
            let args: Vec<String> = c.args.iter().map(|a| format!("\"{}\"", show(a))).collect();
            format!("    {}", args.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n");
    panic!(
        "{what}: the events differ from message {first} on\n  commands:\n{commands}\n  densekv:\n{}\n  redis:\n{}",
        list(ours),
        list(theirs)
    );
}

/// One of `words`.
fn word(g: &mut Gen, words: &[&'static str]) -> &'static str {
    words[g.below(words.len())]
}

fn element(g: &mut Gen) -> &'static str {
    word(g, ELEMENTS)
}

fn score(g: &mut Gen) -> &'static str {
    match g.below(12) {
        0 => word(g, &["inf", "-inf", "1.5"]),
        1 => "nan",
        _ => word(g, &["-3", "-1", "0", "1", "2", "4"]),
    }
}

/// A string value: numbers (for INCR and SORT weights), words, now and then a long one.
fn string_value(g: &mut Gen) -> Vec<u8> {
    match g.below(6) {
        0..=2 => g.rng.gen_range(-20i64..20).to_string().into_bytes(),
        3 => b"2.5".to_vec(),
        4 => element(g).into(),
        _ => vec![b'v'; g.rng.gen_range(40..60)],
    }
}

/// A far-off expiry option and its time, relative or absolute.
fn far_expiry(g: &mut Gen) -> (&'static str, String) {
    let far_s = g.start_s + 1_000_000;
    match g.below(4) {
        0 => ("EX", "1000".into()),
        1 => ("PX", "1000000".into()),
        2 => ("EXAT", far_s.to_string()),
        _ => ("PXAT", (far_s * 1000).to_string()),
    }
}

fn side(g: &mut Gen) -> &'static str {
    word(g, &["LEFT", "RIGHT"])
}

fn strings(g: &mut Gen, k: &[u8]) -> Cmd {
    let v = string_value(g);
    match g.below(27) {
        22 => cmd!["SETBIT", k, g.below(40).to_string(), g.below(2).to_string()],
        23 => cmd!["BITFIELD", k, "INCRBY", "u4", g.below(20).to_string(), "3"],
        24 => cmd!["BITOP", word(g, &["AND", "OR"]), k, home(g, "s"), g.key()],
        25 => cmd![word(g, &["GETBIT", "BITCOUNT"]), k, "3"],
        26 => cmd!["BITFIELD_RO", k, "GET", "u4", "0"],
        0..=3 => cmd!["SET", k, v],
        4 => {
            let (word, at) = far_expiry(g);
            cmd!["SET", k, v, word, at]
        }
        5 => cmd!["SET", k, v, word(g, &["NX", "XX", "GET", "KEEPTTL"])],
        6 => cmd!["SETNX", k, v],
        7 => cmd!["SETEX", k, "1000", v],
        8 => cmd!["MSET", k, v, home(g, "s"), string_value(g)],
        9 => cmd!["MSETNX", k, v, home(g, "s"), string_value(g)],
        10 => cmd!["GETSET", k, v],
        11 => cmd!["GETDEL", k],
        12 => getex(g, k),
        13 => cmd!["APPEND", k, v],
        14 => cmd![word(g, &["INCR", "DECR"]), k],
        15 => cmd!["INCRBY", k, g.integer()],
        16 => cmd!["INCRBYFLOAT", k, "1.5"],
        17 => cmd!["SETRANGE", k, g.below(8).to_string(), v],
        18 => cmd!["MGET", k, home(g, "s"), g.key()],
        19 => cmd!["STRLEN", k],
        20 => cmd!["GETRANGE", k, "0", "3"],
        _ => cmd!["LCS", k, home(g, "s")],
    }
}

/// GETEX with each option: none, a far time, PERSIST, or an absolute time already past.
fn getex(g: &mut Gen, k: &[u8]) -> Cmd {
    match g.below(4) {
        0 => cmd!["GETEX", k],
        1 => {
            let (word, at) = far_expiry(g);
            cmd!["GETEX", k, word, at]
        }
        2 => cmd!["GETEX", k, "PERSIST"],
        _ => cmd!["GETEX", k, "PXAT", "1000"],
    }
}

fn hashes(g: &mut Gen, k: &[u8]) -> Cmd {
    let f = element(g);
    match g.below(14) {
        0..=2 => cmd!["HSET", k, f, element(g), element(g), element(g)],
        3 => cmd!["HSETNX", k, f, element(g)],
        4 => cmd!["HMSET", k, f, element(g)],
        5 | 6 => cmd!["HDEL", k, f, element(g)],
        7 => cmd!["HINCRBY", k, f, "3"],
        8 => cmd!["HINCRBYFLOAT", k, f, "0.5"],
        9 => cmd!["HGET", k, f],
        10 => cmd!["HLEN", k],
        11 => cmd!["HGETALL", k].with(Check::SortedPairs),
        12 => cmd!["HKEYS", k].with(Check::Sorted),
        _ => cmd!["HRANDFIELD", k, "2"].with(Check::Shape),
    }
}

fn lists(g: &mut Gen, k: &[u8]) -> Cmd {
    match g.below(19) {
        0..=3 => cmd![word(g, &["LPUSH", "RPUSH"]), k, element(g), element(g)],
        4 => cmd![word(g, &["LPUSHX", "RPUSHX"]), k, element(g)],
        5 | 6 => cmd![word(g, &["LPOP", "RPOP"]), k],
        7 => cmd!["LPOP", k, g.below(4).to_string()],
        8 => cmd!["LINSERT", k, "BEFORE", element(g), element(g)],
        9 => cmd!["LSET", k, "0", element(g)],
        10 => cmd!["LTRIM", k, "1", "-1"],
        11 => cmd!["LREM", k, "0", element(g)],
        12 => cmd!["LMOVE", k, home(g, "l"), side(g), side(g)],
        13 => cmd!["RPOPLPUSH", k, home(g, "l")],
        14 => cmd!["LMPOP", "2", k, home(g, "l"), side(g)],
        15 => cmd!["LRANGE", k, "0", "-1"],
        16 => cmd!["LINDEX", k, "1"],
        17 => cmd!["LLEN", k],
        _ => cmd!["LPOS", k, element(g)],
    }
}

/// A blocking pop or move with a short timeout, since the keys may be empty (then both block
/// until it passes and reply null); with `timeout` 0 inside MULTI, where nothing blocks.
fn blocking(g: &mut Gen, k: &[u8], timeout: &str) -> Cmd {
    match g.below(7) {
        0 => cmd!["BLPOP", k, home(g, "l"), timeout],
        1 => cmd!["BRPOP", k, timeout],
        2 => cmd!["BLMOVE", k, home(g, "l"), side(g), side(g), timeout],
        3 => cmd!["BRPOPLPUSH", k, home(g, "l"), timeout],
        4 => {
            let count = (g.below(3) + 1).to_string();
            cmd![
                "BLMPOP",
                timeout,
                "2",
                k,
                home(g, "l"),
                side(g),
                "COUNT",
                count
            ]
        }
        5 => cmd!["BZPOPMIN", home(g, "z"), g.key(), timeout],
        _ => cmd!["BZMPOP", timeout, "1", home(g, "z"), "MAX"],
    }
}

fn sets(g: &mut Gen, k: &[u8]) -> Cmd {
    match g.below(17) {
        0..=3 => cmd!["SADD", k, element(g), element(g), element(g)],
        4 | 5 => cmd!["SREM", k, element(g), element(g)],
        6 => cmd!["SMOVE", k, home(g, "t"), element(g)],
        // Only a pop of the whole set is deterministic.
        7 => cmd!["SPOP", k, "100"].with(Check::Sorted),
        8 => cmd!["SINTERSTORE", k, home(g, "t"), home(g, "t")],
        9 => cmd!["SUNIONSTORE", k, home(g, "t"), home(g, "t")],
        10 => cmd!["SDIFFSTORE", k, home(g, "t"), home(g, "t")],
        11 => cmd!["SISMEMBER", k, element(g)],
        12 => cmd!["SMISMEMBER", k, element(g), element(g)],
        13 => cmd!["SCARD", k],
        14 => cmd!["SMEMBERS", k].with(Check::Sorted),
        15 => cmd!["SUNION", k, home(g, "t")].with(Check::Sorted),
        _ => cmd!["SINTERCARD", "2", k, home(g, "t")],
    }
}

/// The sorted-set commands; not ZREMRANGEBYLEX, whose result on members of different scores
/// Redis leaves undefined (a scripted case covers it).
fn zsets(g: &mut Gen, k: &[u8]) -> Cmd {
    match g.below(18) {
        0..=3 => zadd(g, k),
        4 => cmd!["ZINCRBY", k, score(g), element(g)],
        5 | 6 => cmd!["ZREM", k, element(g), element(g)],
        7 => cmd!["ZREMRANGEBYRANK", k, "0", "1"],
        8 => cmd!["ZREMRANGEBYSCORE", k, "-2", "2"],
        9 => cmd![word(g, &["ZPOPMIN", "ZPOPMAX"]), k, g.below(3).to_string()],
        10 => cmd!["ZMPOP", "2", k, home(g, "z"), "MIN"],
        11 => {
            let name = word(g, &["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]);
            cmd![name, k, "2", home(g, "z"), home(g, "z")]
        }
        12 => cmd!["ZRANGESTORE", k, home(g, "z"), "0", "2"],
        13 => cmd!["ZRANGE", k, "0", "-1"],
        14 => cmd!["ZSCORE", k, element(g)],
        15 => cmd!["ZCARD", k],
        16 => cmd!["ZCOUNT", k, "-inf", "+inf"],
        _ => cmd!["ZUNION", "2", k, home(g, "z")],
    }
}

fn zadd(g: &mut Gen, k: &[u8]) -> Cmd {
    let mut args = vec![b"ZADD".to_vec(), k.to_vec()];
    let option = g.below(8);
    if option < 5 {
        args.push(["NX", "XX", "GT", "CH", "INCR"][option].into());
    }
    let pairs = if option == 4 { 1 } else { g.below(3) + 1 };
    for _ in 0..pairs {
        args.extend([score(g).into(), element(g).into()]);
    }
    Cmd::new(args)
}

/// The generic key commands and the expiry family (TTLs far off, or already past).
fn generic(g: &mut Gen, k: &[u8]) -> Cmd {
    let far_s = (g.start_s + 1_000_000).to_string();
    match g.below(20) {
        0 => cmd![word(g, &["DEL", "UNLINK"]), k, g.key()],
        1 => cmd!["EXISTS", k, g.key()],
        2 => cmd!["TOUCH", k],
        3 => cmd!["TYPE", k],
        4 => cmd![word(g, &["RENAME", "RENAMENX"]), k, g.key()],
        5 => cmd!["MOVE", k, g.below(2).to_string()],
        6 => copy(g, k),
        7 | 8 => cmd!["EXPIRE", k, "1000"],
        9 => {
            // An absolute time: NX, XX, GT and LT then compare the same numbers on both (two
            // relative times given a moment apart would not).
            let at = (g.start_s + 500_000 + g.below(3) as i64 * 1000) * 1000;
            cmd![
                "PEXPIREAT",
                k,
                at.to_string(),
                word(g, &["NX", "XX", "GT", "LT"])
            ]
        }
        10 => cmd!["EXPIREAT", k, far_s],
        11 => cmd!["EXPIREAT", k, "1"],
        12 => cmd!["PEXPIRE", k, "-5"],
        13 => cmd!["PERSIST", k],
        14 => cmd!["TTL", k].with(Check::Drift(1)),
        15 => cmd!["PTTL", k].with(Check::Drift(200)),
        16 => cmd!["DUMP", k].with(Check::Shape),
        17 => cmd!["GET", k],
        _ => sort(g, k),
    }
}

fn copy(g: &mut Gen, k: &[u8]) -> Cmd {
    let mut cmd = cmd!["COPY", k, g.key()];
    if g.chance(0.4) {
        cmd.args
            .extend([b"DB".to_vec(), g.below(2).to_string().into_bytes()]);
    }
    if g.chance(0.5) {
        cmd.args.push(b"REPLACE".to_vec());
    }
    cmd
}

/// SORT over any key (ALPHA, so words sort too; no BY: a set's order would show), or over the
/// list-only keys q0 and q1 BY the weights `w_*`; with GET and STORE now and then.
fn sort(g: &mut Gen, k: &[u8]) -> Cmd {
    let mut cmd = if g.chance(0.4) {
        cmd!["SORT", format!("q{}", g.below(2)), "BY", "w_*"]
    } else {
        cmd!["SORT", k, "ALPHA"]
    };
    let mut add = |words: &[&[u8]]| cmd.args.extend(words.iter().map(|w| w.to_vec()));
    if g.chance(0.5) {
        add(&[b"GET", b"w_*", b"GET", b"#"]);
    }
    if g.chance(0.3) {
        add(&[b"LIMIT", b"0", b"2"]);
    }
    if g.chance(0.6) {
        add(&[b"STORE", &g.key()]);
    }
    cmd
}

/// RESTORE of a payload Redis dumped: new or busy, replacing, or with a TTL already past.
fn restore(g: &mut Gen, k: &[u8], payloads: &[Vec<u8>]) -> Cmd {
    let p = g.pick(payloads).clone();
    match g.below(4) {
        0 => cmd!["RESTORE", k, "0", p],
        1 => cmd!["RESTORE", k, "0", p, "REPLACE"],
        2 => cmd!["RESTORE", k, "1", p, "ABSTTL", "REPLACE"],
        _ => cmd!["RESTORE", k, "1000000", p, "REPLACE"],
    }
}

/// A 1 ms TTL: the key expires before the next batch (the driver sleeps past it).
fn short_ttl(g: &mut Gen, k: &[u8]) -> Cmd {
    match g.below(3) {
        0 => cmd!["PEXPIRE", k, "1"],
        1 => cmd!["SET", k, string_value(g), "PX", "1"],
        _ => cmd!["PSETEX", k, "1", string_value(g)],
    }
}

/// A MULTI … EXEC of writes (its pops never block), or a SELECT.
fn transaction(g: &mut Gen, out: &mut Vec<Cmd>) {
    if g.chance(0.3) {
        out.push(cmd!["SELECT", g.below(2).to_string()]);
        return;
    }
    out.push(cmd!["MULTI"]);
    for _ in 0..=g.below(4) {
        let k = g.key();
        let queued = match g.below(5) {
            0 => strings(g, &k),
            1 => cmd!["LPUSH", &k, element(g)],
            2 => cmd!["SADD", &k, element(g)],
            3 => cmd!["DEL", &k],
            _ => blocking(g, &k, "0"),
        };
        // EXEC's reply holds theirs: only commands whose replies have one order.
        if queued.check == Check::Exact {
            out.push(queued);
        }
    }
    out.push(cmd!["EXEC"]);
}

/// The next step of the stream, onto `out`; true when it ends the batch (a 1 ms TTL).
fn step(g: &mut Gen, payloads: &[Vec<u8>], out: &mut Vec<Cmd>) -> bool {
    let roll = g.below(100);
    let prefix = match roll {
        0..=15 | 96.. => "s",
        16..=27 => "h",
        28..=44 => "l",
        45..=56 => "t",
        57..=70 => "z",
        _ => "",
    };
    let k = if prefix.is_empty() {
        g.key()
    } else {
        home(g, prefix)
    };
    let cmd = match roll {
        0..=15 | 96.. => strings(g, &k),
        16..=27 => hashes(g, &k),
        28..=41 => lists(g, &k),
        42..=44 => blocking(g, &k, "0.01"),
        45..=56 => sets(g, &k),
        57..=70 => zsets(g, &k),
        71..=86 => generic(g, &k),
        87 => restore(g, &k, payloads),
        88..=89 => cmd!["RPUSH", format!("q{}", g.below(2)), element(g), element(g)],
        90..=93 => {
            transaction(g, out);
            return false;
        }
        _ => {
            out.push(short_ttl(g, &k));
            return true;
        }
    };
    out.push(cmd);
    false
}

/// DUMP payloads of a string, a list and a set, as Redis writes them (densekv restores them).
fn payloads(redis: &mut Client) -> Vec<Vec<u8>> {
    redis.cmd(&["SET", "dump:s", "hello"]);
    redis.cmd(&["RPUSH", "dump:l", "a", "b", "c"]);
    redis.cmd(&["SADD", "dump:set", "1", "2", "x"]);
    let payloads = ["dump:s", "dump:l", "dump:set"]
        .iter()
        .map(|k| decode(&redis.cmd(&["DUMP", k])).bulk().to_vec())
        .collect();
    redis.cmd(&["DEL", "dump:s", "dump:l", "dump:set"]);
    payloads
}

/// Both servers, with active expiry off, and a twin command connection.
fn start(seed: u64) -> (Server, Server, Twin) {
    let (densekv, redis) = Server::pair(OPTIONS);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    twin.one(&cmd!["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    (densekv, redis, twin)
}

#[test]
fn every_command_sends_the_events_redis_sends() {
    let seed = seed(0x6e07_1f1e);
    let (densekv, redis, mut twin) = start(seed);
    let payloads = payloads(&mut twin.redis);
    let mut listener = Listener::new(&densekv, &redis, PATTERN);
    let mut g = Gen::new(seed, pool());
    let total = command_count(COMMANDS);
    let (mut sent, mut batches) = (0, 0);
    let mut seen = BTreeSet::new();
    while sent < total {
        let mut batch = Vec::new();
        let mut ends_with_ttl = false;
        while batch.len() < BATCH && !ends_with_ttl {
            ends_with_ttl = step(&mut g, &payloads, &mut batch);
        }
        twin.run(&batch);
        let (ours, theirs) = listener.drain(&mut twin);
        compare(
            &format!("batch {batches} (seed {seed})"),
            &batch,
            &ours,
            &theirs,
        );
        seen.extend(ours.iter().filter_map(|f| event_name(f)));
        if ends_with_ttl {
            // Past the 1 ms TTL on both: the next lookup of the key expires it.
            std::thread::sleep(Duration::from_millis(5));
        }
        sent += batch.len();
        batches += 1;
    }
    if total >= COMMANDS {
        // The stream must have made every event it is meant to check.
        let missing: Vec<&&str> = EVENTS.iter().filter(|e| !seen.contains(**e)).collect();
        assert!(missing.is_empty(), "events never sent: {missing:?}");
    }
}

/// Every event the stream is built to provoke.
const EVENTS: &[&str] = &[
    "new",
    "keymiss",
    "expired",
    "del",
    "set",
    "expire",
    "persist",
    "rename_from",
    "rename_to",
    "move_from",
    "move_to",
    "copy_to",
    "restore",
    "sortstore",
    "incrby",
    "incrbyfloat",
    "append",
    "setrange",
    "setbit",
    "hset",
    "hdel",
    "hincrby",
    "hincrbyfloat",
    "lpush",
    "rpush",
    "lpop",
    "rpop",
    "linsert",
    "lset",
    "ltrim",
    "lrem",
    "sadd",
    "srem",
    "spop",
    "sinterstore",
    "sunionstore",
    "sdiffstore",
    "zadd",
    "zincr",
    "zrem",
    "zremrangebyrank",
    "zremrangebyscore",
    "zpopmin",
    "zpopmax",
    "zunionstore",
    "zinterstore",
    "zdiffstore",
    "zrangestore",
];

/// The event a `__keyevent@<db>__:<event>` message names.
fn event_name(frame: &[u8]) -> Option<String> {
    let channel = channel_of(frame)?;
    let text = String::from_utf8_lossy(&channel).into_owned();
    text.strip_prefix("__keyevent@")
        .and_then(|rest| rest.split_once("__:"))
        .map(|(_, event)| event.to_string())
}

/// `INFO clients`' `blocked_clients` on `c`.
fn blocked_clients(c: &mut Client) -> usize {
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "clients"])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("blocked_clients in INFO")
}

/// Waits until `n` clients are blocked on both servers.
fn wait_blocked(twin: &mut Twin, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while blocked_clients(&mut twin.densekv) != n || blocked_clients(&mut twin.redis) != n {
        assert!(Instant::now() < deadline, "the clients did not block");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Each case: the commands before, the blocking command (sent by a client of its own, which
/// blocks), and the commands that serve it.
/// Commands as words (a scripted case).
type Script = &'static [&'static [&'static str]];

const SERVED: &[(Script, &[&str], Script)] = &[
    (&[], &["BLPOP", "l", "0"], &[&["RPUSH", "l", "a"]]),
    (&[], &["BRPOP", "x", "l", "0"], &[&["RPUSH", "l", "a", "b"]]),
    (
        &[],
        &["BLMPOP", "0", "1", "l", "LEFT", "COUNT", "5"],
        &[&["RPUSH", "l", "a", "b"]],
    ),
    (
        &[],
        &["BLMOVE", "s", "d", "LEFT", "RIGHT", "0"],
        &[&["LPUSH", "s", "x"]],
    ),
    (
        &[&["RPUSH", "d", "old"]],
        &["BRPOPLPUSH", "s", "d", "0"],
        &[&["RPUSH", "s", "x", "y"]],
    ),
    (&[], &["BZPOPMIN", "z", "0"], &[&["ZADD", "z", "1", "a"]]),
    (
        &[],
        &["BZMPOP", "0", "1", "z", "MAX", "COUNT", "2"],
        &[&["ZADD", "z", "1", "a", "2", "b", "3", "c"]],
    ),
    (
        &[&["RPUSH", "src", "v"]],
        &["BLPOP", "l", "0"],
        &[&["LMOVE", "src", "l", "LEFT", "LEFT"]],
    ),
    (
        &[&["RPUSH", "tmp", "v", "w"]],
        &["BRPOP", "l", "0"],
        &[&["RENAME", "tmp", "l"]],
    ),
    (
        &[],
        &["BLPOP", "l", "0"],
        &[
            &["MULTI"],
            &["RPUSH", "l", "a"],
            &["RPUSH", "l", "b"],
            &["EXEC"],
        ],
    ),
];

fn to_cmd(args: &[&str]) -> Cmd {
    Cmd::new(args.iter().map(|a| a.as_bytes().to_vec()).collect())
}

#[test]
fn served_blocked_clients_send_the_events_of_their_pops() {
    let (densekv, redis, mut twin) = start(0);
    let mut listener = Listener::new(&densekv, &redis, PATTERN);
    let mut blocker = Twin::new(densekv.connect(), redis.connect(), 0);
    for (i, (before, blocking, serving)) in SERVED.iter().enumerate() {
        twin.one(&cmd!["FLUSHALL"]);
        let before: Vec<Cmd> = before.iter().map(|c| to_cmd(c)).collect();
        twin.run(&before);
        let args: Vec<&[u8]> = blocking.iter().map(|a| a.as_bytes()).collect();
        let bytes = support::encode(&args);
        blocker.densekv.send(&bytes);
        blocker.redis.send(&bytes);
        wait_blocked(&mut twin, 1);
        let serving: Vec<Cmd> = serving.iter().map(|c| to_cmd(c)).collect();
        twin.run(&serving);
        let (ours, theirs) = (blocker.densekv.read_reply(), blocker.redis.read_reply());
        assert_eq!(show(&ours), show(&theirs), "case {i}: the served reply");
        let (ours, theirs) = listener.drain(&mut twin);
        let mut all = before;
        all.push(to_cmd(blocking));
        all.extend(serving);
        compare(&format!("served case {i}"), &all, &ours, &theirs);
    }
}

/// Cases the random stream meets too rarely, each a list of commands; `SLEEP` (not sent)
/// waits past the 1 ms TTLs given before it.
const SCRIPTED: &[Script] = &[
    // Expired keys DEL'd in the order given (they sit in different shards), a live one among.
    &[
        &[
            "MSET", "e1", "1", "e2", "2", "e3", "3", "e4", "4", "e5", "5", "e6", "6", "e7", "7",
        ],
        &["PEXPIRE", "e1", "1"],
        &["PEXPIRE", "e2", "1"],
        &["PEXPIRE", "e3", "1"],
        &["PEXPIRE", "e4", "1"],
        &["PEXPIRE", "e5", "1"],
        &["PEXPIRE", "e7", "1"],
        &["SLEEP"],
        &["DEL", "e7", "e6", "e5", "nosuch", "e4", "e3", "e2", "e1"],
    ],
    // The lookups of every read, each after its key's expiry.
    &[
        &[
            "MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6",
        ],
        &["PEXPIRE", "a", "1"],
        &["PEXPIRE", "b", "1"],
        &["PEXPIRE", "c", "1"],
        &["PEXPIRE", "d", "1"],
        &["PEXPIRE", "e", "1"],
        &["PEXPIRE", "f", "1"],
        &["SLEEP"],
        &["EXISTS", "a", "nosuch"],
        &["TOUCH", "b"],
        &["TYPE", "c"],
        &["TTL", "d"],
        &["EXPIRE", "e", "100"],
        &["OBJECT", "ENCODING", "f"],
        &["OBJECT", "ENCODING", "g"],
        &["MGET", "x", "y"],
        &["SINTERCARD", "2", "x", "y"],
        &["LCS", "x", "y"],
    ],
    &[
        &["ZADD", "zl", "0", "a", "0", "b", "0", "c"],
        &["ZREMRANGEBYLEX", "zl", "[a", "[b"],
        &["ZREMRANGEBYLEX", "zl", "-", "+"],
    ],
    // A *STORE's expired destination: deleted as any key (`del`) when the result is empty,
    // looked up (`expired`, then `new`) when it is not.
    &[
        &["SET", "dst", "v", "PX", "1"],
        &["SET", "dst2", "v", "PX", "1"],
        &["SADD", "s1", "a"],
        &["SLEEP"],
        &["SINTERSTORE", "dst", "nosuch", "s1"],
        &["SUNIONSTORE", "dst2", "s1"],
    ],
    &[
        &["SET", "src", "v"],
        &["SET", "dst", "v", "PX", "1"],
        &["SET", "b", "v", "PX", "1"],
        &["SLEEP"],
        &["RENAME", "src", "dst"],
        &["COPY", "dst", "b", "REPLACE"],
        &["COPY", "nosuch", "b"],
    ],
    &[
        &["SADD", "s", "a"],
        &["PEXPIRE", "s", "1"],
        &["SADD", "d", "b"],
        &["PEXPIRE", "d", "1"],
        &["RPUSH", "l", "x"],
        &["PEXPIRE", "l", "1"],
        &["RPUSH", "m", "x"],
        &["PEXPIRE", "m", "1"],
        &["SLEEP"],
        &["SMOVE", "s", "d", "a"],
        &["LMOVE", "nosuch", "l", "LEFT", "LEFT"],
        &["LMOVE", "m", "l", "LEFT", "LEFT"],
    ],
    &[
        &["SELECT", "1"],
        &["SET", "k", "v", "PX", "1"],
        &["SELECT", "0"],
        &["SET", "k", "v"],
        &["SLEEP"],
        &["MOVE", "k", "1"],
        &["SELECT", "1"],
        &["MOVE", "k", "0"],
        &["SELECT", "0"],
    ],
    // WATCH and EXEC only look at an expired key; the GET after them expires it.
    &[
        &["SET", "wk", "v", "PX", "1"],
        &["SLEEP"],
        &["WATCH", "wk"],
        &["MULTI"],
        &["PING"],
        &["EXEC"],
        &["GET", "wk"],
    ],
    &[
        &["RPUSH", "c", "x"],
        &["PEXPIRE", "c", "1"],
        &["RPUSH", "lx", "x"],
        &["PEXPIRE", "lx", "1"],
        &["SET", "sx", "v", "PX", "1"],
        &["SLEEP"],
        &["INCR", "c"],
        &["LPUSHX", "lx", "y"],
        &["SET", "sx", "w", "XX"],
        &["ZADD", "zx", "XX", "1", "a"],
    ],
    &[
        &["MSETNX", "m1", "a", "m1", "b"],
        &["SET", "g", "v", "GET"],
        &["GETEX", "nosuch"],
        &["GETEX", "g", "PERSIST"],
        &["SETRANGE", "n", "0", ""],
        &["APPEND", "n", ""],
        &["HINCRBYFLOAT", "h", "f", "1.5"],
        &["SADD", "one", "x"],
        &["SPOP", "one"],
        &["LPUSH", "lw", "a"],
        &["LCS", "lw", "nosuch"],
        &["GETDEL", "g"],
        &["GETDEL", "g"],
    ],
    // Every read of a missing key: a `keymiss` each (OBJECT looks without one).
    &[
        &["GET", "m"],
        &["STRLEN", "m"],
        &["GETRANGE", "m", "0", "1"],
        &["SUBSTR", "m", "0", "1"],
        &["HGET", "m", "f"],
        &["HMGET", "m", "f"],
        &["HGETALL", "m"],
        &["HKEYS", "m"],
        &["HVALS", "m"],
        &["HLEN", "m"],
        &["HEXISTS", "m", "f"],
        &["HSTRLEN", "m", "f"],
        &["HRANDFIELD", "m"],
        &["HRANDFIELD", "m", "2"],
        &["HSCAN", "m", "0"],
        &["HSCAN", "m", "bad"],
        &["LLEN", "m"],
        &["LINDEX", "m", "0"],
        &["LRANGE", "m", "0", "1"],
        &["LPOS", "m", "a"],
        &["LPOS", "m", "a", "COUNT", "0"],
        &["SISMEMBER", "m", "a"],
        &["SMISMEMBER", "m", "a"],
        &["SCARD", "m"],
        &["SMEMBERS", "m"],
        &["SRANDMEMBER", "m"],
        &["SRANDMEMBER", "m", "2"],
        &["SSCAN", "m", "0"],
        &["SINTER", "m", "n"],
        &["SUNION", "m", "n"],
        &["SDIFF", "m", "n"],
        &["ZCARD", "m"],
        &["ZSCORE", "m", "a"],
        &["ZMSCORE", "m", "a"],
        &["ZRANK", "m", "a"],
        &["ZREVRANK", "m", "a"],
        &["ZCOUNT", "m", "0", "1"],
        &["ZLEXCOUNT", "m", "-", "+"],
        &["ZRANGE", "m", "0", "1"],
        &["ZRANGEBYSCORE", "m", "0", "1"],
        &["ZREVRANGE", "m", "0", "1"],
        &["ZRANGEBYLEX", "m", "-", "+"],
        &["ZRANDMEMBER", "m"],
        &["ZRANDMEMBER", "m", "2"],
        &["ZSCAN", "m", "0"],
        &["ZUNION", "2", "m", "n"],
        &["ZINTER", "2", "m", "n"],
        &["ZDIFF", "2", "m", "n"],
        &["ZINTERCARD", "2", "m", "n"],
        &["DUMP", "m"],
        &["SORT_RO", "m"],
        &["PTTL", "m"],
        &["EXPIRETIME", "m"],
        &["PEXPIRETIME", "m"],
        &["OBJECT", "ENCODING", "m"],
        &["OBJECT", "FREQ", "m"],
    ],
    // Writes that change nothing send nothing; the writes' own lookups send no `keymiss`.
    &[
        &["SET", "s", "v"],
        &["HSET", "h", "f", "1"],
        &["RPUSH", "l", "a"],
        &["SADD", "t", "a"],
        &["ZADD", "z", "1", "a"],
        &["SET", "s", "w", "NX"],
        &["SET", "x", "w", "XX"],
        &["SETNX", "s", "w"],
        &["HSETNX", "h", "f", "2"],
        &["HDEL", "h", "nof"],
        &["HINCRBY", "h", "f", "x"],
        &["HINCRBYFLOAT", "h", "f", "nan"],
        &["INCRBY", "s", "1"],
        &["INCRBYFLOAT", "s", "x"],
        &["LSET", "l", "5", "x"],
        &["LINSERT", "l", "AFTER", "z", "q"],
        &["LREM", "l", "0", "z"],
        &["LPOP", "l", "0"],
        &["LPUSHX", "m", "a"],
        &["SREM", "t", "z"],
        &["SMOVE", "t", "t", "a"],
        &["SMOVE", "t", "u", "z"],
        &["SPOP", "t", "0"],
        &["ZREM", "z", "q"],
        &["ZADD", "z", "XX", "1", "q"],
        &["ZADD", "z", "NX", "5", "a"],
        &["ZADD", "z", "INCR", "nan", "a"],
        &["ZPOPMIN", "z", "0"],
        &["ZREMRANGEBYRANK", "z", "5", "6"],
        &["PERSIST", "s"],
        &["EXPIRE", "m", "10"],
        &["RENAMENX", "s", "h"],
        &["RENAME", "s", "s"],
        &["MOVE", "m", "1"],
        &["COPY", "s", "h"],
        &["GETEX", "s", "PERSIST"],
        &["GETEX", "s"],
        &["SETRANGE", "s", "0", ""],
        &["LMOVE", "m", "l", "LEFT", "LEFT"],
        &["RPOPLPUSH", "l", "s"],
        &["SINTERSTORE", "m", "n"],
        &["ZUNIONSTORE", "m", "1", "n"],
        &["LMPOP", "1", "m", "LEFT"],
        &["ZMPOP", "1", "m", "MIN"],
        &["DEL", "m"],
        &["UNLINK", "m"],
        &["FLUSHDB"],
    ],
    // Several keys looked up in turn, each expired: the `expired` events in the lookups' order.
    &[
        &["MSET", "e1", "1", "e2", "2", "e3", "3", "e4", "4"],
        &["RPUSH", "l1", "a"],
        &["RPUSH", "l2", "a"],
        &["RPUSH", "l3", "a"],
        &["ZADD", "z1", "1", "a"],
        &["ZADD", "z2", "1", "a"],
        &["PEXPIRE", "e1", "1"],
        &["PEXPIRE", "e2", "1"],
        &["PEXPIRE", "e3", "1"],
        &["PEXPIRE", "l1", "1"],
        &["PEXPIRE", "l2", "1"],
        &["PEXPIRE", "l3", "1"],
        &["PEXPIRE", "z1", "1"],
        &["PEXPIRE", "z2", "1"],
        &["SLEEP"],
        &["MSETNX", "e3", "x", "e2", "y", "e1", "z"],
        &["MSETNX", "e4", "x", "n", "y"],
        &["LMPOP", "3", "l3", "l1", "nosuch", "LEFT"],
        &["BLPOP", "l2", "nosuch", "0.01"],
        &["ZMPOP", "2", "z2", "z1", "MIN"],
    ],
    &[
        &["RPUSH", "q", "3", "1", "2"],
        &["SET", "w_1", "5"],
        &["SET", "w_2", "x"],
        &[
            "SORT", "q", "BY", "w_*", "GET", "w_*", "GET", "#", "STORE", "out",
        ],
        &["SORT", "nosuch", "STORE", "out"],
        &["SORT", "q", "BY", "nosort", "GET", "h_*->f"],
    ],
];

#[test]
fn scripted_cases_send_the_events_redis_sends() {
    let (densekv, redis, mut twin) = start(0);
    let payloads = payloads(&mut twin.redis);
    let mut listener = Listener::new(&densekv, &redis, PATTERN);
    let restore = |args: &[&str]| -> Cmd {
        let mut cmd = to_cmd(args);
        cmd.args.insert(3, payloads[1].clone());
        cmd
    };
    // RESTORE over an expired key: REPLACE deletes it as any key, else it is looked up.
    let restores = vec![
        cmd!["SET", "r1", "v", "PX", "1"],
        cmd!["SET", "r2", "v", "PX", "1"],
        cmd!["SET", "r3", "v", "PX", "1"],
        cmd!["SLEEP"],
        restore(&["RESTORE", "r1", "0", "REPLACE"]),
        restore(&["RESTORE", "r2", "1", "ABSTTL", "REPLACE"]),
        restore(&["RESTORE", "r3", "0"]),
        restore(&["RESTORE", "r3", "0"]),
    ];
    let mut cases: Vec<Vec<Cmd>> = SCRIPTED
        .iter()
        .map(|case| case.iter().map(|c| to_cmd(c)).collect())
        .collect();
    cases.push(restores);
    for (i, case) in cases.iter().enumerate() {
        twin.one(&cmd!["FLUSHALL"]);
        for part in case.split(|c| c.args[0] == b"SLEEP") {
            twin.run(part);
            std::thread::sleep(Duration::from_millis(5));
        }
        let (ours, theirs) = listener.drain(&mut twin);
        compare(&format!("scripted case {i}"), case, &ours, &theirs);
    }
}

/// The events each subscriber got until one named `last` (inclusive), within `limit`.
fn events_until(c: &mut Client, last: &[u8], limit: Duration) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + limit;
    c.stream.set_read_timeout(Some(limit)).expect("timeout");
    let mut messages = Vec::new();
    while Instant::now() < deadline {
        let frame = c.try_read_reply().expect("an event before the limit");
        let done = channel_of(&frame).as_deref() == Some(last);
        messages.push(frame);
        if done {
            return messages;
        }
    }
    panic!("no {} within {limit:?}", show(last));
}

#[test]
fn active_expiry_sends_expired_for_keys_nobody_reads() {
    let (densekv, redis) = Server::pair(OPTIONS);
    let mut listener = Listener::new(&densekv, &redis, PATTERN);
    for (server, subscriber) in [
        (&densekv, &mut listener.densekv),
        (&redis, &mut listener.redis),
    ] {
        let mut c = server.connect();
        c.cmd(&["SET", "doomed", "v", "PX", "50"]);
        c.cmd(&["SET", "kept", "v"]);
        let got = events_until(
            subscriber,
            b"__keyevent@0__:expired",
            Duration::from_secs(5),
        );
        let names: Vec<String> = got.iter().map(|f| describe(f)).collect();
        let expected = [
            "__keyspace@0__:doomed → new",
            "__keyevent@0__:new → doomed",
            "__keyspace@0__:doomed → set",
            "__keyevent@0__:set → doomed",
            "__keyspace@0__:doomed → expire",
            "__keyevent@0__:expire → doomed",
            "__keyspace@0__:kept → new",
            "__keyevent@0__:new → kept",
            "__keyspace@0__:kept → set",
            "__keyevent@0__:set → kept",
            "__keyspace@0__:doomed → expired",
            "__keyevent@0__:expired → doomed",
        ];
        assert_eq!(names, expected, "{:?}", server.kind);
    }
}

/// The names of the events a server sent while a stream of SETs outgrew its `maxmemory`.
fn eviction_events(server: &Server) -> BTreeSet<String> {
    let mut c = server.connect();
    let mut subscriber = server.connect();
    subscriber.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "memory"])).into_owned();
    let used: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("used_memory");
    c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
    c.cmd(&[
        "CONFIG",
        "SET",
        "maxmemory",
        &(used + (2 << 20)).to_string(),
    ]);
    let value = "v".repeat(1000);
    let mut names = BTreeSet::new();
    subscriber
        .stream
        .set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    for chunk in 0..100 {
        let sets: Vec<Vec<Vec<u8>>> = (0..100)
            .map(|i| {
                let key = format!("key:{}", chunk * 100 + i);
                vec![
                    b"SET".to_vec(),
                    key.into_bytes(),
                    value.clone().into_bytes(),
                ]
            })
            .collect();
        c.pipeline(&sets);
        while let Ok(frame) = subscriber.try_read_reply() {
            let channel = channel_of(&frame).expect("a pmessage");
            names.insert(String::from_utf8_lossy(&channel).into_owned());
        }
        if names.contains("__keyevent@0__:evicted") {
            break;
        }
    }
    names
}

#[test]
fn eviction_sends_evicted() {
    let options = ["--notify-keyspace-events", "KEA"];
    let (densekv, redis) = Server::pair(&options);
    let ours = eviction_events(&densekv);
    let theirs = eviction_events(&redis);
    assert!(
        theirs.contains("__keyevent@0__:evicted"),
        "redis: {theirs:?}"
    );
    assert_eq!(ours, theirs);
}
