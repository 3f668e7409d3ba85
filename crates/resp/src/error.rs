//! The crate's one error enum: every way a request can violate the protocol.
//!
//! Each variant is one `addReplyError` call in Redis 7.0.15's `networking.c`
//! (`processInlineBuffer`, `processMultibulkBuffer`). Redis answers every one of them with
//! `-ERR Protocol error: …\r\n`, sets `CLIENT_CLOSE_AFTER_REPLY | CLIENT_PROTOCOL_ERROR`, and
//! closes the connection once the reply is written; it reads no further request from that client.
//! [`ProtocolError::closes_connection`] says so for each variant (all `true` today, kept as a
//! method so the server loop does not hard-code it).
//!
//! | variant                          | reply text after `-ERR `                          |
//! |----------------------------------|---------------------------------------------------|
//! | `TooBigInlineRequest`            | `Protocol error: too big inline request`          |
//! | `UnbalancedQuotes`               | `Protocol error: unbalanced quotes in request`    |
//! | `TooBigMultibulkCount`           | `Protocol error: too big mbulk count string`      |
//! | `InvalidMultibulkLength`         | `Protocol error: invalid multibulk length`        |
//! | `UnauthenticatedMultibulkLength` | `Protocol error: unauthenticated multibulk length`|
//! | `TooBigBulkCount`                | `Protocol error: too big bulk count string`       |
//! | `ExpectedDollar(b)`              | `Protocol error: expected '$', got '<b>'`         |
//! | `InvalidBulkLength`              | `Protocol error: invalid bulk length`             |
//! | `UnauthenticatedBulkLength`      | `Protocol error: unauthenticated bulk length`     |
//!
//! `ExpectedDollar` is the only formatted text. Redis builds it with `addReplyErrorFormat`, which
//! maps `\r` and `\n` to spaces, so the byte shown is the offending byte except that CR and LF
//! become `' '`; bytes ≥ 0x80 are sent raw (the reply is bytes, not UTF-8). A NUL cannot be the
//! offending byte: Redis finds the line with `strchr`, which stops at NUL, so such a line is
//! never complete (see `parser.rs`).
//!
//! The error is a plain `Copy` value: no allocation, no boxed source. Incompleteness is not an
//! error at all; the parser returns `Ok(None)` for it (mini-redis `frame.rs`).

use std::fmt;

/// A request that Redis 7.0 rejects with `-ERR Protocol error: …` and then closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtocolError {
    /// An inline request has no `\n` within the first 64 KiB (`PROTO_INLINE_MAX_SIZE`).
    TooBigInlineRequest,
    /// `sdssplitargs` failed: a quote is not closed, or a closing quote is followed by a
    /// non-space byte (`"foo"bar`).
    UnbalancedQuotes,
    /// The `*<count>` line has no `\r` within 64 KiB.
    TooBigMultibulkCount,
    /// The `*<count>` is not a `string2ll` number or exceeds `INT_MAX`.
    InvalidMultibulkLength,
    /// More than 10 arguments before authentication.
    UnauthenticatedMultibulkLength,
    /// A `$<len>` line has no `\r` within 64 KiB.
    TooBigBulkCount,
    /// A bulk header does not start with `$`; carries the byte found there.
    ExpectedDollar(u8),
    /// The `$<len>` is not a number, is negative, or exceeds `proto-max-bulk-len`.
    InvalidBulkLength,
    /// A bulk longer than 16384 bytes before authentication.
    UnauthenticatedBulkLength,
}

impl ProtocolError {
    /// Whether Redis closes the connection after sending the reply. It does for every protocol
    /// error (`setProtocolError` sets `CLIENT_CLOSE_AFTER_REPLY`).
    pub fn closes_connection(self) -> bool {
        true
    }

