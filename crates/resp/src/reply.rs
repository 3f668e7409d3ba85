//! The reply writer: RESP2 and RESP3 encodings appended to the client's output buffer.
//!
//! [`ReplyWriter`] borrows the caller's `Vec<u8>` and the connection's [`Protocol`] and appends
//! one reply element per call, exactly as the matching `addReply*` function of Redis 7.0
//! `networking.c` would. Nothing is allocated besides the growth of that `Vec`: integers go
//! through `itoa` on the stack, doubles through [`crate::double`]'s stack buffer.
//!
//! | call                  | RESP2                         | RESP3                      | Redis function          |
//! |-----------------------|-------------------------------|----------------------------|-------------------------|
//! | `simple(s)`           | `+s\r\n`                      | same                       | addReplyStatus          |
//! | `error(e)`            | `-e\r\n`                      | same                       | addReplyErrorLength     |
//! | `integer(n)`          | `:n\r\n`                      | same                       | addReplyLongLong        |
//! | `bulk(b)`             | `$len\r\nb\r\n`               | same                       | addReplyBulkCBuffer     |
//! | `null()`              | `$-1\r\n`                     | `_\r\n`                    | addReplyNull            |
//! | `null_array()`        | `*-1\r\n`                     | `_\r\n`                    | addReplyNullArray       |
//! | `array_len(n)`        | `*n\r\n`                      | same                       | addReplyArrayLen        |
//! | `map_len(n)`          | `*2n\r\n`                     | `%n\r\n`                   | addReplyMapLen          |
//! | `set_len(n)`          | `*n\r\n`                      | `~n\r\n`                   | addReplySetLen          |
//! | `push_len(n)`         | `*n\r\n`                      | `>n\r\n`                   | addReplyPushLen¹        |
//! | `double(d)`           | `$len\r\n%.17g\r\n`           | `,%.17g\r\n`               | addReplyDouble          |
//! | `human_double(d)`     | `$len\r\n<human>\r\n`         | `,<human>\r\n`             | addReplyHumanLongDouble |
//! | `boolean(b)`          | `:1\r\n` / `:0\r\n`           | `#t\r\n` / `#f\r\n`        | addReplyBool            |
//! | `big_number(s)`       | `$len\r\ns\r\n`               | `(s\r\n`                   | addReplyBigNum          |
//! | `verbatim(s, ext)`    | `$len\r\ns\r\n`               | `=len+4\r\next:s\r\n`      | addReplyVerbatim        |
//! | `deferred_*()`+`set…` | header patched in at the end  | same                       | addReplyDeferredLen     |
//!
//! ¹ Redis asserts RESP3 in `addReplyPushLen`; its RESP2 callers (pub/sub messages) write a
//! plain array header instead, which is what `push_len` does under RESP2.
//!
//! Infinity in `double`: RESP2 `$3\r\ninf\r\n` / `$4\r\n-inf\r\n`, RESP3 `,inf\r\n` / `,-inf\r\n`.
//!
//! # Deferred lengths
//!
//! For replies whose element count is known only at the end (SCAN, KEYS with a pattern), Redis
//! adds an empty reply node and fills it in later. Here [`ReplyWriter::deferred_array`] writes a
//! 4-byte placeholder (room for `*N\r\n` with N < 10) and returns its position; the matching
//! `set_deferred_*` call writes the real header over it. If the header is longer the bytes after
//! the placeholder are moved once (`Vec::splice`), so a deferred reply costs O(n) for its n bytes
//! at worst and O(1) when it has fewer than 10 elements. Nested deferred replies work because an
//! inner patch only moves bytes after the outer placeholder.
//!
//! Errors and simple strings must be one line. Redis's `addReplyErrorFormat` maps CR and LF to
//! spaces; [`ReplyWriter::error`] does the same for every error so a stray newline in a message
//! cannot desynchronise the client. [`ReplyWriter::simple`] leaves its bytes alone (Redis
//! writes status replies verbatim) and debug-asserts that they hold no CR or LF.

