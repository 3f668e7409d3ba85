//! `maxmemory`: the memory gauge, the check before every command, and eviction across shards.
//!
//! ```text
//!  used = alloc::allocated_bytes()            global allocator: boxed collections, client
//!       + Σ shard_bytes[i]                    buffers, the command table…; each shard's heap
//!                                             as its last command left it (published after
//!                                             every command while maxmemory is set)
//!
//!  before a command (dispatch), when maxmemory > 0 and used > maxmemory:
//!    policy noeviction                         → over
//!    else repeat: shard = next (round-robin)   → Shard::evict(request)  ≤ 16 keys, ≤ 1,024 entries
//!             until used ≤ maxmemory           → ok
//!                or every shard came back empty → over
//!                or the tenacity budget is spent → ok for now: the cron goes on evicting
//!  over ∧ (the command is DENYOOM ∨ queued in MULTI) → -OOM command not allowed when used memory > 'maxmemory'.
//! ```
//!
//! As in Redis (`evict.c`), the check runs before every command, not only before writes, the
//! time budget is `maxmemory-eviction-tenacity`'s (50 µs × tenacity up to 10, then +15% a step,
//! unbounded at 100), and nothing is evicted while the dataset loads. Shards are taken in turn
//! so each gives up keys in proportion to the eviction calls, and a call holds one shard lock
//! for a bounded number of entries, so other threads' commands wait at most that long.
//!
//! What an eviction leaves: `evicted_keys`, a DEL (or UNLINK under `lazyfree-lazy-eviction`)
//! in the append-only file, the `evicted` keyspace event, WATCH invalidation (`buried`); an
//! expired key the picker meets is deleted as expired (its DEL and `expired` event). The
//! picking itself is the store's (`store::Shard::evict`, its `access.rs`).

use crate::command::Locks;
use crate::config::Config;
use crate::notify::class::EVICTED;
use crate::server::Server;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use store::{AccessPolicy, EvictRequest, Picker, Scope, Shard};

/// Keys one eviction call takes from a shard, at most (a bucket's worth more under CLOCK).
const KEYS_PER_CALL: usize = 16;
/// Entries one eviction call looks at, at most.
const VISITS_PER_CALL: usize = 1_024;
/// Entries the aging cron looks at per shard per tick.
const AGE_VISITS_PER_TICK: usize = 2_048;
/// The shortest aging pass (LRU): OBJECT IDLETIME's resolution on a small keyspace.
const AGE_PASS_MIN_MS: u64 = 1_000;
/// Compaction the cron does per shard per tick, at most (deletes of half of 1M keys are
/// compacted in about two seconds at this pace).
const COMPACT_PER_TICK: Duration = Duration::from_millis(1);
/// Compaction units after each eviction call: what the evicted keys freed comes back as pages.
const COMPACT_UNITS_PER_EVICTION: usize = 64;

/// Every distinct `Policy`, indexed by what `Eviction::policy` stores.
const POLICIES: [Policy; 6] = [
    Policy::NoEviction,
    Policy::Evict(Picker::Clock, Scope::AllKeys),
    Policy::Evict(Picker::Clock, Scope::Volatile),
    Policy::Evict(Picker::Random, Scope::AllKeys),
    Policy::Evict(Picker::Random, Scope::Volatile),
    Policy::Evict(Picker::Ttl, Scope::Volatile),
];

/// `maxmemory-policy`, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    Evict(Picker, Scope),
}

impl Policy {
    pub fn parse(name: &str) -> Policy {
        match name {
            "allkeys-lru" | "allkeys-lfu" => Policy::Evict(Picker::Clock, Scope::AllKeys),
            "volatile-lru" | "volatile-lfu" => Policy::Evict(Picker::Clock, Scope::Volatile),
            "allkeys-random" => Policy::Evict(Picker::Random, Scope::AllKeys),
            "volatile-random" => Policy::Evict(Picker::Random, Scope::Volatile),
            "volatile-ttl" => Policy::Evict(Picker::Ttl, Scope::Volatile),
            _ => Policy::NoEviction,
        }
    }

