//! Busy scripts against redis-server 7.0: once a script has run past `busy-reply-threshold`,
//! other clients get `-BUSY`, the ALLOW_BUSY commands (MULTI, HELLO, SCRIPT KILL, FUNCTION KILL,
//! SHUTDOWN NOSAVE…) are served, SCRIPT KILL stops a script that has not written, a script that
//! has written is UNKILLABLE, and SHUTDOWN NOSAVE ends the server without writing the script's
//! partial effects to the AOF.
//!
//! Each scenario runs on both servers and records every reply (or `<closed>`); the transcripts
//! must match. densekv runs with one I/O thread (the default: the script's own thread must serve
//! the others, `net/while_busy.rs`) and with four (the others are served by their threads).
//! How long a kill took is printed, not asserted (timings are measured by `bench -- scripting`).

#[macro_use]
mod support;

use std::time::{Duration, Instant};
use support::{Client, Server, show};

/// The threshold the scenarios run with (ms).
const THRESHOLD: &str = "100";

/// A loop that never ends and writes nothing.
const SPIN: &str = "local i = 0 while true do i = i + 1 end";

/// A transcript: what each step got.
#[derive(Default)]
struct Log(Vec<String>);

impl Log {
    fn cmd(&mut self, client: &mut Client, args: &[&str]) {
        let reply = client.cmd(args);
        self.0.push(format!("{args:?} -> {}", show(&reply)));
    }

    fn reply(&mut self, what: &str, client: &mut Client) {
        let reply = client.read_reply();
        self.0.push(format!("{what} -> {}", show(&reply)));
    }

    fn closed(&mut self, what: &str, client: &mut Client) {
        let closed = client.is_closed(Duration::from_secs(10));
        self.0.push(format!("{what} closed: {closed}"));
    }
}

/// Sends `args` on `client` without reading the reply.
fn send(client: &mut Client, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    client.send(&support::encode(&args));
}

/// Waits until the script started on another connection is busy, on a new connection: a
/// PING is answered `-BUSY` once the script has passed the threshold. (redis-server, and
/// densekv when both connections share an I/O thread, answer the first PING then; a densekv
/// thread of its own answers PONG until the script is busy.)
fn wait_busy(log: &mut Log, server: &Server) -> Client {
    ping_until_busy(log, server.connect())
}

