//! Differential test of DEBUG against redis-server 7.0.15, both started with
//! `--enable-debug-command yes`.
//!
//! * The digest: a seeded dataset of every type in every encoding family (strings, integers of
//!   every width, lists short and long, sets intset / small / big, hashes small / big, zsets
//!   small / big, TTLs on some keys, several databases) goes to both servers; DEBUG DIGEST must
//!   be equal, and DEBUG DIGEST-VALUE for every key and for missing keys. A write changes the
//!   digest (on both alike) and undoing it brings the first digest back; a value reached
//!   through other encodings (a set grown past the intset and shrunk again) digests as a fresh
//!   one; a key whose TTL has passed but that is still stored (SET-ACTIVE-EXPIRE 0) is digested
//!   by both.
//! * DEBUG OBJECT's `encoding` (and `refcount`, and `serializedlength` of short strings) equal
//!   redis-server's for every key of the dataset.
//! * DEBUG PROTOCOL byte-identical for every type in RESP2 and RESP3.
//! * ERROR, LOG, SLEEP 0, SET-ACTIVE-EXPIRE, QUICKLIST-PACKED-THRESHOLD, STRINGMATCH-TEST and
//!   the rest: replies and error texts identical, including wrong argument counts and the
//!   subcommands densekv leaves unknown as 7.0.15 has them (JMAP, STRINGMATCH-LEN).
//! * POPULATE: the same keys and values (compared by DIGEST, DBSIZE and KEYS).
//! * PANIC's siblings ASSERT, SEGFAULT and OOM end densekv with a bug report (densekv only).

#[macro_use]
mod support;

use std::time::{Duration, Instant};
use support::dataset::dataset;
use support::diff::{Check, Cmd, Twin, seed};
use support::{Client, Server, decode, show};

const DEBUG_ON: [&str; 2] = ["--enable-debug-command", "yes"];

fn twin(seed: u64) -> (Server, Server, Twin) {
    let (densekv, redis) = Server::pair(&DEBUG_ON);
    let twin = Twin::new(densekv.connect(), redis.connect(), seed);
    (densekv, redis, twin)
}

/// Writes the dataset to both servers and leaves them in db 0.
fn load(twin: &mut Twin, seed: u64) -> Vec<(usize, Vec<Vec<u8>>)> {
    let mut keys = Vec::new();
    for (db, db_keys, cmds) in dataset(seed) {
        for batch in cmds.chunks(200) {
            twin.run(batch);
        }
        keys.push((db, db_keys));
    }
    twin.one(&cmd!["SELECT", "0"]);
    keys
}

fn digest(twin: &mut Twin) -> Vec<u8> {
    twin.one(&cmd!["DEBUG", "DIGEST"])
}

