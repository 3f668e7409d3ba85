//! Per-thread mailboxes: how a command on one I/O thread hands output to a connection another
//! thread owns (a blocked client's reply, a pub/sub message, a keyspace notification).
//!
//! ```text
//!  PUBLISH on thread A ─▶ for each subscriber: (client id, Mail) grouped by owning thread
//!        ─▶ boxes[B].lock(): append the batch; it was empty ─▶ wake B's poll (one eventfd write)
//!  thread B, next turn ─▶ take(B) (swap the Vec out under the lock) ─▶ for each mail: find the
//!        connection by id, encode for its protocol into its output buffer ─▶ written at the
//!        end of the turn with everything else
//! ```
//! A mailbox's lock is held only to append or to swap the vector out, never across an encode or
//! a socket write, so a slow subscriber cannot stall a publisher. Mail to the publisher's own
//! thread is taken at the end of the same turn, before the replies are written, without a wake.
//! A thread is woken only when its mailbox goes from empty to not empty: a burst of publishes
//! costs one wake per receiving thread per turn, not one per message. Mail from one publisher
//! keeps its order: each publish appends to each box in turn, and a box is a FIFO.
//!
//! A thread also takes its mail before it runs each connection's requests whenever some is
//! waiting (one atomic load per connection served), so a message published before a
//! subscriber's UNSUBSCRIBE ran reaches it before the confirmation, as in Redis, where the
//! publish writes into the subscriber's buffer at once. A message still in flight when its
//! subscription has gone is dropped at delivery (`Subscriptions::receives`).

use crate::server::Server;
use parking_lot::Mutex;
use resp::Protocol;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// A pub/sub message as one group of subscribers receives it (a channel's subscribers, or one
/// pattern's), shared by all of them. Its frame is encoded once per protocol, by the first
/// receiver that needs it, so a fan-out copies bytes instead of formatting them.
#[derive(Debug)]
pub struct Message {
    /// Sharded (SPUBLISH): delivered as `smessage`.
    pub sharded: bool,
    /// The pattern that matched, for a pattern subscriber (`pmessage`).
    pub pattern: Option<Arc<[u8]>>,
    pub channel: Box<[u8]>,
    pub payload: Box<[u8]>,
    resp2: OnceLock<Box<[u8]>>,
    resp3: OnceLock<Box<[u8]>>,
}

impl Message {
    pub fn new(
        sharded: bool,
        pattern: Option<Arc<[u8]>>,
        channel: &[u8],
        payload: &[u8],
    ) -> Message {
        Message {
            sharded,
            pattern,
            channel: channel.into(),
            payload: payload.into(),
            resp2: OnceLock::new(),
            resp3: OnceLock::new(),
        }
    }

    /// The message's frame in `protocol`: an array in RESP2, a push in RESP3.
    pub fn frame(&self, protocol: Protocol) -> &[u8] {
        let cell = match protocol {
            Protocol::Resp2 => &self.resp2,
            Protocol::Resp3 => &self.resp3,
        };
        cell.get_or_init(|| {
            let mut out = Vec::with_capacity(48 + self.channel.len() + self.payload.len());
            crate::pubsub::encode(&mut out, protocol, self);
            out.into_boxed_slice()
        })
    }
}

/// What a connection on another thread is sent.
#[derive(Debug)]
pub enum Mail {
    /// The reply of a blocked client another command served (BLPOP & co.): it unblocks.
    Reply(Vec<u8>),
    /// A pub/sub message.
    Message(Arc<Message>),
    /// Bytes sent as they are, whatever the protocol (MONITOR lines).
    Raw(Arc<[u8]>),
    /// CLIENT KILL (or a blocked client found dead): close the connection.
    Kill,
    /// A client-side caching message (`tracking.rs`), framed for the receiver's protocol.
    Invalidate(crate::tracking::Invalidation),
}

/// Mail for one thread: (client id, what to send it).
pub type Batch = Vec<(u64, Mail)>;

thread_local! {
    /// `post_sorted`'s batches, one per receiving thread (`post` moves their contents out and
    /// leaves their capacity).
    static SCRATCH: std::cell::RefCell<Vec<Batch>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One mailbox per I/O thread.
#[derive(Debug)]
pub struct Mailboxes {
    boxes: Box<[Mutex<Batch>]>,
    /// Per thread: mail waiting (set by `post`, cleared by `take`), read without the lock.
    waiting: Box<[AtomicBool]>,
}

impl Mailboxes {
    pub fn new(threads: usize) -> Mailboxes {
        Mailboxes {
            boxes: (0..threads.max(1))
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            waiting: (0..threads.max(1))
                .map(|_| AtomicBool::new(false))
                .collect(),
        }
    }

    pub fn threads(&self) -> usize {
        self.boxes.len()
    }

    /// Moves `batch` into thread `thread`'s mailbox (leaving it empty, its capacity kept for the
    /// caller's next batch), waking the thread if its box was empty and it is not
    /// `from_thread` (which takes its own mail at the end of its turn).
    pub fn post(
        &self,
        server: &Server,
        thread: usize,
        from_thread: Option<usize>,
        batch: &mut Batch,
    ) {
        if batch.is_empty() {
            return;
        }
        let was_empty = {
            let mut mailbox = self.boxes[thread].lock();
            let was_empty = mailbox.is_empty();
            mailbox.append(batch);
            self.waiting[thread].store(true, Ordering::Release);
            was_empty
        };
        if was_empty && from_thread != Some(thread) {
            server.wake(thread);
        }
    }

    /// Sorts mail into one batch per receiving thread with `fill`, then posts each batch (see
    /// `post`). The batches are this thread's scratch buffers, reused from call to call, so a
    /// publish or a MONITOR line allocates no vectors; `fill` must not post itself.
    pub fn post_sorted<R>(
        &self,
        server: &Server,
        from_thread: Option<usize>,
        fill: impl FnOnce(&mut [Batch]) -> R,
    ) -> R {
        SCRATCH.with_borrow_mut(|batches| {
            batches.resize_with(self.threads(), Vec::new);
            let result = fill(batches);
            for (thread, batch) in batches.iter_mut().enumerate() {
                self.post(server, thread, from_thread, batch);
            }
            result
        })
    }

    /// Sends one piece of mail (see `post`).
    pub fn post_one(&self, server: &Server, thread: usize, id: u64, mail: Mail) {
        self.post(server, thread, None, &mut vec![(id, mail)]);
    }

    /// Swaps everything waiting for thread `thread`, in the order it was posted, into `into`
    /// (which must be empty); the mailbox keeps `into`'s capacity for what comes next.
    pub fn take(&self, thread: usize, into: &mut Batch) {
        debug_assert!(into.is_empty());
        let mut mailbox = self.boxes[thread].lock();
        self.waiting[thread].store(false, Ordering::Relaxed);
        if !mailbox.is_empty() {
            std::mem::swap(&mut *mailbox, into);
        }
    }

    /// Whether mail waits for thread `thread` (a hint: it may have been taken since).
    #[inline]
    pub fn waiting(&self, thread: usize) -> bool {
        self.waiting[thread].load(Ordering::Acquire)
    }
}
