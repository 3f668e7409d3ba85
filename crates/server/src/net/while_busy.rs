//! Serving a thread's other connections while a script on it is busy (Redis's
//! `processEventsWhileBlocked`, which its script hook calls once the script has passed
//! `busy-reply-threshold`).
//!
//! A script runs inside its caller's `conn::serve`, on the caller's I/O thread. Once it is busy
//! its count hook calls `serve_others` every 100,000 instructions, which polls the thread's
//! sockets without waiting and serves every connection with news, as a turn would: dispatch
//! replies `-BUSY` to everything but the ALLOW_BUSY commands, so SCRIPT KILL, FUNCTION KILL
//! and SHUTDOWN NOSAVE reach the script even with one I/O thread, and new connections are
//! accepted (`redis-cli script kill` opens one).
//!
//! ```text
//!  turn ─▶ conn R taken out of the table ─▶ Scope::enter(thread, R, later) ─▶ serve(R) ─▶ …
//!            hook (busy) ─▶ serve_others: poll(0) ─▶ accept · serve + flush others · R noted ready
//!            first call also: the turn's connections after R (`later`: their events are taken)
//!            and every connection with replies waiting from earlier in the turn
//!  serve(R) returns ─▶ Scope dropped ─▶ R back in the table
//! ```
//! The first call's extra work matters: a client served before R in the same turn has its
//! reply waiting for the turn's end, and will not send its next command (SCRIPT KILL
//! included) until it has it.
//! Invariants while a scope is entered: the caller's connection is not in `conns` (nothing
//! can reach it twice), and the turn touches none of the fields `serve_others` uses (`poll`,
//! `listeners`, `conns`, `ready`) until the scope ends. The script's queued AOF effects are
//! set aside while others run (a command they run flushes the queue), and replies leave only
//! after the AOF holds everything appended so far, as at the end of a turn.

use super::{FIRST_LISTENER, Thread, WAKER, accept, conn};
use mio::{Events, Token};
use std::cell::Cell;
use std::time::Duration;

/// An entered scope: the thread, the token of the connection it serves, the connections
/// the turn serves after it (their events are taken: a poll will not report them again), and
/// whether `serve_others` took the thread's waker event (the turn then looks for new
/// listeners).
#[derive(Clone, Copy)]
struct Entered {
    thread: *mut Thread<'static>,
    running: usize,
    /// Cleared once `serve_others` has served them.
    later: Option<*const [usize]>,
    /// `serve_others` has run in this scope.
    served: bool,
    woken: bool,
}

thread_local! {
    /// The scope entered on this thread: `None` outside one, and while `serve_others` runs,
    /// so that it does not nest.
    static SCOPE: Cell<Option<Entered>> = const { Cell::new(None) };
}

/// The span of one connection's `serve`, during which a busy script may serve the others.
pub(super) struct Scope {
    _private: (),
}

impl Scope {
    /// Enters the scope for `running`, which the caller has taken out of `thread.conns`;
    /// the turn serves `later` after it.
    pub(super) fn enter(thread: &mut Thread<'_>, running: usize, later: &[usize]) -> Scope {
        let pointer: *mut Thread<'_> = thread;
        SCOPE.set(Some(Entered {
            thread: pointer.cast(),
            running,
            later: (!later.is_empty()).then_some(std::ptr::from_ref(later)),
            served: false,
            woken: false,
        }));
        Scope { _private: () }
    }

    /// Leaves the scope: whether the thread's waker fired meanwhile.
    pub(super) fn leave(self) -> bool {
        let woken = SCOPE.get().is_some_and(|entered| entered.woken);
        drop(self);
        woken
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        SCOPE.set(None);
    }
}

