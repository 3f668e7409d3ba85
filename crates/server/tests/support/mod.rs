//! Shared harness for the server's integration tests: start densekv and the real `redis-server`
//! (the oracle) on ephemeral loopback ports, talk to them with a tiny raw RESP client, stop them
//! by pid when the test ends.
//!
//! Ports: we bind `127.0.0.1:0` to learn a free port, release it and start the server with
//! `--port P`. Another process can grab the port in between, so startup retries with a new port
//! when the server exits early, and the server is only accepted once `INFO` reports the pid we
//! started (densekv binds with `SO_REUSEPORT`, so a collision with another densekv would
//! otherwise go unnoticed) and, unless it is started with `densekv_loading`, `loading:0` (its
//! data file is loaded). Ports handed out by this process are never reused by it.
//!
//! The client reads exactly one complete reply at a time, framed generically for RESP2 and RESP3
//! (`+ - : _ # , (` are one line; `$ ! =` carry a length; `* ~ >` count elements and `% |` count
//! pairs), and returns its raw bytes, so tests compare replies byte for byte.

// Each test binary uses a different part of the harness.
#![allow(dead_code)]

pub mod dataset;
pub mod diff;
pub mod persist;

use std::collections::HashSet;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Ports this test process has handed out; never handed out twice.
static USED_PORTS: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

pub fn free_port() -> u16 {
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
        let port = listener.local_addr().expect("local addr").port();
        drop(listener);
        let mut used = USED_PORTS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if port != 6379 && used.get_or_insert_with(HashSet::new).insert(port) {
            return port;
        }
    }
}

/// Which server a `Server` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Densekv,
    Redis,
}

/// A server process this test started; killed by pid on drop.
#[derive(Debug)]
pub struct Server {
    child: Child,
    pub port: u16,
    pub kind: Kind,
    /// Whether starting waits until the data file is loaded (INFO's `loading:0`).
    wait_loaded: bool,
}

/// The redis-server binary, if installed.
pub fn redis_server_path() -> Option<String> {
    ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .iter()
        .find(|p| std::path::Path::new(p).exists())
        .map(|p| (*p).to_string())
}

/// Panics unless a command-line tool (`redis-cli`, `redis-benchmark`) is on the PATH: the tests
/// that drive it fail rather than skip without it.
pub fn require_tool(name: &str) {
    let found = Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "{name} is not installed: scripts/check.sh installs it"
    );
}

impl Server {
    /// Starts densekv with save points off (as `redis` starts redis-server) and extra
    /// `--option value` arguments, which may set them again.
    pub fn densekv(extra: &[&str]) -> Server {
        let mut args = vec!["--save", ""];
        args.extend_from_slice(extra);
        Server::start(Kind::Densekv, env!("CARGO_BIN_EXE_densekv"), &args)
    }

    /// Starts redis-server with persistence off. A test that needs its oracle fails, rather
    /// than skips, when it is not installed.
    pub fn redis(extra: &[&str]) -> Server {
        let path = redis_server_path().expect(
            "redis-server is not installed: scripts/check.sh installs it (the differential \
             tests need their oracle)",
        );
        let mut args = vec!["--save", "", "--appendonly", "no"];
        args.extend_from_slice(extra);
        Server::start(Kind::Redis, &path, &args)
    }

    /// Starts densekv like `densekv`, but returns as soon as it answers, while it may still be
    /// loading its data file.
    pub fn densekv_loading(extra: &[&str]) -> Server {
        let mut args = vec!["--save", ""];
        args.extend_from_slice(extra);
        let program = env!("CARGO_BIN_EXE_densekv");
        let bind = ["--bind", "127.0.0.1"];
        Server::start_in(Kind::Densekv, program, &[], &bind, &args, None, false)
    }

    /// Both servers with the same options.
    pub fn pair(extra: &[&str]) -> (Server, Server) {
        let redis = Server::redis(extra);
        (Server::densekv(extra), redis)
    }

    /// Starts densekv or redis-server from a config file (first argument) with `--port` and
    /// `extra` options after it, in `cwd`: nothing else is added (no `--bind`, no `--save`).
    pub fn from_file(kind: Kind, file: &str, extra: &[&str], cwd: &std::path::Path) -> Server {
        let program = match kind {
            Kind::Densekv => env!("CARGO_BIN_EXE_densekv").to_string(),
            Kind::Redis => redis_server_path().expect(
                "redis-server is not installed: scripts/check.sh installs it (the differential \
                 tests need their oracle)",
            ),
        };
        Server::start_in(kind, &program, &[file], &[], extra, Some(cwd), true)
    }

    fn start(kind: Kind, program: &str, extra: &[&str]) -> Server {
        Server::start_in(
            kind,
            program,
            &[],
            &["--bind", "127.0.0.1"],
            extra,
            None,
            true,
        )
    }

