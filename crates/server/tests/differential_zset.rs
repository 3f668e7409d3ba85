//! Differential test of the sorted-set commands against redis-server: ZADD with every option,
//! ZINCRBY, ZREM, scores and ranks, every range form (rank, score, lex; REV, LIMIT, WITHSCORES,
//! STORE), the pops, ZRANDMEMBER (shape only), the set algebra with WEIGHTS/AGGREGATE, ZSCAN's
//! argument errors, in RESP2 and RESP3, on a pool of 10 zset keys grown around the 128-member
//! and 64-byte thresholds, 2 lex keys (all scores 0: Redis leaves lex ranges over mixed scores
//! undefined) and 2 string keys (WRONGTYPE). Bad arguments are mixed in; every few batches each
//! key is compared whole (ZRANGE WITHSCORES, TYPE, a full ZSCAN as a sorted set of pairs).

#[macro_use]
mod support;

use rand::Rng;
use support::diff::{Check, Cmd, Gen, Twin, command_count, seed};
use support::{Client, Server, decode};

const COMMANDS: usize = 120_000;
const BATCH: usize = 400;

const SCORE_EDGES: &[&[u8]] = &[
    b"inf",
    b"-inf",
    b"+inf",
    b"1e3",
    b"-0",
    b"0",
    b"0.1",
    b"1.5",
    b"-2.25",
    b"nan",
    b"abc",
    b"",
    b" 1",
    b"1e400",
    b"3e-5",
    b"1e17",
    b"123456789.125",
    b"1x",
];
const BOUND_EDGES: &[&[u8]] = &[
    b"-inf", b"+inf", b"(1", b"(0", b"(", b"", b"(-inf", b"(inf", b"nan", b"x", b"[1", b"1e400",
    b" 5", b"(1.5",
];
const LEX_EDGES: &[&[u8]] = &[
    b"-", b"+", b"[a", b"(a", b"[m5", b"(m5", b"[", b"(", b"m", b"[zz", b"(m1",
];

fn zkey(g: &mut Gen) -> Vec<u8> {
    match g.below(20) {
        0 => b"s0".to_vec(),
        1 => b"missing".to_vec(),
        _ => format!("z{}", g.below(10)).into_bytes(),
    }
}

fn lexkey(g: &mut Gen) -> Vec<u8> {
    match g.below(12) {
        0 => b"s1".to_vec(),
        1 => b"nolex".to_vec(),
        _ => format!("lex{}", g.below(2)).into_bytes(),
    }
}

fn member(g: &mut Gen) -> Vec<u8> {
    match g.below(40) {
        0 => vec![b'L'; 70],
        1 => b"".to_vec(),
        2 => b"\r\n\0".to_vec(),
        _ => format!("m{}", g.below(220)).into_bytes(),
    }
}

fn score(g: &mut Gen) -> Vec<u8> {
    match g.below(12) {
        0 => g.pick(SCORE_EDGES).to_vec(),
        1 => format!("{}.5", g.rng.gen_range(-50..50)).into_bytes(),
        2 => format!("{:.3}", g.rng.gen_range(-10.0..10.0)).into_bytes(),
        _ => g.rng.gen_range(-20..40).to_string().into_bytes(),
    }
}

fn bound(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.2) {
        return g.pick(BOUND_EDGES).to_vec();
    }
    let n = g.rng.gen_range(-25..45).to_string();
    if g.chance(0.3) {
        format!("({n}").into_bytes()
    } else {
        n.into_bytes()
    }
}

fn lex(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.3) {
        return g.pick(LEX_EDGES).to_vec();
    }
    let m = format!("m{}", g.below(220));
    format!("{}{m}", if g.chance(0.5) { "[" } else { "(" }).into_bytes()
}

fn index(g: &mut Gen) -> Vec<u8> {
    match g.below(10) {
        0 => g.integer(),
        _ => g.rng.gen_range(-150i64..150).to_string().into_bytes(),
    }
}

fn zadd(g: &mut Gen, key: Vec<u8>, lex_only: bool) -> Vec<Vec<u8>> {
    let mut a = vec![g.name("ZADD"), key];
    if !lex_only {
        for opt in ["NX", "XX", "GT", "LT", "CH", "INCR"] {
            if g.chance(0.08) {
                a.push(g.name(opt));
            }
        }
    }
    let pairs = match g.below(10) {
        0 => g.rng.gen_range(50..160),
        1..=3 => g.rng.gen_range(1..10),
        _ => 1,
    };
    for _ in 0..pairs {
        a.push(if lex_only { b"0".to_vec() } else { score(g) });
        a.push(member(g));
    }
    if g.chance(0.02) {
        a.pop();
    }
    a
}

