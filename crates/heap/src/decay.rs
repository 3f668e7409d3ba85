//! Dirty decay: freed memory that is not reused within `dirty_decay_ms` goes back to the OS, on a
//! time schedule driven by the heap's owner (jemalloc's `dirty_decay_ms`, in its design).
//!
//! Three pools hold freed memory that is still resident, and decay drains all three:
//! ```text
//!  pool                           unit     drained by                       where
//!  dirty free runs + quick cache  blocks   MADV_DONTNEED (longest first);   blocks.rs
//!                                          a wholly free megablock → arena
//!  kept empty slabs (≤ 1/class)   slabs    blocks back to the runs, once    slab.rs
//!                                          empty for EPOCHS epochs
//!  large cache (cached, pending)  bytes    coldest region → arena           large.rs
//! ```
//!
//! The owner calls `Heap::decay(now_ms)` every ~100 ms (the server's cron). Time is cut into
//! `EPOCHS` = 10 epochs per `dirty_decay_ms` (100 ms each by default). Between epoch boundaries a
//! call returns at once; at a boundary, each pool's growth since the last boundary (its size now
//! minus its size after the last purge, or 0) enters a ring of the last 10 epochs, and the pool may
//! keep
//! ```text
//!  limit = Σ_age  added[age] · (1 − smoothstep((age + 1) / 10))      age 0 = the newest epoch
//!        weights  0.97 0.90 0.78 0.65 0.50 0.35 0.22 0.10 0.03 0.00
//! ```
//! bytes (never less than `dirty_reserve_bytes` for the block pool while blocks are being
//! taken), purging the rest. Memory
//! freed in one burst is thus half gone after half the decay time and all gone after it, and a
//! pool that stays the same size (steady churn, freed and reused within an epoch) adds nothing and
//! drains to the reserve in `dirty_decay_ms`. Counting growth rather than stamping each run keeps
//! alloc and free free of clocks and of any per-run state; which runs go first is the purge's
//! choice (longest first), as jemalloc's count-based limit leaves to its LRU. The smoothstep curve
//! is jemalloc's too: a linear one purges a fresh burst's first tenth at the first epoch, while
//! smoothstep waits, so memory freed just before a refill is still there for it.
//!
//! Work per call is bounded: at most `DECAY_STEPS_MAX` purges (each one `madvise` or one region
//! released) and one quick-cache flush; a call that hits the bound marks the heap `behind`, and the
//! next call continues without waiting for an epoch. With nothing dirty a boundary costs a few
//! comparisons and clearing the ring once.

use crate::{BLOCK_BYTES, Heap};

/// Epochs per decay time.
pub(crate) const EPOCHS: usize = 10;
/// Purges (runs, regions, slabs) per `decay` call at most.
pub(crate) const DECAY_STEPS_MAX: u32 = 256;
const WEIGHT_ONE: u64 = 1 << 16;
/// `WEIGHTS[age] / WEIGHT_ONE` of what was added `age` epochs ago may stay resident.
const WEIGHTS: [u64; EPOCHS] = build_weights();

/// `1 − smoothstep(x)` at `x = (age + 1) / EPOCHS`, with `smoothstep(x) = 3x² − 2x³`, in
/// `WEIGHT_ONE` units: exact integer arithmetic over `EPOCHS³`.
const fn build_weights() -> [u64; EPOCHS] {
    let n = EPOCHS as u64;
    let mut weights = [0; EPOCHS];
    let mut age = 0;
    while age < EPOCHS {
        let a = age as u64 + 1;
        let smooth = (3 * a * a * n - 2 * a * a * a) * WEIGHT_ONE / (n * n * n);
        weights[age] = WEIGHT_ONE - smooth;
        age += 1;
    }
    weights
}

const _: () = assert!(WEIGHTS[EPOCHS - 1] == 0 && WEIGHTS[0] < WEIGHT_ONE);

/// One pool's growth over the last `EPOCHS` epochs.
#[derive(Debug, Default)]
struct Backlog {
    /// `added[age]`: what the pool grew by in the epoch that ended `age` epochs ago.
    added: [u64; EPOCHS],
    /// The pool's size after the last decay call.
    last: u64,
}

