//! Differential test of the set commands: one seeded stream of SADD, SREM, SISMEMBER,
//! SMISMEMBER, SCARD, SMEMBERS, SRANDMEMBER, SPOP, SMOVE, SINTER, SINTERCARD, SINTERSTORE,
//! SUNION, SUNIONSTORE, SDIFF, SDIFFSTORE and SSCAN goes to densekv and to redis-server.
//!
//! The pool holds set keys (`s0`…`s11`), plain strings written by SET (so WRONGTYPE paths run)
//! and a few awkward key names. Members overlap on purpose: small and large integers (every
//! intset width, i64 bounds, non-canonical forms like "007" that must stay strings), short
//! strings, edge values (empty, binary, CR LF) and members over 64 and 256 bytes; bulk SADDs
//! push sets across the 128 and 512 thresholds and to 1,000..3,000 members, past what a flat set
//! holds (32 KiB), so small → flat → pages runs. OBJECT ENCODING is compared exactly (Redis 7.0:
//! "intset" or "hashtable"). Bad arguments (arity, counts, numkeys, LIMIT, cursors,
//! options) are mixed in. (The other collection types are not on this branch yet; once merged,
//! their writers belong in the pool too.)
//!
//! Order: SMEMBERS, SINTER, SUNION, SDIFF and a whole-set SPOP are compared sorted. Random picks
//! (SRANDMEMBER, a partial SPOP) by shape; a partial SPOP leaves the two servers with different
//! members, so it is followed by SCARD (exact) and a DEL of that key, which puts them back in
//! step. SSCAN pages differ by design (our small sets answer whole, Redis 7.0's hashtables page),
//! so full SSCAN iterations are compared at checkpoints together with every key's type and
//! members. A densekv-only test checks that random picks are members, distinct where they must
//! be, and roughly uniform.

#[macro_use]
mod support;

use rand::Rng;
use support::diff::{Check, Cmd, Gen, Twin, command_count, seed};
use support::{Client, Server, decode};

const COMMANDS: usize = 150_000;
const BATCH: usize = 500;

fn set_key(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.85) {
        format!("s{}", g.below(12)).into_bytes()
    } else {
        g.key()
    }
}

fn member(g: &mut Gen) -> Vec<u8> {
    match g.below(20) {
        0..=5 => g.rng.gen_range(-60i64..60).to_string().into_bytes(),
        6..=9 => format!("m{}", g.below(60)).into_bytes(),
        10 => g
            .pick(&[
                &b"32767"[..],
                b"32768",
                b"-32768",
                b"-32769",
                b"2147483647",
                b"2147483648",
                b"-2147483649",
                b"9223372036854775807",
                b"-9223372036854775808",
                b"9223372036854775808",
                b"007",
                b"+5",
                b"-0",
                b" 1",
                b"1.0",
            ])
            .to_vec(),
        11 => g.rng.r#gen::<i64>().to_string().into_bytes(),
        12 => g
            .rng
            .gen_range(-100_000i64..100_000)
            .to_string()
            .into_bytes(),
        13 => {
            let n = if g.chance(0.2) {
                g.rng.gen_range(250..262)
            } else {
                g.rng.gen_range(60..70)
            };
            let c = b'a' + g.below(3) as u8;
            vec![c; n]
        }
        14 => g.value(),
        _ => format!("x{}", g.below(300)).into_bytes(),
    }
}

fn members(g: &mut Gen, max: usize) -> Vec<Vec<u8>> {
    let n = g.rng.gen_range(1..=max);
    (0..n).map(|_| member(g)).collect()
}

