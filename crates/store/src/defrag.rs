//! The active defragmenter's walk over a shard: one bucket of one database per step, moving the
//! out-of-line keys and values the heap's `defrag_hint` flags (`maps::PageHash::defrag_step`),
//! so mostly empty slabs empty out and their blocks decay back to the OS.
//!
//! ```text
//!  Defrag { db, cursor }   cursor 0 of the last database with keys → the pass is done
//! ```
//! The walk's cursor is a SCAN cursor, so every entry present for the whole pass is visited
//! however the table splits, merges or compacts meanwhile. A running snapshot is unaffected: a
//! move changes where an entry's bytes are, never what they are, and the snapshot holds no
//! pointer into the keyspace between its steps.

use crate::shard::Shard;

/// Where the defragmenter's walk is.
#[derive(Clone, Debug, Default)]
pub(crate) struct DefragWalk {
    db: usize,
    cursor: u64,
}

/// What defragmentation steps did, counted per out-of-line key or value (a key whose name and
/// value are both out of line counts twice).
pub use maps::DefragCounts;

impl Shard {
    /// One step of the defragmenter's walk (one bucket); true when the walk has just been over
    /// every database once (the next step starts a new pass).
    pub fn defrag_step(&mut self) -> (bool, DefragCounts) {
        let n = self.dbs.len();
        let Some(db) = (0..n)
            .map(|i| (self.defrag.db + i) % n)
            .find(|&db| self.dbs[db].keys.as_ref().is_some_and(|k| !k.is_empty()))
        else {
            self.defrag = DefragWalk::default();
            return (true, DefragCounts::default());
        };
        if db != self.defrag.db {
            self.defrag = DefragWalk { db, cursor: 0 };
        }
        let keys = self.dbs[db].keys.as_mut().expect("a database with keys");
        let (next, counts) = keys.defrag_step(&mut self.heap, self.defrag.cursor, || {});
        self.defrag.cursor = next;
        if next != 0 {
            return (false, counts);
        }
        let later = (db + 1..n).find(|&d| self.dbs[d].keys.as_ref().is_some_and(|k| !k.is_empty()));
        if let Some(d) = later {
            self.defrag = DefragWalk { db: d, cursor: 0 };
            (false, counts)
        } else {
            self.defrag = DefragWalk::default();
            (true, counts)
        }
    }
}
