//! Starting and stopping the servers under test, and reading their memory.
//!
//! Each server is a child process of the harness, started as
//! `<binary> --port P --bind 127.0.0.1 --save "" --appendonly no [extra arguments]` on a port the
//! kernel just gave us (bind `127.0.0.1:0`, read the port, close, pass it on; if the server then
//! fails to bind because someone else took the port in between, we retry with a new one). Port
//! 6379 is never used unless the kernel hands it out, which it does not for ephemeral ports.
//!
//! A [`ServerProcess`] stops its child in `Drop` (SIGTERM by pid, SIGKILL through the handle
//! after two seconds), so a panic unwinding through the suite stops the servers too. Ctrl-C is
//! handled by [`install_interrupt_handler`]: every live child's pid is kept in a registry, and
//! the handler signals exactly those pids before exiting. Nothing else is ever signalled.
//!
//! Memory is read from `/proc/<pid>/status` (`VmRSS`, via [`machine::parse_status`]) and from the
//! server's own `INFO memory` (`used_memory`), which densekv may not have yet (then `None`).

use std::fs::File;
use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::machine;
use crate::server_resp::{Connection, Reply};

/// How long a server may take to answer its first PING (a restart loads its file first).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// Between PING attempts at startup. Short, because the persist suite times a restart to its
/// first PONG (a load of 10⁶ keys takes about a second); a failed attempt costs a connect.
const STARTUP_POLL: Duration = Duration::from_millis(5);
/// How long a reply may take during a measurement (a 10⁷ load batch included).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(120);
const START_ATTEMPTS: usize = 5;

/// The pids of the children alive right now, for the Ctrl-C handler.
static LIVE_PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Which server a measurement is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    Densekv,
    Redis,
}

impl ServerKind {
    pub const BOTH: [Self; 2] = [Self::Densekv, Self::Redis];

    pub fn name(self) -> &'static str {
        match self {
            Self::Densekv => "densekv",
            Self::Redis => "redis",
        }
    }
}

/// A running server that this harness started.
#[derive(Debug)]
pub struct ServerProcess {
    pub kind: ServerKind,
    pub port: u16,
    child: Child,
    log_path: PathBuf,
    /// Seconds from the spawn to the first PONG.
    pub ready_secs: f64,
}

/// A port that was free a moment ago.
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

impl ServerProcess {
    /// Starts `binary` on a fresh ephemeral port and waits until it answers PING. Its output goes
    /// to a log file in the temporary directory, whose tail is quoted if it fails to start.
    pub fn start(kind: ServerKind, binary: &Path) -> Result<Self, String> {
        Self::start_with(kind, binary, &[])
    }