    /// The fixed part of the message (everything after `-ERR `), without the byte of
    /// `ExpectedDollar`.
    fn fixed_text(self) -> &'static str {
        match self {
            Self::TooBigInlineRequest => "Protocol error: too big inline request",
            Self::UnbalancedQuotes => "Protocol error: unbalanced quotes in request",
            Self::TooBigMultibulkCount => "Protocol error: too big mbulk count string",
            Self::InvalidMultibulkLength => "Protocol error: invalid multibulk length",
            Self::UnauthenticatedMultibulkLength => {
                "Protocol error: unauthenticated multibulk length"
            }
            Self::TooBigBulkCount => "Protocol error: too big bulk count string",
            Self::ExpectedDollar(_) => "Protocol error: expected '$', got '",
            Self::InvalidBulkLength => "Protocol error: invalid bulk length",
            Self::UnauthenticatedBulkLength => "Protocol error: unauthenticated bulk length",
        }
    }

    /// Appends the message as Redis sends it, without the `-ERR ` prefix and the CRLF
    /// (e.g. `Protocol error: invalid bulk length`).
    pub fn write_message(self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.fixed_text().as_bytes());
        if let Self::ExpectedDollar(byte) = self {
            // addReplyErrorFormat maps CR and LF to spaces so that the reply stays one line.
            let shown = if byte == b'\r' || byte == b'\n' {
                b' '
            } else {
                byte
            };
            out.push(shown);
            out.push(b'\'');
        }
    }

    /// Appends the complete reply: `-ERR <message>\r\n`, the same for RESP2 and RESP3.
    pub fn write_reply(self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"-ERR ");
        self.write_message(out);
        out.extend_from_slice(b"\r\n");
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut bytes = Vec::with_capacity(64);
        self.write_message(&mut bytes);
        f.write_str(&String::from_utf8_lossy(&bytes))
    }
}

impl std::error::Error for ProtocolError {}

#[cfg(test)]
mod tests {
    use super::ProtocolError;

    fn reply(error: ProtocolError) -> Vec<u8> {
        let mut out = Vec::new();
        error.write_reply(&mut out);
        out
    }

    #[test]
    fn every_reply_text_is_byte_exact() {
        let cases: [(ProtocolError, &[u8]); 11] = [
            (
                ProtocolError::TooBigInlineRequest,
                b"-ERR Protocol error: too big inline request\r\n",
            ),
            (
                ProtocolError::UnbalancedQuotes,
                b"-ERR Protocol error: unbalanced quotes in request\r\n",
            ),
            (
                ProtocolError::TooBigMultibulkCount,
                b"-ERR Protocol error: too big mbulk count string\r\n",
            ),
            (
                ProtocolError::InvalidMultibulkLength,
                b"-ERR Protocol error: invalid multibulk length\r\n",
            ),
            (
                ProtocolError::UnauthenticatedMultibulkLength,
                b"-ERR Protocol error: unauthenticated multibulk length\r\n",
            ),
            (
                ProtocolError::TooBigBulkCount,
                b"-ERR Protocol error: too big bulk count string\r\n",
            ),
            (
                ProtocolError::ExpectedDollar(b'f'),
                b"-ERR Protocol error: expected '$', got 'f'\r\n",
            ),
            (
                ProtocolError::ExpectedDollar(b'\n'),
                b"-ERR Protocol error: expected '$', got ' '\r\n",
            ),
            (
                ProtocolError::ExpectedDollar(0xff),
                b"-ERR Protocol error: expected '$', got '\xff'\r\n",
            ),
            (
                ProtocolError::InvalidBulkLength,
                b"-ERR Protocol error: invalid bulk length\r\n",
            ),
            (
                ProtocolError::UnauthenticatedBulkLength,
                b"-ERR Protocol error: unauthenticated bulk length\r\n",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(reply(error), expected, "{error:?}");
            assert!(error.closes_connection());
        }
    }

    #[test]
    fn display_is_the_message_without_prefix() {
        assert_eq!(
            ProtocolError::ExpectedDollar(b'x').to_string(),
            "Protocol error: expected '$', got 'x'"
        );
        assert_eq!(
            ProtocolError::ExpectedDollar(b'\r').to_string(),
            "Protocol error: expected '$', got ' '"
        );
    }
}
