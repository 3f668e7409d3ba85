//! The append-only file end to end: what survives SIGKILL under each fsync policy (also in the
//! middle of a rewrite), rewrites that keep the dataset and delete history, files that move
//! both ways between densekv and redis-server 7.0 (compared by DEBUG DIGEST) and pass
//! `redis-check-aof`, cut and corrupt files, and switching the AOF on at runtime.

#[macro_use]
mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::persist::{copy_dir, densekv_in, info_field, redis_aof_in, temp_dir};
use support::{Client, Server};

fn aof_dir(dir: &Path) -> std::path::PathBuf {
    dir.join("appendonlydir")
}

fn manifest(dir: &Path) -> String {
    std::fs::read_to_string(aof_dir(dir).join("appendonly.aof.manifest")).expect("manifest")
}

/// Waits until no rewrite runs or waits to run.
fn wait_rewrite(c: &mut Client) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while info_field(c, "aof_rewrite_in_progress") == "1"
        || info_field(c, "aof_rewrite_scheduled") == "1"
    {
        assert!(Instant::now() < deadline, "the rewrite does not end");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Streams `RPUSH log <i>` (16 in flight) from `start` on until the connection fails; counts the
/// acknowledged ones in `acked` with the time each second's count was reached.
fn push_until_killed(port: u16, start: u64, acked: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Ok(mut c) = Client::try_connect(port) else {
            return;
        };
        let mut next = start;
        let mut sent = std::collections::VecDeque::new();
        loop {
            while sent.len() < 16 {
                let i = next.to_string();
                if c.try_send(&support::encode(&[b"RPUSH", b"log", i.as_bytes()]))
                    .is_err()
                {
                    return;
                }
                sent.push_back(next);
                next += 1;
            }
            match c.try_read_reply() {
                Ok(reply) if reply.starts_with(b":") => {
                    let i = sent.pop_front().expect("a reply answers a request");
                    acked.store(i + 1, Ordering::SeqCst);
                }
                _ => return,
            }
        }
    })
}

/// The list `log` after a restart: it must be 0, 1, 2, … (no hole, no duplicate).
fn log_len(c: &mut Client) -> u64 {
    let items = support::decode(&c.cmd(&["LRANGE", "log", "0", "-1"]));
    let items = items.array();
    for (i, item) in items.iter().enumerate() {
        assert_eq!(
            item.bulk(),
            i.to_string().as_bytes(),
            "the log holds every write in order"
        );
    }
    items.len() as u64
}

/// SIGKILL at random points of a stream of acknowledged writes, with `appendfsync always`: no
/// acknowledged write is lost. Some kills land in a rewrite (slowed by rdb-key-save-delay so
/// that it is still running), some between its steps.
#[test]
fn sigkill_under_always_loses_no_acknowledged_write() {
    let dir = temp_dir("aof", "always");
    let opts = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut total = 0;
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    for round in 0..8 {
        let server = densekv_in(&dir, &opts);
        let mut c = server.connect();
        // A write the kill cut off after it ran but before its reply left may be there too.
        let len = log_len(&mut c);
        assert!(
            len >= total,
            "round {round}: {len} of {total} acknowledged writes are back"
        );
        total = len;
        if round % 2 == 1 {
            mset(&mut c, 20_000, &format!("filler{round}"));
            c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "20"]);
            assert_eq!(
                c.cmd(&["BGREWRITEAOF"]),
                b"+Background append only file rewriting started\r\n"
            );
        }
        let acked = Arc::new(AtomicU64::new(total));
        let writer = push_until_killed(server.port, total, Arc::clone(&acked));
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(50 + rng % 400));
        drop(c);
        drop(server); // SIGKILL
        writer.join().unwrap();
        total = acked.load(Ordering::SeqCst);
    }
    let server = densekv_in(&dir, &opts);
    assert!(log_len(&mut server.connect()) >= total);
    assert!(total > 1000, "the writers got {total} writes through");
}