    /// The policy's place in `POLICIES` (what the shared state stores).
    fn index(self) -> u8 {
        POLICIES
            .iter()
            .position(|&p| p == self)
            .expect("every policy is listed") as u8
    }
}

/// How accesses count under `config`: LFU for the two LFU policies, LRU otherwise (Redis tracks
/// the LRU clock unless an LFU policy is set).
pub fn access_policy(config: &Config) -> AccessPolicy {
    if config.maxmemory_policy.ends_with("-lfu") {
        AccessPolicy::Lfu {
            log_factor: u32::try_from(config.lfu_log_factor).unwrap_or(0),
        }
    } else {
        AccessPolicy::Lru
    }
}

/// Whether the policy is one of the LFU ones (OBJECT FREQ / IDLETIME).
pub fn is_lfu(config: &Config) -> bool {
    config.maxmemory_policy.ends_with("-lfu")
}

/// The eviction state every thread shares.
#[derive(Debug)]
pub struct Eviction {
    limit: AtomicU64,
    policy: AtomicU8,
    samples: AtomicU32,
    tenacity: AtomicU32,
    /// `lfu-decay-time` in minutes; with LFU, aging passes are at least this far apart.
    lfu_decay_minutes: AtomicU32,
    lazy: std::sync::atomic::AtomicBool,
    /// Heap bytes of each shard, as its last command left them.
    shard_bytes: Box<[AtomicU64]>,
    /// The shard the next eviction call starts at.
    next_shard: AtomicUsize,
    /// When each shard's next aging pass may start (Unix ms).
    next_age_ms: Box<[AtomicU64]>,
    pub evicted_keys: AtomicU64,
    /// Microseconds spent over the limit, finished episodes (`total_eviction_exceeded_time`).
    exceeded_total_us: AtomicU64,
    /// When the current episode over the limit began (µs since `origin`, 0: none).
    exceeded_since_us: AtomicU64,
    origin: Instant,
}

/// What the check before a command found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Under the limit (or no limit, or eviction still working within its budget).
    Ok,
    /// Over the limit with nothing left to evict (or `noeviction`).
    Over,
}

impl Eviction {
    pub fn new(config: &Config) -> Eviction {
        let shards = config.shards;
        let eviction = Eviction {
            limit: AtomicU64::new(0),
            policy: AtomicU8::new(0),
            samples: AtomicU32::new(5),
            tenacity: AtomicU32::new(10),
            lfu_decay_minutes: AtomicU32::new(1),
            lazy: std::sync::atomic::AtomicBool::new(false),
            shard_bytes: (0..shards).map(|_| AtomicU64::new(0)).collect(),
            next_shard: AtomicUsize::new(0),
            next_age_ms: (0..shards).map(|_| AtomicU64::new(0)).collect(),
            evicted_keys: AtomicU64::new(0),
            exceeded_total_us: AtomicU64::new(0),
            exceeded_since_us: AtomicU64::new(0),
            origin: Instant::now(),
        };
        eviction.configure(config);
        eviction
    }

    /// Takes the eviction directives of `config` (startup, CONFIG SET).
    pub fn configure(&self, config: &Config) {
        let relaxed = Ordering::Relaxed;
        self.limit.store(config.maxmemory, relaxed);
        let policy = Policy::parse(&config.maxmemory_policy);
        self.policy.store(policy.index(), relaxed);
        self.samples.store(
            u32::try_from(config.maxmemory_samples).unwrap_or(5),
            relaxed,
        );
        self.tenacity.store(
            u32::try_from(config.maxmemory_eviction_tenacity).unwrap_or(10),
            relaxed,
        );
        self.lfu_decay_minutes
            .store(u32::try_from(config.lfu_decay_time).unwrap_or(0), relaxed);
        self.lazy.store(config.lazyfree_lazy_eviction, relaxed);
    }

    /// Whether `maxmemory` is set: the one load the command path pays without a limit.
    #[inline]
    pub fn limited(&self) -> bool {
        self.limit.load(Ordering::Relaxed) > 0
    }

