//! A panic inside a command is a bug that may have left a shard half-edited, so the server does
//! not go on serving from it: it writes a bug report naming the command to its log and aborts, as
//! Redis does on a failed assertion. DEBUG PANIC panics inside a command that holds every shard.

mod support;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;
use support::Server;

#[test]
fn a_panicking_command_aborts_with_a_bug_report() {
    let dir = std::env::temp_dir().join(format!("densekv-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("densekv.log");
    let log_arg = log.to_str().unwrap().to_string();
    let mut server = Server::densekv(&["--logfile", &log_arg, "--enable-debug-command", "yes"]);
    let mut client = server.connect();
    assert_eq!(client.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    client.send(&support::encode(&[b"DEBUG", b"PANIC"]));
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("the server did not stop after a panic");
    assert_eq!(status.signal(), Some(SIGABRT), "ended by {status}");
    let report = std::fs::read_to_string(&log).unwrap();
    assert!(report.contains("=== DENSEKV BUG REPORT START"), "{report}");
    assert!(
        report.contains("DEBUG PANIC called at Unix time"),
        "{report}"
    );
    assert!(
        report.contains("current command: 'debug' with 2 arguments"),
        "{report}"
    );
    assert!(report.contains("=== DENSEKV BUG REPORT END"), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGABRT's number on Linux.
const SIGABRT: i32 = 6;
