//! Differential test of expiry: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with NX/XX/GT/LT (and
//! invalid combinations), TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST, plus the string commands
//! that set or keep TTLs (SET EX/PX/EXAT/PXAT/KEEPTTL, GETEX, SETEX), sent to densekv and
//! redis-server.
//!
//! Time: no TTL is short enough to run out during the test, so both servers expire the same keys;
//! past times (immediate deletion) and overflowing ones are included. The first half of the
//! stream sets only absolute times, derived from one start time shared by both servers, so
//! EXPIRETIME and PEXPIRETIME must match exactly; the second half mixes in relative times and
//! compares every TTL-family reply within a drift tolerance.

#[macro_use]
mod support;

use support::Server;
use support::diff::{Check, Cmd, Gen, Twin, command_count, seed};

const COMMANDS: usize = 300_000;
const BATCH: usize = 500;

fn flags(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for _ in 0..g.below(3) {
        let flag = *g.pick(&["NX", "XX", "GT", "LT", "nx", "gt", "BOGUS"]);
        if flag != "BOGUS" || g.chance(0.2) {
            out.push(flag.as_bytes().to_vec());
        }
    }
    out
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn next_command(g: &mut Gen, relative: bool) -> Cmd {
    let drift = |c: Cmd, tolerance: i64| c.with(Check::Drift(tolerance));
    let (s_tol, ms_tol) = if relative { (2, 2000) } else { (0, 0) };
    let args: Vec<Vec<u8>> = match g.below(30) {
        0..=3 => vec![g.name("SET"), g.key(), g.value()],
        4 => {
            let (opt, t) = match g.below(if relative { 5 } else { 3 }) {
                0 => ("EXAT", g.at_seconds()),
                1 => ("PXAT", g.at_millis()),
                2 => ("KEEPTTL", Vec::new()),
                3 => ("EX", g.ttl_seconds()),
                _ => ("PX", g.ttl_millis()),
            };
            let mut a = vec![g.name("SET"), g.key(), g.value(), opt.as_bytes().to_vec()];
            if !t.is_empty() {
                a.push(t);
            }
            a
        }
        5..=7 => {
            let mut a = vec![g.name("EXPIREAT"), g.key(), g.at_seconds()];
            a.extend(flags(g));
            a
        }
        8..=10 => {
            let mut a = vec![g.name("PEXPIREAT"), g.key(), g.at_millis()];
            a.extend(flags(g));
            a
        }
        11..=12 if relative => {
            let mut a = vec![g.name("EXPIRE"), g.key(), g.ttl_seconds()];
            a.extend(flags(g));
            a
        }
        13..=14 if relative => {
            let mut a = vec![g.name("PEXPIRE"), g.key(), g.ttl_millis()];
            a.extend(flags(g));
            a
        }
        11..=14 => {
            // Without relative times, only the ones that delete (≤ 0) or fail.
            let name = if g.chance(0.5) { "EXPIRE" } else { "PEXPIRE" };
            let t = g
                .pick(&[&b"0"[..], b"-1", b"-100", b"x", b"9223372036854775807"])
                .to_vec();
            let mut a = vec![g.name(name), g.key(), t];
            a.extend(flags(g));
            a
        }
        // TTL and PTTL count from now, which differs between the servers by the time between
        // their replies.
        15..=16 => return drift(Cmd::new(vec![g.name("TTL"), g.key()]), 2),
        17..=18 => return drift(Cmd::new(vec![g.name("PTTL"), g.key()]), 2000),
        19 => return drift(Cmd::new(vec![g.name("EXPIRETIME"), g.key()]), s_tol),
        20 => return drift(Cmd::new(vec![g.name("PEXPIRETIME"), g.key()]), ms_tol),
        21..=22 => vec![g.name("PERSIST"), g.key()],
        23 => {
            let mut a = vec![g.name("GETEX"), g.key()];
            match g.below(if relative { 5 } else { 3 }) {
                0 => a.push(g.name("PERSIST")),
                1 => a.extend([g.name("EXAT"), g.at_seconds()]),
                2 => a.extend([g.name("PXAT"), g.at_millis()]),
                3 => a.extend([g.name("EX"), g.ttl_seconds()]),
                _ => a.extend([g.name("PX"), g.ttl_millis()]),
            }
            a
        }
        24 if relative => vec![g.name("SETEX"), g.key(), g.ttl_seconds(), g.value()],
        25 => vec![g.name("EXISTS"), g.key()],
        26 => vec![g.name("GET"), g.key()],
        27 => vec![g.name("DEL"), g.key()],
        28 => vec![g.name("APPEND"), g.key(), g.value()],
        _ => vec![g.name("INCR"), g.key()],
    };
    g.maybe_break_arity(Cmd::new(args))
}

#[test]
fn expiry_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0x5157_0003);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let mut g = Gen::new(seed, Gen::key_pool());
    let pool = g.keys.clone();
    let total = command_count(COMMANDS);
    let mut batches = 0;
    while twin.sent < total {
        let relative = twin.sent >= total / 2;
        let batch: Vec<Cmd> = (0..BATCH).map(|_| next_command(&mut g, relative)).collect();
        twin.run(&batch);
        batches += 1;
        if batches % 20 == 0 {
            twin.checkpoint(&pool);
        }
    }
    twin.checkpoint(&pool);
}

