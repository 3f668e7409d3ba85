//! Differential test of the list commands: one seeded random stream of LPUSH, RPUSH, LPUSHX,
//! RPUSHX, LPOP, RPOP (with and without COUNT), LLEN, LINDEX, LSET, LRANGE, LTRIM, LREM, LINSERT,
//! LPOS (RANK, COUNT, MAXLEN), RPOPLPUSH, LMOVE and LMPOP goes to densekv and to redis-server;
//! every reply must be the same bytes. Part of the stream runs in RESP3 (HELLO 3), where the
//! null and null-array replies of LPOP/LMPOP/LPOS differ from RESP2.
//!
//! Keys come from a pool of 24 (some awkward: empty, CR LF, binary, 300 bytes); plain strings
//! are SET on pool keys now and then so the WRONGTYPE paths run, and hashes, sets and sorted sets
//! too when this densekv has those commands. Elements are drawn from a six-word alphabet (so LREM,
//! LPOS and LINSERT find matches), the usual edge values, sizes around the codec's varint step
//! (127/128 bytes) and, rarely, larger than an 8 KiB chunk; bulk pushes of up to 300 elements
//! make lists span several chunks, and LTRIM/LREM/pops then split, drain and merge them.
//! Arguments are broken now and then (non-integers, out-of-range counts, bad options, arity).
//! Every 20 batches the whole pool is compared: the key set (Twin::checkpoint) and every key's
//! LRANGE 0 -1.

#[macro_use]
mod support;

use rand::Rng;
use support::Server;
use support::diff::{Check, Cmd, Gen, Twin, command_count, seed};

const COMMANDS: usize = 120_000;
const BATCH: usize = 400;

const WORDS: &[&[u8]] = &[b"a", b"b", b"c", b"xyz", b"", b"7"];

fn pool() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..18).map(|i| format!("l{i}").into_bytes()).collect();
    keys.extend([
        b"".to_vec(),
        b"\r\n".to_vec(),
        b"\0bin\xff".to_vec(),
        vec![b'L'; 300],
        b"s0".to_vec(),
        b"s1".to_vec(),
    ]);
    keys
}

fn element(g: &mut Gen) -> Vec<u8> {
    match g.below(100) {
        0..=59 => g.pick(WORDS).to_vec(),
        60..=79 => g.value(),
        80..=84 => vec![b'm'; g.rng.gen_range(125..131)],
        85 if g.chance(0.05) => vec![b'h'; g.rng.gen_range(8000..9000)],
        86..=89 => vec![b'w'; g.rng.gen_range(300..2000)],
        _ => format!("e{}", g.below(1000)).into_bytes(),
    }
}

fn index(g: &mut Gen) -> Vec<u8> {
    match g.below(10) {
        0 => g.integer(),
        1..=3 => g.rng.gen_range(-400i64..400).to_string().into_bytes(),
        _ => g.rng.gen_range(-12i64..12).to_string().into_bytes(),
    }
}

fn count(g: &mut Gen) -> Vec<u8> {
    match g.below(10) {
        0 => g.integer(),
        1 => b"-1".to_vec(),
        2 => g.rng.gen_range(0..400).to_string().into_bytes(),
        _ => g.below(6).to_string().into_bytes(),
    }
}

fn side(g: &mut Gen) -> Vec<u8> {
    match g.below(20) {
        0 => b"UP".to_vec(),
        1..=9 => g.name("LEFT"),
        _ => g.name("RIGHT"),
    }
}

fn push(g: &mut Gen, name: &str) -> Vec<Vec<u8>> {
    let mut a = vec![g.name(name), g.key()];
    let n = if g.chance(0.03) {
        g.rng.gen_range(50..300)
    } else {
        g.rng.gen_range(1..5)
    };
    a.extend((0..n).map(|_| element(g)));
    a
}

fn lpos(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut a = vec![g.name("LPOS"), g.key(), element(g)];
    for _ in 0..g.below(4) {
        match g.below(7) {
            0 | 1 => {
                a.push(g.name("RANK"));
                a.push(if g.chance(0.8) {
                    g.rng.gen_range(-4i64..5).to_string().into_bytes()
                } else {
                    g.integer()
                });
            }
            2 | 3 => {
                a.push(g.name("COUNT"));
                a.push(count(g));
            }
            4 | 5 => {
                a.push(g.name("MAXLEN"));
                a.push(count(g));
            }
            _ => a.push(if g.chance(0.5) {
                b"RANK".to_vec()
            } else {
                b"BOGUS".to_vec()
            }),
        }
    }
    a
}

