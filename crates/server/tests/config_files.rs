//! Config files as operators have them, read by densekv and by redis-server 7.0.15 from the same
//! bytes: Debian's stock /etc/redis/redis.conf, the Redis test suite's default.conf, include
//! with glob patterns, rename-command, multi-argument and quoted values, stdin; then CONFIG GET
//! of every directive compared between the two, and startup errors compared byte for byte on
//! stderr (with the exit code).

mod support;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::{Kind, Server, decode, show};

/// A fresh directory for one server's files.
fn temp_dir(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("densekv-cfg-{}-{name}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// CONFIG GET of `pattern` as a name → value map.
fn config_map(server: &Server, pattern: &str) -> BTreeMap<String, String> {
    let mut client = server.connect();
    let reply = decode(&client.cmd(&["CONFIG", "GET", pattern]));
    reply
        .array()
        .chunks(2)
        .map(|kv| {
            (
                String::from_utf8_lossy(kv[0].bulk()).into_owned(),
                String::from_utf8_lossy(kv[1].bulk()).into_owned(),
            )
        })
        .collect()
}

/// Every directive's value on both servers, with the names that legitimately differ removed.
fn compare_all(densekv: &Server, redis: &Server, differ: &[&str]) {
    let mut ours = config_map(densekv, "*");
    let theirs = config_map(redis, "*");
    // densekv's own directives have no Redis counterpart.
    ours.retain(|name, _| !server::config::densekv_only(name));
    let mismatches: Vec<String> = theirs
        .iter()
        .filter(|(name, _)| !differ.contains(&name.as_str()))
        .filter(|(name, value)| ours.get(*name) != Some(value))
        .map(|(name, value)| format!("{name}: redis {value:?}, densekv {:?}", ours.get(name)))
        .collect();
    assert!(
        mismatches.is_empty(),
        "CONFIG GET differs:\n{}",
        mismatches.join("\n")
    );
    let extra: Vec<&String> = ours.keys().filter(|n| !theirs.contains_key(*n)).collect();
    assert!(
        extra.is_empty(),
        "densekv has directives redis-server lacks: {extra:?}"
    );
}

/// Both servers from `file`, each with its own directory as working directory and `dir`, and
/// its own pid file; `extra` after.
fn pair_from_file(file: &Path, extra: &[&str]) -> (Server, Server, PathBuf, PathBuf) {
    let file = file.to_str().expect("utf-8 path");
    let start = |kind: Kind, name: &str| {
        let dir = temp_dir(name);
        let pidfile = dir.join("server.pid");
        let mut args = vec![
            "--dir",
            dir.to_str().unwrap(),
            "--pidfile",
            pidfile.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let args: Vec<String> = args.iter().map(|s| (*s).to_string()).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        (Server::from_file(kind, file, &args, &dir), dir)
    };
    let (redis, redis_dir) = start(Kind::Redis, "redis");
    let (densekv, densekv_dir) = start(Kind::Densekv, "densekv");
    (densekv, redis, densekv_dir, redis_dir)
}

// port and dir (and the pid file, inside dir) are each server's own.
const OWN: &[&str] = &["port", "dir", "pidfile"];

#[test]
fn debian_stock_redis_conf_starts_with_the_same_configuration() {
    let stock = Path::new("/etc/redis/redis.conf");
    assert!(
        stock.exists(),
        "/etc/redis/redis.conf is missing: scripts/check.sh installs the redis-server package, which ships it"
    );
    // Only port, dir, daemonize, logfile and pidfile are overridden: the stock pidfile is the
    // system's (/run/redis/redis-server.pid), which a test must not clobber.
    let (densekv, redis, _, _) = pair_from_file(stock, &["--daemonize", "no", "--logfile", ""]);
    compare_all(&densekv, &redis, OWN);
}

#[test]
fn the_redis_test_suite_default_conf_starts_with_the_same_configuration() {
    let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/assets/default.conf");
    // The file's pidfile is /var/run/redis.pid: replaced by one in each server's directory.
    let (densekv, redis, _, _) = pair_from_file(&conf, &[]);
    compare_all(&densekv, &redis, OWN);
}

#[test]
fn include_globs_renames_quoting_and_multi_argument_values() {
    let root = temp_dir("include");
    let confd = root.join("conf.d");
    std::fs::create_dir_all(&confd).unwrap();
    std::fs::write(confd.join("10-memory.conf"), "maxmemory 10mb\nsave 100 1\n").unwrap();
    std::fs::write(
        confd.join("20-nested.conf"),
        format!("include {}\nhz 50\n", root.join("leaf.conf").display()),
    )
    .unwrap();
    std::fs::write(root.join("leaf.conf"), "   timeout   7   \n# comment\n").unwrap();
    let main = root.join("main.conf");
    std::fs::write(
        &main,
        format!(
            "include {}/*.conf\ninclude {}/nothing-*.conf\nsave 200 2\nsave 300 3\nrename-command KEYS \"\"\nrename-command flushall wipe\n\
             masterauth \"p\\x41ss w\\\"rd\"\nmasteruser 'it\\'s'\nclient-output-buffer-limit \"normal 1mb 2mb 3\"\noom-score-adj-values '0 200 800'\n\
             notify-keyspace-events \"Kx\"\nSHUTDOWN-ON-SIGTERM nosave now\nslave-priority 7\nhash-max-ziplist-entries 99\n\
             latency-tracking-info-percentiles \"50 99.5\"\nlua-time-limit 100\nlist-max-ziplist-entries 3\n",
            confd.display(),
            confd.display()
        ),
    )
    .unwrap();
    let extra = [
        "--client-output-buffer-limit",
        "pubsub 1mb 1mb 1",
        "--maxmemory-policy",
        "allkeys-lru",
        "--bind",
        "127.0.0.1",
    ];
    let (densekv, redis, _, _) = pair_from_file(&main, &extra);
    compare_all(&densekv, &redis, OWN);
    let saves = config_map(&densekv, "save");
    // include's save line replaced the defaults; after an include Redis's later save lines
    // replace the list again (its reading_config_file flag is cleared by the include).
    assert_eq!(saves["save"], config_map(&redis, "save")["save"]);
    assert_eq!(
        config_map(&densekv, "masterauth")["masterauth"],
        "pAss w\"rd"
    );
    assert_eq!(config_map(&densekv, "masteruser")["masteruser"], "it's");
    // The renames took: KEYS is gone, FLUSHALL answers as WIPE only, on both servers alike.
    let (mut d, mut r) = (densekv.connect(), redis.connect());
    for probe in [
        &["KEYS", "*"][..],
        &["keys", "*"],
        &["FLUSHALL"],
        &["WIPE"],
        &["wipe", "SYNC"],
        &["COMMAND", "INFO", "wipe"],
        &["COMMAND", "INFO", "flushall"],
    ] {
        assert_eq!(show(&d.cmd(probe)), show(&r.cmd(probe)), "{probe:?}");
    }
}

#[test]
fn command_line_options_stdin_and_save_without_value() {
    // `--save` alone is `save ""`; a value with spaces stays one argument; `-` reads stdin.
    for kind in [Kind::Densekv, Kind::Redis] {
        let program = match kind {
            Kind::Densekv => env!("CARGO_BIN_EXE_densekv").to_string(),
            Kind::Redis => support::redis_server_path().expect("redis-server is installed"),
        };
        let dir = temp_dir("stdin");
        let mut child = Command::new(&program)
            .current_dir(&dir)
            .args([
                "--port",
                "0",
                "--save",
                "--requirepass",
                "a b",
                "--loglevel",
                "bogus",
                "-",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"maxclients 77\n")
            .unwrap();
        let out = child.wait_with_output().expect("wait");
        // The bad loglevel is on the options' third line, after the file-less "\n" and stdin.
        assert_eq!(out.status.code(), Some(1), "{kind:?}");
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            text.contains(">>> 'loglevel \"bogus\"'"),
            "{kind:?}: {text}"
        );
    }
    // A value may start with "--" when it follows its name; "--save" before another option is
    // `save ""`.
    let (densekv, redis) = Server::pair(&["--save", "--requirepass", "--se cret", "--hz", "33"]);
    for server in [&densekv, &redis] {
        let mut client = server.connect();
        assert_eq!(
            client.cmd(&["AUTH", "--se cret"]),
            b"+OK\r\n",
            "{:?}",
            server.kind
        );
        assert_eq!(
            client.cmd(&["CONFIG", "GET", "save"]),
            b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n",
            "{:?}",
            server.kind
        );
        assert_eq!(
            client.cmd(&["CONFIG", "GET", "hz"]),
            b"*2\r\n$2\r\nhz\r\n$2\r\n33\r\n"
        );
    }
}

/// densekv's and redis-server's stderr and exit code when started with `args` in `dir`.
fn startup_failure(kind: Kind, args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let program = match kind {
        Kind::Densekv => env!("CARGO_BIN_EXE_densekv").to_string(),
        Kind::Redis => support::redis_server_path().expect("redis-server is installed"),
    };
    let out = Command::new(program)
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run the server");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn startup_errors_are_byte_identical_to_redis() {
    let dir = temp_dir("errors");
    std::fs::write(dir.join("inc.conf"), "\n\nmaxmemory 1zb\n").unwrap();
    let files: &[&str] = &[
        "port abc",
        "bogus-directive x",
        "# c\n\nmaxmemory 1zb",
        "save 1",
        "save 0 1",
        "hz",
        "requirepass \"x",
        "requirepass \"x\"y",
        "client-output-buffer-limit normal 1 2",
        "client-output-buffer-limit master 1 2 3",
        "client-output-buffer-limit normal 1 2 -3",
        "include inc.conf",
        "loglevel foo",
        "shutdown-on-sigterm save nosave",
        "rename-command nosuch x",
        "rename-command get set",
        "dbfilename a/b",
        "appendfilename \"\"",
        "oom-score-adj-values 1 2",
        "oom-score-adj-values 1 2 3000",
        "notify-keyspace-events Q",
        "latency-tracking-info-percentiles 101",
        "latency-tracking-info-percentiles abc",
        "logfile /nonexistent-dir/x.log",
        "user default bogus",
        "unixsocketperm 999",
        "maxmemory-clients 200%",
        "maxmemory-clients abc",
        "foo.bar",
        "sentinel monitor x",
        "bind 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17",
        "protected-mode maybe",
        "maxclients 0",
        "slowlog-log-slower-than -2",
        "list-max-ziplist-entries 1 2",
        "cluster-announce-hostname a_b",
        "proc-title-template {nope}",
        "include",
        "databases 0",
        "maxmemory -1",
        "tcp-backlog 1.5",
    ];
    for (i, text) in files.iter().enumerate() {
        let file = dir.join(format!("bad{i}.conf"));
        std::fs::write(&file, format!("{text}\n")).unwrap();
        let file = file.to_str().unwrap();
        let theirs = startup_failure(Kind::Redis, &[file], &dir);
        let ours = startup_failure(Kind::Densekv, &[file], &dir);
        assert_eq!(theirs.0, Some(1), "redis-server accepted {text:?}");
        assert_eq!(ours, theirs, "started from {text:?}");
    }
    for args in [
        &["--port", "abc"][..],
        &["--nosuch", "1", "2"],
        &["--save", "1", "--port", "1"],
        &["--hz"],
        &["stray"],
    ] {
        let ours = startup_failure(Kind::Densekv, args, &dir);
        let theirs = startup_failure(Kind::Redis, args, &dir);
        assert_eq!(ours, theirs, "started with {args:?}");
    }
}

#[test]
fn features_densekv_lacks_are_refused_by_name() {
    let dir = temp_dir("refused");
    for (line, needle) in [
        (
            "replicaof 127.0.0.1 6380",
            "densekv does not support replication: 'replicaof'",
        ),
        (
            "slaveof 127.0.0.1 6380",
            "densekv does not support replication: 'replicaof'",
        ),
        (
            "cluster-enabled yes",
            "densekv does not support cluster mode: 'cluster-enabled'",
        ),
        ("tls-port 6380", "densekv does not support TLS: 'tls-port'"),
        (
            "unixsocket /tmp/x.sock",
            "densekv does not support Unix sockets: 'unixsocket'",
        ),
        (
            "aclfile /etc/users.acl",
            "densekv does not support ACL files: 'aclfile'",
        ),
        (
            "min-replicas-to-write 1",
            "densekv does not support replication",
        ),
        ("loadmodule /x.so", "densekv does not support modules"),
        (
            "user alice on >x ~* +@all",
            "Error in user declaration 'alice': densekv supports only the default user",
        ),
    ] {
        let file = dir.join("refused.conf");
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let (code, stderr) = startup_failure(Kind::Densekv, &[file.to_str().unwrap()], &dir);
        assert_eq!(code, Some(1), "{line}");
        assert!(
            stderr.contains("*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***"),
            "{stderr}"
        );
        assert!(stderr.contains(&format!(">>> '{line}'")), "{stderr}");
        assert!(stderr.contains(needle), "{line}: {stderr}");
    }
    // The neutral values start.
    let file = dir.join("neutral.conf");
    std::fs::write(
        &file,
        "replicaof no one\ncluster-enabled no\ntls-port 0\nunixsocket \"\"\naclfile \"\"\nuser default on nopass ~* &* +@all\n",
    )
    .unwrap();
    let server = Server::from_file(Kind::Densekv, file.to_str().unwrap(), &[], &dir);
    assert_eq!(server.connect().cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn an_unreadable_file_is_fatal() {
    let dir = temp_dir("missing");
    let (code, _) = startup_failure(Kind::Densekv, &["/nonexistent/densekv.conf"], &dir);
    assert_eq!(code, Some(1));
    let (code, _) = startup_failure(Kind::Densekv, &["inc-missing.conf"], &dir);
    assert_eq!(code, Some(1));
}
