//! Active defragmentation (`activedefrag`): objects in mostly empty slabs are moved so the slabs
//! empty and their blocks go back to the heap, under a CPU budget, as Redis's `defrag.c` does
//! with jemalloc's hint.
//!
//! ```text
//!  frag% = (active / allocated − 1) × 100,  frag bytes = active − allocated
//!        over the shard heaps: their blocks in use against the bytes handed out (as
//!        `commands/memory.rs` reports them, without the global allocator, which is not moved)
//!
//!  start  when activedefrag ∧ frag% ≥ active-defrag-threshold-lower
//!                           ∧ frag bytes ≥ active-defrag-ignore-bytes
//!  cpu%   = interpolate(frag%, threshold-lower → cycle-min, threshold-upper → cycle-max),
//!           clamped to [cycle-min, cycle-max]; raised during a pass, never lowered
//!  work   each cron tick, every shard in turn: Shard::defrag_step while the tick's share
//!         (cpu% of 1000 / hz ms) lasts; a shard's walk ends when it has been over every
//!         database once
//!  stop   when every shard finished a pass: running = 0, then the check above starts again
//! ```
//! What moves is the store's business (`store::Shard::defrag_step`: out-of-line keys and
//! values of the keyspace that the heap's `defrag_hint` flags). Pages are whole blocks, so they
//! are not moved here: compaction (`evict.rs`' cron) repacks them.

use crate::config::Config;
use crate::server::Server;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The defragmenter's state and counters (INFO's `active_defrag_*`).
#[derive(Debug)]
pub struct Defrag {
    /// The CPU percent of the pass under way, 0 when none runs (`active_defrag_running`).
    running: AtomicU32,
    /// Per shard: whether its walk finished this pass (the walk's position is the shard's).
    done: Box<[AtomicBool]>,
    /// Out-of-line keys and values moved, and looked at but left (INFO's `active_defrag_hits`
    /// and `_misses`; densekv counts per blob, so the `key_` pair of INFO shows the same).
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

/// Heap figures the decision to run reads.
#[derive(Clone, Copy, Debug)]
pub struct Fragmentation {
    pub allocated: u64,
    pub active: u64,
}

impl Fragmentation {
    fn percent(self) -> f64 {
        if self.allocated == 0 {
            0.0
        } else {
            (self.active as f64 / self.allocated as f64) * 100.0 - 100.0
        }
    }

    fn bytes(self) -> u64 {
        self.active.saturating_sub(self.allocated)
    }
}

/// The heaps' allocated and active bytes now, each shard locked in turn (only while
/// `activedefrag` is on).
pub fn measure(server: &Server) -> Fragmentation {
    let mut frag = Fragmentation {
        allocated: 0,
        active: 0,
    };
    for index in 0..server.shard_count() {
        let s = server.lock_shard(index).heap().stats();
        frag.allocated += s.allocated_bytes;
        frag.active += s.resident_bytes.saturating_sub(s.dirty_bytes);
    }
    frag
}

impl Defrag {
    pub fn new(shards: usize) -> Defrag {
        Defrag {
            running: AtomicU32::new(0),
            done: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// `active_defrag_running`: the CPU percent of the pass under way, 0 when none.
    pub fn running_percent(&self) -> u32 {
        self.running.load(Ordering::Relaxed)
    }

    /// Redis's `computeDefragCycles`: starts a pass, or raises its CPU share, from the
    /// fragmentation now.
    fn compute_cycles(&self, config: &Config, frag: Fragmentation) {
        let running = self.running_percent();
        let pct = frag.percent();
        let lower = f64::from(config.active_defrag_threshold_lower);
        let upper = f64::from(config.active_defrag_threshold_upper);
        if running == 0 && (pct < lower || frag.bytes() < config.active_defrag_ignore_bytes) {
            return;
        }
        let (min, max) = (
            config.active_defrag_cycle_min,
            config.active_defrag_cycle_max,
        );
        let t = if upper > lower {
            ((pct - lower) / (upper - lower)).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let cpu = (f64::from(min) + t * f64::from(max - min)) as i32;
        let cpu = cpu.clamp(min, max.max(min)) as u32;
        if cpu > running {
            if running == 0 {
                for done in &self.done[..] {
                    done.store(false, Ordering::Relaxed);
                }
            }
            self.running.store(cpu, Ordering::Relaxed);
            crate::log::verbose(&format!(
                "Starting active defrag, frag={pct:.0}%, frag_bytes={}, cpu={cpu}%",
                frag.bytes()
            ));
        }
    }

    /// Thread 0's cron: decides, then spends this tick's share on the shards in turn.
    pub fn cron(&self, server: &Server, frag: impl FnOnce() -> Fragmentation) {
        if !server.config.read().activedefrag {
            self.running.store(0, Ordering::Relaxed);
            return;
        }
        let config = server.config.read().clone();
        self.compute_cycles(&config, frag());
        let cpu = self.running_percent();
        if cpu == 0 {
            return;
        }
        let budget = Duration::from_micros(10_000 * u64::from(cpu) / u64::from(config.hz.max(1)));
        let started = Instant::now();
        let shards = server.shard_count();
        for index in 0..shards {
            if self.done[index].load(Ordering::Relaxed) {
                continue;
            }
            let mut shard = server.lock_shard(index);
            loop {
                let (pass_done, counts) = shard.defrag_step();
                self.count(counts);
                if pass_done {
                    self.done[index].store(true, Ordering::Relaxed);
                    break;
                }
                if started.elapsed() >= budget {
                    break;
                }
            }
            drop(shard);
            if started.elapsed() >= budget {
                return;
            }
        }
        if self.done.iter().all(|d| d.load(Ordering::Relaxed)) {
            self.running.store(0, Ordering::Relaxed);
            crate::log::verbose("Active defrag done");
        }
    }

    fn count(&self, counts: store::DefragCounts) {
        let relaxed = Ordering::Relaxed;
        self.hits.fetch_add(counts.hits, relaxed);
        self.misses.fetch_add(counts.misses, relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(allocated: u64, active: u64) -> Fragmentation {
        Fragmentation { allocated, active }
    }

    #[test]
    fn a_pass_starts_above_both_thresholds_and_scales_its_cpu() {
        let defrag = Defrag::new(2);
        let config = Config {
            active_defrag_ignore_bytes: 1 << 20,
            ..Config::default()
        };
        // 5% fragmented: under threshold-lower (10%).
        defrag.compute_cycles(&config, frag(100 << 20, 105 << 20));
        assert_eq!(defrag.running_percent(), 0);
        // 20% but under ignore-bytes.
        defrag.compute_cycles(&config, frag(1 << 20, (6 << 20) / 5));
        assert_eq!(defrag.running_percent(), 0);
        // 55%: halfway from 10% to 100%, so halfway from cycle-min 1 to cycle-max 25.
        defrag.compute_cycles(&config, frag(100 << 20, 155 << 20));
        assert_eq!(defrag.running_percent(), 13);
        // Raised during a pass, never lowered.
        defrag.compute_cycles(&config, frag(100 << 20, 300 << 20));
        assert_eq!(defrag.running_percent(), 25);
        defrag.compute_cycles(&config, frag(100 << 20, 100 << 20));
        assert_eq!(defrag.running_percent(), 25);
    }
}
