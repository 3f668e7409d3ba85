//! Differential test of the HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG,
//! PFSELFTEST) against redis-server 7.0.15 (Debian's build, with the CVE-2025-32023 fix, which
//! makes any run past register 16383 corrupt): every reply, and the raw bytes of every HLL
//! (GET), must be the same.
//!
//! * `streams_match_redis`: a seeded random stream over a pool of eight HLL keys and two other
//!   values — PFADD of up to 300 elements (so keys cross from sparse to dense), PFCOUNT of one
//!   and of several keys, PFMERGE, PFDEBUG ENCODING/DECODE/TODENSE/GETREG, GET, OBJECT
//!   ENCODING, DEL, SET of non-HLL strings, APPEND of a VAL opcode (a sparse HLL with trailing
//!   junk, a dense one of the wrong length), and `CONFIG SET hll-sparse-max-bytes` on both.
//!   Over its second half (without OBJECT ENCODING and EXISTS, which densekv does not count as
//!   keyspace hits and misses yet) the hits, misses and change counter (`dirty`) must move alike.
//! * `corrupt_strings_match_redis`: hand-made strings (bad magic, short header, encoding 2…255,
//!   dense of the wrong length, dense registers above 51 — the estimate's 2^63 case —, sparse
//!   runs short of or past 16384, a cut XZERO, a stale cache on junk, tiny `embstr` HLLs) and
//!   seeded mutations of valid HLLs (bytes flipped, opcodes injected, cut, runs that overflow,
//!   the encoding byte changed), each stored afresh before every command that reads or writes
//!   it, so that every command meets the string as SET left it. (A sparse string whose last
//!   opcode is an XZERO cut in half is the one place the copy matters: Redis reads the byte
//!   past its end, which after Redis rewrote such a string holds a byte of the rewrite, not
//!   the NUL, from one command to the next; densekv follows it within a command only.)
//! * `dump_restore_crosses_servers`: DUMP from each server RESTOREd into both, then PFCOUNT,
//!   PFADD and GET on both.
//! * `millions_of_elements_count_the_same`: 3,000,000 elements (PFADD of 1,000 each,
//!   pipelined) over four keys; PFCOUNT of each, of their union, PFMERGE, and the dense bytes.
//! * `keyspace_events_match_redis`: `new`, `pfadd`, `keymiss`, `expired` (and none for PFCOUNT's
//!   cache or PFDEBUG), in order, with a key's TTL kept through every kind of write.
//! * `aof_records_what_redis_records`: the incremental AOF files hold the same commands (PFCOUNT
//!   when it refreshed the cache, PFDEBUG when it made an HLL dense, no PFADD that failed).
//! * `selftest_passes`: PFSELFTEST is +OK on both.
//!
//! The seed is fixed; `DENSEKV_SEED` and `DENSEKV_DIFF_COMMANDS` change the stream.

#[macro_use]
mod support;

use rand::Rng;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use support::diff::{Cmd, Gen, Twin, command_count, seed};
use support::{Client, Server, Value, decode};

const COMMANDS: usize = 60_000;
const BATCH: usize = 200;
const HLL_KEYS: [&str; 8] = ["h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"];
/// hll-sparse-max-bytes values the stream sets (0 and 20: every write promotes).
const MAX_BYTES: [&str; 6] = ["0", "20", "300", "3000", "12000", "100000"];

const HEADER: usize = 16;

