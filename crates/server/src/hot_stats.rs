//! The counters every command bumps (commandstats calls and µs, total commands, keyspace hits
//! and misses, changes since the last save), kept per I/O thread.
//!
//! ```text
//!  HotStats ── cells: [Padded<Cells>; io_threads + 1]   cell i: written by I/O thread i only;
//!           │                                          the last: any other thread (fetch_add)
//!           └─ base: Cells                             what CONFIG RESETSTAT subtracted
//!  value of a counter = Σ cells − base
//! ```
//! A shared atomic counter costs a locked read-modify-write per bump, and a command made three
//! in `command::run` (plus one per write and one per GET): under GET at `-P 16`, `perf` put ~70%
//! of `command::run`'s samples on its three locked adds. A cell with a single writer needs only
//! a plain load and store, and readers (INFO, the ops/sec sampler) sum the cells. The thread a cell belongs to is found through a
//! thread-local slot that `net::run_thread` sets; any other thread (tests, startup) bumps the
//! shared last cell with `fetch_add`. RESETSTAT moves the base instead of writing other
//! threads' cells, which their owners could overwrite with a stale value.
//!
//! Invariants: cell i < io_threads is written only by the thread whose slot is i; every cell only
//! grows (wrapping at 2^64), so `Σ cells ≥ base` as read by one thread.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

thread_local! {
    /// This thread's cell in every server's `HotStats` (`usize::MAX`: none, use the shared one).
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Makes the calling thread the sole writer of cell `slot` (an I/O thread's index).
pub fn claim_slot(slot: usize) {
    SLOT.set(slot);
}

/// One set of the counters.
#[derive(Debug)]
pub struct Cells {
    pub commands_processed: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    /// Writes since start (INFO `rdb_changes_since_last_save`; RESETSTAT leaves it).
    pub dirty: AtomicU64,
    /// Per command-table index: calls and microseconds.
    pub calls: Box<[AtomicU64]>,
    pub usec: Box<[AtomicU64]>,
}

impl Cells {
    fn new(commands: usize) -> Cells {
        let zeros = || (0..commands).map(|_| AtomicU64::new(0)).collect();
        Cells {
            commands_processed: AtomicU64::new(0),
            keyspace_hits: AtomicU64::new(0),
            keyspace_misses: AtomicU64::new(0),
            dirty: AtomicU64::new(0),
            calls: zeros(),
            usec: zeros(),
        }
    }
}

/// Keeps each thread's scalar counters on cache lines of their own (the per-command arrays are
/// heap blocks of their own, ~2 KB each).
#[derive(Debug)]
#[repr(align(128))]
struct Padded(Cells);

/// A thread's cell: written with a plain load and store when the thread is its only writer.
#[derive(Clone, Copy, Debug)]
pub struct Local<'a> {
    cells: &'a Cells,
    sole_writer: bool,
}

impl Local<'_> {
    #[inline]
    pub fn add(self, which: impl Fn(&Cells) -> &AtomicU64, n: u64) {
        let c = which(self.cells);
        if self.sole_writer {
            c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
        } else {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }
}

#[derive(Debug)]
pub struct HotStats {
    cells: Box<[Padded]>,
    base: Cells,
}

impl HotStats {
    pub fn new(io_threads: usize, commands: usize) -> HotStats {
        HotStats {
            cells: (0..=io_threads)
                .map(|_| Padded(Cells::new(commands)))
                .collect(),
            base: Cells::new(commands),
        }
    }

    /// This thread's cell, for one or more `add`s (the slot is read once).
    #[inline]
    pub fn local(&self) -> Local<'_> {
        let slot = SLOT.get();
        let last = self.cells.len() - 1;
        Local {
            cells: &self.cells[slot.min(last)].0,
            sole_writer: slot < last,
        }
    }

    /// Adds `n` to the counter `which` picks in this thread's cell.
    #[inline]
    pub fn add(&self, which: impl Fn(&Cells) -> &AtomicU64, n: u64) {
        self.local().add(which, n);
    }

    /// The counter `which` picks: the cells' sum less the base.
    pub fn get(&self, which: impl Fn(&Cells) -> &AtomicU64) -> u64 {
        self.sum(&which)
            .saturating_sub(which(&self.base).load(Ordering::Relaxed))
    }

    fn sum(&self, which: &impl Fn(&Cells) -> &AtomicU64) -> u64 {
        self.cells
            .iter()
            .map(|c| which(&c.0).load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }

    /// CONFIG RESETSTAT: every counter but `dirty` reads zero from here on.
    pub fn reset(&self) {
        let rebase = |which: &dyn Fn(&Cells) -> &AtomicU64| {
            which(&self.base).store(self.sum(&which), Ordering::Relaxed);
        };
        rebase(&|c| &c.commands_processed);
        rebase(&|c| &c.keyspace_hits);
        rebase(&|c| &c.keyspace_misses);
        for i in 0..self.base.calls.len() {
            rebase(&|c| &c.calls[i]);
            rebase(&|c| &c.usec[i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bumps from claimed slots and from unclaimed threads all count; a reset zeroes what was
    /// counted before it and keeps what comes after.
    #[test]
    fn sums_threads_and_resets_by_base() {
        let stats = std::sync::Arc::new(HotStats::new(2, 3));
        let workers: Vec<_> = [Some(0), Some(1), None, None]
            .into_iter()
            .map(|slot| {
                let stats = stats.clone();
                std::thread::spawn(move || {
                    if let Some(slot) = slot {
                        claim_slot(slot);
                    }
                    for _ in 0..10_000 {
                        stats.add(|c| &c.commands_processed, 1);
                        stats.add(|c| &c.usec[2], 3);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("worker");
        }
        assert_eq!(stats.get(|c| &c.commands_processed), 40_000);
        assert_eq!(stats.get(|c| &c.usec[2]), 120_000);
        assert_eq!(stats.get(|c| &c.usec[1]), 0);
        stats.add(|c| &c.dirty, 5);
        stats.reset();
        assert_eq!(stats.get(|c| &c.commands_processed), 0);
        assert_eq!(stats.get(|c| &c.usec[2]), 0);
        assert_eq!(stats.get(|c| &c.dirty), 5, "RESETSTAT leaves dirty");
        stats.add(|c| &c.commands_processed, 2);
        assert_eq!(stats.get(|c| &c.commands_processed), 2);
    }
}
