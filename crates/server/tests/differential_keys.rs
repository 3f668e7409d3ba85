//! Differential test of the generic key commands: DEL, UNLINK, EXISTS, TYPE, RENAME, RENAMENX,
//! COPY (DB, REPLACE), MOVE, TOUCH, KEYS, SCAN, RANDOMKEY, DBSIZE, SELECT and FLUSHDB, mixed with
//! string writes (and far-future TTLs, which RENAME/COPY/MOVE must carry) on a pool of 50 keys
//! over four databases. Replies are compared byte for byte, KEYS sorted, RANDOMKEY by presence
//! only; every few batches the whole keyspace of the current db is compared with full SCANs.

#[macro_use]
mod support;

use rand::Rng;
use support::Server;
use support::diff::{Check, Cmd, Gen, Twin, command_count, seed};

const COMMANDS: usize = 300_000;
const BATCH: usize = 500;

const PATTERNS: &[&[u8]] = &[
    b"*",
    b"k1*",
    b"k?",
    b"k[0-3]*",
    b"*1",
    b"[^k]*",
    b"\\*",
    b"k[",
    b"*\r*",
    b"k\\1",
    b"k[1]",
    b"?",
    b"*e*s*",
    b"K*",
    b"k[!0-5]",
    b"[a-]*",
    b"*a*a*a*a*a*a*a*b",
];

fn db_arg(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.05) {
        g.pick(&[&b"16"[..], b"-1", b"x", b"", b"9223372036854775807"])
            .to_vec()
    } else {
        g.below(4).to_string().into_bytes()
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn next_command(g: &mut Gen) -> Cmd {
    let args: Vec<Vec<u8>> = match g.below(32) {
        0..=4 => vec![g.name("SET"), g.key(), g.value()],
        5 => vec![
            g.name("SET"),
            g.key(),
            g.value(),
            b"EX".to_vec(),
            g.rng.gen_range(10_000..1_000_000).to_string().into_bytes(),
        ],
        6 => vec![g.name("INCR"), g.key()],
        7 => vec![g.name("APPEND"), g.key(), g.value()],
        8 | 9 => {
            let name = if g.chance(0.5) { "DEL" } else { "UNLINK" };
            let mut a = vec![g.name(name)];
            a.extend(g.keys_up_to(4));
            a
        }
        10 | 11 => {
            let mut a = vec![g.name("EXISTS")];
            a.extend(g.keys_up_to(4));
            a
        }
        12 => vec![g.name("TYPE"), g.key()],
        13 | 14 => {
            let name = if g.chance(0.5) { "RENAME" } else { "RENAMENX" };
            let src = g.key();
            let dst = if g.chance(0.1) { src.clone() } else { g.key() };
            vec![g.name(name), src, dst]
        }
        15 | 16 => {
            let src = g.key();
            let dst = if g.chance(0.1) { src.clone() } else { g.key() };
            let mut a = vec![g.name("COPY"), src, dst];
            for _ in 0..g.below(3) {
                match g.below(5) {
                    0 | 1 => a.push(g.name("REPLACE")),
                    2 | 3 => {
                        a.push(g.name("DB"));
                        a.push(db_arg(g));
                    }
                    _ => a.push(b"DB".to_vec()),
                }
            }
            a
        }
        17 | 18 => vec![g.name("MOVE"), g.key(), db_arg(g)],
        19 => {
            let mut a = vec![g.name("TOUCH")];
            a.extend(g.keys_up_to(4));
            a
        }
        20 => {
            return Cmd::new(vec![g.name("KEYS"), g.pick(PATTERNS).to_vec()]).with(Check::Sorted);
        }
        21 => return Cmd::new(vec![g.name("RANDOMKEY")]).with(Check::Presence),
        22 => vec![g.name("DBSIZE")],
        23 => vec![g.name("SELECT"), db_arg(g)],
        24 if g.chance(0.02) => {
            let mut a = vec![g.name("FLUSHDB")];
            match g.below(4) {
                0 => a.push(g.name("ASYNC")),
                1 => a.push(g.name("SYNC")),
                2 => a.push(b"NOW".to_vec()),
                _ => {}
            }
            a
        }
        25 => {
            // SCAN's argument errors (full iterations are compared at checkpoints).
            let bad: &[&[&[u8]]] = &[
                &[b"SCAN", b"abc"],
                &[b"SCAN", b" 1"],
                &[b"SCAN", b"+"],
                &[b"SCAN", b"1x"],
                &[b"SCAN", b"0", b"COUNT", b"0"],
                &[b"SCAN", b"0", b"COUNT", b"x"],
                &[b"SCAN", b"0", b"MATCH"],
                &[b"SCAN", b"0", b"BOGUS", b"1"],
                &[b"SCAN", b"18446744073709551616"],
            ];
            // Not passed through the arity breaker: a valid SCAN's page is not comparable.
            return Cmd::new(g.pick(bad).iter().map(|a| a.to_vec()).collect());
        }
        26 => {
            return Cmd::new(vec![g.name("TTL"), g.key()]).with(Check::Drift(2));
        }
        27 => vec![g.name("GET"), g.key()],
        28 => vec![g.name("MSET"), g.key(), g.value(), g.key(), g.value()],
        _ => {
            let mut a = vec![g.name("EXISTS")];
            a.extend(g.keys_up_to(2));
            a
        }
    };
    g.maybe_break_arity(Cmd::new(args))
}

#[test]
fn keys_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0x5157_0002);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let mut g = Gen::new(seed, Gen::key_pool());
    let pool = g.keys.clone();
    let total = command_count(COMMANDS);
    let mut batches = 0;
    while twin.sent < total {
        let batch: Vec<Cmd> = (0..BATCH).map(|_| next_command(&mut g)).collect();
        twin.run(&batch);
        batches += 1;
        if batches % 20 == 0 {
            twin.checkpoint(&pool);
        }
    }
    for db in 0..4 {
        twin.one(&cmd!["SELECT", db.to_string()]);
        twin.checkpoint(&pool);
    }
}