fn element(g: &mut Gen, range: u64) -> Vec<u8> {
    match g.below(10) {
        0 => {
            let n = g.below(20);
            (0..n).map(|_| g.rng.r#gen::<u8>()).collect()
        }
        1 => g.rng.r#gen::<u64>().to_le_bytes().to_vec(),
        _ => g.rng.gen_range(0..range).to_string().into_bytes(),
    }
}

fn hll_key(g: &mut Gen) -> String {
    match g.below(20) {
        0 => "s0".into(),
        1 => "l0".into(),
        2 => "missing".into(),
        _ => HLL_KEYS[g.below(HLL_KEYS.len())].into(),
    }
}

fn keys(g: &mut Gen, max: usize) -> Vec<String> {
    (0..g.rng.gen_range(1..=max)).map(|_| hll_key(g)).collect()
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn next_command(g: &mut Gen, introspect: bool) -> Cmd {
    let key = hll_key(g);
    let mut pick = g.below(100);
    if !introspect && matches!(pick, 80..=82 | 90) {
        pick = 62;
    }
    let mut args: Vec<Vec<u8>> = match pick {
        0..=34 => {
            let mut a = vec![g.name("PFADD"), key.into_bytes()];
            let n = match g.below(10) {
                0 => 0,
                1..=6 => g.rng.gen_range(1..10),
                _ => g.rng.gen_range(10..300),
            };
            let range = *g.pick(&[100u64, 10_000, 1_000_000_000]);
            a.extend((0..n).map(|_| element(g, range)));
            a
        }
        35..=46 => vec![g.name("PFCOUNT"), key.into_bytes()],
        47..=54 => {
            let mut a = vec![g.name("PFCOUNT")];
            a.extend(keys(g, 4).into_iter().map(String::into_bytes));
            a
        }
        55..=61 => {
            let mut a = vec![g.name("PFMERGE"), key.into_bytes()];
            a.extend(keys(g, 3).into_iter().map(String::into_bytes));
            a
        }
        62..=71 => vec![b"GET".to_vec(), key.into_bytes()],
        72..=79 => {
            let sub = *g.pick(&[
                "ENCODING", "DECODE", "TODENSE", "ENCODING", "DECODE", "GETREG",
            ]);
            vec![g.name("PFDEBUG"), g.name(sub), key.into_bytes()]
        }
        80..=82 => vec![b"OBJECT".to_vec(), b"ENCODING".to_vec(), key.into_bytes()],
        83..=85 => vec![b"DEL".to_vec(), key.into_bytes()],
        86 => vec![b"SET".to_vec(), key.into_bytes(), g.value()],
        87 => vec![b"APPEND".to_vec(), key.into_bytes(), b"\x80\x00".to_vec()],
        88 => {
            let v = *g.pick(&MAX_BYTES);
            vec![
                b"CONFIG".to_vec(),
                b"SET".to_vec(),
                b"hll-sparse-max-bytes".to_vec(),
                v.into(),
            ]
        }
        89 => vec![b"PFDEBUG".to_vec(), b"NOPE".to_vec(), key.into_bytes()],
        90 => vec![b"EXISTS".to_vec(), key.into_bytes()],
        _ => {
            let mut a = vec![g.name("PFADD"), key.into_bytes()];
            a.extend((0..g.below(4)).map(|_| element(g, 50)));
            a
        }
    };
    if g.chance(0.005) {
        // Arity errors: PFADD / PFCOUNT / PFMERGE alone, PFDEBUG with a missing or extra word.
        args.truncate(1);
    }
    Cmd::new(args)
}

/// One INFO field as a number.
fn info_number(c: &mut Client, section: &str, field: &str) -> i64 {
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", section])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
        .trim()
        .parse()
        .expect("a number")
}

#[test]
fn streams_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0x4411);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let mut g = Gen::new(seed, Vec::new());
    twin.one(&cmd!["SET", "s0", "not an hll"]);
    twin.one(&cmd!["RPUSH", "l0", "a"]);
    let total = command_count(COMMANDS);
    let fields = [
        ("stats", "keyspace_hits"),
        ("stats", "keyspace_misses"),
        ("persistence", "rdb_changes_since_last_save"),
    ];
    let mut before = Vec::new();
    let mut encodings = std::collections::HashMap::<Vec<u8>, usize>::new();
    while twin.sent < total {
        // The second half leaves out OBJECT ENCODING and EXISTS, which densekv does not yet
        // count as keyspace hits and misses: over it, the counters must move alike.
        let introspect = twin.sent < total / 2;
        if !introspect && before.is_empty() {
            before = fields
                .iter()
                .map(|(section, field)| {
                    let ours = info_number(&mut twin.densekv, section, field);
                    (ours, info_number(&mut twin.redis, section, field))
                })
                .collect();
        }
        let batch: Vec<Cmd> = (0..BATCH)
            .map(|_| next_command(&mut g, introspect))
            .collect();
        twin.run(&batch);
        for key in HLL_KEYS {
            let reply = twin.one(&cmd!["PFDEBUG", "ENCODING", key]);
            *encodings.entry(reply).or_insert(0) += 1;
        }
    }
    // The stream must have met both encodings often.
    for reply in [&b"+sparse\r\n"[..], b"+dense\r\n"] {
        let seen = encodings.get(reply).copied().unwrap_or(0);
        assert!(
            seen > total / BATCH,
            "{} seen {seen} times",
            support::show(reply)
        );
    }
    for key in HLL_KEYS {
        twin.one(&cmd!["GET", key]);
    }
    for ((section, field), (ours_before, theirs_before)) in fields.iter().zip(before) {
        let ours = info_number(&mut twin.densekv, section, field) - ours_before;
        let theirs = info_number(&mut twin.redis, section, field) - theirs_before;
        assert_eq!(
            ours, theirs,
            "{field} moved by {ours} on densekv, {theirs} on redis"
        );
    }
}

