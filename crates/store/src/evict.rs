//! Eviction and aging: the shard's hand, a walk of its keyspace in SCAN order that ages the
//! access levels (`access.rs`) and, when the server is over `maxmemory`, evicts.
//!
//! ```text
//!  Hand { db, cursor }   one bucket per step; cursor 0 → next database with keys;
//!                        back at the first database = one pass (`pass_ms` = its duration)
//!
//!  step, per live entry e of the bucket (eligible: every key, or only keys with a TTL):
//!    evicting ∧ eligible(e) ∧ level(e) = 0   → evicted
//!    eligible(e) ∧ level(e) > 0              → level(e) − 1          (CLOCK's second chance)
//!    TTL passed                              → deleted as expired (evicting only)
//! ```
//!
//! Policies, by what picks the victim:
//! - `Clock` (allkeys-lru/lfu, volatile-lru/lfu): the hand, as above. A key survives three
//!   passes without a use, so the keys evicted are those not used for the longest, in four
//!   classes; under LFU hits raise the level logarithmically and the passes are the decay.
//! - `Random` (allkeys-random, volatile-random): a uniformly sampled key (`PageHash::sample`);
//!   volatile draws up to `RANDOM_TRIES` times for a key with a TTL, then takes the hand's next.
//! - `Ttl` (volatile-ttl): the next `samples` keys with a TTL the hand meets join a pool of the
//!   `POOL_SIZE` nearest expiries seen so far, and the nearest is evicted (Redis's eviction
//!   pool, filled by `maxmemory-samples` keys per call the same way).
//!
//! Work is bounded per call by `EvictRequest::max_visits` entries; the server spreads calls over
//! the shards in turn and stops when used memory is back under the limit or its time budget
//! (`maxmemory-eviction-tenacity`) is spent. Aging without eviction (`age`) runs from the
//! server's cron at a bounded rate, so OBJECT IDLETIME means something when nothing is evicted.
//!
//! Invariant (checked by the model test): an evicting step never removes a key that is not
//! eligible, and a `Clock` victim had level 0 when the hand reached it.

use crate::access::{AccessPolicy, FREQ_OF_LEVEL, LEVEL_MAX};
use crate::shard::{Shard, split_value};
use maps::{Meta, PageHash};

/// Draws of `Random` for a key with a TTL before the hand's next one is taken.
const RANDOM_TRIES: usize = 16;
/// Buckets `Ttl` walks at most to find its `samples` keys with a TTL.
const TTL_STEPS_MAX: usize = 256;
/// Candidates `Ttl` keeps between calls (Redis's EVPOOL_SIZE).
const POOL_SIZE: usize = 16;

/// Where the hand is, and how long its last pass took.
#[derive(Clone, Debug, Default)]
pub(crate) struct Hand {
    db: usize,
    cursor: u64,
    /// When the pass in progress started (Unix ms; 0 before the first step).
    pass_started_ms: u64,
    /// How long the last complete pass took (0 before one completes).
    pass_ms: u64,
    /// Passes completed.
    passes: u64,
    /// `Ttl`'s candidates: (expiry, database, key), nearest expiry last.
    pool: Vec<(u64, usize, Vec<u8>)>,
}

/// Which keys a policy may evict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    AllKeys,
    /// Only keys with a TTL (`volatile-*`).
    Volatile,
}

/// How the victim is picked (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Picker {
    Clock,
    Random,
    Ttl,
}

/// One eviction call's parameters.
#[derive(Clone, Copy, Debug)]
pub struct EvictRequest {
    pub picker: Picker,
    pub scope: Scope,
    /// `maxmemory-samples`: the keys `Ttl` compares.
    pub samples: usize,
    /// Keys to evict in this call: it stops once this many are (a bucket's victims go
    /// together, so `Clock` may take a bucket's worth more).
    pub max_keys: usize,
    /// Entries to look at, at most, in this call.
    pub max_visits: usize,
}

/// What one eviction call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvictStep {
    pub evicted: usize,
    /// Keys met whose TTL had passed (deleted as expired, not evicted).
    pub expired: usize,
    pub visited: usize,
    /// The shard holds no key this scope may evict.
    pub empty: bool,
}

/// What the hand does to the entries of a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Visit {
    Age,
    Evict(Scope),
}

/// A key a hand step chose.
enum Doomed {
    Evict(Vec<u8>),
    Expired(Vec<u8>),
}

impl Shard {
    /// How accesses count from now on (`maxmemory-policy`: LFU or not; `lfu-log-factor`).
    /// Levels stay as they are: as in Redis, switching takes a while to mean something.
    pub fn set_access_policy(&mut self, policy: AccessPolicy) {
        self.access.policy = policy;
    }

