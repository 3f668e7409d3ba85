//! DUMP and RESTORE against redis-server 7.0.15 (both with `--enable-debug-command yes`, for
//! DEBUG DIGEST-VALUE, which prints the same digest for the same value on both servers).
//!
//! * Both ways: the shared dataset of every type and encoding (support/dataset.rs) goes to both
//!   servers; every key's DUMP from redis-server RESTOREs into densekv and densekv's into
//!   redis-server, under a new name, and the restored value must digest as the original, keep
//!   its type and get the OBJECT ENCODING redis-server gives the original, with its TTL.
//! * Bytes: where Redis's payload is determined by the value alone (strings with
//!   `rdbcompression no`, intsets, and listpacks of small hashes and sorted sets) densekv's DUMP
//!   is byte-identical to redis-server's.
//! * Errors: RESTORE's options, BUSYKEY, TTLs, and payloads that are short, of a newer version,
//!   with a wrong checksum, or with a valid checksum over bad data, all replied as redis-server
//!   replies, followed by the state of the key.

#[macro_use]
mod support;

use support::dataset::dataset;
use support::diff::{Check, Twin, seed};
use support::{Client, Server, Value, decode};

const DEBUG_ON: [&str; 2] = ["--enable-debug-command", "yes"];

fn bulk(reply: &[u8]) -> Vec<u8> {
    decode(reply).bulk().to_vec()
}

fn int(reply: &[u8]) -> i64 {
    match decode(reply) {
        Value::Int(v) => v,
        other => panic!("not an integer: {other:?}"),
    }
}

/// RESTOREs `payload` under `key` on `to` and checks it digests as `digest` did on the source.
fn restore_into(to: &mut Client, who: &str, key: &[u8], payload: &[u8], digest: &[u8], ttl: i64) {
    let ttl = ttl.max(0).to_string();
    let reply = to.command(&[b"RESTORE", key, ttl.as_bytes(), payload, b"REPLACE"]);
    assert_eq!(
        reply,
        b"+OK\r\n",
        "{who}: RESTORE {}",
        String::from_utf8_lossy(key)
    );
    let got = to.command(&[b"DEBUG", b"DIGEST-VALUE", key]);
    assert_eq!(
        got,
        digest,
        "{who}: value of {}",
        String::from_utf8_lossy(key)
    );
}

#[test]
fn payloads_restore_both_ways_for_every_type_and_encoding() {
    let seed = seed(0x00d0_0a9e);
    let (densekv, redis) = Server::pair(&DEBUG_ON);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let mut restored = 0;
    for (db, keys, cmds) in dataset(seed) {
        for batch in cmds.chunks(200) {
            twin.run(batch);
        }
        twin.one(&cmd!["SELECT", db.to_string()]);
        for key in keys {
            let digest = twin.one(&cmd!["DEBUG", "DIGEST-VALUE", key]);
            let pttl = int(&twin.one(&cmd!["PTTL", key].with(Check::Drift(2000))));
            let ours = bulk(&twin.densekv.command(&[b"DUMP", &key]));
            let theirs = bulk(&twin.redis.command(&[b"DUMP", &key]));
            let copy = [&key[..], b":copy"].concat();
            restore_into(&mut twin.densekv, "densekv", &copy, &theirs, &digest, pttl);
            restore_into(&mut twin.redis, "redis-server", &copy, &ours, &digest, pttl);
            for c in [
                cmd!["TYPE", copy],
                cmd!["OBJECT", "ENCODING", copy],
                cmd!["PTTL", copy].with(Check::Drift(2000)),
            ] {
                twin.one(&c);
            }
            restored += 1;
        }
        twin.one(&cmd!["SELECT", "0"]);
    }
    assert!(restored > 200, "{restored} keys restored");
}

