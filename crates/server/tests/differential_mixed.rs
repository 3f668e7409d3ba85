//! Differential test of the types together: one key pool (41 keys over four databases) holds
//! strings, hashes, lists, sets and sorted sets at once, and one seeded stream sends writes of
//! every type onto every key, so every WRONGTYPE path between types runs (LPUSH on a hash, HSET on
//! a sorted set, GET/INCR/APPEND on collections, SET over a collection…). The per-type tests
//! (`differential_hash.rs`, `_lists`, `_set`, `_zset`) each keep their type on its own keys; this
//! one covers what only happens when the types meet:
//!
//! - generic key commands on collections: DEL, UNLINK, EXISTS, TYPE, RENAME, RENAMENX, COPY (DB,
//!   REPLACE), MOVE, EXPIRE/PEXPIRE/PERSIST with far-future TTLs (TTL and PTTL compared with a
//!   drift), TOUCH, DBSIZE, KEYS, RANDOMKEY (presence), full SCANs with every TYPE filter, OBJECT
//!   ENCODING and MEMORY USAGE (by shape only: the encodings differ by design). Keys hash to
//!   different shards, so RENAME/COPY/MOVE/LMOVE/SMOVE/*STORE between random keys move every
//!   encoding across shards. Now and then a key is grown past its type's conversion thresholds
//!   (hashes of 9+ pairs, of integers only, or with values over 64 bytes, and of 200..2,000 pairs,
//!   through the flat encoding and past it; sets over 128 members, over 512 integers and of
//!   1,000..3,000 members; sorted sets over 128 members or with members over 64 bytes; lists of
//!   hundreds of elements), and cross-type stores (ZUNIONSTORE over sets, SORT … STORE over a
//!   hash) replace keys of another type;
//! - SORT and SORT_RO over lists, sets and sorted sets: numeric (collections holding words then
//!   fail with the conversion error), ALPHA, DESC, LIMIT, `BY w_*`, `BY h_*->f`, `BY nosort`,
//!   `GET #`, `GET w_*`, `GET h_*->f`, `GET k*` (a key of any type: null unless a string), STORE
//!   (then LRANGE of the destination). Elements are drawn mostly from `1 2 3 5 8 a b c`, which
//!   name the pool's weight keys `w_<e>` (mostly numeric strings) and hash keys `h_<e>` (fields `f`
//!   and `g`). Orders Redis leaves undefined are compared as multisets (`Check::Sorted`): a set
//!   with `BY nosort` and no STORE (the sorted key's type is asked first, outside the batch) and
//!   ALPHA with a BY pattern, whose equal weights tie; with LIMIT those pick an undefined subset,
//!   so only the reply's length is compared. ALPHA + BY + STORE stores the ties in an undefined
//!   order too: the destination is then re-sorted `ALPHA STORE` onto itself (a total order), which
//!   puts both servers back in step, and compared. Everything else is exact;
//! - MULTI/EXEC queueing commands of every type, SORT and blocking pops (BLPOP, BRPOP, BLMOVE,
//!   BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP with timeout 0: inside MULTI they never block and reply
//!   null on empty keys); WATCH of a key that the same client then writes (or fails to write, or
//!   writes without changing) before MULTI, so EXEC aborts exactly when Redis's does;
//! - FLUSHDB, SWAPDB and SELECT now and then (never between WATCH and EXEC: Redis's FLUSHDB
//!   dirties only watched keys that exist, a known difference pinned in
//!   `differential_transactions.rs`);
//! - both protocols: a quarter of the batches run in RESP3 (HELLO 3), where HGETALL is replaced
//!   by HKEYS/HVALS (the harness compares a RESP3 map by `SortedPairs` vacuously).
//!
//! Every 25 batches the pool is compared whole in every database, in RESP2: each key's TYPE and
//! TTL, then its content by type (GET; HGETALL as sorted pairs; LRANGE 0 -1 exactly; SMEMBERS
//! sorted; ZRANGE 0 -1 WITHSCORES exactly), OBJECT ENCODING by shape, full SCANs filtered by each
//! type, and the shared `Twin::checkpoint`.
//!
//! Values put in collections never hold a NUL byte: Redis's SORT ALPHA without STORE compares
//! with `strcoll`, which stops at the first NUL, so "a\0b", "a\0a" and "a" tie and come out in
//! the order `qsort` leaves them (the input order, itself undefined for sets). Strings may hold
//! NULs (SETRANGE pads with them): as BY weights they go through `strtod`, which stops there too.
//! redis-server inherits the test's locale; the ALPHA orders assume a byte-order collation
//! (`C`, `POSIX` or glibc's `C.UTF-8`).
//!
//! The last tests pin, one command at a time, the differences the stream found.
//!
//! The seed is fixed; `DENSEKV_SEED` and `DENSEKV_DIFF_COMMANDS` change the stream and its length.

#[macro_use]
mod support;

use rand::Rng;
use support::diff::{Check, Cmd, Gen, Twin, command_count, seed};
use support::{Server, scan_all};

const COMMANDS: usize = 120_000;
const BATCH: usize = 400;
const DBS: usize = 4;

/// Elements that name the pool's weight keys (`w_<e>`) and hash keys (`h_<e>`).
const SORT_ELEMENTS: &[&str] = &["1", "2", "3", "5", "8", "a", "b", "c"];
const NUMERIC_SORT_ELEMENTS: &[&str] = &["1", "2", "3", "5", "8"];

/// Numbers in the forms SORT's `strtod` and the integer parsers treat differently.
const NUMBER_EDGES: &[&str] = &[
    " 1",
    "+5",
    "007",
    "-0",
    "0",
    "1e3",
    ".5",
    "5.",
    "inf",
    "-inf",
    "1e308",
    "2.5",
    "-1.25",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
];

const SCAN_TYPES: &[&str] = &["string", "hash", "list", "set", "zset"];

