//! Memory that comes back, measured by the process's VmRSS (bounds are generous: the machine is
//! shared): deletes compacted and decayed, MEMORY PURGE at once, big values built by APPEND,
//! the active defragmenter; and INFO / MEMORY STATS agreeing with VmRSS and with themselves.

#[macro_use]
mod support;

use std::time::{Duration, Instant};
use support::{Client, Server};

fn info_u64(c: &mut Client, field: &str) -> u64 {
    let text = String::from_utf8_lossy(&c.cmd(&["INFO", "everything"])).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO"))
        .parse()
        .unwrap()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// SETs `key:%012d` for `range` with `value`, pipelined.
fn load(c: &mut Client, range: std::ops::Range<usize>, value: &[u8]) {
    let ids: Vec<usize> = range.collect();
    for chunk in ids.chunks(1_000) {
        let commands: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|i| {
                vec![
                    b"SET".to_vec(),
                    format!("key:{i:012}").into_bytes(),
                    value.to_vec(),
                ]
            })
            .collect();
        assert!(c.pipeline(&commands).iter().all(|r| r == b"+OK\r\n"));
    }
}

fn delete(c: &mut Client, ids: impl Iterator<Item = usize>) {
    let ids: Vec<usize> = ids.collect();
    for chunk in ids.chunks(1_000) {
        let commands: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|i| vec![b"DEL".to_vec(), format!("key:{i:012}").into_bytes()])
            .collect();
        assert!(c.pipeline(&commands).iter().all(|r| r == b":1\r\n"));
    }
}

