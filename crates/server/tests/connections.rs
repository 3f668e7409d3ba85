//! The connection loop under abuse: clients that half-close, announce huge arguments, die while
//! blocked, send odd timeouts, never read their replies or sit idle. Each test reproduces a way
//! a cheap client could take the server down, and checks densekv against redis-server where
//! Redis defines the outcome.

#[macro_use]
mod support;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{Client, Server, decode, show};

/// A field of `INFO <section>`.
fn info_field(client: &mut Client, section: &str, field: &str) -> String {
    let info = decode(&client.cmd(&["INFO", section]));
    String::from_utf8_lossy(info.bulk())
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
}

fn connected_clients(client: &mut Client) -> usize {
    info_field(client, "clients", "connected_clients")
        .parse()
        .expect("a number")
}

/// Waits until `n` clients are blocked (the blocking command has run).
fn wait_blocked(admin: &mut Client, n: usize) {
    let started = Instant::now();
    while info_field(admin, "clients", "blocked_clients") != n.to_string() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never saw {n} blocked"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// 200 clients send part of a request and close at once, so the FIN arrives with the data: the
/// server must see every EOF and release the connections (it used to keep ~200 in CLOSE-WAIT,
/// counted against maxclients for ever).
#[test]
fn half_closed_partial_requests_are_released() {
    for server in [Server::densekv(&[]), Server::redis(&[])] {
        for _ in 0..200 {
            let mut s = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
            s.write_all(b"*2\r\n$3\r\nGET").expect("send");
        }
        let mut admin = server.connect();
        let started = Instant::now();
        let mut connected = connected_clients(&mut admin);
        while connected > 5 && started.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
            connected = connected_clients(&mut admin);
        }
        assert!(
            connected <= 5,
            "{:?}: {connected} clients still connected 3 s after they closed",
            server.kind
        );
    }
}

/// A client that sends a command and shuts its writing side gets the reply, then the server
/// closes the connection, as redis-server does.
#[test]
fn half_closed_client_gets_its_reply_then_eof() {
    for server in [Server::densekv(&[]), Server::redis(&[])] {
        let mut client = server.connect();
        client.send(b"PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n");
        client.shutdown_write();
        let got = client.read_until_closed(Duration::from_secs(10));
        assert_eq!(
            show(&got),
            show(b"+PONG\r\n$2\r\nhi\r\n"),
            "{:?}",
            server.kind
        );
    }
}

