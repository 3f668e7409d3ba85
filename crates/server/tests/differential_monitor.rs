//! MONITOR and the operator's CLIENT subcommands against redis-server 7.0, byte for byte.
//!
//! - MONITOR: one client runs a fixed script (plain commands, binary arguments, a failing
//!   command, an unknown one, AUTH and CONFIG SET of a secret, SELECT, MULTI/EXEC, a blocking
//!   pop served later, a MONITOR client touching the keyspace); the lines each server's monitor
//!   receives are compared after the timestamp and the client's port are masked (both differ
//!   by nature). The end of a script is an `ECHO` marker line.
//! - CLIENT PAUSE (WRITE and ALL, errors), UNPAUSE, UNBLOCK (TIMEOUT and ERROR, RESP2 and RESP3),
//!   CLIENT KILL and CLIENT LIST filtered by TYPE pubsub: replies compared byte for byte; that a
//!   paused command waits is checked by reading its connection: nothing for a while, then the
//!   reply once the pause is lifted (no duration is asserted).

mod support;

use std::time::Duration;
use support::{Client, Server, decode, show};

/// The monitor line with its `+<secs>.<micros> ` and the client's `:port]` masked.
fn masked(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line).into_owned();
    let (_, rest) = text.split_once(' ').expect("a timestamp");
    let (head, tail) = rest.split_once("] ").unwrap_or((rest, ""));
    let head = match head.rsplit_once(':') {
        Some((addr, _port)) => format!("{addr}:PORT"),
        None => head.to_string(),
    };
    format!("{head}] {tail}")
}

/// Reads monitor lines until the `ECHO <marker>` line; returns them masked, the marker's
/// excluded.
fn lines_until(monitor: &mut Client, marker: &str) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let line = masked(&monitor.read_reply());
        if line.contains(&format!("\"{marker}\"")) {
            return lines;
        }
        lines.push(line);
    }
}

/// The commands the scripted client sends (each reply read before the next is sent).
fn script() -> Vec<Vec<&'static [u8]>> {
    vec![
        vec![b"SET", b"k", b"v"],
        vec![b"GET", b"k"],
        vec![b"SET", b"bin", b"a\x00b\r\n\"q\"\\\x7f\xff"],
        vec![b"INCR", b"k"],
        vec![b"NOSUCHCOMMAND", b"x"],
        vec![b"GET"],
        vec![b"AUTH", b"secret"],
        vec![b"AUTH", b"user", b"secret"],
        vec![b"HELLO", b"2", b"AUTH", b"default", b"pw"],
        vec![b"SELECT", b"3"],
        vec![b"LPUSH", b"list", b"1", b"2"],
        vec![b"MULTI"],
        vec![b"INCR", b"n"],
        vec![b"LRANGE", b"list", b"0", b"-1"],
        vec![b"EXEC"],
        vec![b"SELECT", b"0"],
        vec![b"CLIENT", b"LIST"],
        vec![b"DEBUG", b"SLEEP", b"0"],
        vec![b"PING"],
        vec![b"ECHO", b"1.5"],
        vec![b"SUBSCRIBE", b"chan"],
        vec![b"PING"],
        vec![b"UNSUBSCRIBE"],
    ]
}

/// Runs the script on `server` and returns what its monitor saw.
fn monitored(server: &Server) -> Vec<String> {
    let mut monitor = server.connect();
    assert_eq!(monitor.cmd(&["MONITOR"]), b"+OK\r\n");
    let mut client = server.connect();
    for args in script() {
        client.command(&args);
    }
    client.cmd(&["ECHO", "end-1"]);
    lines_until(&mut monitor, "end-1")
}

#[test]
fn monitor_lines_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let ours = monitored(&densekv);
    let theirs = monitored(&redis);
    assert_eq!(ours, theirs);
    assert!(ours.iter().any(|l| l.contains("\"(redacted)\"")));
}

/// A MONITOR client may not touch the keyspace; it sees its own other commands; a blocking pop
/// is shown when it blocks; RESET leaves monitor mode.
fn monitor_client_session(server: &Server) -> Vec<Vec<u8>> {
    let mut monitor = server.connect();
    // A second MONITOR gets no reply at all: the GET's reply comes next.
    monitor.send(b"MONITOR\r\nMONITOR\r\nGET k\r\n");
    let mut replies = vec![monitor.read_reply(), monitor.read_reply()];
    replies.push(monitor.cmd(&["SET", "k", "v"]));
    let mut blocked = server.connect();
    blocked.send(&support::encode(&[b"BLPOP", b"q", b"0"]));
    let mut pusher = server.connect();
    pusher.cmd(&["RPUSH", "q", "x"]);
    replies.push(blocked.read_reply());
    pusher.cmd(&["ECHO", "end-2"]);
    let lines = lines_until(&mut monitor, "end-2");
    replies.extend(lines.into_iter().map(String::into_bytes));
    replies.push(monitor.cmd(&["RESET"]));
    replies.push(monitor.cmd(&["GET", "k"]));
    replies
}

