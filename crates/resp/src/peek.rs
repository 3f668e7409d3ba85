//! A read-ahead over the query buffer: where the next complete multibulk request ends and where
//! its first few arguments (the name, the key of most commands, a member or field) lie, without
//! touching the parser's state.
//!
//! The server uses it to learn the keys of the requests waiting behind the one it is about to run,
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

/// Arguments whose place a [`Peeked`] keeps.
pub const PEEK_SPANS: usize = 4;

/// One complete request found by [`peek_multibulk`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peeked {
    /// Bytes the request occupies from the start of the buffer.
    pub consumed: usize,
    /// Number of arguments, the name included.
    pub argc: usize,
    spans: [Range<usize>; PEEK_SPANS],
}

impl Peeked {
    /// Where argument `index` (0 is the name) lies in the buffer, if the request has it and
    /// `index < PEEK_SPANS`.
    pub fn arg(&self, index: usize) -> Option<Range<usize>> {
        (index < self.argc.min(PEEK_SPANS)).then(|| self.spans[index].clone())
    }
}

/// The complete multibulk request at the start of `buf`, if there is one the peek understands.
pub fn peek_multibulk(buf: &[u8]) -> Option<Peeked> {
    if buf.first() != Some(&b'*') {
        return None;
    }
    let (argc, mut at) = number_line(buf, 1)?;
    if argc == 0 || argc > PEEK_ARGS_MAX {
        return None;
    }
    let mut spans: [Range<usize>; PEEK_SPANS] = Default::default();
    for index in 0..argc {
        if buf.get(at) != Some(&b'$') {
            return None;
        }
        let (len, body) = number_line(buf, at + 1)?;
        let end = body.checked_add(len)?;
        if buf.get(end..end + 2)? != b"\r\n" {
            return None;
        }
        if let Some(span) = spans.get_mut(index) {
            *span = body..end;
        }
        at = end + 2;
    }
    Some(Peeked {
        consumed: at,
        argc,
        spans,
    })
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

    #[test]
    fn finds_the_key_and_the_end() {
        let buf = b"*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$1\r\nv\r\n*1\r\n$4\r\nPING\r\n";
        let first = peek_multibulk(buf).expect("complete");
        assert_eq!(first.argc, 3);
        assert_eq!(&buf[first.arg(0).expect("name")], b"SET");
        assert_eq!(&buf[first.arg(1).expect("key")], b"key:1");
        assert_eq!(&buf[first.arg(2).expect("value")], b"v");
        assert_eq!(first.arg(3), None);
        let second = peek_multibulk(&buf[first.consumed..]).expect("complete");
        assert_eq!(second.arg(1), None);
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
            assert_eq!(
                peek_multibulk(buf),
                None,
                "{:?}",
                String::from_utf8_lossy(buf)
            );
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
            let Some(peeked) = peek_multibulk(&buf) else {
                continue;
            };
            let mut parser = Parser::default();
            match parser.parse(&buf) {
                Ok(Some(Request::Command(command))) => {
                    assert_eq!(command.consumed(), peeked.consumed);
                    assert_eq!(command.len(), peeked.argc);
                    for i in 0..PEEK_SPANS {
                        assert_eq!(command.get(i), peeked.arg(i).map(|a| &buf[a]));
                    }
                }
                other => panic!("peek accepted {buf:?}, parser gave {other:?}"),
            }
        }
    }
}
