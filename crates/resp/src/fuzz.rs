//! [`fuzz_check`]: the body of the `resp_parse` fuzz target, kept in the crate so the stable
//! test `tests/fuzz_corpus.rs` replays the committed corpus without nightly or libFuzzer.
//!
//! Input layout: byte 0 picks the limits (bit 0: unauthenticated; bits 1–2: `proto-max-bulk-len`
//! of 512 MB, 1 MB, 16 bytes or 0), byte 1 seeds the chunk sizes, the rest is the byte stream a
//! client sent. The stream is parsed three ways and every outcome is checked:
//!
//! 1. whole: a pipeline loop over the full buffer, as the server does after one big read;
//! 2. chunked: the same stream fed in pseudo-random pieces, growing the buffer between calls —
//!    the outcomes must equal the whole run's (when the stream is at most 64 KiB, since beyond that
//!    Redis's own "too big" checks legitimately depend on read sizes);
//! 3. round trip: every multibulk command re-encoded must parse back to the same arguments.
//!
//! Invariants asserted: no panic, `0 < consumed <= len`, arguments lie inside the buffer, the
//! parser's argument vector never holds more than `2 * max(1024, arguments received)` slots (no
//! reservation from an untrusted count), and the inline splitter and double formatters accept any
//! bytes.

use crate::ProtocolError;
use crate::double;
use crate::inline::split_args;
use crate::parser::{Limits, PROTO_MAX_BULK_LEN_DEFAULT, Parser, Request};

/// One request as observed by the check, owned so runs can be compared.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Command(Vec<Vec<u8>>),
    Empty,
    Attack,
    Error(ProtocolError),
}

fn limits_from(byte: u8) -> Limits {
    Limits {
        auth_required: byte & 1 == 1,
        proto_max_bulk_len: match (byte >> 1) & 3 {
            0 => PROTO_MAX_BULK_LEN_DEFAULT,
            1 => 1024 * 1024,
            2 => 16,
            _ => 0,
        },
    }
}

/// Checks the bounded-memory invariant and the consumed bound after each call.
fn check_parser(parser: &Parser, args_seen_max: usize) {
    let bound = 2 * args_seen_max.max(1024);
    assert!(
        parser.spans_capacity() <= bound,
        "argument vector of {} slots for at most {args_seen_max} arguments",
        parser.spans_capacity()
    );
}

/// Parses `stream[..available]` from `cursor` as far as it goes; appends outcomes.
/// Returns the new cursor and whether parsing must stop (error or attack).
fn drain(
    parser: &mut Parser,
    stream: &[u8],
    mut cursor: usize,
    outcomes: &mut Vec<Outcome>,
    args_seen_max: &mut usize,
) -> (usize, bool) {
    loop {
        let buf = &stream[cursor..];
        let result = parser.parse(buf);
        let (consumed, outcome) = match result {
            Ok(None) => return (cursor, false),
            Err(error) => {
                outcomes.push(Outcome::Error(error));
                return (cursor, true);
            }
            Ok(Some(request)) => {
                let consumed = request.consumed();
                let outcome = match request {
                    Request::Command(command) => {
                        assert!(!command.is_empty());
                        Outcome::Command(command.args().map(<[u8]>::to_vec).collect())
                    }
                    Request::Empty { .. } => Outcome::Empty,
                    Request::CrossProtocolAttack { .. } => Outcome::Attack,
                };
                (consumed, outcome)
            }
        };
        assert!(
            consumed > 0 && consumed <= buf.len(),
            "consumed {consumed} of {}",
            buf.len()
        );
        if let Outcome::Command(args) = &outcome {
            *args_seen_max = (*args_seen_max).max(args.len());
        }
        check_parser(parser, *args_seen_max);
        let stop = outcome == Outcome::Attack;
        outcomes.push(outcome);
        cursor += consumed;
        if stop {
            return (cursor, true);
        }
    }
}

fn parse_whole(limits: Limits, stream: &[u8]) -> Vec<Outcome> {
    let mut parser = Parser::new(limits);
    let mut outcomes = Vec::new();
    let mut args_seen_max = 0;
    drain(&mut parser, stream, 0, &mut outcomes, &mut args_seen_max);
    outcomes
}

fn parse_chunked(limits: Limits, stream: &[u8], seed: u8) -> Vec<Outcome> {
    let mut parser = Parser::new(limits);
    let mut outcomes = Vec::new();
    let mut args_seen_max = 0;
    let mut cursor = 0;
    let mut available = 0;
    let mut state = u32::from(seed) | 0x100;
    while available < stream.len() {
        // xorshift32: deterministic chunk sizes of 1..=16 bytes, occasionally 1 KiB.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let chunk = if state % 17 == 0 {
            1024
        } else {
            1 + (state % 16) as usize
        };
        available = (available + chunk).min(stream.len());
        let (next, stop) = drain(
            &mut parser,
            &stream[..available],
            cursor,
            &mut outcomes,
            &mut args_seen_max,
        );
        cursor = next;
        if stop {
            break;
        }
    }
    outcomes
}

fn encode(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.push(b'*');
    out.extend_from_slice(args.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for arg in args {
        out.push(b'$');
        out.extend_from_slice(arg.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The fuzz entry point: feeds `data` through the parser (whole, chunked, round-tripped) under
/// the limits its first byte selects, and through the inline splitter and the double
/// formatters. Panics on any violated invariant; returns normally otherwise.
pub fn fuzz_check(data: &[u8]) {
    let Some((&settings, rest)) = data.split_first() else {
        return;
    };
    let (seed, stream) = rest.split_first().map_or((0, &[][..]), |(&s, r)| (s, r));
    let limits = limits_from(settings);

    let whole = parse_whole(limits, stream);
    if stream.len() <= crate::INLINE_MAX_BYTES {
        let chunked = parse_chunked(limits, stream, seed);
        assert_eq!(
            whole, chunked,
            "chunked parsing disagrees with one-shot parsing"
        );
    }

    let relaxed = Limits {
        proto_max_bulk_len: PROTO_MAX_BULK_LEN_DEFAULT,
        auth_required: false,
    };
    for outcome in &whole {
        if let Outcome::Command(args) = outcome {
            let encoded = encode(args);
            let again = parse_whole(relaxed, &encoded);
            assert_eq!(
                again,
                [Outcome::Command(args.clone())],
                "re-encoded command parsed differently"
            );
        }
    }

    let mut bytes = Vec::new();
    let mut spans = Vec::new();
    if split_args(stream, &mut bytes, &mut spans).is_ok() {
        assert!(spans.iter().all(|span| span.end <= bytes.len()));
        assert!(bytes.len() <= stream.len());
    }

    for window in stream.chunks_exact(8).take(64) {
        let value = f64::from_bits(u64::from_le_bytes(window.try_into().expect("8 bytes")));
        assert!(!double::g17(value).as_bytes().is_empty());
        assert!(!double::human(value).as_bytes().is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::fuzz_check;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn accepts_trivial_inputs() {
        fuzz_check(b"");
        fuzz_check(b"\0");
        fuzz_check(b"\0\0*1\r\n$4\r\nPING\r\n");
        fuzz_check(b"\x01\x07PING\r\nPOST / HTTP/1.1\r\n");
        fuzz_check(b"\x06\x09*2\r\n$3\r\nGET\r\n$20\r\n01234567890123456789\r\n");
    }

    #[test]
    fn random_protocol_like_bytes() {
        let alphabet = b"*$\r\n\"' \\x0123456789-abPOSTHost:\0";
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..20_000 {
            let len = rng.gen_range(0..64);
            let data: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                .collect();
            fuzz_check(&data);
        }
    }
}
