//! Differential test of the hash commands: one seeded random stream of HSET, HMSET, HSETNX, HGET,
//! HMGET, HGETALL, HDEL, HLEN, HEXISTS, HKEYS, HVALS, HSTRLEN, HINCRBY, HINCRBYFLOAT, HRANDFIELD
//! and HSCAN goes to densekv and to redis-server; replies must match (orders Redis leaves to its
//! encoding compared sorted, random picks by shape, HSCAN by the pairs of a whole scan).
//!
//! Key families steer hashes across every encoding and conversion of `store::types::hash`:
//! `u*` get record-like field names (name, email, …) with the odd long value or integer field
//! (record → small/pages), `n*` integer fields and values (small → ints past 8, ints → pages on a
//! non-integer), `r*` arbitrary binary fields (small → flat around 8, flat → pages on a long
//! value, pages → flat with the shrink at 4), `b*` up to 2,500 fields in bulk HSETs (flat past
//! 512 fields, where OBJECT ENCODING turns "hashtable", then pages or ints past 32 KiB).
//! OBJECT ENCODING is compared exactly: listpack until a hash ever passed 512 fields or 64 B. The usual string pool (`k*` …) gets SET, so hash
//! commands on it reply WRONGTYPE. Every 40 batches the pool is compared whole: HGETALL sorted,
//! HLEN, a full HSCAN (with and without MATCH), TYPE, and the keyspace checkpoint.

#[macro_use]
mod support;

use rand::Rng;
use support::diff::{Check, Cmd, Gen, Twin, command_count, seed};
use support::{Client, Server, Value, decode};

const COMMANDS: usize = 150_000;
const BATCH: usize = 500;

const RECORD_FIELDS: &[&str] = &[
    "name", "email", "age", "city", "created", "zip", "phone", "country", "score", "status",
];

fn hash_key(g: &mut Gen) -> Vec<u8> {
    let family = *g.pick(&["u", "u", "n", "n", "r", "r", "b"]);
    let n = if family == "b" { 3 } else { 8 };
    format!("{family}{}", g.below(n)).into_bytes()
}

fn any_key(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.85) { hash_key(g) } else { g.key() }
}

fn field_for(g: &mut Gen, key: &[u8]) -> Vec<u8> {
    match key.first() {
        Some(b'u') => {
            if g.chance(0.03) {
                g.rng.gen_range(0..20).to_string().into_bytes()
            } else {
                g.pick(RECORD_FIELDS).as_bytes().to_vec()
            }
        }
        Some(b'n') => match g.below(30) {
            0 => b"007".to_vec(),
            1 => b"-0".to_vec(),
            2 => b"-9223372036854775808".to_vec(),
            3 => b"9223372036854775807".to_vec(),
            4 => b"x".to_vec(),
            _ => g.rng.gen_range(-3..24).to_string().into_bytes(),
        },
        Some(b'b') => {
            let i = g.rng.gen_range(0..2500);
            if key == b"b0" {
                i.to_string().into_bytes()
            } else {
                format!("f{i}").into_bytes()
            }
        }
        _ => match g.below(6) {
            0 => b"".to_vec(),
            1 => b"\0\r\n".to_vec(),
            2 => vec![b'F'; 70],
            _ => format!("fld{}", g.below(14)).into_bytes(),
        },
    }
}

fn value_for(g: &mut Gen, key: &[u8]) -> Vec<u8> {
    match key.first() {
        Some(b'u') => match g.below(20) {
            0 => vec![b'v'; g.rng.gen_range(60..70)],
            1 => g.value(),
            2..=8 => g
                .rng
                .gen_range(0..2_000_000_000i64)
                .to_string()
                .into_bytes(),
            _ => format!("val{}", g.below(1000)).into_bytes(),
        },
        Some(b'n' | b'b') => match g.below(40) {
            0 => b"007".to_vec(),
            1 => b"1.5".to_vec(),
            2 => g.integer(),
            _ => g
                .rng
                .gen_range(-5..2_000_000_000i64)
                .to_string()
                .into_bytes(),
        },
        _ => g.value(),
    }
}

fn float_arg(g: &mut Gen) -> Vec<u8> {
    match g.below(8) {
        0 => (*g.pick(&["inf", "-inf", "nan", "", "abc", " 1", "1e400", "0x10"])).into(),
        1 => format!("{}.5", g.rng.gen_range(-1000i64..1000)).into_bytes(),
        2 => format!("{}e2", g.rng.gen_range(-100i64..100)).into_bytes(),
        _ => g.rng.gen_range(-100i64..100).to_string().into_bytes(),
    }
}