/// With `everysec`, SIGKILL loses at most the last 2 s of acknowledged writes: a write waits
/// for a running fsync that long at most, and every other reaches the kernel before its reply.
#[test]
fn sigkill_under_everysec_loses_at_most_two_seconds() {
    let dir = temp_dir("aof", "everysec");
    let opts = ["--appendonly", "yes", "--appendfsync", "everysec"];
    let mut kept_before = 0;
    for delay_ms in [300u64, 2600, 4000] {
        let server = densekv_in(&dir, &opts);
        let mut c = server.connect();
        let len = log_len(&mut c);
        assert!(
            len >= kept_before,
            "{len} writes back, {kept_before} were acknowledged 2 s before the kill"
        );
        let acked = Arc::new(AtomicU64::new(len));
        let writer = push_until_killed(server.port, len, Arc::clone(&acked));
        let early = delay_ms.saturating_sub(2000);
        std::thread::sleep(Duration::from_millis(early));
        kept_before = acked.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(delay_ms - early));
        drop(c);
        drop(server);
        writer.join().unwrap();
    }
    let server = densekv_in(&dir, &opts);
    assert!(log_len(&mut server.connect()) >= kept_before);
}

/// A few keys of every type, with TTLs, in databases 0 and 5.
fn fill(c: &mut Client, tag: &str) {
    for db in ["0", "5"] {
        c.cmd(&["SELECT", db]);
        c.cmd(&["SET", &format!("s-{tag}"), "value"]);
        c.cmd(&["SET", &format!("n-{tag}"), "12345"]);
        c.cmd(&["INCRBY", &format!("n-{tag}"), "10"]);
        c.cmd(&["RPUSH", &format!("l-{tag}"), "a", "b", "c"]);
        c.cmd(&["SADD", &format!("set-{tag}"), "x", "y", "1", "2"]);
        c.cmd(&["HSET", &format!("h-{tag}"), "f", "v", "g", "w"]);
        c.cmd(&["ZADD", &format!("z-{tag}"), "1.5", "m", "-2", "n"]);
        c.cmd(&["SET", &format!("ttl-{tag}"), "v", "PX", "500000"]);
        c.cmd(&["EXPIRE", &format!("l-{tag}"), "1000"]);
    }
    c.cmd(&["SELECT", "0"]);
    mset(c, 2000, &format!("pop-{tag}"));
}

