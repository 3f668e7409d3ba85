//! The forkless BGSAVE: its file is the dataset at the instant BGSAVE replied however clients
//! write meanwhile (checked by DEBUG DIGEST in densekv and in redis-server loading the file);
//! in-place string edits (SETBIT, PFADD into a dense HyperLogLog) are preserved for the save
//! like any write; SIGKILL during a BGSAVE leaves the previous file whole; save points start saves on their
//! timers; a failed save refuses writes with MISCONF as redis-server does; FLUSHALL and
//! SHUTDOWN abort a running save, which ends with its walk; BGSAVE's replies match
//! redis-server's.

#[macro_use]
mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::dataset::dataset;
use support::diff::Twin;
use support::persist::{densekv_in, info_field, sigkill_during_saves, wait_bgsave};
use support::{Client, Server, show};

fn temp_dir(name: &str) -> PathBuf {
    support::persist::temp_dir("bgsave", name)
}

fn ok(reply: &[u8]) {
    assert!(!reply.starts_with(b"-"), "{}", show(reply));
}

/// Writes of every kind over the dataset and the `k:*` strings, run while a save is walking.
fn churn(c: &mut Client) {
    let mut batch: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut push = |args: &[&str]| batch.push(args.iter().map(|a| a.as_bytes().to_vec()).collect());
    for i in 0..20_000 {
        match i % 5 {
            0 => push(&["SET", &format!("k:{i}"), "overwritten"]),
            1 => push(&["DEL", &format!("k:{i}")]),
            2 => push(&["APPEND", &format!("k:{i}"), "+more"]),
            3 => push(&["EXPIRE", &format!("k:{i}"), "1000"]),
            _ => push(&["SET", &format!("new:{i}"), "born after the save"]),
        }
    }
    for db in 0..16 {
        push(&["SELECT", &db.to_string()]);
        for key in [
            "hash", "list", "set", "zset", "intset", "bighash", "biglist", "bigset",
        ] {
            push(&["DEL", key]);
            push(&["LPUSH", &format!("{key}:new"), "x"]);
        }
        push(&["RPUSH", "biglist:0", "tail"]);
        push(&["SADD", "bigset:0", "extra"]);
        push(&["HSET", "bighash:0", "f", "changed"]);
        push(&["ZADD", "zset:0", "7", "m"]);
    }
    // In-place string edits: a bitmap set inside and past its end, a dense HyperLogLog.
    push(&["SELECT", "0"]);
    for i in 0..200 {
        push(&["SETBIT", "bitmap", &(i * 7919).to_string(), "1"]);
        push(&["PFADD", "hll", &format!("during:{i}")]);
    }
    push(&["SELECT", "3"]);
    push(&["FLUSHDB"]);
    push(&["SWAPDB", "1", "2"]);
    push(&["SELECT", "0"]);
    for reply in c.pipeline(&batch) {
        ok(&reply);
    }
}

/// A dense HyperLogLog `hll`, its copy `hll:copy`, and a 12.5 KB bitmap `bitmap`, in db 0.
fn dense_hll_and_bitmap(c: &mut Client) {
    let adds: Vec<Vec<Vec<u8>>> = (0..20)
        .map(|batch| {
            let mut args = vec![b"PFADD".to_vec(), b"hll".to_vec()];
            args.extend((0..1000).map(|i| format!("before:{}", batch * 1000 + i).into_bytes()));
            args
        })
        .collect();
    for reply in c.pipeline(&adds) {
        ok(&reply);
    }
    assert_eq!(c.cmd(&["PFDEBUG", "ENCODING", "hll"]), b"+dense\r\n");
    ok(&c.cmd(&["PFMERGE", "hll:copy", "hll"]));
    ok(&c.cmd(&["SETBIT", "bitmap", "100000", "1"]));
}