/// Six clients announce 512 MB arguments and send 70 KB of them: the query buffers grow with
/// what arrived, so RSS grows by megabytes, not gigabytes, and other clients are served while
/// the uploads are pending (PING used to wait 5 s while the buffers were zero-filled).
#[test]
fn announced_bulk_lengths_commit_no_memory() {
    let server = Server::densekv(&[]);
    let mut admin = server.connect();
    admin.cmd(&["PING"]);
    let before = server.rss_kib();
    let mut uploads = Vec::new();
    for _ in 0..6 {
        let mut s = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
        s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870000\r\n")
            .expect("header");
        s.write_all(&vec![b'x'; 70_000]).expect("body");
        uploads.push(s);
    }
    // Every upload's bytes are in (the server replies to nothing until the bulk completes, so
    // ask it: six clients each holding ~70 KB of query buffer).
    let started = Instant::now();
    loop {
        let list = decode(&admin.cmd(&["CLIENT", "LIST"]));
        let text = String::from_utf8_lossy(list.bulk()).to_string();
        let receiving = text
            .lines()
            .filter(|l| {
                l.split(' ')
                    .find_map(|f| f.strip_prefix("qbuf="))
                    .and_then(|v| v.parse::<usize>().ok())
                    .is_some_and(|q| q >= 70_000)
            })
            .count();
        if receiving == 6 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "uploads not received: {text}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // A liveness bound, not a speed measurement: PING must not wait for the uploads.
    admin
        .stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    assert_eq!(admin.cmd(&["PING"]), b"+PONG\r\n");
    let grown_kib = server.rss_kib().saturating_sub(before);
    assert!(
        grown_kib <= 64 << 10,
        "RSS grew by {grown_kib} KiB for six announced 512 MB arguments"
    );
}

/// Whether the server's end of the connection from local port `client_port` has left
/// ESTABLISHED, i.e. the client's FIN has reached the server's socket (whether or not the server
/// has read it yet).
fn fin_arrived(server_port: u16, client_port: u16) -> bool {
    let out = std::process::Command::new("ss")
        .args(["-tn", "state", "established"])
        .arg(format!(
            "( sport = :{server_port} and dport = :{client_port} )"
        ))
        .output()
        .expect("ss (iproute2) runs");
    !String::from_utf8_lossy(&out.stdout).contains(&format!(":{client_port}"))
}

/// A client blocked in BLPOP disconnects and another client pushes as soon as the FIN has
/// reached the server: the element must stay in the list (it used to go to the dead client: 20
/// of 20 tries lost it). Run with one and with two I/O threads — the dead client's thread may
/// not have read its FIN when the push runs. Every other try sends the BLPOP and the FIN
/// together, which the loop used to miss for ever: the server must close that client, then the
/// push must stay.
#[test]
fn a_blocked_client_that_died_loses_no_element() {
    for threads in ["1", "2"] {
        let server = Server::densekv(&["--io-threads", threads]);
        let mut admin = server.connect();
        let mut pusher = server.connect();
        for i in 0..50 {
            admin.cmd(&["DEL", "q"]);
            let mut blocked = server.connect();
            let client_port = blocked.stream.local_addr().expect("addr").port();
            blocked.send(b"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n");
            let with_data = i % 2 == 1;
            if !with_data {
                wait_blocked(&mut admin, 1);
            }
            drop(blocked);
            let started = Instant::now();
            while !fin_arrived(server.port, client_port)
                || (with_data && connected_clients(&mut admin) > 2)
            {
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "io-threads {threads}, try {i}: the closed client is still connected"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(pusher.cmd(&["LPUSH", "q", "x"]), b":1\r\n");
            assert_eq!(
                pusher.cmd(&["LLEN", "q"]),
                b":1\r\n",
                "io-threads {threads}, try {i}: the element went to a closed client"
            );
            wait_blocked(&mut admin, 0);
        }
    }
}

/// The timeout texts every blocking command must parse exactly as redis-server 7.0 does.
const TIMEOUTS: &[&str] = &[
    "0",
    "1",
    "0.5",
    "-1",
    "-0",
    "-0.0001",
    "1e-300",
    "0.0001",
    "1e17",
    "1e300",
    "inf",
    "-inf",
    "nan",
    "9223372036854775807",
    "9223372036854775",
    "9223372036854776",
    "-9223372036854775808",
    "abc",
    "",
    " 1",
    "1 ",
    "0x10",
    "1e",
    "+1",
    "1.",
    ".5",
    "1e3000",
];

/// Each blocking command with `timeout` in its place, on keys that hold nothing.
fn blocking_commands(timeout: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["BLPOP", "nokey", timeout],
        vec!["BRPOP", "nokey", "other", timeout],
        vec!["BRPOPLPUSH", "nokey", "dst", timeout],
        vec!["BLMOVE", "nokey", "dst", "LEFT", "RIGHT", timeout],
        vec!["BLMPOP", timeout, "1", "nokey", "LEFT"],
        vec!["BZPOPMIN", "nokey", timeout],
        vec!["BZPOPMAX", "nokey", timeout],
        vec!["BZMPOP", timeout, "1", "nokey", "MIN"],
    ]
}

/// Every blocking command's timeout parsing against redis-server's: inside MULTI a blocking
/// command never blocks, so EXEC shows, without waiting, whether the timeout was refused (and
/// with which error) or accepted (a null reply).
#[test]
fn blocking_timeouts_parse_as_redis_does() {
    let (densekv, redis) = Server::pair(&[]);
    let (mut d, mut r) = (densekv.connect(), redis.connect());
    for timeout in TIMEOUTS {
        for command in blocking_commands(timeout) {
            let mut transcript = Vec::new();
            for c in [&mut d, &mut r] {
                let mut replies = vec![c.cmd(&["MULTI"])];
                replies.push(c.cmd(&command));
                replies.push(c.cmd(&["EXEC"]));
                transcript.push(replies.iter().map(|x| show(x)).collect::<Vec<_>>());
            }
            assert_eq!(transcript[0], transcript[1], "{command:?}");
        }
    }
    // Outside MULTI: refused timeouts get the same errors, and tiny ones time out (null).
    for timeout in ["-1", "1e17", "inf", "abc", "1e-300", "0.001"] {
        let d_reply = d.cmd(&["BLPOP", "nokey", timeout]);
        let r_reply = r.cmd(&["BLPOP", "nokey", timeout]);
        assert_eq!(show(&d_reply), show(&r_reply), "BLPOP nokey {timeout}");
    }
}

/// A timeout too large to ever come blocks until data arrives, as in Redis (whose deadline
/// overflows into "never"), rather than timing out at once.
#[test]
fn huge_timeouts_block_until_served() {
    for server in [Server::densekv(&[]), Server::redis(&[])] {
        let mut admin = server.connect();
        let mut waiter = server.connect();
        waiter.cmd(&["DEL", "q"]);
        waiter.send(&support::encode(&[b"BLPOP", b"q", b"9223372036854775"]));
        wait_blocked(&mut admin, 1);
        admin.cmd(&["RPUSH", "q", "v"]);
        assert_eq!(
            show(&waiter.read_reply()),
            show(b"*2\r\n$1\r\nq\r\n$1\r\nv\r\n"),
            "{:?}",
            server.kind
        );
    }
}

/// Idle connections hold no buffers: after their requests are answered, CLIENT LIST shows no
/// query or reply buffer for them, and their total memory is the size of their records.
#[test]
fn idle_connections_hold_no_buffers() {
    let server = Server::densekv(&[]);
    let mut clients: Vec<Client> = (0..50).map(|_| server.connect()).collect();
    for c in &mut clients {
        assert_eq!(c.cmd(&["SET", "k", &"v".repeat(40_000)]), b"+OK\r\n");
        assert_eq!(c.cmd(&["GET", "k"]).len(), 40_000 + 10);
    }
    let mut admin = server.connect();
    let list = decode(&admin.cmd(&["CLIENT", "LIST"]));
    let text = String::from_utf8_lossy(list.bulk()).to_string();
    let idle: Vec<&str> = text.lines().filter(|l| l.contains("cmd=get")).collect();
    assert_eq!(idle.len(), 50, "{text}");
    for line in idle {
        let field = |name: &str| -> usize {
            line.split(' ')
                .find_map(|f| f.strip_prefix(&format!("{name}=")))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} in {line}"))
        };
        assert_eq!(
            (field("qbuf"), field("qbuf-free"), field("rbs")),
            (0, 0, 0),
            "{line}"
        );
        assert_eq!(
            (field("obl"), field("oll"), field("omem")),
            (0, 0, 0),
            "{line}"
        );
        assert!(field("tot-mem") < 4096, "{line}");
    }
    // INFO agrees: the clients' memory is their records, not 32 KiB of buffers each.
    let clients_memory: usize = info_field(&mut admin, "memory", "mem_clients_normal")
        .parse()
        .expect("a number");
    assert!(
        clients_memory < 52 * 4096,
        "mem_clients_normal {clients_memory}"
    );
}

