//! The network loop: `io-threads` threads, each polling a clone of the listening socket (they share
//! its accept queue; whichever thread accepts owns the connection) in its own mio event loop, from
//! accept to close. The port is bound without `SO_REUSEPORT`, as Redis binds it, so a second
//! server on the same port fails to start instead of silently sharing it.
//!
//! ```text
//!  readable ─▶ read ≤ 16 KiB ─▶ parse every complete request ─▶ dispatch (lock shards, run,
//!      ▲                                                            reply into the output buffer)
//!      └──── until the socket would block, or the output holds ≥ OUTPUT_PAUSE_BYTES ──┐
//!  writable ─▶ write the output buffer ─▶ resume reading if it was paused ◀──────────────┘
//! ```
//! One turn of the loop reads and runs every ready connection, then writes all their replies
//! (Redis's beforeSleep), so a client process is woken once per turn rather than once per
//! connection.
//! Back-pressure instead of unbounded buffers: a client that sends commands but never reads their
//! replies stops being read once its pending output reaches `OUTPUT_PAUSE_BYTES` (its own TCP
//! window then stops it), so it cannot grow the server's memory; a configured
//! `client-output-buffer-limit normal <hard> <soft> <secs>` disconnects it as Redis does.
//! Big arguments: when the parser is inside a bulk of ≥ 32 KiB, the query buffer grows once to
//! hold it whole, so receiving a 100 MB value costs no quadratic copying.
//!
//! Busy polling: after a turn that had work, a thread polls without sleeping for up to
//! `busy-poll-us` (default 100 µs) before it blocks in `epoll_wait`. Under load the next request
//! nearly always arrives within that window, and a thread that is not asleep needs no wake-up.
//! On loopback the wake-up (scheduler work and an IPI) is charged to the *client's* `send`, so
//! the faster the server answered, the more often it slept and the slower redis-benchmark ran
//! at `-P 1`: without polling densekv served LRANGE_100 at 75k rps against redis-server's 90k
//! while using a fifth less CPU per request; with a 20 µs window, 91k. The window is 100 µs
//! because redis-benchmark sends its requests in bursts, one per reply it has parsed: behind
//! LRANGE_500 (a 4.5 KB reply the client takes ~30 µs to parse) the gaps between bursts outlast
//! 20 µs, and the 20 µs server trailed redis-server (median 0.68× over 5 rounds) where the
//! 100 µs one did not (1.01×); redis-benchmark's CPU per SET fell by a tenth
//! (`scripts/busy_poll_ab.sh`). A spin that ends with nothing skips the next 1, 2, 4 … 64
//! spins, so a trickle of requests costs at most one spin per 64 waits; an idle server sleeps
//! as before. The price is CPU under steady moderate load: requests that come faster than the
//! window keep one core busy.
//!
//! Every `1000 / hz` ms each thread runs its cron: active expiry on the shards it owns
//! (`shard % threads == thread`), bounded to 25% of the period like Redis's slow expire cycle, and
//! the idle-client `timeout`.

use crate::client::{ClientState, Input};
use crate::dispatch;
use crate::server::{ClientInfo, ClientShared, Server, unix_ms};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use resp::{Limits, Parser, Request};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const WAKER: Token = Token(usize::MAX);
const FIRST_LISTENER: usize = usize::MAX - 64;
/// Redis reads 16 KiB at a time (PROTO_IOBUF_LEN); its "too big" request checks depend on it.
const READ_CHUNK_BYTES: usize = 16 << 10;
/// Pending output at which a client's input stops being read until it drains.
const OUTPUT_PAUSE_BYTES: usize = 64 << 20;
/// Commands parsed from one client before other clients get a turn.
const COMMANDS_PER_TURN: usize = 4096;
/// Most waits a failed busy poll makes the next ones skip (doubling from 1).
const SPIN_BACKOFF_MAX: u32 = 64;

/// Set by SIGTERM/SIGINT; every loop polls it.
pub static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, Ordering::Relaxed);
}

/// Routes SIGTERM and SIGINT to a graceful shutdown and ignores SIGPIPE.
pub fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe; ignoring SIGPIPE
    // turns writes to closed sockets into EPIPE errors, which the loop handles.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