#[test]
fn the_file_is_the_dataset_when_bgsave_replied() {
    let dir = temp_dir("pit");
    let server = densekv_in(&dir, &[]);
    let mut c = server.connect();
    for (_, _, cmds) in dataset(21) {
        let replies = c.pipeline(&cmds.iter().map(|cmd| cmd.args.clone()).collect::<Vec<_>>());
        for r in &replies {
            ok(r);
        }
    }
    c.cmd(&["SELECT", "0"]);
    ok(&c.cmd(&["DEBUG", "POPULATE", "20000", "k"]));
    dense_hll_and_bitmap(&mut c);
    let digest = c.cmd(&["DEBUG", "DIGEST"]);
    // A slow walk, so the writes below land while it runs.
    ok(&c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "100"]));
    assert_eq!(c.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    churn(&mut c);
    assert_eq!(
        info_field(&mut c, "rdb_bgsave_in_progress"),
        "1",
        "the writes ran during the save"
    );
    assert_ne!(c.cmd(&["DEBUG", "DIGEST"]), digest);
    ok(&c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "0"]));
    wait_bgsave(&mut c);
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "ok");
    // The HLL written during the save (PFADD's general path) is the one the same adds make
    // with no save running (its one-lookup path).
    for i in 0..200 {
        c.cmd(&["PFADD", "hll:copy", &format!("during:{i}")]);
    }
    assert_eq!(c.cmd(&["GET", "hll"]), c.cmd(&["GET", "hll:copy"]));
    let file = dir.join("dump.rdb");
    let check = std::process::Command::new("redis-check-rdb")
        .arg(&file)
        .output()
        .expect("redis-check-rdb runs");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    // densekv loads it back as the dataset at the reply.
    assert_eq!(c.cmd(&["DEBUG", "RELOAD", "NOSAVE"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), digest);
    // So does redis-server, from the same file.
    let redis = Server::redis(&[
        "--dir",
        dir.to_str().unwrap(),
        "--enable-debug-command",
        "yes",
    ]);
    assert_eq!(redis.connect().cmd(&["DEBUG", "DIGEST"]), digest);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigkill_during_bgsave_leaves_the_previous_file_whole() {
    let dir = temp_dir("sigkill");
    sigkill_during_saves(&dir, |c| {
        assert_eq!(c.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
        c.cmd(&["SET", "during", "the save"]);
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn save_points_start_background_saves() {
    let dir = temp_dir("points");
    let server = densekv_in(&dir, &["--save", "1 2"]);
    let mut c = server.connect();
    c.cmd(&["SET", "a", "1"]);
    std::thread::sleep(Duration::from_millis(2300));
    assert!(
        !dir.join("dump.rdb").exists(),
        "one change is below the point"
    );
    c.cmd(&["SET", "b", "2"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dir.join("dump.rdb").exists() {
        assert!(Instant::now() < deadline, "the save point did not save");
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_bgsave(&mut c);
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "0");
    assert_ne!(info_field(&mut c, "rdb_last_bgsave_time_sec"), "-1");
    assert_eq!(c.cmd(&["DEBUG", "RELOAD", "NOSAVE"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["MGET", "a", "b"]), b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One step run on both servers, which must reply the same.
fn both(twin: &mut Twin, step: &[&str]) {
    let args = step.iter().map(|a| a.as_bytes().to_vec()).collect();
    twin.one(&support::diff::Cmd::new(args));
}

#[test]
fn a_failed_background_save_refuses_writes_as_redis_server_does() {
    let (d_dir, r_dir) = (temp_dir("misconf-densekv"), temp_dir("misconf-redis"));
    let densekv = densekv_in(&d_dir, &["--save", "3600 1"]);
    let redis = Server::redis(&["--dir", r_dir.to_str().unwrap(), "--save", "3600 1"]);
    for dir in [&d_dir, &r_dir] {
        // `dbfilename` names a directory that is not empty: the rename that commits fails.
        std::fs::create_dir_all(dir.join("dump.rdb/inside")).unwrap();
    }
    let (mut d, mut r) = (densekv.connect(), redis.connect());
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 22);
    both(&mut twin, &["SET", "k", "v"]);
    both(&mut twin, &["BGSAVE", "NOW"]);
    both(&mut twin, &["BGSAVE"]);
    wait_bgsave(&mut d);
    wait_bgsave(&mut r);
    assert_eq!(info_field(&mut d, "rdb_last_bgsave_status"), "err");
    assert_eq!(info_field(&mut r, "rdb_last_bgsave_status"), "err");
    for step in [
        &["SET", "k", "w"][..],
        &["PING"],
        &["GET", "k"],
        &["MULTI"],
        &["SET", "k", "x"],
        &["EXEC"],
        &["MULTI"],
        &["GET", "k"],
        &["EXEC"],
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"],
        &["SET", "k", "y"],
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"],
        &["DEL", "k"],
        &["CONFIG", "SET", "save", ""],
        &["SET", "k", "z"],
        &["GET", "k"],
    ] {
        both(&mut twin, step);
    }
    let _ = (
        std::fs::remove_dir_all(&d_dir),
        std::fs::remove_dir_all(&r_dir),
    );
}

#[test]
fn bgsave_replies_as_redis_server() {
    let (d_dir, r_dir) = (temp_dir("replies-densekv"), temp_dir("replies-redis"));
    let densekv = densekv_in(&d_dir, &["--rdb-key-save-delay", "1000"]);
    let redis = Server::redis(&[
        "--dir",
        r_dir.to_str().unwrap(),
        "--rdb-key-save-delay",
        "1000",
        "--enable-debug-command",
        "yes",
    ]);
    let (mut d, mut r) = (densekv.connect(), redis.connect());
    for c in [&mut d, &mut r] {
        assert_eq!(c.cmd(&["DEBUG", "POPULATE", "2000"]), b"+OK\r\n");
    }
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 23);
    for step in [
        &["BGSAVE", "SCHEDULE", "EXTRA"][..],
        &["BGSAVE", "LATER"],
        &["BGSAVE"],
        &["BGSAVE"],
        &["BGSAVE", "SCHEDULE"],
        &["SAVE"],
        &["INFO", "NOSUCHSECTION"],
    ] {
        both(&mut twin, step);
    }
    // FLUSHALL aborts the running save: no file, the status stays ok.
    both(&mut twin, &["FLUSHALL"]);
    for (c, dir) in [(&mut d, &d_dir), (&mut r, &r_dir)] {
        wait_bgsave(c);
        assert_eq!(info_field(c, "rdb_last_bgsave_status"), "ok");
        assert!(
            !dir.join("dump.rdb").exists(),
            "{dir:?}: an aborted save wrote no file"
        );
    }
    // In a transaction BGSAVE is scheduled, and the cron starts it.
    for step in [&["SET", "k", "v"][..], &["MULTI"], &["BGSAVE"], &["EXEC"]] {
        both(&mut twin, step);
    }
    for dir in [&d_dir, &r_dir] {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !dir.join("dump.rdb").exists() {
            assert!(
                Instant::now() < deadline,
                "{dir:?}: the scheduled save did not run"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let _ = (
        std::fs::remove_dir_all(&d_dir),
        std::fs::remove_dir_all(&r_dir),
    );
}

#[test]
fn an_aborted_save_ends_with_its_walk_and_a_new_one_starts() {
    let dir = temp_dir("aborted");
    let server = densekv_in(&dir, &["--save", "3600 1"]);
    let mut c = server.connect();
    ok(&c.cmd(&["DEBUG", "POPULATE", "20000"]));
    ok(&c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "100"]));
    assert_eq!(c.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    // SHUTDOWN aborts the save, then its own save fails (`dbfilename` is a directory that is
    // not empty), so the server stays up with the aborted save's walk still running.
    std::fs::create_dir_all(dir.join("dump.rdb/inside")).unwrap();
    assert_eq!(
        c.cmd(&["SHUTDOWN"]),
        b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
    );
    assert_eq!(
        c.cmd(&["BGSAVE"]),
        b"-ERR Background save already in progress\r\n"
    );
    ok(&c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "0"]));
    wait_bgsave(&mut c);
    std::fs::remove_dir_all(dir.join("dump.rdb")).unwrap();
    assert_eq!(c.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    wait_bgsave(&mut c);
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "ok");
    assert_eq!(c.cmd(&["DEBUG", "RELOAD", "NOSAVE"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["DBSIZE"]), b":20000\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_save_whose_writes_fail_ends_with_its_walk() {
    let dir = temp_dir("enospc");
    let server = densekv_in(&dir, &["--save", "3600 1"]);
    let mut c = server.connect();
    ok(&c.cmd(&["DEBUG", "POPULATE", "20000"]));
    ok(&c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "100"]));
    // The save's temp file is /dev/full: its first write fails with ENOSPC.
    let temp = dir.join(format!("temp-bg-{}.rdb", server.pid()));
    std::os::unix::fs::symlink("/dev/full", &temp).unwrap();
    assert_eq!(c.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    std::thread::sleep(Duration::from_millis(600));
    // The writer has failed, but the walk goes on: the save is still the running one.
    assert_eq!(info_field(&mut c, "rdb_bgsave_in_progress"), "1");
    assert_eq!(
        c.cmd(&["BGSAVE"]),
        b"-ERR Background save already in progress\r\n"
    );
    ok(&c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "0"]));
    wait_bgsave(&mut c);
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "err");
    assert!(c.cmd(&["SET", "k", "v"]).starts_with(b"-MISCONF"));
    let _ = std::fs::remove_file(&temp);
    assert_eq!(c.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    wait_bgsave(&mut c);
    assert_eq!(info_field(&mut c, "rdb_last_bgsave_status"), "ok");
    assert_eq!(c.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}
