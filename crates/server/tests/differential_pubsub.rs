//! Differential test of pub/sub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBEs,
//! PUBLISH, SPUBLISH and PUBSUB's introspection, against redis-server 7.0, in RESP2 and RESP3.
//!
//! Pub/sub is the one family where a command's reply is not one frame: a (un)subscribe answers
//! one confirmation per name (or per subscription, without names), a RESP3 publisher that
//! listens to its own channel gets its pushes before the PUBLISH reply, and subscribers on other
//! connections receive frames nobody asked for. So these tests read frames, not replies: a
//! command's frame count comes from its arguments or from a model of the client's
//! subscriptions, a PUBLISH's delivered frames are counted by its reply, and every connection is
//! drained before the next command, which keeps both servers' streams comparable byte for byte.
//!
//! What Redis leaves in hash order is compared as a set: the confirmations of an UNSUBSCRIBE or
//! SUNSUBSCRIBE without arguments (kinds and counts in order, names sorted), PUBSUB CHANNELS and
//! SHARDCHANNELS, and the pmessages one client gets for one publish when several of its patterns
//! match (Redis walks its pattern dict, densekv its patterns in subscription order). PUNSUBSCRIBE
//! without arguments is exact: Redis 7.0 keeps a client's patterns in a list.
//!
//! Three tests pin what the first runs found: the pattern `*` does not match the empty channel
//! name; a message published before a client's UNSUBSCRIBE reaches it before the confirmation
//! (and before its next reply); CLIENT REPLY OFF / SKIP still sends pub/sub confirmations and a
//! client's own pushes.

#[macro_use]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::time::{Duration, Instant};
use support::diff::{Cmd, Gen, Twin, command_count, seed};
use support::{Client, Server, Value, decode, encode_into, show};

/// Steps of the random stream (each one command, then the drain of its deliveries).
const STEPS: usize = 4_000;

/// How long a frame that must come may take.
const DELIVERY_WAIT: Duration = Duration::from_secs(10);