    /// [`start`](Self::start) with `extra` appended to the command line (`--dir D`, ...); a later
    /// option overrides an earlier one in both servers.
    pub fn start_with(kind: ServerKind, binary: &Path, extra: &[String]) -> Result<Self, String> {
        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port().map_err(|e| format!("no free port: {e}"))?;
            match Self::start_on(kind, binary, port, extra) {
                Ok(server) => return Ok(server),
                Err(error) => last_error = error,
            }
        }
        Err(format!(
            "{} did not start in {START_ATTEMPTS} attempts: {last_error}",
            kind.name()
        ))
    }

    fn start_on(
        kind: ServerKind,
        binary: &Path,
        port: u16,
        extra: &[String],
    ) -> Result<Self, String> {
        let log_path = std::env::temp_dir().join(format!(
            "densekv-bench-{}-{}-{port}.log",
            kind.name(),
            std::process::id()
        ));
        let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        let spawned = Instant::now();
        let child = Command::new(binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
        register(child.id());
        let mut server = Self {
            kind,
            port,
            child,
            log_path,
            ready_secs: 0.0,
        };
        server.wait_ready()?;
        server.ready_secs = spawned.elapsed().as_secs_f64();
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("exited with {status}: {}", self.log_tail()));
            }
            let pong = Connection::open(self.port, Duration::from_secs(2))
                .and_then(|mut c| c.command(&["PING"]));
            if let Ok(Reply::Simple(s)) = pong
                && s == "PONG"
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "no PONG after {} s: {}",
                    STARTUP_TIMEOUT.as_secs(),
                    self.log_tail()
                ));
            }
            thread::sleep(STARTUP_POLL);
        }
    }

    /// The server's whole log so far (its stdout and stderr).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the child is still running (it may have crashed under load).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// `VmRSS` of the server, in bytes; 0 if it is gone.
    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()));
        machine::parse_status(&status.unwrap_or_default()).rss_bytes
    }

    /// `used_memory` from `INFO memory`, or `None` when the server does not report it.
    pub fn used_memory(&self) -> Option<u64> {
        let mut connection = Connection::open(self.port, REPLY_TIMEOUT).ok()?;
        match connection.command(&["INFO", "memory"]).ok()? {
            Reply::Bulk(Some(text)) => info_field(&String::from_utf8_lossy(&text), "used_memory"),
            _ => None,
        }
    }

    /// Waits at least `min`, then until `VmRSS` has not changed for `still` (the server finished
    /// rehashing and its allocator returned what it will return), at most `limit` in all.
    /// Returns the last reading.
    pub fn wait_quiet(&self, still: Duration, min: Duration, limit: Duration) -> u64 {
        let started = Instant::now();
        let mut last = self.rss_bytes();
        let mut unchanged_since = Instant::now();
        while started.elapsed() < limit
            && (started.elapsed() < min || unchanged_since.elapsed() < still)
        {
            thread::sleep(Duration::from_millis(100));
            let now = self.rss_bytes();
            if now != last {
                last = now;
                unchanged_since = Instant::now();
            }
        }
        last
    }

    /// Stops the server: SIGTERM by pid, then SIGKILL through the handle if it is still running
    /// after two seconds. Idempotent.
    pub fn stop(&mut self) {
        if self.is_running() {
            signal(self.pid(), "-TERM");
            let deadline = Instant::now() + Duration::from_secs(2);
            while self.is_running() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(10));
            }
            if self.is_running() {
                let _ = self.child.kill();
            }
        }
        let _ = self.child.wait();
        unregister(self.pid());
        let _ = std::fs::remove_file(&self.log_path);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Reads `name:value` from an `INFO` text.
pub fn info_field(info: &str, name: &str) -> Option<u64> {
    info.lines().find_map(|line| {
        let (key, value) = line.trim_end().split_once(':')?;
        (key == name).then(|| value.parse().ok()).flatten()
    })
}

fn signal(pid: u32, how: &str) {
    // `kill(1)` rather than a libc binding: no unsafe code in the harness for one syscall.
    let _ = Command::new("kill")
        .args([how, &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

fn register(pid: u32) {
    if let Ok(mut pids) = LIVE_PIDS.lock() {
        pids.push(pid);
    }
}

fn unregister(pid: u32) {
    if let Ok(mut pids) = LIVE_PIDS.lock() {
        pids.retain(|p| *p != pid);
    }
}

/// On Ctrl-C (or SIGTERM), stops every server this harness started and exits with 130.
pub fn install_interrupt_handler() {
    let _ = ctrlc::set_handler(|| {
        let pids = LIVE_PIDS.lock().map(|p| p.clone()).unwrap_or_default();
        for pid in pids {
            signal(pid, "-KILL");
        }
        eprintln!("\ninterrupted: stopped the servers this run started");
        std::process::exit(130);
    });
}

#[cfg(test)]
mod tests {
    use super::{free_port, info_field};

    #[test]
    fn info_fields() {
        let info = "# Memory\r\nused_memory:1052376\r\nused_memory_human:1.00M\r\n\
                    used_memory_rss:7340032\r\n";
        assert_eq!(info_field(info, "used_memory"), Some(1_052_376));
        assert_eq!(info_field(info, "used_memory_rss"), Some(7_340_032));
        assert_eq!(info_field(info, "used_memory_human"), None);
        assert_eq!(info_field(info, "maxmemory"), None);
    }

    #[test]
    fn free_ports_are_ephemeral() {
        let port = free_port().unwrap();
        assert_ne!(port, 6379);
        assert!(port > 1024);
    }
}
