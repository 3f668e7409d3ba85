//! Access metadata: what eviction and OBJECT IDLETIME / FREQ know of a key's use, in the two
//! bits of the meta byte the map stores with every entry. A key pays no byte for it.
//!
//! ```text
//!  meta byte:  epoch:1 │ access level:2 │ has_ttl:1 │ tag:4        level ∈ {0, 1, 2, 3}
//!
//!  LRU  (every policy but the LFU ones)   level = recency class
//!       a read or write sets 3; each visit of the shard's hand takes 1 off
//!       ⇒ level = 3 − min(3, hand visits since the last access)
//!  LFU  (allkeys-lfu, volatile-lfu)        level = logarithmic frequency class
//!       a new key starts at 1 (Redis's LFU_INIT_VAL, counter 5); an access raises level
//!       L ∈ {1, 2} to L + 1 with probability 1 / ((L − 1) · lfu-log-factor + 1), as Redis's
//!       `LFULogIncr` raises its counter c ≥ 5 with 1 / ((c − 5) · lfu-log-factor + 1), and
//!       level 0 to 1 always; each visit of the hand takes 1 off (the decay)
//! ```
//!
//! The hand (`evict.rs`) walks the shard's keyspace in SCAN order, so it is CLOCK with four
//! levels: a key is evicted when the hand finds it at 0, that is after three passes without an
//! access (LRU) or after its hits stopped outpacing the passes (LFU). Redis keeps 24 bits per key
//! (a seconds clock, or an 8-bit counter and a minutes clock) and samples five keys per eviction;
//! here the hand's passes are the clock, so time is only known per pass (`Hand::pass_ms`):
//!
//! - OBJECT IDLETIME ≈ (3 − level) · (duration of the hand's last pass), in seconds;
//! - OBJECT FREQ reports the counter Redis would show at the level's number of hits:
//!   `FREQ_OF_LEVEL` = [0, 5, 6, 7] (5 = LFU_INIT_VAL; one hit reaches level 2 as Redis's 6,
//!   about f + 1 more reach 3 as Redis's 7).
//!
//! A read sets the bits only when they change (LRU: when the level is below 3), so a key read
//! again before the hand comes back costs nothing more than its lookup; the write is a second
//! lookup of the same key, in cache.

use maps::Meta;

/// The top level: just accessed (LRU) or most frequent (LFU).
pub const LEVEL_MAX: u8 = 3;
/// The level of a key written for the first time under LFU (Redis's LFU_INIT_VAL).
pub const LFU_INIT_LEVEL: u8 = 1;
/// OBJECT FREQ per level (see the module doc).
pub const FREQ_OF_LEVEL: [u8; 4] = [0, 5, 6, 7];

/// How accesses move the level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessPolicy {
    /// Recency: every policy but the LFU ones (Redis tracks the LRU clock unless LFU is on).
    Lru,
    /// Frequency, with Redis's `lfu-log-factor`.
    Lfu { log_factor: u32 },
}

/// A shard's access tracking: the policy and the random numbers LFU's increments draw.
#[derive(Clone, Debug)]
pub(crate) struct Access {
    pub policy: AccessPolicy,
    rng: u64,
}

impl Default for Access {
    fn default() -> Access {
        Access {
            policy: AccessPolicy::Lru,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }
}

impl Access {
    /// The meta an accessed entry should have, `None` when it stays as it is.
    #[inline]
    pub fn touched(&mut self, meta: Meta) -> Option<Meta> {
        let level = meta.level();
        let next = match self.policy {
            AccessPolicy::Lru => LEVEL_MAX,
            AccessPolicy::Lfu { log_factor } => self.lfu_increment(level, log_factor),
        };
        (next != level).then(|| meta.with_level(next))
    }

    /// The level of an entry written now: `old` is the level of the entry it replaces.
    #[inline]
    pub fn written(&mut self, old: Option<u8>) -> u8 {
        match self.policy {
            AccessPolicy::Lru => LEVEL_MAX,
            AccessPolicy::Lfu { log_factor } => match old {
                Some(level) => self.lfu_increment(level.max(LFU_INIT_LEVEL), log_factor),
                None => LFU_INIT_LEVEL,
            },
        }
    }

    /// Redis's `LFULogIncr` on the four levels.
    fn lfu_increment(&mut self, level: u8, log_factor: u32) -> u8 {
        if level == 0 {
            return 1;
        }
        if level >= LEVEL_MAX {
            return LEVEL_MAX;
        }
        let odds = u64::from(level - 1) * u64::from(log_factor) + 1;
        if self.random().is_multiple_of(odds) {
            level + 1
        } else {
            level
        }
    }

    /// A pseudo-random number (LFU's coin, eviction's samples).
    pub fn random(&mut self) -> u64 {
        // xorshift64*: the increments need a fair coin, not a strong one.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_sets_the_top_level_once() {
        let mut a = Access::default();
        let meta = Meta::new(0, false, 1);
        assert_eq!(a.touched(meta).map(Meta::level), Some(LEVEL_MAX));
        assert_eq!(a.touched(meta.with_level(LEVEL_MAX)), None);
        assert_eq!(a.written(None), LEVEL_MAX);
    }

    #[test]
    fn lfu_climbs_logarithmically() {
        let mut a = Access {
            policy: AccessPolicy::Lfu { log_factor: 10 },
            ..Access::default()
        };
        assert_eq!(a.written(None), LFU_INIT_LEVEL);
        assert_eq!(a.touched(Meta::new(0, false, 0)).map(Meta::level), Some(1));
        assert_eq!(a.touched(Meta::new(0, false, 1)).map(Meta::level), Some(2));
        // From level 2, 1 in 11 accesses climbs: in 11,000 tries about 1,000 do.
        let climbs = (0..11_000)
            .filter(|_| a.touched(Meta::new(0, false, 2)).is_some())
            .count();
        assert!((800..1_200).contains(&climbs), "{climbs}");
        assert_eq!(a.touched(Meta::new(0, false, 3)), None);
        // lfu-log-factor 0: every access climbs.
        a.policy = AccessPolicy::Lfu { log_factor: 0 };
        assert_eq!(a.touched(Meta::new(0, false, 2)).map(Meta::level), Some(3));
        // An overwrite counts as an access of the old value (Redis keeps the counter).
        assert_eq!(a.written(Some(1)), 2);
    }
}