fn show_cmd(c: &Cmd) -> String {
    c.args
        .iter()
        .map(|a| format!("\"{}\"", show(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn send(t: &mut Twin, c: &Cmd) {
    let mut bytes = Vec::new();
    let args: Vec<&[u8]> = c.args.iter().map(Vec::as_slice).collect();
    encode_into(&mut bytes, &args);
    t.densekv.send(&bytes);
    t.redis.send(&bytes);
}

fn read_n(c: &mut Client, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|_| c.read_reply()).collect()
}

fn assert_frames(what: &str, ours: &[Vec<u8>], theirs: &[Vec<u8>]) {
    assert!(
        ours == theirs,
        "densekv and redis-server disagree on {what}\n  densekv: {}\n  redis:   {}",
        show(&ours.concat()),
        show(&theirs.concat())
    );
}

/// Sends `c` to both servers, reads `n` frames from each and compares them byte for byte;
/// returns densekv's.
fn expect(t: &mut Twin, c: &Cmd, n: usize) -> Vec<Vec<u8>> {
    send(t, c);
    let ours = read_n(&mut t.densekv, n);
    let theirs = read_n(&mut t.redis, n);
    assert_frames(&show_cmd(c), &ours, &theirs);
    ours
}

/// A one-frame command.
fn one(t: &mut Twin, c: &Cmd) -> Vec<u8> {
    expect(t, c, 1).remove(0)
}

/// (kind, count) of each confirmation in order, and the names sorted: how an unsubscribe from
/// a set Redis walks in hash order is compared.
type Confirmations = (Vec<(Vec<u8>, i64)>, Vec<Option<Vec<u8>>>);

fn confirmations(frames: &[Vec<u8>]) -> Confirmations {
    let mut order = Vec::new();
    let mut names = Vec::new();
    for frame in frames {
        match decode(frame) {
            Value::Array(parts) if parts.len() == 3 => {
                let count = match parts[2] {
                    Value::Int(n) => n,
                    ref other => panic!("count {other:?} in {}", show(frame)),
                };
                order.push((parts[0].bulk().to_vec(), count));
                names.push(match &parts[1] {
                    Value::Null => None,
                    name => Some(name.bulk().to_vec()),
                });
            }
            _ => order.push((frame.clone(), -1)),
        }
    }
    names.sort();
    (order, names)
}

/// `expect` for an unsubscribe whose confirmations come in hash order.
fn expect_unordered(t: &mut Twin, c: &Cmd, n: usize) {
    send(t, c);
    let ours = read_n(&mut t.densekv, n);
    let theirs = read_n(&mut t.redis, n);
    assert!(
        confirmations(&ours) == confirmations(&theirs),
        "densekv and redis-server disagree on {} (compared unordered)\n  densekv: {}\n  redis:   {}",
        show_cmd(c),
        show(&ours.concat()),
        show(&theirs.concat())
    );
}

fn is_push(frame: &[u8]) -> bool {
    matches!(frame.first(), Some(b'>' | b'*'))
}

/// Frames up to and including the first one that is not a push or an array: a publisher's own
/// pushes, then its reply.
fn until_reply(c: &mut Client) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut pushes = Vec::new();
    loop {
        let frame = c.read_reply();
        if !is_push(&frame) {
            return (pushes, frame);
        }
        pushes.push(frame);
    }
}

fn sorted(mut frames: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    frames.sort();
    frames
}

/// Sends a PUBLISH (or any one-reply command) and compares the pushes the sender gets before
/// its reply (as a set) and the reply; returns the number of receivers and of own pushes.
fn publish(t: &mut Twin, c: &Cmd) -> (usize, usize) {
    send(t, c);
    let (ours, our_reply) = until_reply(&mut t.densekv);
    let (theirs, their_reply) = until_reply(&mut t.redis);
    let what = format!("{} (own pushes, unordered)", show_cmd(c));
    assert_frames(&what, &sorted(ours.clone()), &sorted(theirs));
    assert_frames(
        &show_cmd(c),
        std::slice::from_ref(&our_reply),
        &[their_reply],
    );
    let receivers = match decode(&our_reply) {
        Value::Int(n) => n as usize,
        _ => 0,
    };
    (receivers, ours.len())
}

/// Switches both connections to `protocol` with HELLO (the replies carry each server's own
/// client id, so only the protocol is checked).
fn hello(t: &mut Twin, protocol: u8) {
    let p = protocol.to_string();
    for c in [&mut t.densekv, &mut t.redis] {
        let reply = decode(&c.cmd(&["HELLO", &p]));
        let fields = reply.array();
        let proto = fields
            .chunks(2)
            .find(|kv| kv[0].bulk() == b"proto")
            .map(|kv| kv[1].clone());
        assert_eq!(proto, Some(Value::Int(i64::from(protocol))), "HELLO {p}");
    }
}

fn twin(densekv: &Server, redis: &Server, protocol: u8) -> Twin {
    let mut t = Twin::new(densekv.connect(), redis.connect(), 0);
    if protocol == 3 {
        hello(&mut t, 3);
    }
    t
}

/// Asserts that neither connection has a frame waiting.
fn assert_quiet(t: &mut Twin, who: &str) {
    for (server, c) in [("densekv", &mut t.densekv), ("redis", &mut t.redis)] {
        c.stream
            .set_read_timeout(Some(Duration::from_millis(30)))
            .expect("timeout");
        let got = c.try_read_reply();
        c.stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        match got {
            Ok(frame) => panic!("{server} sent {who} an unexpected {}", show(&frame)),
            Err(e) => assert!(
                matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ),
                "{server}: {who}'s connection failed: {e}"
            ),
        }
    }
}

/// Reads from `clients` without blocking until `expected` frames arrived in all, or more;
/// returns each client's frames.
fn drain(clients: &mut [&mut Client], expected: usize, what: &str) -> Vec<Vec<Vec<u8>>> {
    let mut got: Vec<Vec<Vec<u8>>> = vec![Vec::new(); clients.len()];
    let mut total = 0;
    let deadline = Instant::now() + DELIVERY_WAIT;
    for c in clients.iter_mut() {
        c.stream.set_nonblocking(true).expect("nonblocking");
    }
    while total < expected {
        for (i, c) in clients.iter_mut().enumerate() {
            loop {
                match c.try_read_reply() {
                    Ok(frame) => {
                        got[i].push(frame);
                        total += 1;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{what}: a subscriber's connection failed: {e}"),
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {total} of {expected} frames arrived"
        );
        std::thread::yield_now();
    }
    for c in clients.iter_mut() {
        c.stream.set_nonblocking(false).expect("blocking");
    }
    got
}

/// Compares what each twin of `subscribers` received once `receivers` frames arrived on each
/// server (each client's frames as a set: its pmessages come in pattern-dict order on Redis).
fn deliveries(subscribers: &mut [&mut Twin], receivers: usize, what: &str) {
    let ours = {
        let mut clients: Vec<&mut Client> =
            subscribers.iter_mut().map(|t| &mut t.densekv).collect();
        drain(&mut clients, receivers, &format!("densekv, {what}"))
    };
    let theirs = {
        let mut clients: Vec<&mut Client> = subscribers.iter_mut().map(|t| &mut t.redis).collect();
        drain(&mut clients, receivers, &format!("redis, {what}"))
    };
    for (i, (o, r)) in ours.into_iter().zip(theirs).enumerate() {
        assert_frames(
            &format!("what subscriber {i} received after {what}"),
            &sorted(o),
            &sorted(r),
        );
    }
}

/// (Un)subscribe confirmations in both protocols: counts, repeated names, names that were not
/// subscribed, and the no-argument forms with nothing, one and several subscriptions.
#[test]
fn subscribe_confirmations_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    for protocol in [2, 3] {
        let mut a = twin(&densekv, &redis, protocol);
        for (c, n) in [
            (cmd!["UNSUBSCRIBE"], 1),
            (cmd!["PUNSUBSCRIBE"], 1),
            (cmd!["SUNSUBSCRIBE"], 1),
            (cmd!["UNSUBSCRIBE", "never"], 1),
            (cmd!["SUBSCRIBE", "a", "a", "b"], 3),
            (cmd!["SUBSCRIBE", "a"], 1),
            (cmd!["PSUBSCRIBE", "p*", "p*", "q?"], 3),
            (cmd!["SSUBSCRIBE", "s1", "s1", "s2"], 3),
            (cmd!["UNSUBSCRIBE", "a", "zz", "a"], 3),
            (cmd!["PUNSUBSCRIBE", "nope", "q?"], 2),
            (cmd!["SUNSUBSCRIBE", "s2", "s2"], 2),
            // One subscription of each kind left: the no-argument forms name it.
            (cmd!["UNSUBSCRIBE"], 1),
            (cmd!["UNSUBSCRIBE"], 1),
            (cmd!["PUNSUBSCRIBE"], 1),
            (cmd!["PUNSUBSCRIBE"], 1),
            (cmd!["SUNSUBSCRIBE"], 1),
            (cmd!["SUNSUBSCRIBE"], 1),
            // Patterns without arguments: in subscription order (a list in Redis 7.0).
            (cmd!["PSUBSCRIBE", "z*", "a*", "m?", "b[xy]"], 4),
            (cmd!["PUNSUBSCRIBE"], 4),
            (cmd!["SUBSCRIBE", "\0", "", "\r\n", "x y"], 4),
            (cmd!["PUNSUBSCRIBE"], 1),
        ] {
            expect(&mut a, &c, n);
        }
        // Several channels or shard channels: Redis answers in its dict's order.
        expect_unordered(&mut a, &cmd!["UNSUBSCRIBE"], 4);
        expect(&mut a, &cmd!["SSUBSCRIBE", "s1", "s2", "s3", "s4", "s5"], 5);
        expect(&mut a, &cmd!["SUBSCRIBE", "c1", "c2", "c3"], 3);
        expect_unordered(&mut a, &cmd!["SUNSUBSCRIBE"], 5);
        expect_unordered(&mut a, &cmd!["UNSUBSCRIBE"], 3);
        expect(&mut a, &cmd!["UNSUBSCRIBE"], 1);
        one(&mut a, &cmd!["PING"]);
        assert_quiet(&mut a, "a");
    }
}

/// RESP2's subscribed mode: what is refused and how (the error names a subcommand by its full
/// name), PING's array reply, and the ways out (unsubscribing everything, RESET, QUIT). Shard
/// subscriptions count: a client with only shard channels is still in the mode.
#[test]
fn resp2_subscribed_mode_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut a = twin(&densekv, &redis, 2);
    one(&mut a, &cmd!["SET", "k", "v"]);
    expect(&mut a, &cmd!["SUBSCRIBE", "ch"], 1);
    for c in [
        cmd!["PING"],
        cmd!["PING", "hello"],
        cmd!["PING", "a", "b"],
        cmd!["GET", "k"],
        cmd!["SET", "k", "w"],
        cmd!["CLIENT", "ID"],
        cmd!["client", "list"],
        cmd!["CONFIG", "GET", "maxmemory"],
        cmd!["PUBSUB", "CHANNELS"],
        cmd!["PUBSUB", "NUMSUB", "ch"],
        cmd!["PUBLISH", "ch", "x"],
        cmd!["SPUBLISH", "ch", "x"],
        cmd!["HELLO", "3"],
        cmd!["HELLO", "2"],
        cmd!["MULTI"],
        cmd!["EXEC"],
        cmd!["SELECT", "1"],
        cmd!["NOSUCH", "x"],
        cmd!["CLIENT", "NOSUCH"],
        cmd!["GET"],
        cmd!["SUBSCRIBE"],
    ] {
        one(&mut a, &c);
    }
    // Channels gone, a shard channel left: still subscribed.
    expect(&mut a, &cmd!["SSUBSCRIBE", "s"], 1);
    expect(&mut a, &cmd!["UNSUBSCRIBE", "ch"], 1);
    one(&mut a, &cmd!["GET", "k"]);
    expect(&mut a, &cmd!["SUNSUBSCRIBE"], 1);
    one(&mut a, &cmd!["GET", "k"]);
    one(&mut a, &cmd!["PING"]);
    // A pattern alone, then RESET.
    expect(&mut a, &cmd!["PSUBSCRIBE", "p*"], 1);
    one(&mut a, &cmd!["GET", "k"]);
    one(&mut a, &cmd!["RESET"]);
    one(&mut a, &cmd!["GET", "k"]);
    one(&mut a, &cmd!["PUBSUB", "NUMPAT"]);
    // QUIT answers and closes.
    expect(&mut a, &cmd!["SUBSCRIBE", "ch"], 1);
    one(&mut a, &cmd!["QUIT"]);
    let ours = a.densekv.read_until_closed(Duration::from_secs(5));
    let theirs = a.redis.read_until_closed(Duration::from_secs(5));
    assert_frames("after QUIT", &[ours], &[theirs]);
    let mut b = twin(&densekv, &redis, 2);
    one(&mut b, &cmd!["PUBSUB", "NUMSUB", "ch"]);
}

/// RESP3: commands run beside subscriptions, PING is not an array, pushes a client sends itself
/// come before the PUBLISH reply, HELLO 2 enters the RESP2 mode and RESET leaves it.
#[test]
fn resp3_commands_alongside_subscriptions_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut a = twin(&densekv, &redis, 3);
    expect(&mut a, &cmd!["SUBSCRIBE", "ch"], 1);
    for c in [
        cmd!["SET", "k", "v"],
        cmd!["GET", "k"],
        cmd!["PING"],
        cmd!["PING", "x"],
        cmd!["PUBSUB", "NUMSUB", "ch", "other"],
        cmd!["PUBSUB", "NUMPAT"],
        cmd!["PUBSUB", "CHANNELS"],
        cmd!["PUBLISH", "other", "x"],
    ] {
        one(&mut a, &c);
    }
    // Its own message: the push, then :1.
    let frames = expect(&mut a, &cmd!["PUBLISH", "ch", "to myself"], 2);
    assert!(frames[0].starts_with(b">3\r\n$7\r\nmessage\r\n"));
    assert_eq!(frames[1], b":1\r\n");
    expect(&mut a, &cmd!["PSUBSCRIBE", "c*"], 1);
    expect(&mut a, &cmd!["PUBLISH", "ch", "twice"], 3);
    expect(&mut a, &cmd!["SSUBSCRIBE", "ch"], 1);
    expect(&mut a, &cmd!["SPUBLISH", "ch", "sharded"], 2);
    for c in [
        cmd!["MULTI"],
        cmd!["PUBLISH", "zz", "nobody"],
        cmd!["GET", "k"],
        cmd!["EXEC"],
    ] {
        one(&mut a, &c);
    }
    // Several matching patterns: pushes as a set.
    expect(&mut a, &cmd!["PSUBSCRIBE", "*", "?h"], 2);
    publish(&mut a, &cmd!["PUBLISH", "ch", "four"]);
    // Back to RESP2 while subscribed: the mode's rules apply.
    hello(&mut a, 2);
    one(&mut a, &cmd!["GET", "k"]);
    one(&mut a, &cmd!["PING"]);
    one(&mut a, &cmd!["HELLO", "3"]);
    one(&mut a, &cmd!["RESET"]);
    one(&mut a, &cmd!["GET", "k"]);
    one(&mut a, &cmd!["PUBSUB", "NUMPAT"]);
    one(&mut a, &cmd!["PUBSUB", "SHARDNUMSUB", "ch"]);
    // QUIT while subscribed in RESP3.
    hello(&mut a, 3);
    expect(&mut a, &cmd!["SUBSCRIBE", "ch"], 1);
    one(&mut a, &cmd!["QUIT"]);
    assert_quiet_closed(&mut a);
}

fn assert_quiet_closed(t: &mut Twin) {
    let ours = t.densekv.read_until_closed(Duration::from_secs(5));
    let theirs = t.redis.read_until_closed(Duration::from_secs(5));
    assert_frames("after QUIT", &[ours], &[theirs]);
}

/// PUBLISH and SPUBLISH: counts and what subscribers on other connections receive, for
/// channels, several kinds of patterns, shard channels, and binary names and payloads.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn publish_delivery_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    for protocol in [2, 3] {
        let mut publisher = twin(&densekv, &redis, 2);
        let mut subs: Vec<Twin> = (0..4).map(|_| twin(&densekv, &redis, protocol)).collect();
        expect(
            &mut subs[0],
            &cmd!["SUBSCRIBE", "hello", "news.1", "a\0b", "\r\n"],
            4,
        );
        expect(&mut subs[1], &cmd!["PSUBSCRIBE", "*", "news.*"], 2);
        expect(
            &mut subs[2],
            &cmd!["PSUBSCRIBE", "h?llo", "h[ae]llo", "h[^e]llo"],
            3,
        );
        expect(&mut subs[2], &cmd!["SUBSCRIBE", "hello"], 1);
        expect(&mut subs[3], &cmd!["SSUBSCRIBE", "hello", "s\0"], 2);
        expect(
            &mut subs[3],
            &cmd!["PSUBSCRIBE", "h\\*", "x[a-c]y", "[a-"],
            3,
        );
        let cases = [
            cmd!["PUBLISH", "hello", "1"],
            cmd!["PUBLISH", "hallo", "2"],
            cmd!["PUBLISH", "hxllo", "3"],
            cmd!["PUBLISH", "news.1", ""],
            cmd!["PUBLISH", "news.", "n"],
            cmd!["PUBLISH", "news", "n"],
            cmd!["PUBLISH", "h*", "star"],
            cmd!["PUBLISH", "hZllo", "z"],
            cmd!["PUBLISH", "xby", "range"],
            cmd!["PUBLISH", "xdy", "range"],
            cmd!["PUBLISH", "[a-", "literal"],
            cmd!["PUBLISH", "a", "open range"],
            cmd!["PUBLISH", "a\0b", "p\0\r\nq"],
            cmd!["PUBLISH", "\r\n", "\r\n"],
            cmd!["PUBLISH", "nobody-here", "x"],
            cmd!["PUBLISH", "hello", vec![b'x'; 70_000]],
            cmd!["SPUBLISH", "hello", "sharded"],
            cmd!["SPUBLISH", "s\0", ""],
            cmd!["SPUBLISH", "news.1", "no pattern sees it"],
        ];
        for c in &cases {
            let (receivers, _) = publish(&mut publisher, c);
            let mut listening: Vec<&mut Twin> = subs.iter_mut().collect();
            deliveries(&mut listening, receivers, &show_cmd(c));
        }
        // A channel message comes before its pmessage (one matching pattern: a defined order).
        let mut one_pattern = twin(&densekv, &redis, protocol);
        expect(&mut one_pattern, &cmd!["SUBSCRIBE", "ordered"], 1);
        expect(&mut one_pattern, &cmd!["PSUBSCRIBE", "ord*"], 1);
        publish(&mut publisher, &cmd!["PUBLISH", "ordered", "m"]);
        let ours = read_n(&mut one_pattern.densekv, 2);
        let theirs = read_n(&mut one_pattern.redis, 2);
        assert_frames("message then pmessage", &ours, &theirs);
        // The `*` subscriber got it too.
        let star = &mut subs[1];
        assert_frames(
            "the `*` subscriber's pmessage",
            &read_n(&mut star.densekv, 1),
            &read_n(&mut star.redis, 1),
        );
        for (i, s) in subs.iter_mut().enumerate() {
            assert_quiet(s, &format!("subscriber {i}"));
        }
    }
}

