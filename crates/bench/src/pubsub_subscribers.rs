//! The pub/sub suite's subscribers: many subscribed connections served by a few OS threads, each
//! polling its share of the sockets with mio (epoll), counting and checking every message.
//!
//! ```text
//! Pool::start     connect N sockets (blocking), write SUBSCRIBE ch / PSUBSCRIBE pat on each,
//!                 make them non-blocking, deal them round-robin to T threads
//! thread          poll(50 ms) → read every ready socket until WouldBlock → parse pushes:
//!                   confirmation  subscribed += 1 (shared)
//!                   message       received += 1; Sequence: payload PPP:SSS… must be publisher
//!                                 PPP's next sequence; Latency: now − sent into the thread's list
//!                 exits when every socket has its `expected` messages, on an error, or on stop
//! wait_subscribed until subscribed == N (the publishers may start)
//! finish          until every thread is done or the deadline, then stop, join, merge
//! ```
//!
//! Why a few threads with epoll: the fan-out scenario holds 1,000 subscribers on a 2-core machine
//! that also runs the server; a thread per socket would spend the cores on scheduling and skew
//! the latencies it measures. T threads (the suite uses 2) keep the harness's share of the CPU
//! the same for both servers.
//!
//! Invariants: `received ≤ expected` on every socket (one more is an error: a duplicate); under
//! the sequence check a socket that has all its messages has seen every publisher's 0..k exactly
//! once and in order, which is what "every subscriber received all of them" means. A read buffer
//! of 64 KiB is per thread; a socket keeps only the tail of a push a read cut (`pending`).

use std::io::{self, Read, Write};
use std::net::TcpStream as StdStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::pubsub_wire::{self, Push};
use crate::server_resp::encode;

/// Bytes one read may take; a few hundred pushes.
const READ_BYTES: usize = 64 * 1024;
/// How long a thread's poll waits before it looks at the stop flag again.
const POLL_TIMEOUT: Duration = Duration::from_millis(50);
/// Between two looks at the shared counters while waiting.
const WAIT_STEP: Duration = Duration::from_millis(2);

/// What each connection subscribes to.
#[derive(Debug, Clone)]
pub enum Subscription {
    /// `SUBSCRIBE <channel>`.
    Channel(String),
    /// `PSUBSCRIBE <pattern>`.
    Pattern(String),
}

impl Subscription {
    fn command(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Self::Channel(channel) => encode(&["SUBSCRIBE", channel.as_str()], &mut out),
            Self::Pattern(pattern) => encode(&["PSUBSCRIBE", pattern.as_str()], &mut out),
        }
        out
    }
}

/// What a subscriber checks in each payload.
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// Sequence payloads from `publishers` publishers: each one's messages arrive once, in order.
    Sequence { publishers: usize },
    /// Latency payloads: the receive time minus the send time, both measured from `origin`.
    Latency { origin: Instant },
}

/// The pool to start.
#[derive(Debug, Clone)]
pub struct PoolSpec {
    pub port: u16,
    pub connections: usize,
    pub threads: usize,
    pub subscription: Subscription,
    /// Messages each connection must receive.
    pub expected: u64,
    pub check: Check,
}

/// What the pool's threads share with the driver.
#[derive(Debug, Default)]
struct Shared {
    /// Connections whose subscription the server confirmed.
    subscribed: AtomicUsize,
    /// Threads that returned (done, failed or stopped).
    returned: AtomicUsize,
    /// Threads that returned an error. A thread whose sockets all got their messages returns
    /// `Ok` early, possibly while another thread's sockets are still subscribing.
    failed: AtomicUsize,
    stop: AtomicBool,
}

/// What one thread saw.
#[derive(Debug, Default)]
struct ThreadOutcome {
    /// When its last socket received its last message; `None` when stopped before.
    finished: Option<Instant>,
    received: Vec<u64>,
    latencies_ns: Vec<u64>,
}

/// What the whole pool saw.
#[derive(Debug, Default)]
pub struct PoolOutcome {
    /// When the last socket of all received its last message; `None` unless every one did.
    pub finished: Option<Instant>,
    /// Messages per connection.
    pub received: Vec<u64>,
    /// Every delivery's latency (Latency check only), unsorted.
    pub latencies_ns: Vec<u64>,
}

/// Subscribed connections being served.
#[derive(Debug)]
pub struct Pool {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<Result<ThreadOutcome, String>>>,
    connections: usize,
}