/// k0…k15 take every type (k0…k5 hold numbers only, so numeric SORTs succeed on them), g0…g2
/// are grown past the thresholds more often, w_* and h_* are the SORT weight and hash keys, and
/// a few awkward names.
fn pool() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..16).map(|i| format!("k{i}").into_bytes()).collect();
    keys.extend((0..3).map(|i| format!("g{i}").into_bytes()));
    for e in SORT_ELEMENTS {
        keys.push(format!("w_{e}").into_bytes());
        keys.push(format!("h_{e}").into_bytes());
    }
    keys.extend([
        b"".to_vec(),
        b"\r\n".to_vec(),
        b"\0bin\xff".to_vec(),
        "ünïcode".as_bytes().to_vec(),
        vec![b'L'; 300],
        b"key with spaces".to_vec(),
    ]);
    keys
}

fn is_numeric_key(key: &[u8]) -> bool {
    matches!(key, [b'k', d] if (b'0'..=b'5').contains(d))
}

/// The generator and what it must know of the connection: the selected db and the protocol.
#[derive(Debug)]
struct Stream {
    g: Gen,
    db: usize,
    resp3: bool,
}

/// One step of the stream: a command, or a SORT whose check depends on the sorted key's type
/// (asked with TYPE just before it is sent).
#[derive(Debug)]
enum Step {
    Cmd(Cmd),
    ByType {
        key: Vec<u8>,
        cmd: Cmd,
        if_set: Check,
    },
}

fn no_nul(mut v: Vec<u8>) -> Vec<u8> {
    for b in &mut v {
        if *b == 0 {
            *b = b'0';
        }
    }
    v
}

/// A collection element (hash field or value, list element, set or zset member).
fn element(g: &mut Gen, key: &[u8]) -> Vec<u8> {
    if is_numeric_key(key) {
        return match g.below(10) {
            0..=4 => g.pick(NUMERIC_SORT_ELEMENTS).as_bytes().to_vec(),
            5..=6 => g.rng.gen_range(-30i64..30).to_string().into_bytes(),
            7 => format!("{}.5", g.rng.gen_range(-10i64..10)).into_bytes(),
            8 => g.rng.r#gen::<i32>().to_string().into_bytes(),
            _ => g.pick(NUMBER_EDGES).as_bytes().to_vec(),
        };
    }
    match g.below(20) {
        0..=7 => g.pick(SORT_ELEMENTS).as_bytes().to_vec(),
        8..=10 => g.rng.gen_range(-30i64..30).to_string().into_bytes(),
        11 => g.pick(NUMBER_EDGES).as_bytes().to_vec(),
        12 => vec![b'x'; g.rng.gen_range(60..80)],
        13 | 14 => no_nul(g.value()),
        15 => g.rng.r#gen::<i64>().to_string().into_bytes(),
        _ => format!("m{}", g.below(40)).into_bytes(),
    }
}

/// A weight stored at `w_*` or a hash value at `h_*->f`: numbers with many ties, now and then
/// something `strtod` rejects (the whole SORT then fails).
fn weight(g: &mut Gen) -> Vec<u8> {
    match g.below(20) {
        0..=11 => g.rng.gen_range(0i64..6).to_string().into_bytes(),
        12..=14 => format!("{}.25", g.rng.gen_range(-3i64..3)).into_bytes(),
        15 | 16 => g.pick(NUMBER_EDGES).as_bytes().to_vec(),
        17 => b"".to_vec(),
        18 => g.rng.r#gen::<i32>().to_string().into_bytes(),
        _ => (*g.pick(&["abc", "1x", "nan", "1 "])).into(),
    }
}

fn score(g: &mut Gen) -> Vec<u8> {
    match g.below(20) {
        0..=13 => g.rng.gen_range(-10i64..10).to_string().into_bytes(),
        14..=16 => format!("{}.5", g.rng.gen_range(-10i64..10)).into_bytes(),
        17 => (*g.pick(&["inf", "-inf", "+inf", "-0", "1e308", "0.1"])).into(),
        18 => g.rng.r#gen::<i32>().to_string().into_bytes(),
        _ => (*g.pick(&["nan", "abc", "", "1x"])).into(),
    }
}

fn field(g: &mut Gen, key: &[u8]) -> Vec<u8> {
    if key.starts_with(b"h_") && g.chance(0.8) {
        return (*g.pick(&["f", "g"])).into();
    }
    match g.below(10) {
        0..=2 => (*g.pick(&["f", "g", "name", "age"])).into(),
        3..=5 => format!("x{}", g.below(14)).into_bytes(),
        6 | 7 => g.rng.gen_range(0i64..20).to_string().into_bytes(),
        _ => element(g, key),
    }
}

fn hash_value(g: &mut Gen, key: &[u8]) -> Vec<u8> {
    if key.starts_with(b"h_") && g.chance(0.8) {
        return weight(g);
    }
    element(g, key)
}

fn string_value(g: &mut Gen, key: &[u8]) -> Vec<u8> {
    if key.starts_with(b"w_") && g.chance(0.85) {
        return weight(g);
    }
    if g.chance(0.3) {
        return g.rng.gen_range(-100i64..100).to_string().into_bytes();
    }
    g.value()
}

/// A key for the pattern-heavy commands: mostly the general keys.
fn collection_key(g: &mut Gen) -> Vec<u8> {
    if g.chance(0.7) {
        let i = g.below(19);
        if i < 16 {
            format!("k{i}").into_bytes()
        } else {
            format!("g{}", i - 16).into_bytes()
        }
    } else {
        g.key()
    }
}

fn index(g: &mut Gen) -> Vec<u8> {
    match g.below(10) {
        0 => g.integer(),
        _ => g.rng.gen_range(-8i64..8).to_string().into_bytes(),
    }
}