/// An HLL header: the encoding byte and the cached cardinality (stale when `card` is None).
fn header(encoding: u8, card: Option<u64>) -> Vec<u8> {
    let mut h = b"HYLL".to_vec();
    h.push(encoding);
    h.extend_from_slice(&[0, 0, 0]);
    h.extend_from_slice(&card.unwrap_or(1 << 63).to_le_bytes());
    h
}

fn sparse_of(ops: &[u8]) -> Vec<u8> {
    let mut s = header(1, None);
    s.extend_from_slice(ops);
    s
}

/// A dense HLL whose registers all hold `value`.
fn dense_all(value: u8) -> Vec<u8> {
    let mut d = header(0, None);
    let v = u32::from(value);
    let three = v | v << 6 | v << 12 | v << 18;
    for _ in 0..4096 {
        d.extend_from_slice(&three.to_le_bytes()[..3]);
    }
    d
}

/// The hand-made cases: a name and the string.
fn crafted() -> Vec<(&'static str, Vec<u8>)> {
    let mut dense_long = dense_all(3);
    dense_long.push(0);
    let mut dense_short = dense_all(3);
    dense_short.pop();
    let mut dense_mixed = dense_all(2);
    dense_mixed[HEADER + 100] = 0xff;
    dense_mixed[HEADER + 7000] = 0xcc;
    let many_xzero: Vec<u8> = [0x7f, 0xff].repeat(300);
    vec![
        ("empty", b"".to_vec()),
        ("short", b"HYLL".to_vec()),
        ("header-only-sparse", header(1, None)),
        ("header-only-sparse-cached", header(1, Some(7))),
        (
            "bad-magic",
            [b"HYLX".as_slice(), &header(1, None)[4..], &[0x7f, 0xff]].concat(),
        ),
        ("encoding-2", [header(2, None), vec![0x7f, 0xff]].concat()),
        (
            "encoding-255",
            [header(255, Some(3)), vec![0x7f, 0xff]].concat(),
        ),
        ("dense-short", dense_short),
        ("dense-long", dense_long),
        ("dense-0", dense_all(0)),
        ("dense-51", dense_all(51)),
        ("dense-63", dense_all(63)),
        ("dense-mixed", dense_mixed),
        (
            "dense-cached",
            [header(0, Some(42)), dense_all(1)[HEADER..].to_vec()].concat(),
        ),
        ("sparse-empty", sparse_of(&[0x7f, 0xff])),
        (
            "sparse-cached-valid",
            [header(1, Some(0)), vec![0x7f, 0xff]].concat(),
        ),
        ("sparse-short-runs", sparse_of(&[0x7f, 0xfe])),
        ("sparse-trailing-val", sparse_of(&[0x7f, 0xff, 0x80])),
        ("sparse-trailing-zero", sparse_of(&[0x7f, 0xff, 0x00])),
        ("sparse-val-overflow", sparse_of(&[0x7f, 0xfd, 0x83])),
        (
            "sparse-xzero-overflow",
            sparse_of(&[0x7f, 0xff, 0x7f, 0xff]),
        ),
        ("sparse-many-xzero", sparse_of(&many_xzero)),
        ("sparse-cut-xzero", sparse_of(&[0x7f])),
        ("sparse-cut-xzero-valid", sparse_of(&[0x40, 0xfe, 0x7f])),
        (
            "sparse-vals",
            sparse_of(&[0xfc, 0xfc, 0x80, 0x81, 0x7f, 0xf5]),
        ),
        ("sparse-zeros", sparse_of(&[0x3f; 256])),
        (
            "sparse-junk-cached",
            [header(1, Some(99)), b"junk".to_vec()].concat(),
        ),
        ("tiny-embstr", [header(1, None), vec![0x7f, 0xff]].concat()),
        ("integer", b"1234567890123456".to_vec()),
        ("text", b"hello".to_vec()),
    ]
}