    fn policy(&self) -> Policy {
        POLICIES[usize::from(self.policy.load(Ordering::Relaxed))]
    }

    /// Records the heap bytes of the shards `locks` holds, after a command ran.
    pub fn publish(&self, locks: &mut Locks<'_>) {
        for (index, shard) in locks.iter_indexed() {
            self.publish_shard(index, shard);
        }
    }

    fn publish_shard(&self, index: usize, shard: &Shard) {
        self.shard_bytes[index].store(shard.heap_bytes(), Ordering::Relaxed);
    }

    /// Whether memory is over `maxmemory` now (Redis's `pre_command_oom_state`, read by a
    /// script as it starts: eviction ran before the command).
    pub fn over_limit(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        limit > 0 && self.used_bytes() > limit
    }

    /// Memory counted against `maxmemory` (see the module doc).
    pub fn used_bytes(&self) -> u64 {
        let heaps: u64 = self
            .shard_bytes
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .sum();
        // Redis leaves out its AOF buffer; densekv's is written out every loop turn, before
        // the replies, so it is left in (a few KiB between turns).
        crate::alloc::allocated_bytes() as u64 + heaps
    }

    /// Redis's `performEvictions`: evicts until under the limit, nothing is left, or the time
    /// budget is spent.
    pub fn perform(&self, server: &Server, now_ms: u64) -> Outcome {
        let limit = self.limit.load(Ordering::Relaxed);
        if limit == 0 || server.persistence.load.loading.load(Ordering::Relaxed) {
            return Outcome::Ok;
        }
        if self.used_bytes() <= limit {
            self.note_exceeded(false);
            return Outcome::Ok;
        }
        self.note_exceeded(true);
        let Policy::Evict(picker, scope) = self.policy() else {
            return Outcome::Over;
        };
        let request = EvictRequest {
            picker,
            scope,
            samples: self.samples.load(Ordering::Relaxed) as usize,
            max_keys: KEYS_PER_CALL,
            max_visits: VISITS_PER_CALL,
        };
        let budget = self.time_limit();
        let started = Instant::now();
        let shards = server.shard_count();
        let mut empty_in_a_row = 0;
        let mut evicted = Vec::new();
        loop {
            let index = self.next_shard.fetch_add(1, Ordering::Relaxed) % shards;
            // A busy script holds every shard; Redis does not evict inside one either.
            let Some(mut shard) = server.lock_shard_unless_busy(index) else {
                return Outcome::Ok;
            };
            let step = shard.evict(&request, now_ms, &mut evicted);
            shard.compact(COMPACT_UNITS_PER_EVICTION);
            crate::propagate::expired(server, &mut shard);
            self.buried(server, &mut evicted);
            self.publish_shard(index, &shard);
            drop(shard);
            empty_in_a_row = if step.empty && step.evicted == 0 && step.expired == 0 {
                empty_in_a_row + 1
            } else {
                0
            };
            if self.used_bytes() <= limit {
                self.note_exceeded(false);
                return Outcome::Ok;
            }
            if empty_in_a_row >= shards {
                return Outcome::Over;
            }
            if budget.is_some_and(|b| started.elapsed() >= b) {
                return Outcome::Ok;
            }
        }
    }

    /// What an evicted key leaves behind (see the module doc).
    fn buried(&self, server: &Server, evicted: &mut Vec<(usize, Vec<u8>)>) {
        if evicted.is_empty() {
            return;
        }
        self.evicted_keys
            .fetch_add(evicted.len() as u64, Ordering::Relaxed);
        let lazy = self.lazy.load(Ordering::Relaxed);
        crate::propagate::evicted(server, evicted, lazy);
        crate::tracking::deleted(server, evicted);
        for (db, key) in evicted.iter() {
            // Redis's `performEvictions` sends it after the deletion, as no client's.
            crate::notify::notify(server, EVICTED, "evicted", key, *db, None);
            server.touch_watchers(*db, key);
        }
        evicted.clear();
    }