fn count_arg(g: &mut Gen) -> Vec<u8> {
    match g.below(12) {
        0 => (*g.pick(&[
            "0",
            "x",
            "-9223372036854775808",
            "9223372036854775807",
            "4611686018427387904",
            "-4611686018427387904",
            "4611686018427387903",
        ]))
        .into(),
        _ => g.rng.gen_range(-12i64..30).to_string().into_bytes(),
    }
}

fn hrandfield(g: &mut Gen, key: Vec<u8>) -> Cmd {
    let mut a = vec![g.name("HRANDFIELD"), key];
    match g.below(4) {
        0 => {}
        1 => a.push(count_arg(g)),
        2 => {
            a.push(count_arg(g));
            a.push(g.name("WITHVALUES"));
        }
        _ => {
            a.push(count_arg(g));
            a.push(g.pick(&[&b"WITHSCORES"[..], b"withvalues", b"x"]).to_vec());
            if g.chance(0.3) {
                a.push(b"extra".to_vec());
            }
        }
    }
    // Counts that would reply billions of entries are only sent where they fail first.
    let huge = a.get(2).is_some_and(|c| {
        c.len() > 3 && c.iter().all(|b| b.is_ascii_digit() || *b == b'-') && a.len() == 3
    });
    if huge {
        a.truncate(2);
    }
    Cmd::new(a).with(Check::Shape)
}