/// Seeded mutations of valid HLLs read from redis-server.
fn mutants(rng: &mut SmallRng, valid: &[Vec<u8>], n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let mut s = valid[rng.gen_range(0..valid.len())].clone();
            for _ in 0..rng.gen_range(1..4) {
                mutate(rng, &mut s);
            }
            s
        })
        .collect()
}

fn mutate(rng: &mut SmallRng, s: &mut Vec<u8>) {
    let at = rng.gen_range(0..s.len().max(1));
    match rng.gen_range(0..8) {
        0 if !s.is_empty() => s[at] ^= 1 << rng.gen_range(0..8),
        1 if !s.is_empty() => s[at] = rng.r#gen(),
        2 => {
            let op: &[u8] = match rng.gen_range(0..4) {
                0 => &[0x7f, 0xff],
                1 => &[0x83],
                2 => &[0x00],
                _ => &[0xfc],
            };
            let at = at.clamp(HEADER.min(s.len()), s.len());
            s.splice(at..at, op.iter().copied());
        }
        3 => s.truncate(rng.gen_range(HEADER.min(s.len())..=s.len())),
        4 if s.len() > 4 => s[4] = *[0u8, 1, 2, 0x81].get(rng.gen_range(0..4)).unwrap_or(&1),
        5 if s.len() >= HEADER => s[15] ^= 0x80,
        6 => s.extend_from_slice(&[0x7f, 0xff]),
        _ => {
            if s.len() > HEADER + 2 {
                let at = rng.gen_range(HEADER..s.len() - 1);
                s.remove(at);
            }
        }
    }
}

