//! One connection's turn in its thread's loop: write what is left, read, run every complete
//! request, and decide whether it must come back before the next event.
//!
//! ```text
//!  serve ─▶ flush leftover output ─▶ read once ─▶ process ─▶ (replies written by flush_replies
//!                                      │  0 bytes: EOF ─▶ close        at the end of the turn)
//!                                      └─ filled the space offered, or the peer has closed:
//!                                         serve again next turn (`more`)
//! ```
//! # Reading
//! The loop's sockets are edge-triggered: an event says "something arrived since the last
//! event", not "there is something to read". A read that returns less than the space it was
//! offered has drained the socket — whatever arrives later raises a new edge — so one read per
//! turn is enough, and a client keeping its pipeline full cannot keep the loop to itself (a
//! full read brings it back next turn, after the others). The exception is end of stream: when
//! a client's last bytes and its FIN arrive together, the short read that takes the bytes says
//! nothing of the FIN, and no new edge will come. So an event that reports the peer closed (or
//! the socket failed) marks the connection `peer_closed`, and such a connection is read again
//! every turn until the read returns 0 and it is closed. Before this, 200 clients that sent a
//! partial request and closed at once stayed in CLOSE-WAIT for ever.
//!
//! # Big arguments
//! The query buffer grows with the bytes that arrive, never from a client's announced length:
//! inside a bulk of ≥ 32 KiB the next read is offered at most as many bytes as the request has
//! already delivered (and the bulk still misses), so the buffer at most doubles per read and
//! the memory committed stays within twice what was received. A `$536870000` header followed by
//! 70 KB costs ~140 KB, not the 512 MB that a buffer zero-filled to the announced length took
//! (and the seconds the other clients waited while it was zeroed).
//!
//! # Output limits
//! `client-output-buffer-limit <class> <hard> <soft> <seconds>` is checked after every command,
//! every write and every piece of mail delivered (`deliver`), on the reply bytes beyond the
//! first 16 KiB — what Redis counts as `omem` (its reply list, beyond its 16 KiB static
//! buffer). The class is `pubsub` for a client with subscriptions, else `normal`. A client over
//! the hard limit, or over the soft limit for more than `<seconds>`, is closed at once with its
//! pending replies dropped, as Redis closes it "ASAP".

use super::buffers::{BUFFER_BYTES, Pools};
use crate::client::{ClientState, Input};
use crate::dispatch;
use crate::mail::Mail;
use crate::server::{ClientShared, Server, unix_ms};
use mio::net::TcpStream;
use resp::Request;
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Pending output at which a client's input stops being read until it drains.
pub(super) const OUTPUT_PAUSE_BYTES: usize = 64 << 20;
/// Commands parsed from one client before other clients get a turn.
const COMMANDS_PER_TURN: usize = 4096;

/// One client connection, owned by the thread that accepted it.
#[derive(Debug)]
pub(super) struct Conn {
    pub stream: TcpStream,
    pub input: Input,
    pub state: ClientState,
    /// Replies not yet written: `out[out_pos..]`. Empty with no capacity while idle.
    pub out: Vec<u8>,
    pub out_pos: usize,
    /// Not read while its pending output is at `OUTPUT_PAUSE_BYTES` (its TCP window stops it).
    pub read_paused: bool,
    /// An event reported the peer closed or the socket failed: read until a read returns 0.
    pub peer_closed: bool,
    /// When the pending output first went over the soft limit (cleared when back under it).
    pub soft_limit_since: Option<Instant>,
    /// The thread's last turn that listed this connection (so a turn lists it once).
    pub turn: u64,
}

impl Conn {
    pub fn new(stream: TcpStream, input: Input, state: ClientState) -> Conn {
        Conn {
            stream,
            input,
            state,
            out: Vec::new(),
            out_pos: 0,
            read_paused: false,
            peer_closed: false,
            soft_limit_since: None,
            turn: 0,
        }
    }

    pub(super) fn pending(&self) -> usize {
        self.out.len() - self.out_pos
    }
}

/// What a turn needs from the configuration, read once per turn rather than per command.
#[derive(Clone, Copy, Debug)]
pub(super) struct TurnConfig {
    requirepass: bool,
    query_limit_bytes: usize,
    /// `client-output-buffer-limit normal`: hard bytes, soft bytes, soft seconds (0: none).
    output_limit: (u64, u64, u64),
    /// `client-output-buffer-limit pubsub`: for clients with subscriptions.
    output_limit_pubsub: (u64, u64, u64),
}

