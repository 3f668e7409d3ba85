//! CONFIG against redis-server 7.0.15, reply for reply: for every directive (by its name and its
//! alias) CONFIG SET with valid values, each kind of bad value (not a number, out of range, bad
//! memory unit, bad enum, bad bool, wrong argument count), then CONFIG GET; immutable and
//! protected directives, duplicates, multi-pair atomicity; GET patterns; and CONFIG REWRITE of
//! the same file on both servers.
//!
//! Values come from the directive table itself (bounds ± 1, every enum name, the memory and
//! percent forms…), so a directive added to the table is tested without a new line here. The
//! exclusions below are values whose effect is outside CONFIG's reply, each with its reason.

mod support;

use server::config::{DIRECTIVES, Directive, Kind, NumType, flag, num};
use std::collections::BTreeSet;
use support::{Client, Server, decode, show};

/// Values redis-server acts on beyond its configuration (or densekv by design answers
/// differently), so their replies cannot match.
fn excluded(name: &str, value: &str) -> Option<&'static str> {
    match (name, value) {
        // Both listen again on the new port or addresses, which two servers on one host cannot
        // share (connections.rs tests densekv's rebind).
        ("port", v) if v.parse::<u16>().is_ok() => Some("rebinds the listener"),
        ("bind", v) if v.split(' ').count() <= 16 => Some("rebinds the listener"),
        // Redis configures TLS (and fails without certificates); densekv has no TLS.
        ("tls-port", _) => Some("densekv refuses TLS; Redis tries to configure it"),
        ("tls-replication" | "tls-cluster", v) if v.eq_ignore_ascii_case("yes") => {
            Some("Redis tries to configure TLS")
        }
        // densekv refuses what would need replicas.
        ("min-replicas-to-write" | "min-slaves-to-write", v)
            if v.parse::<i64>()
                .is_ok_and(|n| n > 0 && n <= i64::from(i32::MAX)) =>
        {
            Some("densekv refuses min-replicas-to-write > 0 (no replication)")
        }
        // Redis starts an AOF rewrite in a child process.
        ("appendonly", v) if v.eq_ignore_ascii_case("yes") => Some("starts Redis's AOF"),
        // Redis arms a SIGALRM watchdog.
        ("watchdog-period", v) if v != "0" && v.parse::<i64>().is_ok() => Some("arms a watchdog"),
        // A limit so small Redis would close or evict the test's own client.
        ("maxmemory-clients", v) if v.parse::<i64>().is_ok_and(|n| n > 0) => {
            Some("evicts the test client")
        }
        ("timeout", v) if v.parse::<i64>().is_ok_and(|n| n > 0 && n < 100) => {
            Some("closes the test client")
        }
        // Debian's redis-server (system jemalloc) has no defragmenter; densekv has one
        // (tests/memory.rs).
        ("activedefrag", v) if v.eq_ignore_ascii_case("yes") => {
            Some("no defragmenter in the oracle")
        }
        _ => None,
    }
}

fn bound_text(ty: NumType, v: i64) -> String {
    if matches!(ty, NumType::UInt | NumType::ULongLong | NumType::SizeT) {
        (v as u64).to_string()
    } else {
        v.to_string()
    }
}

/// The values CONFIG SET tries for a generic directive.
fn generic_values(d: &Directive) -> Vec<String> {
    let mut values: Vec<String> = Vec::new();
    match d.kind {
        Kind::Bool(_) => values.extend(["yes", "no", "YES", "maybe", ""].map(String::from)),
        Kind::Str(_) => values.extend(["x", "", "a/b", "some-file.txt", "a b"].map(String::from)),
        Kind::Enum(e) => {
            values.extend(e.names.iter().map(|(n, _)| (*n).to_string()));
            values.push(e.names[0].0.to_uppercase());
            values.push("bogus".into());
            if d.has(flag::MULTI_ARG) {
                values.extend(["nosave now", "save nosave", "force  now", ""].map(String::from));
            }
        }
        Kind::Num(n) => {
            let (lower, upper) = (i128::from(n.lower), i128::from(n.upper));
            let unsigned = matches!(n.ty, NumType::UInt | NumType::ULongLong | NumType::SizeT);
            let upper = if unsigned && n.upper == -1 {
                i128::from(u64::MAX)
            } else {
                upper
            };
            values.push(bound_text(n.ty, n.lower));
            values.push(upper.to_string());
            values.push((lower - 1).to_string());
            values.push((upper + 1).to_string());
            values.extend(["abc", "1.5", "", "12"].map(String::from));
            if n.flags & num::MEMORY != 0 {
                values.extend(["2mb", "3KB", "1zb", "5g", "-1"].map(String::from));
            }
            if n.flags & num::PERCENT != 0 {
                values.extend(["50%", "101%", "-5%", "%"].map(String::from));
            }
            if n.flags & num::OCTAL != 0 {
                values.extend(["755", "8", "1000", "0"].map(String::from));
            }
        }
        Kind::Special(_) => values.extend(special_values(d.name).iter().map(|v| (*v).to_string())),
    }
    values
}