/// Many members at once, to cross the 128 (small) and 512 (intset) thresholds.
fn bulk_members(g: &mut Gen) -> Vec<Vec<u8>> {
    let n = *g.pick(&[
        100, 127, 128, 129, 200, 511, 512, 513, 600, 1000, 2500, 3000,
    ]);
    let start = g.rng.gen_range(-300i64..300);
    match g.below(3) {
        0 => (0..n)
            .map(|i| (start + i).to_string().into_bytes())
            .collect(),
        1 => (0..n)
            .map(|i| format!("b{}", start + i).into_bytes())
            .collect(),
        _ => (0..n)
            .map(|i| {
                if i % 50 == 49 {
                    format!("b{i}").into_bytes()
                } else {
                    (start * 1000 + i).to_string().into_bytes()
                }
            })
            .collect(),
    }
}

fn count_arg(g: &mut Gen) -> Vec<u8> {
    match g.below(12) {
        0 => g.integer(),
        1 => b"-9223372036854775808".to_vec(),
        2 => g.rng.gen_range(-20i64..0).to_string().into_bytes(),
        3 => g.rng.gen_range(100i64..700).to_string().into_bytes(),
        _ => g.rng.gen_range(0i64..12).to_string().into_bytes(),
    }
}

fn with_keys(name: Vec<u8>, keys: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut a = vec![name];
    a.extend(keys);
    a
}

fn set_keys(g: &mut Gen, max: usize) -> Vec<Vec<u8>> {
    let n = g.rng.gen_range(1..=max);
    (0..n).map(|_| set_key(g)).collect()
}

fn srandmember(g: &mut Gen) -> Vec<Cmd> {
    let key = set_key(g);
    if g.chance(0.3) {
        return vec![Cmd::new(vec![g.name("SRANDMEMBER"), key]).with(Check::Shape)];
    }
    let count = count_arg(g);
    // A count that is not a small negative integer never asks for a huge reply on a set.
    let huge_negative = count.starts_with(b"-") && count.len() > 4;
    if huge_negative && g.chance(0.9) {
        return vec![Cmd::new(vec![
            g.name("SRANDMEMBER"),
            b"nosuchkey".to_vec(),
            count,
        ])];
    }
    if huge_negative {
        return vec![Cmd::new(vec![g.name("SRANDMEMBER"), key, b"x".to_vec()])];
    }
    vec![Cmd::new(vec![g.name("SRANDMEMBER"), key, count]).with(Check::Shape)]
}

fn spop(g: &mut Gen) -> Vec<Cmd> {
    let key = set_key(g);
    match g.below(6) {
        0 => vec![
            Cmd::new(vec![g.name("SPOP"), key.clone(), b"100000".to_vec()]).with(Check::Sorted),
        ],
        1 => {
            let bad = g
                .pick(&[
                    &b"-1"[..],
                    b"x",
                    b"",
                    b"1.5",
                    b"-9223372036854775808",
                    b"9223372036854775808",
                    b"0",
                ])
                .to_vec();
            vec![Cmd::new(vec![g.name("SPOP"), key, bad])]
        }
        2 => vec![Cmd::new(vec![
            g.name("SPOP"),
            key,
            b"1".to_vec(),
            b"junk".to_vec(),
        ])],
        _ => {
            let mut pop = vec![g.name("SPOP"), key.clone()];
            if g.chance(0.5) {
                pop.push(g.rng.gen_range(1..20).to_string().into_bytes());
            }
            vec![
                Cmd::new(pop).with(Check::Shape),
                cmd!["SCARD", key],
                cmd!["DEL", key],
            ]
        }
    }
}

fn sintercard(g: &mut Gen) -> Cmd {
    let keys = set_keys(g, 4);
    let mut a = vec![g.name("SINTERCARD")];
    match g.below(10) {
        0 => a.push(g.integer()),
        1 => a.push((keys.len() + 1).to_string().into_bytes()),
        _ => a.push(keys.len().to_string().into_bytes()),
    }
    a.extend(keys);
    match g.below(6) {
        0 => {
            a.push(g.name("LIMIT"));
            a.push(count_arg(g));
        }
        1 => {
            a.push(g.name("LIMIT"));
            a.push(g.rng.gen_range(0..5).to_string().into_bytes());
        }
        2 => a.push(b"LIMIT".to_vec()),
        3 => a.push(b"BOGUS".to_vec()),
        _ => {}
    }
    Cmd::new(a)
}