/// PUBSUB's subcommands, their errors, and HELP, with subscribers of every kind in place.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn pubsub_introspection_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut observer = twin(&densekv, &redis, 2);
    let introspection = |o: &mut Twin| {
        for c in [
            cmd!["PUBSUB", "NUMSUB"],
            cmd!["PUBSUB", "NUMSUB", "a", "b", "news.1", "", "a\0b", "a"],
            cmd!["PUBSUB", "NUMPAT"],
            cmd!["PUBSUB", "SHARDNUMSUB"],
            cmd!["PUBSUB", "SHARDNUMSUB", "s1", "s2", "a"],
            cmd!["PUBSUB", "CHANNELS", "x"],
            cmd!["PUBSUB", "SHARDCHANNELS", "x"],
        ] {
            one(o, &c);
        }
        for c in [
            cmd!["PUBSUB", "CHANNELS"],
            cmd!["PUBSUB", "CHANNELS", "news.*"],
            cmd!["PUBSUB", "CHANNELS", "?"],
            cmd!["PUBSUB", "CHANNELS", "a*"],
            cmd!["PUBSUB", "CHANNELS", "[ab]"],
            cmd!["PUBSUB", "SHARDCHANNELS"],
            cmd!["PUBSUB", "SHARDCHANNELS", "s?"],
        ] {
            let ours = o.densekv.command(&args_of(&c));
            let theirs = o.redis.command(&args_of(&c));
            assert_frames(
                &show_cmd(&c),
                &[sorted_array(&ours)],
                &[sorted_array(&theirs)],
            );
        }
    };
    introspection(&mut observer);
    let mut a = twin(&densekv, &redis, 2);
    let mut b = twin(&densekv, &redis, 3);
    expect(
        &mut a,
        &cmd!["SUBSCRIBE", "a", "b", "news.1", "", "a\0b"],
        5,
    );
    expect(&mut b, &cmd!["SUBSCRIBE", "a", "news.2"], 2);
    expect(&mut a, &cmd!["PSUBSCRIBE", "a*", "b*"], 2);
    expect(&mut b, &cmd!["PSUBSCRIBE", "a*", "*"], 2);
    expect(&mut a, &cmd!["SSUBSCRIBE", "s1", "a"], 2);
    expect(&mut b, &cmd!["SSUBSCRIBE", "s1"], 1);
    introspection(&mut observer);
    // In RESP3 too.
    introspection(&mut b);
    hello(&mut observer, 3);
    introspection(&mut observer);
    hello(&mut observer, 2);
    for c in [
        cmd!["PUBSUB"],
        cmd!["PUBSUB", "HELP"],
        cmd!["pubsub", "help"],
        cmd!["PUBSUB", "HELP", "x"],
        cmd!["PUBSUB", "NOPE"],
        cmd!["PUBSUB", "CHANNELS", "a", "b"],
        cmd!["PUBSUB", "SHARDCHANNELS", "a", "b"],
        cmd!["PUBSUB", "NUMPAT", "x"],
        cmd!["PUBLISH", "a"],
        cmd!["PUBLISH", "a", "b", "c"],
        cmd!["SPUBLISH", "a"],
        cmd!["SUBSCRIBE"],
        cmd!["PSUBSCRIBE"],
        cmd!["SSUBSCRIBE"],
    ] {
        one(&mut observer, &c);
    }
    // Unsubscribing updates every count.
    expect(&mut a, &cmd!["UNSUBSCRIBE", "a", "news.1"], 2);
    expect(&mut b, &cmd!["PUNSUBSCRIBE", "a*"], 1);
    expect(&mut b, &cmd!["SUNSUBSCRIBE", "s1"], 1);
    introspection(&mut observer);
    one(&mut a, &cmd!["RESET"]);
    one(&mut b, &cmd!["RESET"]);
    introspection(&mut observer);
}

