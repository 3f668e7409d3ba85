//! CLIENT PAUSE / UNPAUSE: Redis's `pauseClients`.
//!
//! While a pause holds, a command it covers is postponed, not refused: dispatch leaves the
//! request unconsumed in the client's query buffer and the connection stops processing input
//! (`ClientState::postponed`); its thread retries it when the pause ends, is lifted, or changes
//! (`generation`). `ALL` covers every command, `WRITE` the commands that may write or replicate
//! (WRITE or MAY_REPLICATE, and EXEC with such a command queued), as Redis's `processCommand`
//! decides. MONITOR clients (Redis's replicas) are never paused. Active expiry and eviction
//! stop for the pause's duration, so no key changes under a paused writer.
//!
//! Two atomics hold it, so a command pays one load when nothing is paused.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// What a pause covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    None = 0,
    Write = 1,
    All = 2,
}

#[derive(Debug, Default)]
pub struct Pause {
    /// `Kind` as a byte; `None` when there is no pause.
    kind: AtomicU8,
    /// Unix ms the pause ends at.
    end_ms: AtomicU64,
    /// Bumped by every PAUSE and UNPAUSE: a postponed client is retried when it moves.
    generation: AtomicU64,
}

impl Pause {
    /// CLIENT PAUSE: a pause of `kind` until `end_ms`, merged with one in force as Redis merges
    /// them (the wider kind, the later end).
    pub fn pause(&self, kind: Kind, end_ms: u64, now_ms: u64) {
        let current = self.kind(now_ms);
        let (kind, end) = if current == Kind::None {
            (kind, end_ms)
        } else {
            (
                kind.max(current),
                end_ms.max(self.end_ms.load(Ordering::Relaxed)),
            )
        };
        self.end_ms.store(end, Ordering::Relaxed);
        self.kind.store(kind as u8, Ordering::Release);
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// CLIENT UNPAUSE.
    pub fn unpause(&self) {
        self.kind.store(Kind::None as u8, Ordering::Release);
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// The pause in force at `now_ms`.
    #[inline]
    pub fn kind(&self, now_ms: u64) -> Kind {
        match self.kind.load(Ordering::Acquire) {
            0 => Kind::None,
            _ if now_ms >= self.end_ms.load(Ordering::Relaxed) => Kind::None,
            1 => Kind::Write,
            _ => Kind::All,
        }
    }

    /// Whether anything is paused at `now_ms` (active expiry and eviction wait).
    pub fn active(&self, now_ms: u64) -> bool {
        self.kind(now_ms) != Kind::None
    }

    /// Milliseconds until the pause in force ends (`None`: no pause).
    pub fn remaining_ms(&self, now_ms: u64) -> Option<u64> {
        self.active(now_ms)
            .then(|| self.end_ms.load(Ordering::Relaxed).saturating_sub(now_ms))
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pauses merge to the wider kind and later end, end on time, and UNPAUSE lifts them.
    #[test]
    fn pause_merges_and_ends() {
        let p = Pause::default();
        assert_eq!(p.kind(0), Kind::None);
        p.pause(Kind::Write, 1_000, 0);
        assert_eq!(p.kind(999), Kind::Write);
        assert_eq!(p.kind(1_000), Kind::None);
        p.pause(Kind::All, 500, 0);
        assert_eq!(p.kind(600), Kind::All, "the later end of the two holds");
        assert_eq!(p.remaining_ms(600), Some(400));
        let generation = p.generation();
        p.unpause();
        assert_eq!(p.kind(0), Kind::None);
        assert!(p.generation() > generation);
        p.pause(Kind::Write, 100, 200);
        assert_eq!(p.kind(150), Kind::None, "an end in the past pauses nothing");
    }
}