fn hscan_errors(g: &mut Gen, key: Vec<u8>) -> Cmd {
    let mut a = vec![g.name("HSCAN"), key];
    a.push(
        g.pick(&[&b"0"[..], b"abc", b"-1", b"18446744073709551616", b" 1"])
            .to_vec(),
    );
    match g.below(5) {
        0 => a.extend([b"COUNT".to_vec(), b"0".to_vec()]),
        1 => a.extend([b"COUNT".to_vec(), b"x".to_vec()]),
        2 => a.push(b"MATCH".to_vec()),
        3 => a.extend([b"TYPE".to_vec(), b"hash".to_vec()]),
        _ => a.extend([b"MATCH".to_vec(), b"nomatch*".to_vec()]),
    }
    // Cursors of hashtable encodings differ by design: errors exact, scans by shape.
    Cmd::new(a).with(Check::Shape)
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn next_command(g: &mut Gen) -> Cmd {
    let key = any_key(g);
    let args: Vec<Vec<u8>> = match g.below(44) {
        0..=9 => {
            let name = if g.chance(0.9) { "HSET" } else { "HMSET" };
            let mut a = vec![g.name(name), key.clone()];
            let pairs = if key.first() == Some(&b'b') && g.chance(0.3) {
                200
            } else {
                g.rng.gen_range(1..5)
            };
            for _ in 0..pairs {
                a.push(field_for(g, &key));
                a.push(value_for(g, &key));
            }
            if g.chance(0.02) {
                a.pop();
            }
            a
        }
        10 => vec![
            g.name("HSETNX"),
            key.clone(),
            field_for(g, &key),
            value_for(g, &key),
        ],
        11..=14 => vec![g.name("HGET"), key.clone(), field_for(g, &key)],
        15 => {
            let mut a = vec![g.name("HMGET"), key.clone()];
            for _ in 0..g.rng.gen_range(1..5) {
                a.push(field_for(g, &key));
            }
            a
        }
        16 | 17 => {
            return Cmd::new(vec![g.name("HGETALL"), key]).with(Check::SortedPairs);
        }
        18..=21 => {
            let mut a = vec![g.name("HDEL"), key.clone()];
            for _ in 0..g.rng.gen_range(1..4) {
                a.push(field_for(g, &key));
            }
            a
        }
        22 => vec![g.name("OBJECT"), b"ENCODING".to_vec(), key],
        23 => vec![g.name("HEXISTS"), key.clone(), field_for(g, &key)],
        24 => return Cmd::new(vec![g.name("HKEYS"), key]).with(Check::Sorted),
        25 => return Cmd::new(vec![g.name("HVALS"), key]).with(Check::Sorted),
        26 => vec![g.name("HSTRLEN"), key.clone(), field_for(g, &key)],
        27..=29 => {
            let by = if g.chance(0.9) {
                g.rng.gen_range(-50i64..50).to_string().into_bytes()
            } else {
                g.integer()
            };
            vec![g.name("HINCRBY"), key.clone(), field_for(g, &key), by]
        }
        30 | 31 => vec![
            g.name("HINCRBYFLOAT"),
            key.clone(),
            field_for(g, &key),
            float_arg(g),
        ],
        32 | 33 => return hrandfield(g, key),
        34 => return hscan_errors(g, key),
        35 => {
            // A scan that covers everything in one reply on both servers for compact hashes;
            // large ones are compared by the checkpoint's full scans.
            return Cmd::new(vec![g.name("HSCAN"), key, b"0".to_vec()]).with(Check::Shape);
        }
        36 | 37 => vec![g.name("SET"), g.key(), g.value()],
        38 if g.chance(0.3) => vec![g.name("DEL"), key],
        39 if g.chance(0.2) => vec![g.name("EXPIRE"), key, b"1000".to_vec()],
        40 => vec![g.name("EXISTS"), key],
        41 => vec![g.name("TYPE"), key],
        _ => vec![g.name("HLEN"), key],
    };
    g.maybe_break_arity(Cmd::new(args))
}

/// Every (field, value) a full HSCAN returns, sorted (duplicates removed: a hashtable scan may
/// repeat an entry across a resize).
fn hscan_all(client: &mut Client, key: &[u8], extra: &[&[u8]]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut cursor = b"0".to_vec();
    let mut pairs = Vec::new();
    for _ in 0..100_000 {
        let mut args: Vec<&[u8]> = vec![b"HSCAN", key, &cursor];
        args.extend_from_slice(extra);
        let reply = decode(&client.command(&args));
        let Value::Array(parts) = reply else {
            panic!("HSCAN reply {reply:?}");
        };
        let items = parts[1].array();
        for pair in items.chunks(2) {
            pairs.push((pair[0].bulk().to_vec(), pair[1].bulk().to_vec()));
        }
        cursor = parts[0].bulk().to_vec();
        if cursor == b"0" {
            pairs.sort();
            pairs.dedup();
            return pairs;
        }
    }
    panic!("HSCAN did not finish");
}

fn compare_hashes(twin: &mut Twin, keys: &[Vec<u8>]) {
    for key in keys {
        twin.one(&cmd!["TYPE", key]);
        twin.one(&cmd!["HLEN", key]);
        twin.one(&cmd!["OBJECT", "ENCODING", key]);
        twin.one(&cmd!["HGETALL", key].with(Check::SortedPairs));
        for extra in [&[][..], &[&b"MATCH"[..], b"*1*"], &[&b"COUNT"[..], b"3"]] {
            let ours = hscan_all(&mut twin.densekv, key, extra);
            let theirs = hscan_all(&mut twin.redis, key, extra);
            assert!(
                ours == theirs,
                "HSCAN {} differs (after #{}):\n densekv {ours:?}\n redis   {theirs:?}",
                String::from_utf8_lossy(key),
                twin.sent
            );
        }
    }
}

fn hash_pool() -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for family in ["u", "n", "r"] {
        keys.extend((0..8).map(|i| format!("{family}{i}").into_bytes()));
    }
    keys.extend((0..3).map(|i| format!("b{i}").into_bytes()));
    keys
}

#[test]
fn hashes_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0x4A54_0001);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let mut g = Gen::new(seed, Gen::key_pool());
    let hashes = hash_pool();
    let mut pool = g.keys.clone();
    pool.extend(hashes.iter().cloned());
    let total = command_count(COMMANDS);
    let mut batch = Vec::with_capacity(BATCH);
    let mut batches = 0;
    while twin.sent < total {
        batch.clear();
        batch.extend((0..BATCH).map(|_| next_command(&mut g)));
        twin.run(&batch);
        batches += 1;
        if batches % 40 == 0 {
            compare_hashes(&mut twin, &hashes);
            twin.checkpoint(&pool);
        }
    }
    compare_hashes(&mut twin, &hashes);
    twin.checkpoint(&pool);
}

