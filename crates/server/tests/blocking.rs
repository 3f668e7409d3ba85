//! Blocking commands with several clients, against redis-server: every scenario runs on both
//! servers and the replies each client receives must be identical — FIFO service among blocked
//! clients, the first non-empty key of many, timeouts, MULTI (never blocks), pipelined commands
//! held back behind a blocked one, a blocked client that disconnects, BLMOVE/BRPOPLPUSH chains,
//! BZPOPMIN/BZMPOP/BLMPOP reply shapes, WRONGTYPE and bad timeouts. densekv also runs with two
//! I/O threads, so a push on one thread serves a client on the other.

#[macro_use]
mod support;

use std::time::{Duration, Instant};
use support::{Client, Server, decode, show};

/// Waits until the server reports `n` blocked clients (the blocking command has been processed).
fn wait_blocked(admin: &mut Client, n: usize) {
    let started = Instant::now();
    loop {
        let info = decode(&admin.cmd(&["INFO", "clients"]));
        let text = String::from_utf8_lossy(info.bulk()).to_string();
        let blocked = text
            .lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if blocked == n {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never saw {n} blocked clients (last: {blocked})"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One scenario's transcript: what each step's client received.
type Transcript = Vec<String>;

fn send(c: &mut Client, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.send(&support::encode(&args));
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn scenarios(port: u16) -> Vec<(&'static str, Transcript)> {
    let mut out = Vec::new();
    let mut admin = Client::connect(port);
    let mut run = |name: &'static str, f: &dyn Fn(&mut Client) -> Transcript| {
        admin.cmd(&["FLUSHALL"]);
        out.push((name, f(&mut admin)));
    };

    run("fifo", &|admin| {
        let mut clients: Vec<Client> = (0..3).map(|_| Client::connect(port)).collect();
        for (i, c) in clients.iter_mut().enumerate() {
            send(c, &["BLPOP", "q", "0"]);
            wait_blocked(admin, i + 1);
        }
        let mut t = vec![show(&admin.cmd(&["RPUSH", "q", "a", "b", "c", "d"]))];
        for c in &mut clients {
            t.push(show(&c.read_reply()));
        }
        t.push(show(&admin.cmd(&["LRANGE", "q", "0", "-1"])));
        wait_blocked(admin, 0);
        t
    });

    run("first non-empty key of many", &|admin| {
        let mut c = Client::connect(port);
        send(&mut c, &["BRPOP", "k1", "k2", "k3", "0"]);
        wait_blocked(admin, 1);
        let mut t = vec![show(&admin.cmd(&["LPUSH", "k2", "x", "y"]))];
        t.push(show(&c.read_reply()));
        admin.cmd(&["RPUSH", "k3", "z"]);
        t.push(show(&c.cmd(&["BRPOP", "k1", "k2", "k3", "0"])));
        t
    });

    run("timeout and bad timeouts", &|_admin| {
        let mut c = Client::connect(port);
        vec![
            show(&c.cmd(&["BLPOP", "none", "0.05"])),
            show(&c.cmd(&["BLPOP", "none", "abc"])),
            show(&c.cmd(&["BLPOP", "none", "-1"])),
            show(&c.cmd(&["BZPOPMIN", "none", "0.01"])),
            show(&c.cmd(&["BLMOVE", "none", "dst", "LEFT", "RIGHT", "0.01"])),
            show(&c.cmd(&["BLMOVE", "none", "dst", "UP", "RIGHT", "0.01"])),
            show(&c.cmd(&["BLMPOP", "0.01", "0", "a", "LEFT"])),
            show(&c.cmd(&["BLMPOP", "0.01", "1", "a", "MIDDLE"])),
            show(&c.cmd(&["BLMPOP", "0.01", "1", "a", "LEFT", "COUNT", "0"])),
            show(&c.cmd(&["BZMPOP", "x", "1", "a", "MIN"])),
        ]
    });

    run("multi never blocks", &|_admin| {
        let mut c = Client::connect(port);
        c.cmd(&["MULTI"]);
        c.cmd(&["BLPOP", "empty", "0"]);
        c.cmd(&["BZPOPMAX", "empty", "0"]);
        c.cmd(&["RPUSH", "l", "v"]);
        c.cmd(&["BLPOP", "l", "0"]);
        vec![show(&c.cmd(&["EXEC"]))]
    });

    run("pipelined commands wait behind a blocked one", &|admin| {
        let mut c = Client::connect(port);
        let mut bytes = support::encode(&[b"BLPOP", b"p", b"0"]);
        bytes.extend(support::encode(&[b"PING"]));
        bytes.extend(support::encode(&[b"LLEN", b"p"]));
        c.send(&bytes);
        wait_blocked(admin, 1);
        let pushed = show(&admin.cmd(&["RPUSH", "p", "1", "2"]));
        vec![
            pushed,
            show(&c.read_reply()),
            show(&c.read_reply()),
            show(&c.read_reply()),
        ]
    });

    run("a disconnected client is forgotten", &|admin| {
        let mut gone = Client::connect(port);
        send(&mut gone, &["BLPOP", "d", "0"]);
        wait_blocked(admin, 1);
        drop(gone);
        wait_blocked(admin, 0);
        vec![
            show(&admin.cmd(&["RPUSH", "d", "kept"])),
            show(&admin.cmd(&["LRANGE", "d", "0", "-1"])),
        ]
    });

    run("blmove chain and wrong types", &|admin| {
        let mut a = Client::connect(port);
        let mut b = Client::connect(port);
        send(&mut a, &["BLMOVE", "src", "mid", "RIGHT", "LEFT", "0"]);
        wait_blocked(admin, 1);
        send(&mut b, &["BRPOPLPUSH", "mid", "dst", "0"]);
        wait_blocked(admin, 2);
        let mut t = vec![show(&admin.cmd(&["RPUSH", "src", "one", "two"]))];
        t.push(show(&a.read_reply()));
        t.push(show(&b.read_reply()));
        t.push(show(&admin.cmd(&["LRANGE", "src", "0", "-1"])));
        t.push(show(&admin.cmd(&["LRANGE", "dst", "0", "-1"])));
        t.push(show(&admin.cmd(&["EXISTS", "mid"])));
        admin.cmd(&["SET", "str", "x"]);
        t.push(show(&a.cmd(&["BLPOP", "str", "0"])));
        t.push(show(&a.cmd(&["BLPOP", "nolist", "str", "0"])));
        t.push(show(&a.cmd(&["BZPOPMIN", "str", "0"])));
        t.push(show(&a.cmd(&["BLMOVE", "src", "str", "LEFT", "LEFT", "0"])));
        t
    });

    run("sorted sets and counted pops", &|admin| {
        let mut a = Client::connect(port);
        let mut b = Client::connect(port);
        send(&mut a, &["BZPOPMIN", "z1", "z2", "0"]);
        wait_blocked(admin, 1);
        send(
            &mut b,
            &["BZMPOP", "0", "2", "z2", "z1", "MAX", "COUNT", "2"],
        );
        wait_blocked(admin, 2);
        let mut t =
            vec![show(&admin.cmd(&[
                "ZADD", "z2", "1.5", "a", "2", "b", "3", "c", "-inf", "d",
            ]))];
        t.push(show(&a.read_reply()));
        t.push(show(&b.read_reply()));
        t.push(show(&admin.cmd(&["ZRANGE", "z2", "0", "-1", "WITHSCORES"])));
        admin.cmd(&["RPUSH", "l1", "a", "b", "c"]);
        t.push(show(
            &a.cmd(&["BLMPOP", "0", "2", "l0", "l1", "RIGHT", "COUNT", "5"]),
        ));
        t.push(show(&a.cmd(&["BZMPOP", "0", "1", "z2", "MIN"])));
        t
    });
    out
}

#[test]
fn blocking_commands_match_redis() {
    let redis = Server::redis(&[]);
    let expected = scenarios(redis.port);
    for threads in ["1", "2"] {
        let densekv = Server::densekv(&["--io-threads", threads]);
        let got = scenarios(densekv.port);
        for ((name, ours), (_, theirs)) in got.iter().zip(&expected) {
            assert_eq!(
                ours, theirs,
                "scenario {name:?} with {threads} I/O thread(s)"
            );
        }
    }
}