fn sscan_forms(g: &mut Gen) -> Cmd {
    let key = set_key(g);
    let cursor = g
        .pick(&[
            &b"0"[..],
            b"abc",
            b" 1",
            b"-1",
            b"18446744073709551616",
            b"",
        ])
        .to_vec();
    let mut a = vec![g.name("SSCAN"), key, cursor];
    match g.below(7) {
        0 => a.extend([b"COUNT".to_vec(), b"0".to_vec()]),
        1 => a.extend([b"COUNT".to_vec(), b"x".to_vec()]),
        2 => a.push(b"MATCH".to_vec()),
        3 => a.extend([b"TYPE".to_vec(), b"set".to_vec()]),
        4 => a.extend([b"BOGUS".to_vec(), b"1".to_vec()]),
        5 => a.extend([b"COUNT".to_vec(), b"-1".to_vec()]),
        _ => a.extend([
            b"MATCH".to_vec(),
            b"*".to_vec(),
            b"COUNT".to_vec(),
            b"1000".to_vec(),
        ]),
    }
    // A valid SSCAN's page is not comparable (see the module doc): compare only its shape.
    Cmd::new(a).with(Check::Shape)
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn next_commands(g: &mut Gen) -> Vec<Cmd> {
    let cmd = match g.below(40) {
        0..=6 => {
            let key = set_key(g);
            let m = members(g, 5);
            Cmd::new(with_keys(
                g.name("SADD"),
                std::iter::once(key).chain(m).collect(),
            ))
        }
        7 => {
            let key = set_key(g);
            let m = bulk_members(g);
            Cmd::new(with_keys(
                g.name("SADD"),
                std::iter::once(key).chain(m).collect(),
            ))
        }
        8..=10 => {
            let key = set_key(g);
            let m = members(g, 4);
            Cmd::new(with_keys(
                g.name("SREM"),
                std::iter::once(key).chain(m).collect(),
            ))
        }
        13 => {
            let key = set_key(g);
            let m = members(g, 4);
            Cmd::new(with_keys(
                g.name("SMISMEMBER"),
                std::iter::once(key).chain(m).collect(),
            ))
        }
        11 => Cmd::new(vec![g.name("OBJECT"), b"ENCODING".to_vec(), set_key(g)]),
        14 | 15 => Cmd::new(vec![g.name("SCARD"), set_key(g)]),
        16 => return vec![Cmd::new(vec![g.name("SMEMBERS"), set_key(g)]).with(Check::Sorted)],
        17 | 18 => return srandmember(g),
        19 | 20 => return spop(g),
        21 => Cmd::new(vec![g.name("SMOVE"), set_key(g), set_key(g), member(g)]),
        22 | 23 => {
            let name = *g.pick(&["SINTER", "SUNION", "SDIFF"]);
            let keys = set_keys(g, 4);
            return vec![Cmd::new(with_keys(g.name(name), keys)).with(Check::Sorted)];
        }
        24 | 25 => {
            let name = *g.pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]);
            let keys = set_keys(g, 4);
            let dst = set_key(g);
            Cmd::new(with_keys(
                g.name(name),
                std::iter::once(dst).chain(keys).collect(),
            ))
        }
        26 => sintercard(g),
        27 => return vec![sscan_forms(g)],
        28 => Cmd::new(vec![g.name("SET"), g.key(), g.value()]),
        29 if g.chance(0.3) => Cmd::new(vec![g.name("SET"), set_key(g), g.value()]),
        30 => Cmd::new(vec![
            g.name("EXPIRE"),
            set_key(g),
            g.rng.gen_range(10_000..1_000_000).to_string().into_bytes(),
        ]),
        31 => return vec![Cmd::new(vec![g.name("TTL"), set_key(g)]).with(Check::Drift(2))],
        32 => Cmd::new(vec![g.name("TYPE"), set_key(g)]),
        33 if g.chance(0.3) => Cmd::new(vec![g.name("DEL"), set_key(g)]),
        34 => Cmd::new(vec![g.name("RENAME"), set_key(g), set_key(g)]),
        35 => Cmd::new(vec![
            g.name("COPY"),
            set_key(g),
            set_key(g),
            b"REPLACE".to_vec(),
        ]),
        36 => {
            // Arity errors of every command.
            let name = *g.pick(&[
                "SADD",
                "SREM",
                "SISMEMBER",
                "SMISMEMBER",
                "SCARD",
                "SMEMBERS",
                "SRANDMEMBER",
                "SPOP",
                "SMOVE",
                "SINTER",
                "SINTERCARD",
                "SINTERSTORE",
                "SUNION",
                "SUNIONSTORE",
                "SDIFF",
                "SDIFFSTORE",
                "SSCAN",
            ]);
            Cmd::new(vec![g.name(name)])
        }
        _ => Cmd::new(vec![g.name("SISMEMBER"), set_key(g), member(g)]),
    };
    vec![g.maybe_break_arity(cmd)]
}

