//! Function libraries in the data files, between densekv and redis-server 7.0 both ways: the
//! RDB's FUNCTION2 records (SAVE, DEBUG RELOAD, an AOF's RDB base) and the AOF's `FUNCTION
//! LOAD` commands (appended as they run, and a command base's first lines). After each move the
//! loading server must list the same libraries (FUNCTION LIST … WITHCODE, compared byte for
//! byte with what the writer listed) and run their functions.

#[macro_use]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};
use support::persist::{copy_dir, densekv_in, redis_aof_in, temp_dir};
use support::{Client, Server, show};

/// Two libraries, one with two functions, flags and a description.
const LIBRARIES: [&str; 2] = [
    "#!lua name=alpha\nredis.register_function('alpha_get', function(keys) return redis.call('GET', keys[1]) end)",
    "#!lua name=beta\nredis.register_function{function_name='beta_one', callback=function() return 1 end, flags={'no-writes'}, description='one'}",
];

fn load_libraries(c: &mut Client) {
    for code in LIBRARIES {
        let reply = c.cmd(&["FUNCTION", "LOAD", code]);
        assert!(reply.starts_with(b"$"), "{}", show(&reply));
    }
    assert_eq!(c.cmd(&["SET", "k", "v"]), b"+OK\r\n");
}

/// What the libraries look like from a client: each listed with its code, and a call of each.
fn libraries_seen(c: &mut Client) -> Vec<String> {
    let mut seen = Vec::new();
    for name in ["alpha", "beta"] {
        let list = c.cmd(&["FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE"]);
        seen.push(show(&list));
    }
    seen.push(show(&c.cmd(&["FCALL", "alpha_get", "1", "k"])));
    seen.push(show(&c.cmd(&["FCALL_RO", "beta_one", "0"])));
    seen
}

fn wait_rewrite(c: &mut Client) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let info = String::from_utf8_lossy(&c.cmd(&["INFO", "persistence"])).into_owned();
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the rewrite did not end");
}

fn redis_in(dir: &Path, extra: &[&str]) -> Server {
    let mut args = vec!["--dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    Server::redis(&args)
}

#[test]
fn rdb_files_carry_functions_both_ways() {
    // densekv → redis-server, and DEBUG RELOAD on densekv.
    let dir = temp_dir("functions", "to-redis");
    let densekv = densekv_in(&dir, &[]);
    let mut c = densekv.connect();
    load_libraries(&mut c);
    let seen = libraries_seen(&mut c);
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), b"+OK\r\n");
    assert_eq!(libraries_seen(&mut c), seen, "DEBUG RELOAD keeps them");
    assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
    drop(c);
    drop(densekv);
    let redis = redis_in(&dir, &[]);
    assert_eq!(
        libraries_seen(&mut redis.connect()),
        seen,
        "redis-server loads them"
    );
    drop(redis);
    // redis-server → densekv.
    let dir = temp_dir("functions", "from-redis");
    let redis = redis_in(&dir, &[]);
    let mut c = redis.connect();
    load_libraries(&mut c);
    let seen = libraries_seen(&mut c);
    assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
    drop(c);
    drop(redis);
    let densekv = densekv_in(&dir, &[]);
    assert_eq!(
        libraries_seen(&mut densekv.connect()),
        seen,
        "densekv loads them"
    );
}

#[test]
fn aof_files_carry_functions_both_ways() {
    for preamble in ["yes", "no"] {
        let opts = ["--appendonly", "yes", "--aof-use-rdb-preamble", preamble];
        // densekv: appended FUNCTION LOADs, then a rewrite's base; both restart densekv and
        // start redis-server.
        let dir = temp_dir("functions", &format!("aof-{preamble}"));
        let densekv = densekv_in(&dir, &opts);
        let mut c = densekv.connect();
        load_libraries(&mut c);
        let seen = libraries_seen(&mut c);
        drop(c);
        drop(densekv);
        let densekv = densekv_in(&dir, &opts);
        let mut c = densekv.connect();
        assert_eq!(libraries_seen(&mut c), seen, "replayed ({preamble})");
        c.cmd(&["BGREWRITEAOF"]);
        wait_rewrite(&mut c);
        drop(c);
        drop(densekv);
        let densekv = densekv_in(&dir, &opts);
        assert_eq!(
            libraries_seen(&mut densekv.connect()),
            seen,
            "from the rewritten base ({preamble})"
        );
        drop(densekv);
        let copy = temp_dir("functions", &format!("aof-redis-copy-{preamble}"));
        copy_dir(&dir.join("appendonlydir"), &copy.join("appendonlydir"));
        let redis = redis_aof_in(&copy, &["--aof-use-rdb-preamble", preamble]);
        assert_eq!(
            libraries_seen(&mut redis.connect()),
            seen,
            "redis-server loads densekv's ({preamble})"
        );
        drop(redis);
        // redis-server's rewritten files start densekv.
        let dir = temp_dir("functions", &format!("aof-from-redis-{preamble}"));
        let redis = redis_aof_in(&dir, &["--aof-use-rdb-preamble", preamble]);
        let mut c = redis.connect();
        load_libraries(&mut c);
        c.cmd(&["BGREWRITEAOF"]);
        wait_rewrite(&mut c);
        let seen = libraries_seen(&mut c);
        drop(c);
        drop(redis);
        let densekv = densekv_in(&dir, &opts);
        assert_eq!(
            libraries_seen(&mut densekv.connect()),
            seen,
            "densekv loads redis-server's ({preamble})"
        );
    }
}