#[test]
fn payloads_redis_defines_byte_for_byte_are_identical() {
    let (densekv, redis) = Server::pair(&["--rdbcompression", "no"]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let long = "x".repeat(300);
    let setup = [
        cmd!["SET", "s:int8", "-42"],
        cmd!["SET", "s:int16", "30000"],
        cmd!["SET", "s:int32", "-2147483648"],
        cmd!["SET", "s:big", "9223372036854775807"],
        cmd!["SET", "s:text", "hello world"],
        cmd!["SET", "s:empty", ""],
        cmd!["SET", "s:long", long],
        cmd!["SADD", "set:intset", "1", "-5", "70000", "3"],
        cmd!["SADD", "set:intset64", "1", "9223372036854775807"],
        cmd![
            "HSET",
            "h:lp",
            "name",
            "ann",
            "age",
            "42",
            "neg",
            "-7",
            "big",
            "12345678901234"
        ],
        cmd![
            "ZADD", "z:lp", "1", "a", "2.5", "b", "-0", "c", "inf", "d", "1e300", "e"
        ],
        cmd!["ZADD", "z:int", "100", "x", "-3", "y"],
    ];
    twin.run(&setup);
    for c in &setup {
        twin.one(&cmd!["DUMP", c.args[1]]);
    }
}

#[test]
fn restore_errors_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    twin.run(&[cmd!["SET", "src", "value"], cmd!["SET", "busy", "x"]]);
    let good = bulk(&twin.redis.command(&[b"DUMP", b"src"]));
    let mut flipped = good.clone();
    flipped[2] ^= 0x20;
    let mut newer = good.clone();
    let n = newer.len();
    newer[n - 10] = 11;
    // A valid checksum over an unknown type: the checksum passes, the data does not.
    let bad_type = with_footer(&[0x63, 1, b'x']);
    let bad_len = with_footer(&[0x00, 0x3f, b'x']);
    let empty_list = with_footer(&[18, 0]);
    let cases: Vec<Vec<Vec<u8>>> = vec![
        args(&["RESTORE", "k", "0"], &good, &["BADOPT"]),
        args(&["RESTORE", "k", "0"], &good, &["IDLETIME", "-1"]),
        args(&["RESTORE", "k", "0"], &good, &["IDLETIME", "x"]),
        args(&["RESTORE", "k", "0"], &good, &["FREQ", "256"]),
        args(
            &["RESTORE", "k", "0"],
            &good,
            &["FREQ", "1", "IDLETIME", "1"],
        ),
        args(&["RESTORE", "k", "0"], &good, &["IDLETIME"]),
        args(&["RESTORE", "busy", "0"], &good, &[]),
        args(&["RESTORE", "k", "-1"], &good, &[]),
        args(&["RESTORE", "k", "x"], &good, &[]),
        args(&["RESTORE", "k", "0"], b"short", &[]),
        args(&["RESTORE", "k", "0"], &flipped, &[]),
        args(&["RESTORE", "k", "0"], &newer, &[]),
        args(&["RESTORE", "k", "0"], &bad_type, &[]),
        args(&["RESTORE", "k", "0"], &bad_len, &[]),
        args(&["RESTORE", "k", "0"], &empty_list, &[]),
        args(
            &["RESTORE", "k", "0"],
            &good,
            &["REPLACE", "ABSTTL", "FREQ", "5"],
        ),
        args(&["RESTORE", "busy", "1", "REPLACE"], &good, &["ABSTTL"]),
        args(&["RESTORE", "gone", "1"], &good, &["ABSTTL"]),
        args(&["RESTORE", "t", "100000"], &good, &["IDLETIME", "10"]),
    ];
    for case in cases {
        twin.one(&support::diff::Cmd::new(case));
        for key in ["k", "busy", "gone", "t"] {
            twin.one(&cmd!["GET", key]);
        }
    }
    twin.one(&cmd!["PTTL", "t"].with(Check::Drift(2000)));
    twin.one(&cmd!["DUMP", "missing"]);
    twin.one(&cmd!["DUMP"]);
    twin.one(&cmd!["RESTORE", "k", "0"]);
}

/// `head`, then the payload, then `tail`, as one command's arguments.
fn args(head: &[&str], payload: &[u8], tail: &[&str]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = head.iter().map(|a| a.as_bytes().to_vec()).collect();
    out.push(payload.to_vec());
    out.extend(tail.iter().map(|a| a.as_bytes().to_vec()));
    out
}

/// `body` with a DUMP footer: RDB version 10 and a valid CRC-64.
fn with_footer(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&10u16.to_le_bytes());
    let crc = persist::crc64::crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}
