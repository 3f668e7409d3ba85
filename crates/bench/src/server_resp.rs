//! A minimal RESP2 client for the server suite: encodes commands as multibulk arrays, reads
//! replies, and sends pipelined batches over one raw `TcpStream`.
//!
//! ```text
//! request  *3\r\n $3\r\nSET\r\n $16\r\nkey:000000000042\r\n $16\r\nAbCd...\r\n
//! replies  +OK\r\n   :5\r\n   $-1\r\n   $6\r\nfoobar\r\n   *2\r\n...   -ERR unknown command ...\r\n
//! ```
//!
//! We write our own instead of using the `redis` crate because the harness must see every reply
//! exactly as sent (an `-ERR unknown command` from a densekv that lacks a command is a result,
//! `n/a`, not an exception), must pipeline thousands of commands per write without a client-side
//! abstraction in the way, and must work against a server that speaks only part of the protocol.
//! The client never sends `HELLO`, so both servers answer in RESP2; the reader still accepts the
//! RESP3 null (`_`) in case a server defaults to RESP3. Every length read from the wire is
//! bounded ([`BULK_BYTES_MAX`], [`ARRAY_LEN_MAX`]) before anything is allocated for it.

use std::fmt;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The largest bulk reply the harness accepts (the largest value it ever stores is 16 bytes;
/// `INFO` is a few KiB). A longer length means the stream is out of sync.
pub const BULK_BYTES_MAX: usize = 64 * 1024 * 1024;
/// The largest array reply the harness accepts (`HMGET` of five fields is the largest it asks).
pub const ARRAY_LEN_MAX: usize = 1 << 20;

/// One RESP reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Simple(String),
    /// `-ERR ...`
    Error(String),
    /// `:42`
    Integer(i64),
    /// `$n` (`None` for `$-1` and the RESP3 `_`).
    Bulk(Option<Vec<u8>>),
    /// `*n` (`None` for `*-1`).
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// A bulk reply holding `bytes`.
    pub fn bulk(bytes: impl Into<Vec<u8>>) -> Self {
        Self::Bulk(Some(bytes.into()))
    }

    /// Whether this is the error a server gives for a command it does not implement.
    pub fn is_unknown_command(&self) -> bool {
        matches!(self, Self::Error(text) if text.starts_with("ERR unknown command"))
    }
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Simple(s) => write!(f, "+{s}"),
            Self::Error(s) => write!(f, "-{s}"),
            Self::Integer(n) => write!(f, ":{n}"),
            Self::Bulk(None) | Self::Array(None) => f.write_str("(nil)"),
            Self::Bulk(Some(b)) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            Self::Array(Some(items)) => {
                f.write_str("[")?;
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// Appends `args` to `out` as one RESP multibulk command.
pub fn encode<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        let arg = arg.as_ref();
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

fn protocol_error(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

/// Reads one line without its `\r\n`.
fn read_line(reader: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    let read = reader.read_until(b'\n', &mut line)?;
    if read == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "server closed the connection",
        ));
    }
    if !line.ends_with(b"\r\n") {
        return Err(protocol_error("reply line without CRLF"));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| protocol_error("reply line is not UTF-8"))
}

fn parse_len(text: &str, max: usize) -> io::Result<Option<usize>> {
    let len: i64 = text
        .parse()
        .map_err(|_| protocol_error(format!("bad length {text:?}")))?;
    match usize::try_from(len) {
        Ok(len) if len <= max => Ok(Some(len)),
        Ok(_) => Err(protocol_error(format!(
            "length {len} above the limit {max}"
        ))),
        Err(_) if len == -1 => Ok(None),
        Err(_) => Err(protocol_error(format!("negative length {len}"))),
    }
}