fn range_opts(g: &mut Gen, a: &mut Vec<Vec<u8>>, withscores: bool) {
    if withscores && g.chance(0.5) {
        a.push(g.name("WITHSCORES"));
    }
    if g.chance(0.3) {
        a.push(g.name("LIMIT"));
        a.push(g.rng.gen_range(-2..10).to_string().into_bytes());
        a.push(g.rng.gen_range(-2..20).to_string().into_bytes());
    }
}

fn setop_keys(g: &mut Gen, a: &mut Vec<Vec<u8>>) -> usize {
    let n = g.rng.gen_range(1..4);
    a.push(if g.chance(0.05) {
        g.pick(&[&b"0"[..], b"-1", b"x", b"9"]).to_vec()
    } else {
        n.to_string().into_bytes()
    });
    for _ in 0..n {
        a.push(zkey(g));
    }
    n
}

fn setop_opts(g: &mut Gen, a: &mut Vec<Vec<u8>>, n: usize, withscores: bool) {
    if g.chance(0.3) {
        a.push(g.name("WEIGHTS"));
        for _ in 0..n {
            a.push(match g.below(8) {
                0 => g.pick(SCORE_EDGES).to_vec(),
                _ => g.rng.gen_range(-3..4).to_string().into_bytes(),
            });
        }
    }
    if g.chance(0.3) {
        a.push(g.name("AGGREGATE"));
        a.push(g.pick(&[&b"SUM"[..], b"MIN", b"MAX", b"avg"]).to_vec());
    }
    if withscores && g.chance(0.5) {
        a.push(g.name("WITHSCORES"));
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn next_command(g: &mut Gen) -> Cmd {
    let args: Vec<Vec<u8>> = match g.below(44) {
        0..=7 => {
            let k = zkey(g);
            zadd(g, k, false)
        }
        8 => {
            let k = lexkey(g);
            zadd(g, k, true)
        }
        9 => vec![g.name("ZINCRBY"), zkey(g), score(g), member(g)],
        10 | 11 => {
            let mut a = vec![g.name("ZREM"), zkey(g)];
            for _ in 0..g.rng.gen_range(1..5) {
                a.push(member(g));
            }
            a
        }
        13 => vec![g.name("ZSCORE"), zkey(g), member(g)],
        14 => vec![g.name("ZMSCORE"), zkey(g), member(g), member(g)],
        15 => {
            let name = g.pick(&["ZRANK", "ZREVRANK"]).to_string();
            vec![g.name(&name), zkey(g), member(g)]
        }
        16 => vec![g.name("ZCOUNT"), zkey(g), bound(g), bound(g)],
        17 => vec![g.name("ZLEXCOUNT"), lexkey(g), lex(g), lex(g)],
        18 | 19 => {
            let mut a = vec![g.name("ZRANGE"), zkey(g), index(g), index(g)];
            if g.chance(0.3) {
                a.push(g.name("REV"));
            }
            if g.chance(0.5) {
                a.push(g.name("WITHSCORES"));
            }
            if g.chance(0.03) {
                a.extend([b"LIMIT".to_vec(), b"0".to_vec(), b"1".to_vec()]);
            }
            a
        }
        20 => {
            let rev = g.chance(0.4);
            let mut a = vec![
                g.name("ZRANGE"),
                zkey(g),
                bound(g),
                bound(g),
                g.name("BYSCORE"),
            ];
            if rev {
                a.push(g.name("REV"));
            }
            range_opts(g, &mut a, true);
            a
        }
        21 => {
            let mut a = vec![g.name("ZRANGE"), lexkey(g), lex(g), lex(g), g.name("BYLEX")];
            if g.chance(0.4) {
                a.push(g.name("REV"));
            }
            let ws = g.chance(0.05);
            range_opts(g, &mut a, ws);
            a
        }
        22 => {
            let name = g.pick(&["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"]).to_string();
            let mut a = vec![g.name(&name), zkey(g), bound(g), bound(g)];
            range_opts(g, &mut a, true);
            a
        }
        23 => {
            let name = g.pick(&["ZRANGEBYLEX", "ZREVRANGEBYLEX"]).to_string();
            let mut a = vec![g.name(&name), lexkey(g), lex(g), lex(g)];
            range_opts(g, &mut a, false);
            a
        }
        24 => {
            let mut a = vec![g.name("ZREVRANGE"), zkey(g), index(g), index(g)];
            if g.chance(0.5) {
                a.push(g.name("WITHSCORES"));
            }
            a
        }
        25 => {
            let mut a = vec![g.name("ZRANGESTORE"), zkey(g), zkey(g)];
            match g.below(3) {
                0 => a.extend([index(g), index(g)]),
                1 => {
                    a.extend([bound(g), bound(g), g.name("BYSCORE")]);
                    range_opts(g, &mut a, false);
                }
                _ => a.extend([index(g), index(g), g.name("REV")]),
            }
            a
        }
        26 => vec![g.name("ZREMRANGEBYRANK"), zkey(g), index(g), index(g)],
        27 => vec![g.name("ZREMRANGEBYSCORE"), zkey(g), bound(g), bound(g)],
        28 => vec![g.name("ZREMRANGEBYLEX"), lexkey(g), lex(g), lex(g)],
        29 | 30 => {
            let name = g.pick(&["ZPOPMIN", "ZPOPMAX"]).to_string();
            let mut a = vec![g.name(&name), zkey(g)];
            if g.chance(0.5) {
                a.push(match g.below(6) {
                    0 => g.integer(),
                    _ => g.below(5).to_string().into_bytes(),
                });
            }
            a
        }
        31 => {
            let mut a = vec![g.name("ZMPOP")];
            setop_keys(g, &mut a);
            a.push(g.pick(&[&b"MIN"[..], b"MAX", b"max", b"mid"]).to_vec());
            if g.chance(0.5) {
                a.push(g.name("COUNT"));
                a.push(g.rng.gen_range(-1..6).to_string().into_bytes());
            }
            a
        }
        32 => {
            let mut a = vec![g.name("ZRANDMEMBER"), zkey(g)];
            if g.chance(0.7) {
                a.push(g.rng.gen_range(-5..300).to_string().into_bytes());
                if g.chance(0.5) {
                    a.push(g.name("WITHSCORES"));
                }
            }
            return Cmd::new(a).with(Check::Shape);
        }
        33 | 34 => {
            let name = g.pick(&["ZUNION", "ZINTER", "ZDIFF"]).to_string();
            let mut a = vec![g.name(&name)];
            let n = setop_keys(g, &mut a);
            if name != "ZDIFF" {
                setop_opts(g, &mut a, n, true);
            } else if g.chance(0.5) {
                a.push(g.name("WITHSCORES"));
            }
            a
        }
        35 | 36 => {
            let name = g
                .pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"])
                .to_string();
            let mut a = vec![g.name(&name), zkey(g)];
            let n = setop_keys(g, &mut a);
            if name != "ZDIFFSTORE" {
                setop_opts(g, &mut a, n, false);
            }
            a
        }
        37 => {
            let mut a = vec![g.name("ZINTERCARD")];
            setop_keys(g, &mut a);
            if g.chance(0.5) {
                a.push(g.name("LIMIT"));
                a.push(g.rng.gen_range(-1..5).to_string().into_bytes());
            }
            a
        }
        38 => {
            let bad: &[&[&[u8]]] = &[
                &[b"ZSCAN", b"z1", b"abc"],
                &[b"ZSCAN", b"z1", b"0", b"COUNT", b"0"],
                &[b"ZSCAN", b"z1", b"0", b"COUNT", b"x"],
                &[b"ZSCAN", b"z1", b"0", b"TYPE", b"zset"],
                &[b"ZSCAN", b"z1", b"0", b"MATCH"],
                &[b"ZSCAN", b"absent", b"0"],
                &[b"ZADD", b"z1", b"NX", b"XX", b"1", b"a"],
                &[b"ZADD", b"z1", b"GT", b"LT", b"1", b"a"],
                &[b"ZADD", b"z1", b"INCR", b"1", b"a", b"2", b"b"],
                &[b"ZADD", b"z1", b"1"],
                &[b"ZINCRBY", b"z1", b"nan", b"a"],
                &[b"ZINCRBY", b"z9", b"inf", b"m1"],
                &[b"ZINCRBY", b"z9", b"-inf", b"m1"],
            ];
            return Cmd::new(g.pick(bad).iter().map(|a| a.to_vec()).collect());
        }
        39 => vec![
            g.name("SET"),
            g.pick(&[&b"s0"[..], b"s1"]).to_vec(),
            g.value(),
        ],
        40 => vec![g.name("DEL"), zkey(g)],
        41 if g.chance(0.1) => vec![g.name("HELLO"), g.pick(&[&b"2"[..], b"3"]).to_vec()],
        _ => vec![g.name("ZCARD"), zkey(g)],
    };
    if args[0].eq_ignore_ascii_case(b"HELLO") {
        // The HELLO reply carries the server's version and id: compare its kind only.
        return Cmd::new(args).with(Check::Shape);
    }
    g.maybe_break_arity(Cmd::new(args))
}

fn zscan_all(client: &mut Client, key: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut cursor = b"0".to_vec();
    for _ in 0..100_000 {
        let raw = client.command(&[b"ZSCAN", key, &cursor, b"COUNT", b"7"]);
        if raw.first() == Some(&b'-') {
            // WRONGTYPE: compared through TYPE and ZRANGE.
            return vec![(raw, Vec::new())];
        }
        let reply = decode(&raw);
        let parts = reply.array();
        cursor = parts[0].bulk().to_vec();
        let items = parts[1].array();
        for pair in items.chunks(2) {
            out.push((pair[0].bulk().to_vec(), pair[1].bulk().to_vec()));
        }
        if cursor == b"0" {
            break;
        }
    }
    out.sort();
    out.dedup();
    out
}

fn compare_all(twin: &mut Twin, pool: &[Vec<u8>]) {
    for key in pool {
        twin.one(&cmd!["TYPE", key]);
        twin.one(&cmd!["ZRANGE", key, "0", "-1", "WITHSCORES"]);
        twin.one(&cmd!["ZCARD", key]);
        let ours = zscan_all(&mut twin.densekv, key);
        let theirs = zscan_all(&mut twin.redis, key);
        assert_eq!(
            ours,
            theirs,
            "ZSCAN of {} differs",
            String::from_utf8_lossy(key)
        );
    }
}

#[test]
fn zset_commands_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0x25e7_0001);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let mut pool: Vec<Vec<u8>> = (0..10).map(|i| format!("z{i}").into_bytes()).collect();
    pool.extend([
        b"lex0".to_vec(),
        b"lex1".to_vec(),
        b"s0".to_vec(),
        b"s1".to_vec(),
    ]);
    let mut g = Gen::new(seed, pool.clone());
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
    // The whole keyspace (the shared checkpoint's SCAN TYPE step assumes string keys only).
    twin.one(&cmd!["KEYS", "*"].with(Check::Sorted));
    twin.one(&cmd!["DBSIZE"]);
    assert!(twin.sent >= total, "sent {} commands", twin.sent);
}