/// Pinned cases: flag combinations, overflow, past times, TTL rounding.
#[test]
fn expiry_edge_cases_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let far = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 10_000_000)
        .to_string();
    let script = vec![
        cmd!["SET", "k", "v"],
        cmd!["EXPIRE", "k", "100", "NX", "XX"],
        cmd!["EXPIRE", "k", "100", "GT", "LT"],
        cmd!["EXPIRE", "k", "100", "NX", "GT"],
        cmd!["EXPIRE", "k", "100", "FOO"],
        cmd!["EXPIRE", "k", "100", "XX"],
        cmd!["EXPIRE", "k", "100", "GT"],
        cmd!["EXPIRE", "k", "100", "LT"],
        cmd!["TTL", "k"],
        cmd!["EXPIREAT", "k", &far, "NX"],
        cmd!["EXPIREAT", "k", &far],
        cmd!["EXPIRETIME", "k"],
        cmd!["PEXPIRETIME", "k"],
        cmd!["EXPIREAT", "k", &far, "GT"],
        cmd!["EXPIREAT", "k", &far, "LT"],
        cmd!["PERSIST", "k"],
        cmd!["PERSIST", "k"],
        cmd!["EXPIRE", "k", "100", "LT"],
        cmd!["EXPIRE", "k", "9223372036854775807"],
        cmd!["EXPIRE", "k", "9223372036854775"],
        cmd!["PEXPIRE", "k", "9223372036854775807"],
        cmd!["EXPIREAT", "k", "9223372036854775807"],
        cmd!["PEXPIREAT", "k", "9223372036854775807"],
        cmd!["PEXPIRETIME", "k"],
        cmd!["EXPIRETIME", "k"],
        cmd!["EXPIRE", "k", "-9223372036854775808"],
        cmd!["EXISTS", "k"],
        cmd!["SET", "k", "v"],
        cmd!["EXPIRE", "k", "0", "XX"],
        cmd!["EXPIRE", "k", "0", "NX"],
        cmd!["EXISTS", "k"],
        cmd!["EXPIRE", "missing", "100"],
        cmd!["TTL", "missing"],
        cmd!["PTTL", "missing"],
        cmd!["EXPIRETIME", "missing"],
        cmd!["PERSIST", "missing"],
        cmd!["SET", "k", "v", "EXAT", &far],
        cmd!["SET", "k", "w", "KEEPTTL"],
        cmd!["EXPIRETIME", "k"],
        cmd!["SET", "k", "x"],
        cmd!["EXPIRETIME", "k"],
        cmd!["SET", "k", "v", "PXAT", "1"],
        cmd!["TTL", "k"],
        cmd!["SET", "k", "v"],
        cmd!["EXPIREAT", "k", "1", "GT"],
        cmd!["EXPIREAT", "k", "1", "LT"],
        cmd!["EXISTS", "k"],
        cmd!["EXPIRE", "k", "1.5"],
        cmd!["EXPIRE", "k", ""],
        cmd!["EXPIRE"],
        cmd!["TTL", "a", "b"],
    ];
    for c in &script {
        twin.one(c);
    }
}
