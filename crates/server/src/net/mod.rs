//! The network loop: `io-threads` threads, each polling a clone of the listening socket (they share
//! its accept queue; whichever thread accepts owns the connection) in its own mio event loop, from
//! accept to close. The port is bound without `SO_REUSEPORT`, as Redis binds it, so a second
//! server on the same port fails to start instead of silently sharing it.
//!
//! ```text
//!  event ─▶ serve (conn.rs): read once ─▶ parse every complete request ─▶ dispatch (lock shards,
//!     ▲        run, reply into the connection's lent output buffer)
//!     └── a full read, or a peer that closed: serve again next turn without an event
//!  end of turn ─▶ write every touched connection's replies ─▶ buffers back to the pools
//! ```
//! One turn of the loop reads and runs every ready connection, then writes all their replies
//! (Redis's beforeSleep), so a client process is woken once per turn rather than once per
//! connection. How a connection reads, when it comes back, how big arguments and output limits
//! are handled: `conn.rs`. Why an idle connection holds no buffers: `buffers.rs`.
//! Back-pressure instead of unbounded buffers: a client that sends commands but never reads their
//! replies stops being read once its pending output reaches `OUTPUT_PAUSE_BYTES` (its own TCP
//! window then stops it), so it cannot grow the server's memory; a configured
//! `client-output-buffer-limit normal <hard> <soft> <secs>` disconnects it as Redis does.
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

mod accept;
mod buffers;
mod conn;
mod prefetch;
mod while_busy;

pub use while_busy::serve_others;

use crate::server::{Server, unix_ms};
use buffers::Pools;
use conn::Conn;
use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token, Waker};
/// A thread's connections by token (the client id). Mail looks a connection up per message, so
/// the hasher is foldhash rather than SipHash: ids are not attacker-chosen.
type ConnTable = std::collections::HashMap<usize, Conn, foldhash::fast::FixedState>;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

const WAKER: Token = Token(usize::MAX);
const FIRST_LISTENER: usize = usize::MAX - 64;
/// Mail entries a thread's mail buffer keeps room for between turns (~160 KiB).
const MAIL_KEPT: usize = 4096;
/// Most waits a failed busy poll makes the next ones skip (doubling from 1).
const SPIN_BACKOFF_MAX: u32 = 64;

/// The signal (SIGTERM or SIGINT) that asked for a shutdown, 0 for none; every loop polls it.
pub static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    SIGNALLED.store(signal, Ordering::Relaxed);
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

/// Whether the peer of socket `fd` has closed its side, or the socket failed, without reading
/// from it. A client blocked in BLPOP & co. is checked before an element is handed to it: its
/// thread may not have seen its FIN yet, and an element given to a closed connection is lost.
pub fn peer_gone(fd: RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid pollfd for the duration of the call and the timeout is 0, so
    // poll neither blocks nor keeps the pointer; an fd that is not open reports POLLNVAL.
    let ready = unsafe { libc::poll(&raw mut pfd, 1, 0) };
    ready > 0
        && pfd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

/// Listening sockets: for each thread, one clone of the socket of each bound address.
type PerThread = Vec<Vec<std::net::TcpListener>>;

/// Binds the configured addresses for `threads` threads at startup. Port 0 listens nowhere,
/// which with no other listener is Redis's startup error.
pub fn bind(server: &Server, threads: usize) -> io::Result<PerThread> {
    let config = server.config.read().clone();
    let (per_thread, port) =
        bind_addresses(&config.bind, config.port, config.tcp_backlog, threads)?;
    if per_thread.first().is_none_or(Vec::is_empty) {
        return Err(io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            "Configured to not listen anywhere, exiting.",
        ));
    }
    keep_listeners(server, &per_thread)?;
    server.port.store(usize::from(port), Ordering::Relaxed);
    Ok(per_thread)
}