impl Backlog {
    /// Moves the ring on by `epochs` and records the growth since the last call as the newest.
    fn advance(&mut self, epochs: u64, current: u64) {
        let shift = epochs.min(EPOCHS as u64) as usize;
        self.added.rotate_right(shift);
        self.added[..shift].fill(0);
        self.added[0] = current.saturating_sub(self.last);
    }

    /// What the pool may keep.
    fn limit(&self) -> u64 {
        self.added
            .iter()
            .zip(WEIGHTS)
            .map(|(&added, weight)| ((u128::from(added) * u128::from(weight)) >> 16) as u64)
            .sum()
    }

    fn clear(&mut self) {
        *self = Backlog::default();
    }
}

/// The decay clock and the backlogs of the block pool (blocks) and the large cache (bytes).
#[derive(Debug)]
pub(crate) struct Decay {
    /// Epochs since the first `decay` call; kept empty slabs are stamped with it.
    pub epoch: u64,
    epoch_ms: u64,
    /// `dirty_decay_ms == 0`: purge everything above the reserve at every call.
    immediate: bool,
    /// When the next epoch starts; `None` before the first call.
    next_ms: Option<u64>,
    /// The last call stopped at its work bound.
    behind: bool,
    /// Both backlogs are clear (so an idle heap clears them once, not at every epoch).
    idle: bool,
    /// `Counters::blocks_taken` when last seen, and the epochs since it last changed: after
    /// `EPOCHS` of them (a whole decay time without a block taken) the reserve is not kept.
    taken_seen: u64,
    untaken_epochs: u64,
    blocks: Backlog,
    large: Backlog,
    /// Resident bytes released by `decay` since the heap was made.
    pub released_bytes: u64,
}

impl Decay {
    pub fn new(decay_ms: u64) -> Decay {
        Decay {
            epoch: 0,
            epoch_ms: (decay_ms / EPOCHS as u64).max(1),
            immediate: decay_ms == 0,
            next_ms: None,
            behind: false,
            idle: true,
            taken_seen: 0,
            untaken_epochs: 0,
            blocks: Backlog::default(),
            large: Backlog::default(),
            released_bytes: 0,
        }
    }

    /// Epoch boundaries passed by `now_ms` since the last call (the first call counts as one).
    fn tick(&mut self, now_ms: u64) -> u64 {
        let passed = match self.next_ms {
            None => 1,
            Some(next) if now_ms < next => return 0,
            Some(next) => (now_ms - next) / self.epoch_ms + 1,
        };
        self.next_ms = Some(now_ms - now_ms % self.epoch_ms + self.epoch_ms);
        self.epoch += passed;
        passed
    }

    /// Counts the epochs passed without a block taken (`taken`: the heap's count so far).
    fn note_taken(&mut self, epochs: u64, taken: u64) {
        if taken == self.taken_seen {
            self.untaken_epochs += epochs;
        } else {
            (self.taken_seen, self.untaken_epochs) = (taken, 0);
        }
    }

    /// Forgets both backlogs: nothing is left to age.
    pub fn rest(&mut self) {
        if !self.idle {
            self.blocks.clear();
            self.large.clear();
            self.idle = true;
        }
        self.behind = false;
    }
}

