//! The RDB file of a running densekv: SAVE and restart, the save at SIGTERM and SHUTDOWN (and
//! their NOSAVE, SAVE and FORCE), a save that fails, FLUSHALL's save, DEBUG RELOAD beside
//! redis-server, a redis-server file loaded at startup, SIGKILL in the middle of a SAVE, and
//! `-LOADING` while a file loads.
//! Every server runs in its own temporary directory (`--dir`), and data is compared by DEBUG
//! DIGEST, which is equal for equal datasets on densekv and redis-server.

#[macro_use]
mod support;

use std::path::PathBuf;
use std::time::Duration;
use support::dataset::dataset;
use support::diff::{Check, Twin};
use support::persist::{densekv_in, info_field, sigkill_during_saves};
use support::{Client, Server, show};

const DEBUG_ON: [&str; 2] = ["--enable-debug-command", "yes"];

fn temp_dir(name: &str) -> PathBuf {
    support::persist::temp_dir("persist", name)
}

/// Writes the shared dataset through `c` and returns its digest.
fn load_dataset(c: &mut Client, seed: u64) -> Vec<u8> {
    for (_, _, cmds) in dataset(seed) {
        for cmd in cmds {
            let args: Vec<&[u8]> = cmd.args.iter().map(Vec::as_slice).collect();
            let reply = c.command(&args);
            assert!(!reply.starts_with(b"-"), "{}", show(&reply));
        }
    }
    c.cmd(&["SELECT", "0"]);
    c.cmd(&["DEBUG", "DIGEST"])
}