/// Every member of `key` through full SSCAN iterations, sorted and deduplicated.
fn sscan_all(client: &mut Client, key: &[u8], extra: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut cursor = b"0".to_vec();
    let mut found = Vec::new();
    for _ in 0..1_000_000 {
        let mut args: Vec<&[u8]> = vec![b"SSCAN", key, &cursor];
        args.extend_from_slice(extra);
        let reply = decode(&client.command(&args));
        let parts = reply.array();
        let next = parts[0].bulk().to_vec();
        found.extend(parts[1].array().iter().map(|m| m.bulk().to_vec()));
        if next == b"0" {
            found.sort();
            found.dedup();
            return found;
        }
        cursor = next;
    }
    panic!("SSCAN did not finish");
}

/// Compares the type and members of every set key, then full SSCANs, then the keyspace.
fn compare_sets(twin: &mut Twin, pool: &[Vec<u8>]) {
    for i in 0..12 {
        let key = format!("s{i}").into_bytes();
        let t = twin.one(&cmd!["TYPE", key]);
        twin.one(&cmd!["SCARD", key]);
        twin.one(&cmd!["OBJECT", "ENCODING", key]);
        twin.one(&cmd!["SMEMBERS", key].with(Check::Sorted));
        if t == b"+set\r\n" {
            let extras: [&[&[u8]]; 3] = [&[], &[b"COUNT", b"3"], &[b"MATCH", b"*1*"]];
            for extra in extras {
                let ours = sscan_all(&mut twin.densekv, &key, extra);
                let theirs = sscan_all(&mut twin.redis, &key, extra);
                assert!(
                    ours == theirs,
                    "SSCAN {} {extra:?} differs: {} vs {} members",
                    String::from_utf8_lossy(&key),
                    ours.len(),
                    theirs.len()
                );
            }
        }
    }
    twin.checkpoint(pool);
}

fn run_stream(resp3: bool, default_seed: u64, total: usize) {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(default_seed);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    if resp3 {
        // The HELLO replies name different servers; only the protocol switch matters.
        twin.densekv.command(&[b"HELLO", b"3"]);
        twin.redis.command(&[b"HELLO", b"3"]);
    }
    let mut g = Gen::new(seed, Gen::key_pool());
    let mut pool = g.keys.clone();
    pool.extend((0..12).map(|i| format!("s{i}").into_bytes()));
    let mut batches = 0;
    while twin.sent < total {
        let mut batch: Vec<Cmd> = Vec::with_capacity(BATCH + 4);
        while batch.len() < BATCH {
            batch.extend(next_commands(&mut g));
        }
        twin.run(&batch);
        batches += 1;
        if batches % 20 == 0 {
            compare_sets(&mut twin, &pool);
        }
    }
    compare_sets(&mut twin, &pool);
}

