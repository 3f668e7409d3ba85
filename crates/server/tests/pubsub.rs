//! Pub/sub on densekv alone: what a differential test cannot show because it is about
//! densekv's threads and memory, not about reply bytes.
//!
//! * Delivery across I/O threads: a publish reaches subscribers owned by other threads through
//!   their mailboxes (`mail.rs`); every subscriber must get every message, and each publisher's
//!   messages in the order it sent them, whichever thread the publisher and the subscriber are
//!   on.
//! * Slow subscribers: a subscriber that never reads must be disconnected at the `pubsub`
//!   output limit (hard, and soft after its seconds), and the memory its backlog held must come
//!   back, rather than the server growing with what the publisher sends (RSS is watched while
//!   200 MB are published).
//! * Disconnects: a subscriber that goes away (closes, half-closes, is killed) leaves every
//!   registry (PUBSUB NUMSUB, NUMPAT, SHARDNUMSUB), also while messages to it are in flight.
//! * Leaving: a RESP2 client that read its last UNSUBSCRIBE confirmation gets no message after
//!   it, however the publishes on the other thread interleave.

mod support;

use std::thread;
use std::time::{Duration, Instant};
use support::{Client, Server, Value, decode, encode, encode_into};

/// The integer of an `INFO` field.
fn info_field(client: &mut Client, section: &str, field: &str) -> u64 {
    let info = client.cmd(&["INFO", section]);
    let text = String::from_utf8_lossy(decode(&info).bulk()).into_owned();
    let prefix = format!("{field}:");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
}

fn int(reply: &[u8]) -> i64 {
    match decode(reply) {
        Value::Int(n) => n,
        other => panic!("expected an integer, got {other:?}"),
    }
}