/// Polls `f` every 100 ms until it holds or `limit` passes; whether it held.
fn within(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Deleting every other key: compaction brings used_memory and RSS down (RSS counted above the
/// empty server's); deleting the rest brings RSS near the empty server's, without MEMORY PURGE.
#[test]
fn deleted_keys_give_their_memory_back() {
    let densekv = Server::densekv(&[]);
    let mut c = densekv.connect();
    let empty = densekv.rss_kib();
    load(&mut c, 0..300_000, b"0123456789abcdef");
    std::thread::sleep(Duration::from_millis(300));
    let (full_used, full_rss) = (info_u64(&mut c, "used_memory"), densekv.rss_kib());
    delete(&mut c, (0..300_000).step_by(2));
    let half = within(Duration::from_secs(15), || {
        let used = info_u64(&mut c, "used_memory");
        let rss_grown = densekv.rss_kib().saturating_sub(empty);
        used * 10 <= full_used * 6 && rss_grown * 10 <= (full_rss - empty) * 7
    });
    assert!(
        half,
        "after deleting half: used_memory {} of {full_used}, RSS {} of {full_rss} KiB",
        info_u64(&mut c, "used_memory"),
        densekv.rss_kib()
    );
    delete(&mut c, (1..300_000).step_by(2));
    let grown = full_rss - empty;
    let all = within(Duration::from_secs(15), || {
        densekv.rss_kib().saturating_sub(empty) * 5 <= grown
    });
    assert!(
        all,
        "after deleting all: RSS {} KiB, empty {empty}, full {full_rss}",
        densekv.rss_kib()
    );
}

/// MEMORY PURGE gives freed memory back at once, where decay would take a second.
#[test]
fn memory_purge_releases_at_once() {
    let densekv = Server::densekv(&["--hz", "1"]);
    let mut c = densekv.connect();
    let empty = densekv.rss_kib();
    load(&mut c, 0..200_000, &[b'p'; 200]);
    let full = densekv.rss_kib();
    assert_eq!(c.cmd(&["FLUSHALL"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["MEMORY", "PURGE"]), b"+OK\r\n");
    let rss = densekv.rss_kib();
    assert!(
        rss.saturating_sub(empty) * 5 <= full - empty,
        "after FLUSHALL and MEMORY PURGE: RSS {rss} KiB, empty {empty}, full {full}"
    );
}

/// The heap's resident estimate follows VmRSS: what the server grew by, and what INFO says it
/// grew by, agree within 10%.
#[test]
fn internal_accounting_agrees_with_rss() {
    let densekv = Server::densekv(&[]);
    let mut c = densekv.connect();
    let (rss0, resident0) = (
        densekv.rss_kib() * 1024,
        info_u64(&mut c, "allocator_resident"),
    );
    load(&mut c, 0..400_000, b"0123456789abcdef");
    load(&mut c, 400_000..450_000, &[b'v'; 300]);
    std::thread::sleep(Duration::from_millis(300));
    let rss = densekv.rss_kib() * 1024 - rss0;
    let resident = info_u64(&mut c, "allocator_resident") - resident0;
    let error = (resident as f64 - rss as f64).abs() / rss as f64;
    assert!(
        error <= 0.10,
        "VmRSS grew {:.1} MiB, allocator_resident {:.1} MiB",
        mib(rss),
        mib(resident)
    );
}

/// A value built by APPEND takes about its size, and leaves with DEL.
#[test]
fn a_value_built_by_append_takes_its_size() {
    let densekv = Server::densekv(&[]);
    let mut c = densekv.connect();
    let empty = densekv.rss_kib();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..96 {
        c.command(&[b"APPEND", b"big", &chunk]);
    }
    assert_eq!(c.cmd(&["STRLEN", "big"]), b":100663296\r\n");
    let grown = mib((densekv.rss_kib() - empty) * 1024);
    assert!(
        grown < 96.0 * 1.4,
        "96 MiB built by APPEND: RSS grew {grown:.1} MiB"
    );
    assert_eq!(c.cmd(&["DEL", "big"]), b":1\r\n");
    let back = within(Duration::from_secs(10), || {
        mib(densekv.rss_kib().saturating_sub(empty) * 1024) < 16.0
    });
    assert!(
        back,
        "after DEL: RSS {} KiB, empty {empty}",
        densekv.rss_kib()
    );
}

/// MEMORY STATS adds up as Redis's does, and agrees with INFO.
#[test]
fn memory_stats_adds_up() {
    let densekv = Server::densekv(&[]);
    let mut c = densekv.connect();
    load(&mut c, 0..50_000, b"0123456789abcdef");
    let reply = c.cmd(&["MEMORY", "STATS"]);
    let fields = support::decode(&reply);
    let items = fields.array();
    let int = |name: &str| -> u64 {
        let pair = items
            .chunks(2)
            .find(|p| p[0].bulk() == name.as_bytes())
            .unwrap_or_else(|| panic!("no {name}"));
        match pair[1] {
            support::Value::Int(n) => u64::try_from(n).unwrap(),
            ref other => panic!("{name}: {other:?}"),
        }
    };
    assert_eq!(items.len(), 2 * 28, "27 fields and db.0");
    assert_eq!(int("keys.count"), 50_000);
    assert_eq!(
        int("dataset.bytes") + int("overhead.total"),
        int("total.allocated")
    );
    assert!(int("allocator.resident") >= int("allocator.active"));
    let used = info_u64(&mut c, "used_memory");
    assert!(int("total.allocated").abs_diff(used) < used / 100);
    let doctor = c.cmd(&["MEMORY", "DOCTOR"]);
    assert!(String::from_utf8_lossy(&doctor).contains("Sam"));
}

/// With activedefrag on, values left in sparse slabs after random deletes are moved: the
/// defragmenter counts hits and the heaps' fragmentation falls.
#[test]
fn active_defrag_moves_values_out_of_sparse_slabs() {
    let densekv = Server::densekv(&[]);
    let mut c = densekv.connect();
    load(&mut c, 0..100_000, &[b'd'; 300]);
    // Keep one key in five: every slab keeps a few live values.
    delete(&mut c, (0..100_000).filter(|i| i % 5 != 0));
    std::thread::sleep(Duration::from_millis(1_500));
    let ratio = |c: &mut Client| {
        let text = String::from_utf8_lossy(&c.cmd(&["INFO", "memory"])).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix("allocator_frag_ratio:"))
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    let before = ratio(&mut c);
    assert!(
        before > 1.3,
        "the deletes should leave slabs sparse: {before}"
    );
    for (name, value) in [
        ("active-defrag-ignore-bytes", "1mb"),
        ("active-defrag-threshold-lower", "5"),
        ("active-defrag-cycle-max", "75"),
        ("activedefrag", "yes"),
    ] {
        assert_eq!(c.cmd(&["CONFIG", "SET", name, value]), b"+OK\r\n");
    }
    let done = within(Duration::from_secs(20), || {
        ratio(&mut c) < 1.0 + (before - 1.0) / 2.0
    });
    assert!(info_u64(&mut c, "active_defrag_hits") > 1_000);
    assert!(done, "fragmentation {before} → {}", ratio(&mut c));
    for i in (0..100_000).step_by(5).take(200) {
        let v = c.cmd(&["GET", &format!("key:{i:012}")]);
        assert_eq!(v, [&b"$300\r\n"[..], &[b'd'; 300], b"\r\n"].concat());
    }
}

/// A zset past the packed thresholds: MEMORY USAGE counts its tree and member index (under 0.5×
/// redis-server's ~130 B per 19-byte member at this size, issue #31's bound), and DEBUG
/// HTSTATS-KEY describes the index.
#[test]
fn a_large_zset_reports_its_index() {
    let densekv = Server::densekv(&["--enable-debug-command", "yes"]);
    let mut c = densekv.connect();
    let mut zadd = vec!["ZADD".to_string(), "z".to_string()];
    for i in 0..300 {
        zadd.push(format!("{}", f64::from(i) * 1.5));
        zadd.push(format!("member:{i:012}"));
    }
    let args: Vec<&str> = zadd.iter().map(String::as_str).collect();
    assert_eq!(c.cmd(&args), b":300\r\n");
    let usage = String::from_utf8(c.cmd(&["MEMORY", "USAGE", "z", "SAMPLES", "0"])).unwrap();
    let usage: u64 = usage.trim_start_matches(':').trim().parse().unwrap();
    assert!(
        (300 * 19..=300 * 65).contains(&usage),
        "MEMORY USAGE {usage}"
    );
    let stats = String::from_utf8(c.cmd(&["DEBUG", "HTSTATS-KEY", "z"])).unwrap();
    assert!(
        stats.contains("ZSetIndex: members 300, tree leaves "),
        "{stats}"
    );
}
