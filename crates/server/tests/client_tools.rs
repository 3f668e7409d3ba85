//! Smoke tests with Redis's own tools against densekv: redis-cli (arguments, inline-style
//! commands on stdin, `--pipe` mass insertion) and a short redis-benchmark run. A test fails
//! when its tool is not installed (`scripts/check.sh` installs them).

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use support::{Server, require_tool};

fn cli(server: &Server, args: &[&str], stdin: &[u8]) -> String {
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &server.port.to_string()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn redis-cli");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    let output = child.wait_with_output().expect("redis-cli output");
    assert!(
        output.status.success(),
        "redis-cli {args:?} failed: {output:?}"
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn redis_cli_smoke() {
    require_tool("redis-cli");
    let server = Server::densekv(&[]);
    assert_eq!(cli(&server, &["PING"], b""), "PONG\n");
    assert_eq!(
        cli(&server, &["SET", "greeting", "hello world"], b""),
        "OK\n"
    );
    assert_eq!(cli(&server, &["GET", "greeting"], b""), "hello world\n");
    assert_eq!(cli(&server, &["INCRBY", "n", "41"], b""), "41\n");
    assert_eq!(cli(&server, &["INCR", "n"], b""), "42\n");
    assert_eq!(cli(&server, &["GET", "missing"], b""), "\n");
    assert!(
        cli(&server, &["NOSUCH"], b"")
            .starts_with("ERR unknown command 'NOSUCH', with args beginning with: \n")
    );
    // Commands read from stdin, one per line, with quoting.
    let out = cli(
        &server,
        &[],
        b"SET quoted \"a b\\tc\"\nSTRLEN quoted\nMGET greeting n missing\n",
    );
    assert_eq!(out, "OK\n5\nhello world\n42\n\n");
    // RESP3 through the CLI (as redis-server 7.0.15 prints it without a terminal).
    assert_eq!(cli(&server, &["-3", "GET", "missing"], b""), "\n");
    assert!(
        cli(&server, &["-3", "HELLO"], b"").starts_with("server redis\nversion 7.0.15\nproto 3\n")
    );
    // --pipe: raw protocol mass insertion, summarised by redis-cli.
    let mut mass = Vec::new();
    for i in 0..5000 {
        mass.extend(format!("SET key:{i} value:{i}\r\n").as_bytes());
    }
    let out = cli(&server, &["--pipe"], &mass);
    assert!(
        out.contains("errors: 0, replies: 5000"),
        "unexpected --pipe summary: {out}"
    );
    assert_eq!(cli(&server, &["DBSIZE"], b""), "5003\n");
    assert_eq!(cli(&server, &["GET", "key:4999"], b""), "value:4999\n");
}

#[test]
fn redis_benchmark_smoke() {
    require_tool("redis-benchmark");
    let server = Server::densekv(&[]);
    let output = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.port.to_string()])
        .args(["-n", "2000", "-t", "set,get,incr", "-q"])
        .stdin(Stdio::null())
        .output()
        .expect("run redis-benchmark");
    assert!(
        output.status.success(),
        "redis-benchmark failed: {output:?}"
    );
    let text = String::from_utf8_lossy(&output.stdout).replace('\r', "\n");
    for test in ["SET", "GET", "INCR"] {
        let line = text
            .lines()
            .rfind(|l| l.starts_with(&format!("{test}: ")))
            .unwrap_or_else(|| panic!("no {test} result in:\n{text}"));
        let rps: f64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no requests per second in {line:?}"));
        assert!(rps > 0.0, "{line}");
    }
}