/// Waits up to five seconds for `f` to return `want`; returns the last value.
fn eventually<T: PartialEq + Copy>(want: T, mut f: impl FnMut() -> T) -> T {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = f();
        if got == want || Instant::now() >= deadline {
            return got;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// `PUBSUB NUMSUB channel` (or SHARDNUMSUB): the count.
fn numsub(client: &mut Client, sub: &str, channel: &str) -> i64 {
    let reply = decode(&client.cmd(&["PUBSUB", sub, channel]));
    match reply.array() {
        [_, Value::Int(n)] => *n,
        other => panic!("PUBSUB {sub}: {other:?}"),
    }
}

/// The (publisher, sequence) of a `message`/`pmessage` frame with payload `p<publisher>:<seq>`.
fn origin(frame: &[u8]) -> (usize, usize) {
    let value = decode(frame);
    let parts = value.array();
    let payload = String::from_utf8(parts.last().expect("payload").bulk().to_vec()).unwrap();
    let (publisher, seq) = payload
        .strip_prefix('p')
        .and_then(|p| p.split_once(':'))
        .unwrap_or_else(|| panic!("payload {payload:?}"));
    (publisher.parse().unwrap(), seq.parse().unwrap())
}

/// 200 subscribers (channel and pattern ones, RESP2 and RESP3) on a server with two I/O
/// threads; two publishers on their own connections send 500 messages each, pipelined 50 at a
/// time. Every subscriber gets all 1,000, each publisher's in its order.
#[test]
fn every_subscriber_gets_every_message_in_order_across_threads() {
    const SUBSCRIBERS: usize = 200;
    const PUBLISHERS: usize = 2;
    const PER_PUBLISHER: usize = 500;
    const PIPELINE: usize = 50;
    let server = Server::densekv(&["--io-threads", "2"]);
    let mut subscribers: Vec<Client> = (0..SUBSCRIBERS)
        .map(|i| {
            let mut c = server.connect();
            if i % 5 == 0 {
                c.cmd(&["HELLO", "3"]);
            }
            let confirmation = if i % 4 == 0 {
                c.cmd(&["PSUBSCRIBE", "fa?out"])
            } else {
                c.cmd(&["SUBSCRIBE", "fanout"])
            };
            assert!(confirmation.ends_with(b":1\r\n"), "subscriber {i}");
            c
        })
        .collect();
    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|p| {
            let mut c = server.connect();
            thread::spawn(move || {
                for chunk in 0..PER_PUBLISHER / PIPELINE {
                    let mut bytes = Vec::new();
                    for i in 0..PIPELINE {
                        let payload = format!("p{p}:{}", chunk * PIPELINE + i);
                        encode_into(&mut bytes, &[b"PUBLISH", b"fanout", payload.as_bytes()]);
                    }
                    c.send(&bytes);
                    for _ in 0..PIPELINE {
                        assert_eq!(int(&c.read_reply()), SUBSCRIBERS as i64, "receivers");
                    }
                }
            })
        })
        .collect();
    for p in publishers {
        p.join().expect("publisher");
    }
    for (i, s) in subscribers.iter_mut().enumerate() {
        let mut next = [0usize; PUBLISHERS];
        for _ in 0..PUBLISHERS * PER_PUBLISHER {
            let (p, seq) = origin(&s.read_reply());
            assert_eq!(
                seq, next[p],
                "subscriber {i}: publisher {p}'s messages out of order"
            );
            next[p] += 1;
        }
    }
    // Nothing more than the 1,000 messages came.
    for (i, s) in subscribers.iter_mut().enumerate() {
        let reply = s.cmd(&["PING"]);
        assert!(
            reply == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n" || reply == b"+PONG\r\n",
            "subscriber {i}: {}",
            support::show(&reply)
        );
    }
}

/// Publishes `payload` to `channel` until `total_bytes` went out or `stop` says so after a
/// reply; returns the replies.
fn publish_until(
    publisher: &mut Client,
    channel: &str,
    payload: &[u8],
    total_bytes: usize,
    mut after_each: impl FnMut(usize, i64) -> bool,
) -> Vec<i64> {
    let command = encode(&[b"PUBLISH", channel.as_bytes(), payload]);
    let mut replies = Vec::new();
    let mut sent = 0;
    while sent < total_bytes {
        publisher.send(&command);
        let receivers = int(&publisher.read_reply());
        replies.push(receivers);
        sent += payload.len();
        if !after_each(replies.len(), receivers) {
            break;
        }
    }
    replies
}

/// A densekv whose `client-output-buffer-limit` is `limit`, and a connection to it.
fn with_pubsub_limit(limit: &str) -> (Server, Client) {
    let server = Server::densekv(&[]);
    let mut admin = server.connect();
    let set = admin.cmd(&["CONFIG", "SET", "client-output-buffer-limit", limit]);
    assert_eq!(set, b"+OK\r\n");
    (server, admin)
}

/// A subscriber that never reads, a publisher of 1 MB messages: the server drops the subscriber
/// when its backlog passes the hard `pubsub` limit (32 MB by default), and neither RSS nor
/// `used_memory` grows with the 200 MB published.
#[test]
fn slow_subscriber_is_dropped_at_the_hard_limit() {
    let (server, mut admin) = with_pubsub_limit("pubsub 32mb 8mb 60");
    let mut slow = server.connect();
    slow.cmd(&["SUBSCRIBE", "firehose"]);
    let start_rss_kib = server.rss_kib();
    let start_used = info_field(&mut admin, "memory", "used_memory");
    let mut publisher = server.connect();
    let payload = vec![b'x'; 1 << 20];
    let mut max_rss_kib = start_rss_kib;
    let replies = publish_until(&mut publisher, "firehose", &payload, 200 << 20, |n, _| {
        if n % 8 == 0 {
            max_rss_kib = max_rss_kib.max(server.rss_kib());
        }
        true
    });
    let delivered = replies.iter().take_while(|&&r| r == 1).count();
    assert!(
        replies[delivered..].iter().all(|&r| r == 0),
        "the subscriber came back: {replies:?}"
    );
    // 32 MB of backlog plus what the socket buffers hold.
    assert!(
        (24..=100).contains(&delivered),
        "the slow subscriber was dropped after {delivered} messages of 1 MB"
    );
    let growth_mib = max_rss_kib.saturating_sub(start_rss_kib) / 1024;
    eprintln!("dropped after {delivered} messages of 1 MB; RSS grew by {growth_mib} MiB at most");
    assert!(growth_mib < 150, "RSS grew by {growth_mib} MiB");
    // The connection is closed: what the socket held, then EOF (or a reset).
    let bytes = slow.read_until_closed(Duration::from_secs(10));
    assert!(
        bytes.len() < 100 << 20,
        "{} bytes reached the slow subscriber",
        bytes.len()
    );
    assert_eq!(numsub(&mut admin, "NUMSUB", "firehose"), 0);
    let used = eventually(true, || {
        info_field(&mut admin, "memory", "used_memory") < start_used + (16 << 20)
    });
    assert!(
        used,
        "used_memory stayed at {} (was {start_used} before)",
        info_field(&mut admin, "memory", "used_memory")
    );
}

/// CLIENT LIST's `omem` for the connection from local port `port` (`None`: not listed).
fn omem(admin: &mut Client, port: u16) -> Option<u64> {
    let list = admin.cmd(&["CLIENT", "LIST"]);
    let text = String::from_utf8_lossy(decode(&list).bulk()).into_owned();
    let addr = format!("addr=127.0.0.1:{port} ");
    let line = text.lines().find(|l| l.contains(&addr))?;
    line.split(' ')
        .find_map(|kv| kv.strip_prefix("omem="))
        .and_then(|v| v.parse().ok())
}

/// `pubsub 0 1mb 1`: no hard limit, a soft one of 1 MB for one second. A subscriber that never
/// reads is dropped once its backlog stayed above 1 MB for more than a second; one that reads
/// along is not.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn slow_subscriber_is_dropped_after_the_soft_limit_seconds() {
    let (server, mut admin) = with_pubsub_limit("pubsub 0 1mb 1");
    let mut slow = server.connect();
    slow.cmd(&["SUBSCRIBE", "steady"]);
    let mut reader = server.connect();
    reader.cmd(&["SUBSCRIBE", "steady"]);
    let reading = thread::spawn(move || {
        let mut frames = 0usize;
        loop {
            let frame = reader.read_reply();
            frames += 1;
            if frame.ends_with(b"$4\r\nlast\r\n") {
                return frames;
            }
        }
    });
    let mut publisher = server.connect();
    let payload = vec![b'y'; 64 << 10];
    let slow_port = slow.stream.local_addr().expect("local addr").port();
    let start = Instant::now();
    let mut over_since = None;
    let mut dropped_after = None;
    // 64 KiB every 10 ms: ~6 MB/s, far above what the sockets buffer within the test's time.
    // CLIENT LIST's `omem` tells when the backlog passed the soft limit.
    let replies = publish_until(
        &mut publisher,
        "steady",
        &payload,
        1 << 30,
        |n, receivers| {
            if receivers < 2 {
                dropped_after = Some(start.elapsed());
                return false;
            }
            if over_since.is_none()
                && n % 4 == 0
                && omem(&mut admin, slow_port).is_some_and(|m| m >= 1 << 20)
            {
                over_since = Some(start.elapsed());
            }
            if start.elapsed() > Duration::from_secs(15) {
                return false;
            }
            thread::sleep(Duration::from_millis(10));
            true
        },
    );
    let dropped_after = dropped_after.unwrap_or_else(|| {
        panic!(
            "the slow subscriber was not dropped ({} messages)",
            replies.len()
        )
    });
    let over_since = over_since.expect("CLIENT LIST never showed omem over 1 MB");
    eprintln!(
        "over the soft limit at {over_since:?}, dropped at {dropped_after:?} ({} messages of 64 KiB)",
        replies.len()
    );
    assert_eq!(
        replies.last(),
        Some(&1),
        "the reading subscriber was dropped too"
    );
    // It had to stay over the limit for more than one second (Redis: the seconds elapsed must
    // exceed the limit's, so two whole seconds).
    assert!(
        dropped_after.saturating_sub(over_since) > Duration::from_secs(1),
        "over the soft limit at {over_since:?}, dropped at {dropped_after:?}: too soon"
    );
    slow.read_until_closed(Duration::from_secs(10));
    assert_eq!(numsub(&mut admin, "NUMSUB", "steady"), 1);
    let count = int(&publisher.cmd(&["PUBLISH", "steady", "last"]));
    assert_eq!(count, 1);
    let frames = reading.join().expect("reader");
    assert_eq!(
        frames,
        replies.len() + 1,
        "the reading subscriber missed messages"
    );
}