fn special_values(name: &str) -> &'static [&'static str] {
    match name {
        "save" => &[
            "100 1",
            "100 1 200 2",
            "",
            "100",
            "0 1",
            "100 -1",
            "a b",
            "100  1",
            "3600 1 300 100",
        ],
        "client-output-buffer-limit" => &[
            "normal 1mb 2mb 3",
            "replica 1mb 1mb 1",
            "slave 0 0 0",
            "pubsub 1 2",
            "master 1 2 3",
            "normal 1zb 1 1",
            "normal 1gb 1gb -1",
            "",
            "normal 64mb 32mb 60 pubsub 1mb 1mb 1",
            "normal 0 0 0",
        ],
        "oom-score-adj-values" => &[
            "0 200 800",
            "1 2 3",
            "1 2",
            "3000 1 1",
            "a b c",
            "800 200 0",
            "0 200 800",
        ],
        "notify-keyspace-events" => &["KEA", "Elg", "", "Q", "Axm", "n", "KA$"],
        "latency-tracking-info-percentiles" => &[
            "50 99 99.9",
            "",
            "101",
            "abc",
            "0 100",
            "99.999",
            "1e1",
            "-1",
            "50 99 99.9",
        ],
        "bind" => &["1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"],
        "replicaof" => &["no one", "127.0.0.1 6380"],
        "dir" => &["/tmp", "/nonexistent-densekv"],
        _ => &[],
    }
}

fn both(densekv: &mut Client, redis: &mut Client, args: &[&str]) -> (Vec<u8>, Vec<u8>) {
    (densekv.cmd(args), redis.cmd(args))
}

#[test]
fn every_directive_sets_and_gets_like_redis() {
    let (densekv, redis) = Server::pair(&["--save", ""]);
    let (mut ours, mut theirs) = (densekv.connect(), redis.connect());
    let mut checked = 0;
    for named in server::config::names() {
        let (name, d) = (named.name, named.directive);
        if server::config::densekv_only(d.name) {
            continue;
        }
        // The value to restore: redis-server's own, read now.
        let initial = decode(&theirs.cmd(&["CONFIG", "GET", name]));
        let initial = String::from_utf8_lossy(initial.array()[1].bulk()).into_owned();
        for value in generic_values(d) {
            if excluded(name, &value).is_some() {
                continue;
            }
            eprintln!("CONFIG SET {name} {value:?}");
            let (a, b) = both(&mut ours, &mut theirs, &["CONFIG", "SET", name, &value]);
            assert_eq!(show(&a), show(&b), "CONFIG SET {name} {value:?}");
            let (a, b) = both(&mut ours, &mut theirs, &["CONFIG", "GET", name]);
            // Each server listens on its own port.
            if name != "port" {
                assert_eq!(show(&a), show(&b), "CONFIG GET {name} after SET {value:?}");
            }
            checked += 1;
        }
        if !d.has(flag::IMMUTABLE) && excluded(name, &initial).is_none() {
            let (a, b) = both(&mut ours, &mut theirs, &["CONFIG", "SET", name, &initial]);
            assert_eq!(show(&a), show(&b), "restoring {name} to {initial:?}");
        }
    }
    assert!(checked > 1200, "only {checked} sets compared");
}