#[test]
fn monitor_client_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let ours = monitor_client_session(&densekv);
    let theirs = monitor_client_session(&redis);
    let show_all = |r: &[Vec<u8>]| r.iter().map(|b| show(b)).collect::<Vec<_>>();
    assert_eq!(show_all(&ours), show_all(&theirs));
}

/// Whether a reply arrives on `client` within `wait` (the connection stays usable).
fn reply_within(client: &mut Client, wait: Duration) -> Option<Vec<u8>> {
    client.stream.set_read_timeout(Some(wait)).expect("timeout");
    let reply = client.try_read_reply().ok();
    client
        .stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    reply
}

/// CLIENT PAUSE's errors, then a WRITE pause: reads pass, writes wait until UNPAUSE.
fn pause_session(server: &Server) -> Vec<Vec<u8>> {
    let mut admin = server.connect();
    let mut replies = vec![];
    for args in [
        vec!["CLIENT", "PAUSE", "abc"],
        vec!["CLIENT", "PAUSE", "-1"],
        vec!["CLIENT", "PAUSE", "100", "SOME"],
        vec!["CLIENT", "PAUSE", "100", "WRITE", "x"],
        vec!["CLIENT", "PAUSE"],
        vec!["CLIENT", "PAUSE", "0"],
        vec!["CLIENT", "UNPAUSE", "x"],
    ] {
        replies.push(admin.cmd(&args));
    }
    replies.push(admin.cmd(&["CLIENT", "PAUSE", "20000", "WRITE"]));
    let mut client = server.connect();
    replies.push(client.cmd(&["GET", "k"]));
    client.send(&support::encode(&[b"SET", b"k", b"paused"]));
    let early = reply_within(&mut client, Duration::from_millis(300));
    assert_eq!(early, None, "a write waits while WRITE is paused");
    replies.push(admin.cmd(&["GET", "k"]));
    replies.push(admin.cmd(&["CLIENT", "UNPAUSE"]));
    replies.push(client.read_reply());
    replies.push(client.cmd(&["GET", "k"]));
    // ALL pauses reads too, and ends by itself.
    replies.push(admin.cmd(&["CLIENT", "PAUSE", "500", "ALL"]));
    client.send(&support::encode(&[b"PING"]));
    let early = reply_within(&mut client, Duration::from_millis(100));
    assert_eq!(early, None, "a read waits while ALL is paused");
    replies.push(client.read_reply());
    replies
}

#[test]
fn client_pause_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let ours = pause_session(&densekv);
    let theirs = pause_session(&redis);
    let show_all = |r: &[Vec<u8>]| r.iter().map(|b| show(b)).collect::<Vec<_>>();
    assert_eq!(show_all(&ours), show_all(&theirs));
}

/// CLIENT UNBLOCK of a BLPOP in each protocol, with each reason, and its errors.
fn unblock_session(server: &Server) -> Vec<Vec<u8>> {
    let mut admin = server.connect();
    let mut replies = vec![];
    for protocol in ["2", "3"] {
        for reason in [None, Some("TIMEOUT"), Some("ERROR")] {
            let mut blocked = server.connect();
            blocked.cmd(&["HELLO", protocol]);
            let reply = blocked.cmd(&["CLIENT", "ID"]);
            let id = String::from_utf8_lossy(&reply[1..reply.len() - 2]).into_owned();
            blocked.send(&support::encode(&[b"BLPOP", b"nothing", b"0"]));
            // The BLPOP must have blocked before UNBLOCK runs: wait until CLIENT LIST says so.
            wait_blocked(&mut admin, &id);
            let mut args = vec!["CLIENT", "UNBLOCK", id.as_str()];
            args.extend(reason);
            replies.push(admin.cmd(&args));
            replies.push(blocked.read_reply());
            replies.push(admin.cmd(&["CLIENT", "UNBLOCK", id.as_str()]));
        }
    }
    for args in [
        vec!["CLIENT", "UNBLOCK", "abc"],
        vec!["CLIENT", "UNBLOCK", "1", "maybe"],
        vec!["CLIENT", "UNBLOCK", "99999"],
        vec!["CLIENT", "UNBLOCK", "-5"],
    ] {
        replies.push(admin.cmd(&args));
    }
    replies
}

