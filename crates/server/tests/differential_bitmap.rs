//! Differential test of the bitmap commands: one seeded random stream of SETBIT, GETBIT,
//! BITCOUNT (no range, BYTE and BIT ranges), BITPOS (every range form), BITOP (AND, OR, XOR,
//! NOT), BITFIELD and BITFIELD_RO (every type width, `#` offsets, SET, GET, INCRBY, OVERFLOW
//! WRAP | SAT | FAIL) goes to densekv and to redis-server, mixed with the string writes that make
//! the bitmaps' other forms (SET of integers and short strings, APPEND, SETRANGE, DEL); every
//! reply must be the same bytes, and every few batches GET and OBJECT ENCODING of every key of
//! the pool are compared too.
//!
//! Keys come from a pool of 12 so that commands collide. Offsets are mostly below 4,000 bits,
//! sometimes up to 2²⁰, and sometimes invalid (negative, not integers, at the 512 MB limit); a
//! separate test pins the limit itself with `proto-max-bulk-len` lowered on both servers, so
//! that no test allocates 512 MB.

#[macro_use]
mod support;

use rand::Rng;
use support::Server;
use support::diff::{Cmd, Gen, Twin, command_count, seed};

const COMMANDS: usize = 150_000;
const BATCH: usize = 500;

fn pool() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..10).map(|i| format!("b{i}").into_bytes()).collect();
    keys.extend([b"".to_vec(), b"\0bin\xff".to_vec()]);
    keys
}

/// A bit offset: usually small, sometimes far, sometimes invalid.
fn offset(g: &mut Gen) -> Vec<u8> {
    match g.below(20) {
        0 => g
            .pick(&[
                &b"-1"[..],
                b"abc",
                b"4294967296",
                b"9223372036854775807",
                b"",
                b"1.5",
                b"+5",
                b"05",
            ])
            .to_vec(),
        1 => g.rng.gen_range(0..1u64 << 20).to_string().into_bytes(),
        2..=5 => g.rng.gen_range(0..64u64).to_string().into_bytes(),
        _ => g.rng.gen_range(0..4000u64).to_string().into_bytes(),
    }
}

/// A range bound: small and signed, in bytes or bits, sometimes extreme or invalid.
fn bound(g: &mut Gen) -> Vec<u8> {
    match g.below(12) {
        0 => g
            .pick(&[
                &b"9223372036854775807"[..],
                b"-9223372036854775808",
                b"x",
                b"-0",
                b"1e2",
            ])
            .to_vec(),
        1..=3 => g.rng.gen_range(-4000i64..4000).to_string().into_bytes(),
        _ => g.rng.gen_range(-70i64..70).to_string().into_bytes(),
    }
}

fn unit(g: &mut Gen) -> Vec<u8> {
    g.pick(&[&b"BIT"[..], b"BYTE", b"bit", b"Byte", b"BITS", b""])
        .to_vec()
}

fn bitcount(g: &mut Gen) -> Vec<Vec<u8>> {
    let mut a = vec![g.name("BITCOUNT"), g.key()];
    a.extend(range(g));
    a
}

/// BITCOUNT's and BITPOS's optional range: none, one bound, two, with a unit, or one word too
/// many.
fn range(g: &mut Gen) -> Vec<Vec<u8>> {
    match g.below(6) {
        0 => vec![],
        1 => vec![bound(g)],
        2 | 3 => vec![bound(g), bound(g)],
        4 => vec![bound(g), bound(g), unit(g)],
        _ => vec![bound(g), bound(g), unit(g), b"BIT".to_vec()],
    }
}

fn bitpos(g: &mut Gen) -> Vec<Vec<u8>> {
    let bit = g
        .pick(&[&b"0"[..], b"1", b"1", b"0", b"2", b"-1", b"x"])
        .to_vec();
    let mut a = vec![g.name("BITPOS"), g.key(), bit];
    a.extend(range(g));
    a
}