/// CONFIG SET port / bind: stops listening on the old sockets, listens on the new ones, and
/// hands them to every thread; when the new ones cannot be bound, listens on the old ones again
/// and fails, as Redis's `changeListenPort` / `changeBindAddr` do. The old sockets are shut down
/// first because a new socket on an address a listening socket holds would not bind.
pub fn rebind(server: &Server, config: &crate::Config) -> Result<(), String> {
    let threads = server.rebound.len();
    let old = server
        .config
        .try_read()
        .map(|c| (c.bind.clone(), c.port, c.tcp_backlog));
    stop_listening(server);
    let bound = bind_addresses(&config.bind, config.port, config.tcp_backlog, threads);
    let (per_thread, port) = match bound {
        Ok(ok) => ok,
        Err(e) => {
            if let Some((bind, port, backlog)) = old
                && let Ok((again, _)) = bind_addresses(&bind, port, backlog, threads)
            {
                hand_over(server, again)?;
            }
            return Err(e.to_string());
        }
    };
    hand_over(server, per_thread)?;
    server.port.store(usize::from(port), Ordering::Relaxed);
    Ok(())
}

/// Gives each thread its new listening sockets (it swaps them in when woken).
fn hand_over(server: &Server, per_thread: PerThread) -> Result<(), String> {
    keep_listeners(server, &per_thread).map_err(|e| e.to_string())?;
    for (slot, list) in server.rebound.iter().zip(per_thread) {
        *slot.lock() = Some(list);
    }
    server.wake_all();
    Ok(())
}