/// As `wait_busy`, on a connection opened earlier.
fn ping_until_busy(log: &mut Log, mut other: Client) -> Client {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = other.cmd(&["PING"]);
        if reply.starts_with(b"-BUSY") || Instant::now() > deadline {
            log.0.push(format!("PING -> {}", show(&reply)));
            return other;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn start(kind: &str, extra: &[&str]) -> Server {
    let mut args = vec!["--busy-reply-threshold", THRESHOLD];
    args.extend_from_slice(extra);
    match kind {
        "redis" => Server::redis(&args),
        _ => Server::densekv(&args),
    }
}

/// The servers a scenario runs on: redis-server, then densekv with one and four I/O threads.
const KINDS: [(&str, &[&str]); 3] = [
    ("redis", &[]),
    ("densekv", &[]),
    ("densekv", &["--io-threads", "4"]),
];

/// Runs `scenario` on each server and compares the transcripts with redis-server's.
fn differential(name: &str, extra: &[&str], scenario: fn(&mut Log, &mut Server)) {
    let mut expected: Option<Vec<String>> = None;
    for (kind, threads) in KINDS {
        let mut args = extra.to_vec();
        args.extend_from_slice(threads);
        let mut server = start(kind, &args);
        let mut log = Log::default();
        let began = Instant::now();
        scenario(&mut log, &mut server);
        println!("{name} on {kind} {threads:?}: {:?}", began.elapsed());
        match &expected {
            None => expected = Some(log.0),
            Some(want) => assert_eq!(
                &log.0, want,
                "{name}: {kind} {threads:?} differs from redis-server"
            ),
        }
    }
}

#[test]
fn script_kill_stops_a_read_only_script() {
    differential("kill", &[], |log, server| {
        // Opened before the script and pinging at once: its PING is often served in the turn
        // that starts the script, before it, and the PONG must still reach it.
        let other = server.connect();
        let mut caller = server.connect();
        send(&mut caller, &["EVAL", SPIN, "0"]);
        let mut other = ping_until_busy(log, other);
        log.cmd(&mut other, &["GET", "k"]);
        log.cmd(&mut other, &["FUNCTION", "KILL"]);
        log.cmd(&mut other, &["FUNCTION", "STATS"]);
        // A new connection reaches the server (redis-cli script kill opens one).
        let mut killer = server.connect();
        let sent = Instant::now();
        log.cmd(&mut killer, &["SCRIPT", "KILL"]);
        log.reply("EVAL", &mut caller);
        println!("  killed within {:?}", sent.elapsed());
        log.cmd(&mut other, &["PING"]);
        log.cmd(&mut caller, &["PING"]);
        log.cmd(&mut killer, &["SCRIPT", "KILL"]);
    });
}

#[test]
fn allowed_commands_while_busy() {
    differential("allowed", &[], |log, server| {
        let mut caller = server.connect();
        send(&mut caller, &["EVAL", SPIN, "0"]);
        let mut other = wait_busy(log, server);
        log.cmd(&mut other, &["MULTI"]);
        log.cmd(&mut other, &["SET", "k", "v"]);
        log.cmd(&mut other, &["EXEC"]);
        log.cmd(&mut other, &["DISCARD"]);
        log.cmd(&mut other, &["EVAL", "return 1", "0"]);
        log.cmd(&mut other, &["SHUTDOWN"]);
        log.cmd(&mut other, &["SHUTDOWN", "SAVE"]);
        let mut fresh = server.connect();
        // The reply names the client's id, which differs between the servers.
        let hello = fresh.cmd(&["HELLO", "3"]);
        log.0
            .push(format!("HELLO 3 -> a map: {}", hello.starts_with(b"%7")));
        log.cmd(&mut fresh, &["PING"]);
        log.cmd(&mut fresh, &["SCRIPT", "KILL"]);
        log.reply("EVAL", &mut caller);
        log.cmd(&mut fresh, &["GET", "k"]);
    });
}

#[test]
fn a_script_in_pcall_is_killed_too() {
    differential("pcall", &[], |log, server| {
        let mut caller = server.connect();
        let script = "local i = 0 while true do pcall(function() i = i + 1 end) end";
        send(&mut caller, &["EVAL", script, "0"]);
        let mut other = wait_busy(log, server);
        log.cmd(&mut other, &["SCRIPT", "KILL"]);
        log.reply("EVAL", &mut caller);
        log.cmd(&mut caller, &["PING"]);
    });
}

#[test]
fn function_kill_stops_a_function() {
    differential("function", &[], |log, server| {
        let mut caller = server.connect();
        let library =
            format!("#!lua name=spin\nredis.register_function('spin', function() {SPIN} end)");
        log.cmd(&mut caller, &["FUNCTION", "LOAD", &library]);
        send(&mut caller, &["FCALL", "spin", "0", "extra"]);
        let mut other = wait_busy(log, server);
        // The running function, the FCALL that called it, and how long it has run (masked).
        let stats = show(&other.cmd(&["FUNCTION", "STATS"]));
        let at = stats.find("duration_ms").expect("a running script");
        let end = stats[at..].find("\\r\\n$").map_or(stats.len(), |e| at + e);
        log.0.push(format!(
            "FUNCTION STATS -> {}…{}",
            &stats[..at],
            &stats[end..]
        ));
        log.cmd(&mut other, &["SCRIPT", "KILL"]);
        log.cmd(&mut other, &["FUNCTION", "KILL"]);
        log.reply("FCALL", &mut caller);
        log.cmd(&mut other, &["FUNCTION", "KILL"]);
    });
}

#[test]
fn a_script_that_wrote_is_unkillable_but_shutdown_nosave_ends_it() {
    let dirs: Vec<tempdir::Dir> = (0..KINDS.len()).map(|_| tempdir::Dir::new()).collect();
    let mut expected: Option<Vec<String>> = None;
    for ((kind, threads), dir) in KINDS.into_iter().zip(&dirs) {
        let mut args = vec!["--appendonly", "yes", "--dir", dir.path()];
        args.extend_from_slice(threads);
        let mut server = start(kind, &args);
        let mut log = Log::default();
        let mut caller = server.connect();
        log.cmd(&mut caller, &["SET", "k", "before"]);
        let script = format!("redis.call('SET', 'k', 'during') {SPIN}");
        send(&mut caller, &["EVAL", &script, "0"]);
        let mut other = wait_busy(&mut log, &server);
        log.cmd(&mut other, &["SCRIPT", "KILL"]);
        log.cmd(&mut other, &["FUNCTION", "KILL"]);
        log.cmd(&mut other, &["SHUTDOWN"]);
        send(&mut other, &["SHUTDOWN", "NOSAVE"]);
        log.closed("SHUTDOWN NOSAVE", &mut other);
        log.closed("EVAL", &mut caller);
        let status = server.wait_exit(Duration::from_secs(10));
        log.0.push(format!("exited: {}", status.is_some()));
        // The script's SET never reached the AOF: the restarted server has the value before.
        let restarted = start(kind, &args);
        let mut client = restarted.connect();
        log.cmd(&mut client, &["GET", "k"]);
        drop(client);
        drop(restarted);
        match &expected {
            None => expected = Some(log.0),
            Some(want) => assert_eq!(&log.0, want, "{kind} {threads:?} differs"),
        }
    }
}

/// Scratch directories, removed when dropped.
mod tempdir {
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub struct Dir(String);

    impl Dir {
        pub fn new() -> Dir {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let path = std::env::temp_dir().join(format!(
                "densekv-busy-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).expect("scratch dir");
            Dir(path.to_string_lossy().into_owned())
        }

        pub fn path(&self) -> &str {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
