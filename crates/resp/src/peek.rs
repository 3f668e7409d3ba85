//! A read-ahead over the query buffer: where the next complete multibulk request ends and where
//! its arguments lie, without touching the parser's state.
//!
//! The server uses it to learn the keys (and set, hash and sorted-set members) of the requests
//! waiting behind the one it is about to run,
//! so it can start loading their keyspace entries into the cache all at once (a pipelined batch
//! then waits for memory once instead of once per request). Nothing here decides anything: a
//! buffer the peek does not understand — inline requests, a partial request, malformed or very
//! long headers — ends the read-ahead, and [`crate::Parser`] parses every request as before.
//!
//! ```text
//!   *<argc>\r\n  $<len>\r\n<name>\r\n  $<len>\r\n<key>\r\n  ($<len>\r\n<arg>\r\n)*
//!   argc in 1..=PEEK_ARGS_MAX, lengths of at most 10 digits
//! ```

use std::ops::Range;

/// Requests with more arguments than this end the read-ahead (the peek stays cheap).
pub const PEEK_ARGS_MAX: usize = 64;

/// One complete request found by [`peek_multibulk`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peeked {
    /// Bytes the request occupies from the start of the buffer.
    pub consumed: usize,
    /// Number of arguments, the name included.
    pub argc: usize,
}

/// The complete multibulk request at the start of `buf`, if there is one the peek understands;
/// `arg(index, span)` is called for each argument in order (0 is the name), with where it lies
/// in `buf`, once the whole request is known to be there.
pub fn peek_multibulk(buf: &[u8], mut arg: impl FnMut(usize, Range<usize>)) -> Option<Peeked> {
    if buf.first() != Some(&b'*') {
        return None;
    }
    let (argc, first) = number_line(buf, 1)?;
    if argc == 0 || argc > PEEK_ARGS_MAX {
        return None;
    }
    let mut at = first;
    for _ in 0..argc {
        at = bulk_end(buf, at)?;
    }
    let consumed = at;
    at = first;
    for index in 0..argc {
        let (len, body) = number_line(buf, at + 1).expect("checked above");
        arg(index, body..body + len);
        at = body + len + 2;
    }
    Some(Peeked { consumed, argc })
}

/// Where the bulk `$<len>\r\n<body>\r\n` at `at` ends, if it is complete and well formed.
fn bulk_end(buf: &[u8], at: usize) -> Option<usize> {
    if buf.get(at) != Some(&b'$') {
        return None;
    }
    let (len, body) = number_line(buf, at + 1)?;
    let end = body.checked_add(len)?;
    if buf.get(end..end + 2)? != b"\r\n" {
        return None;
    }
    Some(end + 2)
}

/// A decimal of 1..=10 digits at `at` followed by CRLF: its value and the offset after the CRLF.
fn number_line(buf: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut value = 0usize;
    let mut i = at;
    while let Some(&b) = buf.get(i) {
        if !b.is_ascii_digit() {
            break;
        }
        if i - at == 10 {
            return None;
        }
        value = value * 10 + usize::from(b - b'0');
        i += 1;
    }
    if i == at || buf.get(i..i + 2)? != b"\r\n" {
        return None;
    }
    Some((value, i + 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Parser, Request};

    fn peek_args(buf: &[u8]) -> Option<(Peeked, Vec<&[u8]>)> {
        let mut args = Vec::new();
        let peeked = peek_multibulk(buf, |i, span| {
            assert_eq!(i, args.len());
            args.push(&buf[span]);
        })?;
        Some((peeked, args))
    }

    #[test]
    fn finds_the_arguments_and_the_end() {
        let buf = b"*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$1\r\nv\r\n*1\r\n$4\r\nPING\r\n";
        let (first, args) = peek_args(buf).expect("complete");
        assert_eq!(first.argc, 3);
        assert_eq!(args, [&b"SET"[..], b"key:1", b"v"]);
        let (second, args) = peek_args(&buf[first.consumed..]).expect("complete");
        assert_eq!(args, [&b"PING"[..]]);
        assert_eq!(first.consumed + second.consumed, buf.len());
    }

    #[test]
    fn stops_at_what_it_does_not_understand() {
        for buf in [
            &b""[..],
            b"PING\r\n",
            b"*2\r\n$3\r\nGET\r\n$3\r\nke",
            b"*2\r\n$3\r\nGET\r\n$3\r\nkey",
            b"*2\r\n$3\r\nGET\r\n$3\r\nkeyX\n",
            b"*0\r\n",
            b"*-1\r\n",
            b"*65\r\n",
            b"*1\r\n$99999999999\r\n",
            b"*1\r\n:3\r\n",
            b"*1\r\n$\r\n\r\n",
        ] {
            let mut called = false;
            let peeked = peek_multibulk(buf, |_, _| called = true);
            assert_eq!(peeked, None, "{:?}", String::from_utf8_lossy(buf));
            assert!(!called, "arguments reported for an incomplete request");
        }
    }

    /// Whatever the peek accepts, the parser parses to the same length and second argument.
    #[test]
    fn agrees_with_the_parser() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let mut buf = Vec::new();
            let argc = (next() % 5) as usize;
            buf.extend_from_slice(format!("*{argc}\r\n").as_bytes());
            for _ in 0..argc {
                let len = (next() % 4) as usize;
                buf.extend_from_slice(format!("${len}\r\n").as_bytes());
                buf.extend((0..len).map(|_| b"ab\r\n*$1"[(next() % 7) as usize]));
                buf.extend_from_slice(b"\r\n");
            }
            // Corrupt or cut one byte now and then.
            if next() % 3 == 0 && !buf.is_empty() {
                let at = (next() as usize) % buf.len();
                if next() % 2 == 0 {
                    buf[at] = b"*$\r\n0a"[(next() % 6) as usize];
                } else {
                    buf.truncate(at);
                }
            }
            let Some((peeked, args)) = peek_args(&buf) else {
                continue;
            };
            let mut parser = Parser::default();
            match parser.parse(&buf) {
                Ok(Some(Request::Command(command))) => {
                    assert_eq!(command.consumed(), peeked.consumed);
                    assert_eq!(command.len(), peeked.argc);
                    assert!(command.args().eq(args.iter().copied()));
                }
                other => panic!("peek accepted {buf:?}, parser gave {other:?}"),
            }
        }
    }
}