/// Raises the soft open-files limit of this process to `wanted` (at most the hard limit);
/// returns the limit now in force. 1,000 subscribers and the publishers need more than the
/// 1,024 many systems start a process with.
pub fn raise_open_files(wanted: u64) -> Result<u64, String> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) =
        getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| format!("getrlimit(NOFILE): {e}"))?;
    if soft >= wanted {
        return Ok(soft);
    }
    let raised = wanted.min(hard);
    setrlimit(Resource::RLIMIT_NOFILE, raised, hard)
        .map_err(|e| format!("setrlimit(NOFILE, {raised}): {e}"))?;
    Ok(raised)
}

/// Connects and subscribes `count` sockets, blocking, before any thread reads: the SUBSCRIBE is
/// a few dozen bytes and always fits the socket's send buffer.
fn connect_all(spec: &PoolSpec) -> Result<Vec<TcpStream>, String> {
    let command = spec.subscription.command();
    (0..spec.connections)
        .map(|index| {
            let stream = StdStream::connect(("127.0.0.1", spec.port))
                .and_then(|mut s| {
                    s.set_nodelay(true)?;
                    s.write_all(&command)?;
                    s.set_nonblocking(true)?;
                    Ok(s)
                })
                .map_err(|e| format!("subscriber {index}: {e}"))?;
            Ok(TcpStream::from_std(stream))
        })
        .collect()
}

impl Pool {
    /// Connects and subscribes every connection and starts the threads.
    pub fn start(spec: &PoolSpec) -> Result<Self, String> {
        let threads = spec.threads.clamp(1, spec.connections.max(1));
        let mut shares: Vec<Vec<TcpStream>> = (0..threads).map(|_| Vec::new()).collect();
        for (index, stream) in connect_all(spec)?.into_iter().enumerate() {
            shares[index % threads].push(stream);
        }
        let shared = Arc::new(Shared::default());
        let handles = shares
            .into_iter()
            .enumerate()
            .map(|(index, streams)| {
                let shared = Arc::clone(&shared);
                let (expected, check) = (spec.expected, spec.check);
                thread::Builder::new()
                    .name(format!("subscribers-{index}"))
                    .spawn(move || {
                        let outcome = serve(streams, expected, check, &shared);
                        if outcome.is_err() {
                            shared.failed.fetch_add(1, Ordering::Release);
                        }
                        shared.returned.fetch_add(1, Ordering::Release);
                        outcome
                    })
                    .map_err(|e| format!("cannot start a subscriber thread: {e}"))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Self {
            shared,
            handles,
            connections: spec.connections,
        })
    }

    /// Waits until the server confirmed every subscription. `Err` when a thread failed (its
    /// error) or `limit` passed.
    pub fn wait_subscribed(&mut self, limit: Duration) -> Result<(), String> {
        let started = Instant::now();
        loop {
            let subscribed = self.shared.subscribed.load(Ordering::Acquire);
            if subscribed == self.connections {
                return Ok(());
            }
            let all_returned = self.shared.returned.load(Ordering::Acquire) == self.handles.len();
            if self.shared.failed.load(Ordering::Acquire) > 0 || all_returned {
                let error = self.stop_threads();
                return Err(format!(
                    "subscriber while subscribing: {}",
                    error.unwrap_or_else(|| "a thread stopped".to_owned())
                ));
            }
            if started.elapsed() > limit {
                self.stop_threads();
                return Err(format!(
                    "{subscribed} of {} subscriptions confirmed after {} s",
                    self.connections,
                    limit.as_secs()
                ));
            }
            thread::sleep(WAIT_STEP);
        }
    }

    /// Waits until every connection has its messages or `limit` passes, then stops the threads
    /// and merges what they saw. `Err` when a thread failed.
    pub fn finish(mut self, limit: Duration) -> Result<PoolOutcome, String> {
        let started = Instant::now();
        while self.shared.returned.load(Ordering::Acquire) < self.handles.len()
            && started.elapsed() < limit
        {
            thread::sleep(WAIT_STEP);
        }
        self.shared.stop.store(true, Ordering::Release);
        let mut merged = PoolOutcome::default();
        let mut all_finished = true;
        for handle in std::mem::take(&mut self.handles) {
            let outcome = handle
                .join()
                .map_err(|_| "a subscriber thread panicked".to_owned())??;
            all_finished &= outcome.finished.is_some();
            merged.finished = merged.finished.max(outcome.finished);
            merged.received.extend(outcome.received);
            merged.latencies_ns.extend(outcome.latencies_ns);
        }
        if !all_finished {
            merged.finished = None;
        }
        Ok(merged)
    }

    /// Stops and joins the threads; returns the first error one of them returned.
    fn stop_threads(&mut self) -> Option<String> {
        self.shared.stop.store(true, Ordering::Release);
        let mut first = None;
        for handle in std::mem::take(&mut self.handles) {
            let error = match handle.join() {
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some("a subscriber thread panicked".to_owned()),
            };
            first = first.or(error);
        }
        first
    }
}

impl Drop for Pool {
    /// A measurement that fails half-way stops its subscriber threads on the way out.
    fn drop(&mut self) {
        self.stop_threads();
    }
}

/// One socket and what it has seen.
#[derive(Debug)]
struct Subscriber {
    stream: TcpStream,
    /// The start of a push the last read cut.
    pending: Vec<u8>,
    state: SubscriberState,
}

#[derive(Debug)]
struct SubscriberState {
    subscribed: bool,
    received: u64,
    /// The next sequence expected from each publisher (Sequence check).
    next_sequence: Vec<u64>,
}

/// What a thread's parsing needs besides the socket.
#[derive(Debug)]
struct Context<'a> {
    expected: u64,
    check: Check,
    shared: &'a Shared,
    latencies_ns: Vec<u64>,
}