fn string_command(g: &mut Gen, key: Vec<u8>) -> Vec<Vec<u8>> {
    match g.below(14) {
        0..=3 => {
            let v = string_value(g, &key);
            vec![g.name("SET"), key, v]
        }
        4 => {
            let v = string_value(g, &key);
            let mut a = vec![g.name("SET"), key, v];
            match g.below(4) {
                0 => a.push(b"KEEPTTL".to_vec()),
                1 => a.push(b"GET".to_vec()),
                2 => a.push(b"NX".to_vec()),
                _ => a.push(b"XX".to_vec()),
            }
            a
        }
        5 => vec![g.name("APPEND"), key, g.value()],
        6 => vec![g.name("INCR"), key],
        7 => vec![g.name("INCRBY"), key, g.integer()],
        8 => vec![g.name("DECR"), key],
        9 => vec![g.name("GETDEL"), key],
        10 => {
            let v = string_value(g, &key);
            vec![g.name("GETSET"), key, v]
        }
        11 => vec![g.name("STRLEN"), key],
        12 => vec![
            g.name("SETRANGE"),
            key,
            g.below(20).to_string().into_bytes(),
            g.value(),
        ],
        _ => vec![g.name("GET"), key],
    }
}

fn hash_command(g: &mut Gen, key: Vec<u8>, resp3: bool) -> Cmd {
    let args = match g.below(14) {
        0..=4 => {
            let mut a = vec![g.name("HSET"), key.clone()];
            for _ in 0..g.rng.gen_range(1..4) {
                a.push(field(g, &key));
                a.push(hash_value(g, &key));
            }
            a
        }
        5 => vec![
            g.name("HSETNX"),
            key.clone(),
            field(g, &key),
            hash_value(g, &key),
        ],
        6 | 7 => {
            let mut a = vec![g.name("HDEL"), key.clone()];
            for _ in 0..g.rng.gen_range(1..3) {
                a.push(field(g, &key));
            }
            a
        }
        8 => vec![
            g.name("HINCRBY"),
            key.clone(),
            field(g, &key),
            g.rng.gen_range(-5i64..5).to_string().into_bytes(),
        ],
        9 => vec![g.name("HGET"), key.clone(), field(g, &key)],
        10 => vec![g.name("HMGET"), key.clone(), field(g, &key), field(g, &key)],
        11 => vec![g.name("HLEN"), key],
        12 if !resp3 => return Cmd::new(vec![g.name("HGETALL"), key]).with(Check::SortedPairs),
        _ => {
            let name = if g.chance(0.5) { "HKEYS" } else { "HVALS" };
            return Cmd::new(vec![g.name(name), key]).with(Check::Sorted);
        }
    };
    Cmd::new(args)
}

fn list_command(g: &mut Gen, key: Vec<u8>) -> Vec<Vec<u8>> {
    match g.below(20) {
        0..=4 => {
            let name = *g.pick(&["LPUSH", "RPUSH", "LPUSHX", "RPUSHX", "RPUSH"]);
            let mut a = vec![g.name(name), key.clone()];
            for _ in 0..g.rng.gen_range(1..5) {
                a.push(element(g, &key));
            }
            a
        }
        5 | 6 => {
            let name = if g.chance(0.5) { "LPOP" } else { "RPOP" };
            let mut a = vec![g.name(name), key];
            if g.chance(0.4) {
                a.push(g.rng.gen_range(0i64..4).to_string().into_bytes());
            }
            a
        }
        7 => vec![g.name("LSET"), key.clone(), index(g), element(g, &key)],
        8 => vec![
            g.name("LINSERT"),
            key.clone(),
            g.pick(&[&b"BEFORE"[..], b"AFTER"]).to_vec(),
            element(g, &key),
            element(g, &key),
        ],
        9 => vec![g.name("LREM"), key.clone(), index(g), element(g, &key)],
        10 => vec![g.name("LTRIM"), key, index(g), index(g)],
        11 | 12 => {
            let dst = collection_key(g);
            let from = g.pick(&[&b"LEFT"[..], b"RIGHT"]).to_vec();
            let to = g.pick(&[&b"LEFT"[..], b"RIGHT"]).to_vec();
            if g.chance(0.3) {
                vec![g.name("RPOPLPUSH"), key, dst]
            } else {
                vec![g.name("LMOVE"), key, dst, from, to]
            }
        }
        13 => {
            let other = collection_key(g);
            let mut a = vec![g.name("LMPOP"), b"2".to_vec(), key, other];
            a.push(g.pick(&[&b"LEFT"[..], b"RIGHT"]).to_vec());
            if g.chance(0.5) {
                a.push(b"COUNT".to_vec());
                a.push(g.rng.gen_range(1i64..4).to_string().into_bytes());
            }
            a
        }
        14 => vec![g.name("LINDEX"), key, index(g)],
        15 => vec![g.name("LPOS"), key.clone(), element(g, &key)],
        16 => vec![g.name("LLEN"), key],
        _ => vec![g.name("LRANGE"), key, index(g), index(g)],
    }
}

