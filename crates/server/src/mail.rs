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

use crate::server::Server;
use parking_lot::Mutex;
use std::sync::Arc;

/// A pub/sub message: its channel and payload, shared by every subscriber it goes to.
#[derive(Debug)]
pub struct Message {
    /// Sharded (SPUBLISH): delivered as `smessage`.
    pub sharded: bool,
    pub channel: Box<[u8]>,
    pub payload: Box<[u8]>,
}

/// What a connection on another thread is sent.
#[derive(Debug)]
pub enum Mail {
    /// The reply of a blocked client another command served (BLPOP & co.): it unblocks.
    Reply(Vec<u8>),
    /// A pub/sub message, with the pattern that matched for a pattern subscriber.
    Message(Arc<Message>, Option<Arc<[u8]>>),
    /// Bytes sent as they are, whatever the protocol (MONITOR lines).
    Raw(Arc<[u8]>),
    /// CLIENT KILL (or a blocked client found dead): close the connection.
    Kill,
    /// A client-side caching message (`tracking.rs`), framed for the receiver's protocol.
    Invalidate(crate::tracking::Invalidation),
}

/// Mail for one thread: (client id, what to send it).
pub type Batch = Vec<(u64, Mail)>;

/// One mailbox per I/O thread.
#[derive(Debug)]
pub struct Mailboxes {
    boxes: Box<[Mutex<Batch>]>,
}

impl Mailboxes {
    pub fn new(threads: usize) -> Mailboxes {
        Mailboxes {
            boxes: (0..threads.max(1))
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
        }
    }

    pub fn threads(&self) -> usize {
        self.boxes.len()
    }

    /// Appends `batch` to thread `thread`'s mailbox, waking it if its box was empty and it is
    /// not `from_thread` (which takes its own mail at the end of its turn).
    pub fn post(&self, server: &Server, thread: usize, from_thread: Option<usize>, batch: Batch) {
        if batch.is_empty() {
            return;
        }
        let was_empty = {
            let mut mailbox = self.boxes[thread].lock();
            let was_empty = mailbox.is_empty();
            if was_empty {
                *mailbox = batch;
            } else {
                mailbox.extend(batch);
            }
            was_empty
        };
        if was_empty && from_thread != Some(thread) {
            server.wake(thread);
        }
    }

    /// Sends one piece of mail (see `post`).
    pub fn post_one(&self, server: &Server, thread: usize, id: u64, mail: Mail) {
        self.post(server, thread, None, vec![(id, mail)]);
    }

    /// Everything waiting for thread `thread`, in the order it was posted.
    pub fn take(&self, thread: usize) -> Batch {
        let mut mailbox = self.boxes[thread].lock();
        if mailbox.is_empty() {
            Vec::new()
        } else {
            std::mem::take(&mut *mailbox)
        }
    }
}
