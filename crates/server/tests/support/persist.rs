//! What the persistence tests share: a server in a temporary directory of its own, INFO
//! persistence fields, and the SIGKILL check that a save in progress never damages the
//! previous file.

use super::{Client, Server};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A fresh, empty temporary directory for one test (`group` and `name` keep tests apart).
pub fn temp_dir(group: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("densekv-{group}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// densekv working in `dir`, with DEBUG enabled and `extra` options (after the harness's
/// `--save ""`, so `--save` here sets save points again).
pub fn densekv_in(dir: &Path, extra: &[&str]) -> Server {
    let mut args = vec![
        "--dir",
        dir.to_str().unwrap(),
        "--enable-debug-command",
        "yes",
    ];
    args.extend_from_slice(extra);
    Server::densekv(&args)
}

/// redis-server with DEBUG enabled and the AOF on, working in `dir`, with `extra` options.
pub fn redis_aof_in(dir: &Path, extra: &[&str]) -> Server {
    let mut args = vec![
        "--enable-debug-command",
        "yes",
        "--dir",
        dir.to_str().unwrap(),
        "--appendonly",
        "yes",
    ];
    args.extend_from_slice(extra);
    Server::redis(&args)
}

/// Copies every file of `from` into a fresh directory `to` (an `appendonlydir` handed from one
/// server to the other).
pub fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// One field of INFO persistence.
pub fn info_field(c: &mut Client, field: &str) -> String {
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "persistence"])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {info}"))
        .to_string()
}

/// Waits until no background save runs; panics after 60 s.
pub fn wait_bgsave(c: &mut Client) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while info_field(c, "rdb_bgsave_in_progress") == "1" {
        assert!(
            Instant::now() < deadline,
            "the background save does not end"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills densekv (SIGKILL) at several points of a save of 301,000 keys that `start` begins,
/// each time on a fresh server over a `dump.rdb` of 1,000 keys: afterwards the file must be
/// the old one, byte for byte, or the whole new one.
pub fn sigkill_during_saves(dir: &Path, start: impl Fn(&mut Client)) {
    let file = dir.join("dump.rdb");
    let server = densekv_in(dir, &[]);
    let mut c = server.connect();
    c.cmd(&["DEBUG", "POPULATE", "1000", "old"]);
    let old_digest = c.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
    let old = std::fs::read(&file).unwrap();
    drop(c);
    drop(server);
    for delay_ms in [0u64, 2, 5, 20, 50, 150] {
        let server = densekv_in(dir, &[]);
        let mut c = server.connect();
        assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), old_digest);
        c.cmd(&["DEBUG", "POPULATE", "300000", "new", "40"]);
        start(&mut c);
        std::thread::sleep(Duration::from_millis(delay_ms));
        drop(c);
        drop(server); // SIGKILL
        let bytes = std::fs::read(&file).unwrap();
        let keys = persist::rdb::read(&bytes, 16, |_, _, _, _| {})
            .unwrap_or_else(|e| panic!("after a kill at {delay_ms} ms the file reads: {e}"))
            .keys;
        assert!(
            bytes == old || keys == 301_000,
            "after a kill at {delay_ms} ms the file is the old one or the whole new one ({keys} keys)"
        );
        // Start over from the old file for the next kill.
        std::fs::write(&file, &old).unwrap();
    }
}