fn set_command(g: &mut Gen, key: Vec<u8>) -> Cmd {
    let args = match g.below(16) {
        0..=4 => {
            let mut a = vec![g.name("SADD"), key.clone()];
            for _ in 0..g.rng.gen_range(1..5) {
                a.push(element(g, &key));
            }
            a
        }
        5 | 6 => vec![g.name("SREM"), key.clone(), element(g, &key)],
        7 => vec![
            g.name("SMOVE"),
            key.clone(),
            collection_key(g),
            element(g, &key),
        ],
        8 => vec![g.name("SISMEMBER"), key.clone(), element(g, &key)],
        9 => vec![g.name("SCARD"), key],
        10 | 11 => {
            let name = *g.pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]);
            let mut a = vec![g.name(name), collection_key(g), key];
            for _ in 0..g.below(3) {
                a.push(collection_key(g));
            }
            a
        }
        12 => {
            let name = *g.pick(&["SINTER", "SUNION", "SDIFF"]);
            let mut a = vec![g.name(name), key];
            for _ in 0..g.below(3) {
                a.push(collection_key(g));
            }
            return Cmd::new(a).with(Check::Sorted);
        }
        13 => vec![g.name("SINTERCARD"), b"2".to_vec(), key, collection_key(g)],
        14 => vec![
            g.name("SMISMEMBER"),
            key.clone(),
            element(g, &key),
            element(g, &key),
        ],
        _ => return Cmd::new(vec![g.name("SMEMBERS"), key]).with(Check::Sorted),
    };
    Cmd::new(args)
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn zset_command(g: &mut Gen, key: Vec<u8>) -> Vec<Vec<u8>> {
    match g.below(20) {
        0..=4 => {
            let mut a = vec![g.name("ZADD"), key.clone()];
            if g.chance(0.15) {
                a.push(g.pick(&[&b"NX"[..], b"XX", b"GT", b"LT", b"CH"]).to_vec());
            }
            for _ in 0..g.rng.gen_range(1..4) {
                a.push(score(g));
                a.push(element(g, &key));
            }
            a
        }
        5 => vec![g.name("ZINCRBY"), key.clone(), score(g), element(g, &key)],
        6 | 7 => vec![g.name("ZREM"), key.clone(), element(g, &key)],
        8 => vec![g.name("ZSCORE"), key.clone(), element(g, &key)],
        9 => vec![g.name("ZRANK"), key.clone(), element(g, &key)],
        10 => vec![g.name("ZCARD"), key],
        11 => {
            let mut a = vec![g.name("ZRANGE"), key, index(g), index(g)];
            if g.chance(0.5) {
                a.push(b"WITHSCORES".to_vec());
            }
            a
        }
        12 => vec![
            g.name("ZRANGEBYSCORE"),
            key,
            b"-inf".to_vec(),
            g.rng.gen_range(-5i64..5).to_string().into_bytes(),
            b"WITHSCORES".to_vec(),
        ],
        13 => {
            let name = if g.chance(0.5) { "ZPOPMIN" } else { "ZPOPMAX" };
            let mut a = vec![g.name(name), key];
            if g.chance(0.4) {
                a.push(g.rng.gen_range(0i64..4).to_string().into_bytes());
            }
            a
        }
        14 | 15 => {
            // Sets are valid inputs (every member scores 1).
            let name = *g.pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]);
            let other = collection_key(g);
            let mut a = vec![g.name(name), collection_key(g), b"2".to_vec(), key, other];
            if name != "ZDIFFSTORE" && g.chance(0.3) {
                a.extend([b"WEIGHTS".to_vec(), b"2".to_vec(), b"-1".to_vec()]);
            }
            if name != "ZDIFFSTORE" && g.chance(0.3) {
                a.push(b"AGGREGATE".to_vec());
                a.push(g.pick(&[&b"SUM"[..], b"MIN", b"MAX"]).to_vec());
            }
            a
        }
        16 => {
            let name = *g.pick(&["ZUNION", "ZINTER", "ZDIFF"]);
            vec![
                g.name(name),
                b"2".to_vec(),
                key,
                collection_key(g),
                b"WITHSCORES".to_vec(),
            ]
        }
        17 => vec![
            g.name("ZRANGESTORE"),
            collection_key(g),
            key,
            b"0".to_vec(),
            index(g),
        ],
        18 => {
            let mut a = vec![g.name("ZMPOP"), b"2".to_vec(), key, collection_key(g)];
            a.push(g.pick(&[&b"MIN"[..], b"MAX"]).to_vec());
            a
        }
        _ => vec![g.name("ZINTERCARD"), b"2".to_vec(), key, collection_key(g)],
    }
}

fn ttl_check(name: &str) -> Check {
    match name {
        "TTL" | "EXPIRETIME" => Check::Drift(2),
        _ => Check::Drift(2_000),
    }
}

/// Generic key commands; `in_multi` leaves out what must not be queued here.
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn generic_command(g: &mut Gen, in_multi: bool) -> Cmd {
    let args = match g.below(24) {
        0 | 1 => {
            let name = if g.chance(0.5) { "DEL" } else { "UNLINK" };
            let mut a = vec![g.name(name)];
            a.extend(g.keys_up_to(3));
            a
        }
        2 | 3 => {
            let mut a = vec![g.name("EXISTS")];
            a.extend(g.keys_up_to(3));
            a
        }
        4 | 5 => vec![g.name("TYPE"), g.key()],
        6 | 7 => {
            let name = if g.chance(0.6) { "RENAME" } else { "RENAMENX" };
            let src = collection_key(g);
            let dst = if g.chance(0.05) { src.clone() } else { g.key() };
            vec![g.name(name), src, dst]
        }
        8 | 9 => {
            let src = collection_key(g);
            let dst = if g.chance(0.05) { src.clone() } else { g.key() };
            let mut a = vec![g.name("COPY"), src, dst];
            if g.chance(0.3) {
                a.push(b"DB".to_vec());
                a.push(g.below(DBS).to_string().into_bytes());
            }
            if g.chance(0.5) {
                a.push(g.name("REPLACE"));
            }
            a
        }
        10 => vec![
            g.name("MOVE"),
            collection_key(g),
            g.below(DBS).to_string().into_bytes(),
        ],
        11 => vec![g.name("EXPIRE"), collection_key(g), g.ttl_seconds()],
        12 => vec![g.name("PEXPIRE"), collection_key(g), g.ttl_millis()],
        13 => vec![g.name("EXPIREAT"), collection_key(g), g.at_seconds()],
        14 => vec![g.name("PERSIST"), collection_key(g)],
        15 => {
            let name = *g.pick(&["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"]);
            return Cmd::new(vec![g.name(name), collection_key(g)]).with(ttl_check(name));
        }
        16 => {
            let mut a = vec![g.name("TOUCH")];
            a.extend(g.keys_up_to(3));
            a
        }
        17 => vec![g.name("DBSIZE")],
        18 => {
            return Cmd::new(vec![
                g.name("OBJECT"),
                b"ENCODING".to_vec(),
                collection_key(g),
            ])
            .with(Check::Shape);
        }
        19 => {
            let mut a = vec![g.name("MEMORY"), b"USAGE".to_vec(), collection_key(g)];
            if g.chance(0.3) {
                a.extend([b"SAMPLES".to_vec(), b"0".to_vec()]);
            }
            return Cmd::new(a).with(Check::Shape);
        }
        20 if !in_multi => {
            let pattern = *g.pick(&["*", "k*", "w_*", "h_?", "*_*", "[gk]1*"]);
            return Cmd::new(vec![g.name("KEYS"), pattern.into()]).with(Check::Sorted);
        }
        21 => return Cmd::new(vec![g.name("RANDOMKEY")]).with(Check::Presence),
        _ => vec![g.name("EXISTS"), g.key()],
    };
    Cmd::new(args)
}