    /// Records a use of `key` without reading it (TOUCH); false when it does not exist.
    pub fn touch_key(&mut self, db: usize, key: &[u8], now_ms: u64) -> bool {
        self.with_entry(db, key, now_ms, |_| ()).is_some()
    }

    /// OBJECT IDLETIME in seconds, estimated from the key's level and the hand's last pass.
    pub fn idle_secs(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<u64> {
        let level = self.level(db, key, now_ms)?;
        let pass_ms = match self.hand.pass_ms {
            0 if self.hand.pass_started_ms > 0 => now_ms.saturating_sub(self.hand.pass_started_ms),
            pass => pass,
        };
        Some(u64::from(LEVEL_MAX - level) * pass_ms / 1000)
    }

    /// OBJECT FREQ: the counter Redis would show for the key's level.
    pub fn frequency(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<u8> {
        self.level(db, key, now_ms)
            .map(|level| FREQ_OF_LEVEL[usize::from(level)])
    }

    fn level(&mut self, db: usize, key: &[u8], now_ms: u64) -> Option<u8> {
        let keys = self.dbs[db].keys.as_ref()?;
        let meta = keys.meta(&self.heap, key)?;
        self.peek_entry(db, key, now_ms, |_| ())?;
        Some(meta.level())
    }

    /// Ages up to `max_visits` entries, evicting nothing, and stops at the end of a pass (the
    /// caller paces the passes: one takes the cron as long as the keyspace needs). Returns the
    /// entries visited and whether a pass ended.
    pub fn age(&mut self, max_visits: usize, now_ms: u64) -> (usize, bool) {
        let mut visited = 0;
        let mut doomed = Vec::new();
        while visited < max_visits {
            let passes = self.hand.passes;
            let Some((_, seen)) = self.hand_step(Visit::Age, now_ms, &mut doomed) else {
                break;
            };
            visited += seen.max(1);
            if self.hand.passes != passes {
                return (visited, true);
            }
        }
        (visited, false)
    }

    /// Evicts by `request` (see the module doc), appending each evicted key as (database, name)
    /// to `out`.
    pub fn evict(
        &mut self,
        request: &EvictRequest,
        now_ms: u64,
        out: &mut Vec<(usize, Vec<u8>)>,
    ) -> EvictStep {
        let mut step = EvictStep {
            empty: !self.any_eligible(request.scope),
            ..EvictStep::default()
        };
        while !step.empty && step.evicted < request.max_keys && step.visited < request.max_visits {
            let before = out.len();
            match request.picker {
                Picker::Clock => self.evict_clock(request.scope, now_ms, &mut step, out),
                Picker::Random => self.evict_random(request.scope, now_ms, &mut step, out),
                Picker::Ttl => self.evict_ttl(request, now_ms, &mut step, out),
            }
            step.evicted += out.len() - before;
            step.empty = !self.any_eligible(request.scope);
        }
        step
    }

    fn any_eligible(&self, scope: Scope) -> bool {
        self.dbs.iter().any(|d| match scope {
            Scope::AllKeys => d.keys.as_ref().is_some_and(|k| !k.is_empty()),
            Scope::Volatile => d.expires > 0,
        })
    }

    fn evict_clock(
        &mut self,
        scope: Scope,
        now_ms: u64,
        step: &mut EvictStep,
        out: &mut Vec<(usize, Vec<u8>)>,
    ) {
        let mut doomed = Vec::new();
        let Some((db, seen)) = self.hand_step(Visit::Evict(scope), now_ms, &mut doomed) else {
            step.empty = true;
            return;
        };
        step.visited += seen.max(1);
        self.bury(db, doomed, step, out);
    }

    fn evict_random(
        &mut self,
        scope: Scope,
        now_ms: u64,
        step: &mut EvictStep,
        out: &mut Vec<(usize, Vec<u8>)>,
    ) {
        let tries = if scope == Scope::AllKeys {
            1
        } else {
            RANDOM_TRIES
        };
        for _ in 0..tries {
            let Some(db) = self.next_db_with_keys(scope) else {
                return;
            };
            step.visited += 1;
            let r = self.access.random();
            let keys = self.dbs[db].keys.as_ref().expect("a database with keys");
            let Some((key, value)) = keys.sample(&self.heap, r) else {
                continue;
            };
            let entry = split_value(value);
            let (key, ttl) = (key.to_vec(), entry.expire_at_ms);
            if scope == Scope::Volatile && ttl.is_none() {
                continue;
            }
            let doomed = match ttl {
                Some(at) if at <= now_ms => Doomed::Expired(key),
                _ => Doomed::Evict(key),
            };
            self.bury(db, vec![doomed], step, out);
            return;
        }
        // No key with a TTL drawn: the hand's next one.
        self.evict_ttl(
            &EvictRequest {
                picker: Picker::Ttl,
                scope,
                samples: 1,
                max_keys: 1,
                max_visits: usize::MAX,
            },
            now_ms,
            step,
            out,
        );
    }

    /// Samples the next `samples` keys with a TTL from the hand into the pool, then evicts the
    /// pool's nearest expiry that still has it.
    fn evict_ttl(
        &mut self,
        request: &EvictRequest,
        now_ms: u64,
        step: &mut EvictStep,
        out: &mut Vec<(usize, Vec<u8>)>,
    ) {
        let mut seen = 0;
        for _ in 0..TTL_STEPS_MAX {
            if seen >= request.samples.max(1) {
                break;
            }
            let Some(db) = self.next_db_with_keys(Scope::Volatile) else {
                break;
            };
            let keys = self.dbs[db].keys.as_ref().expect("a database with keys");
            let pool = &mut self.hand.pool;
            self.hand.cursor = keys.scan(&self.heap, self.hand.cursor, |key, value| {
                step.visited += 1;
                if let Some(at) = split_value(value).expire_at_ms {
                    seen += 1;
                    pool_offer(pool, at, db, key);
                }
            });
            self.advance(now_ms);
        }
        while let Some((at, db, key)) = self.hand.pool.pop() {
            let current = self.dbs[db]
                .keys
                .as_ref()
                .and_then(|k| k.get(&self.heap, &key))
                .map(|v| split_value(v).expire_at_ms);
            if current != Some(Some(at)) {
                continue; // deleted or changed since it was sampled
            }
            let doomed = if at <= now_ms {
                Doomed::Expired(key)
            } else {
                Doomed::Evict(key)
            };
            self.bury(db, vec![doomed], step, out);
            return;
        }
    }

    /// Deletes what a step chose in `db`: evicted keys go to `out`, expired ones are counted
    /// (and logged) as expired.
    fn bury(
        &mut self,
        db: usize,
        doomed: Vec<Doomed>,
        step: &mut EvictStep,
        out: &mut Vec<(usize, Vec<u8>)>,
    ) {
        for d in doomed {
            match d {
                Doomed::Evict(key) => {
                    if let Some(taken) = self.take_raw(db, &key) {
                        self.release(taken);
                        out.push((db, key));
                    }
                }
                Doomed::Expired(key) => {
                    self.delete_expired(db, &key);
                    step.expired += 1;
                }
            }
        }
    }

    /// One bucket under the hand (see the module doc): its database and the entries seen,
    /// `None` when no database has a key to visit.
    fn hand_step(
        &mut self,
        visit: Visit,
        now_ms: u64,
        doomed: &mut Vec<Doomed>,
    ) -> Option<(usize, usize)> {
        let scope = match visit {
            Visit::Age => Scope::AllKeys,
            Visit::Evict(scope) => scope,
        };
        let db = self.next_db_with_keys(scope)?;
        if self.hand.pass_started_ms == 0 {
            self.hand.pass_started_ms = now_ms;
        }
        let keys = self.dbs[db].keys.as_mut().expect("a database with keys");
        let mut seen = 0;
        self.hand.cursor = keys.scan_update_meta(&self.heap, self.hand.cursor, |key, value| {
            seen += 1;
            let meta = value.meta;
            let entry = split_value(value);
            if let Visit::Evict(scope) = visit {
                if entry.expire_at_ms.is_some_and(|at| at <= now_ms) {
                    doomed.push(Doomed::Expired(key.to_vec()));
                    return None;
                }
                if scope == Scope::Volatile && entry.expire_at_ms.is_none() {
                    return None;
                }
                if meta.level() == 0 {
                    doomed.push(Doomed::Evict(key.to_vec()));
                    return None;
                }
            }
            aged(meta)
        });
        self.advance(now_ms);
        Some((db, seen))
    }

    /// After a step: at the end of a database's walk, on to the next one with keys; back at
    /// the first, a pass is complete.
    fn advance(&mut self, now_ms: u64) {
        if self.hand.cursor != 0 {
            return;
        }
        let next = self.hand.db + 1;
        if next >= self.dbs.len() || self.dbs[next..].iter().all(|d| is_empty(d.keys.as_ref())) {
            self.hand.db = 0;
            self.hand.pass_ms = now_ms.saturating_sub(self.hand.pass_started_ms).max(1);
            self.hand.pass_started_ms = now_ms;
            self.hand.passes += 1;
        } else {
            self.hand.db = next;
        }
    }

    /// The database the hand is in, moved on to the next one holding keys of `scope` when it
    /// holds none; `None` when no database does.
    fn next_db_with_keys(&mut self, scope: Scope) -> Option<usize> {
        let n = self.dbs.len();
        for i in 0..n {
            let db = (self.hand.db + i) % n;
            let d = &self.dbs[db];
            let has = match scope {
                Scope::AllKeys => !is_empty(d.keys.as_ref()),
                Scope::Volatile => d.expires > 0,
            };
            if has {
                if db != self.hand.db {
                    self.hand.db = db;
                    self.hand.cursor = 0;
                }
                return Some(db);
            }
        }
        None
    }
}

fn is_empty(keys: Option<&PageHash>) -> bool {
    keys.is_none_or(PageHash::is_empty)
}

/// Offers a sampled key to `Ttl`'s pool: kept when among the `POOL_SIZE` nearest expiries.
fn pool_offer(pool: &mut Vec<(u64, usize, Vec<u8>)>, at: u64, db: usize, key: &[u8]) {
    if pool.len() == POOL_SIZE && pool[0].0 <= at {
        return;
    }
    if pool
        .iter()
        .any(|(a, d, k)| *a == at && *d == db && k == key)
    {
        return;
    }
    // Sorted by expiry, farthest first, so the nearest pops from the end.
    let i = pool.partition_point(|(a, _, _)| *a > at);
    pool.insert(i, (at, db, key.to_vec()));
    if pool.len() > POOL_SIZE {
        pool.remove(0);
    }
}

/// The meta an entry the hand passes gets: one level lower, `None` when already at 0.
fn aged(meta: Meta) -> Option<Meta> {
    let level = meta.level();
    (level > 0).then(|| meta.with_level(level - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Shard, ShardConfig, Ttl};

    const NOW: u64 = 1_000_000;

    fn key(i: usize) -> Vec<u8> {
        format!("key:{i:08}").into_bytes()
    }

    fn shard_with(n: usize, ttl_every: usize) -> Shard {
        let mut shard = Shard::new(&ShardConfig::default()).unwrap();
        for i in 0..n {
            let ttl = if ttl_every > 0 && i % ttl_every == 0 {
                Ttl::At(NOW + 10_000 + i as u64 * 1_000)
            } else {
                Ttl::Clear
            };
            shard
                .put_string(i % 3, &key(i), b"0123456789abcdef", ttl, NOW)
                .unwrap();
        }
        shard
    }

    fn request(picker: Picker, scope: Scope) -> EvictRequest {
        EvictRequest {
            picker,
            scope,
            samples: 5,
            max_keys: 7,
            max_visits: 300,
        }
    }

    fn read(shard: &mut Shard, i: usize) -> bool {
        shard
            .get_string(i % 3, &key(i), NOW, |_| ())
            .unwrap()
            .is_some()
    }

    fn len(shard: &Shard) -> usize {
        (0..3).map(|db| shard.len(db)).sum()
    }

    /// Evicts with `request` until the scope is empty, validating after every call; returns the
    /// keys evicted, in order.
    fn evict_all(shard: &mut Shard, request: &EvictRequest) -> Vec<usize> {
        let mut order = Vec::new();
        for _ in 0..100_000 {
            let mut out = Vec::new();
            let step = shard.evict(request, NOW, &mut out);
            shard.validate().unwrap();
            // A bucket's victims go together: at most one bucket past `max_keys`.
            assert!(out.len() < request.max_keys + 256);
            assert_eq!(step.evicted, out.len());
            for (db, name) in out {
                let i: usize = std::str::from_utf8(&name[4..]).unwrap().parse().unwrap();
                assert_eq!(db, i % 3);
                order.push(i);
            }
            if step.empty {
                return order;
            }
        }
        panic!("eviction did not finish");
    }

    #[test]
    fn volatile_policies_never_evict_keys_without_a_ttl() {
        for picker in [Picker::Clock, Picker::Random, Picker::Ttl] {
            let mut shard = shard_with(3_000, 2);
            let evicted = evict_all(&mut shard, &request(picker, Scope::Volatile));
            assert_eq!(evicted.len(), 1_500, "{picker:?}");
            assert!(evicted.iter().all(|i| i % 2 == 0), "{picker:?}");
            assert_eq!(len(&shard), 1_500);
            assert_eq!((0..3).map(|db| shard.expires(db)).sum::<usize>(), 0);
        }
    }

    #[test]
    fn allkeys_policies_empty_the_shard() {
        for picker in [Picker::Clock, Picker::Random] {
            let mut shard = shard_with(2_000, 3);
            let mut evicted = evict_all(&mut shard, &request(picker, Scope::AllKeys));
            evicted.sort_unstable();
            evicted.dedup();
            assert_eq!(evicted.len(), 2_000, "{picker:?}");
            assert_eq!(len(&shard), 0);
        }
    }

    #[test]
    fn volatile_ttl_evicts_the_nearest_expiry_first() {
        let mut shard = shard_with(4_000, 1);
        let mut request = request(Picker::Ttl, Scope::Volatile);
        request.samples = 16;
        let order = evict_all(&mut shard, &request);
        // Expiry grows with the index: the first quarter evicted must be mostly early keys.
        let first: Vec<usize> = order[..1_000].to_vec();
        let mean = first.iter().sum::<usize>() / first.len();
        assert!(
            mean < 1_400,
            "mean index of the first 1,000 evicted: {mean}"
        );
    }

    #[test]
    fn lru_keeps_the_keys_in_use() {
        let mut shard = shard_with(6_000, 0);
        let request = request(Picker::Clock, Scope::AllKeys);
        for round in 0..400 {
            for i in 0..300 {
                assert!(read(&mut shard, i), "hot key {i} evicted by round {round}");
            }
            let mut out = Vec::new();
            shard.evict(&request, NOW, &mut out);
            shard.validate().unwrap();
        }
        assert!(len(&shard) < 4_000, "{}", len(&shard));
    }

    #[test]
    fn lfu_keeps_a_hot_set_under_a_scan() {
        let mut shard = shard_with(0, 0);
        shard.set_access_policy(AccessPolicy::Lfu { log_factor: 10 });
        for i in 0..500 {
            shard
                .put_string(i % 3, &key(i), b"v", Ttl::Clear, NOW)
                .unwrap();
        }
        for _ in 0..60 {
            for i in 0..500 {
                read(&mut shard, i);
            }
        }
        let request = request(Picker::Clock, Scope::AllKeys);
        // A scan: 20,000 keys written once, with eviction holding the shard near 2,000 keys.
        for i in 500..20_500 {
            shard
                .put_string(i % 3, &key(i), b"v", Ttl::Clear, NOW)
                .unwrap();
            while len(&shard) > 2_000 {
                let mut out = Vec::new();
                shard.evict(&request, NOW, &mut out);
            }
            if i % 40 == 0 {
                for h in 0..500 {
                    read(&mut shard, h);
                }
            }
        }
        shard.validate().unwrap();
        let kept = (0..500).filter(|&i| read(&mut shard, i)).count();
        assert!(kept >= 450, "hot keys kept: {kept} of 500");
    }

    #[test]
    fn aging_moves_idle_time_and_touch_resets_it() {
        let mut shard = shard_with(100, 0);
        assert_eq!(shard.idle_secs(0, &key(0), NOW), Some(0));
        // Three passes of 2 s each take a key that is not used from level 3 to 0.
        shard.age(1, NOW);
        for pass in 1..=3 {
            assert!(shard.age(1_000, NOW + pass * 2_000).1);
        }
        assert_eq!(shard.hand.pass_ms, 2_000);
        assert_eq!(shard.idle_secs(0, &key(0), NOW), Some(6));
        assert!(shard.touch_key(0, &key(0), NOW));
        assert_eq!(shard.idle_secs(0, &key(0), NOW), Some(0));
        assert_eq!(shard.idle_secs(0, &key(3), NOW), Some(6));
        assert_eq!(shard.idle_secs(0, b"missing", NOW), None);
        // TYPE-like looks do not count as a use.
        assert!(shard.kind(0, &key(3), NOW).is_some());
        assert_eq!(shard.idle_secs(0, &key(3), NOW), Some(6));
        assert!(read(&mut shard, 3));
        assert_eq!(shard.idle_secs(0, &key(3), NOW), Some(0));
    }

    #[test]
    fn expired_keys_met_by_the_hand_are_deleted_as_expired() {
        let mut shard = shard_with(1_000, 2);
        let later = NOW + 10_000_000;
        let mut out = Vec::new();
        let mut expired = 0;
        for _ in 0..1_000 {
            let step = shard.evict(&request(Picker::Clock, Scope::Volatile), later, &mut out);
            expired += step.expired;
            if step.empty {
                break;
            }
        }
        assert!(out.is_empty());
        assert_eq!(expired, 500);
        assert_eq!(shard.expired_keys(), 500);
        shard.validate().unwrap();
    }
}
