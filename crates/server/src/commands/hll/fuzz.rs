//! [`fuzz_check`]: the body of the `hll_corrupt` fuzz target, kept in the crate so that the
//! stable test `tests/fuzz_hll.rs` replays it without nightly or libFuzzer. Its promise: no
//! string stored under a key, however corrupt, makes a HyperLogLog command crash, hang, loop,
//! allocate from a length it read, or answer anything but a count, OK, or Redis's errors.
//!
//! Input layout (every byte string decodes to something):
//!
//! ```text
//!  byte 0   bits 0-1  hll-sparse-max-bytes: 3000 · 0 · 40 · 100000
//!           bits 2-4  the command order: the session's list rotated by this much
//!           bits 5-7  elements PFADD adds: 1 + this many
//!  rest     the string stored at `h` (SET h <rest>)
//! ```
//!
//! One session per input, on one in-process [`Server`] shared by every input:
//!
//! ```text
//!  FLUSHALL, CONFIG SET hll-sparse-max-bytes, PFADD o a b c, SET h <rest>     → exact replies
//!  PFCOUNT h · PFCOUNT h o · PFADD h … · PFMERGE d h o · PFMERGE h o · PFCOUNT d ·
//!  PFDEBUG ENCODING|DECODE|GETREG|TODENSE h · GET h        (rotated; each reply checked)
//!  PING, SET, GET, PFADD, PFCOUNT on fresh keys                                → exact replies
//! ```
//!
//! Invariants asserted: every reply is exactly one well-formed RESP2 frame; a count is an
//! integer, a failure is `WRONGTYPE` or `INVALIDOBJ` (PFDEBUG may also say the encoding is not
//! sparse); PFDEBUG TODENSE that succeeded leaves a 12304-byte dense string; the server serves
//! the next command. The stored string's length bounds every walk (`sparse.rs`), and PFADD
//! grows a sparse string by at most 3 bytes per element, so memory is bounded by the input.

use crate::scripting::fuzz::{Conn, show};
use crate::server::Server;
use parking_lot::Mutex;
use std::sync::OnceLock;

/// hll-sparse-max-bytes values the mode byte picks from.
const MAX_BYTES: [&[u8]; 4] = [b"3000", b"0", b"40", b"100000"];

/// The server every input runs against, and the lock that runs one input at a time.
#[derive(Debug)]
struct Harness {
    server: Server,
    one_at_a_time: Mutex<()>,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        // No save points: FLUSHALL would otherwise write dump.rdb for every input.
        let config = crate::Config {
            save: Vec::new(),
            ..crate::Config::default()
        };
        Harness {
            server: Server::new(config).expect("a server with the default config"),
            one_at_a_time: Mutex::new(()),
        }
    })
}

/// The fuzz entry point: decodes `data` (see the module comment), runs its session, and panics
/// on any violated invariant.
pub fn fuzz_check(data: &[u8]) {
    let harness = harness();
    let _one = harness.one_at_a_time.lock();
    let mode = data.first().copied().unwrap_or(0);
    let value = data.get(1..).unwrap_or_default();
    let mut conn = Conn::new(&harness.server);
    conn.expect(&[b"FLUSHALL"], b"+OK\r\n");
    let max_bytes = MAX_BYTES[usize::from(mode & 3)];
    conn.expect(
        &[b"CONFIG", b"SET", b"hll-sparse-max-bytes", max_bytes],
        b"+OK\r\n",
    );
    conn.expect(&[b"PFADD", b"o", b"a", b"b", b"c"], b":1\r\n");
    conn.expect(&[b"SET", b"h", value], b"+OK\r\n");
    hostile(&mut conn, mode);
    check_alive(&mut conn);
}

/// The commands on the hostile string, in the order the mode byte rotates them to.
fn hostile(conn: &mut Conn<'_>, mode: u8) {
    let elements: Vec<Vec<u8>> = (0..=(mode >> 5))
        .map(|i| format!("e{i}").into_bytes())
        .collect();
    let mut pfadd: Vec<&[u8]> = vec![b"PFADD", b"h"];
    pfadd.extend(elements.iter().map(Vec::as_slice));
    let mut commands: Vec<&[&[u8]]> = vec![
        &[b"PFCOUNT", b"h"],
        &[b"PFCOUNT", b"h", b"o"],
        &pfadd,
        &[b"PFMERGE", b"d", b"h", b"o"],
        &[b"PFMERGE", b"h", b"o"],
        &[b"PFCOUNT", b"d"],
        &[b"PFDEBUG", b"ENCODING", b"h"],
        &[b"PFDEBUG", b"DECODE", b"h"],
        &[b"PFDEBUG", b"GETREG", b"h"],
        &[b"PFDEBUG", b"TODENSE", b"h"],
        &[b"PFCOUNT", b"h"],
    ];
    commands.rotate_left(usize::from((mode >> 2) & 7));
    for command in commands {
        conn.send(command);
        check_outcome(conn, command);
    }
    conn.send(&[b"GET", b"h"]);
}

/// The reply to `command` is one the command may give on a hostile string.
fn check_outcome(conn: &mut Conn<'_>, command: &[&[u8]]) {
    let reply = conn.out.clone();
    let allowed_error = reply.starts_with(b"-WRONGTYPE ")
        || reply == b"-INVALIDOBJ Corrupted HLL object detected\r\n"
        || reply == b"-ERR HLL encoding is not sparse\r\n";
    let kind = reply.first().copied();
    let ok = match command[0] {
        b"PFCOUNT" | b"PFADD" => kind == Some(b':') || allowed_error,
        b"PFMERGE" => reply == b"+OK\r\n" || allowed_error,
        _ => kind != Some(b'-') || allowed_error,
    };
    assert!(
        ok,
        "{}: unexpected reply {}",
        show(command),
        resp::inline::repr(&reply)
    );
    if command[1] == b"TODENSE" && kind == Some(b':') {
        conn.send(&[b"STRLEN", b"h"]);
        assert_eq!(conn.out, b":12304\r\n", "TODENSE left no dense string");
        conn.expect(&[b"PFDEBUG", b"ENCODING", b"h"], b"+dense\r\n");
    }
}

/// After every input: the server still stores, reads and counts.
fn check_alive(conn: &mut Conn<'_>) {
    conn.expect(&[b"PING"], b"+PONG\r\n");
    conn.expect(&[b"SET", b"fuzz:alive", b"yes"], b"+OK\r\n");
    conn.expect(&[b"GET", b"fuzz:alive"], b"$3\r\nyes\r\n");
    conn.expect(&[b"PFADD", b"fuzz:hll", b"x", b"y"], b":1\r\n");
    conn.expect(&[b"PFCOUNT", b"fuzz:hll"], b":2\r\n");
}