/// A command of a random type on a random key (most are WRONGTYPE on the keys of other types).
fn data_command(s: &mut Stream, in_multi: bool) -> Cmd {
    let g = &mut s.g;
    let key = if g.chance(0.6) {
        collection_key(g)
    } else {
        g.key()
    };
    // Half the type commands use the key's usual type, so collections live long enough to grow
    // and be sorted; the other half hit whatever the key holds.
    let family = if g.chance(0.5) {
        usual_type(&key)
    } else {
        g.below(5)
    };
    if g.chance(0.22) {
        return generic_command(g, in_multi);
    }
    match family {
        0 => Cmd::new(string_command(g, key)),
        1 => hash_command(g, key, s.resp3),
        2 => Cmd::new(list_command(g, key)),
        3 => set_command(g, key),
        _ => Cmd::new(zset_command(g, key)),
    }
}

/// The type most writes to `key` have (0 string, 1 hash, 2 list, 3 set, 4 zset).
fn usual_type(key: &[u8]) -> usize {
    match key {
        [b'w', b'_', ..] => 0,
        [b'h', b'_', ..] => 1,
        [b'k' | b'g', digits @ ..] => digits.iter().map(|&d| d as usize).sum::<usize>() % 5,
        _ => key.len() % 5,
    }
}

/// A write of a random type onto `key` (for WATCH).
fn write_on(s: &mut Stream, key: Vec<u8>) -> Cmd {
    let g = &mut s.g;
    match g.below(8) {
        0 => Cmd::new(string_command(g, key)),
        1 => hash_command(g, key, s.resp3),
        2 => Cmd::new(list_command(g, key)),
        3 => set_command(g, key),
        4 => Cmd::new(zset_command(g, key)),
        5 => Cmd::new(vec![g.name("EXPIRE"), key, g.ttl_seconds()]),
        6 => Cmd::new(vec![g.name("PERSIST"), key]),
        _ => Cmd::new(vec![g.name("RENAME"), collection_key(g), key]),
    }
}

/// One big write that carries `key` past its type's conversion thresholds.
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn grow(g: &mut Gen) -> Cmd {
    let key = if g.chance(0.5) {
        format!("g{}", g.below(3)).into_bytes()
    } else {
        collection_key(g)
    };
    let base = g.rng.gen_range(-1000i64..1000);
    let mut a;
    match g.below(10) {
        8 => {
            // A flat hash, or one past 32 KiB (pages).
            a = vec![g.name("HSET"), key];
            for i in 0..g.rng.gen_range(200..2000) {
                a.push(format!("field:{}", base + i).into_bytes());
                a.push(format!("value:{i}").into_bytes());
            }
        }
        9 => {
            // A flat set, or one past 32 KiB (pages).
            a = vec![g.name("SADD"), key];
            let n = g.rng.gen_range(1000..3000);
            a.extend((0..n).map(|i| format!("member:{}", base + i).into_bytes()));
        }
        0 => {
            // Integer fields and values only: 9 to 12 pairs.
            a = vec![g.name("HSET"), key];
            for i in 0..g.rng.gen_range(9..13) {
                a.push((base + i).to_string().into_bytes());
                a.push((base * 7 + i).to_string().into_bytes());
            }
        }
        1 => {
            // Nine or more string pairs, or a value over 64 bytes.
            a = vec![g.name("HSET"), key];
            let n = g.rng.gen_range(3..12);
            for i in 0..n {
                a.push(format!("f{}", base + i).into_bytes());
                a.push(if i == 0 && n < 9 {
                    vec![b'v'; 70]
                } else {
                    format!("v{i}").into_bytes()
                });
            }
        }
        2 => {
            a = vec![g.name("SADD"), key];
            let n = g.rng.gen_range(129..160);
            a.extend((0..n).map(|i| format!("s{}", base + i).into_bytes()));
        }
        3 => {
            a = vec![g.name("SADD"), key];
            let n = g.rng.gen_range(100..560);
            a.extend((0..n).map(|i| (base * 1000 + i).to_string().into_bytes()));
        }
        4 => {
            a = vec![g.name("ZADD"), key];
            for i in 0..g.rng.gen_range(129..150) {
                a.push((i % 17).to_string().into_bytes());
                a.push(format!("z{}", base + i).into_bytes());
            }
        }
        5 => {
            a = vec![g.name("ZADD"), key, b"1".to_vec(), vec![b'Z'; 70]];
        }
        _ => {
            let name = if g.chance(0.5) { "RPUSH" } else { "LPUSH" };
            a = vec![g.name(name), key];
            let n = g.rng.gen_range(100..400);
            a.extend((0..n).map(|i| {
                if i % 3 == 0 {
                    SORT_ELEMENTS[(i as usize) % SORT_ELEMENTS.len()].into()
                } else {
                    (base + i).to_string().into_bytes()
                }
            }));
        }
    }
    Cmd::new(a)
}

/// What a SORT will be: built first, then written out in a random option order.
struct SortPlan {
    readonly: bool,
    by: Option<&'static str>,
    alpha: bool,
    desc: bool,
    limit: Option<(Vec<u8>, Vec<u8>)>,
    gets: Vec<&'static str>,
    store: Option<Vec<u8>>,
}