/// Keeps one more clone of each listening socket in `Server::listeners`, so a rebind can shut
/// them down while the threads still hold theirs.
fn keep_listeners(server: &Server, per_thread: &PerThread) -> io::Result<()> {
    let kept = match per_thread.first() {
        Some(list) => list
            .iter()
            .map(std::net::TcpListener::try_clone)
            .collect::<io::Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    *server.listeners.lock() = kept;
    Ok(())
}

/// Stops every listening socket (all the threads' clones share it): pending connections are
/// refused, and the addresses can be bound again.
fn stop_listening(server: &Server) {
    for listener in server.listeners.lock().drain(..) {
        let _ = socket2::SockRef::from(&listener).shutdown(std::net::Shutdown::Read);
    }
}

/// Binds one listening socket per address on `port` (none for port 0), cloned per thread, and
/// the port actually bound.
fn bind_addresses(
    addresses: &[String],
    mut port: u16,
    backlog: u32,
    threads: usize,
) -> io::Result<(PerThread, u16)> {
    let mut per_thread: PerThread = (0..threads).map(|_| Vec::new()).collect();
    if port == 0 {
        return Ok((per_thread, 0));
    }
    for address in addresses {
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
        let listener = match listen(SocketAddr::new(ip, port), backlog) {
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
    Ok((per_thread, port))
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
    poll: Poll,
) -> io::Result<()> {
    crate::hot_stats::claim_slot(index);
    let listeners = register_listeners(&poll, listeners)?;
    let mut thread = Thread {
        server,
        index,
        threads,
        poll,
        listeners,
        conns: ConnTable::default(),
        pools: Pools::default(),
        ready: Vec::new(),
        turn: 0,
        walker: crate::bgsave::Walker::default(),
        walk_wait: None,
        postponed: Vec::new(),
        postponed_generation: 0,
        mail: Vec::new(),
    };
    let mut events = Events::with_capacity(1024);
    let mut next_cron = Instant::now();
    let mut spin = Spin::default();
    while !shutting_down(server) {
        let (period, busy_poll) = loop_periods(server);
        if !thread.wait(&mut events, &mut spin, busy_poll, next_cron)? {
            continue;
        }
        thread.turn(&events);
        let busy = !events.is_empty();
        thread.walk_wait = thread.walker.turn(server, index, threads, busy);
        if Instant::now() >= next_cron {
            thread.cron();
            next_cron = Instant::now() + period;
        }
    }
    thread.close_all();
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

/// Whether the server is to stop: by SHUTDOWN, or by a signal, which the one thread that takes
/// it turns into one as Redis's signal handler and `prepareForShutdown` do: log it, save if
/// `shutdown-on-sig*` or the `save` points say so, and keep running if that save fails.
fn shutting_down(server: &Server) -> bool {
    let signal = SIGNALLED.swap(0, Ordering::Relaxed);
    if signal != 0 && !server.shutdown.load(Ordering::Relaxed) {
        let (name, flags) = {
            let c = server.config.read();
            if signal == libc::SIGINT {
                ("SIGINT", c.shutdown_on_sigint)
            } else {
                ("SIGTERM", c.shutdown_on_sigterm)
            }
        };
        crate::log::warning(&format!("Received {name} scheduling shutdown..."));
        let (save, nosave, force) = (flags & 1 != 0, flags & 2 != 0, flags & 8 != 0);
        let may_exit = !crate::persistence::begin_shutdown(server, save, nosave) || {
            let mut all = crate::command::Locks::all(server);
            let mut shards: Vec<&mut store::Shard> = all.iter_mut().collect();
            crate::persistence::save_before_exit(server, &mut shards, force)
        };
        if may_exit {
            server.shutdown.store(true, Ordering::Relaxed);
            server.wake_all();
        } else {
            crate::log::warning(&format!(
                "{name} received but errors trying to shut down the server, check the logs for more information"
            ));
        }
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

/// One I/O thread: its poll, its listening sockets, the connections it accepted and the
/// buffers it lends them.
struct Thread<'a> {
    server: &'a Arc<Server>,
    index: usize,
    threads: usize,
    poll: Poll,
    listeners: Vec<TcpListener>,
    conns: ConnTable,
    pools: Pools,
    /// Connections to serve next turn without waiting for an event (see `conn.rs`).
    ready: Vec<usize>,
    /// Turns run so far; a connection touched this turn carries it in `Conn::turn`.
    turn: u64,
    /// This thread's share of a background save's walk, and when it wants to run again
    /// (`None`: nothing to walk).
    walker: crate::bgsave::Walker,
    walk_wait: Option<Duration>,
    /// Connections whose next request waits for a CLIENT PAUSE to end, and the pause's
    /// generation when they were postponed.
    postponed: Vec<usize>,
    postponed_generation: u64,
    /// The buffer this thread's mail is swapped into (`take_mail`).
    mail: crate::mail::Batch,
}

impl Thread<'_> {
    /// Waits for events — polling without sleeping first after a turn that had work — until
    /// the next cron, a blocked client's timeout, the next step of a background save's walk,
    /// or at once when connections are ready.
    /// `Ok(false)`: interrupted by a signal, nothing to do.
    fn wait(
        &mut self,
        events: &mut Events,
        spin: &mut Spin,
        busy_poll: Duration,
        next_cron: Instant,
    ) -> io::Result<bool> {
        let worked = !events.is_empty();
        let timeout = if self.ready.is_empty() {
            let idle = self.idle_wait(next_cron);
            self.walk_wait.map_or(idle, |walk| walk.min(idle))
        } else {
            Duration::ZERO
        };
        let spun = worked
            && !timeout.is_zero()
            && spin.poll(&mut self.poll, events, busy_poll.min(timeout))?;
        if !spun {
            match self.poll.poll(events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// How long a thread with nothing ready may wait: until the next cron (at most 100 ms) or
    /// the earliest timeout of a client blocked on this thread.
    fn idle_wait(&self, next_cron: Instant) -> Duration {
        let mut wait = next_cron
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(100));
        if let Some(deadline) = self.next_block_deadline() {
            wait = wait.min(Duration::from_millis(deadline.saturating_sub(unix_ms())));
        }
        if !self.postponed.is_empty()
            && let Some(ms) = self.server.pause.remaining_ms(unix_ms())
        {
            wait = wait.min(Duration::from_millis(ms));
        }
        wait
    }

    /// The earliest deadline of this thread's blocked clients, if any is blocked anywhere.
    fn next_block_deadline(&self) -> Option<u64> {
        if self.server.blocked_clients.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.conns.values().filter_map(|c| c.state.blocked).min()
    }

    /// One turn: accept, serve every connection with news (or left ready by the last turn),
    /// then write all their replies. Connections are served in the order their news arrived, as
    /// Redis processes its events: a client whose BLPOP (and FIN) came before another client's
    /// LPUSH is blocked, and found dead, before the LPUSH runs.
    fn turn(&mut self, events: &Events) {
        self.turn += 1;
        let mut touched = Vec::with_capacity(self.ready.len() + 8);
        for token in std::mem::take(&mut self.ready) {
            self.touch(token, &mut touched);
        }
        for event in events {
            match event.token() {
                // Mail (kills included) is taken below, new listening sockets by this check,
                // shutdown by the check at the top.
                WAKER => self.swap_listeners(),
                Token(t) if t >= FIRST_LISTENER => {
                    let listener = &self.listeners[t - FIRST_LISTENER];
                    accept::accept_all(
                        self.server,
                        &self.poll,
                        listener,
                        self.index,
                        &mut self.conns,
                    );
                }
                Token(t) => {
                    if (event.is_read_closed() || event.is_error())
                        && let Some(conn) = self.conns.get_mut(&t)
                    {
                        conn.peer_closed = true;
                    }
                    self.touch(t, &mut touched);
                }
            }
        }
        let mut mail = self.take_mail(&mut touched);
        self.time_out_blocked(&mut touched);
        self.release_postponed(&mut touched);
        // Connections that only received mail during the serving below: written, not served.
        let mut delivered = Vec::new();
        for (i, &token) in touched.iter().enumerate() {
            // Mail posted since (by a connection served before this one) is delivered first,
            // so this connection's commands see it in Redis's order (`mail.rs`).
            if self.server.mail.waiting(self.index) {
                mail |= self.take_mail(&mut delivered);
            }
            // Out of the table while it is served, so that a busy script it runs can serve
            // the others (`while_busy.rs`).
            let Some(mut conn) = self.conns.remove(&token) else {
                continue;
            };
            let scope = while_busy::Scope::enter(self, token, &touched[i + 1..]);
            let served = conn::serve(self.server, &mut conn, &mut self.pools);
            if scope.leave() {
                self.swap_listeners();
            }
            let conn = self.conns.entry(token).insert_entry(conn).into_mut();
            match served {
                Ok(_) if conn.state.postponed => {
                    self.postponed_generation = self.server.pause.generation();
                    if !self.postponed.contains(&token) {
                        self.postponed.push(token);
                    }
                }
                Ok(true) => self.ready.push(token),
                Ok(false) => {}
                Err(()) => self.close(token),
            }
        }
        // Replies go out once every ready connection has run, as Redis writes them in
        // beforeSleep: a client woken by its first reply finds the others already waiting. A
        // write per connection as soon as it ran woke the client once per connection; the
        // wake-ups (an IPI each on this VM) cost as much server CPU as the inserts themselves.
        // What those commands appended to the AOF reaches the file first (group commit).
        // Mail this turn's commands posted to this thread's own connections (a publish to a
        // subscriber here) goes out with the replies.
        crate::tracking::broadcast(self.server, Some(self.index));
        mail |= self.take_mail(&mut delivered);
        touched.append(&mut delivered);
        crate::aof::before_replies(self.server, mail);
        for token in touched {
            let Some(conn) = self.conns.get_mut(&token) else {
                continue;
            };
            if conn::flush_replies(self.server, conn, &mut self.pools).is_err() {
                self.close(token);
            }
        }
    }

    /// Takes the listening sockets a rebind left for this thread, dropping the old ones.
    fn swap_listeners(&mut self) {
        let Some(new) = self.server.rebound[self.index].lock().take() else {
            return;
        };
        for mut old in self.listeners.drain(..) {
            let _ = self.poll.registry().deregister(&mut old);
        }
        match register_listeners(&self.poll, new) {
            Ok(listeners) => self.listeners = listeners,
            Err(e) => crate::log::warning(&format!("Listening after CONFIG SET: {e}")),
        }
    }

    /// Adds connection `token` to this turn's list, once.
    fn touch(&mut self, token: usize, touched: &mut Vec<usize>) {
        if let Some(conn) = self.conns.get_mut(&token)
            && conn.turn != self.turn
        {
            conn.turn = self.turn;
            touched.push(token);
        }
    }

    /// Hands this thread's connections the mail other commands posted for them: blocked
    /// clients' replies (they resume), pub/sub messages, kills. True when it held replies of
    /// blocked clients (their pops are in the AOF stream before their replies leave).
    fn take_mail(&mut self, touched: &mut Vec<usize>) -> bool {
        let mut replies = false;
        let mut batch = std::mem::take(&mut self.mail);
        self.server.mail.take(self.index, &mut batch);
        if batch.is_empty() {
            self.mail = batch;
            return false;
        }
        let turn = conn::TurnConfig::of(self.server);
        for (id, mail) in batch.drain(..) {
            let token = id as usize;
            let Some(conn) = self.conns.get_mut(&token) else {
                continue;
            };
            if matches!(mail, crate::mail::Mail::Reply(_)) {
                // Served from its BLPOP & co.: the requests it sent meanwhile run next turn.
                replies = true;
                self.ready.push(token);
            }
            if conn::deliver(conn, mail, &turn).is_err() {
                self.close(token);
                continue;
            }
            self.touch(token, touched);
        }
        // The buffer goes back to the mailbox on the next take; a burst's worth is not kept.
        if batch.capacity() <= MAIL_KEPT {
            self.mail = batch;
        }
        replies
    }

    /// Retries the requests a CLIENT PAUSE postponed once it has ended, been lifted or changed.
    fn release_postponed(&mut self, touched: &mut Vec<usize>) {
        let pause = &self.server.pause;
        if self.postponed.is_empty()
            || (pause.active(unix_ms()) && pause.generation() == self.postponed_generation)
        {
            return;
        }
        for token in std::mem::take(&mut self.postponed) {
            if let Some(conn) = self.conns.get_mut(&token) {
                conn.state.postponed = false;
                self.touch(token, touched);
            }
        }
    }

    /// Sends the timeout reply to this thread's blocked clients whose deadline passed.
    fn time_out_blocked(&mut self, touched: &mut Vec<usize>) {
        let server = self.server;
        if server.blocked_clients.load(Ordering::Relaxed) == 0 {
            return;
        }
        let now = unix_ms();
        let mut timed_out = Vec::new();
        for (&token, conn) in &mut self.conns {
            if conn.state.blocked.is_some_and(|deadline| deadline <= now)
                && crate::blocking::time_out(server, conn.state.shared.id)
            {
                crate::blocking::timeout_reply(&mut conn.out, conn.state.protocol);
                conn.state.blocked = None;
                timed_out.push(token);
            }
        }
        for token in timed_out {
            self.touch(token, touched);
        }
    }

    /// Closes connection `token` (`close_conn`).
    fn close(&mut self, token: usize) {
        if let Some(conn) = self.conns.remove(&token) {
            close_conn(self.server, &self.poll, conn, &mut self.pools);
        }
    }

    /// At shutdown: sends each connection what output it can without waiting, then closes it.
    fn close_all(&mut self) {
        let tokens: Vec<usize> = self.conns.keys().copied().collect();
        for token in tokens {
            if let Some(conn) = self.conns.get_mut(&token) {
                conn::flush_at_exit(self.server, conn, &mut self.pools);
            }
            self.close(token);
        }
    }

    /// Every `1000 / hz` ms: active expiry on this thread's shards, the idle-client `timeout`,
    /// giving back the connection table's memory after a wave of disconnections, and (thread 0)
    /// the background save that a `save` point or BGSAVE SCHEDULE calls for.
    fn cron(&mut self) {
        let server = self.server;
        let now = unix_ms();
        // While a script runs (it holds every shard) nothing here waits for a shard.
        let script = server.scripting.running_now();
        if self.index == 0 {
            server.sample_ops(now);
            if !server.cron_paused.load(Ordering::Relaxed) && !script {
                crate::bgsave::cron(server);
                crate::aof::rewrite::cron(server);
            }
            server.aof.cron();
            crate::tracking::cron(server);
            if !script {
                server
                    .defrag
                    .cron(server, || crate::defrag::measure(server));
            }
        }
        // A CLIENT PAUSE stops every change to the keyspace, the cron's included.
        if !server.pause.active(now) {
            active_expire(server, self.index, self.threads, now);
            server.eviction.cron(server, self.index, self.threads, now);
        }
        let timeout_secs = server.config.read().timeout_secs;
        if timeout_secs > 0 {
            // Redis's clientsCronHandleTimeout: blocked clients wait for their own timeout.
            let idle: Vec<usize> = self
                .conns
                .iter()
                .filter(|(_, c)| {
                    let last = c.state.shared.last_interaction_ms.load(Ordering::Relaxed);
                    c.state.blocked.is_none() && now.saturating_sub(last) / 1000 > timeout_secs
                })
                .map(|(&t, _)| t)
                .collect();
            for token in idle {
                crate::log::verbose("Closing idle client");
                self.close(token);
            }
        }
        if self.conns.capacity() > 64 && self.conns.len() < self.conns.capacity() / 4 {
            self.conns.shrink_to_fit();
        }
    }
}

/// Closes `conn`, taken out of its thread's table, and releases at once everything it held:
/// its blocking registration, its watches, its entry in the client registry, its buffers.
fn close_conn(server: &Server, poll: &Poll, mut conn: Conn, pools: &mut Pools) {
    if conn.state.blocked.is_some() {
        crate::blocking::forget(server, conn.state.shared.id);
    }
    let _ = poll.registry().deregister(&mut conn.stream);
    crate::pubsub::forget(server, &mut conn.state);
    server.monitors.remove(conn.state.shared.id);
    crate::tracking::disable(server, &mut conn.state);
    let watched = std::mem::take(&mut conn.state.watched);
    server.unwatch(&conn.state.shared, &watched);
    server.clients.lock().remove(&conn.state.shared.id);
    server.connected.fetch_sub(1, Ordering::Relaxed);
    pools.give_query(std::mem::take(&mut conn.input.query));
    pools.give_reply(std::mem::take(&mut conn.out));
}

/// Active expiry on the shards thread `index` owns (`shard % threads == index`; none while
/// DEBUG SET-ACTIVE-EXPIRE 0 or PAUSE-CRON 1 holds), Redis's slow cycle: each database is sampled
/// while more than 10% of what was sampled had expired, within 25% of the cron period.
fn active_expire(server: &Server, index: usize, threads: usize, now: u64) {
    let hz = server.config.read().hz.max(1);
    let budget = Duration::from_micros(250_000 / u64::from(hz));
    let started = Instant::now();
    for shard_index in server.active_expire_shards(index, threads) {
        // A busy script holds every shard: this thread goes back to serving its clients.
        let Some(mut shard) = server.lock_shard_unless_busy(shard_index) else {
            break;
        };
        for db in 0..shard.databases() {
            loop {
                let round = shard.active_expire(db, now, 200);
                crate::propagate::expired(server, &mut shard);
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

/// Creates a poll and its waker for one thread.
pub fn new_poll() -> io::Result<(Poll, Arc<Waker>)> {
    let poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    Ok((poll, waker))
}

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