fn lmpop(g: &mut Gen) -> Vec<Vec<u8>> {
    let n = g.rng.gen_range(1..4);
    let numkeys = match g.below(20) {
        0 => b"0".to_vec(),
        1 => b"-1".to_vec(),
        2 => b"x".to_vec(),
        3 => (n + 1).to_string().into_bytes(),
        4 => b"100".to_vec(),
        _ => n.to_string().into_bytes(),
    };
    let mut a = vec![g.name("LMPOP"), numkeys];
    a.extend((0..n).map(|_| g.key()));
    a.push(side(g));
    match g.below(6) {
        0 | 1 => {}
        2 => {
            a.push(g.name("COUNT"));
            a.push(count(g));
            if g.chance(0.2) {
                a.push(b"COUNT".to_vec());
                a.push(b"1".to_vec());
            }
        }
        3 => a.push(b"COUNT".to_vec()),
        _ => {
            a.push(g.name("COUNT"));
            a.push(g.rng.gen_range(1..10).to_string().into_bytes());
        }
    }
    a
}

/// A write of another type on a pool key (strings always; the others when densekv has them).
fn foreign(g: &mut Gen, collections: bool) -> Vec<Vec<u8>> {
    let key = g.key();
    match g.below(if collections { 4 } else { 1 }) {
        0 => vec![b"SET".to_vec(), key, g.value()],
        1 => vec![b"HSET".to_vec(), key, b"f".to_vec(), g.value()],
        2 => vec![b"SADD".to_vec(), key, g.value()],
        _ => vec![b"ZADD".to_vec(), key, b"1".to_vec(), g.value()],
    }
}

fn next_command(g: &mut Gen, collections: bool) -> Cmd {
    let args: Vec<Vec<u8>> = match g.below(45) {
        0..=4 => push(g, "LPUSH"),
        5..=9 => push(g, "RPUSH"),
        10 => push(g, "LPUSHX"),
        11 => push(g, "RPUSHX"),
        12..=14 => vec![g.name("LPOP"), g.key()],
        15..=17 => vec![g.name("RPOP"), g.key()],
        18 => vec![g.name("LPOP"), g.key(), count(g)],
        19 => vec![g.name("RPOP"), g.key(), count(g)],
        20 | 21 => vec![g.name("LINDEX"), g.key(), index(g)],
        22 | 23 => vec![g.name("LSET"), g.key(), index(g), element(g)],
        24..=27 => vec![g.name("LRANGE"), g.key(), index(g), index(g)],
        28 => vec![g.name("LTRIM"), g.key(), index(g), index(g)],
        29 | 30 => {
            let c = if g.chance(0.8) {
                g.rng.gen_range(-3i64..4).to_string().into_bytes()
            } else {
                g.integer()
            };
            vec![g.name("LREM"), g.key(), c, element(g)]
        }
        31 | 32 => {
            let place = match g.below(10) {
                0 => b"middle".to_vec(),
                1..=4 => g.name("BEFORE"),
                _ => g.name("AFTER"),
            };
            vec![g.name("LINSERT"), g.key(), place, element(g), element(g)]
        }
        33 | 34 => lpos(g),
        35 => vec![g.name("RPOPLPUSH"), g.key(), g.key()],
        36 | 37 => vec![g.name("LMOVE"), g.key(), g.key(), side(g), side(g)],
        38 | 39 => lmpop(g),
        40 => foreign(g, collections),
        41 if g.chance(0.3) => vec![g.name("DEL"), g.key()],
        42 => vec![g.name("TYPE"), g.key()],
        43 => vec![g.name("EXISTS"), g.key()],
        _ => vec![g.name("LLEN"), g.key()],
    };
    g.maybe_break_arity(Cmd::new(args))
}

/// Whether densekv knows HSET, SADD and ZADD (the other collection types may not be merged).
fn has_collections(twin: &mut Twin) -> bool {
    ["HSET", "SADD", "ZADD"].iter().all(|name| {
        let reply = twin.densekv.cmd(&["COMMAND", "INFO", name]);
        !reply.starts_with(b"*1\r\n$-1") && !reply.starts_with(b"*1\r\n_")
    })
}

/// Full-state comparison: the key set, then every pool key's whole list (WRONGTYPE for others).
fn compare_state(twin: &mut Twin, pool: &[Vec<u8>]) {
    twin.checkpoint(pool);
    let ranges: Vec<Cmd> = pool.iter().map(|k| cmd!["LRANGE", k, "0", "-1"]).collect();
    twin.run(&ranges);
}