impl SortPlan {
    fn random(g: &mut Gen, deterministic: bool) -> SortPlan {
        let readonly = g.chance(0.25);
        let mut by = match g.below(12) {
            0..=4 => None,
            5 | 6 => Some("w_*"),
            7 => Some("h_*->f"),
            8 => Some(*g.pick(&["nosort", "NOSORT", "w_1"])),
            _ => Some(*g.pick(&["h_*->g", "k*", "w_*->f", "h_*->", "*"])),
        };
        let mut alpha = g.chance(0.35);
        let store = (!readonly && g.chance(0.3)).then(|| collection_key(g));
        if deterministic && store.is_none() && by.is_some_and(|p| !p.contains('*')) {
            // A set without sorting is in no defined order.
            by = None;
        }
        if deterministic && by.is_some_and(|p| p.contains('*')) {
            alpha = false;
        }
        let limit = g.chance(0.3).then(|| {
            let start = match g.below(8) {
                0 => g.integer(),
                1 => b"-5".to_vec(),
                _ => g.rng.gen_range(0i64..6).to_string().into_bytes(),
            };
            let count = match g.below(8) {
                0 => g.integer(),
                1 => b"-1".to_vec(),
                _ => g.rng.gen_range(0i64..8).to_string().into_bytes(),
            };
            (start, count)
        });
        let gets = (0..g.below(4))
            .map(|_| *g.pick(&["#", "w_*", "h_*->f", "h_*->g", "k*", "nokey", "h_*->"]))
            .collect();
        // Equal weights tie under ALPHA + BY, so LIMIT picks an undefined subset: a stored one
        // would leave the servers out of step for good.
        let tied = alpha && by.is_some_and(|p| p.contains('*'));
        let limit = if tied && store.is_some() { None } else { limit };
        SortPlan {
            readonly,
            by,
            alpha,
            desc: g.chance(0.3),
            limit,
            gets,
            store,
        }
    }

    fn args(&self, g: &mut Gen, key: Vec<u8>) -> Vec<Vec<u8>> {
        let mut groups: Vec<Vec<Vec<u8>>> = Vec::new();
        if let Some(by) = self.by {
            groups.push(vec![g.name("BY"), by.into()]);
        }
        if self.alpha {
            groups.push(vec![g.name("ALPHA")]);
        }
        if self.desc {
            groups.push(vec![g.name("DESC")]);
        } else if g.chance(0.1) {
            groups.push(vec![g.name("ASC")]);
        }
        if let Some((start, count)) = &self.limit {
            groups.push(vec![g.name("LIMIT"), start.clone(), count.clone()]);
        }
        for get in &self.gets {
            groups.push(vec![g.name("GET"), (*get).into()]);
        }
        if let Some(dst) = &self.store {
            groups.push(vec![g.name("STORE"), dst.clone()]);
        }
        // Options come in any order (a later DESC/ASC wins; the order of GETs is kept).
        if g.chance(0.3) && groups.len() > 1 {
            let i = g.below(groups.len());
            let j = g.below(groups.len());
            let (a, b) = (i.min(j), i.max(j));
            let swap_keeps_meaning = !(groups[a][0].eq_ignore_ascii_case(b"GET")
                && groups[b][0].eq_ignore_ascii_case(b"GET"));
            if swap_keeps_meaning {
                groups.swap(a, b);
            }
        }
        let name = if self.readonly { "SORT_RO" } else { "SORT" };
        let mut a = vec![g.name(name), key];
        a.extend(groups.into_iter().flatten());
        a
    }

    fn weighted(&self) -> bool {
        self.by.is_some_and(|p| p.contains('*'))
    }

    fn unsorted(&self) -> bool {
        self.by.is_some_and(|p| !p.contains('*'))
    }
}

/// Redis's SORT tests `errno == ERANGE` after `strtod` without clearing `errno` first (sort.c),
/// so a number that overflowed in any earlier command (a SORT over an APPEND-made "1e3085", a
/// ZADD score "1e400") makes every later numeric SORT fail until some command clears `errno`.
/// A ZADD XX on a key that never exists parses its score through `string2d`, which clears it,
/// and changes nothing; it precedes every SORT.
fn errno_reset() -> Cmd {
    cmd!["ZADD", "sort:errno", "XX", "0", "m"]
}

/// A SORT and what follows it: LRANGE of a STORE destination; for ALPHA BY … STORE, whose ties
/// are stored in an undefined order, a re-sort of the destination onto itself first.
fn sort_steps(g: &mut Gen) -> Vec<Step> {
    let plan = SortPlan::random(g, false);
    let key = collection_key(g);
    let cmd = Cmd::new(plan.args(g, key.clone()));
    let mut steps = vec![Step::Cmd(errno_reset())];
    let partial = plan.limit.is_some();
    let undefined = if partial { Check::Shape } else { Check::Sorted };
    match &plan.store {
        Some(dst) => {
            steps.push(Step::Cmd(cmd));
            if plan.alpha && plan.weighted() {
                steps.push(Step::Cmd(cmd!["SORT", dst, "ALPHA", "STORE", dst]));
            }
            steps.push(Step::Cmd(cmd!["LRANGE", dst, "0", "-1"]));
        }
        None if plan.alpha && plan.weighted() => steps.push(Step::Cmd(cmd.with(undefined))),
        None if plan.unsorted() => steps.push(Step::ByType {
            key,
            cmd,
            if_set: undefined,
        }),
        None => steps.push(Step::Cmd(cmd)),
    }
    steps
}

/// A SORT whose reply is defined whatever the key holds (for MULTI).
fn deterministic_sort(g: &mut Gen) -> Vec<Cmd> {
    let plan = SortPlan::random(g, true);
    let key = collection_key(g);
    let cmd = Cmd::new(plan.args(g, key));
    match plan.store {
        Some(dst) => vec![errno_reset(), cmd, cmd!["LRANGE", dst, "0", "-1"]],
        None => vec![errno_reset(), cmd],
    }
}

