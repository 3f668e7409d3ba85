//! The AOF reader (`persist::aof`) against redis-server 7.0's own files: the manifest of its
//! `appendonlydir`, an RDB-preamble base read by `persist::rdb`, a command base, and
//! incremental files with timestamp annotations, whose commands must be exactly what was sent.

#[macro_use]
mod support;

use persist::aof::{self, FileType, Item};
use support::Server;
use support::persist::{redis_aof_in, temp_dir};

/// redis-server with the AOF on in `dir`, the base written as `preamble` says.
fn redis_with_aof(dir: &std::path::Path, preamble: &str) -> Server {
    redis_aof_in(
        dir,
        &[
            "--aof-use-rdb-preamble",
            preamble,
            "--aof-timestamp-enabled",
            "yes",
        ],
    )
}

fn commands(bytes: &[u8]) -> Vec<Vec<Vec<u8>>> {
    aof::Commands::new(bytes)
        .filter_map(|item| match item.expect("redis-server's file reads") {
            Item::Command(args) => Some(args.iter().map(|a| a.to_vec()).collect()),
            Item::Annotation(_) => None,
        })
        .collect()
}

/// Waits until redis-server's BGREWRITEAOF is over.
fn wait_rewrite(c: &mut support::Client) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let info = String::from_utf8_lossy(&c.cmd(&["INFO", "persistence"])).into_owned();
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the rewrite does not end"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The file at `path` once it holds `n` commands (with appendfsync everysec redis-server may
/// hold a write back while an fsync runs), or after 5 s.
fn read_commands(path: &std::path::Path, n: usize) -> Vec<u8> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let bytes = std::fs::read(path).unwrap();
        if commands(&bytes).len() >= n || std::time::Instant::now() > deadline {
            return bytes;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn redis_server_aof_files_read_back() {
    for preamble in ["yes", "no"] {
        let dir = temp_dir("aof-read", preamble);
        let redis = redis_with_aof(&dir, preamble);
        let mut c = redis.connect();
        c.cmd(&["SET", "before", "rewrite"]);
        c.cmd(&["RPUSH", "list", "a", "b"]);
        assert!(c.cmd(&["BGREWRITEAOF"]).starts_with(b"+"));
        wait_rewrite(&mut c);
        // A new second, so the next write is annotated with its timestamp.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        c.cmd(&["SET", "after", "x y"]);
        c.cmd(&["SELECT", "2"]);
        c.cmd(&["INCR", "n"]);
        let aof_dir = dir.join("appendonlydir");
        let manifest = std::fs::read(aof_dir.join("appendonly.aof.manifest")).unwrap();
        let m = aof::parse_manifest(&manifest).unwrap();
        let base = m.base.expect("a base file");
        assert_eq!(base.kind, FileType::Base);
        let base_bytes =
            std::fs::read(aof_dir.join(String::from_utf8(base.name.clone()).unwrap())).unwrap();
        if preamble == "yes" {
            assert!(base.name.ends_with(b".base.rdb"));
            let mut keys = Vec::new();
            persist::rdb::read(&base_bytes, 16, |_, k, _, _| keys.push(k.to_vec())).unwrap();
            keys.sort();
            assert_eq!(keys, [b"before".to_vec(), b"list".to_vec()]);
        } else {
            assert!(base.name.ends_with(b".base.aof"));
            let names: Vec<Vec<u8>> = commands(&base_bytes).iter().map(|c| c[0].clone()).collect();
            assert!(names.contains(&b"SET".to_vec()) && names.contains(&b"RPUSH".to_vec()));
        }
        let incr = m.incrs.last().expect("an incremental file");
        let incr_path = aof_dir.join(String::from_utf8(incr.name.clone()).unwrap());
        let want: Vec<Vec<Vec<u8>>> = [
            &["SELECT", "0"][..],
            &["SET", "after", "x y"],
            &["SELECT", "2"],
            &["INCR", "n"],
        ]
        .iter()
        .map(|c| c.iter().map(|a| a.as_bytes().to_vec()).collect())
        .collect();
        let incr_bytes = read_commands(&incr_path, want.len());
        assert!(
            aof::Commands::new(&incr_bytes)
                .any(|i| matches!(i, Ok(Item::Annotation(a)) if a.starts_with(b"TS:"))),
            "aof-timestamp-enabled writes annotations"
        );
        assert_eq!(commands(&incr_bytes), want, "{preamble}");
        drop(redis);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