/// Subscribers that close, half-close or are killed (by address, by type) leave PUBSUB's counts.
#[test]
fn subscribers_that_go_away_leave_the_registry() {
    let server = Server::densekv(&["--io-threads", "2"]);
    let mut admin = server.connect();
    let subscriber = |resp3: bool, args: &[&str]| {
        let mut c = server.connect();
        if resp3 {
            c.cmd(&["HELLO", "3"]);
        }
        c.cmd(args);
        c
    };
    let closing = subscriber(false, &["SUBSCRIBE", "x", "y"]);
    let half_closing = subscriber(true, &["SUBSCRIBE", "x"]);
    let mut killed = subscriber(false, &["SUBSCRIBE", "x"]);
    let pattern = subscriber(true, &["PSUBSCRIBE", "x*"]);
    let shard = subscriber(false, &["SSUBSCRIBE", "x"]);
    let mut staying = subscriber(false, &["SUBSCRIBE", "x"]);
    assert_eq!(numsub(&mut admin, "NUMSUB", "x"), 4);
    assert_eq!(int(&admin.cmd(&["PUBSUB", "NUMPAT"])), 1);
    assert_eq!(numsub(&mut admin, "SHARDNUMSUB", "x"), 1);
    assert_eq!(int(&admin.cmd(&["PUBLISH", "x", "m"])), 5);

    drop(closing);
    assert_eq!(eventually(3, || numsub(&mut admin, "NUMSUB", "x")), 3);
    assert_eq!(eventually(0, || numsub(&mut admin, "NUMSUB", "y")), 0);
    half_closing.shutdown_write();
    assert_eq!(eventually(2, || numsub(&mut admin, "NUMSUB", "x")), 2);
    let port = killed.stream.local_addr().unwrap().port();
    let kill = admin.cmd(&["CLIENT", "KILL", "ADDR", &format!("127.0.0.1:{port}")]);
    assert_eq!(kill, b":1\r\n");
    killed.read_until_closed(Duration::from_secs(5));
    assert_eq!(eventually(1, || numsub(&mut admin, "NUMSUB", "x")), 1);
    drop(pattern);
    assert_eq!(eventually(0, || int(&admin.cmd(&["PUBSUB", "NUMPAT"]))), 0);
    drop(shard);
    assert_eq!(eventually(0, || numsub(&mut admin, "SHARDNUMSUB", "x")), 0);
    assert_eq!(int(&admin.cmd(&["PUBLISH", "x", "m"])), 1);
    let channels = decode(&admin.cmd(&["PUBSUB", "CHANNELS"]));
    assert_eq!(channels.array(), [Value::Bulk(b"x".to_vec())]);
    // The last one by its type: a client with subscriptions is of type pubsub.
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]), b":1\r\n");
    staying.read_until_closed(Duration::from_secs(5));
    assert_eq!(eventually(0, || numsub(&mut admin, "NUMSUB", "x")), 0);
    let channels = decode(&admin.cmd(&["PUBSUB", "CHANNELS"]));
    assert!(channels.array().is_empty());
}