/// Reads one reply. Arrays nest by recursion, bounded in practice by what the harness asks for.
pub fn read_reply(reader: &mut impl BufRead) -> io::Result<Reply> {
    let line = read_line(reader)?;
    let (kind, rest) = line.split_at_checked(1).unwrap_or(("", ""));
    match kind {
        "+" => Ok(Reply::Simple(rest.to_owned())),
        "-" => Ok(Reply::Error(rest.to_owned())),
        ":" => rest
            .parse()
            .map(Reply::Integer)
            .map_err(|_| protocol_error(format!("bad integer {rest:?}"))),
        "_" => Ok(Reply::Bulk(None)),
        "$" => match parse_len(rest, BULK_BYTES_MAX)? {
            None => Ok(Reply::Bulk(None)),
            Some(len) => {
                let mut bytes = vec![0; len + 2];
                reader.read_exact(&mut bytes)?;
                if !bytes.ends_with(b"\r\n") {
                    return Err(protocol_error("bulk reply without CRLF"));
                }
                bytes.truncate(len);
                Ok(Reply::Bulk(Some(bytes)))
            }
        },
        "*" => match parse_len(rest, ARRAY_LEN_MAX)? {
            None => Ok(Reply::Array(None)),
            Some(len) => {
                let mut items = Vec::with_capacity(len.min(1024));
                for _ in 0..len {
                    items.push(read_reply(reader)?);
                }
                Ok(Reply::Array(Some(items)))
            }
        },
        _ => Err(protocol_error(format!("unexpected reply line {line:?}"))),
    }
}

/// One connection to a server.
#[derive(Debug)]
pub struct Connection {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
}

impl Connection {
    /// Connects to `127.0.0.1:port`. Reads time out after `timeout`, so a server that stops
    /// answering fails the measurement instead of hanging the suite.
    pub fn open(port: u16, timeout: Duration) -> io::Result<Self> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        Ok(Self {
            reader: BufReader::with_capacity(1 << 16, stream.try_clone()?),
            writer: BufWriter::with_capacity(1 << 16, stream),
        })
    }

    /// Sends one command and reads its reply.
    pub fn command<A: AsRef<[u8]>>(&mut self, args: &[A]) -> io::Result<Reply> {
        let mut out = Vec::new();
        encode(args, &mut out);
        self.writer.write_all(&out)?;
        self.writer.flush()?;
        read_reply(&mut self.reader)
    }

    /// Sends pre-encoded commands in one write and reads `count` replies. The replies the harness
    /// pipelines are small (a few bytes each), so writing a whole batch before reading cannot fill
    /// both socket buffers and deadlock.
    pub fn pipeline(&mut self, encoded: &[u8], count: usize) -> io::Result<Vec<Reply>> {
        self.writer.write_all(encoded)?;
        self.writer.flush()?;
        (0..count).map(|_| read_reply(&mut self.reader)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{Reply, encode, read_reply};

    fn parse(bytes: &[u8]) -> std::io::Result<Reply> {
        read_reply(&mut &bytes[..])
    }

    #[test]
    fn encodes_multibulk() {
        let mut out = Vec::new();
        encode(&["SET", "k", "vv"], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n");
    }

    #[test]
    fn reads_every_reply_kind() {
        assert_eq!(parse(b"+OK\r\n").unwrap(), Reply::Simple("OK".into()));
        assert_eq!(parse(b":-7\r\n").unwrap(), Reply::Integer(-7));
        assert_eq!(parse(b"$-1\r\n").unwrap(), Reply::Bulk(None));
        assert_eq!(parse(b"_\r\n").unwrap(), Reply::Bulk(None));
        assert_eq!(parse(b"$3\r\na\rb\r\n").unwrap(), Reply::bulk("a\rb"));
        assert_eq!(
            parse(b"*2\r\n$1\r\nx\r\n:1\r\n").unwrap(),
            Reply::Array(Some(vec![Reply::bulk("x"), Reply::Integer(1)]))
        );
        let unknown = parse(b"-ERR unknown command 'HSET', with args beginning with: \r\n");
        assert!(unknown.unwrap().is_unknown_command());
        assert!(!Reply::Error("ERR syntax error".into()).is_unknown_command());
    }

    #[test]
    fn rejects_broken_and_oversized_replies() {
        assert!(parse(b"").is_err());
        assert!(parse(b"+OK\n").is_err());
        assert!(parse(b"$5\r\nab\r\n").is_err());
        assert!(parse(b"$99999999999\r\n").is_err());
        assert!(parse(b"*-2\r\n").is_err());
        assert!(parse(b"?\r\n").is_err());
    }

    #[test]
    fn replies_display_for_error_messages() {
        let reply = Reply::Array(Some(vec![Reply::bulk("a"), Reply::Bulk(None)]));
        assert_eq!(reply.to_string(), "[\"a\", (nil)]");
    }
}