#[test]
fn lists_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0x1157_0002);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let collections = has_collections(&mut twin);
    let pool = pool();
    let mut g = Gen::new(seed, pool.clone());
    let total = command_count(COMMANDS);
    let mut batch = Vec::with_capacity(BATCH);
    let mut batches = 0;
    let mut resp3 = false;
    while twin.sent < total {
        // A quarter of the stream in RESP3, switched by batches.
        if resp3 != (batches % 8 >= 6) {
            resp3 = !resp3;
            let proto = if resp3 { "3" } else { "2" };
            twin.densekv.cmd(&["HELLO", proto]);
            twin.redis.cmd(&["HELLO", proto]);
        }
        batch.clear();
        batch.extend((0..BATCH).map(|_| next_command(&mut g, collections)));
        twin.run(&batch);
        batches += 1;
        if batches % 20 == 0 {
            compare_state(&mut twin, &pool);
        }
        // Keep lists from growing without bound: trim everything now and then.
        if batches % 50 == 0 {
            let trims: Vec<Cmd> = pool.iter().map(|k| cmd!["LTRIM", k, "0", "400"]).collect();
            twin.run(&trims);
        }
    }
    compare_state(&mut twin, &pool);
}

/// Deterministic cases worth pinning by name (the random stream covers them too).
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn list_edge_cases_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let big = "x".repeat(9000);
    let script: Vec<Cmd> = vec![
        cmd!["LPOP", "none"],
        cmd!["LPOP", "none", "0"],
        cmd!["LPOP", "none", "-1"],
        cmd!["LPOP", "none", "x"],
        cmd!["LPOP", "none", "1", "2"],
        cmd!["RPUSH", "l", "a", "b", "c", "a", "b", "c"],
        cmd!["LPOP", "l", "0"],
        cmd!["RPOP", "l", "2"],
        cmd!["LPOS", "l", "b", "RANK", "0"],
        cmd!["LPOS", "l", "b", "RANK", "-9223372036854775808"],
        cmd![
            "LPOS",
            "l",
            "b",
            "RANK",
            "-9223372036854775808",
            "COUNT",
            "2"
        ],
        cmd!["LPOS", "l", "b", "COUNT", "-1"],
        cmd!["LPOS", "l", "b", "MAXLEN", "-1"],
        cmd!["LPOS", "l", "b", "COUNT", "0", "RANK", "-1"],
        cmd!["LPOS", "l", "a", "MAXLEN", "1", "COUNT", "0"],
        cmd!["LPOS", "l", "b", "RANK"],
        cmd!["LPOS", "none", "b", "COUNT", "1"],
        cmd!["LSET", "none", "0", "x"],
        cmd!["LSET", "l", "100", "x"],
        cmd!["LSET", "l", "x", "x"],
        cmd!["LINDEX", "none", "x"],
        cmd!["LINDEX", "l", "x"],
        cmd!["LINSERT", "l", "middle", "a", "x"],
        cmd!["LINSERT", "none", "before", "a", "x"],
        cmd!["LINSERT", "l", "AFTER", "nope", "x"],
        cmd!["LMPOP", "0", "l", "LEFT"],
        cmd!["LMPOP", "2", "l", "LEFT"],
        cmd!["LMPOP", "1", "l", "LEFT", "COUNT", "0"],
        cmd!["LMPOP", "1", "l", "LEFT", "COUNT", "1", "COUNT", "1"],
        cmd!["LMPOP", "2", "none", "l", "RIGHT", "COUNT", "10"],
        cmd!["LMPOP", "1", "none", "RIGHT"],
        cmd!["SET", "s", "v"],
        cmd!["LMOVE", "none", "s", "LEFT", "LEFT"],
        cmd!["RPUSH", "l", "z"],
        cmd!["LMOVE", "l", "s", "LEFT", "LEFT"],
        cmd!["LMOVE", "l", "l", "LEFT", "RIGHT"],
        cmd!["LMOVE", "l", "l2", "UP", "RIGHT"],
        cmd!["RPOPLPUSH", "l", "l"],
        cmd!["LRANGE", "l", "0", "-1"],
        cmd!["RPUSH", "big", &big, "a", &big, "b"],
        cmd!["LINSERT", "big", "BEFORE", "b", &big],
        cmd!["LSET", "big", "1", &big],
        cmd!["LRANGE", "big", "0", "-1"],
        cmd!["LREM", "big", "-2", &big],
        cmd!["LRANGE", "big", "-100", "100"],
        cmd!["LTRIM", "big", "5", "1"],
        cmd!["EXISTS", "big"],
        cmd!["LTRIM", "none", "0", "1"],
        cmd!["LREM", "none", "0", "a"],
        cmd!["LREM", "l", "x", "a"],
        cmd!["LPUSHX", "none", "a"],
        cmd!["LPUSH", "s", "a"],
        cmd!["LLEN", "s"],
        cmd!["HELLO", "3"].with(Check::Shape),
        cmd!["LPOP", "none"],
        cmd!["LPOP", "none", "1"],
        cmd!["LMPOP", "1", "none", "LEFT"],
        cmd!["LPOS", "l", "nope"],
        cmd!["LINDEX", "l", "100"],
        cmd!["LMOVE", "none", "l", "LEFT", "LEFT"],
    ];
    for c in &script {
        twin.one(c);
    }
}