/// Serves this thread's other connections once, without waiting (see the module doc). Does
/// nothing outside a connection's `serve` (a script run while the AOF loads).
pub fn serve_others() {
    let Some(mut entered) = SCOPE.take() else {
        return;
    };
    let pointer = entered.thread;
    // SAFETY: `pointer` was set by `Scope::enter` from a `&mut Thread` whose turn is inside
    // this scope's `serve` call (the scope is dropped before the turn goes on), so it points
    // to a live thread. During that call the turn itself holds only `&mut thread.pools` and
    // reads `thread.server`; the references made here are to other fields (`poll`,
    // `listeners`, `conns`, `ready`), each through a raw field projection, so none overlaps a
    // reference the turn holds, and the turn touches them again only after the scope ends.
    // The connection being served is out of `conns`. `later` is a slice the turn holds
    // borrowed, unchanged, for the whole scope. The cell is empty while these live, so no
    // second set can be made.
    let mut others = unsafe {
        Others {
            server: (*pointer).server,
            index: (*pointer).index,
            poll: &mut *std::ptr::addr_of_mut!((*pointer).poll),
            listeners: &mut *std::ptr::addr_of_mut!((*pointer).listeners),
            conns: &mut *std::ptr::addr_of_mut!((*pointer).conns),
            ready: &mut *std::ptr::addr_of_mut!((*pointer).ready),
            running: entered.running,
            first: !entered.served,
            later: entered.later.take().map_or(&[], |later| &*later),
        }
    };
    // As Redis's `processEventsWhileBlocked`, up to 4 polls while they bring news: a client
    // that connects to send SCRIPT KILL is accepted by one and read by the next.
    for _ in 0..PASSES_MAX {
        let (news, woken) = others.serve();
        entered.woken |= woken;
        others.first = false;
        others.later = &[];
        if !news {
            break;
        }
    }
    entered.served = true;
    SCOPE.set(Some(entered));
}

/// Most polls one `serve_others` makes.
const PASSES_MAX: usize = 4;

/// The parts of a thread `serve_others` works with.
struct Others<'t> {
    server: &'t std::sync::Arc<crate::server::Server>,
    index: usize,
    poll: &'t mut mio::Poll,
    listeners: &'t mut Vec<mio::net::TcpListener>,
    conns: &'t mut super::ConnTable,
    ready: &'t mut Vec<usize>,
    running: usize,
    /// The turn's connections still to serve (first pass only).
    later: &'t [usize],
    /// The scope's first pass: it also writes the replies the turn made before the script.
    first: bool,
}

impl Others<'_> {
    /// One pass: whether the poll brought events, and whether one was the thread's waker.
    fn serve(&mut self) -> (bool, bool) {
        let mut events = Events::with_capacity(256);
        if self.poll.poll(&mut events, Some(Duration::ZERO)).is_err() {
            return (false, false);
        }
        let mut woken = false;
        let first = self.first;
        let mut news = self.later.to_vec();
        for event in &events {
            match event.token() {
                // New listening sockets: taken once the script's caller is served.
                WAKER => woken = true,
                Token(t) if t >= FIRST_LISTENER => {
                    let listener = &self.listeners[t - FIRST_LISTENER];
                    accept::accept_all(self.server, self.poll, listener, self.index, self.conns);
                }
                // The script's caller sent more: read at the next turn.
                Token(t) if t == self.running => self.ready.push(t),
                Token(t) => {
                    if let Some(conn) = self.conns.get_mut(&t) {
                        conn.peer_closed |= event.is_read_closed() || event.is_error();
                        news.push(t);
                    }
                }
            }
        }
        if first {
            // Replies the turn made before the script ran leave now, as they would at the
            // turn's end: their clients wait for them before sending more.
            news.extend(
                self.conns
                    .iter()
                    .filter(|(_, conn)| conn.pending() > 0)
                    .map(|(&token, _)| token),
            );
        }
        news.sort_unstable();
        news.dedup();
        if !news.is_empty() {
            self.serve_news(&news);
        }
        (!events.is_empty(), woken)
    }

    /// Serves the connections `news` names and writes their replies (and any reply a
    /// connection had waiting from earlier in the turn).
    fn serve_news(&mut self, news: &[usize]) {
        let server: &crate::server::Server = self.server;
        let held = crate::propagate::set_aside();
        let mut pools = super::buffers::Pools::default();
        let mut closing = Vec::new();
        for &token in news {
            let Some(conn) = self.conns.get_mut(&token) else {
                continue;
            };
            match conn::serve(server, conn, &mut pools) {
                Ok(more) => {
                    if more || conn.state.postponed {
                        self.ready.push(token);
                    }
                }
                Err(()) => closing.push(token),
            }
        }
        // What the connections' earlier commands of this turn appended reaches the file
        // before their replies leave.
        crate::aof::before_replies(server, true);
        for &token in news {
            if closing.contains(&token) {
                continue;
            }
            if let Some(conn) = self.conns.get_mut(&token)
                && conn::flush_replies(server, conn, &mut pools).is_err()
            {
                closing.push(token);
            }
        }
        for token in closing {
            if let Some(conn) = self.conns.remove(&token) {
                super::close_conn(server, self.poll, conn, &mut pools);
            }
        }
        crate::propagate::restore(held);
    }
}