    fn start_in(
        kind: Kind,
        program: &str,
        before: &[&str],
        bind: &[&str],
        extra: &[&str],
        cwd: Option<&std::path::Path>,
        wait_loaded: bool,
    ) -> Server {
        let mut last_error = String::new();
        for _ in 0..10 {
            let port = free_port();
            let mut command = Command::new(program);
            if let Some(cwd) = cwd {
                command.current_dir(cwd);
            }
            command
                .args(before)
                .arg("--port")
                .arg(port.to_string())
                .args(bind)
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let child = command
                .spawn()
                .unwrap_or_else(|e| panic!("spawn {program}: {e}"));
            let mut server = Server {
                child,
                port,
                kind,
                wait_loaded,
            };
            match server.wait_ready() {
                Ok(()) => return server,
                Err(e) => last_error = e,
            }
        }
        panic!("{program} did not start: {last_error}");
    }

    /// Waits until the server answers INFO with our pid (and, with `wait_loaded`, has loaded its
    /// data file); `Err` when it exited or another process answers on the port.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut stderr = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut stderr);
                }
                return Err(format!("exited with {status}: {stderr}"));
            }
            if let Ok(mut client) = Client::try_connect(self.port) {
                // A server started with requirepass answers NOAUTH: that is ready too. A probe
                // that fails (a server still starting or stopping on the port) is not ready yet.
                let sent = client
                    .stream
                    .write_all(&encode(&[b"INFO", b"server", b"persistence"]));
                let Some(reply) = sent.ok().and_then(|()| client.try_read_reply().ok()) else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                if reply.starts_with(b"-NOAUTH") {
                    return Ok(());
                }
                let text = String::from_utf8_lossy(&reply).into_owned();
                let pid = format!("process_id:{}\r\n", self.child.id());
                if text.contains(&pid) {
                    if text.contains("\r\nloading:0\r\n") || !self.wait_loaded {
                        return Ok(());
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                if text.contains("process_id:") {
                    return Err("another server answers on the port".into());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("not ready after 10 s".into())
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.port)
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// How the process ended, if it has.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// How the process ended, waiting up to `timeout` for it to end (`None`: still running).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.exit_status() {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The server's resident set size in KiB (Linux `VmRSS`).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read /proc/<pid>/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS line")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Child::kill sends SIGKILL to exactly this pid.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Encodes one command as a RESP multibulk.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    encode_into(&mut out, args);
    out
}

pub fn encode_into(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A raw RESP connection.
#[derive(Debug)]
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
    pos: usize,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        Client::try_connect(port).unwrap_or_else(|e| panic!("connect to port {port}: {e}"))
    }

    pub fn try_connect(port: u16) -> io::Result<Client> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Client {
            stream,
            buf: Vec::new(),
            pos: 0,
        })
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Sends bytes; `Err` when the connection is gone (a server killed on purpose).
    pub fn try_send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Sends one command and returns its raw reply.
    pub fn command(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(&encode(args));
        self.read_reply()
    }

    /// `command` with string arguments.
    pub fn cmd(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.command(&args)
    }

    /// Sends every command in one write, then reads one reply per command.
    pub fn pipeline(&mut self, commands: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
        let mut bytes = Vec::new();
        for c in commands {
            let args: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
            encode_into(&mut bytes, &args);
        }
        self.send(&bytes);
        (0..commands.len()).map(|_| self.read_reply()).collect()
    }

    /// Reads exactly one complete reply and returns its bytes. Panics on EOF or timeout.
    pub fn read_reply(&mut self) -> Vec<u8> {
        self.try_read_reply().expect("read a reply")
    }

    /// One complete reply, or the I/O error (EOF is `UnexpectedEof`).
    pub fn try_read_reply(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(end) = frame_end(&self.buf[self.pos..]) {
                let reply = self.buf[self.pos..self.pos + end].to_vec();
                self.pos += end;
                if self.pos == self.buf.len() {
                    self.buf.clear();
                    self.pos = 0;
                }
                return Ok(reply);
            }
            self.fill()?;
        }
    }

    fn fill(&mut self) -> io::Result<()> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let mut chunk = vec![0u8; 256 << 10];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// Everything the server sends until it closes the connection (bytes already buffered
    /// included). Panics if it has not closed within `timeout`.
    pub fn read_until_closed(&mut self, timeout: Duration) -> Vec<u8> {
        self.stream
            .set_read_timeout(Some(timeout))
            .expect("timeout");
        let mut all = self.buf[self.pos..].to_vec();
        self.buf.clear();
        self.pos = 0;
        let mut chunk = vec![0u8; 64 << 10];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return all,
                Ok(n) => all.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return all,
                Err(e) => panic!(
                    "connection still open after {timeout:?} ({e}); got {:?}",
                    String::from_utf8_lossy(&all)
                ),
            }
        }
    }

    /// Whether the server has closed the connection (EOF or reset within `wait`), with no
    /// further bytes.
    pub fn is_closed(&mut self, wait: Duration) -> bool {
        self.stream.set_read_timeout(Some(wait)).expect("timeout");
        let mut byte = [0u8; 1];
        let closed = match self.stream.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() == io::ErrorKind::ConnectionReset,
        };
        self.stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        closed
    }

    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}

fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|p| from + p)
}