/// Polls CLIENT LIST until client `id` shows the `b` flag.
fn wait_blocked(admin: &mut Client, id: &str) {
    for _ in 0..500 {
        let list = admin.cmd(&["CLIENT", "LIST", "ID", id]);
        if String::from_utf8_lossy(&list).contains("flags=b") {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("client {id} never blocked");
}

#[test]
fn client_unblock_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let ours = unblock_session(&densekv);
    let theirs = unblock_session(&redis);
    let show_all = |r: &[Vec<u8>]| r.iter().map(|b| show(b)).collect::<Vec<_>>();
    assert_eq!(show_all(&ours), show_all(&theirs));
}

/// CLIENT LIST TYPE and CLIENT KILL TYPE tell pub/sub clients from normal ones.
fn types_session(server: &Server) -> Vec<String> {
    let mut admin = server.connect();
    let mut subscriber = server.connect();
    subscriber.cmd(&["SUBSCRIBE", "a"]);
    let mut plain = server.connect();
    plain.cmd(&["PING"]);
    let count = |admin: &mut Client, kind: &str| {
        let list = admin.cmd(&["CLIENT", "LIST", "TYPE", kind]);
        let text = String::from_utf8_lossy(decode(&list).bulk()).into_owned();
        format!("{kind}:{}", text.lines().count())
    };
    let mut out = vec![count(&mut admin, "pubsub"), count(&mut admin, "normal")];
    out.push(count(&mut admin, "replica"));
    out.push(show(&admin.cmd(&["CLIENT", "LIST", "TYPE", "nope"])));
    out.push(show(&admin.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"])));
    out.push(format!(
        "closed:{}",
        subscriber.is_closed(Duration::from_secs(5))
    ));
    out.push(count(&mut admin, "pubsub"));
    out
}

#[test]
fn client_types_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    assert_eq!(types_session(&densekv), types_session(&redis));
}

/// The `laddr` and `addr` CLIENT INFO reports for `client`.
fn addresses(client: &mut Client) -> (String, String) {
    let info = client.cmd(&["CLIENT", "INFO"]);
    let text = String::from_utf8_lossy(decode(&info).bulk()).into_owned();
    let field = |name: &str| {
        text.split(' ')
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .expect("field")
            .to_string()
    };
    (field("addr"), field("laddr"))
}

/// CLIENT KILL with each filter, their combinations and their errors; the replies are counts
/// and texts that do not depend on addresses.
fn kill_session(server: &Server) -> Vec<String> {
    let mut admin = server.connect();
    let mut out = vec![];
    let mut victim = server.connect();
    let (addr, laddr) = addresses(&mut victim);
    let id = {
        let reply = victim.cmd(&["CLIENT", "ID"]);
        String::from_utf8_lossy(&reply[1..reply.len() - 2]).into_owned()
    };
    for args in [
        vec!["CLIENT", "KILL", "ID", "0"],
        vec!["CLIENT", "KILL", "ID", "abc"],
        vec!["CLIENT", "KILL", "TYPE", "nope"],
        vec!["CLIENT", "KILL", "SKIPME", "maybe"],
        vec!["CLIENT", "KILL", "ID"],
        vec!["CLIENT", "KILL", "WHAT", "x"],
        vec!["CLIENT", "KILL", "1.2.3.4:5"],
        vec!["CLIENT", "KILL", "USER", "nobody"],
        vec!["CLIENT", "KILL", "ID", id.as_str(), "TYPE", "pubsub"],
        vec!["CLIENT", "KILL", "LADDR", "1.1.1.1:1"],
        vec!["CLIENT", "KILL", "ID", id.as_str(), "ADDR", addr.as_str()],
    ] {
        out.push(show(&admin.cmd(&args)));
    }
    out.push(format!(
        "closed:{}",
        victim.is_closed(Duration::from_secs(5))
    ));
    let mut second = server.connect();
    let (addr, _) = addresses(&mut second);
    out.push(show(&admin.cmd(&["CLIENT", "KILL", addr.as_str()])));
    out.push(format!(
        "closed:{}",
        second.is_closed(Duration::from_secs(5))
    ));
    let mut third = server.connect();
    // A round trip first: a connection the server has not accepted yet cannot be killed.
    third.cmd(&["PING"]);
    let killed = admin.cmd(&["CLIENT", "KILL", "LADDR", laddr.as_str(), "SKIPME", "yes"]);
    out.push(show(&killed));
    out.push(show(
        &admin.cmd(&["CLIENT", "KILL", "USER", "default", "SKIPME", "no"]),
    ));
    out.push(format!(
        "closed:{}",
        admin.is_closed(Duration::from_secs(5))
    ));
    out
}

#[test]
fn client_kill_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    assert_eq!(kill_session(&densekv), kill_session(&redis));
}