#[test]
fn digests_equal_redis_servers_for_every_type_and_encoding() {
    let seed = seed(0x00d1_6e57);
    let (_densekv, _redis, mut twin) = twin(seed);
    assert_eq!(
        digest(&mut twin),
        b"+0000000000000000000000000000000000000000\r\n"
    );
    let keys = load(&mut twin, seed);
    // Every densekv encoding holds at least one key.
    let info = String::from_utf8(twin.densekv.cmd(&["INFO", "memory"])).unwrap();
    let counts: Vec<&str> = info
        .lines()
        .filter(|l| l.starts_with("densekv_keys_"))
        .collect();
    assert!(counts.len() >= 16, "{info}");
    for line in counts {
        assert!(!line.ends_with(":0"), "no key in {line}");
    }
    let full = digest(&mut twin);
    assert_ne!(full, b"+0000000000000000000000000000000000000000\r\n");
    for (db, db_keys) in &keys {
        twin.one(&cmd!["SELECT", db.to_string()]);
        for key in db_keys {
            twin.one(&cmd!["DEBUG", "DIGEST-VALUE", key]);
        }
        let mut all = vec![
            b"DEBUG".to_vec(),
            b"DIGEST-VALUE".to_vec(),
            b"no-such-key".to_vec(),
        ];
        all.extend(db_keys.iter().cloned());
        twin.one(&Cmd::new(all));
    }
    twin.one(&cmd!["SELECT", "0"]);
    twin.one(&cmd!["DEBUG", "DIGEST-VALUE"]);
    twin.one(&cmd!["DEBUG", "DIGEST", "extra"]);

    // A write changes the digest on both alike; undoing it brings the first digest back.
    let undo: [(Cmd, Cmd); 6] = [
        (cmd!["SADD", "set:new", "x"], cmd!["DEL", "set:new"]),
        (cmd!["SET", "fresh", "1"], cmd!["DEL", "fresh"]),
        (cmd!["RPUSH", "list:tmp", "a", "b"], cmd!["DEL", "list:tmp"]),
        (
            cmd!["HSET", "hash:tmp", "f", "v"],
            cmd!["HDEL", "hash:tmp", "f"],
        ),
        (
            cmd!["ZADD", "zset:tmp", "1", "m"],
            cmd!["ZREM", "zset:tmp", "m"],
        ),
        (cmd!["SET", "ttl", "v", "EX", "1000"], cmd!["DEL", "ttl"]),
    ];
    for (write, back) in &undo {
        twin.one(write);
        let changed = digest(&mut twin);
        assert_ne!(changed, full, "{:?} left the digest as it was", write.args);
        twin.one(back);
        assert_eq!(digest(&mut twin), full, "{:?} did not undo", back.args);
    }
    twin.one(&cmd!["SET", "persisting", "v", "EX", "1000"]);
    let with_ttl = digest(&mut twin);
    twin.one(&cmd!["PERSIST", "persisting"]);
    assert_ne!(digest(&mut twin), with_ttl, "the expire marker is digested");
    twin.one(&cmd!["EXPIRE", "persisting", "5000"]);
    assert_eq!(digest(&mut twin), with_ttl, "the expiry time itself is not");
}

/// The same members reached through other encodings digest as a fresh value.
#[test]
fn digest_ignores_the_road_a_value_took() {
    let (_densekv, _redis, mut twin) = twin(1);
    let mut grow = vec![b"SADD".to_vec(), b"grown".to_vec()];
    grow.extend((0..700).map(|i| i.to_string().into_bytes()));
    twin.one(&Cmd::new(grow));
    let mut shrink = vec![b"SREM".to_vec(), b"grown".to_vec()];
    shrink.extend((3..700).map(|i| i.to_string().into_bytes()));
    twin.one(&Cmd::new(shrink));
    twin.one(&cmd!["SADD", "fresh", "2", "0", "1"]);
    let mut hash = vec![b"HSET".to_vec(), b"hgrown".to_vec()];
    hash.extend((0..300).flat_map(|i| [format!("f{i}").into_bytes(), b"v".to_vec()]));
    twin.one(&Cmd::new(hash));
    let mut hdel = vec![b"HDEL".to_vec(), b"hgrown".to_vec()];
    hdel.extend((1..300).map(|i| format!("f{i}").into_bytes()));
    twin.one(&Cmd::new(hdel));
    twin.one(&cmd!["HSET", "hfresh", "f0", "v"]);
    let mut zset = vec![b"ZADD".to_vec(), b"zgrown".to_vec()];
    zset.extend((0..200).flat_map(|i| [i.to_string().into_bytes(), format!("m{i}").into_bytes()]));
    twin.one(&Cmd::new(zset));
    twin.one(&cmd!["ZREMRANGEBYRANK", "zgrown", "2", "-1"]);
    twin.one(&cmd!["ZADD", "zfresh", "1", "m1", "0", "m0"]);
    for (a, b) in [
        ("grown", "fresh"),
        ("hgrown", "hfresh"),
        ("zgrown", "zfresh"),
    ] {
        let pair = decode(&twin.one(&cmd!["DEBUG", "DIGEST-VALUE", a, b]));
        assert_eq!(pair.array()[0], pair.array()[1], "{a} and {b}");
        twin.one(&cmd!["OBJECT", "ENCODING", a]);
    }
    digest(&mut twin);
}