use crate::double::{self, FormattedDouble};

/// The protocol version negotiated by `HELLO` (2 until the client says otherwise).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// RESP2, the default for every new connection.
    #[default]
    Resp2,
    /// RESP3, after `HELLO 3`.
    Resp3,
}

/// Bytes of the placeholder written by the `deferred_*` calls: `*N\r\n` with one digit.
const DEFERRED_PLACEHOLDER_BYTES: usize = 4;

/// A reserved aggregate header whose length is not known yet. Must be passed to
/// [`ReplyWriter::set_deferred_len`] of a writer on the same buffer; nested deferred headers are
/// filled innermost first (last reserved, first filled), as Redis's commands do.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a deferred header must be filled in with set_deferred_*"]
pub struct Deferred {
    position: usize,
    kind: DeferredKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DeferredKind {
    Array,
    Map,
    Set,
}

/// Appends replies to a client's output buffer.
#[derive(Debug)]
pub struct ReplyWriter<'a> {
    out: &'a mut Vec<u8>,
    protocol: Protocol,
}

impl<'a> ReplyWriter<'a> {
    /// A writer appending to `out` in `protocol`.
    pub fn new(out: &'a mut Vec<u8>, protocol: Protocol) -> Self {
        Self { out, protocol }
    }

    /// The protocol replies are encoded in.
    /// Switches the encoding for the rest of this reply (HELLO and RESET change the protocol of
    /// the connection, and their own reply is already in the new one).
    pub fn set_protocol(&mut self, protocol: Protocol) {
        self.protocol = protocol;
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The output buffer written so far.
    pub fn buffer(&self) -> &[u8] {
        self.out
    }

    /// The output buffer itself, for a caller that writes nested replies through writers of its
    /// own (EXEC runs each queued command with a fresh writer on the same buffer).
    pub fn out_mut(&mut self) -> &mut Vec<u8> {
        self.out
    }

    fn header(&mut self, prefix: u8, value: i64) {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(value);
        self.out.reserve(digits.len() + 3);
        self.out.push(prefix);
        self.out.extend_from_slice(digits.as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    fn length_header(&mut self, prefix: u8, len: usize) {
        self.header(prefix, i64::try_from(len).expect("lengths fit i64"));
    }

    /// `+text\r\n`. `text` must not contain CR or LF.
    pub fn simple(&mut self, text: &[u8]) {
        debug_assert!(!text.iter().any(|&b| b == b'\r' || b == b'\n'));
        self.out.reserve(text.len() + 3);
        self.out.push(b'+');
        self.out.extend_from_slice(text);
        self.out.extend_from_slice(b"\r\n");
    }

    /// `-text\r\n`. `text` includes the code (`ERR syntax error`, `WRONGTYPE Operation…`);
    /// CR and LF inside it become spaces.
    pub fn error(&mut self, text: &[u8]) {
        self.out.reserve(text.len() + 3);
        self.out.push(b'-');
        self.out.extend(
            text.iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.out.extend_from_slice(b"\r\n");
    }

    /// `:n\r\n`.
    pub fn integer(&mut self, value: i64) {
        self.header(b':', value);
    }

    /// `$len\r\nbytes\r\n`.
    pub fn bulk(&mut self, bytes: &[u8]) {
        self.length_header(b'$', bytes.len());
        self.out.reserve(bytes.len() + 2);
        self.out.extend_from_slice(bytes);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A bulk string holding the decimal text of `value` (`addReplyBulkLongLong`).
    pub fn bulk_integer(&mut self, value: i64) {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(value);
        self.bulk(digits.as_bytes());
    }

    /// The null reply: RESP2 `$-1\r\n`, RESP3 `_\r\n`.
    pub fn null(&mut self) {
        self.out.extend_from_slice(match self.protocol {
            Protocol::Resp2 => b"$-1\r\n",
            Protocol::Resp3 => b"_\r\n",
        });
    }

    /// The null array: RESP2 `*-1\r\n`, RESP3 `_\r\n`.
    pub fn null_array(&mut self) {
        self.out.extend_from_slice(match self.protocol {
            Protocol::Resp2 => b"*-1\r\n",
            Protocol::Resp3 => b"_\r\n",
        });
    }

    /// `*n\r\n`; `n` elements follow.
    pub fn array_len(&mut self, len: usize) {
        self.length_header(b'*', len);
    }

    /// RESP3 `%n\r\n`, RESP2 `*2n\r\n`; `n` key-value pairs follow.
    pub fn map_len(&mut self, pairs: usize) {
        match self.protocol {
            Protocol::Resp2 => self.length_header(b'*', pairs * 2),
            Protocol::Resp3 => self.length_header(b'%', pairs),
        }
    }

    /// RESP3 `~n\r\n`, RESP2 `*n\r\n`.
    pub fn set_len(&mut self, len: usize) {
        match self.protocol {
            Protocol::Resp2 => self.length_header(b'*', len),
            Protocol::Resp3 => self.length_header(b'~', len),
        }
    }

    /// RESP3 `>n\r\n`, RESP2 `*n\r\n` (how pub/sub messages are framed in each).
    pub fn push_len(&mut self, len: usize) {
        match self.protocol {
            Protocol::Resp2 => self.length_header(b'*', len),
            Protocol::Resp3 => self.length_header(b'>', len),
        }
    }

    fn formatted_double(&mut self, text: &FormattedDouble) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(text.as_bytes()),
            Protocol::Resp3 => {
                self.out.reserve(text.as_bytes().len() + 3);
                self.out.push(b',');
                self.out.extend_from_slice(text.as_bytes());
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// `addReplyDouble`: `%.17g`, as a bulk string (RESP2) or a RESP3 double.
    pub fn double(&mut self, value: f64) {
        self.formatted_double(&double::g17(value));
    }

    /// `addReplyHumanLongDouble`: the INCRBYFLOAT format (see [`crate::double::human`]).
    pub fn human_double(&mut self, value: f64) {
        self.formatted_double(&double::human(value));
    }

    /// RESP3 `#t`/`#f`, RESP2 `:1`/`:0`.
    pub fn boolean(&mut self, value: bool) {
        self.out.extend_from_slice(match (self.protocol, value) {
            (Protocol::Resp2, true) => b":1\r\n",
            (Protocol::Resp2, false) => b":0\r\n",
            (Protocol::Resp3, true) => b"#t\r\n",
            (Protocol::Resp3, false) => b"#f\r\n",
        });
    }

    /// RESP3 `(digits\r\n`, RESP2 a bulk string. `digits` is the number's decimal text.
    pub fn big_number(&mut self, digits: &[u8]) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(digits),
            Protocol::Resp3 => {
                self.out.reserve(digits.len() + 3);
                self.out.push(b'(');
                self.out.extend_from_slice(digits);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// RESP3 `=len\r\next:text\r\n` (len counts the 4 bytes of `ext:`), RESP2 a bulk string.
    /// `ext` is the 3-byte format (`txt`, `mkd`); Redis pads a shorter one with spaces, which is
    /// the caller's business here since the type is fixed at 3 bytes.
    pub fn verbatim(&mut self, text: &[u8], ext: [u8; 3]) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => {
                self.length_header(b'=', text.len() + 4);
                self.out.reserve(text.len() + 6);
                self.out.extend_from_slice(&ext);
                self.out.push(b':');
                self.out.extend_from_slice(text);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    fn deferred(&mut self, kind: DeferredKind) -> Deferred {
        let position = self.out.len();
        self.out.extend_from_slice(b"*0\r\n");
        Deferred { position, kind }
    }

    /// Reserves an array header whose length is given later by [`Self::set_deferred_len`].
    pub fn deferred_array(&mut self) -> Deferred {
        self.deferred(DeferredKind::Array)
    }

    /// Reserves a map header (count in pairs) for [`Self::set_deferred_len`].
    pub fn deferred_map(&mut self) -> Deferred {
        self.deferred(DeferredKind::Map)
    }

    /// Reserves a set header for [`Self::set_deferred_len`].
    pub fn deferred_set(&mut self) -> Deferred {
        self.deferred(DeferredKind::Set)
    }

    /// Writes the real header of a deferred aggregate: `len` elements (pairs for a map, doubled
    /// to `*2n` in RESP2), with the prefix of the protocol.
    #[allow(
        clippy::needless_pass_by_value,
        reason = "taking the handle by value makes filling it in twice a compile error"
    )]
    pub fn set_deferred_len(&mut self, deferred: Deferred, len: usize) {
        let (prefix, count) = match (deferred.kind, self.protocol) {
            (DeferredKind::Array, _) | (DeferredKind::Set, Protocol::Resp2) => (b'*', len),
            (DeferredKind::Map, Protocol::Resp2) => (b'*', len * 2),
            (DeferredKind::Map, Protocol::Resp3) => (b'%', len),
            (DeferredKind::Set, Protocol::Resp3) => (b'~', len),
        };
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(count).as_bytes();
        let mut header = [0u8; 24];
        header[0] = prefix;
        header[1..=digits.len()].copy_from_slice(digits);
        header[digits.len() + 1..digits.len() + 3].copy_from_slice(b"\r\n");
        let header = &header[..digits.len() + 3];
        let start = deferred.position;
        let placeholder = start..start + DEFERRED_PLACEHOLDER_BYTES;
        assert!(
            self.out.get(placeholder.clone()) == Some(b"*0\r\n"),
            "deferred header does not belong to this buffer"
        );
        if header.len() == DEFERRED_PLACEHOLDER_BYTES {
            self.out[placeholder].copy_from_slice(header);
        } else {
            self.out.splice(placeholder, header.iter().copied());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Protocol, ReplyWriter};

    fn both(write: impl Fn(&mut ReplyWriter<'_>)) -> (Vec<u8>, Vec<u8>) {
        let mut resp2 = Vec::new();
        write(&mut ReplyWriter::new(&mut resp2, Protocol::Resp2));
        let mut resp3 = Vec::new();
        write(&mut ReplyWriter::new(&mut resp3, Protocol::Resp3));
        (resp2, resp3)
    }

    fn check(write: impl Fn(&mut ReplyWriter<'_>), resp2: &[u8], resp3: &[u8]) {
        let (got2, got3) = both(write);
        assert_eq!(got2, resp2, "RESP2 {:?}", String::from_utf8_lossy(&got2));
        assert_eq!(got3, resp3, "RESP3 {:?}", String::from_utf8_lossy(&got3));
    }

    #[test]
    #[allow(
        clippy::redundant_closure_for_method_calls,
        reason = "a method path is not generic over the writer's lifetime, the closure is"
    )]
    fn scalars() {
        check(|w| w.simple(b"OK"), b"+OK\r\n", b"+OK\r\n");
        check(
            |w| w.error(b"WRONGTYPE Operation against a key holding the wrong kind of value"),
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        );
        check(
            |w| w.error(b"ERR a\r\nb"),
            b"-ERR a  b\r\n",
            b"-ERR a  b\r\n",
        );
        check(|w| w.integer(0), b":0\r\n", b":0\r\n");
        check(
            |w| w.integer(i64::MIN),
            b":-9223372036854775808\r\n",
            b":-9223372036854775808\r\n",
        );
        check(|w| w.bulk(b""), b"$0\r\n\r\n", b"$0\r\n\r\n");
        check(
            |w| w.bulk(b"a\r\nb"),
            b"$4\r\na\r\nb\r\n",
            b"$4\r\na\r\nb\r\n",
        );
        check(|w| w.bulk_integer(-42), b"$3\r\n-42\r\n", b"$3\r\n-42\r\n");
        check(|w| w.null(), b"$-1\r\n", b"_\r\n");
        check(|w| w.null_array(), b"*-1\r\n", b"_\r\n");
        check(|w| w.boolean(true), b":1\r\n", b"#t\r\n");
        check(|w| w.boolean(false), b":0\r\n", b"#f\r\n");
        check(
            |w| w.big_number(b"12345678901234567890"),
            b"$20\r\n12345678901234567890\r\n",
            b"(12345678901234567890\r\n",
        );
        check(
            |w| w.verbatim(b"hello", *b"txt"),
            b"$5\r\nhello\r\n",
            b"=9\r\ntxt:hello\r\n",
        );
    }

    #[test]
    fn doubles() {
        check(|w| w.double(1.0), b"$1\r\n1\r\n", b",1\r\n");
        check(
            |w| w.double(0.1),
            b"$19\r\n0.10000000000000001\r\n",
            b",0.10000000000000001\r\n",
        );
        check(|w| w.double(1e22), b"$5\r\n1e+22\r\n", b",1e+22\r\n");
        check(|w| w.double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n");
        check(
            |w| w.double(f64::NEG_INFINITY),
            b"$4\r\n-inf\r\n",
            b",-inf\r\n",
        );
        check(|w| w.double(f64::NAN), b"$3\r\nnan\r\n", b",nan\r\n");
        check(|w| w.human_double(10.5), b"$4\r\n10.5\r\n", b",10.5\r\n");
        check(|w| w.human_double(-0.0), b"$1\r\n0\r\n", b",0\r\n");
    }

    #[test]
    fn aggregate_headers() {
        check(|w| w.array_len(0), b"*0\r\n", b"*0\r\n");
        check(|w| w.array_len(12345), b"*12345\r\n", b"*12345\r\n");
        check(|w| w.map_len(3), b"*6\r\n", b"%3\r\n");
        check(|w| w.set_len(2), b"*2\r\n", b"~2\r\n");
        check(|w| w.push_len(3), b"*3\r\n", b">3\r\n");
    }

    #[test]
    fn deferred_lengths_patch_in_place_or_splice() {
        check(
            |w| {
                w.simple(b"before");
                let d = w.deferred_array();
                w.integer(1);
                w.integer(2);
                w.set_deferred_len(d, 2);
            },
            b"+before\r\n*2\r\n:1\r\n:2\r\n",
            b"+before\r\n*2\r\n:1\r\n:2\r\n",
        );
        check(
            |w| {
                let d = w.deferred_array();
                for i in 0..12 {
                    w.integer(i);
                }
                w.set_deferred_len(d, 12);
            },
            b"*12\r\n:0\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n:7\r\n:8\r\n:9\r\n:10\r\n:11\r\n",
            b"*12\r\n:0\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n:7\r\n:8\r\n:9\r\n:10\r\n:11\r\n",
        );
        check(
            |w| {
                let d = w.deferred_map();
                w.bulk(b"k");
                w.integer(1);
                w.set_deferred_len(d, 1);
            },
            b"*2\r\n$1\r\nk\r\n:1\r\n",
            b"%1\r\n$1\r\nk\r\n:1\r\n",
        );
        check(
            |w| {
                let d = w.deferred_set();
                w.set_deferred_len(d, 0);
            },
            b"*0\r\n",
            b"~0\r\n",
        );
    }

    #[test]
    fn nested_deferred_lengths() {
        check(
            |w| {
                let outer = w.deferred_array();
                let inner = w.deferred_map();
                for i in 0..5 {
                    w.integer(i);
                    w.integer(i);
                }
                w.set_deferred_len(inner, 5);
                w.bulk(b"x");
                w.set_deferred_len(outer, 2);
            },
            b"*2\r\n*10\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:2\r\n:3\r\n:3\r\n:4\r\n:4\r\n$1\r\nx\r\n",
            b"*2\r\n%5\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:2\r\n:3\r\n:3\r\n:4\r\n:4\r\n$1\r\nx\r\n",
        );
    }
}