/// `n` keys `<prefix>:<i>` written by MSET (DEBUG POPULATE is not a write the AOF records,
/// in Redis as here).
fn mset(c: &mut Client, n: usize, prefix: &str) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let mut args = vec!["MSET".to_string()];
        for i in chunk {
            args.push(format!("{prefix}:{i}"));
            args.push(format!("value:{i}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(c.cmd(&args), b"+OK\r\n");
    }
}

/// BGREWRITEAOF while clients write: the manifest names a new base and one incremental file,
/// the old files are deleted, and a restart gives the same dataset.
#[test]
fn rewrite_keeps_the_dataset_and_deletes_history() {
    let dir = temp_dir("aof", "rewrite");
    let opts = ["--appendonly", "yes"];
    let server = densekv_in(&dir, &opts);
    let mut c = server.connect();
    fill(&mut c, "a");
    assert_eq!(
        manifest(&dir),
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "5"]);
    assert_eq!(
        c.cmd(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    assert_eq!(
        c.cmd(&["BGREWRITEAOF"]),
        b"-ERR Background append only file rewriting already in progress\r\n"
    );
    assert!(
        c.cmd(&["BGSAVE"])
            .starts_with(b"-ERR Another child process is active (AOF?)")
    );
    fill(&mut c, "b");
    c.cmd(&["DEL", "s-a"]);
    c.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    wait_rewrite(&mut c);
    assert_eq!(info_field(&mut c, "aof_last_bgrewrite_status"), "ok");
    assert_eq!(info_field(&mut c, "aof_rewrites"), "1");
    assert_eq!(
        manifest(&dir),
        "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n"
    );
    let mut names: Vec<String> = std::fs::read_dir(aof_dir(&dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "appendonly.aof.2.base.rdb",
            "appendonly.aof.2.incr.aof",
            "appendonly.aof.manifest"
        ]
    );
    let digest = c.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(c.cmd(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
    assert_eq!(
        c.cmd(&["DEBUG", "DIGEST"]),
        digest,
        "DEBUG LOADAOF gives it back"
    );
    c.cmd(&["SET", "after-loadaof", "1"]);
    let digest = c.cmd(&["DEBUG", "DIGEST"]);
    drop(c);
    drop(server);
    let server = densekv_in(&dir, &opts);
    assert_eq!(server.connect().cmd(&["DEBUG", "DIGEST"]), digest);
}

/// The base in command form (`aof-use-rdb-preamble no`) and incremental files with
/// `#TS:` annotations (`aof-timestamp-enabled`) replay to the same dataset.
#[test]
fn a_command_base_and_timestamps_replay() {
    let dir = temp_dir("aof", "command-base");
    let opts = [
        "--appendonly",
        "yes",
        "--aof-use-rdb-preamble",
        "no",
        "--aof-timestamp-enabled",
        "yes",
    ];
    let server = densekv_in(&dir, &opts);
    let mut c = server.connect();
    fill(&mut c, "a");
    c.cmd(&["BGREWRITEAOF"]);
    wait_rewrite(&mut c);
    assert!(manifest(&dir).starts_with("file appendonly.aof.2.base.aof seq 2 type b\n"));
    let base = std::fs::read(aof_dir(&dir).join("appendonly.aof.2.base.aof")).unwrap();
    assert!(base.starts_with(b"#TS:"), "an annotation opens the base");
    std::thread::sleep(Duration::from_millis(1100));
    fill(&mut c, "b");
    let incr = std::fs::read(aof_dir(&dir).join("appendonly.aof.2.incr.aof")).unwrap();
    assert!(
        incr.starts_with(b"#TS:"),
        "a write in a new second is annotated"
    );
    let digest = c.cmd(&["DEBUG", "DIGEST"]);
    drop(c);
    drop(server);
    let server = densekv_in(&dir, &opts);
    assert_eq!(server.connect().cmd(&["DEBUG", "DIGEST"]), digest);
}

fn redis_in(dir: &Path, preamble: &str) -> Server {
    redis_aof_in(dir, &["--aof-use-rdb-preamble", preamble])
}

/// densekv's appendonlydir (base + incrementals, both base forms) starts redis-server with the
/// same dataset, and `redis-check-aof` finds it valid; redis-server's starts densekv likewise.
#[test]
fn files_move_both_ways_with_redis_server() {
    for preamble in ["yes", "no"] {
        let dir = temp_dir("aof", &format!("to-redis-{preamble}"));
        let opts = ["--appendonly", "yes", "--aof-use-rdb-preamble", preamble];
        let server = densekv_in(&dir, &opts);
        let mut c = server.connect();
        fill(&mut c, "a");
        c.cmd(&["BGREWRITEAOF"]);
        wait_rewrite(&mut c);
        fill(&mut c, "b");
        c.cmd(&["SELECT", "5"]);
        c.cmd(&["DEL", "h-a"]);
        c.cmd(&["MULTI"]);
        c.cmd(&["INCR", "n-b"]);
        c.cmd(&["LPUSH", "l-a", "z"]);
        c.cmd(&["EXEC"]);
        let digest = c.cmd(&["DEBUG", "DIGEST"]);
        drop(c);
        drop(server);
        let check = std::process::Command::new("redis-check-aof")
            .arg(aof_dir(&dir).join("appendonly.aof.manifest"))
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success() && out.contains("is valid"), "{out}");
        let copy = temp_dir("aof", &format!("redis-copy-{preamble}"));
        copy_dir(&aof_dir(&dir), &aof_dir(&copy));
        let redis = redis_in(&copy, preamble);
        assert_eq!(
            redis.connect().cmd(&["DEBUG", "DIGEST"]),
            digest,
            "redis-server loads densekv's files (preamble {preamble})"
        );
    }
    for preamble in ["yes", "no"] {
        let dir = temp_dir("aof", &format!("from-redis-{preamble}"));
        let redis = redis_in(&dir, preamble);
        let mut c = redis.connect();
        c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
        fill(&mut c, "a");
        c.cmd(&["BGREWRITEAOF"]);
        wait_rewrite(&mut c);
        fill(&mut c, "b");
        let digest = c.cmd(&["DEBUG", "DIGEST"]);
        drop(c);
        drop(redis);
        let copy = temp_dir("aof", &format!("densekv-copy-{preamble}"));
        copy_dir(&aof_dir(&dir), &aof_dir(&copy));
        let server = densekv_in(&copy, &["--appendonly", "yes"]);
        assert_eq!(
            server.connect().cmd(&["DEBUG", "DIGEST"]),
            digest,
            "densekv loads redis-server's files (preamble {preamble})"
        );
    }
}

/// Runs densekv in `dir` until it exits (a startup that must fail): its exit status and log.
fn failed_start(dir: &Path, extra: &[&str]) -> (bool, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_densekv"))
        .args([
            "--bind",
            "127.0.0.1",
            "--dir",
            dir.to_str().unwrap(),
            "--save",
            "",
        ])
        .args(["--port", &support::free_port().to_string()])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            let log = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            return (status.success(), log);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("densekv did not exit on a bad AOF");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A last incremental file cut in the middle of a command loads every whole command before
/// the cut with `aof-load-truncated yes` (the file is cut back), and stops startup with Redis's
/// advice with `no`; bytes that are no command stop it with a format error.
#[test]
fn cut_and_corrupt_files() {
    let dir = temp_dir("aof", "truncated");
    let opts = ["--appendonly", "yes"];
    let server = densekv_in(&dir, &opts);
    let mut c = server.connect();
    for i in 0..100 {
        c.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    drop(c);
    drop(server);
    let incr = aof_dir(&dir).join("appendonly.aof.1.incr.aof");
    let whole = std::fs::read(&incr).unwrap();
    let mut cut = whole.clone();
    cut.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$4\r\nlast\r\n$5\r\nval");
    std::fs::write(&incr, &cut).unwrap();
    let (ok, log) = failed_start(&dir, &["--appendonly", "yes", "--aof-load-truncated", "no"]);
    assert!(!ok, "a cut file with aof-load-truncated no stops startup");
    assert!(
        log.contains("Unexpected end of file reading the append only file"),
        "{log}"
    );
    {
        let server = densekv_in(&dir, &opts);
        let mut c = server.connect();
        assert_eq!(c.cmd(&["DBSIZE"]), b":100\r\n");
        assert_eq!(c.cmd(&["EXISTS", "last"]), b":0\r\n");
    }
    assert_eq!(std::fs::read(&incr).unwrap()[..whole.len()], whole[..]);
    let mut bad = std::fs::read(&incr).unwrap();
    bad.extend_from_slice(b"garbage\r\n*1\r\n$4\r\nPING\r\n");
    std::fs::write(&incr, &bad).unwrap();
    let (ok, log) = failed_start(&dir, &opts);
    assert!(!ok && log.contains("Bad file format"), "{log}");
    let mut unknown = whole.clone();
    unknown.extend_from_slice(b"*1\r\n$6\r\nNOSUCH\r\n");
    std::fs::write(&incr, &unknown).unwrap();
    let (ok, log) = failed_start(&dir, &opts);
    assert!(!ok && log.contains("Unknown command 'NOSUCH'"), "{log}");
    std::fs::write(aof_dir(&dir).join("appendonly.aof.manifest"), b"nonsense\n").unwrap();
    let (ok, log) = failed_start(&dir, &opts);
    assert!(
        !ok && log.contains("Invalid AOF manifest file format"),
        "{log}"
    );
}

/// CONFIG SET appendonly yes on a server with data: a rewrite writes the first base, and a
/// restart with the AOF on has every key (Redis then ignores dump.rdb).
#[test]
fn appendonly_switched_on_at_runtime() {
    let dir = temp_dir("aof", "runtime");
    let server = densekv_in(&dir, &[]);
    let mut c = server.connect();
    fill(&mut c, "a");
    assert_eq!(info_field(&mut c, "aof_enabled"), "0");
    assert_eq!(c.cmd(&["CONFIG", "SET", "appendonly", "yes"]), b"+OK\r\n");
    assert_eq!(info_field(&mut c, "aof_enabled"), "1");
    fill(&mut c, "b");
    wait_rewrite(&mut c);
    assert_eq!(
        manifest(&dir),
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    let digest = c.cmd(&["DEBUG", "DIGEST"]);
    drop(c);
    drop(server);
    let server = densekv_in(&dir, &["--appendonly", "yes"]);
    let mut c = server.connect();
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(c.cmd(&["CONFIG", "SET", "appendonly", "no"]), b"+OK\r\n");
    assert_eq!(info_field(&mut c, "aof_enabled"), "0");
    c.cmd(&["SET", "after-off", "1"]);
    drop(c);
    drop(server);
    let server = densekv_in(&dir, &["--appendonly", "yes"]);
    assert_eq!(server.connect().cmd(&["DEBUG", "DIGEST"]), digest);
}
