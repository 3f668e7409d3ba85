//! One connection's state: what its owning I/O thread keeps (query buffer, parser, output
//! buffer) and what commands change (selected db, protocol, auth, MULTI queue, watched keys).

use crate::server::ClientShared;
use resp::{Parser, Protocol};
use std::sync::Arc;

/// CLIENT REPLY mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Drop the reply of the next command only.
    Skip,
}

/// A command queued by MULTI: its table index and its arguments.
#[derive(Debug)]
pub struct Queued {
    pub index: usize,
    pub args: Vec<Vec<u8>>,
}

/// What commands read and change.
#[derive(Debug)]
pub struct ClientState {
    pub shared: Arc<ClientShared>,
    pub db: usize,
    pub protocol: Protocol,
    pub authenticated: bool,
    pub multi: Option<Vec<Queued>>,
    /// A command was rejected while queueing: EXEC must abort.
    pub multi_error: bool,
    pub watched: Vec<(usize, Vec<u8>)>,
    /// For each watched key, whether it existed when WATCHed: if it has expired since, EXEC fails.
    pub watched_live: Vec<bool>,
    pub reply_mode: ReplyMode,
    /// Close the connection once the pending output is written (QUIT, protocol errors).
    pub close_after_reply: bool,
    /// Close without writing anything more (CLIENT KILL of self is after the reply).
    pub close_now: bool,
    /// Blocked in BLPOP & co. until this Unix ms (`u64::MAX`: no timeout): no further command
    /// of this client runs until it is served or times out.
    pub blocked: Option<u64>,
    /// Running the commands of an EXEC: blocking commands must not block.
    pub in_exec: bool,
    /// In MONITOR mode: never paused, kept away from the keyspace (Redis's replica flag).
    pub monitor: bool,
    /// Its next request waits for a CLIENT PAUSE to end, unconsumed (`pause.rs`).
    pub postponed: bool,
    /// Push frames (subscription confirmations, its own messages) written while CLIENT REPLY
    /// is OFF or SKIP: they are sent anyway, as Redis sends what it flags CLIENT_PUSHING.
    pub pushes: Vec<u8>,
    /// Pub/sub subscriptions (`None`: none, the common case costs a pointer).
    pub subs: Option<Box<crate::pubsub::Subscriptions>>,
    /// CLIENT TRACKING's mode (`None`: off, the common case costs a pointer).
    pub tracking: Option<Box<crate::tracking::ClientTracking>>,
}

impl ClientState {
    /// In RESP2 subscribed mode only (un)subscribe commands, PING, QUIT and RESET run, and the
    /// pub/sub output limit applies to every subscriber (Redis's `CLIENT_PUBSUB`).
    pub fn subscribed(&self) -> bool {
        self.subs.is_some()
    }

    pub fn new(shared: Arc<ClientShared>, authenticated: bool) -> ClientState {
        ClientState {
            shared,
            db: 0,
            protocol: Protocol::Resp2,
            authenticated,
            multi: None,
            multi_error: false,
            watched: Vec::new(),
            watched_live: Vec::new(),
            reply_mode: ReplyMode::On,
            close_after_reply: false,
            close_now: false,
            blocked: None,
            in_exec: false,
            subs: None,
            pushes: Vec::new(),
            monitor: false,
            postponed: false,
            tracking: None,
        }
    }
}

/// The input side of a connection.
#[derive(Debug)]
pub struct Input {
    /// The read buffer, lent by the thread's pool for a turn and kept only while a request is
    /// partly received (`net/buffers.rs`); empty while the connection is idle. Its length is how
    /// much of it is initialized; the received bytes are `query[..filled]`, so a read never zeroes
    /// memory the buffer already had.
    pub query: Vec<u8>,
    /// End of the received bytes.
    pub filled: usize,
    /// Start of the request being parsed; everything before it is consumed.
    pub pos: usize,
    pub parser: Parser,
}