/// A thread's loop over its sockets; returns when all have their messages, on stop, or on the
/// first error.
fn serve(
    streams: Vec<TcpStream>,
    expected: u64,
    check: Check,
    shared: &Shared,
) -> Result<ThreadOutcome, String> {
    let mut poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
    let publishers = match check {
        Check::Sequence { publishers } => publishers,
        Check::Latency { .. } => 0,
    };
    let mut subscribers = Vec::with_capacity(streams.len());
    for (index, mut stream) in streams.into_iter().enumerate() {
        poll.registry()
            .register(&mut stream, Token(index), Interest::READABLE)
            .map_err(|e| format!("epoll register: {e}"))?;
        subscribers.push(Subscriber {
            stream,
            pending: Vec::new(),
            state: SubscriberState {
                subscribed: false,
                received: 0,
                next_sequence: vec![0; publishers],
            },
        });
    }
    let mut context = Context {
        expected,
        check,
        shared,
        latencies_ns: Vec::new(),
    };
    let mut events = Events::with_capacity(1024);
    let mut scratch = vec![0u8; READ_BYTES];
    let mut complete = 0;
    while complete < subscribers.len() && !shared.stop.load(Ordering::Acquire) {
        match poll.poll(&mut events, Some(POLL_TIMEOUT)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("epoll wait: {e}")),
        }
        for event in &events {
            let subscriber = &mut subscribers[event.token().0];
            let before = subscriber.state.received;
            read_ready(subscriber, &mut scratch, &mut context)
                .map_err(|e| format!("socket {}: {e}", event.token().0))?;
            if before < expected && subscriber.state.received == expected {
                complete += 1;
            }
        }
    }
    Ok(ThreadOutcome {
        finished: (complete == subscribers.len()).then(Instant::now),
        received: subscribers.iter().map(|s| s.state.received).collect(),
        latencies_ns: context.latencies_ns,
    })
}

/// Reads a ready socket until it is drained, handling every whole push.
///
/// A read that returns less than the buffer took everything the socket held, so the loop stops
/// there rather than paying a second `read` for its `EAGAIN`: on Linux, epoll's edge-triggered
/// mode signals every arrival of new data, drained or not, so nothing is missed (mio's advice to
/// read until `WouldBlock` is for portability; this harness runs on Linux only). In the fan-out
/// scenario that halves the harness's syscalls, which share the two cores with the server.
fn read_ready(
    subscriber: &mut Subscriber,
    scratch: &mut [u8],
    context: &mut Context<'_>,
) -> Result<(), String> {
    loop {
        let read = match subscriber.stream.read(scratch) {
            Ok(0) => return Err("the server closed the connection".to_owned()),
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        };
        let now_ns = match context.check {
            Check::Latency { origin } => origin.elapsed().as_nanos() as u64,
            Check::Sequence { .. } => 0,
        };
        let state = &mut subscriber.state;
        if subscriber.pending.is_empty() {
            let used = handle_all(&scratch[..read], state, context, now_ns)?;
            subscriber.pending.extend_from_slice(&scratch[used..read]);
        } else {
            subscriber.pending.extend_from_slice(&scratch[..read]);
            let used = handle_all(&subscriber.pending, state, context, now_ns)?;
            subscriber.pending.drain(..used);
        }
        if read < scratch.len() {
            return Ok(());
        }
    }
}