impl TurnConfig {
    /// The output limit of `state`'s class: `pubsub` while it has subscriptions, else `normal`.
    fn limit(&self, state: &ClientState) -> (u64, u64, u64) {
        if state.subscribed() {
            self.output_limit_pubsub
        } else {
            self.output_limit
        }
    }

    pub(super) fn of(server: &Server) -> TurnConfig {
        let c = server.config.read();
        TurnConfig {
            requirepass: c.requirepass.is_some(),
            query_limit_bytes: c.client_query_buffer_limit as usize,
            output_limit: c.output_limit_normal,
            output_limit_pubsub: c.output_limit_pubsub,
        }
    }
}

/// Reads and runs for one connection, after sending output left from an earlier turn; the new
/// replies are sent by `flush_replies` once every ready connection has run. `Ok(true)`: serve it
/// again next turn without waiting for an event; `Err`: close it.
pub(super) fn serve(server: &Server, conn: &mut Conn, pools: &mut Pools) -> Result<bool, ()> {
    if conn.state.shared.killed.load(Ordering::Relaxed) {
        return Err(());
    }
    let turn = TurnConfig::of(server);
    flush(server, conn, pools, &turn)?;
    if conn.read_paused && conn.pending() < OUTPUT_PAUSE_BYTES / 2 {
        conn.read_paused = false;
    }
    let mut more = false;
    if !conn.read_paused
        && !conn.state.close_after_reply
        && let Some(full) = read(server, conn, pools, &turn)?
    {
        more = run(server, conn, pools, &turn)? || full || conn.peer_closed;
    }
    // A client that was blocked (BLPOP…) and has just been served resumes the requests it sent
    // meanwhile, without waiting for new input.
    if !more
        && !conn.read_paused
        && conn.input.filled > conn.input.pos
        && !conn.state.close_after_reply
    {
        more = run(server, conn, pools, &turn)?;
    }
    release_query(conn, pools);
    publish(conn);
    Ok(more)
}

/// The write half of a turn: sends what the connection's output holds; `Err`: close it (a
/// failed write, an output limit, or a reply-then-close command whose reply is out).
pub(super) fn flush_replies(server: &Server, conn: &mut Conn, pools: &mut Pools) -> Result<(), ()> {
    flush(server, conn, pools, &TurnConfig::of(server))?;
    publish(conn);
    if conn.state.close_after_reply && conn.out_pos == conn.out.len() {
        return Err(());
    }
    Ok(())
}

/// Runs the complete requests in the query buffer with a reply buffer lent for the turn;
/// `Ok(true)` when it stopped early with requests left, `Err` when the client must close now.
fn run(server: &Server, conn: &mut Conn, pools: &mut Pools, turn: &TurnConfig) -> Result<bool, ()> {
    if conn.out.capacity() == 0 {
        conn.out = pools.take_reply();
    }
    let more = process(server, conn, turn);
    if conn.state.close_now {
        // POST / Host:, an output limit — Redis drops even the replies already queued.
        return Err(());
    }
    if conn.pending() >= OUTPUT_PAUSE_BYTES {
        conn.read_paused = true;
    }
    Ok(more)
}