fn length_at(buf: &[u8], from: usize) -> Option<(i64, usize)> {
    let end = line_end(buf, from)?;
    let text = std::str::from_utf8(&buf[from + 1..end]).expect("length is ASCII");
    let n = text
        .parse()
        .unwrap_or_else(|_| panic!("bad length {text:?}"));
    Some((n, end + 2))
}

/// The length of the complete reply at the start of `buf`, or `None` when more bytes are needed.
pub fn frame_end(buf: &[u8]) -> Option<usize> {
    frame_end_at(buf, 0)
}

fn frame_end_at(buf: &[u8], at: usize) -> Option<usize> {
    let kind = *buf.get(at)?;
    match kind {
        b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => line_end(buf, at).map(|e| e + 2),
        b'$' | b'!' | b'=' => {
            let (n, start) = length_at(buf, at)?;
            if n < 0 {
                return Some(start);
            }
            let end = start + n as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let (n, mut next) = length_at(buf, at)?;
            if n < 0 {
                return Some(next);
            }
            let items = if matches!(kind, b'%' | b'|') {
                2 * n
            } else {
                n
            };
            for _ in 0..items {
                next = frame_end_at(buf, next)?;
            }
            if kind == b'|' {
                // An attribute precedes the reply it annotates.
                return frame_end_at(buf, next);
            }
            Some(next)
        }
        other => panic!(
            "unknown RESP type byte {:?} in {:?}",
            other as char,
            String::from_utf8_lossy(&buf[at..buf.len().min(at + 200)])
        ),
    }
}

/// A decoded reply, for the few places a test needs to look inside one (SCAN cursors, INFO).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Array(Vec<Value>),
    /// RESP3 `%` map as a flat key, value, key, value list.
    Map(Vec<Value>),
    Other(Vec<u8>),
}

impl Value {
    pub fn bulk(&self) -> &[u8] {
        match self {
            Value::Bulk(b) | Value::Simple(b) => b,
            other => panic!("expected a bulk string, got {other:?}"),
        }
    }

    pub fn array(&self) -> &[Value] {
        match self {
            Value::Array(a) | Value::Map(a) => a,
            other => panic!("expected an array, got {other:?}"),
        }
    }
}

/// Decodes one complete reply (as returned by `Client::read_reply`).
pub fn decode(bytes: &[u8]) -> Value {
    let (value, used) = decode_at(bytes, 0);
    assert_eq!(used, bytes.len(), "trailing bytes after the reply");
    value
}

fn decode_at(buf: &[u8], at: usize) -> (Value, usize) {
    let end = line_end(buf, at).expect("complete reply");
    let line = buf[at + 1..end].to_vec();
    let next = end + 2;
    let number = || -> i64 { std::str::from_utf8(&line).unwrap().parse().unwrap() };
    match buf[at] {
        b'+' => (Value::Simple(line.clone()), next),
        b'-' => (Value::Error(line.clone()), next),
        b':' => (Value::Int(number()), next),
        b'_' => (Value::Null, next),
        b'$' | b'=' | b'!' => {
            let n = number();
            if n < 0 {
                return (Value::Null, next);
            }
            let n = n as usize;
            (Value::Bulk(buf[next..next + n].to_vec()), next + n + 2)
        }
        b'*' | b'~' | b'>' | b'%' => {
            let n = number();
            if n < 0 {
                return (Value::Null, next);
            }
            let items = if buf[at] == b'%' { 2 * n } else { n };
            let mut values = Vec::new();
            let mut pos = next;
            for _ in 0..items {
                let (v, p) = decode_at(buf, pos);
                values.push(v);
                pos = p;
            }
            if buf[at] == b'%' {
                (Value::Map(values), pos)
            } else {
                (Value::Array(values), pos)
            }
        }
        _ => (Value::Other(line.clone()), next),
    }
}

/// Printable form of raw reply bytes for assertion messages (the first 400 bytes).
pub fn show(bytes: &[u8]) -> String {
    let mut s = render(&bytes[..bytes.len().min(400)]);
    if bytes.len() > 400 {
        s += &["…(", &bytes.len().to_string(), " bytes)"].concat();
    }
    s
}

/// Printable form of raw bytes: CR and LF as `\r` `\n`, other bytes outside ASCII's printable
/// range as `\xNN`.
pub fn render(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for &b in bytes {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s
}

/// Runs a full SCAN iteration (with the given extra arguments) and returns the sorted keys,
/// deduplicated (SCAN may return a key twice).
pub fn scan_all(client: &mut Client, extra: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut cursor = b"0".to_vec();
    let mut keys = Vec::new();
    for _ in 0..1_000_000 {
        let mut args: Vec<&[u8]> = vec![b"SCAN", &cursor];
        args.extend_from_slice(extra);
        let reply = decode(&client.command(&args));
        let parts = reply.array();
        let next = parts[0].bulk().to_vec();
        keys.extend(parts[1].array().iter().map(|k| k.bulk().to_vec()));
        if next == b"0" {
            keys.sort();
            keys.dedup();
            return keys;
        }
        cursor = next;
    }
    panic!("SCAN did not finish");
}