fn bitop(g: &mut Gen) -> Vec<Vec<u8>> {
    let op = g
        .pick(&[&b"AND"[..], b"OR", b"XOR", b"NOT", b"and", b"xor", b"NAND"])
        .to_vec();
    let mut a = vec![g.name("BITOP"), op, g.key()];
    let sources = if g.chance(0.3) {
        1
    } else {
        g.rng.gen_range(1..5)
    };
    a.extend((0..sources).map(|_| g.key()));
    a
}

fn field_type(g: &mut Gen) -> Vec<u8> {
    match g.below(20) {
        0 => g
            .pick(&[
                &b"u64"[..],
                b"i65",
                b"i0",
                b"u0",
                b"x8",
                b"",
                b"i",
                b"U8",
                b"i-1",
            ])
            .to_vec(),
        1..=9 => {
            let signed = g.chance(0.5);
            let bits = if signed {
                g.rng.gen_range(1..=64)
            } else {
                g.rng.gen_range(1..=63)
            };
            format!("{}{bits}", if signed { "i" } else { "u" }).into_bytes()
        }
        _ => g
            .pick(&[&b"u8"[..], b"i8", b"u1", b"i64", b"u63", b"i16", b"u4"])
            .to_vec(),
    }
}

fn field_offset(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.25) {
        format!("#{}", g.rng.gen_range(0..40)).into_bytes()
    } else if g.chance(0.05) {
        g.pick(&[&b"#-1"[..], b"#x", b"#", b"-8"]).to_vec()
    } else {
        offset(g)
    }
}

fn field_value(g: &mut Gen) -> Vec<u8> {
    match g.below(4) {
        0 => g.integer(),
        1 => g
            .pick(&[
                &b"9223372036854775807"[..],
                b"-9223372036854775808",
                b"255",
                b"256",
                b"-129",
                b"128",
                b"x",
            ])
            .to_vec(),
        _ => g.rng.gen_range(-300i64..300).to_string().into_bytes(),
    }
}

fn bitfield(g: &mut Gen, readonly: bool) -> Vec<Vec<u8>> {
    let name = if readonly { "BITFIELD_RO" } else { "BITFIELD" };
    let mut a = vec![g.name(name), g.key()];
    for _ in 0..g.rng.gen_range(0..5) {
        match g.below(if readonly { 12 } else { 10 }) {
            0..=2 => a.extend([b"GET".to_vec(), field_type(g), field_offset(g)]),
            3..=4 => a.extend([
                b"SET".to_vec(),
                field_type(g),
                field_offset(g),
                field_value(g),
            ]),
            5..=6 => a.extend([
                b"INCRBY".to_vec(),
                field_type(g),
                field_offset(g),
                field_value(g),
            ]),
            7 | 8 => {
                let mode = g
                    .pick(&[&b"WRAP"[..], b"SAT", b"FAIL", b"fail", b"sat", b"NONE"])
                    .to_vec();
                a.extend([b"OVERFLOW".to_vec(), mode]);
            }
            9 => a.push(
                g.pick(&[&b"GET"[..], b"SET", b"OVERFLOW", b"BOGUS"])
                    .to_vec(),
            ),
            _ => a.extend([b"get".to_vec(), field_type(g), field_offset(g)]),
        }
    }
    a
}

fn next_command(g: &mut Gen) -> Cmd {
    let args: Vec<Vec<u8>> = match g.below(32) {
        0..=5 => {
            let value = g
                .pick(&[&b"1"[..], b"0", b"1", b"0", b"2", b"-1", b"x"])
                .to_vec();
            vec![g.name("SETBIT"), g.key(), offset(g), value]
        }
        6..=8 => vec![g.name("GETBIT"), g.key(), offset(g)],
        9..=11 => bitcount(g),
        12..=14 => bitpos(g),
        15..=16 => bitop(g),
        17..=20 => bitfield(g, false),
        21 => bitfield(g, true),
        22 => vec![g.name("SET"), g.key(), g.value()],
        23 => vec![g.name("APPEND"), g.key(), g.value()],
        24 => {
            let at = g.rng.gen_range(0..600).to_string().into_bytes();
            vec![g.name("SETRANGE"), g.key(), at, g.value()]
        }
        25 => vec![g.name("INCRBY"), g.key(), g.integer()],
        26 => vec![g.name("SADD"), g.key(), b"m".to_vec()],
        27 => vec![g.name("DEL"), g.key()],
        28 => vec![g.name("STRLEN"), g.key()],
        29 => vec![g.name("OBJECT"), b"ENCODING".to_vec(), g.key()],
        _ => vec![g.name("GET"), g.key()],
    };
    g.maybe_break_arity(Cmd::new(args))
}