/// The cursor forms strtoul accepts, on an empty database (where every cursor ends at 0).
#[test]
fn scan_cursor_parsing_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    for cursor in [
        "0",
        "",
        "+0",
        "-0",
        "-1",
        "18446744073709551615",
        "18446744073709551616",
        "-18446744073709551615",
        " 0",
        "0 ",
        "+",
        "-",
        "0x1",
        "1.0",
    ] {
        twin.one(&cmd!["SCAN", cursor]);
    }
}

/// Redis's `stringmatchlen` matches the empty key only with the empty pattern (its loop never
/// runs for an empty string); densekv's glob never matches an empty string.
#[test]
fn empty_pattern_matches_the_empty_key() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    twin.one(&cmd!["SET", "", "empty"]);
    twin.one(&cmd!["SET", "a", "1"]);
    for pattern in ["", "**", "*?", "a*", "?"] {
        twin.one(&cmd!["KEYS", pattern].with(Check::Sorted));
        let ours = support::scan_all(&mut twin.densekv, &[b"MATCH", pattern.as_bytes()]);
        let theirs = support::scan_all(&mut twin.redis, &[b"MATCH", pattern.as_bytes()]);
        assert!(ours == theirs, "SCAN MATCH {pattern:?} differs");
    }
}

/// SCAN with MATCH on a keyspace large enough to need many calls, with a pattern that would
/// take exponential time in a naive matcher.
#[test]
fn scan_and_keys_on_a_larger_keyspace() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let mut batch = Vec::new();
    for i in 0..20_000 {
        batch.push(cmd!["SET", format!("user:{i}:{}", "a".repeat(i % 40)), "x"]);
    }
    twin.run(&batch);
    twin.one(&cmd!["DBSIZE"]);
    for pattern in [
        "user:1*",
        "*:1?:*",
        "user:[0-4]*",
        "*a*a*a*a*a*a*a*a*a*a*a*a*b",
        "*",
    ] {
        twin.one(&cmd!["KEYS", pattern].with(Check::Sorted));
        let ours = support::scan_all(&mut twin.densekv, &[b"MATCH", pattern.as_bytes()]);
        let theirs = support::scan_all(&mut twin.redis, &[b"MATCH", pattern.as_bytes()]);
        assert!(ours == theirs, "SCAN MATCH {pattern} differs");
    }
    let ours = support::scan_all(&mut twin.densekv, &[b"TYPE", b"list"]);
    assert!(ours.is_empty());
}

/// Redis's SCAN deletes the expired keys it walks over (`scanGenericCommand` calls
/// `expireIfNeeded`), so DBSIZE after a full SCAN no longer counts them. densekv's SCAN skips
/// them without deleting.
#[test]
fn scan_reclaims_expired_keys() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    twin.one(&cmd!["SET", "gone", "v", "PXAT", "1"]);
    twin.one(&cmd!["SET", "kept", "v"]);
    twin.one(&cmd!["DBSIZE"]);
    assert_eq!(
        support::scan_all(&mut twin.densekv, &[]),
        support::scan_all(&mut twin.redis, &[])
    );
    twin.one(&cmd!["DBSIZE"]);
}
