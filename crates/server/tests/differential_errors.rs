//! Error replies that probes found different from redis-server's, and their neighbours: the
//! same bad input must get the same bytes, in the same order of checks (a wrong type before a
//! bad option where Redis looks the key up first, the first index before the second).

#[macro_use]
mod support;

use std::io::Read;
use std::net::{IpAddr, TcpStream};
use std::time::Duration;
use support::{Server, show};

/// Commands run in order on both servers; every reply must be identical.
const PROBES: &[&[&str]] = &[
    &["RPUSH", "list", "a"],
    &["ZADD", "z", "1", "a"],
    &["SET", "s", "abc"],
    // getRangeLongFromObjectOrReply's text ("value must between").
    &["ZRANDMEMBER", "z", "-9223372036854775808"],
    &["ZRANDMEMBER", "z", "-9223372036854775808", "WITHSCORES"],
    &["ZRANDMEMBER", "z", "x"],
    // SWAPDB reads C ints, the first index first.
    &["SWAPDB", "0", "2147483648"],
    &["SWAPDB", "4294967296", "x"],
    &["SWAPDB", "x", "4294967296"],
    &["SWAPDB", "2147483647", "0"],
    &["SWAPDB", "-1", "0"],
    &["SWAPDB", "0", "16"],
    &["SWAPDB", "-2147483649", "0"],
    // LCS checks both keys' types before its options.
    &["LCS", "list", "s", "BADOPT"],
    &["LCS", "s", "list", "BADOPT"],
    &["LCS", "s", "missing", "BADOPT"],
    &["LCS", "s", "missing", "MINMATCHLEN", "x"],
    &["LCS", "s", "missing", "LEN", "IDX"],
    // The ranges by score and lex on a key of the wrong type.
    &["ZREVRANGEBYSCORE", "list", "1", "0"],
    &["ZREVRANGEBYSCORE", "list", "+inf", "-inf", "WITHSCORES"],
    &["ZREVRANGEBYSCORE", "list", "1", "0", "LIMIT", "0", "1"],
    &["ZREVRANGEBYSCORE", "list", "a", "b"],
    &["ZREVRANGEBYSCORE", "list", "1", "0", "LIMIT", "0"],
    &["ZREVRANGEBYSCORE", "list", "1", "0", "LIMIT", "a", "b"],
    &["ZREVRANGEBYSCORE", "list", "1", "0", "BOGUS"],
    &["ZRANGEBYSCORE", "list", "(1", "(0"],
    &["ZREVRANGEBYLEX", "list", "[b", "[a"],
    &["ZREVRANGEBYLEX", "list", "b", "a"],
    &[
        "ZRANGE", "list", "1", "0", "BYSCORE", "REV", "LIMIT", "0", "1",
    ],
    &["ZRANGESTORE", "dst", "list", "1", "0", "BYSCORE"],
];

#[test]
fn probed_errors_match_redis() {
    let (densekv, redis) = Server::pair(&[]);
    let (mut d, mut r) = (densekv.connect(), redis.connect());
    for probe in PROBES {
        assert_eq!(show(&d.cmd(probe)), show(&r.cmd(probe)), "{probe:?}");
    }
}

/// The machine's first non-loopback IPv4 address, if it has one.
fn outside_address() -> Option<IpAddr> {
    let out = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.parse::<IpAddr>().ok())
        .find(|ip| ip.is_ipv4() && !ip.is_loopback())
}

/// A client from outside the loopback interface, with protected mode on and no password, gets
/// Redis's refusal word for word (typos included) and is disconnected.
#[test]
fn protected_mode_refusal_is_redis_own() {
    let ip = outside_address().expect("a non-loopback IPv4 address to connect from");
    let (densekv, redis) = Server::pair(&["--bind", "0.0.0.0"]);
    let mut replies = Vec::new();
    for server in [&densekv, &redis] {
        let mut s = TcpStream::connect((ip, server.port)).expect("connect from outside");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut got = Vec::new();
        s.read_to_end(&mut got)
            .expect("read until the server closes");
        replies.push(got);
    }
    assert!(replies[1].starts_with(b"-DENIED"), "{}", show(&replies[1]));
    assert_eq!(show(&replies[0]), show(&replies[1]));
}