struct Conn {
    stream: TcpStream,
    input: Input,
    state: ClientState,
    out: Vec<u8>,
    out_pos: usize,
    read_paused: bool,
    soft_limit_since: Option<Instant>,
}

/// Binds one listening socket per (address, thread) on the configured port.
pub fn bind(server: &Server, threads: usize) -> io::Result<Vec<Vec<std::net::TcpListener>>> {
    let config = server.config.read().clone();
    let mut per_thread: Vec<Vec<std::net::TcpListener>> =
        (0..threads).map(|_| Vec::new()).collect();
    let mut port = config.port;
    for address in &config.bind {
        let (optional, host) = match address.strip_prefix('-') {
            Some(host) => (true, host),
            None => (false, address.as_str()),
        };
        let host = if host == "*" { "0.0.0.0" } else { host };
        let ip: std::net::IpAddr = match host.parse() {
            Ok(ip) => ip,
            Err(_) if optional => continue,
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("invalid bind address '{host}'"),
                ));
            }
        };
        let listener = match listen(SocketAddr::new(ip, port), config.tcp_backlog) {
            Ok(l) => l,
            Err(_) if optional => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("Could not create server TCP listening socket {host}:{port}: {e}"),
                ));
            }
        };
        port = listener.local_addr()?.port();
        // Every thread polls a clone of the one socket: they share its accept queue, and no other
        // process can bind the port beside us (SO_REUSEPORT would let one, silently).
        for list in per_thread.iter_mut().skip(1) {
            list.push(listener.try_clone()?);
        }
        per_thread[0].push(listener);
    }
    if per_thread[0].is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            "Failed listening on every bind address",
        ));
    }
    server.port.store(port as usize, Ordering::Relaxed);
    Ok(per_thread)
}

fn listen(addr: SocketAddr, backlog: u32) -> io::Result<std::net::TcpListener> {
    let domain = if addr.is_ipv6() {
        socket2::Domain::IPV6
    } else {
        socket2::Domain::IPV4
    };
    let socket = socket2::Socket::new(domain, socket2::Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog.min(i32::MAX as u32) as i32)?;
    Ok(socket.into())
}

