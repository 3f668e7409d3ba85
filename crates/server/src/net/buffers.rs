//! Per-thread pools of query and reply buffers, so that an idle connection holds none.
//!
//! A connection needs a query buffer only while bytes of a request are waiting to be parsed,
//! and a reply buffer only while replies are waiting to be written. Everything else is the
//! common case of a request that arrives whole and a reply that leaves at once, so each I/O
//! thread lends buffers from two free lists for the span of one turn and takes them back:
//!
//! ```text
//!  idle conn:   query = [] (cap 0)   out = [] (cap 0)          ~0 bytes of buffers
//!  its turn:    take 16 KiB ─▶ read ─▶ parse ─▶ reply ─▶ write ─▶ give both back
//!  partial req: keeps its query buffer until the request completes (and grows it for a big
//!               argument, by at most doubling what has arrived)
//!  slow reader: keeps its reply buffer until the socket takes it
//! ```
//! Before this, every connection kept a zero-filled 16 KiB query buffer and a 16 KiB reply
//! buffer from accept to close: 5,000 idle connections took 108 MB of RSS where redis-server
//! took 19 MB. Lending costs two `Vec` moves per turn and no allocation once the pools are warm.
//!
//! Invariants: every pooled query buffer has `len == BUFFER_BYTES <= capacity <= KEEP_BYTES_MAX`
//! (its first `BUFFER_BYTES` are initialized, so reads never zero them again, and a buffer that
//! grew a little for a request cut at the end of a read is kept, not freed); every pooled reply
//! buffer has `len == 0` and `BUFFER_BYTES <= capacity <= KEEP_BYTES_MAX`; each pool holds at
//! most `POOL_COUNT_MAX` buffers, so an idle thread keeps at most
//! `2 * POOL_COUNT_MAX * KEEP_BYTES_MAX` bytes.

/// Size of a lent buffer: Redis reads 16 KiB at a time (PROTO_IOBUF_LEN) and its reply buffer is
/// 16 KiB (PROTO_REPLY_CHUNK_BYTES).
pub const BUFFER_BYTES: usize = 16 << 10;

/// Largest buffer taken back into a pool; a bigger one (it held a big argument or reply) is
/// freed.
const KEEP_BYTES_MAX: usize = 64 << 10;

/// Buffers each pool keeps at most.
const POOL_COUNT_MAX: usize = 64;

/// The two free lists of one I/O thread.
#[derive(Debug, Default)]
pub struct Pools {
    query: Vec<Vec<u8>>,
    reply: Vec<Vec<u8>>,
}

impl Pools {
    /// A query buffer of `BUFFER_BYTES` initialized bytes.
    pub fn take_query(&mut self) -> Vec<u8> {
        self.query.pop().unwrap_or_else(|| vec![0; BUFFER_BYTES])
    }

    /// Takes back a query buffer whose bytes are all consumed; one that grew big is freed.
    pub fn give_query(&mut self, mut buffer: Vec<u8>) {
        if buffer.len() >= BUFFER_BYTES
            && buffer.capacity() <= KEEP_BYTES_MAX
            && self.query.len() < POOL_COUNT_MAX
        {
            buffer.truncate(BUFFER_BYTES);
            self.query.push(buffer);
        }
    }

    /// An empty reply buffer with room for `BUFFER_BYTES`.
    pub fn take_reply(&mut self) -> Vec<u8> {
        self.reply
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BUFFER_BYTES))
    }

    /// Takes back a reply buffer whose bytes are all written.
    pub fn give_reply(&mut self, mut buffer: Vec<u8>) {
        buffer.clear();
        if (BUFFER_BYTES..=KEEP_BYTES_MAX).contains(&buffer.capacity())
            && self.reply.len() < POOL_COUNT_MAX
        {
            self.reply.push(buffer);
        }
    }

    /// Checks the invariants of the module doc.
    #[cfg(test)]
    fn validate(&self) {
        assert!(self.query.len() <= POOL_COUNT_MAX && self.reply.len() <= POOL_COUNT_MAX);
        for b in &self.query {
            assert_eq!(b.len(), BUFFER_BYTES);
            assert!(b.capacity() <= KEEP_BYTES_MAX);
        }
        for b in &self.reply {
            assert!(b.is_empty());
            assert!((BUFFER_BYTES..=KEEP_BYTES_MAX).contains(&b.capacity()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lent buffers come back only in the shapes the pools promise, and the pools stay bounded
    /// however many buffers are given back.
    #[test]
    fn pools_keep_only_standard_buffers_and_stay_bounded() {
        let mut pools = Pools::default();
        let mut lent = Vec::new();
        for i in 0..200 {
            let mut q = pools.take_query();
            let mut r = pools.take_reply();
            assert_eq!(q.len(), BUFFER_BYTES);
            assert!(r.is_empty() && r.capacity() >= BUFFER_BYTES);
            match i % 4 {
                0 => q.resize(BUFFER_BYTES * 2, 0),
                3 if i % 8 == 3 => q.resize(KEEP_BYTES_MAX + 1, 0),
                1 => r.resize(KEEP_BYTES_MAX + 1, 1),
                2 => r.extend_from_slice(b"+OK\r\n"),
                _ => {}
            }
            lent.push((q, r));
            if i % 3 == 0 {
                for (q, r) in lent.drain(..) {
                    pools.give_query(q);
                    pools.give_reply(r);
                    pools.validate();
                }
            }
        }
        for (q, r) in lent {
            pools.give_query(q);
            pools.give_reply(r);
        }
        pools.validate();
        assert!(!pools.query.is_empty() && !pools.reply.is_empty());
    }
}