#[test]
fn sets_match_redis() {
    run_stream(false, 0x5E7_0001, command_count(COMMANDS));
}

#[test]
fn sets_match_redis_in_resp3() {
    run_stream(true, 0x5E7_0003, command_count(COMMANDS) / 5);
}

/// Random picks are members; SPOP's are distinct and leave exactly the rest; SRANDMEMBER with a
/// positive count is distinct; every member of a set is picked at a rate near 1/n (a loose bound:
/// a member never picked, or picked at 3x its share, fails).
#[test]
fn random_picks_are_members_and_roughly_uniform() {
    let server = Server::densekv(&[]);
    let mut c = server.connect();
    for (key, n, prefix) in [
        ("ints", 300, ""),
        ("small", 100, "m"),
        ("pages", 2000, "m:"),
    ] {
        let all: Vec<Vec<u8>> = (0..n)
            .map(|i| format!("{prefix}{i}").into_bytes())
            .collect();
        let mut args: Vec<&[u8]> = vec![b"SADD", key.as_bytes()];
        args.extend(all.iter().map(Vec::as_slice));
        c.command(&args);
        let mut hits = std::collections::HashMap::new();
        let draws = n * 60;
        let reply = decode(&c.command(&[
            b"SRANDMEMBER",
            key.as_bytes(),
            format!("-{draws}").as_bytes(),
        ]));
        for m in reply.array() {
            let m = m.bulk().to_vec();
            assert!(all.contains(&m), "{key}: picked a non-member");
            *hits.entry(m).or_insert(0usize) += 1;
        }
        assert_eq!(hits.len(), n, "{key}: some member was never picked");
        assert!(
            hits.values().all(|&h| h < 180),
            "{key}: a member was picked far above its share"
        );
        let reply = decode(&c.command(&[b"SRANDMEMBER", key.as_bytes(), b"20"]));
        let mut picked: Vec<Vec<u8>> = reply.array().iter().map(|m| m.bulk().to_vec()).collect();
        picked.sort();
        picked.dedup();
        assert_eq!(picked.len(), 20, "{key}: SRANDMEMBER 20 repeated a member");
        let reply = decode(&c.command(&[b"SPOP", key.as_bytes(), b"37"]));
        let mut popped: Vec<Vec<u8>> = reply.array().iter().map(|m| m.bulk().to_vec()).collect();
        popped.sort();
        popped.dedup();
        assert_eq!(popped.len(), 37, "{key}: SPOP repeated a member");
        let reply = decode(&c.command(&[b"SMEMBERS", key.as_bytes()]));
        let mut rest: Vec<Vec<u8>> = reply.array().iter().map(|m| m.bulk().to_vec()).collect();
        rest.extend(popped);
        rest.sort();
        let mut expected = all.clone();
        expected.sort();
        assert_eq!(rest, expected, "{key}: SPOP lost or invented members");
    }
}

/// SPOP with a count near the size of a large set stays linear (it would take minutes if each
/// pop rescanned the set).
#[test]
fn spop_with_a_large_count_empties_a_large_set() {
    let server = Server::densekv(&[]);
    let mut c = server.connect();
    let members: Vec<Vec<u8>> = (0..200_000)
        .map(|i| format!("e:{i}").into_bytes())
        .collect();
    for chunk in members.chunks(10_000) {
        let mut args: Vec<&[u8]> = vec![b"SADD", b"big"];
        args.extend(chunk.iter().map(Vec::as_slice));
        c.command(&args);
    }
    let reply = decode(&c.command(&[b"SPOP", b"big", b"199990"]));
    assert_eq!(reply.array().len(), 199_990);
    assert_eq!(c.command(&[b"SCARD", b"big"]), b":10\r\n");
    let reply = decode(&c.command(&[b"SPOP", b"big", b"11"]));
    assert_eq!(reply.array().len(), 10);
    assert_eq!(c.command(&[b"EXISTS", b"big"]), b":0\r\n");
}
