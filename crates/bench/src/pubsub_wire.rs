//! What the pub/sub suite's subscribers read and its publishers write: an incremental parser for
//! the pushes a subscribed connection receives, and the two payload formats the suite publishes.
//!
//! ```text
//! *3\r\n $9\r\nsubscribe\r\n  $12\r\nbench.pubsub\r\n  :1\r\n            confirmation
//! *3\r\n $10\r\npsubscribe\r\n $6\r\nnews.*\r\n        :1\r\n            confirmation
//! *3\r\n $7\r\nmessage\r\n    $12\r\nbench.pubsub\r\n  $16\r\n<payload>\r\n
//! *4\r\n $8\r\npmessage\r\n   $6\r\nnews.*\r\n  $7\r\nnews.42\r\n  $16\r\n<payload>\r\n
//! >3 / >4 in place of *3 / *4 under RESP3 (the suite never sends HELLO, so both servers push
//! RESP2 arrays; the parser takes either)
//!
//! sequence payload  PPP:SSSSSSSSSSSS   publisher index, then its message sequence (16 bytes)
//! latency payload   <send time>        decimal nanoseconds since the run's monotonic origin
//! ```
//!
//! The parser works on the bytes a non-blocking read left in a buffer and never allocates: a
//! push cut by the read's end is `Ok(None)`, ordinary control flow (the caller keeps the tail
//! and reads more), not an error. Every length is bounded before it is trusted. The server
//! suite's `server_resp` reader is not used here because it reads from a blocking `BufRead` and
//! allocates per element; a subscriber here handles up to millions of pushes a second on a
//! thread that owns hundreds of sockets.

/// The longest bulk string a push may carry (the payloads are 16 to 20 bytes, the channels
/// shorter); a longer length means the stream is out of sync.
pub const BULK_BYTES_MAX: usize = 1 << 20;
/// The most elements a push has (`pmessage` has four).
const ELEMENTS_MAX: usize = 4;

/// One push, as far as a subscriber cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Push<'a> {
    /// The reply to `SUBSCRIBE` or `PSUBSCRIBE` for one channel or pattern.
    Subscribed,
    /// A published message (`message` or `pmessage`): its payload.
    Message(&'a [u8]),
}

/// One element of a push array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element<'a> {
    Bulk(&'a [u8]),
    Integer(i64),
}

/// The line at `pos` without its `\r\n` and the index after it; `None` when incomplete.
fn line(buf: &[u8], pos: usize) -> Result<Option<(&[u8], usize)>, String> {
    let Some(offset) = buf[pos..].iter().position(|&b| b == b'\n') else {
        return Ok(None);
    };
    let end = pos + offset;
    if end == pos || buf[end - 1] != b'\r' {
        return Err("push line without CRLF".to_owned());
    }
    Ok(Some((&buf[pos..end - 1], end + 1)))
}

/// The decimal number of `digits` (optionally negative).
fn number(digits: &[u8]) -> Result<i64, String> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| format!("bad number {:?}", String::from_utf8_lossy(digits)))
}

/// One element at `pos` and the index after it; `None` when incomplete.
fn element(buf: &[u8], pos: usize) -> Result<Option<(Element<'_>, usize)>, String> {
    let Some((head, next)) = line(buf, pos)? else {
        return Ok(None);
    };
    match head.split_first() {
        Some((b':', digits)) => Ok(Some((Element::Integer(number(digits)?), next))),
        Some((b'$', digits)) => {
            let len = usize::try_from(number(digits)?)
                .ok()
                .filter(|&len| len <= BULK_BYTES_MAX)
                .ok_or_else(|| format!("bulk length {:?}", String::from_utf8_lossy(digits)))?;
            let end = next + len;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err("bulk string without CRLF".to_owned());
            }
            Ok(Some((Element::Bulk(&buf[next..end]), end + 2)))
        }
        _ => Err(format!(
            "unexpected element {:?}",
            String::from_utf8_lossy(head)
        )),
    }
}