/// The reads of the string at `c`, then each write on a fresh copy of it (SET before each) and
/// the bytes it left; `v` is a valid sparse HLL and `w` a valid dense one.
fn corrupt_session(twin: &mut Twin, value: &[u8]) {
    let reads: [&[&str]; 8] = [
        &["PFCOUNT", "c"],
        &["PFCOUNT", "c", "v"],
        &["PFCOUNT", "v", "c", "w"],
        &["PFDEBUG", "ENCODING", "c"],
        &["PFDEBUG", "DECODE", "c"],
        &["OBJECT", "ENCODING", "c"],
        &["PFMERGE", "d", "c", "w"],
        &["GET", "d"],
    ];
    let writes: [&[&str]; 7] = [
        &["PFADD", "c", "a"],
        &["PFADD", "c", "a", "b", "c", "d", "e", "f", "g", "h"],
        &["PFMERGE", "c", "v"],
        &["PFMERGE", "c", "w"],
        &["PFDEBUG", "TODENSE", "c"],
        &["PFDEBUG", "GETREG", "c"],
        &["PFCOUNT", "c"],
    ];
    let set = Cmd::new(vec![b"SET".to_vec(), b"c".to_vec(), value.to_vec()]);
    let mut batch = vec![set.clone()];
    batch.extend(
        reads
            .iter()
            .map(|r| Cmd::new(r.iter().map(|a| a.as_bytes().to_vec()).collect())),
    );
    for w in writes {
        batch.push(set.clone());
        batch.push(Cmd::new(w.iter().map(|a| a.as_bytes().to_vec()).collect()));
        batch.push(cmd!["GET", "c"]);
        batch.push(cmd!["OBJECT", "ENCODING", "c"]);
    }
    twin.run(&batch);
}

#[test]
fn corrupt_strings_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0x4412);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    twin.one(&cmd!["PFADD", "v", "x", "y", "z"]);
    twin.one(&cmd!["PFADD", "w", "1", "2", "3"]);
    twin.one(&cmd!["PFDEBUG", "TODENSE", "w"]);
    for (name, value) in crafted() {
        eprintln!("case {name}");
        corrupt_session(&mut twin, &value);
    }
    // Valid HLLs of several sizes, as redis-server writes them, to mutate.
    let mut valid = Vec::new();
    for (i, n) in [0usize, 1, 3, 20, 200, 1500, 6000].into_iter().enumerate() {
        let key = format!("src{i}");
        let mut add = vec![b"PFADD".to_vec(), key.clone().into_bytes()];
        add.extend((0..n).map(|j| format!("e{j}").into_bytes()));
        twin.one(&Cmd::new(add));
        let bytes = decode(&twin.one(&cmd!["GET", key])).bulk().to_vec();
        valid.push(bytes);
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    for value in mutants(&mut rng, &valid, 2000) {
        corrupt_session(&mut twin, &value);
    }
}

#[test]
fn dump_restore_crosses_servers() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let sizes = [0usize, 1, 10, 300, 2500, 20_000];
    for (i, n) in sizes.into_iter().enumerate() {
        let mut add = vec![b"PFADD".to_vec(), format!("k{i}").into_bytes()];
        add.extend((0..n).map(|j| format!("{j}").into_bytes()));
        twin.one(&Cmd::new(add));
        twin.one(&cmd!["PFCOUNT", format!("k{i}")]);
    }
    for (i, _) in sizes.iter().enumerate() {
        let key = format!("k{i}");
        let from_redis = decode(&twin.redis.command(&[b"DUMP", key.as_bytes()]))
            .bulk()
            .to_vec();
        let from_densekv = decode(&twin.densekv.command(&[b"DUMP", key.as_bytes()]))
            .bulk()
            .to_vec();
        for (name, payload) in [("r", from_redis), ("d", from_densekv)] {
            let copy = format!("{name}{i}");
            twin.one(&Cmd::new(vec![
                b"RESTORE".to_vec(),
                copy.clone().into_bytes(),
                b"0".to_vec(),
                payload,
            ]));
            twin.run(&[
                cmd!["GET", copy],
                cmd!["PFCOUNT", copy],
                cmd!["PFDEBUG", "ENCODING", copy],
                cmd!["PFADD", copy, "new", "elements", "1", "2", "3"],
                cmd!["PFCOUNT", copy, key],
                cmd!["GET", copy],
                cmd!["PFCOUNT", copy],
            ]);
        }
    }
}