    /// Redis's `evictionTimeLimitUs`; `None`: unlimited (tenacity 100).
    fn time_limit(&self) -> Option<Duration> {
        let tenacity = self.tenacity.load(Ordering::Relaxed);
        match tenacity {
            0..=10 => Some(Duration::from_micros(50 * u64::from(tenacity))),
            11..=99 => Some(Duration::from_secs_f64(
                500e-6 * 1.15f64.powi(tenacity as i32 - 10),
            )),
            _ => None,
        }
    }

    fn note_exceeded(&self, over: bool) {
        let now = self.origin.elapsed().as_micros() as u64 + 1;
        let since = self.exceeded_since_us.load(Ordering::Relaxed);
        if over && since == 0 {
            self.exceeded_since_us.store(now, Ordering::Relaxed);
        } else if !over && since != 0 {
            self.exceeded_since_us.store(0, Ordering::Relaxed);
            self.exceeded_total_us
                .fetch_add(now - since, Ordering::Relaxed);
        }
    }

    /// INFO's `total_eviction_exceeded_time` and `current_eviction_exceeded_time`, in ms.
    pub fn exceeded_ms(&self) -> (u64, u64) {
        let since = self.exceeded_since_us.load(Ordering::Relaxed);
        let current = if since == 0 {
            0
        } else {
            (self.origin.elapsed().as_micros() as u64 + 1).saturating_sub(since)
        };
        let total = self.exceeded_total_us.load(Ordering::Relaxed) + current;
        (total / 1000, current / 1000)
    }

    /// The cron's share of memory work for the shards thread `index` of `threads` looks after
    /// (`index, index + threads, …`): compaction of sparse keyspace pages (up to 1 ms a shard),
    /// each heap's decay (freed memory back to the OS), aging at
    /// a bounded rate (passes paced per `AGE_PASS_MIN_MS`, or `lfu-decay-time` under LFU); and
    /// on thread 0, evicting while over the limit (Redis's eviction time proc) and trimming an
    /// idle glibc (`alloc::trim_when_idle`).
    pub fn cron(&self, server: &Server, index: usize, threads: usize, now_ms: u64) {
        let lfu = matches!(
            access_policy(&server.config.read()),
            AccessPolicy::Lfu { .. }
        );
        let pass_gap_ms = if lfu {
            u64::from(self.lfu_decay_minutes.load(Ordering::Relaxed)) * 60_000
        } else {
            AGE_PASS_MIN_MS
        };
        let monotonic_ms = self.origin.elapsed().as_millis() as u64;
        for shard in (index..server.shard_count()).step_by(threads.max(1)) {
            let Some(mut guard) = server.try_lock_shard(shard) else {
                continue;
            };
            let started = Instant::now();
            while started.elapsed() < COMPACT_PER_TICK && guard.compact(64) {}
            guard.decay(monotonic_ms);
            if !lfu || pass_gap_ms > 0 {
                self.age_shard(shard, &mut guard, now_ms, pass_gap_ms);
            }
            self.publish_shard(shard, &guard);
        }
        if index == 0 && self.limited() {
            self.perform(server, now_ms);
        }
        if index == 0 {
            crate::alloc::trim_when_idle(monotonic_ms);
        }
    }

    fn age_shard(&self, index: usize, shard: &mut Shard, now_ms: u64, pass_gap_ms: u64) {
        let next = &self.next_age_ms[index];
        if now_ms < next.load(Ordering::Relaxed) {
            return;
        }
        let (_, pass_done) = shard.age(AGE_VISITS_PER_TICK, now_ms);
        if pass_done {
            next.store(now_ms + pass_gap_ms, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_round_trip_through_their_index() {
        for name in [
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
        ] {
            let policy = Policy::parse(name);
            assert_eq!(POLICIES[usize::from(policy.index())], policy, "{name}");
            assert_eq!(policy == Policy::NoEviction, name == "noeviction");
        }
        assert_eq!(
            Policy::parse("volatile-ttl"),
            Policy::Evict(Picker::Ttl, Scope::Volatile)
        );
    }
}