/// Orders and reply shapes pinned by name: insertion order of small hashes (records and small
/// maps keep Redis's listpack order), RESP3 maps and nested HRANDFIELD pairs, error texts.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn hash_edge_cases_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let script: Vec<Cmd> = vec![
        cmd![
            "HSET",
            "user:1",
            "name",
            "ann",
            "email",
            "a@example.com",
            "age",
            "42"
        ],
        cmd!["HSET", "user:1", "city", "Oslo", "created", "1700000000"],
        cmd!["HGETALL", "user:1"],
        cmd!["HDEL", "user:1", "email"],
        cmd!["HSET", "user:1", "email", "b@example.com"],
        cmd!["HKEYS", "user:1"],
        cmd!["HVALS", "user:1"],
        cmd!["HSCAN", "user:1", "0"],
        cmd!["HSCAN", "user:1", "0", "MATCH", "c*"],
        cmd!["HSET", "user:1", "7", "seven"],
        cmd!["HGETALL", "user:1"],
        cmd!["HSET", "user:1", "long", "x".repeat(100)],
        cmd!["HGETALL", "user:1"].with(Check::SortedPairs),
        cmd!["HSET", "m", "1", "1", "2", "2", "3", "3"],
        cmd!["HGETALL", "m"],
        cmd!["HINCRBY", "m", "2", "40"],
        cmd!["HINCRBY", "m", "2", "9223372036854775807"],
        cmd!["HINCRBY", "m", "2", "x"],
        cmd!["HSET", "m", "s", "abc", "f", "1.5", "z", "007"],
        cmd!["HINCRBY", "m", "s", "1"],
        cmd!["HINCRBY", "m", "z", "1"],
        cmd!["HINCRBYFLOAT", "m", "f", "0.1"],
        cmd!["HINCRBYFLOAT", "m", "s", "1"],
        cmd!["HINCRBYFLOAT", "m", "f", "inf"],
        cmd!["HINCRBYFLOAT", "m", "f", "abc"],
        cmd!["HSET", "m", "big", "1e4932"],
        cmd!["HINCRBYFLOAT", "m", "big", "1e4932"],
        cmd!["HINCRBYFLOAT", "m", "new", "3.0e3"],
        // A small map moves an overwritten pair to its end (Redis keeps its place).
        cmd!["HGETALL", "m"].with(Check::SortedPairs),
        cmd!["HSTRLEN", "m", "z"],
        cmd!["HSTRLEN", "m", "2"],
        cmd!["HSETNX", "m", "1", "x"],
        cmd!["HSETNX", "m", "9", "x"],
        cmd!["HSET", "m", "odd"],
        cmd!["HMSET", "m", "a", "1", "b"],
        cmd!["HRANDFIELD", "m", "-9223372036854775808"],
        cmd!["HRANDFIELD", "m", "4611686018427387904", "WITHVALUES"],
        cmd!["HRANDFIELD", "m", "1", "WITHSCORES"],
        cmd!["HRANDFIELD", "m", "0"],
        cmd!["HRANDFIELD", "missing", "5"],
        cmd!["HRANDFIELD", "missing"],
        cmd!["HSCAN", "missing", "0", "COUNT", "0"],
        cmd!["HSCAN", "m", "0", "COUNT", "0"],
        cmd!["HSCAN", "m", "x"],
        cmd!["SET", "str", "v"],
        cmd!["HSCAN", "str", "0", "COUNT", "0"],
        cmd!["HINCRBY", "str", "f", "x"],
        cmd!["HINCRBY", "str", "f", "1"],
        cmd!["HINCRBYFLOAT", "str", "f", "nan"],
        cmd!["HGET", "str", "f"],
        cmd!["HGETALL", "missing"],
        cmd![
            "HDEL", "m", "1", "2", "3", "s", "f", "z", "big", "new", "9", "a"
        ],
        cmd!["EXISTS", "m"],
    ];
    for c in &script {
        twin.one(c);
    }
    // The same hashes in RESP3 (maps, nested pairs) on one fresh connection each.
    let mut d = densekv.connect();
    let mut r = redis.connect();
    d.cmd(&["HELLO", "3"]);
    r.cmd(&["HELLO", "3"]);
    for c in [
        &["HGETALL", "user:1"][..],
        &["HSET", "small", "a", "1", "b", "2"],
        &["HGETALL", "small"],
        &["HRANDFIELD", "small", "2", "WITHVALUES"],
        // One field: the random picks are all the same pair, so the nesting is compared exactly.
        &["HSET", "one", "a", "1"],
        &["HRANDFIELD", "one", "-3", "WITHVALUES"],
        &["HGETALL", "missing"],
        &["HRANDFIELD", "missing"],
        &["HGET", "missing", "f"],
    ] {
        let (ours, theirs) = (d.cmd(c), r.cmd(c));
        let sorted = |v: Vec<u8>| {
            let mut lines: Vec<Vec<u8>> = v.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            lines.sort();
            lines
        };
        // HGETALL of user:1 (converted to pages) and HRANDFIELD orders are compared as lines.
        assert_eq!(sorted(ours), sorted(theirs), "{c:?}");
    }
}