/// Element `i` of the big stream: decimal, 8 bytes binary, or a string of 1 to 24 bytes, so
/// every tail length of the hash is met.
fn big_element(i: u64, out: &mut Vec<u8>) {
    out.clear();
    match i % 3 {
        0 => out.extend_from_slice(i.to_string().as_bytes()),
        1 => out.extend_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes()),
        _ => {
            let len = 1 + (i % 24) as usize;
            out.extend((0..len).map(|j| b'a' + ((i >> (j % 8)) as u8 % 26)));
            out.extend_from_slice(i.to_string().as_bytes());
        }
    }
}

#[test]
fn millions_of_elements_count_the_same() {
    const ELEMENTS: u64 = 3_000_000;
    const PER_COMMAND: u64 = 1_000;
    const KEYS: [&str; 4] = ["m0", "m1", "m2", "m3"];
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let mut batch = Vec::new();
    let mut element = Vec::new();
    for command in 0..ELEMENTS / PER_COMMAND {
        // Keys overlap: element ranges repeat across keys, so the union is smaller than the sum.
        let key = KEYS[(command % 4) as usize];
        let base = (command / 2) * PER_COMMAND;
        let mut args = vec![b"PFADD".to_vec(), key.as_bytes().to_vec()];
        for i in base..base + PER_COMMAND {
            big_element(i, &mut element);
            args.push(element.clone());
        }
        batch.push(Cmd::new(args));
        if batch.len() == 100 {
            twin.run(&batch);
            batch.clear();
        }
    }
    twin.run(&batch);
    let mut checks: Vec<Cmd> = KEYS.iter().map(|k| cmd!["PFCOUNT", k]).collect();
    checks.extend([
        cmd!["PFCOUNT", "m0", "m1", "m2", "m3"],
        cmd!["PFCOUNT", "m0", "m2"],
        cmd!["PFMERGE", "mall", "m0", "m1", "m2", "m3"],
        cmd!["PFCOUNT", "mall"],
        cmd!["GET", "mall"],
        cmd!["GET", "m1"],
        cmd!["PFDEBUG", "GETREG", "m2"],
    ]);
    twin.run(&checks);
    let union = decode(&twin.densekv.cmd(&["PFCOUNT", "mall"]));
    let Value::Int(count) = union else {
        panic!("PFCOUNT replies an integer")
    };
    // Half the elements are distinct (each range goes to two keys).
    assert!((count - 1_500_000).abs() < 30_000, "union estimate {count}");
}

/// The `pmessage` frames up to the sentinel's.
fn events(c: &mut Client) -> Vec<Vec<u8>> {
    let mut messages = Vec::new();
    loop {
        let frame = c.read_reply();
        if frame.windows(8).any(|w| w == b"sentinel") {
            return messages;
        }
        messages.push(frame);
    }
}