/// Parses the push at the start of `buf`: the push and the bytes it took, `Ok(None)` when `buf`
/// holds only part of one, `Err` on anything a subscriber should not receive (an error reply
/// such as `-ERR unknown command 'subscribe'`, a push of another kind, broken framing).
pub fn parse(buf: &[u8]) -> Result<Option<(Push<'_>, usize)>, String> {
    let Some((head, mut pos)) = line(buf, 0)? else {
        return Ok(None);
    };
    let count = match head.split_first() {
        Some((b'*' | b'>', digits)) => usize::try_from(number(digits)?)
            .ok()
            .filter(|&n| (1..=ELEMENTS_MAX).contains(&n))
            .ok_or_else(|| format!("push of {:?} elements", String::from_utf8_lossy(digits)))?,
        Some((b'-', text)) => return Err(String::from_utf8_lossy(text).into_owned()),
        _ => return Err(format!("unexpected {:?}", String::from_utf8_lossy(head))),
    };
    let mut elements = [Element::Integer(0); ELEMENTS_MAX];
    for slot in &mut elements[..count] {
        let Some((parsed, next)) = element(buf, pos)? else {
            return Ok(None);
        };
        *slot = parsed;
        pos = next;
    }
    let push = match &elements[..count] {
        [
            Element::Bulk(b"message"),
            Element::Bulk(_),
            Element::Bulk(payload),
        ]
        | [
            Element::Bulk(b"pmessage"),
            Element::Bulk(_),
            Element::Bulk(_),
            Element::Bulk(payload),
        ] => Push::Message(payload),
        [
            Element::Bulk(b"subscribe" | b"psubscribe"),
            Element::Bulk(_),
            Element::Integer(_),
        ] => Push::Subscribed,
        other => return Err(format!("unexpected push {other:?}")),
    };
    Ok(Some((push, pos)))
}

/// The payload of message `sequence` of publisher `publisher` (16 bytes).
pub fn sequence_payload(publisher: usize, sequence: u64) -> String {
    format!("{publisher:03}:{sequence:012}")
}

/// The publisher and sequence a [`sequence_payload`] carries.
pub fn parse_sequence(payload: &[u8]) -> Option<(usize, u64)> {
    let text = std::str::from_utf8(payload).ok()?;
    let (publisher, sequence) = text.split_once(':')?;
    Some((publisher.parse().ok()?, sequence.parse().ok()?))
}

/// The send time a latency payload carries, in nanoseconds since the run's origin.
pub fn parse_nanos(payload: &[u8]) -> Option<u64> {
    std::str::from_utf8(payload).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{Push, parse, parse_nanos, parse_sequence, sequence_payload};

    const MESSAGE: &[u8] = b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$16\r\n007:000000000042\r\n";
    const PMESSAGE: &[u8] =
        b"*4\r\n$8\r\npmessage\r\n$6\r\nnews.*\r\n$7\r\nnews.42\r\n$3\r\n123\r\n";

    #[test]
    fn parses_messages_and_confirmations() {
        let (push, used) = parse(MESSAGE).unwrap().unwrap();
        assert_eq!(push, Push::Message(b"007:000000000042"));
        assert_eq!(used, MESSAGE.len());
        let (push, used) = parse(PMESSAGE).unwrap().unwrap();
        assert_eq!((push, used), (Push::Message(b"123"), PMESSAGE.len()));
        let confirm = b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n";
        assert_eq!(
            parse(confirm).unwrap(),
            Some((Push::Subscribed, confirm.len()))
        );
        let pconfirm = b">3\r\n$10\r\npsubscribe\r\n$6\r\nnews.*\r\n:1\r\n";
        assert_eq!(
            parse(pconfirm).unwrap(),
            Some((Push::Subscribed, pconfirm.len()))
        );
    }

    #[test]
    fn a_cut_push_is_incomplete_at_every_length() {
        let mut two = MESSAGE.to_vec();
        two.extend_from_slice(PMESSAGE);
        for cut in 0..MESSAGE.len() {
            assert_eq!(parse(&MESSAGE[..cut]).unwrap(), None, "cut at {cut}");
        }
        // The first of two pushes parses alone; the rest starts where it ended.
        let (_, used) = parse(&two).unwrap().unwrap();
        assert_eq!(
            parse(&two[used..]).unwrap().unwrap().0,
            Push::Message(b"123")
        );
    }

    #[test]
    fn rejects_errors_and_broken_framing() {
        let error = parse(b"-ERR unknown command 'subscribe'\r\n").unwrap_err();
        assert!(error.starts_with("ERR unknown command"));
        assert!(parse(b"*3\n").is_err());
        assert!(parse(b"+OK\r\n").is_err());
        assert!(parse(b"*9\r\n").is_err());
        assert!(parse(b"*1\r\n$99999999\r\n").is_err());
        assert!(parse(b"*3\r\n$7\r\nmessage\r\n$2\r\nchXX").is_err());
        assert!(parse(b"*2\r\n$4\r\npong\r\n$0\r\n\r\n").is_err());
    }

    #[test]
    fn payloads_round_trip() {
        let payload = sequence_payload(7, 42);
        assert_eq!(payload, "007:000000000042");
        assert_eq!(payload.len(), 16);
        assert_eq!(parse_sequence(payload.as_bytes()), Some((7, 42)));
        assert_eq!(parse_sequence(b"garbage"), None);
        assert_eq!(parse_nanos(b"123456789"), Some(123_456_789));
        assert_eq!(parse_nanos(b"12x"), None);
    }
}