fn args_of(c: &Cmd) -> Vec<&[u8]> {
    c.args.iter().map(Vec::as_slice).collect()
}

/// An array reply with its elements sorted (other replies as they are).
fn sorted_array(reply: &[u8]) -> Vec<u8> {
    let Value::Array(items) = decode(reply) else {
        return reply.to_vec();
    };
    let mut items: Vec<Vec<u8>> = items.iter().map(|v| v.bulk().to_vec()).collect();
    items.sort();
    let mut out = format!("*{}\r\n", items.len()).into_bytes();
    for item in items {
        out.extend_from_slice(format!("${}\r\n", item.len()).as_bytes());
        out.extend_from_slice(&item);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// MULTI with (un)subscribes and a publish to itself inside, in both protocols: the
/// confirmations and the message go into EXEC's array, SSUBSCRIBE is refused inside EXEC, and
/// the subscriptions made there hold after it.
#[test]
fn multi_with_pubsub_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    for protocol in [2, 3] {
        let mut a = twin(&densekv, &redis, protocol);
        for c in [
            cmd!["MULTI"],
            cmd!["SUBSCRIBE", "m", "n"],
            cmd!["PUBLISH", "m", "from inside"],
            cmd!["SSUBSCRIBE", "m"],
            cmd!["SUNSUBSCRIBE", "m"],
            cmd!["PSUBSCRIBE", "z*"],
            cmd!["UNSUBSCRIBE", "n"],
            cmd!["PING"],
        ] {
            one(&mut a, &c);
        }
        // EXEC's array counts seven replies but holds nine frames (SUBSCRIBE's second
        // confirmation and the message to itself are extra), as in Redis: the frame reader
        // sees EXEC's array and two more frames.
        expect(&mut a, &cmd!["EXEC"], 3);
        one(&mut a, &cmd!["GET", "k"]);
        one(&mut a, &cmd!["PING"]);
        expect(&mut a, &cmd!["PUNSUBSCRIBE"], 1);
        expect(&mut a, &cmd!["UNSUBSCRIBE"], 1);
        for c in [
            cmd!["MULTI"],
            cmd!["SSUBSCRIBE", "s"],
            cmd!["EXEC"],
            cmd!["GET", "k"],
            cmd!["MULTI"],
            cmd!["SUBSCRIBE", "x"],
            cmd!["DISCARD"],
            cmd!["GET", "k"],
            cmd!["PUBSUB", "NUMSUB", "x", "m", "s"],
            cmd!["PUBSUB", "SHARDNUMSUB", "s", "m"],
        ] {
            one(&mut a, &c);
        }
        assert_quiet(&mut a, "a");
    }
}

/// The `key=value` fields of CLIENT LIST's line for the connection from local port `port`.
fn client_fields(list: &[u8], port: u16) -> BTreeMap<String, String> {
    let text = String::from_utf8_lossy(decode(list).bulk()).into_owned();
    let addr = format!("addr=127.0.0.1:{port} ");
    let line = text
        .lines()
        .find(|l| l.contains(&addr))
        .unwrap_or_else(|| panic!("no client {addr} in {text}"));
    line.split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// CLIENT LIST's pub/sub fields (`flags`, `sub`, `psub`, `ssub`) of each of `clients`, as
/// `observer` sees them, on both servers.
fn compare_client_list(observer: &mut Twin, clients: &[&Twin], what: &str) {
    let ours = observer.densekv.cmd(&["CLIENT", "LIST"]);
    let theirs = observer.redis.cmd(&["CLIENT", "LIST"]);
    for (i, t) in clients.iter().enumerate() {
        let pick = |list: &[u8], c: &Client| {
            let port = c.stream.local_addr().expect("local addr").port();
            let fields = client_fields(list, port);
            ["flags", "sub", "psub", "ssub"].map(|k| fields.get(k).cloned().unwrap_or_default())
        };
        assert_eq!(
            pick(&ours, &t.densekv),
            pick(&theirs, &t.redis),
            "CLIENT LIST's flags/sub/psub/ssub of client {i} ({what}): densekv, then redis"
        );
    }
}

#[test]
fn client_list_pubsub_fields_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let mut observer = twin(&densekv, &redis, 2);
    let mut a = twin(&densekv, &redis, 2);
    let mut b = twin(&densekv, &redis, 3);
    compare_client_list(&mut observer, &[&a, &b], "none");
    expect(&mut a, &cmd!["SUBSCRIBE", "x", "y"], 2);
    expect(&mut b, &cmd!["PSUBSCRIBE", "p*"], 1);
    compare_client_list(&mut observer, &[&a, &b], "channels, a pattern");
    expect(&mut a, &cmd!["SSUBSCRIBE", "s", "t", "u"], 3);
    expect(&mut b, &cmd!["SSUBSCRIBE", "s"], 1);
    expect(&mut b, &cmd!["SUBSCRIBE", "x"], 1);
    compare_client_list(&mut observer, &[&a, &b], "every kind");
    expect_unordered(&mut a, &cmd!["UNSUBSCRIBE"], 2);
    expect(&mut b, &cmd!["PUNSUBSCRIBE"], 1);
    compare_client_list(&mut observer, &[&a, &b], "shard channels left");
    expect_unordered(&mut a, &cmd!["SUNSUBSCRIBE"], 3);
    one(&mut b, &cmd!["RESET"]);
    compare_client_list(&mut observer, &[&a, &b], "all gone");
}

/// One client of the random stream, as the test models it: enough to know how many frames a
/// command answers and whether RESET changed its protocol.
#[derive(Debug, Default)]
struct Model {
    channels: BTreeSet<Vec<u8>>,
    patterns: BTreeSet<Vec<u8>>,
    shard_channels: BTreeSet<Vec<u8>>,
}

impl Model {
    fn set(&mut self, kind: &[u8]) -> &mut BTreeSet<Vec<u8>> {
        match kind {
            b"SUBSCRIBE" | b"UNSUBSCRIBE" => &mut self.channels,
            b"PSUBSCRIBE" | b"PUNSUBSCRIBE" => &mut self.patterns,
            _ => &mut self.shard_channels,
        }
    }
}

/// Channels: `*` and the patterns below match some and not others; the empty name matches
/// none of them (`star_pattern_does_not_match_the_empty_channel`).
const CHANNELS: &[&[u8]] = &[
    b"", b"a", b"b", b"hello", b"hallo", b"hxllo", b"news.1", b"news.2", b"news", b"h\0llo",
    b"\r\n", b"x y",
];

const PATTERNS: &[&[u8]] = &[
    b"*",
    b"h?llo",
    b"h[ae]llo",
    b"h[^a]llo",
    b"news.*",
    b"?",
    b"a*",
    b"h\\?llo",
    b"[a-c]",
    b"*o",
];

fn names(g: &mut Gen, pool: &[&[u8]], min: usize, max: usize) -> Vec<Vec<u8>> {
    let n = min + g.below(max - min + 1);
    (0..n).map(|_| g.pick(pool).to_vec()).collect()
}

/// A command for a client of the random stream.
fn random_command(g: &mut Gen) -> Vec<Vec<u8>> {
    let with = |word: &str, rest: Vec<Vec<u8>>| {
        let mut args = vec![word.as_bytes().to_vec()];
        args.extend(rest);
        args
    };
    match g.below(40) {
        0..=5 => with("SUBSCRIBE", names(g, CHANNELS, 1, 3)),
        6..=8 => with("UNSUBSCRIBE", names(g, CHANNELS, 0, 2)),
        9..=12 => with("PSUBSCRIBE", names(g, PATTERNS, 1, 2)),
        13..=14 => with("PUNSUBSCRIBE", names(g, PATTERNS, 0, 2)),
        15..=16 => with("SSUBSCRIBE", names(g, CHANNELS, 1, 2)),
        17 => with("SUNSUBSCRIBE", names(g, CHANNELS, 0, 2)),
        18..=30 => {
            let channel = g.pick(CHANNELS).to_vec();
            with("PUBLISH", vec![channel, g.value()])
        }
        31..=33 => {
            let channel = g.pick(CHANNELS).to_vec();
            with("SPUBLISH", vec![channel, g.value()])
        }
        34 => vec![b"PING".to_vec()],
        35 => vec![b"PING".to_vec(), g.value()],
        36 => vec![b"GET".to_vec(), b"k".to_vec()],
        37 if g.chance(0.2) => vec![b"RESET".to_vec()],
        38 if g.chance(0.3) => {
            let protocol = if g.chance(0.5) { "2" } else { "3" };
            with("HELLO", vec![protocol.as_bytes().to_vec()])
        }
        _ => with("UNSUBSCRIBE", vec![]),
    }
}

/// How many frames `args` answers on a client in `model`'s state, and the model's new state.
fn frames_of(args: &[Vec<u8>], model: &mut Model) -> usize {
    let word = args[0].to_ascii_uppercase();
    let names = &args[1..];
    match word.as_slice() {
        b"SUBSCRIBE" | b"PSUBSCRIBE" | b"SSUBSCRIBE" => {
            model.set(&word).extend(names.iter().cloned());
            names.len()
        }
        b"UNSUBSCRIBE" | b"PUNSUBSCRIBE" | b"SUNSUBSCRIBE" => {
            let set = model.set(&word);
            if names.is_empty() {
                let n = set.len().max(1);
                set.clear();
                n
            } else {
                for name in names {
                    set.remove(name);
                }
                names.len()
            }
        }
        b"RESET" => {
            *model = Model::default();
            1
        }
        _ => 1,
    }
}

/// HELLO's reply with the value of its `id` field replaced by `?`.
fn mask_id(frame: &[u8]) -> Vec<u8> {
    let key = b"$2\r\nid\r\n:";
    let Some(at) = frame.windows(key.len()).position(|w| w == key) else {
        return frame.to_vec();
    };
    let start = at + key.len();
    let end = start
        + frame[start..]
            .iter()
            .position(|&b| b == b'\r')
            .expect("id line");
    [&frame[..start], b"?", &frame[end..]].concat()
}

/// Compares what `observer` sees of everyone's subscriptions.
fn compare_introspection(observer: &mut Twin) {
    let mut numsub = cmd!["PUBSUB", "NUMSUB"];
    numsub.args.extend(CHANNELS.iter().map(|c| c.to_vec()));
    one(observer, &numsub);
    numsub.args[1] = b"SHARDNUMSUB".to_vec();
    one(observer, &numsub);
    one(observer, &cmd!["PUBSUB", "NUMPAT"]);
    for c in [
        cmd!["PUBSUB", "CHANNELS"],
        cmd!["PUBSUB", "CHANNELS", "h*"],
        cmd!["PUBSUB", "CHANNELS", "?"],
        cmd!["PUBSUB", "SHARDCHANNELS"],
        cmd!["PUBSUB", "SHARDCHANNELS", "news.?"],
    ] {
        let ours = observer.densekv.command(&args_of(&c));
        let theirs = observer.redis.command(&args_of(&c));
        assert_frames(
            &show_cmd(&c),
            &[sorted_array(&ours)],
            &[sorted_array(&theirs)],
        );
    }
}

/// A seeded stream over six clients (three RESP2, three RESP3 to begin with): random
/// (un)subscribes of every kind, publishes, PINGs and GETs (refused in RESP2's subscribed
/// mode), and now and then a RESET or a HELLO that switches the protocol, on small pools of
/// channels and patterns. After each command every connection is drained (a publish: until as
/// many frames as its reply counts have arrived, the publisher's own pushes included) and each
/// client's frames are compared; now and then an observer compares PUBSUB's view and CLIENT
/// LIST's pub/sub fields.
#[test]
fn random_pubsub_stream_matches_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let seed = seed(0x5055_4253);
    let mut g = Gen::new(seed, vec![b"k".to_vec()]);
    let mut clients: Vec<Twin> = (0..6)
        .map(|i| twin(&densekv, &redis, if i % 2 == 0 { 2 } else { 3 }))
        .collect();
    let mut models: Vec<Model> = (0..6).map(|_| Model::default()).collect();
    let mut observer = twin(&densekv, &redis, 2);
    let steps = command_count(STEPS);
    for step in 0..steps {
        let i = g.below(clients.len());
        let c = Cmd::new(random_command(&mut g));
        let what = format!("seed {seed}, step {step}, client {i}: {}", show_cmd(&c));
        let word = c.args[0].as_slice();
        if word == b"PUBLISH" || word == b"SPUBLISH" {
            let (receivers, own) = publish(&mut clients[i], &c);
            let mut others: Vec<&mut Twin> = clients
                .iter_mut()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, t)| t)
                .collect();
            deliveries(&mut others, receivers - own, &what);
        } else {
            let n = frames_of(&c.args, &mut models[i]);
            send(&mut clients[i], &c);
            let ours = read_n(&mut clients[i].densekv, n);
            let theirs = read_n(&mut clients[i].redis, n);
            // PUNSUBSCRIBE without names is exact: Redis 7.0 keeps patterns in a list.
            let unordered = n > 1 && c.args.len() == 1 && word != b"PUNSUBSCRIBE";
            if unordered {
                assert!(
                    confirmations(&ours) == confirmations(&theirs),
                    "{what} (compared unordered)\n  densekv: {}\n  redis:   {}",
                    show(&ours.concat()),
                    show(&theirs.concat())
                );
            } else {
                // HELLO's reply carries each server's own client id.
                let ours: Vec<Vec<u8>> = ours.iter().map(|f| mask_id(f)).collect();
                let theirs: Vec<Vec<u8>> = theirs.iter().map(|f| mask_id(f)).collect();
                assert_frames(&what, &ours, &theirs);
            }
        }
        if step % 25 == 24 {
            compare_introspection(&mut observer);
            let all: Vec<&Twin> = clients.iter().collect();
            compare_client_list(&mut observer, &all, &what);
        }
    }
    for (i, t) in clients.iter_mut().enumerate() {
        assert_quiet(t, &format!("client {i}"));
    }
    compare_introspection(&mut observer);
}