#[test]
fn the_defaults_are_redis_defaults() {
    let (densekv, redis) = Server::pair(&["--save", ""]);
    let get_all = |server: &Server| {
        let reply = decode(&server.connect().cmd(&["CONFIG", "GET", "*"]));
        let pairs: BTreeSet<(Vec<u8>, Vec<u8>)> = reply
            .array()
            .chunks(2)
            .map(|kv| (kv[0].bulk().to_vec(), kv[1].bulk().to_vec()))
            .collect();
        pairs
    };
    let (ours, theirs) = (get_all(&densekv), get_all(&redis));
    // Each server's own port; io-threads defaults to half the cores in densekv (Redis: 1);
    // densekv's own directives exist only there.
    let skip = |name: &[u8]| {
        matches!(name, b"port" | b"io-threads")
            || server::config::densekv_only(&String::from_utf8_lossy(name))
    };
    let ours: BTreeSet<_> = ours.into_iter().filter(|(n, _)| !skip(n)).collect();
    let theirs: BTreeSet<_> = theirs.into_iter().filter(|(n, _)| !skip(n)).collect();
    let missing: Vec<String> = theirs
        .symmetric_difference(&ours)
        .map(|(n, v)| {
            format!(
                "{} = {:?}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            )
        })
        .collect();
    assert!(missing.is_empty(), "differences: {missing:#?}");
    // The hidden directives answer by exact name only.
    for hidden in DIRECTIVES.iter().filter(|d| d.has(flag::HIDDEN)) {
        let (mut a, mut b) = (densekv.connect(), redis.connect());
        let args = ["CONFIG", "GET", hidden.name];
        assert_eq!(show(&a.cmd(&args)), show(&b.cmd(&args)), "{}", hidden.name);
    }
}

#[test]
fn get_patterns_and_names() {
    let (densekv, redis) = Server::pair(&["--save", ""]);
    let (mut ours, mut theirs) = (densekv.connect(), redis.connect());
    let sorted = |reply: &[u8]| {
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = decode(reply)
            .array()
            .chunks(2)
            .map(|kv| (kv[0].bulk().to_vec(), kv[1].bulk().to_vec()))
            .filter(|(name, _)| !server::config::densekv_only(&String::from_utf8_lossy(name)))
            .collect();
        pairs.sort();
        pairs
    };
    for args in [
        &["CONFIG", "GET", "*max*"][..],
        &["CONFIG", "GET", "maxmemory*", "hz", "HZ"],
        &["CONFIG", "GET", "slave*"],
        &["CONFIG", "GET", "*-ziplist-*"],
        &["CONFIG", "GET", "use-exit*", "key-load-delay"],
        &["CONFIG", "GET", "[a-c]*"],
        &["CONFIG", "GET", "nosuch", "*nosuch*"],
        &["CONFIG", "GET", "*MAXMEMORY*"],
    ] {
        let (a, b) = both(&mut ours, &mut theirs, args);
        assert_eq!(sorted(&a), sorted(&b), "{args:?}");
    }
    // One name: the reply is exact, named as asked.
    for args in [
        &["CONFIG", "GET", "PORT"][..],
        &["CONFIG", "GET", "timeout", "TIMEOUT"],
        &["CONFIG", "GET"],
    ] {
        let (a, b) = both(&mut ours, &mut theirs, args);
        if args.len() == 3 && args[2] == "PORT" {
            assert!(a.starts_with(b"*2\r\n$4\r\nPORT\r\n"), "{}", show(&a));
        } else {
            assert_eq!(show(&a), show(&b), "{args:?}");
        }
    }
    let (a, b) = both(&mut ours, &mut theirs, &["HELLO", "3"]);
    assert_eq!(a.is_empty(), b.is_empty());
    let (a, b) = both(&mut ours, &mut theirs, &["CONFIG", "GET", "maxclients"]);
    assert_eq!(show(&a), show(&b), "RESP3 map");
}

#[test]
fn set_errors_duplicates_and_atomicity() {
    let (densekv, redis) = Server::pair(&["--save", ""]);
    let (mut ours, mut theirs) = (densekv.connect(), redis.connect());
    let script: &[&[&str]] = &[
        &["CONFIG", "SET", "maxmemory", "10mb", "timeout", "abc"],
        &["CONFIG", "GET", "maxmemory"],
        &["CONFIG", "SET", "timeout", "300", "maxmemory", "1zb"],
        &["CONFIG", "GET", "timeout"],
        &["CONFIG", "SET", "port", "1", "port", "2"],
        &["CONFIG", "SET", "hz", "11", "HZ", "12"],
        &[
            "CONFIG",
            "SET",
            "replica-priority",
            "1",
            "slave-priority",
            "2",
        ],
        &["CONFIG", "GET", "replica-priority"],
        &["CONFIG", "SET", "nosuch", "1", "port", "abc"],
        &["CONFIG", "SET", "port", "abc", "nosuch", "1"],
        &["CONFIG", "SET", "daemonize", "yes", "nosuch", "1"],
        &["CONFIG", "SET", "nosuch", "1", "daemonize", "yes"],
        &["CONFIG", "SET", "dir", "/tmp"],
        &["CONFIG", "SET", "dbfilename", "x.rdb"],
        &["CONFIG", "SET", "a", "b", "c"],
        &["CONFIG", "SET", "port"],
        &[
            "CONFIG",
            "SET",
            "save",
            "100 1",
            "maxmemory",
            "2mb",
            "hz",
            "1000",
        ],
        &["CONFIG", "GET", "save"],
        &["CONFIG", "GET", "hz"],
        &["CONFIG", "SET", "hz", "0"],
        &["CONFIG", "GET", "hz"],
        &[
            "CONFIG",
            "SET",
            "save",
            "100 1",
            "maxmemory",
            "2mb",
            "oom-score-adj-values",
            "1 2",
        ],
        &["CONFIG", "GET", "save"],
        &["CONFIG", "SET", "shutdown-on-sigterm", "nosave now"],
        &["CONFIG", "GET", "shutdown-on-sigterm"],
        &["CONFIG", "SET", "oom-score-adj", "relative"],
        &["CONFIG", "GET", "oom-score-adj"],
        &["CONFIG", "SET", "oom-score-adj", "no"],
        &["CONFIG", "FOO"],
        &["CONFIG", "HELP"],
        &["CONFIG", "HELP", "x"],
        &["CONFIG", "REWRITE"],
        &["CONFIG", "RESETSTAT", "x"],
        &["CONFIG"],
    ];
    for args in script {
        let (a, b) = both(&mut ours, &mut theirs, args);
        assert_eq!(show(&a), show(&b), "{args:?}");
    }
}

/// A server's config file after CONFIG REWRITE, with its own port and directory normalized.
fn rewritten(server: &Server, dir: &std::path::Path, sets: &[&[&str]]) -> String {
    let mut client = server.connect();
    for args in sets {
        assert_eq!(
            client.cmd(args),
            b"+OK\r\n",
            "{args:?} on {:?}",
            server.kind
        );
    }
    assert_eq!(
        client.cmd(&["CONFIG", "REWRITE"]),
        b"+OK\r\n",
        "{:?}",
        server.kind
    );
    let text = std::fs::read_to_string(dir.join("redis.conf")).expect("rewritten file");
    text.replace(&format!("port {}", server.port), "port <port>")
        .replace(&dir.canonicalize().unwrap().display().to_string(), "<dir>")
}

/// What both servers change before their CONFIG REWRITE.
const REWRITE_SETS: &[&[&str]] = &[
    &[
        "CONFIG",
        "SET",
        "maxmemory",
        "2mb",
        "timeout",
        "5",
        "save",
        "100 1 200 2",
    ],
    &[
        "CONFIG",
        "SET",
        "hz",
        "20",
        "notify-keyspace-events",
        "KEA",
        "slave-priority",
        "7",
    ],
    &[
        "CONFIG",
        "SET",
        "maxmemory-policy",
        "noeviction",
        "loglevel",
        "verbose",
    ],
    &[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "pubsub 1mb 512kb 5",
        "maxmemory-clients",
        "10%",
    ],
    &[
        "CONFIG",
        "SET",
        "oom-score-adj-values",
        "0 100 800",
        "shutdown-on-sigint",
        "nosave now",
    ],
    &["CONFIG", "SET", "requirepass", "s3cret"],
];

/// A rewritten file's lines kept in place, and the set of lines appended after the signature
/// (Redis appends in its dict's order).
fn kept_and_appended(text: &str) -> (String, BTreeSet<String>) {
    let (kept, appended) = text
        .split_once("# Generated by CONFIG REWRITE\n")
        .unwrap_or((text, ""));
    (
        kept.to_string(),
        appended.lines().map(String::from).collect(),
    )
}

#[test]
fn rewrite_gives_the_same_file() {
    let template = "# A config file with comments\n\nport 6379\nbind 127.0.0.1\n  save 900 1\nsave 300 10\n\
        slave-priority 50\nhash-max-ziplist-entries 100\nlist-max-ziplist-entries 512\nrename-command KEYS \"\"\n\
        # timeout comes later\nmaxmemory 100mb\nmaxmemory-policy allkeys-lru\nnotify-keyspace-events \"\"\n\
        client-output-buffer-limit normal 0 0 0\nclient-output-buffer-limit replica 256mb 64mb 60\n\n\n\nloglevel notice\n";
    let mut files = Vec::new();
    for kind in [support::Kind::Densekv, support::Kind::Redis] {
        let dir =
            std::env::temp_dir().join(format!("densekv-rewrite-{}-{kind:?}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("redis.conf"), template).unwrap();
        let server = Server::from_file(kind, "redis.conf", &[], &dir);
        files.push(rewritten(&server, &dir, REWRITE_SETS));
        let _ = std::fs::remove_dir_all(&dir);
    }
    let (ours, theirs) = (kept_and_appended(&files[0]), kept_and_appended(&files[1]));
    assert_eq!(ours.0, theirs.0, "lines in place");
    assert_eq!(ours.1, theirs.1, "appended lines");
}