/// A blocking pop: queued inside MULTI it runs once, without blocking.
fn blocking_pop(g: &mut Gen) -> Cmd {
    let key = collection_key(g);
    let other = collection_key(g);
    let args = match g.below(7) {
        0 => vec![g.name("BLPOP"), key, other, b"0".to_vec()],
        1 => vec![g.name("BRPOP"), key, b"0".to_vec()],
        2 => vec![
            g.name("BLMOVE"),
            key,
            other,
            b"LEFT".to_vec(),
            b"RIGHT".to_vec(),
            b"0".to_vec(),
        ],
        3 => vec![
            g.name("BLMPOP"),
            b"0".to_vec(),
            b"2".to_vec(),
            key,
            other,
            b"LEFT".to_vec(),
        ],
        4 => vec![g.name("BZPOPMIN"), key, other, b"0".to_vec()],
        5 => vec![g.name("BZPOPMAX"), key, b"0".to_vec()],
        _ => vec![
            g.name("BZMPOP"),
            b"0".to_vec(),
            b"1".to_vec(),
            key,
            b"MIN".to_vec(),
            b"COUNT".to_vec(),
            b"2".to_vec(),
        ],
    };
    Cmd::new(args)
}

/// MULTI, commands of every type (a SORT, a blocking pop now and then), EXEC or DISCARD.
/// Nothing here goes through the arity breaker except the data commands: a broken MULTI would
/// leave a blocking pop outside the transaction, where it would block.
fn transaction(s: &mut Stream, out: &mut Vec<Step>) {
    out.push(Step::Cmd(cmd!["MULTI"]));
    for _ in 0..s.g.rng.gen_range(1..6) {
        match s.g.below(10) {
            0 | 1 => out.push(Step::Cmd(blocking_pop(&mut s.g))),
            2 => {
                let sort = deterministic_sort(&mut s.g);
                out.extend(sort.into_iter().take(2).map(Step::Cmd));
            }
            _ => {
                let c = data_command(s, true);
                // Orders left undefined stay out of EXEC's array (compared whole).
                if c.check == Check::Exact {
                    let c = s.g.maybe_break_arity(c);
                    out.push(Step::Cmd(c));
                }
            }
        }
    }
    let end = if s.g.chance(0.1) { "DISCARD" } else { "EXEC" };
    out.push(Step::Cmd(cmd![end]));
}

/// WATCH a key, write it (or not) from this same client, then a transaction.
fn watched_transaction(s: &mut Stream, out: &mut Vec<Step>) {
    let key = collection_key(&mut s.g);
    let mut watch = vec![b"WATCH".to_vec(), key.clone()];
    if s.g.chance(0.3) {
        watch.push(s.g.key());
    }
    out.push(Step::Cmd(Cmd::new(watch)));
    for _ in 0..s.g.below(3) {
        let c = if s.g.chance(0.7) {
            write_on(s, key.clone())
        } else {
            data_command(s, true)
        };
        out.push(Step::Cmd(c));
    }
    if s.g.chance(0.1) {
        out.push(Step::Cmd(cmd!["UNWATCH"]));
    }
    transaction(s, out);
}

fn db_command(s: &mut Stream) -> Cmd {
    let g = &mut s.g;
    match g.below(10) {
        0 => {
            let mut a = vec![g.name("FLUSHDB")];
            if g.chance(0.3) {
                a.push(g.name("ASYNC"));
            }
            Cmd::new(a)
        }
        1..=3 => {
            let a = g.below(DBS);
            let b = g.below(DBS);
            cmd!["SWAPDB", a.to_string(), b.to_string()]
        }
        _ => {
            // Mostly back to db 0, where the string-only SCAN filters of the checkpoint run too.
            s.db = if g.chance(0.6) { 0 } else { g.below(DBS) };
            cmd!["SELECT", s.db.to_string()]
        }
    }
}

fn next_steps(s: &mut Stream, out: &mut Vec<Step>) {
    match s.g.below(1000) {
        0..=719 => {
            let c = data_command(s, false);
            // A broken command is compared exactly: leave the others whole.
            let c = if c.check == Check::Exact {
                s.g.maybe_break_arity(c)
            } else {
                c
            };
            out.push(Step::Cmd(c));
        }
        720..=859 => out.extend(sort_steps(&mut s.g)),
        860..=899 => transaction(s, out),
        900..=939 => watched_transaction(s, out),
        940..=954 => out.push(Step::Cmd(grow(&mut s.g))),
        955..=957 => out.push(Step::Cmd(db_command(s))),
        _ => {
            let key = s.g.key();
            out.push(Step::Cmd(write_on(s, key)));
        }
    }
}

/// Sends the steps: commands pipelined, a type-dependent SORT after asking for the key's type.
fn run_steps(twin: &mut Twin, steps: Vec<Step>) {
    let mut batch = Vec::with_capacity(steps.len());
    for step in steps {
        match step {
            Step::Cmd(c) => batch.push(c),
            Step::ByType { key, cmd, if_set } => {
                twin.run(&batch);
                batch.clear();
                let t = twin.one(&cmd!["TYPE", key]);
                let check = if t == b"+set\r\n" {
                    if_set
                } else {
                    Check::Exact
                };
                batch.push(cmd.with(check));
            }
        }
    }
    twin.run(&batch);
}

fn switch_protocol(twin: &mut Twin, resp3: bool) {
    // The HELLO replies name different servers; only the protocol switch matters.
    let proto = if resp3 { "3" } else { "2" };
    twin.densekv.cmd(&["HELLO", proto]);
    twin.redis.cmd(&["HELLO", proto]);
}