/// A client that asks for more than it reads: CLIENT LIST shows its pending output (`omem`,
/// `tot-mem`), and once a `normal` hard limit is configured the next reply that passes it
/// closes the client, on both servers.
#[test]
fn output_limits_close_clients_that_do_not_read() {
    for server in [Server::densekv(&[]), Server::redis(&[])] {
        let mut admin = server.connect();
        let value = "x".repeat(4 << 20);
        admin.cmd(&["SET", "big", &value]);
        let mut reader = server.connect();
        reader.cmd(&["CLIENT", "SETNAME", "slow"]);
        reader.send(&b"GET big\r\n".repeat(8));
        let started = Instant::now();
        let omem = loop {
            let list = decode(&admin.cmd(&["CLIENT", "LIST"]));
            let text = String::from_utf8_lossy(list.bulk()).to_string();
            let line = text
                .lines()
                .find(|l| l.contains("name=slow"))
                .expect("slow");
            let omem: usize = line
                .split(' ')
                .find_map(|f| f.strip_prefix("omem="))
                .and_then(|v| v.parse().ok())
                .expect("omem");
            if omem > 1 << 20 || started.elapsed() > Duration::from_secs(10) {
                break omem;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(omem > 1 << 20, "{:?}: omem {omem}", server.kind);
        admin.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 8mb 0 0",
        ]);
        reader.send(&b"GET big\r\n".repeat(8));
        let started = Instant::now();
        while connected_clients(&mut admin) > 1 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{:?}: the client over its output limit is still connected",
                server.kind
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `timeout`: an idle client is closed once it has been idle for longer, a blocked one is not
/// (it waits for its own timeout), as in Redis's clientsCronHandleTimeout.
#[test]
fn idle_timeout_spares_blocked_clients() {
    for server in [Server::densekv(&[]), Server::redis(&[])] {
        let mut admin = server.connect();
        admin.cmd(&["CONFIG", "SET", "timeout", "1"]);
        let mut idle = server.connect();
        idle.cmd(&["PING"]);
        let mut blocked = server.connect();
        blocked.send(&support::encode(&[b"BLPOP", b"q", b"0"]));
        wait_blocked(&mut admin, 1);
        assert!(idle.is_closed(Duration::from_secs(10)), "{:?}", server.kind);
        let mut pusher = server.connect();
        pusher.cmd(&["RPUSH", "q", "v"]);
        assert_eq!(
            show(&blocked.read_reply()),
            show(b"*2\r\n$1\r\nq\r\n$1\r\nv\r\n"),
            "{:?}",
            server.kind
        );
    }
}

/// `tcp-keepalive` (300 s by default) arms keepalive probes on accepted sockets.
#[test]
fn accepted_sockets_have_keepalive() {
    let server = Server::densekv(&["--tcp-keepalive", "60"]);
    let mut client = server.connect();
    client.cmd(&["PING"]);
    let out = std::process::Command::new("ss")
        .args(["-tno", "state", "established"])
        .arg(format!("( sport = :{} )", server.port))
        .output()
        .expect("ss (iproute2) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("keepalive"), "{text}");
}

/// A port nothing listens on (bound and released: free unless another process takes it now).
fn unused_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    listener.local_addr().expect("addr").port()
}

/// CONFIG SET port moves the listener: the new port accepts, the old one refuses, connected
/// clients stay; a port that cannot be bound fails with Redis's text and keeps the old one; and
/// CONFIG SET bind listens on the new addresses. Both servers give the same replies.
#[test]
fn config_set_port_and_bind_listen_again() {
    for server in [Server::densekv(&[]), Server::redis(&[])] {
        let mut admin = server.connect();
        let busy = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        let busy_port = busy.local_addr().expect("addr").port().to_string();
        assert_eq!(
            show(&admin.cmd(&["CONFIG", "SET", "port", &busy_port])),
            show(b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n"),
            "{:?}",
            server.kind
        );
        assert!(
            Client::try_connect(server.port).is_ok(),
            "{:?}: old port lost",
            server.kind
        );
        let new_port = unused_port();
        assert_eq!(
            admin.cmd(&["CONFIG", "SET", "port", &new_port.to_string()]),
            b"+OK\r\n"
        );
        assert_eq!(
            admin.cmd(&["PING"]),
            b"+PONG\r\n",
            "the client stays connected"
        );
        let started = Instant::now();
        let mut moved = Client::try_connect(new_port);
        while moved.is_err() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
            moved = Client::try_connect(new_port);
        }
        let mut moved = moved.expect("the new port accepts");
        assert_eq!(moved.cmd(&["PING"]), b"+PONG\r\n");
        let mut old_refuses = false;
        for _ in 0..500 {
            if TcpStream::connect(("127.0.0.1", server.port)).is_err() {
                old_refuses = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(old_refuses, "{:?}: the old port still accepts", server.kind);
        assert_eq!(
            moved.cmd(&["CONFIG", "SET", "bind", "127.0.0.1 -::1"]),
            b"+OK\r\n"
        );
        assert_eq!(
            decode(&moved.cmd(&["CONFIG", "GET", "bind"])).array()[1].bulk(),
            b"127.0.0.1 -::1"
        );
        assert_eq!(
            Client::try_connect(new_port)
                .expect("bound again")
                .cmd(&["PING"]),
            b"+PONG\r\n"
        );
    }
}

/// `maxclients` is held to the file descriptors the process may open, as Redis's
/// `adjustOpenFilesLimit` does: raised at startup when it can be, else lowered (with Redis's log
/// lines), and CONFIG SET beyond it refused with Redis's text.
#[test]
fn maxclients_follows_the_open_files_limit() {
    let (densekv, redis) = Server::pair(&["--maxclients", "10000000"]);
    for args in [
        &["CONFIG", "GET", "maxclients"][..],
        &["CONFIG", "SET", "maxclients", "20000000"],
        &["CONFIG", "GET", "maxclients"],
        &["CONFIG", "SET", "maxclients", "100"],
        &["CONFIG", "GET", "maxclients"],
    ] {
        let (d, r) = (densekv.connect().cmd(args), redis.connect().cmd(args));
        assert_eq!(show(&d), show(&r), "{args:?}");
    }
}