/// Reads once into the query buffer: `Some(filled the space offered)`, `None` when the socket
/// had nothing; `Err` at end of stream, on an error, or past `client-query-buffer-limit`.
fn read(
    server: &Server,
    conn: &mut Conn,
    pools: &mut Pools,
    turn: &TurnConfig,
) -> Result<Option<bool>, ()> {
    let input = &mut conn.input;
    if input.query.is_empty() {
        input.query = pools.take_query();
    }
    let want = read_size(input);
    let end = input.filled + want;
    if input.query.len() < end {
        // Zeroes only the span this read may fill (see "Big arguments").
        input.query.resize(end, 0);
    }
    let n = loop {
        match conn.stream.read(&mut input.query[input.filled..end]) {
            Ok(0) => return Err(()),
            Ok(n) => break n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    };
    input.filled += n;
    server
        .stats
        .net_input_bytes
        .fetch_add(n as u64, Ordering::Relaxed);
    let shared = &conn.state.shared;
    shared
        .last_interaction_ms
        .store(unix_ms(), Ordering::Relaxed);
    if input.filled - input.pos > turn.query_limit_bytes {
        crate::log::warning(&format!(
            "Closing client that reached max query buffer length: id={} addr={} (qbuf initial bytes: {:?})",
            shared.id,
            shared.addr,
            String::from_utf8_lossy(&input.query[input.pos..(input.pos + 64).min(input.filled)])
        ));
        return Err(());
    }
    Ok(Some(n == want))
}

/// How many bytes the next read is offered: a standard chunk, or inside a big bulk argument as
/// much as it misses but at most as much as the request has delivered so far.
fn read_size(input: &Input) -> usize {
    match input.parser.bulk_bytes_missing() {
        Some(missing) if missing >= resp::BIG_ARG_BYTES => {
            missing.min(BUFFER_BYTES.max(input.filled - input.pos))
        }
        _ => BUFFER_BYTES,
    }
}

/// Gives the query buffer back to the pool once nothing in it waits to be parsed.
fn release_query(conn: &mut Conn, pools: &mut Pools) {
    let input = &mut conn.input;
    if input.pos == input.filled && !input.parser.in_progress() && !input.query.is_empty() {
        input.pos = 0;
        input.filled = 0;
        pools.give_query(std::mem::take(&mut input.query));
    }
}

/// Tells other threads (CLIENT LIST, INFO) what this connection's buffers hold.
pub(super) fn publish(conn: &Conn) {
    let b = &conn.state.shared.buffers;
    let input = &conn.input;
    b.query_bytes
        .store(input.filled - input.pos, Ordering::Relaxed);
    b.query_free_bytes
        .store(input.query.len() - input.filled, Ordering::Relaxed);
    b.reply_bytes.store(conn.pending(), Ordering::Relaxed);
    b.reply_capacity_bytes
        .store(conn.out.capacity(), Ordering::Relaxed);
    b.total_bytes.store(
        std::mem::size_of::<Conn>()
            + std::mem::size_of::<ClientShared>()
            + input.query.capacity()
            + conn.out.capacity(),
        Ordering::Relaxed,
    );
}

/// Runs every complete request in the query buffer. Returns whether it stopped early (turn limit
/// or paused output) with requests left.
fn process(server: &Server, conn: &mut Conn, turn: &TurnConfig) -> bool {
    let Conn {
        input,
        state,
        out,
        out_pos,
        soft_limit_since,
        ..
    } = conn;
    let mut count = 0;
    let mut stopped_early = false;
    // One clock read per batch, as Redis caches its time per event-loop turn: TTLs are in ms and
    // a batch runs in microseconds.
    let now_ms = unix_ms();
    // Start of the next command's time (`command::run`): one clock read per command.
    let mut mark = crate::clock::now();
    // End of the requests whose keys have been prefetched (`prefetch_ahead`).
    let mut ahead = input.pos;
    while input.pos < input.filled
        && !state.close_after_reply
        && !state.close_now
        && state.blocked.is_none()
        && !state.postponed
    {
        if count == COMMANDS_PER_TURN || out.len() - *out_pos >= OUTPUT_PAUSE_BYTES {
            stopped_early = true;
            break;
        }
        if input.pos >= ahead {
            let pending = &input.query[input.pos..input.filled];
            ahead = input.pos + super::prefetch::prefetch_ahead(server, state.db, pending);
        }
        input
            .parser
            .set_auth_required(turn.requirepass && !state.authenticated);
        let request = match input.parser.parse(&input.query[input.pos..input.filled]) {
            Ok(Some(request)) => request,
            Ok(None) => break,
            Err(e) => {
                protocol_error(server, state, out, e);
                break;
            }
        };
        match request {
            Request::Empty { consumed } => input.pos += consumed,
            Request::CrossProtocolAttack { .. } => {
                cross_protocol_attack(state);
                break;
            }
            Request::Command(command) => {
                let consumed = command.consumed();
                let args: smallvec::SmallVec<[&[u8]; 8]> = command.args().collect();
                if !dispatch::dispatch(server, state, out, &args, now_ms, &mut mark) {
                    // Postponed by CLIENT PAUSE: the request is parsed again when retried.
                    drop(args);
                    input.parser.reset();
                    break;
                }
                crate::tracking::after_command(server, state, out, args[0]);
                input.pos += consumed;
                count += 1;
                if server.ready_pending.load(Ordering::Relaxed) {
                    crate::blocking::serve_ready(server, now_ms);
                    mark = crate::clock::now();
                }
                if over_output_limit(out.len() - *out_pos, soft_limit_since, turn.limit(state)) {
                    state.close_now = true;
                }
            }
        }
    }
    compact(input);
    stopped_early
}

/// `POST` or `Host:` as a command: logged and closed at once, as Redis's
/// `securityWarningCommand`.
fn cross_protocol_attack(state: &mut ClientState) {
    crate::log::warning(
        "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands to Redis. This is likely due to an attacker attempting to use Cross Protocol Scripting to compromise your Redis instance. Connection aborted.",
    );
    state.close_now = true;
}

/// A malformed request: Redis's error reply, then the connection closes once it is written.
fn protocol_error(
    server: &Server,
    state: &mut ClientState,
    out: &mut Vec<u8>,
    error: resp::ProtocolError,
) {
    error.write_reply(out);
    server.count_error(b"ERR");
    crate::log::verbose(&format!(
        "Protocol error from client id={}",
        state.shared.id
    ));
    state.close_after_reply = true;
}

/// Moves the unconsumed bytes to the front of the query buffer once at least half of it is
/// consumed; the parser's offsets are relative to `pos`, so they stay valid.
fn compact(input: &mut Input) {
    if input.pos > 0 && (input.pos == input.filled || input.pos > input.filled / 2) {
        input.query.copy_within(input.pos..input.filled, 0);
        input.filled -= input.pos;
        input.pos = 0;
        if input.query.len() > (4 << 20) && input.filled < (1 << 20) {
            input.query.truncate((64 << 10).max(input.filled));
            input.query.shrink_to_fit();
        }
    }
}

/// Whether `pending` reply bytes break the `normal` class's output limit, tracking when the
/// soft limit was first passed (Redis's `checkClientOutputBufferLimits`: the soft limit closes
/// once it has been exceeded for more than its seconds).
fn over_output_limit(pending: usize, since: &mut Option<Instant>, limit: (u64, u64, u64)) -> bool {
    let (hard, soft, secs) = limit;
    if hard == 0 && soft == 0 {
        return false;
    }
    // Redis's `omem`: the reply bytes beyond its 16 KiB static buffer.
    let omem = pending.saturating_sub(BUFFER_BYTES) as u64;
    let over = if hard > 0 && omem >= hard {
        true
    } else if soft > 0 && omem >= soft {
        let first = *since.get_or_insert_with(Instant::now);
        first.elapsed().as_secs() > secs
    } else {
        *since = None;
        false
    };
    if over {
        crate::log::warning(
            "Client scheduled to be closed ASAP for overcoming of output buffer limits.",
        );
    }
    over
}

/// Writes what the socket takes; once everything is out, the reply buffer goes back to the
/// pool. `Err`: the write failed or the client broke its output limit.
fn flush(server: &Server, conn: &mut Conn, pools: &mut Pools, turn: &TurnConfig) -> Result<(), ()> {
    while conn.out_pos < conn.out.len() {
        match conn.stream.write(&conn.out[conn.out_pos..]) {
            Ok(0) => return Err(()),
            Ok(n) => {
                conn.out_pos += n;
                server
                    .stats
                    .net_output_bytes
                    .fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    }
    if conn.out_pos == conn.out.len() {
        conn.out_pos = 0;
        conn.soft_limit_since = None;
        if conn.out.capacity() > 0 {
            pools.give_reply(std::mem::take(&mut conn.out));
        }
        return Ok(());
    }
    check_output_limit(conn, turn)
}

/// Appends mail from another command to the connection's output (`mail.rs`). `Err`: close it —
/// a kill, or a subscriber whose pending output broke the `pubsub` limit (a slow subscriber is
/// disconnected rather than allowed to grow the server, as Redis does).
pub(super) fn deliver(conn: &mut Conn, mail: Mail, turn: &TurnConfig) -> Result<(), ()> {
    // No pooled 16 KiB buffer for mail: a fan-out to a thousand idle subscribers would take a
    // thousand of them (the pool keeps 64; the rest were allocated and freed per message),
    // where each needs room for one frame. Appending sizes the buffer to what it holds.
    match mail {
        Mail::Kill => return Err(()),
        Mail::Reply(reply) => {
            conn.out.extend_from_slice(&reply);
            conn.state.blocked = None;
        }
        Mail::Message(message) => {
            if conn
                .state
                .subs
                .as_ref()
                .is_some_and(|s| s.receives(&message))
            {
                conn.out
                    .extend_from_slice(message.frame(conn.state.protocol));
            }
        }
        Mail::Raw(bytes) => conn.out.extend_from_slice(&bytes),
        Mail::Invalidate(message) => crate::tracking::encode(
            &mut conn.out,
            conn.state.protocol,
            conn.state.subscribed(),
            &message,
        ),
    }
    check_output_limit(conn, turn)
}

/// `Err` when the connection's pending output breaks its class's output limit.
fn check_output_limit(conn: &mut Conn, turn: &TurnConfig) -> Result<(), ()> {
    let limit = turn.limit(&conn.state);
    if over_output_limit(conn.pending(), &mut conn.soft_limit_since, limit) {
        return Err(());
    }
    Ok(())
}

/// At shutdown: sends what the socket takes without waiting.
pub(super) fn flush_at_exit(server: &Server, conn: &mut Conn, pools: &mut Pools) {
    let _ = flush(server, conn, pools, &TurnConfig::of(server));
}