impl<const D: usize> Heap<D> {
    /// Returns freed memory that was not reused within `dirty_decay_ms` to the OS, and returns
    /// how many resident bytes that released (by the `stats()` estimate). The owner calls it
    /// every ~100 ms with a monotonic clock in milliseconds; calls between epochs (a tenth of
    /// `dirty_decay_ms`) return at once, and a call does a bounded amount of work (see
    /// `decay.rs`). Without calls, only the hard bounds (`dirty_bytes_max`,
    /// `large_cache_bytes_max`) give memory back.
    pub fn decay(&mut self, now_ms: u64) -> usize {
        let epochs = self.decay.tick(now_ms);
        if epochs == 0 && !self.decay.behind {
            return 0;
        }
        let (pool, cache) = self.decay_pools();
        if pool == 0 && cache == 0 && self.slabs.empty_classes == 0 {
            self.decay.rest();
            return 0;
        }
        self.decay.idle = false;
        let before = self.resident_estimate();
        let mut budget = DECAY_STEPS_MAX;
        // Blocks of slabs that emptied long ago are old dirt, not growth of this epoch.
        let slab_blocks = self.release_empty_slabs(EPOCHS as u64, &mut budget);
        self.decay.blocks.last += slab_blocks;
        let (pool, cache) = self.decay_pools();
        if epochs > 0 {
            self.decay.blocks.advance(epochs, pool);
            self.decay.large.advance(epochs, cache);
        }
        self.decay.note_taken(epochs, self.counters.blocks_taken);
        // The reserve serves churn: a heap that took no block for a whole decay time keeps none
        // (jemalloc, which keeps no reserve, ends in the same place).
        let reserve = if self.decay.untaken_epochs >= EPOCHS as u64 {
            0
        } else {
            (self.config.dirty_reserve_bytes / BLOCK_BYTES) as u64
        };
        let (block_limit, large_limit) = if self.decay.immediate {
            (reserve, 0)
        } else {
            (
                self.decay.blocks.limit().max(reserve),
                self.decay.large.limit(),
            )
        };
        self.shrink_block_pool(block_limit, &mut budget);
        self.shrink_large_cache(large_limit, &mut budget);
        let (pool, cache) = self.decay_pools();
        self.decay.blocks.last = pool;
        self.decay.large.last = cache;
        self.decay.behind = budget == 0;
        self.check_if_expensive();
        let released = before.saturating_sub(self.resident_estimate());
        self.decay.released_bytes += released;
        released as usize
    }

    /// The block pool (dirty free blocks and quick-cached blocks) and the large cache (bytes).
    fn decay_pools(&self) -> (u64, u64) {
        (
            self.runs.dirty_blocks + self.quick.blocks,
            self.large.cached_bytes + self.large.pending_bytes,
        )
    }

    /// Purges dirty runs until the block pool holds at most `limit` blocks; the quick cache, the
    /// hottest part, is coalesced and purged only when it alone is over the limit.
    fn shrink_block_pool(&mut self, limit: u64, budget: &mut u32) {
        let quick = self.quick.blocks;
        self.purge_runs(limit.saturating_sub(quick), budget);
        if quick > 0 && self.runs.dirty_blocks + self.quick.blocks > limit && *budget > 0 {
            self.flush_quick();
            *budget -= 1;
            self.purge_runs(limit, budget);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn weights_fall_from_one_to_zero_along_smoothstep() {
        let percent: Vec<u64> = WEIGHTS.iter().map(|w| w * 100 / WEIGHT_ONE).collect();
        assert_eq!(percent, [97, 89, 78, 64, 50, 35, 21, 10, 2, 0]);
        assert!(WEIGHTS.windows(2).all(|w| w[0] > w[1]));
    }

    #[test]
    fn a_burst_decays_over_the_epochs() {
        let mut backlog = Backlog::default();
        backlog.advance(1, 1000);
        let mut limits = vec![backlog.limit()];
        for _ in 1..EPOCHS {
            backlog.last = limits[limits.len() - 1];
            backlog.advance(1, backlog.last);
            limits.push(backlog.limit());
        }
        assert_eq!(limits[0], 972);
        assert_eq!(limits[4], 500);
        assert_eq!(limits[EPOCHS - 1], 0);
        // Growth only counts once: a pool that stays put adds nothing.
        backlog.advance(3, 0);
        assert_eq!(backlog.limit(), 0);
    }

    #[test]
    fn the_clock_counts_passed_epochs() {
        let mut decay = Decay::new(1000);
        assert_eq!(decay.tick(5_050), 1, "the first call is a boundary");
        assert_eq!(decay.tick(5_099), 0);
        assert_eq!(decay.tick(5_100), 1);
        assert_eq!(decay.tick(5_450), 3);
        assert_eq!(decay.tick(5_420), 0, "a clock going back passes nothing");
        assert_eq!(decay.epoch, 5);
    }
}