/// Runs I/O thread `index` until shutdown.
pub fn run_thread(
    server: &Arc<Server>,
    index: usize,
    threads: usize,
    listeners: Vec<std::net::TcpListener>,
    mut poll: Poll,
) -> io::Result<()> {
    crate::hot_stats::claim_slot(index);
    let listeners = register_listeners(&poll, listeners)?;
    let mut conns: HashMap<usize, Conn> = HashMap::new();
    let mut next_token = 0usize;
    let mut events = Events::with_capacity(1024);
    let mut next_cron = Instant::now();
    let mut ready: Vec<usize> = Vec::new();
    let mut spin = Spin::default();
    loop {
        if shutting_down(server) {
            break;
        }
        let (period, busy_poll) = loop_periods(server);
        let worked = !events.is_empty();
        let timeout = if ready.is_empty() {
            idle_wait(server, &conns, next_cron)
        } else {
            Duration::ZERO
        };
        let spun = worked
            && !timeout.is_zero()
            && spin.poll(&mut poll, &mut events, busy_poll.min(timeout))?;
        if !spun {
            match poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        let mut touched: Vec<usize> = std::mem::take(&mut ready);
        for event in &events {
            match event.token() {
                // Kills are found by this sweep; shutdown by the check at the top.
                WAKER => close_killed(server, &mut poll, &mut conns),
                Token(t) if t >= FIRST_LISTENER => {
                    let listener = &listeners[t - FIRST_LISTENER];
                    accept_all(server, &poll, listener, index, &mut conns, &mut next_token);
                }
                Token(t) => touched.push(t),
            }
        }
        unblock(server, index, &mut conns, &mut touched);
        touched.sort_unstable();
        touched.dedup();
        for &token in &touched {
            let Some(conn) = conns.get_mut(&token) else {
                continue;
            };
            match serve(server, conn) {
                Ok(true) => ready.push(token),
                Ok(false) => {}
                Err(()) => close(server, &mut poll, &mut conns, token),
            }
        }
        // Replies go out once every ready connection has run, as Redis writes them in
        // beforeSleep: a client woken by its first reply finds the others already waiting. A
        // write per connection as soon as it ran woke the client once per connection; the
        // wake-ups (an IPI each on this VM) cost as much server CPU as the inserts themselves.
        for token in touched {
            let Some(conn) = conns.get_mut(&token) else {
                continue;
            };
            if flush_replies(server, conn).is_err() {
                close(server, &mut poll, &mut conns, token);
            }
        }
        if Instant::now() >= next_cron {
            cron(server, index, threads, &mut poll, &mut conns);
            next_cron = Instant::now() + period;
        }
    }
    close_all(server, &mut poll, &mut conns);
    Ok(())
}

/// Registers the thread's listening sockets with its poll, each under its own token.
fn register_listeners(
    poll: &Poll,
    listeners: Vec<std::net::TcpListener>,
) -> io::Result<Vec<TcpListener>> {
    let mut listeners: Vec<TcpListener> =
        listeners.into_iter().map(TcpListener::from_std).collect();
    for (i, l) in listeners.iter_mut().enumerate() {
        poll.registry()
            .register(l, Token(FIRST_LISTENER + i), Interest::READABLE)?;
    }
    Ok(listeners)
}

/// Whether the server is to stop: by SHUTDOWN, or by a signal, which this turns into one.
fn shutting_down(server: &Server) -> bool {
    if SIGNALLED.load(Ordering::Relaxed) {
        server.shutdown.store(true, Ordering::Relaxed);
    }
    server.shutdown.load(Ordering::Relaxed)
}

/// The cron period (`hz`) and the busy-poll window, as configured now.
fn loop_periods(server: &Server) -> (Duration, Duration) {
    let c = server.config.read();
    (
        Duration::from_millis(1000 / u64::from(c.hz.max(1))),
        Duration::from_micros(c.busy_poll_us),
    )
}

/// How long a thread with nothing ready may wait for events: until the next cron (at most
/// 100 ms) or the earliest timeout of a client blocked on this thread.
fn idle_wait(server: &Server, conns: &HashMap<usize, Conn>, next_cron: Instant) -> Duration {
    let mut wait = next_cron
        .saturating_duration_since(Instant::now())
        .min(Duration::from_millis(100));
    if let Some(deadline) = next_block_deadline(server, conns) {
        wait = wait.min(Duration::from_millis(deadline.saturating_sub(unix_ms())));
    }
    wait
}

/// Closes the connections that CLIENT KILL marked killed.
fn close_killed(server: &Server, poll: &mut Poll, conns: &mut HashMap<usize, Conn>) {
    let killed: Vec<usize> = conns
        .iter()
        .filter(|(_, c)| c.state.shared.killed.load(Ordering::Relaxed))
        .map(|(&t, _)| t)
        .collect();
    for token in killed {
        close(server, poll, conns, token);
    }
}

/// At shutdown: sends each connection what output it can without waiting, then closes it.
fn close_all(server: &Server, poll: &mut Poll, conns: &mut HashMap<usize, Conn>) {
    let tokens: Vec<usize> = conns.keys().copied().collect();
    for token in tokens {
        if let Some(conn) = conns.get_mut(&token) {
            let _ = flush(server, conn);
        }
        close(server, poll, conns, token);
    }
}

/// The busy-poll state of one thread (see the module doc).
#[derive(Debug, Default)]
struct Spin {
    /// Waits left that block without spinning.
    skip: u32,
    /// What the next failed spin sets `skip` to, doubled by each failure, reset by a success.
    backoff: u32,
}

impl Spin {
    /// Polls without sleeping for up to `budget`: true once events came, false when the budget
    /// ran out or this wait is one the backoff skips (the caller then blocks).
    fn poll(&mut self, poll: &mut Poll, events: &mut Events, budget: Duration) -> io::Result<bool> {
        if budget.is_zero() {
            return Ok(false);
        }
        if self.skip > 0 {
            self.skip -= 1;
            return Ok(false);
        }
        let end = Instant::now() + budget;
        loop {
            match poll.poll(events, Some(Duration::ZERO)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            if !events.is_empty() {
                self.backoff = 1;
                return Ok(true);
            }
            if Instant::now() >= end {
                self.skip = self.backoff.max(1);
                self.backoff = (self.skip * 2).min(SPIN_BACKOFF_MAX);
                return Ok(false);
            }
            std::hint::spin_loop();
        }
    }
}

fn accept_all(
    server: &Arc<Server>,
    poll: &Poll,
    listener: &TcpListener,
    thread: usize,
    conns: &mut HashMap<usize, Conn>,
    next_token: &mut usize,
) {
    loop {
        let (mut stream, peer) = match listener.accept() {
            Ok(pair) => pair,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(_) => return,
        };
        server
            .stats
            .connections_received
            .fetch_add(1, Ordering::Relaxed);
        let Some((authenticated, limits)) = admit(server, &mut stream, peer) else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = client_shared(server, &stream, peer, thread);
        let token = *next_token;
        *next_token += 1;
        if poll
            .registry()
            .register(
                &mut stream,
                Token(token),
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
        {
            continue;
        }
        server.clients.lock().insert(shared.id, Arc::clone(&shared));
        server.connected.fetch_add(1, Ordering::Relaxed);
        conns.insert(
            token,
            Conn {
                stream,
                input: Input {
                    query: Vec::new(),
                    filled: 0,
                    pos: 0,
                    parser: Parser::new(limits),
                },
                state: ClientState::new(shared, authenticated),
                out: Vec::with_capacity(16 << 10),
                out_pos: 0,
                read_paused: false,
                soft_limit_since: None,
            },
        );
    }
}

/// Decides whether a new connection is served: `None` (after telling it why) when `maxclients`
/// is reached or protected mode refuses its address; else whether it starts authenticated, and
/// its parser's limits.
fn admit(server: &Server, stream: &mut TcpStream, peer: SocketAddr) -> Option<(bool, Limits)> {
    let config = server.config.read();
    if server.connected.load(Ordering::Relaxed) >= config.maxclients {
        server
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        let _ = stream.write(b"-ERR max number of clients reached\r\n");
        return None;
    }
    if config.protected_mode && config.requirepass.is_none() && !peer.ip().is_loopback() {
        let _ = stream.write(DENIED);
        return None;
    }
    let authenticated = config.requirepass.is_none();
    let limits = Limits {
        proto_max_bulk_len: config.proto_max_bulk_len,
        auth_required: !authenticated,
    };
    Some((authenticated, limits))
}

/// The state of a new client that other threads see (CLIENT LIST, KILL, blocking), with its id.
fn client_shared(
    server: &Server,
    stream: &TcpStream,
    peer: SocketAddr,
    thread: usize,
) -> Arc<ClientShared> {
    let id = server.next_client_id();
    Arc::new(ClientShared {
        id,
        addr: peer.to_string(),
        laddr: stream
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default(),
        fd: stream.as_raw_fd(),
        thread,
        created: Instant::now(),
        info: parking_lot::Mutex::new(ClientInfo {
            resp: 2,
            multi: -1,
            ..ClientInfo::default()
        }),
        killed: AtomicBool::new(false),
        watch_dirty: AtomicBool::new(false),
        last_interaction_ms: std::sync::atomic::AtomicU64::new(unix_ms()),
        last_cmd: std::sync::atomic::AtomicUsize::new(0),
    })
}

/// The earliest deadline of this thread's blocked clients, if any is blocked anywhere.
fn next_block_deadline(server: &Server, conns: &HashMap<usize, Conn>) -> Option<u64> {
    if server.blocked_clients.load(Ordering::Relaxed) == 0 {
        return None;
    }
    conns.values().filter_map(|c| c.state.blocked).min()
}

/// Resumes blocked clients of this thread: those another command served (their replies wait in
/// the thread's inbox) and those whose timeout passed (null reply).
fn unblock(
    server: &Server,
    thread: usize,
    conns: &mut HashMap<usize, Conn>,
    touched: &mut Vec<usize>,
) {
    let mail = {
        let mut inbox = server.inboxes[thread].lock();
        if inbox.is_empty() {
            Vec::new()
        } else {
            std::mem::take(&mut *inbox)
        }
    };
    for (id, reply) in mail {
        if let Some((&token, conn)) = conns.iter_mut().find(|(_, c)| c.state.shared.id == id) {
            conn.out.extend_from_slice(&reply);
            conn.state.blocked = None;
            touched.push(token);
        }
    }
    if server.blocked_clients.load(Ordering::Relaxed) == 0 {
        return;
    }
    let now = unix_ms();
    for (&token, conn) in conns.iter_mut() {
        if conn.state.blocked.is_some_and(|deadline| deadline <= now)
            && crate::blocking::time_out(server, conn.state.shared.id)
        {
            crate::blocking::timeout_reply(&mut conn.out, conn.state.protocol);
            conn.state.blocked = None;
            touched.push(token);
        }
    }
}

fn close(server: &Server, poll: &mut Poll, conns: &mut HashMap<usize, Conn>, token: usize) {
    if let Some(mut conn) = conns.remove(&token) {
        if conn.state.blocked.is_some() {
            crate::blocking::forget(server, conn.state.shared.id);
        }
        let _ = poll.registry().deregister(&mut conn.stream);
        let watched = std::mem::take(&mut conn.state.watched);
        server.unwatch(&conn.state.shared, &watched);
        server.clients.lock().remove(&conn.state.shared.id);
        server.connected.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Reads and runs for one connection, after sending output left from an earlier turn; the new
/// replies are sent by `flush_replies` once every ready connection has run. `Ok(true)`: more
/// input may be waiting (run again without waiting for an event); `Err`: close it.
fn serve(server: &Server, conn: &mut Conn) -> Result<bool, ()> {
    if conn.state.shared.killed.load(Ordering::Relaxed) {
        return Err(());
    }
    flush(server, conn)?;
    if conn.read_paused && conn.out.len() - conn.out_pos < OUTPUT_PAUSE_BYTES / 2 {
        conn.read_paused = false;
    }
    let mut more = false;
    // One read per turn, as Redis does: a client that keeps its pipeline full must not keep the
    // loop to itself. A read that filled its buffer may have left bytes in the socket, which no
    // new edge will announce, so the client is served again next turn (`more`).
    if !conn.read_paused && !conn.state.close_after_reply {
        let full = loop {
            match read_chunk(server, conn) {
                Ok((0, _)) => return Err(()),
                Ok((_, full)) => break Some(full),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(()),
            }
        };
        if let Some(full) = full {
            more = process(server, conn);
            if conn.state.close_now {
                // POST / Host: — Redis drops even the replies already queued, and closes.
                return Err(());
            }
            if conn.out.len() - conn.out_pos >= OUTPUT_PAUSE_BYTES {
                conn.read_paused = true;
            }
            more |= full;
        }
    }
    if !more
        && !conn.read_paused
        && conn.input.filled > conn.input.pos
        && !conn.state.close_after_reply
    {
        more = process(server, conn);
    }
    if conn.state.close_now {
        return Err(());
    }
    Ok(more)
}

/// The write half of a turn: sends what the connection's output holds; `Err`: close it (a
/// failed write, an output limit, or a reply-then-close command whose reply is out).
fn flush_replies(server: &Server, conn: &mut Conn) -> Result<(), ()> {
    flush(server, conn)?;
    if conn.state.close_after_reply && conn.out_pos == conn.out.len() {
        return Err(());
    }
    Ok(())
}

/// Reads once into the query buffer: the bytes read, and whether they filled the space offered.
fn read_chunk(server: &Server, conn: &mut Conn) -> io::Result<(usize, bool)> {
    let input = &mut conn.input;
    let want = match input.parser.bulk_bytes_missing() {
        Some(missing) if missing >= resp::BIG_ARG_BYTES => missing,
        _ => READ_CHUNK_BYTES,
    };
    let end = input.filled + want;
    if input.query.len() < end {
        // Zeroed once, when the buffer grows; later reads reuse it as it is.
        input.query.resize(end, 0);
    }
    let result = conn.stream.read(&mut input.query[input.filled..end]);
    let n = *result.as_ref().unwrap_or(&0);
    input.filled += n;
    if n > 0 {
        server
            .stats
            .net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
        let limit = server.config.read().client_query_buffer_limit as usize;
        if input.filled - input.pos > limit {
            crate::log::warning("Closing client that reached max query buffer length");
            return Err(io::Error::other("query buffer limit"));
        }
    }
    result.map(|n| (n, n == want))
}

/// Runs every complete request in the query buffer. Returns whether it stopped early (turn limit
/// or paused output) with requests left.
fn process(server: &Server, conn: &mut Conn) -> bool {
    let Conn {
        input, state, out, ..
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
    {
        if count == COMMANDS_PER_TURN || out.len() >= OUTPUT_PAUSE_BYTES {
            stopped_early = true;
            break;
        }
        if input.pos >= ahead {
            ahead =
                input.pos + prefetch_ahead(server, state.db, &input.query[input.pos..input.filled]);
        }
        let auth_required = !state.authenticated && server.config.read().requirepass.is_some();
        input.parser.set_auth_required(auth_required);
        let request = match input.parser.parse(&input.query[input.pos..input.filled]) {
            Ok(Some(request)) => request,
            Ok(None) => break,
            Err(e) => {
                e.write_reply(out);
                server.count_error(b"ERR");
                crate::log::verbose(&format!(
                    "Protocol error from client id={}",
                    state.shared.id
                ));
                state.close_after_reply = true;
                break;
            }
        };
        match request {
            Request::Empty { consumed } => input.pos += consumed,
            Request::CrossProtocolAttack { .. } => {
                crate::log::warning(
                    "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands to Redis. This is likely due to an attacker attempting to use Cross Protocol Scripting to compromise your Redis instance. Connection aborted.",
                );
                state.close_now = true;
                break;
            }
            Request::Command(command) => {
                let consumed = command.consumed();
                let args: smallvec::SmallVec<[&[u8]; 8]> = command.args().collect();
                dispatch::dispatch(server, state, out, &args, now_ms, &mut mark);
                input.pos += consumed;
                count += 1;
                if server.ready_pending.load(Ordering::Relaxed) {
                    crate::blocking::serve_ready(server, now_ms);
                    mark = crate::clock::now();
                }
            }
        }
    }
    if input.pos > 0 && (input.pos == input.filled || input.pos > input.filled / 2) {
        // Move only the unconsumed bytes to the front; the parser's offsets are relative to
        // `pos`, so they stay valid.
        input.query.copy_within(input.pos..input.filled, 0);
        input.filled -= input.pos;
        input.pos = 0;
        if input.query.len() > (4 << 20) && input.filled < (1 << 20) {
            input.query.truncate((64 << 10).max(input.filled));
            input.query.shrink_to_fit();
        }
    }
    stopped_early
}

/// Requests read ahead per batch: a `-P 16` pipeline is one batch.
const PREFETCH_BATCH: usize = 16;

/// Keys prefetched per batch at most.
const PREFETCH_KEYS_MAX: usize = 64;

/// A key `prefetch_ahead` found: (shard, key, member or field).
type Ahead<'b> = (usize, &'b [u8], Option<&'b [u8]>);

/// Starts loading the keyspace entries of the next few complete requests in `buf` (their keys,
/// from the command table's key specs), so that a pipelined batch waits for memory once rather
/// than once per request: every key's directory word, then every page's index, then every run
/// (`Shard::prefetch`); then the same for the member or field of set, hash and sorted-set
/// commands in their collection's map (`command::member_arg`). Only a hint: a shard that is
/// busy is skipped. Returns the bytes of the requests covered; a lone key is not prefetched
/// (nothing to overlap it with).
fn prefetch_ahead(server: &Server, db: usize, buf: &[u8]) -> usize {
    let mut batch: smallvec::SmallVec<[Ahead<'_>; PREFETCH_BATCH]> = smallvec::SmallVec::new();
    let mut spans: smallvec::SmallVec<[std::ops::Range<usize>; 24]> = smallvec::SmallVec::new();
    let (mut at, mut requests) = (0, 0);
    let mut last_spec: Option<(&[u8], &crate::command::Spec)> = None;
    while requests < PREFETCH_BATCH && batch.len() < PREFETCH_KEYS_MAX {
        spans.clear();
        let Some(peeked) = resp::peek::peek_multibulk(&buf[at..], |_, span| spans.push(span))
        else {
            break;
        };
        let arg = |i: usize| spans.get(i).map(|r| &buf[at + r.start..at + r.end]);
        if let (Some(name), Some(key)) = (arg(0), arg(1)) {
            // A pipeline mostly repeats one command: its spec is looked up once per run.
            let spec = match last_spec {
                Some((last, spec)) if last.eq_ignore_ascii_case(name) => Some(spec),
                _ => crate::command::lookup(name).map(|(_, spec)| spec),
            };
            last_spec = spec.map(|spec| (name, spec));
            let member = spec.and_then(crate::command::member_arg).and_then(arg);
            batch.push((server.shard_of(key), key, member));
            // Multi-key commands (MSET, MGET, DEL…): the rest of their keys, from the key spec.
            // A command with a member argument has one key (a command-table test holds it).
            if member.is_none()
                && peeked.argc >= 4
                && let Some(spec) = spec
            {
                let args: smallvec::SmallVec<[&[u8]; 24]> =
                    (0..spans.len()).filter_map(arg).collect();
                for i in crate::command::key_positions(spec, &args) {
                    if i != 1 && batch.len() < PREFETCH_KEYS_MAX {
                        batch.push((server.shard_of(args[i]), args[i], None));
                    }
                }
            }
        }
        at += peeked.consumed;
        requests += 1;
    }
    if batch.len() < 2 {
        return at;
    }
    let mut guards: smallvec::SmallVec<[Option<parking_lot::MutexGuard<'_, store::Shard>>; 16]> =
        (0..server.shard_count()).map(|_| None).collect();
    for &(shard, ..) in &batch {
        if guards[shard].is_none() {
            guards[shard] = server.try_lock_shard(shard);
        }
    }
    for stage in 0..3 {
        for &(shard, key, _) in &batch {
            if let Some(guard) = &guards[shard] {
                guard.prefetch(db, key, stage);
            }
        }
    }
    prefetch_members(db, &batch, &guards);
    at
}

/// The second half of `prefetch_ahead`: prefetches the slot of every member or field in its
/// collection's map, stage by stage, in the shards `guards` holds (indexed by shard).
fn prefetch_members(
    db: usize,
    batch: &[Ahead<'_>],
    guards: &[Option<parking_lot::MutexGuard<'_, store::Shard>>],
) {
    let mut maps: smallvec::SmallVec<[(store::Members<'_>, u64); PREFETCH_BATCH]> =
        smallvec::SmallVec::new();
    // A pipeline usually targets one collection: look its map up once per run of equal keys.
    let mut last: Option<(&[u8], Option<store::Members<'_>>)> = None;
    for &(shard, key, member) in batch {
        let (Some(guard), Some(member)) = (&guards[shard], member) else {
            continue;
        };
        let map = match last {
            Some((k, map)) if k == key => map,
            _ => guard.members(db, key),
        };
        last = Some((key, map));
        if let Some(map) = map {
            maps.push((map, map.hash(member)));
        }
    }
    for stage in 0..3 {
        for &(map, hash) in &maps {
            map.prefetch(hash, stage);
        }
    }
}

fn flush(server: &Server, conn: &mut Conn) -> Result<(), ()> {
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
        conn.out.clear();
        conn.out_pos = 0;
        conn.soft_limit_since = None;
        if conn.out.capacity() > (4 << 20) {
            conn.out.shrink_to(64 << 10);
        }
        return Ok(());
    }
    check_output_limits(server, conn)
}

fn check_output_limits(server: &Server, conn: &mut Conn) -> Result<(), ()> {
    let pending = (conn.out.len() - conn.out_pos) as u64;
    let (hard, soft, secs) = server.config.read().output_limit_normal;
    if hard > 0 && pending > hard {
        crate::log::warning(
            "Client scheduled to be closed ASAP for overcoming of output buffer limits.",
        );
        return Err(());
    }
    if soft > 0 && pending > soft {
        let since = *conn.soft_limit_since.get_or_insert_with(Instant::now);
        if since.elapsed().as_secs() >= secs {
            crate::log::warning(
                "Client scheduled to be closed ASAP for overcoming of output buffer limits.",
            );
            return Err(());
        }
    } else {
        conn.soft_limit_since = None;
    }
    Ok(())
}

fn cron(
    server: &Server,
    index: usize,
    threads: usize,
    poll: &mut Poll,
    conns: &mut HashMap<usize, Conn>,
) {
    let (hz, timeout) = {
        let c = server.config.read();
        (c.hz.max(1), c.timeout_secs)
    };
    let budget = Duration::from_micros(250_000 / u64::from(hz));
    let started = Instant::now();
    let now = unix_ms();
    if index == 0 {
        server.sample_ops(now);
    }
    for shard_index in server.active_expire_shards(index, threads) {
        let mut shard = server.lock_shard(shard_index);
        for db in 0..shard.databases() {
            // Redis's slow cycle: keep going while more than 10% of what was sampled had expired.
            loop {
                let round = shard.active_expire(db, now, 200);
                server
                    .stats
                    .expired_keys_active
                    .fetch_add(round.expired as u64, Ordering::Relaxed);
                if round.sampled == 0
                    || round.expired * 10 <= round.sampled
                    || started.elapsed() >= budget
                {
                    break;
                }
            }
        }
        drop(shard);
        if started.elapsed() >= budget {
            break;
        }
    }
    if timeout > 0 {
        let idle: Vec<usize> = conns
            .iter()
            .filter(|(_, c)| {
                c.state.multi.is_none()
                    && now
                        .saturating_sub(c.state.shared.last_interaction_ms.load(Ordering::Relaxed))
                        / 1000
                        > timeout
            })
            .map(|(&t, _)| t)
            .collect();
        for token in idle {
            close(server, poll, conns, token);
        }
    }
}

/// Creates a poll and its waker for one thread.
pub fn new_poll() -> io::Result<(Poll, Arc<Waker>)> {
    let poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    Ok((poll, waker))
}

const DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    /// A spin with nothing to find makes the following waits skip 1, 2, 4 … 64 spins; one that
    /// finds events resets the backoff; a zero budget never spins.
    #[test]
    fn spin_backs_off_when_idle_and_resets_on_events() {
        let (mut poll, waker) = new_poll().expect("poll");
        let mut events = Events::with_capacity(16);
        let mut spin = Spin::default();
        let budget = Duration::from_micros(50);
        let mut pattern = vec![];
        for _ in 0..11 {
            let before = spin.skip;
            assert!(!spin.poll(&mut poll, &mut events, budget).expect("poll"));
            pattern.push(before == 0);
        }
        // Spins happen on the 1st, 3rd, 6th and 11th waits: skips of 1, 2 and 4 between them.
        let spun: Vec<usize> = (0..pattern.len()).filter(|&i| pattern[i]).collect();
        assert_eq!(spun, vec![0, 2, 5, 10]);
        for _ in 0..200 {
            let _ = spin.poll(&mut poll, &mut events, budget);
        }
        assert!(spin.backoff <= SPIN_BACKOFF_MAX && spin.skip <= SPIN_BACKOFF_MAX);
        // Events waiting: the first wait that spins finds them and resets the backoff.
        waker.wake().expect("wake");
        let mut found = false;
        for _ in 0..=SPIN_BACKOFF_MAX {
            if spin.poll(&mut poll, &mut events, budget).expect("poll") {
                found = true;
                break;
            }
        }
        assert!(found, "a spin finds the waker's event");
        assert_eq!((spin.skip, spin.backoff), (0, 1));
        assert!(
            !Spin::default()
                .poll(&mut poll, &mut events, Duration::ZERO)
                .expect("poll")
        );
    }
}