#[test]
fn keyspace_events_match_redis() {
    let options = ["--notify-keyspace-events", "KEAnm"];
    let (densekv, redis) = Server::pair(&options);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let mut subscribers = [densekv.connect(), redis.connect()];
    for s in &mut subscribers {
        s.cmd(&["PSUBSCRIBE", "__key*__:*"]);
    }
    let script = [
        cmd!["PFADD", "a"],
        cmd!["PFADD", "a", "x"],
        cmd!["PFADD", "a", "x"],
        cmd!["PFCOUNT", "a"],
        cmd!["PFCOUNT", "a"],
        cmd!["PFCOUNT", "nope"],
        cmd!["PFCOUNT", "a", "nope", "nope2"],
        cmd!["PFMERGE", "b", "a", "nope"],
        cmd!["PFMERGE", "b", "a"],
        cmd!["PFDEBUG", "TODENSE", "b"],
        cmd!["PFDEBUG", "GETREG", "a"],
        cmd!["SET", "s", "text"],
        cmd!["PFADD", "s", "x"],
        cmd!["PFMERGE", "c", "s"],
        // Runs over registers 0 … 8191 only: PFADD writes until an element lands past them.
        cmd![
            "SET",
            "t",
            b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x5f\xff".as_slice()
        ],
        cmd!["PFADD", "t", "a", "b", "c"],
        // Writes keep a key's TTL: sparse rewrites, dense edits in place, the cache.
        cmd!["PFADD", "ttl", "a"],
        cmd!["EXPIREAT", "ttl", "4000000000"],
        cmd!["PFADD", "ttl", "b", "c"],
        cmd!["EXPIRETIME", "ttl"],
        cmd!["PFCOUNT", "ttl"],
        cmd!["PFMERGE", "ttl", "a"],
        cmd!["PFDEBUG", "TODENSE", "ttl"],
        cmd!["PFADD", "ttl", "d", "e", "f"],
        cmd!["PFCOUNT", "ttl"],
        cmd!["EXPIRETIME", "ttl"],
        cmd!["PSETEX", "e", "1", "x"],
    ];
    for c in &script {
        twin.one(c);
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    twin.one(&cmd!["PFADD", "e", "y"]);
    twin.one(&cmd!["PUBLISH", "__keyspace@0__:sentinel", "end"]);
    let [ours, theirs] = subscribers.map(|mut s| events(&mut s));
    let show = |m: &[Vec<u8>]| m.iter().map(|f| support::show(f)).collect::<Vec<_>>();
    assert_eq!(show(&ours), show(&theirs));
}

#[test]
fn aof_records_what_redis_records() {
    use support::persist::{densekv_in, redis_aof_in, temp_dir};
    let (dir_d, dir_r) = (temp_dir("hll", "aof-d"), temp_dir("hll", "aof-r"));
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let densekv = densekv_in(&dir_d, &aof);
    let redis = redis_aof_in(&dir_r, &["--appendfsync", "always"]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let script = [
        cmd!["PFADD", "a", "x", "y"],
        cmd!["PFADD", "a", "x"],
        cmd!["PFCOUNT", "a"],
        cmd!["PFCOUNT", "a"],
        cmd!["PFCOUNT", "a", "b"],
        cmd!["PFMERGE", "b", "a"],
        cmd!["PFDEBUG", "TODENSE", "b"],
        cmd!["PFDEBUG", "TODENSE", "b"],
        cmd!["PFDEBUG", "GETREG", "a"],
        cmd!["PFDEBUG", "ENCODING", "a"],
        cmd![
            "SET",
            "t",
            b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x5f\xff".as_slice()
        ],
        cmd!["PFADD", "t", "a", "b", "c", "d", "e", "f", "g", "h"],
        cmd!["PFADD", "new"],
    ];
    for c in &script {
        twin.one(c);
    }
    assert_eq!(aof_commands(&dir_d), aof_commands(&dir_r));
    drop(twin);
    drop((densekv, redis));
    for dir in [dir_d, dir_r] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The commands of `dir`'s incremental AOF files, as text.
fn aof_commands(dir: &std::path::Path) -> Vec<String> {
    let aof_dir = dir.join("appendonlydir");
    let manifest = std::fs::read(aof_dir.join("appendonly.aof.manifest")).expect("a manifest");
    let manifest = persist::aof::parse_manifest(&manifest).expect("the manifest reads");
    let mut commands = Vec::new();
    for file in &manifest.incrs {
        let name = String::from_utf8(file.name.clone()).expect("a UTF-8 name");
        let bytes = std::fs::read(aof_dir.join(name)).expect("an incremental file");
        for item in persist::aof::Commands::new(&bytes) {
            if let Ok(persist::aof::Item::Command(args)) = item {
                let words: Vec<String> = args.iter().map(|a| support::show(a)).collect();
                commands.push(words.join(" "));
            }
        }
    }
    commands
}

#[test]
fn selftest_passes() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    twin.one(&cmd!["PFSELFTEST"]);
    twin.one(&cmd!["PFSELFTEST", "extra"]);
}