/// Subscribers come and go on both threads while two publishers keep sending to them: messages
/// to a connection that closed in between are dropped, the server stays up, and once everyone
/// has left nothing is registered.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn subscribers_churn_while_messages_are_in_flight() {
    let server = Server::densekv(&["--io-threads", "2"]);
    let port = server.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let publishers: Vec<_> = (0..2)
        .map(|_| {
            let stop = std::sync::Arc::clone(&stop);
            thread::spawn(move || {
                let mut c = Client::connect(port);
                let mut sent = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let mut bytes = Vec::new();
                    for i in 0..20 {
                        let channel = format!("c{}", i % 4);
                        encode_into(&mut bytes, &[b"PUBLISH", channel.as_bytes(), b"payload"]);
                    }
                    c.send(&bytes);
                    for _ in 0..20 {
                        int(&c.read_reply());
                    }
                    sent += 20;
                }
                sent
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut rounds = 0;
    while Instant::now() < deadline {
        let mut batch: Vec<Client> = (0..8)
            .map(|i| {
                let mut c = Client::connect(port);
                if i % 2 == 0 {
                    c.cmd(&["HELLO", "3"]);
                }
                let channel = format!("c{}", i % 4);
                if i % 3 == 0 {
                    c.cmd(&["PSUBSCRIBE", "c*"]);
                } else {
                    c.cmd(&["SUBSCRIBE", &channel]);
                }
                c
            })
            .collect();
        // Half read a little before leaving, half leave with messages unread.
        for (i, c) in batch.iter_mut().enumerate() {
            if i % 2 == 0 {
                let frame = c.read_reply();
                assert!(frame.starts_with(b">") || frame.starts_with(b"*"));
            }
        }
        drop(batch);
        rounds += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for p in publishers {
        let sent = p.join().expect("publisher");
        assert!(sent > 0);
    }
    assert!(rounds > 10, "only {rounds} rounds");
    let mut admin = server.connect();
    for channel in ["c0", "c1", "c2", "c3"] {
        assert_eq!(eventually(0, || numsub(&mut admin, "NUMSUB", channel)), 0);
    }
    assert_eq!(eventually(0, || int(&admin.cmd(&["PUBSUB", "NUMPAT"]))), 0);
    assert_eq!(admin.cmd(&["PING"]), b"+PONG\r\n");
}

/// Subscribers that leave while two publishers keep sending: once a RESP2 client has read the
/// confirmation of its last UNSUBSCRIBE it is out of subscribed mode, and the next reply it
/// reads must be its own command's, not a `message` (Redis never sends one after the
/// confirmation). densekv delivers a message posted before the UNSUBSCRIBE after the replies
/// of that turn (see `message_published_before_unsubscribe_comes_before_its_confirmation` in
/// differential_pubsub.rs for the deterministic case, on one thread); this is the same across
/// threads, under load.
#[test]
fn no_message_after_the_last_unsubscribe() {
    let server = Server::densekv(&["--io-threads", "2"]);
    let port = server.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let publishers: Vec<_> = (0..2)
        .map(|_| {
            let stop = std::sync::Arc::clone(&stop);
            thread::spawn(move || {
                let mut c = Client::connect(port);
                let mut bytes = Vec::new();
                for _ in 0..50 {
                    encode_into(&mut bytes, &[b"PUBLISH", b"ch", b"m"]);
                }
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    c.send(&bytes);
                    for _ in 0..50 {
                        int(&c.read_reply());
                    }
                }
            })
        })
        .collect();
    let subscribers: Vec<_> = (0..6)
        .map(|_| {
            thread::spawn(move || {
                let mut c = Client::connect(port);
                let mut stray = Vec::new();
                let deadline = Instant::now() + Duration::from_millis(1500);
                while Instant::now() < deadline {
                    c.send(&encode(&[b"SUBSCRIBE", b"ch"]));
                    while !c.read_reply().starts_with(b"*3\r\n$9\r\nsubscribe\r\n") {}
                    let mut bytes = encode(&[b"UNSUBSCRIBE", b"ch"]);
                    encode_into(&mut bytes, &[b"PING", b"after"]);
                    c.send(&bytes);
                    while !c.read_reply().starts_with(b"*3\r\n$11\r\nunsubscribe\r\n") {}
                    // Out of subscribed mode: the next frame is PING's reply.
                    let reply = c.read_reply();
                    if reply != b"$5\r\nafter\r\n" {
                        stray.push(reply);
                        while c.read_reply() != b"$5\r\nafter\r\n" {}
                    }
                    let reply = c.cmd(&["PING", "again"]);
                    if reply != b"$5\r\nagain\r\n" {
                        stray.push(reply);
                        while c.read_reply() != b"$5\r\nagain\r\n" {}
                    }
                }
                stray
            })
        })
        .collect();
    let stray: Vec<Vec<u8>> = subscribers
        .into_iter()
        .flat_map(|s| s.join().expect("subscriber"))
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for p in publishers {
        p.join().expect("publisher");
    }
    assert!(
        stray.is_empty(),
        "{} times a frame came to an unsubscribed client ahead of its own reply; the first: {}",
        stray.len(),
        support::show(&stray[0])
    );
}
