//! Point-in-time snapshots of a running shard, without fork (Dragonfly's versioned buckets, at
//! the grain of one entry): the forkless BGSAVE's half inside the store.
//!
//! ```text
//!  meta bit 7 (epoch) of every entry:  == fresh  the entry is saved, or is newer than the snapshot
//!                                      != fresh  the entry is as it was at the start, not yet saved
//!
//!  snapshot_begin   fresh := !fresh                 every stored entry is now "not yet saved"
//!  snapshot_step    walks a few buckets of each db with the SCAN cursor: each unsaved entry
//!                   goes to the sink, then its bit := fresh (set in place by the scan)
//!  preserve         before any write to a key: an unsaved entry goes to the sink first,
//!                   then its bit := fresh (the write keeps it)
//!  new entries      are written with bit = fresh: never saved, they are not in the snapshot
//!  end              when every db's walk is done: sink.finish(), the snapshot is dropped
//! ```
//! So the sink receives each entry that existed at `snapshot_begin` exactly once, with the value
//! it had then, and nothing written after: an entry is handed over either by the walk (it was
//! never written since) or by the first write to it (the pre-image), and the bit says which
//! already happened. The walk's cursor reaches every bucket of a table that splits and merges
//! under it (`walk.rs`): a key present for the whole walk is met at least once, and the bit
//! turns a second meeting into a skip. The extra memory is what the sink holds, not the write
//! rate: a write serializes one entry and moves on.
//!
//! Whole-database operations serialize what is still unsaved in the databases they touch
//! before they act (`drain`): FLUSHDB hands a database's old keys over first, and SWAPDB drains
//! both databases first, so every entry is reported under the database it was in at the start.
//!
//! Invariants (checked by `Shard::validate`): with no snapshot running, every entry's bit is
//! `fresh`; with one running, every entry of a database whose walk is done is `fresh`.

use crate::entries::{Entry, entry_of};
use crate::shard::{Shard, split_value};

/// Where a snapshot's entries go (the RDB writer of a BGSAVE). Called with the shard held:
/// each call should be quick, and may block only on something that never waits for a shard.
pub trait SnapshotSink: Send {
    /// An entry of database `db` as it was when the snapshot began, expired or not.
    fn entry(&mut self, db: usize, entry: Entry<'_>);
    /// The last call: every entry has been handed over.
    fn finish(&mut self);
}

/// A running snapshot of one shard.
pub(crate) struct Snapshot {
    sink: Box<dyn SnapshotSink>,
    /// Per database, the walk's next SCAN cursor; `None` once the walk of that database is done.
    cursors: Vec<Option<u64>>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("cursors", &self.cursors)
            .finish_non_exhaustive()
    }
}

impl Shard {
    /// Starts a snapshot of every database: each entry stored now reaches `sink` exactly once,
    /// as it is now, through `snapshot_step` or the first write to it, whichever comes first.
    ///
    /// # Panics
    /// If a snapshot is already running.
    pub fn snapshot_begin(&mut self, sink: Box<dyn SnapshotSink>) {
        assert!(self.snapshot.is_none(), "one snapshot at a time");
        self.fresh = !self.fresh;
        let cursors = self
            .dbs
            .iter()
            .map(|d| d.keys.as_ref().filter(|k| !k.is_empty()).map(|_| 0))
            .collect();
        self.snapshot = Some(Box::new(Snapshot { sink, cursors }));
    }

    /// Whether a snapshot is running.
    pub fn snapshot_running(&self) -> bool {
        self.snapshot.is_some()
    }

    /// Walks the snapshot on by buckets until about `budget` entries were looked at; true once
    /// it is complete (the sink got `finish` and was dropped) or when none is running.
    pub fn snapshot_step(&mut self, budget: usize) -> bool {
        let mut looked = 0;
        while looked < budget {
            let Some(snapshot) = self.snapshot.as_ref() else {
                return true;
            };
            let Some(db) = snapshot.cursors.iter().position(Option::is_some) else {
                break;
            };
            looked += self.walk_bucket(db);
        }
        let snapshot = self.snapshot.as_mut().expect("checked in the loop");
        if snapshot.cursors.iter().any(Option::is_some) {
            return false;
        }
        snapshot.sink.finish();
        self.snapshot = None;
        true
    }

    /// Hands the unsaved entry of `key` (if any) to the snapshot before a write changes it.
    #[inline]
    pub(crate) fn preserve(&mut self, db: usize, key: &[u8]) {
        if self.snapshot.is_some() {
            self.preserve_slow(db, key);
        }
    }

    #[cold]
    fn preserve_slow(&mut self, db: usize, key: &[u8]) {
        let Shard {
            heap,
            dbs,
            shapes,
            snapshot,
            fresh,
            ..
        } = self;
        let snapshot = snapshot.as_mut().expect("checked by preserve");
        if snapshot.cursors[db].is_none() {
            return;
        }
        let Some(keys) = dbs[db].keys.as_mut() else {
            return;
        };
        let Some(value) = keys.get(heap, key) else {
            return;
        };
        if value.meta.epoch() == *fresh {
            return;
        }
        snapshot
            .sink
            .entry(db, entry_of(key, split_value(value), heap, shapes));
        let fresh = *fresh;
        keys.update_meta(heap, key, |m| m.with_epoch(fresh));
    }

    /// Hands every unsaved entry of `db` to the snapshot now (before FLUSHDB or SWAPDB).
    pub(crate) fn drain(&mut self, db: usize) {
        while self
            .snapshot
            .as_ref()
            .is_some_and(|s| s.cursors[db].is_some())
        {
            self.walk_bucket(db);
        }
    }

    /// One walk step over `db`: hands over the unsaved entries of the bucket at its cursor
    /// (marking them saved in place) and moves the cursor on; returns the entries looked at (at
    /// least 1, so a walk makes progress).
    fn walk_bucket(&mut self, db: usize) -> usize {
        let Shard {
            heap,
            dbs,
            shapes,
            snapshot,
            fresh,
            ..
        } = self;
        let snapshot = snapshot.as_mut().expect("a snapshot is running");
        let cursor = snapshot.cursors[db].expect("the walk of db is not done");
        let Some(keys) = dbs[db].keys.as_mut() else {
            snapshot.cursors[db] = None;
            return 1;
        };
        let fresh = *fresh;
        let sink = &mut snapshot.sink;
        let mut looked = 1;
        let next = keys.scan_update_meta(heap, cursor, |key, value| {
            looked += 1;
            (value.meta.epoch() != fresh).then(|| {
                sink.entry(db, entry_of(key, split_value(value), heap, shapes));
                value.meta.with_epoch(fresh)
            })
        });
        snapshot.cursors[db] = (next != 0).then_some(next);
        looked
    }

    /// The snapshot invariants of the module doc, for `validate`.
    pub(crate) fn validate_snapshot(&self) -> Result<(), String> {
        for (db, d) in self.dbs.iter().enumerate() {
            let walking = self
                .snapshot
                .as_ref()
                .is_some_and(|s| s.cursors[db].is_some());
            let Some(keys) = d.keys.as_ref().filter(|_| !walking) else {
                continue;
            };
            if let Some((key, _)) = keys
                .iter(&self.heap)
                .find(|(_, v)| v.meta.epoch() != self.fresh)
            {
                return Err(format!(
                    "db {db}: key {key:?} is not saved, but no walk of db {db} is running"
                ));
            }
        }
        Ok(())
    }
}