/// Every key's type, TTL, content and encoding shape in the current db, full SCANs by type, then
/// the keyspace checkpoint.
fn compare_db(twin: &mut Twin, pool: &[Vec<u8>]) {
    for key in pool {
        let t = twin.one(&cmd!["TYPE", key]);
        let content = match t.as_slice() {
            b"+string\r\n" => cmd!["GET", key],
            b"+hash\r\n" => cmd!["HGETALL", key].with(Check::SortedPairs),
            b"+list\r\n" => cmd!["LRANGE", key, "0", "-1"],
            b"+set\r\n" => cmd!["SMEMBERS", key].with(Check::Sorted),
            b"+zset\r\n" => cmd!["ZRANGE", key, "0", "-1", "WITHSCORES"],
            b"+none\r\n" => continue,
            other => panic!("TYPE reply {}", String::from_utf8_lossy(other)),
        };
        twin.run(&[
            content,
            cmd!["TTL", key].with(Check::Drift(2)),
            cmd!["OBJECT", "ENCODING", key].with(Check::Shape),
        ]);
    }
    let mut typed = Vec::new();
    for t in SCAN_TYPES {
        let extra: [&[u8]; 2] = [b"TYPE", t.as_bytes()];
        let ours = scan_all(&mut twin.densekv, &extra);
        let theirs = scan_all(&mut twin.redis, &extra);
        assert!(
            ours == theirs,
            "SCAN TYPE {t} differs (seed-driven run, after command #{}):\n  densekv: {:?}\n  redis:   {:?}",
            twin.sent,
            ours.iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect::<Vec<_>>(),
            theirs
                .iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect::<Vec<_>>()
        );
        typed.extend(ours);
    }
    typed.sort();
    let all = scan_all(&mut twin.densekv, &[]);
    assert_eq!(
        typed, all,
        "densekv: the SCAN TYPE results do not add up to SCAN"
    );
    twin.checkpoint(pool);
}

/// The whole pool in every db, in RESP2; the connection is left in the stream's db and protocol.
fn compare_all(twin: &mut Twin, s: &Stream, pool: &[Vec<u8>]) {
    if s.resp3 {
        switch_protocol(twin, false);
    }
    for db in 0..DBS {
        twin.one(&cmd!["SELECT", db.to_string()]);
        compare_db(twin, pool);
    }
    twin.one(&cmd!["SELECT", s.db.to_string()]);
    if s.resp3 {
        switch_protocol(twin, true);
    }
}

#[test]
fn mixed_types_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0x3173_0001);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let pool = pool();
    let mut s = Stream {
        g: Gen::new(seed, pool.clone()),
        db: 0,
        resp3: false,
    };
    let total = command_count(COMMANDS);
    let mut batches = 0;
    while twin.sent < total {
        // A quarter of the stream in RESP3, switched between batches.
        let resp3 = batches % 8 >= 6;
        if resp3 != s.resp3 {
            s.resp3 = resp3;
            switch_protocol(&mut twin, resp3);
        }
        let mut steps = Vec::with_capacity(BATCH + 16);
        while steps.len() < BATCH {
            next_steps(&mut s, &mut steps);
        }
        run_steps(&mut twin, steps);
        batches += 1;
        if batches % 25 == 0 {
            compare_all(&mut twin, &s, &pool);
        }
    }
    compare_all(&mut twin, &s, &pool);
}

/// Inside MULTI, BLMOVE and BRPOPLPUSH on an empty source reply a null bulk string in RESP2 (they
/// are LMOVE and RPOPLPUSH there), unlike the list pops, which reply a null array.
#[test]
fn blocking_moves_in_multi_reply_null_bulk() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    for c in [
        cmd!["MULTI"],
        cmd!["BLMOVE", "none", "dst", "LEFT", "RIGHT", "0"],
        cmd!["BRPOPLPUSH", "none", "dst", "0"],
        cmd!["BLPOP", "none", "0"],
        cmd!["EXEC"],
    ] {
        twin.one(&c);
    }
}

/// SORT reads a weight (or an element, without BY) with `strtod` and accepts it when `strtod`
/// stops at the string's first NUL: hexadecimal ("0x10", hex floats), a prefix before an
/// embedded NUL ("12\0ab" is 12, "\0" is 0). It rejects what `strtod` cannot convert at all
/// (whitespace only: the end pointer stays at the start) and subnormal results (ERANGE).
#[test]
fn sort_weights_parse_like_strtod() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    twin.one(&cmd!["RPUSH", "one", "1"]);
    for weight in [
        &b"0x10"[..],
        b"0X1A",
        b"0x1p3",
        b"\0",
        b"12\0ab",
        b"   ",
        b"\r\n",
        b"1e-320",
    ] {
        twin.one(&errno_reset());
        twin.one(&cmd!["SET", "w_1", weight]);
        twin.one(&cmd!["SORT", "one", "BY", "w_*"]);
    }
    twin.one(&errno_reset());
    twin.one(&cmd!["RPUSH", "hex", "0x10", "1"]);
    twin.one(&cmd!["SORT", "hex"]);
}

/// MEMORY USAGE parses its options before looking the key up: anything but `SAMPLES <n>` is a
/// syntax error (not an arity error), a negative count too, a repeated SAMPLES is allowed.
#[test]
fn memory_usage_options_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    twin.one(&cmd!["SET", "k", "v"]);
    for c in [
        cmd!["MEMORY", "USAGE", "k", "junk"],
        cmd!["MEMORY", "USAGE", "k", "SAMPLES"],
        cmd!["MEMORY", "USAGE", "k", "SAMPLES", "x"],
        cmd!["MEMORY", "USAGE", "k", "SAMPLES", "-1"],
        cmd!["MEMORY", "USAGE", "k", "SAMPLES", "5", "SAMPLES", "3"].with(Check::Shape),
        cmd!["MEMORY", "USAGE", "k", "SAMPLES", "0", "junk"],
        cmd!["MEMORY", "USAGE", "nokey", "SAMPLES", "0", "junk"],
    ] {
        twin.one(&c);
    }
}

/// SORT converts a small sorted set to a skiplist for good (sort.c `zsetConvert`), and a
/// skiplist keeps a -0 score that a listpack stores as the integer 0: a -0 written after the
/// SORT reads back "-0", one written before reads "0".
#[test]
fn sort_converts_small_zsets_for_good() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    for c in [
        cmd!["ZADD", "z", "-0", "m", "1", "n"],
        cmd!["ZSCORE", "z", "m"],
        cmd!["SORT", "z", "BY", "nosort"],
        cmd!["ZSCORE", "z", "m"],
        cmd!["ZADD", "z", "-0", "n"],
        cmd!["ZRANGE", "z", "0", "-1", "WITHSCORES"],
    ] {
        twin.one(&c);
    }
}
