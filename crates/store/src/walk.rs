//! Walks over a database's keyspace: SCAN steps, random keys and active expiry. Each step visits
//! one bucket of the keyspace map (a bounded number of entries), and the cursor is a position in
//! hash space, so a key present for a whole walk is visited at least once however the map splits.

use crate::encoding::Kind;
use crate::shard::{EntryRef, ExpireRound, Shard};

/// A key met by a walk.
#[derive(Clone, Copy, Debug)]
pub struct Walked<'a> {
    entry: EntryRef<'a>,
}

impl Walked<'_> {
    /// The type of the key's value (a boxed one is read from its object).
    pub fn kind(&self) -> Kind {
        self.entry.encoding().kind()
    }

    pub fn expire_at_ms(&self) -> Option<u64> {
        self.entry.expire_at_ms
    }
}

impl Shard {
    /// One SCAN step over `db`: calls `f` with each live key of one bucket; returns the next
    /// cursor (0 when the pass is complete). Expired keys are skipped, not deleted.
    pub fn scan(
        &self,
        db: usize,
        cursor: u64,
        now_ms: u64,
        mut f: impl FnMut(&[u8], Walked<'_>),
    ) -> u64 {
        let Some(keys) = self.dbs[db].keys.as_ref() else {
            return 0;
        };
        keys.scan(&self.heap, cursor, |key, value| {
            let entry = crate::shard::split_value(value);
            if entry.expire_at_ms.is_none_or(|at| at > now_ms) {
                f(key, Walked { entry });
            }
        })
    }

    /// A SCAN step that also deletes the expired keys it walks past, as Redis's SCAN does.
    pub fn scan_and_reclaim(
        &mut self,
        db: usize,
        cursor: u64,
        now_ms: u64,
        mut f: impl FnMut(&[u8], Walked<'_>),
    ) -> u64 {
        let Some(keys) = self.dbs[db].keys.as_ref() else {
            return 0;
        };
        let mut expired: Vec<Vec<u8>> = Vec::new();
        let next = keys.scan(&self.heap, cursor, |key, value| {
            let entry = crate::shard::split_value(value);
            if entry.expire_at_ms.is_some_and(|at| at <= now_ms) {
                expired.push(key.to_vec());
            } else {
                f(key, Walked { entry });
            }
        });
        for key in expired {
            self.delete_expired(db, &key);
        }
        next
    }

    /// A random live key of `db` (RANDOMKEY), or `None` when empty. Expired keys met on the way
    /// are deleted; the number of attempts is bounded.
    pub fn random_key(
        &mut self,
        db: usize,
        now_ms: u64,
        mut random: impl FnMut() -> u64,
    ) -> Option<Vec<u8>> {
        for _ in 0..100 {
            let keys = self.dbs[db].keys.as_ref()?;
            let (key, expired) = {
                let (key, value) = keys.sample(&self.heap, random())?;
                let entry = crate::shard::split_value(value);
                (
                    key.to_vec(),
                    entry.expire_at_ms.is_some_and(|at| at <= now_ms),
                )
            };
            if !expired {
                return Some(key);
            }
            self.delete_expired(db, &key);
        }
        None
    }

    /// Active expiry over `db`: looks at up to `budget` entries from the saved cursor and deletes
    /// those whose TTL has passed.
    pub fn active_expire(&mut self, db: usize, now_ms: u64, budget: usize) -> ExpireRound {
        let mut round = ExpireRound::default();
        let d = &self.dbs[db];
        let Some(keys) = d.keys.as_ref() else {
            return round;
        };
        if d.expires == 0 {
            return round;
        }
        let mut cursor = d.expire_cursor;
        let mut doomed: Vec<Vec<u8>> = Vec::new();
        let (mut ttl_sum, mut ttl_count) = (0u128, 0u64);
        // Each step visits one bucket; a bucket holds a bounded number of entries, and both the
        // entries seen and the steps taken are capped.
        for _ in 0..budget.max(1) {
            cursor = keys.scan(&self.heap, cursor, |key, value| {
                if !value.meta.has_ttl() {
                    return;
                }
                round.sampled += 1;
                match crate::shard::split_value(value).expire_at_ms {
                    Some(at) if at <= now_ms => doomed.push(key.to_vec()),
                    Some(at) => {
                        ttl_sum += u128::from(at - now_ms);
                        ttl_count += 1;
                    }
                    None => {}
                }
            });
            if cursor == 0 {
                round.pass_done = true;
                break;
            }
            if round.sampled >= budget {
                break;
            }
        }
        let d = &mut self.dbs[db];
        d.expire_cursor = cursor;
        if ttl_count > 0 {
            // Redis blends each sample into the running average with weight 2%.
            let sample = (ttl_sum / u128::from(ttl_count)) as u64;
            d.avg_ttl_ms = if d.avg_ttl_ms == 0 {
                sample
            } else {
                (d.avg_ttl_ms / 50) * 49 + sample / 50
            };
        }
        for key in doomed {
            self.delete_expired(db, &key);
            round.expired += 1;
        }
        round
    }
}