/// GET and OBJECT ENCODING of every key of the pool, on both servers.
fn compare_values(twin: &mut Twin, pool: &[Vec<u8>]) {
    let mut reads = Vec::new();
    for key in pool {
        reads.push(cmd!["GET", key]);
        reads.push(cmd!["OBJECT", "ENCODING", key]);
    }
    twin.run(&reads);
}

#[test]
fn bitmaps_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0xB175_0001);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let mut g = Gen::new(seed, pool());
    let pool = pool();
    let total = command_count(COMMANDS);
    let mut batch = Vec::with_capacity(BATCH);
    let mut batches = 0;
    while twin.sent < total {
        batch.clear();
        batch.extend((0..BATCH).map(|_| next_command(&mut g)));
        twin.run(&batch);
        batches += 1;
        if batches % 20 == 0 {
            compare_values(&mut twin, &pool);
            twin.checkpoint(&pool);
        }
    }
    compare_values(&mut twin, &pool);
    twin.checkpoint(&pool);
}

/// The documentation's examples, the limits and the error texts, pinned by name.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn bitmap_edge_cases_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let script: Vec<Cmd> = vec![
        cmd!["SET", "mykey", "foobar"],
        cmd!["BITCOUNT", "mykey"],
        cmd!["BITCOUNT", "mykey", "0", "0"],
        cmd!["BITCOUNT", "mykey", "1", "1"],
        cmd!["BITCOUNT", "mykey", "1", "1", "BYTE"],
        cmd!["BITCOUNT", "mykey", "5", "30", "BIT"],
        cmd!["BITCOUNT", "mykey", "0"],
        cmd!["BITCOUNT", "missing", "0"],
        cmd!["SET", "k", b"\xff\xf0\x00"],
        cmd!["SETRANGE", "p", "0", b"\x00\xff\xf0"],
        cmd!["BITPOS", "p", "1"],
        cmd!["BITPOS", "p", "1", "2"],
        cmd!["BITPOS", "p", "1", "2", "-1", "BYTE"],
        cmd!["BITPOS", "p", "1", "7", "15", "BIT"],
        cmd!["BITPOS", "p", "0", "0", "-1"],
        cmd!["BITPOS", "missing", "0"],
        cmd!["BITPOS", "missing", "1"],
        cmd!["BITPOS", "p", "2"],
        cmd!["SET", "ones", b"\xff"],
        cmd!["BITPOS", "ones", "0"],
        cmd!["BITPOS", "ones", "0", "0"],
        cmd!["BITPOS", "ones", "0", "0", "-1"],
        cmd!["SET", "n", "1234"],
        cmd!["GETBIT", "n", "2"],
        cmd!["BITCOUNT", "n"],
        cmd!["OBJECT", "ENCODING", "n"],
        cmd!["SETBIT", "n", "0", "1"],
        cmd!["OBJECT", "ENCODING", "n"],
        cmd!["GET", "n"],
        cmd!["SETBIT", "new", "7", "0"],
        cmd!["GET", "new"],
        cmd!["SETBIT", "new", "-1", "1"],
        cmd!["SETBIT", "new", "4294967296", "1"],
        cmd!["SETBIT", "new", "1", "2"],
        cmd!["SETBIT", "new", "1", "x"],
        cmd!["GETBIT", "new", "4294967296"],
        cmd!["GETBIT", "new", "100000"],
        cmd!["SADD", "set", "a"],
        cmd!["SETBIT", "set", "1", "1"],
        cmd!["GETBIT", "set", "1"],
        cmd!["BITCOUNT", "set"],
        cmd!["BITOP", "AND", "dest", "set"],
        cmd!["BITOP", "NOT", "dest", "k", "k"],
        cmd!["BITOP", "NOT", "dest", "k"],
        cmd!["GET", "dest"],
        cmd!["OBJECT", "ENCODING", "dest"],
        cmd!["BITOP", "OR", "dest", "missing", "missing2"],
        cmd!["EXISTS", "dest"],
        cmd!["BITOP", "NAND", "dest", "k"],
        cmd![
            "BITFIELD", "bf", "SET", "u8", "7", "255", "GET", "u5", "7", "GET", "i16", "0"
        ],
        cmd!["GET", "bf"],
        cmd![
            "BITFIELD", "bf", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "102",
            "1"
        ],
        cmd![
            "BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "i8", "#1", "200"
        ],
        cmd![
            "BITFIELD",
            "bf",
            "SET",
            "i64",
            "0",
            "-9223372036854775808",
            "INCRBY",
            "i64",
            "0",
            "-1"
        ],
        cmd!["BITFIELD", "bf", "GET", "u64", "0"],
        cmd!["BITFIELD", "bf", "GET", "i8", "#-1"],
        cmd!["BITFIELD", "bf", "OVERFLOW", "MAYBE"],
        cmd!["BITFIELD", "bf", "SET", "u8", "0"],
        cmd!["BITFIELD", "bf", "SET", "u8", "0", "x"],
        cmd!["BITFIELD_RO", "bf", "GET", "u8", "0", "SET", "u8", "0", "1"],
        cmd!["BITFIELD_RO", "bf", "GET", "u8", "0", "GET", "i3", "#5"],
        cmd!["BITFIELD_RO", "missing", "GET", "u8", "0"],
        cmd!["BITFIELD", "missing"],
        cmd!["EXISTS", "missing"],
        cmd![
            "BITFIELD", "created", "OVERFLOW", "FAIL", "SET", "u2", "0", "9"
        ],
        cmd!["GET", "created"],
        cmd!["BITFIELD", "set", "GET", "u8", "0"],
        cmd!["BITFIELD_RO", "set", "GET", "u8", "0"],
    ];
    twin.run(&script);
}