/// Redis matches PUBLISH's channel against a pattern with `stringmatchlen`, which never
/// matches an empty string against `*` (its loop runs while both are non-empty); densekv's glob
/// treats `*` as match-everything, as KEYS and SCAN do (where Redis short-cuts `*` too). So a
/// `*` subscriber gets messages to the empty channel from densekv only, and PUBSUB CHANNELS `*`
/// lists the empty channel on densekv only.
#[test]
fn star_pattern_does_not_match_the_empty_channel() {
    let (densekv, redis) = Server::pair(&[]);
    let mut publisher = twin(&densekv, &redis, 2);
    let mut star = twin(&densekv, &redis, 2);
    let mut empty = twin(&densekv, &redis, 2);
    expect(&mut star, &cmd!["PSUBSCRIBE", "*"], 1);
    expect(&mut empty, &cmd!["SUBSCRIBE", ""], 1);
    expect(&mut empty, &cmd!["SSUBSCRIBE", ""], 1);
    let (receivers, _) = publish(&mut publisher, &cmd!["PUBLISH", "", "x"]);
    let mut listening = [&mut star, &mut empty];
    deliveries(&mut listening, receivers, "PUBLISH \"\" x");
    one(&mut publisher, &cmd!["PUBSUB", "CHANNELS", "*"]);
    one(&mut publisher, &cmd!["PUBSUB", "SHARDCHANNELS", "*"]);
}