fn sigterm(server: &Server) {
    // SAFETY: kill(2) on the pid of a child this test started and still owns.
    let sent = unsafe { libc::kill(server.pid() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(sent, 0);
}

#[test]
fn save_then_restart_keeps_every_key() {
    let dir = temp_dir("save");
    let (digest, keys) = {
        let server = densekv_in(&dir, &[]);
        let mut c = server.connect();
        let digest = load_dataset(&mut c, 11);
        let keys: u64 = (0..16)
            .map(|db| {
                c.cmd(&["SELECT", &db.to_string()]);
                let n = String::from_utf8_lossy(&c.cmd(&["DBSIZE"]))[1..]
                    .trim()
                    .to_string();
                n.parse::<u64>().unwrap()
            })
            .sum();
        c.cmd(&["SELECT", "0"]);
        assert_ne!(info_field(&mut c, "rdb_changes_since_last_save"), "0");
        let before = c.cmd(&["LASTSAVE"]);
        assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
        assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "0");
        assert_eq!(info_field(&mut c, "rdb_saves"), "1");
        assert!(c.cmd(&["LASTSAVE"]) >= before);
        assert!(dir.join("dump.rdb").exists());
        (digest, keys)
        // The server is killed with SIGKILL here: only the SAVE keeps the data.
    };
    let server = densekv_in(&dir, &[]);
    let mut c = server.connect();
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(
        info_field(&mut c, "rdb_last_load_keys_loaded"),
        keys.to_string()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_and_shutdown_save_as_the_save_points_say() {
    let dir = temp_dir("shutdown");
    let file = dir.join("dump.rdb");
    // Save points: SIGTERM saves.
    let mut server = densekv_in(&dir, &["--save", "3600 1"]);
    let digest = load_dataset(&mut server.connect(), 12);
    sigterm(&server);
    let status = server.wait_exit(Duration::from_secs(10)).expect("exits");
    assert!(status.success());
    assert!(file.exists(), "SIGTERM with save points saves");
    let server = densekv_in(&dir, &[]);
    let mut c = server.connect();
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), digest);
    // SHUTDOWN NOSAVE with save points: the file stays as it was.
    drop(c);
    drop(server);
    let mut server = densekv_in(&dir, &["--save", "3600 1"]);
    let mut c = server.connect();
    c.cmd(&["SET", "added", "1"]);
    c.send(&support::encode(&[b"SHUTDOWN", b"NOSAVE"]));
    assert!(server.wait_exit(Duration::from_secs(10)).is_some());
    let server = densekv_in(&dir, &[]);
    let mut c = server.connect();
    assert_eq!(c.cmd(&["EXISTS", "added"]), b":0\r\n");
    // SHUTDOWN SAVE without save points saves.
    c.cmd(&["SET", "added", "2"]);
    c.send(&support::encode(&[b"SHUTDOWN", b"SAVE"]));
    let mut server = server;
    assert!(server.wait_exit(Duration::from_secs(10)).is_some());
    let server = densekv_in(&dir, &[]);
    assert_eq!(server.connect().cmd(&["GET", "added"]), b"$1\r\n2\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_save_that_fails_keeps_the_server_running() {
    let dir = temp_dir("failing");
    let mut server = densekv_in(&dir, &["--save", "3600 1"]);
    let mut c = server.connect();
    c.cmd(&["SET", "k", "v"]);
    // The working directory disappears: the temp file cannot be created.
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(c.cmd(&["SAVE"]), b"-ERR\r\n");
    assert_eq!(
        c.cmd(&["SHUTDOWN"]),
        b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
    );
    sigterm(&server);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        server.alive(),
        "SIGTERM whose save fails does not stop the server"
    );
    assert_eq!(c.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    c.send(&support::encode(&[b"SHUTDOWN", b"FORCE"]));
    assert!(
        server.wait_exit(Duration::from_secs(10)).is_some(),
        "FORCE exits anyway"
    );
}

#[test]
fn flushall_saves_the_empty_dataset_with_save_points() {
    let dir = temp_dir("flushall");
    let server = densekv_in(&dir, &["--save", "3600 1"]);
    let mut c = server.connect();
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(c.cmd(&["FLUSHALL"]), b"+OK\r\n");
    assert!(dir.join("dump.rdb").exists(), "FLUSHALL saves");
    assert_eq!(info_field(&mut c, "rdb_changes_since_last_save"), "1");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn debug_reload_and_save_reply_as_redis_server() {
    let (d_dir, r_dir) = (temp_dir("reload-densekv"), temp_dir("reload-redis"));
    let densekv = densekv_in(&d_dir, &[]);
    let mut args = vec!["--dir", r_dir.to_str().unwrap()];
    args.extend_from_slice(&DEBUG_ON);
    let redis = Server::redis(&args);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 13);
    twin.run(&[
        cmd!["DEBUG", "RELOAD", "NOSAVE"],
        cmd!["DEBUG", "RELOAD", "BADOPT"],
    ]);
    for (_, _, cmds) in dataset(13) {
        twin.run(&cmds);
    }
    twin.one(&cmd!["SELECT", "0"]);
    for c in [
        cmd!["DEBUG", "DIGEST"],
        cmd!["DEBUG", "RELOAD"],
        cmd!["DEBUG", "DIGEST"],
        cmd!["SET", "extra", "1"],
        cmd!["DEBUG", "RELOAD", "NOSAVE"],
        cmd!["EXISTS", "extra"],
        cmd!["SET", "extra", "2"],
        cmd!["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"],
        cmd!["GET", "extra"],
        cmd!["DEBUG", "DIGEST"],
        cmd!["SAVE"],
        cmd!["MULTI"],
        cmd!["SAVE"],
        cmd!["EXEC"],
        cmd!["LASTSAVE"].with(Check::Drift(5)),
        cmd!["DBSIZE"],
    ] {
        twin.one(&c);
    }
    let _ = (
        std::fs::remove_dir_all(&d_dir),
        std::fs::remove_dir_all(&r_dir),
    );
}

#[test]
fn a_redis_server_file_loads_at_startup() {
    let dir = temp_dir("from-redis");
    let mut args = vec!["--dir", dir.to_str().unwrap()];
    args.extend_from_slice(&DEBUG_ON);
    let redis = Server::redis(&args);
    let mut r = redis.connect();
    let digest = load_dataset(&mut r, 14);
    assert_eq!(r.cmd(&["SAVE"]), b"+OK\r\n");
    let densekv = densekv_in(&dir, &[]);
    assert_eq!(densekv.connect().cmd(&["DEBUG", "DIGEST"]), digest);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigkill_during_save_leaves_the_previous_file_whole() {
    let dir = temp_dir("sigkill");
    sigkill_during_saves(&dir, |c| c.send(&support::encode(&[b"SAVE"])));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn clients_get_loading_while_the_file_loads() {
    let dir = temp_dir("loading");
    let server = densekv_in(&dir, &[]);
    let mut c = server.connect();
    c.cmd(&["DEBUG", "POPULATE", "20000"]);
    let digest = c.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
    drop(c);
    drop(server);
    let size = std::fs::metadata(dir.join("dump.rdb")).unwrap().len();
    // 50 µs per key: about a second of loading.
    let mut args = vec!["--dir", dir.to_str().unwrap(), "--key-load-delay", "50"];
    args.extend_from_slice(&DEBUG_ON);
    let server = Server::densekv_loading(&args);
    let mut c = server.connect();
    let loading = b"-LOADING Redis is loading the dataset in memory\r\n";
    assert_eq!(c.cmd(&["GET", "key:1"]), loading);
    assert_eq!(c.cmd(&["PING"]), loading);
    assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["GET", "key:1"]), loading);
    assert_eq!(
        c.cmd(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    assert_eq!(info_field(&mut c, "loading"), "1");
    assert_eq!(info_field(&mut c, "loading_total_bytes"), size.to_string());
    let perc: f64 = info_field(&mut c, "loading_loaded_perc").parse().unwrap();
    assert!((0.0..100.0).contains(&perc), "{perc}");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while info_field(&mut c, "loading") == "1" {
        assert!(
            std::time::Instant::now() < deadline,
            "the load does not end"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(info_field(&mut c, "rdb_last_load_keys_loaded"), "20000");
    let _ = std::fs::remove_dir_all(&dir);
}