#[test]
fn expired_keys_still_stored_are_digested_by_both() {
    let (_densekv, _redis, mut twin) = twin(2);
    twin.one(&cmd!["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    twin.one(&cmd!["SET", "keep", "v"]);
    twin.one(&cmd!["SET", "gone", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(50));
    // Neither server has deleted it (no active expiry, no access): both digest it.
    twin.one(&cmd!["DBSIZE"]);
    twin.one(&cmd!["DEBUG", "DIGEST-VALUE", "gone"]);
    let stored = digest(&mut twin);
    twin.one(&cmd!["DEBUG", "OBJECT", "gone"].with(Check::Shape));
    twin.one(&cmd!["GET", "gone"]);
    assert_ne!(digest(&mut twin), stored, "the read deleted it");
    twin.one(&cmd!["SET", "gone", "v", "PX", "1"]);
    twin.one(&cmd!["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    // Active expiry deletes it now on both; wait for that, however long it takes.
    let deadline = Instant::now() + Duration::from_secs(20);
    for client in [&mut twin.densekv, &mut twin.redis] {
        while client.cmd(&["DBSIZE"]) != b":1\r\n" {
            assert!(Instant::now() < deadline, "active expiry did not resume");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    digest(&mut twin);
}

/// The `name:value` field of a DEBUG OBJECT line.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|f| f.strip_prefix(name)?.strip_prefix(':'))
}

#[test]
fn debug_object_reports_redis_servers_encoding() {
    let seed = seed(0x000b_1ec7);
    let (_densekv, _redis, mut twin) = twin(seed);
    let keys = load(&mut twin, seed);
    for (db, db_keys) in &keys {
        twin.one(&cmd!["SELECT", db.to_string()]);
        for key in db_keys {
            let args: [&[u8]; 3] = [b"DEBUG", b"OBJECT", key];
            let ours = String::from_utf8(twin.densekv.command(&args)).unwrap();
            let theirs = String::from_utf8(twin.redis.command(&args)).unwrap();
            let key = String::from_utf8_lossy(key);
            assert!(ours.starts_with("+Value at:0x"), "{key}: {ours}");
            for name in ["encoding", "refcount", "lru"] {
                assert_eq!(field(&ours, name).is_some(), field(&theirs, name).is_some());
            }
            assert_eq!(
                field(&ours, "encoding"),
                field(&theirs, "encoding"),
                "{key}: {ours}"
            );
            assert_eq!(
                field(&ours, "refcount"),
                field(&theirs, "refcount"),
                "{key}: {ours}"
            );
            assert_eq!(
                field(&ours, "ql_nodes").is_some(),
                field(&theirs, "ql_nodes").is_some()
            );
            let strlen = decode(&twin.densekv.cmd(&["STRLEN", &key]));
            if key.starts_with("str:") && matches!(strlen, support::Value::Int(0..=20)) {
                // Strings of up to 20 bytes: Redis does not compress them, so the RDB length
                // is the same.
                let len = field(&ours, "serializedlength");
                assert_eq!(len, field(&theirs, "serializedlength"), "{key}: {ours}");
            }
        }
    }
    twin.one(&cmd!["SELECT", "0"]);
    twin.one(&cmd!["DEBUG", "OBJECT", "no-such-key"]);
    twin.one(&cmd!["DEBUG", "OBJECT"]);
    twin.one(&cmd!["DEBUG", "OBJECT", "a", "b", "c"]);
}

/// DEBUG PROTOCOL in one protocol: every type's reply (a push and the reply after it are two
/// frames; the harness reads an attribute together with the reply it annotates).
fn protocol_replies(client: &mut Client, resp3: bool) -> Vec<Vec<u8>> {
    let names = [
        "string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push",
        "verbatim", "true", "false", "STRING", "nosuch", "",
    ];
    let mut replies = Vec::new();
    for name in names {
        let mut reply = client.cmd(&["DEBUG", "PROTOCOL", name]);
        if resp3 && name == "push" {
            reply.extend(client.read_reply());
        }
        replies.push(reply);
    }
    replies.push(client.cmd(&["DEBUG", "PROTOCOL"]));
    replies
}

#[test]
fn protocol_replies_are_byte_identical_in_resp2_and_resp3() {
    let (densekv, redis) = Server::pair(&DEBUG_ON);
    let (mut ours, mut theirs) = (densekv.connect(), redis.connect());
    for resp3 in [false, true] {
        if resp3 {
            ours.cmd(&["HELLO", "3"]);
            theirs.cmd(&["HELLO", "3"]);
        }
        let (a, b) = (
            protocol_replies(&mut ours, resp3),
            protocol_replies(&mut theirs, resp3),
        );
        for (a, b) in a.iter().zip(&b) {
            assert_eq!(show(a), show(b), "RESP{}", if resp3 { 3 } else { 2 });
        }
    }
}

/// Subcommands whose reply depends on their arguments only.
fn argument_cases() -> Vec<Cmd> {
    vec![
        cmd!["DEBUG", "ERROR", "FOO bar baz"],
        cmd!["DEBUG", "ERROR", "with\r\nnewlines\n"],
        cmd!["DEBUG", "ERROR", ""],
        cmd!["DEBUG", "ERROR"],
        cmd!["DEBUG", "ERROR", "a", "b"],
        cmd!["DEBUG", "LOG", "hello from the test"],
        cmd!["DEBUG", "LOG"],
        cmd!["DEBUG", "SLEEP", "0"],
        cmd!["DEBUG", "SLEEP", "0.001"],
        cmd!["DEBUG", "SLEEP", "abc"],
        cmd!["DEBUG", "SLEEP", "-5"],
        cmd!["DEBUG", "SLEEP"],
        cmd!["DEBUG", "SET-ACTIVE-EXPIRE", "0"],
        cmd!["DEBUG", "set-active-expire", "1"],
        cmd!["DEBUG", "SET-ACTIVE-EXPIRE", "abc"],
        cmd!["DEBUG", "SET-ACTIVE-EXPIRE", "1"],
        cmd!["DEBUG", "SET-ACTIVE-EXPIRE"],
        cmd!["DEBUG", "STRINGMATCH-TEST"],
        cmd!["DEBUG", "STRINGMATCH-TEST", "x"],
        cmd!["DEBUG", "STRINGMATCH-LEN"],
        cmd!["DEBUG", "JMAP"],
        cmd!["DEBUG", "NOSUCH", "x"],
        cmd!["DEBUG", "HELP", "x"],
    ]
}

/// Subcommands that look keys up (the test writes `list`, `int`, `str` and `hash` first), and
/// the rest of the simple ones.
fn lookup_cases() -> Vec<Cmd> {
    vec![
        cmd!["DEBUG", "SDSLEN", "no-such-key"],
        cmd!["DEBUG", "SDSLEN", "int"],
        cmd!["DEBUG", "SDSLEN", "list"],
        cmd!["DEBUG", "LISTPACK", "list"],
        cmd!["DEBUG", "LISTPACK", "no-such-key"],
        cmd!["DEBUG", "LISTPACK", "hash"],
        cmd!["DEBUG", "QUICKLIST", "str"],
        cmd!["DEBUG", "QUICKLIST", "list"],
        cmd!["DEBUG", "QUICKLIST", "list", "1"],
        cmd!["DEBUG", "HTSTATS", "abc"],
        cmd!["DEBUG", "HTSTATS", "-1"],
        cmd!["DEBUG", "HTSTATS", "16"],
        cmd!["DEBUG", "HTSTATS-KEY", "no-such-key"],
        cmd!["DEBUG", "HTSTATS-KEY", "list"],
        cmd!["DEBUG", "POPULATE", "abc"],
        cmd!["DEBUG", "POPULATE", "-1"],
        cmd!["DEBUG", "POPULATE", "2", "p", "x"],
        cmd!["DEBUG", "POPULATE", "2", "p", "-3"],
        cmd!["DEBUG", "POPULATE", "1", "p", "2", "extra"],
        cmd!["DEBUG", "CLIENT-EVICTION"],
        cmd!["DEBUG", "PAUSE-CRON", "0"],
        cmd!["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0"],
        cmd!["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"],
        cmd!["DEBUG", "CHANGE-REPL-ID"],
        cmd!["DEBUG", "CONFIG-REWRITE-FORCE-ALL"],
        cmd!["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never"],
        cmd!["DEBUG", "REPLYBUFFER", "peak-reset-time", "RESET"],
        cmd!["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100"],
        cmd!["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "abc"],
        cmd!["DEBUG", "REPLYBUFFER", "RESIZING", "1"],
        cmd!["DEBUG", "REPLYBUFFER", "nosuch", "1"],
        cmd!["DEBUG", "REPLYBUFFER", "RESIZING"],
        cmd!["DEBUG", "DIGEST-VALUE", "str", "int"],
    ]
}

#[test]
fn simple_subcommands_and_their_errors_match_redis() {
    let (_densekv, _redis, mut twin) = twin(3);
    twin.one(&cmd!["RPUSH", "list", "a", "b"]);
    twin.one(&cmd!["SET", "int", "12"]);
    twin.one(&cmd!["SET", "str", "hello"]);
    twin.one(&cmd!["HSET", "hash", "f", "v"]);
    for case in argument_cases().iter().chain(&lookup_cases()) {
        twin.one(case);
    }
    for size in [
        "0",
        "1",
        "2",
        "1k",
        "1KB",
        "1m",
        "1MB",
        "1g",
        "3gb",
        "4gb",
        "4293918720",
        "4293918721",
        "-1",
        "1x",
        "",
        "gb",
        "+5",
        "99999999999999999999",
        "18014398509481984kb",
    ] {
        twin.one(&cmd!["DEBUG", "QUICKLIST-PACKED-THRESHOLD", size]);
    }
    // DEBUG ERROR's reply is not counted as an error reply, by either.
    twin.one(&cmd!["CONFIG", "RESETSTAT"]);
    twin.one(&cmd!["DEBUG", "ERROR", "not counted"]);
    for client in [&mut twin.densekv, &mut twin.redis] {
        let info = String::from_utf8(client.cmd(&["INFO", "stats"])).unwrap();
        assert!(info.contains("total_error_replies:0\r\n"), "{info}");
    }
}

#[test]
fn populate_makes_the_same_keys_and_values() {
    let (_densekv, _redis, mut twin) = twin(4);
    twin.one(&cmd!["SET", "key:5", "taken"]);
    let long_prefix = "p".repeat(150);
    let cases = [
        cmd!["DEBUG", "POPULATE", "2000"],
        cmd!["DEBUG", "POPULATE", "100", "short", "3"],
        cmd!["DEBUG", "POPULATE", "50", "padded", "20"],
        cmd!["DEBUG", "POPULATE", "10", long_prefix],
        cmd!["DEBUG", "POPULATE", "0"],
        cmd!["SELECT", "2"],
        cmd!["DEBUG", "POPULATE", "30", "two"],
        cmd!["DEBUG", "POPULATE", "30", "two", "0"],
    ];
    for case in &cases {
        twin.one(case);
    }
    twin.one(&cmd!["DBSIZE"]);
    twin.one(&cmd!["SELECT", "0"]);
    twin.one(&cmd!["DBSIZE"]);
    twin.one(&cmd!["GET", "key:5"]);
    twin.one(&cmd!["GET", "padded:7"]);
    twin.one(&cmd!["GET", "short:42"]);
    twin.one(&cmd!["KEYS", "ppp*"].with(Check::Sorted));
    twin.one(&cmd!["DEBUG", "OBJECT", "key:1"].with(Check::Shape));
    twin.one(&cmd!["OBJECT", "ENCODING", "key:1"]);
    digest(&mut twin);
}

/// Lines of densekv's DEBUG HELP that are not Redis 7.0.15's: its own VALIDATE, the later
/// forms it takes (HTSTATS `full`, OBJECT `fast`, DICT-RESIZING), and POPULATE without the
/// sentence about replicas and cluster slots, which densekv does not have.
const OWN_HELP_LINES: [&str; 7] = [
    "VALIDATE",
    "    Check every keyspace structure's invariants (densekv).",
    "HTSTATS",
    "OBJECT <key> [fast]",
    "DICT-RESIZING <0|1>",
    "    Enable or disable the main dict and expire dict resizing.",
    "    it is used instead of the 'key' prefix.",
];

#[test]
fn help_has_redis_servers_frame_and_lines() {
    let (densekv, redis) = Server::pair(&DEBUG_ON);
    let ours = decode(&densekv.connect().cmd(&["DEBUG", "HELP"]));
    let theirs = decode(&redis.connect().cmd(&["DEBUG", "HELP"]));
    let (ours, theirs) = (ours.array(), theirs.array());
    assert_eq!(ours[0], theirs[0]);
    assert_eq!(ours[ours.len() - 2..], theirs[theirs.len() - 2..]);
    for line in ours {
        let text = String::from_utf8_lossy(line.bulk());
        let own = OWN_HELP_LINES.iter().any(|l| text.starts_with(l));
        assert!(own || theirs.contains(line), "{text:?} is not Redis's");
    }
}

#[test]
fn densekv_refuses_what_a_redis_without_jemalloc_refuses() {
    let server = Server::densekv(&DEBUG_ON);
    let mut client = server.connect();
    for sub in ["MALLCTL", "MALLCTL-STR"] {
        assert_eq!(
            show(&client.cmd(&["DEBUG", sub, "opt.narenas"])),
            show(
                format!("-ERR unknown subcommand or wrong number of arguments for '{sub}'. Try DEBUG HELP.\r\n")
                    .as_bytes()
            )
        );
    }
    assert_eq!(client.cmd(&["DEBUG", "VALIDATE"]), b"+OK\r\n");
    let denied = Server::densekv(&[]);
    let reply = denied.connect().cmd(&["DEBUG", "DIGEST"]);
    assert!(
        reply.starts_with(b"-ERR DEBUG command not allowed."),
        "{}",
        show(&reply)
    );
}

/// ASSERT, SEGFAULT and OOM crash as PANIC does: a bug report naming the command, then SIGABRT.
#[test]
fn crash_subcommands_write_a_bug_report() {
    use std::os::unix::process::ExitStatusExt;
    let dir = std::env::temp_dir().join(format!("densekv-debug-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (sub, says) in [
        ("ASSERT", "assertion failed: 1 == 2"),
        ("SEGFAULT", "crashed by signal: 11"),
        ("OOM", "Out Of Memory allocating"),
    ] {
        let log = dir.join(format!("{sub}.log"));
        let log_arg = log.to_str().unwrap().to_string();
        let mut server = Server::densekv(&["--logfile", &log_arg, "--enable-debug-command", "yes"]);
        server
            .connect()
            .send(&support::encode(&[b"DEBUG", sub.as_bytes()]));
        let status = server
            .wait_exit(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("DEBUG {sub} did not stop the server"));
        assert_eq!(status.signal(), Some(6), "DEBUG {sub} ended by {status}");
        let report = std::fs::read_to_string(&log).unwrap();
        assert!(report.contains("=== DENSEKV BUG REPORT START"), "{report}");
        assert!(report.contains(says), "{report}");
        assert!(
            report.contains("current command: 'debug' with 2 arguments"),
            "{report}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