/// Handles every whole push at the start of `buf`; returns the bytes they took.
fn handle_all(
    buf: &[u8],
    state: &mut SubscriberState,
    context: &mut Context<'_>,
    now_ns: u64,
) -> Result<usize, String> {
    let mut used = 0;
    while let Some((push, len)) = pubsub_wire::parse(&buf[used..])? {
        used += len;
        match push {
            Push::Subscribed if !state.subscribed => {
                state.subscribed = true;
                context.shared.subscribed.fetch_add(1, Ordering::AcqRel);
            }
            Push::Subscribed => return Err("a second subscription confirmation".to_owned()),
            Push::Message(payload) => on_message(payload, state, context, now_ns)?,
        }
    }
    Ok(used)
}

/// Counts and checks one message.
fn on_message(
    payload: &[u8],
    state: &mut SubscriberState,
    context: &mut Context<'_>,
    now_ns: u64,
) -> Result<(), String> {
    if !state.subscribed {
        return Err("a message before the subscription's confirmation".to_owned());
    }
    state.received += 1;
    if state.received > context.expected {
        return Err(format!(
            "more messages than the {} published",
            context.expected
        ));
    }
    let shown = || String::from_utf8_lossy(payload).into_owned();
    match context.check {
        Check::Sequence { .. } => {
            let (publisher, sequence) = pubsub_wire::parse_sequence(payload)
                .ok_or_else(|| format!("payload {:?} is not a sequence", shown()))?;
            let next = state
                .next_sequence
                .get_mut(publisher)
                .ok_or_else(|| format!("payload {:?} names no publisher", shown()))?;
            if sequence != *next {
                return Err(format!(
                    "publisher {publisher}: message {sequence} where {next} was due (lost, \
                     duplicated or reordered)"
                ));
            }
            *next += 1;
        }
        Check::Latency { .. } => {
            let sent_ns = pubsub_wire::parse_nanos(payload)
                .ok_or_else(|| format!("payload {:?} is not a send time", shown()))?;
            context.latencies_ns.push(now_ns.saturating_sub(sent_ns));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::thread;
    use std::time::Duration;

    use super::{Check, Pool, PoolSpec, Subscription};
    use crate::pubsub_wire::sequence_payload;

    /// A fake server on an ephemeral port: each of `connections` accepted sockets gets `reply`
    /// once its command has arrived, then stays open until the test ends.
    fn fake_server(connections: usize, reply: Vec<u8>) -> u16 {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        thread::spawn(move || {
            let mut open = Vec::new();
            for _ in 0..connections {
                let (mut socket, _) = listener.accept().unwrap();
                let mut command = [0u8; 64];
                let _ = socket.read(&mut command);
                socket.write_all(&reply).unwrap();
                open.push(socket);
            }
            thread::sleep(Duration::from_secs(5));
        });
        port
    }

    fn spec(port: u16, connections: usize) -> PoolSpec {
        PoolSpec {
            port,
            connections,
            threads: 2,
            subscription: Subscription::Channel("ch".to_owned()),
            expected: 3,
            check: Check::Sequence { publishers: 1 },
        }
    }

    fn message(sequence: u64) -> Vec<u8> {
        let payload = sequence_payload(0, sequence);
        format!("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$16\r\n{payload}\r\n").into_bytes()
    }

    const CONFIRM: &[u8] = b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n";

    #[test]
    fn a_refused_subscription_is_an_error() {
        let port = fake_server(2, b"-ERR unknown command 'subscribe'\r\n".to_vec());
        let mut pool = Pool::start(&spec(port, 2)).unwrap();
        let error = pool.wait_subscribed(Duration::from_secs(10)).unwrap_err();
        assert!(error.contains("ERR unknown command"), "{error}");
    }

    #[test]
    fn every_message_in_order_finishes_and_a_gap_fails() {
        let mut whole = CONFIRM.to_vec();
        (0..3).for_each(|s| whole.extend(message(s)));
        let port = fake_server(3, whole);
        let mut pool = Pool::start(&spec(port, 3)).unwrap();
        pool.wait_subscribed(Duration::from_secs(10)).unwrap();
        let outcome = pool.finish(Duration::from_secs(10)).unwrap();
        assert!(outcome.finished.is_some());
        assert_eq!(outcome.received, vec![3, 3, 3]);

        let mut gap = CONFIRM.to_vec();
        gap.extend(message(0));
        gap.extend(message(2));
        let port = fake_server(1, gap);
        let mut pool = Pool::start(&spec(port, 1)).unwrap();
        let error = match pool.wait_subscribed(Duration::from_secs(10)) {
            Ok(()) => pool.finish(Duration::from_secs(10)).unwrap_err(),
            Err(error) => error,
        };
        assert!(error.contains("message 2 where 1 was due"), "{error}");
    }
}