/// Offsets at the string limit, with `proto-max-bulk-len` at its 1 MB minimum on both servers:
/// the last addressable bit works and the next is refused, for SETBIT, GETBIT and BITFIELD.
#[test]
fn bit_offsets_stop_at_proto_max_bulk_len() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let last = ((1u64 << 20) * 8 - 1).to_string();
    let past = ((1u64 << 20) * 8).to_string();
    let script: Vec<Cmd> = vec![
        cmd!["CONFIG", "SET", "proto-max-bulk-len", "1048576"],
        cmd!["SETBIT", "big", &past, "1"],
        cmd!["SETBIT", "big", &last, "1"],
        cmd!["STRLEN", "big"],
        cmd!["GETBIT", "big", &last],
        cmd!["GETBIT", "big", &past],
        cmd!["BITCOUNT", "big"],
        cmd!["BITPOS", "big", "1"],
        cmd!["BITFIELD", "big", "GET", "u8", &past],
        cmd![
            "BITFIELD", "big", "GET", "u8", "#131071", "GET", "u8", "#131072"
        ],
        cmd!["BITFIELD", "big", "SET", "i64", "#131071", "-1"],
        cmd!["BITFIELD", "big", "SET", "i64", "#131072", "-1"],
        cmd!["BITCOUNT", "big", "-1", "-1"],
        cmd!["BITCOUNT", "big", "-9", "-1", "BIT"],
    ];
    twin.run(&script);
}
