//! SIGTERM and SIGINT shut densekv down cleanly, as they do redis-server: the signal is logged,
//! connected clients are closed, the pid file is removed and the process exits with status 0.

mod support;

use std::time::Duration;
use support::Server;

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("densekv-shutdown-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn sigterm_and_sigint_shut_down_cleanly() {
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let dir = temp_dir(name);
        let pidfile = dir.join("densekv.pid");
        let logfile = dir.join("densekv.log");
        let mut server = Server::densekv(&[
            "--pidfile",
            pidfile.to_str().expect("utf-8 path"),
            "--logfile",
            logfile.to_str().expect("utf-8 path"),
        ]);
        let mut client = server.connect();
        assert_eq!(client.cmd(&["SET", "k", "v"]), b"+OK\r\n");
        assert_eq!(
            std::fs::read_to_string(&pidfile).expect("pid file").trim(),
            server.pid().to_string()
        );
        // SAFETY: kill(2) on the pid of a child this test started and still owns.
        let sent = unsafe { libc::kill(server.pid() as libc::pid_t, signal) };
        assert_eq!(sent, 0);
        let status = server
            .wait_exit(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{name}: still running"));
        assert!(status.success(), "{name}: exited with {status}");
        assert!(
            client.is_closed(Duration::from_secs(5)),
            "{name}: client not closed"
        );
        assert!(!pidfile.exists(), "{name}: pid file left behind");
        let log = std::fs::read_to_string(&logfile).expect("log file");
        assert!(
            log.contains(&format!("Received {name} scheduling shutdown...")),
            "{log}"
        );
        assert!(log.contains("ready to exit, bye bye..."), "{log}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