/// Score formatting and parsing edges, one command at a time, in both protocols.
#[test]
fn score_edges_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    for proto in ["2", "3"] {
        twin.one(&cmd!["HELLO", proto].with(Check::Shape));
        for s in [
            "0.1",
            "1e17",
            "1e16",
            "-0",
            "0",
            "1.5e-7",
            "123456789012345678",
            "inf",
            "-inf",
            "2.5",
            "1e308",
            "4e-320",
            "0x10",
            "1e-400",
            "+5",
            ".5",
            "5.",
            "1e",
            "infinity",
        ] {
            twin.one(&cmd!["ZADD", "e", s, "m"]);
            twin.one(&cmd!["ZSCORE", "e", "m"]);
            twin.one(&cmd!["ZRANGE", "e", "0", "-1", "WITHSCORES"]);
            twin.one(&cmd!["ZSCAN", "e", "0"]);
            twin.one(&cmd!["ZPOPMIN", "e", "1"]);
        }
        twin.one(&cmd!["ZADD", "e", "1", "a", "2", "b"]);
        twin.one(&cmd!["ZPOPMAX", "e"]);
        twin.one(&cmd!["ZMPOP", "2", "nope", "e", "MIN", "COUNT", "5"]);
        twin.one(&cmd!["ZMPOP", "1", "e", "MIN"]);
        twin.one(&cmd!["ZRANDMEMBER", "e"]);
        twin.one(&cmd!["ZRANDMEMBER", "e", "3"]);
    }
}