/// INFO stats' pub/sub counters: `pubsub_channels`, `pubsub_patterns`, `pubsubshard_channels`.
#[test]
fn info_stats_counts_subscriptions() {
    let (densekv, redis) = Server::pair(&[]);
    let mut a = twin(&densekv, &redis, 2);
    let mut observer = twin(&densekv, &redis, 2);
    expect(&mut a, &cmd!["SUBSCRIBE", "x", "y"], 2);
    expect(&mut a, &cmd!["PSUBSCRIBE", "p*"], 1);
    expect(&mut a, &cmd!["SSUBSCRIBE", "s"], 1);
    let fields = |c: &mut Client| {
        let info = c.cmd(&["INFO", "stats"]);
        let text = String::from_utf8_lossy(decode(&info).bulk()).into_owned();
        text.lines()
            .filter(|l| l.starts_with("pubsub"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let ours = fields(&mut observer.densekv);
    let theirs = fields(&mut observer.redis);
    assert_eq!(ours, theirs, "INFO stats pubsub lines: densekv, then redis");
}

/// A message published before a client's UNSUBSCRIBE must reach it before the confirmation:
/// Redis appends it to the client's output when PUBLISH runs. densekv posts it to the
/// subscriber's thread, which takes its mail at the end of the loop turn, after it ran the
/// subscriber's own commands of that turn: the message comes after the confirmation and after
/// the reply to the next command, so a RESP2 client that left subscribed mode reads a
/// `message` array as the reply to its next command.
///
/// One I/O thread and a DEBUG SLEEP make it deterministic: while the thread sleeps the publisher
/// sends PUBLISH and then the subscriber sends UNSUBSCRIBE and PING; the next turn reads both
/// connections, the publisher's first, as Redis's event loop does.
#[test]
fn message_published_before_unsubscribe_comes_before_its_confirmation() {
    let (densekv, redis) = Server::pair(&["--io-threads", "1", "--enable-debug-command", "yes"]);
    let mut subscriber = twin(&densekv, &redis, 2);
    let mut publisher = twin(&densekv, &redis, 2);
    let mut sleeper = twin(&densekv, &redis, 2);
    expect(&mut subscriber, &cmd!["SUBSCRIBE", "ch"], 1);
    send(&mut sleeper, &cmd!["DEBUG", "SLEEP", "0.3"]);
    std::thread::sleep(Duration::from_millis(50));
    send(&mut publisher, &cmd!["PUBLISH", "ch", "sent first"]);
    std::thread::sleep(Duration::from_millis(50));
    let mut bytes = Vec::new();
    encode_into(&mut bytes, &[b"UNSUBSCRIBE", b"ch"]);
    encode_into(&mut bytes, &[b"PING", b"after"]);
    subscriber.densekv.send(&bytes);
    subscriber.redis.send(&bytes);
    let sleep_reply = [sleeper.densekv.read_reply(), sleeper.redis.read_reply()];
    assert_eq!(sleep_reply[0], sleep_reply[1]);
    let publish_reply = [publisher.densekv.read_reply(), publisher.redis.read_reply()];
    assert_frames("PUBLISH's reply", &publish_reply[..1], &publish_reply[1..]);
    let ours = read_n(&mut subscriber.densekv, 3);
    let theirs = read_n(&mut subscriber.redis, 3);
    assert_frames("message, confirmation, PING's reply", &ours, &theirs);
}

/// In RESP3 Redis 7.0 sends pub/sub pushes whatever CLIENT REPLY says (its CLIENT_PUSHING
/// flag), and (un)subscribe confirmations in RESP2 too: OFF and SKIP silence replies only.
/// densekv drops the confirmations and a client's own messages with its replies.
#[test]
fn client_reply_off_keeps_pubsub_frames() {
    let (densekv, redis) = Server::pair(&[]);
    let mut a = twin(&densekv, &redis, 3);
    let mut b = twin(&densekv, &redis, 2);
    for c in [
        cmd!["CLIENT", "REPLY", "OFF"],
        cmd!["SUBSCRIBE", "ch"],
        // Its own message comes, PUBLISH's reply does not.
        cmd!["PUBLISH", "ch", "to myself"],
        cmd!["UNSUBSCRIBE", "ch"],
        cmd!["CLIENT", "REPLY", "ON"],
        cmd!["CLIENT", "REPLY", "SKIP"],
        cmd!["SUBSCRIBE", "skipped"],
        cmd!["PING"],
    ] {
        send(&mut a, &c);
        settle(&mut a, &show_cmd(&c));
    }
    // RESP2: the confirmation comes, and then the client is in subscribed mode.
    for c in [
        cmd!["CLIENT", "REPLY", "OFF"],
        cmd!["SUBSCRIBE", "ch"],
        cmd!["GET", "k"],
        cmd!["RESET"],
    ] {
        send(&mut b, &c);
        settle(&mut b, &show_cmd(&c));
    }
}

/// Compares every frame either server sends within 200 ms (for commands whose frame count is
/// the question).
fn settle(t: &mut Twin, what: &str) {
    let arrived = |c: &mut Client| {
        c.stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let mut frames = Vec::new();
        while let Ok(frame) = c.try_read_reply() {
            frames.push(frame);
        }
        c.stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        frames
    };
    let ours = arrived(&mut t.densekv);
    let theirs = arrived(&mut t.redis);
    assert_frames(&format!("what {what} sent"), &ours, &theirs);
}
