//! Randomness for the commands that pick at random (RANDOMKEY, SPOP, SRANDMEMBER, HRANDFIELD,
//! ZRANDMEMBER): one generator per thread, and the one plan all the RANDMEMBER forms follow.
//!
//! Redis's four cases for a count (`srandmemberWithCountCommand`, `hrandfieldWithCountCommand`,
//! `zrandmemberWithCountCommand`): a negative count picks with repetition; a count of at least
//! the size returns everything; otherwise `count` distinct elements, found by dropping random
//! elements from a copy when most are wanted (`count * 3 > size`) and by drawing until enough
//! are distinct when few are. One case is densekv's own: a negative count whose reply could not
//! fit the machine's memory (Redis 7.0 starts on it and is killed) is refused (`Picks::TooMany`).

use std::cell::Cell;
use std::collections::HashSet;
use std::hash::Hash;

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// A random u64 (wyrand: one multiply per number, good enough statistics for sampling).
pub fn random() -> u64 {
    STATE.with(|state| {
        let s = state.get().wrapping_add(0xa076_1d64_78bd_642f);
        state.set(s);
        let t = u128::from(s) * u128::from(s ^ 0xe703_7ed1_a0b4_28db);
        ((t >> 64) as u64) ^ (t as u64)
    })
}

/// A random index below `len` (> 0).
pub fn below(len: usize) -> usize {
    (random() % len as u64) as usize
}

/// What a RANDMEMBER-style command with `count` returns from a collection of `size` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Picks {
    /// This many picks, repetitions allowed (a negative count, or 1).
    Repeats(usize),
    /// Every element, once.
    All,
    /// This many distinct elements (fewer than `size`).
    Distinct(usize),
    /// More picks with repetition than any reply could hold (`repeats_fit`): the command answers
    /// `TOO_MANY`.
    TooMany,
}

/// The reply for `Picks::TooMany` (Redis's text for a count it cannot double).
pub const TOO_MANY: &str = "ERR value is out of range";

/// Fewest bytes one pick adds to a reply: `$0\r\n\r\n`, an empty element.
const PICK_REPLY_BYTES_MIN: u64 = 6;
/// Below this many picks the reply cannot outgrow a machine (6 GiB), so memory is not asked.
const PICKS_ALWAYS_FIT: u64 = 1 << 30;

/// Whether `n` picks with repetition can be answered: their reply, at least 6 bytes each, fits
/// the machine's memory. Redis 7.0 starts on any count up to 2^63 - 1 and grows its output
/// buffer until the process is killed; a count that no server could send is refused instead,
/// and every count that could be sent is answered as Redis answers it.
fn repeats_fit(n: u64) -> bool {
    n < PICKS_ALWAYS_FIT
        || match crate::commands::memory::total_memory() {
            0 => true,
            memory => n.saturating_mul(PICK_REPLY_BYTES_MIN) <= memory,
        }
}

/// The plan for `count` over `size` elements (`count == 0` is `Repeats(0)`).
pub fn plan(count: i64, size: usize) -> Picks {
    let n = count.unsigned_abs();
    if count < 0 || n <= 1 {
        if !repeats_fit(n) {
            return Picks::TooMany;
        }
        Picks::Repeats(usize::try_from(n).unwrap_or(usize::MAX))
    } else if n >= size as u64 {
        Picks::All
    } else {
        Picks::Distinct(n as usize)
    }
}

/// `wanted` distinct elements: when most are wanted, `all()` is copied and random elements are
/// dropped until `wanted` remain; when few are, `draw()` is called until `wanted` distinct ones
/// came up (each draw is new with probability ≥ 2/3, so this ends quickly).
pub fn distinct<T: Eq + Hash + Copy>(
    wanted: usize,
    size: usize,
    all: impl FnOnce() -> Vec<T>,
    mut draw: impl FnMut() -> T,
) -> Vec<T> {
    if wanted * 3 > size {
        let mut kept = all();
        // Bounded: one removal per round, `size - wanted` rounds.
        while kept.len() > wanted {
            let i = below(kept.len());
            kept.swap_remove(i);
        }
        return kept;
    }
    let mut seen: HashSet<T, foldhash::fast::RandomState> =
        HashSet::with_capacity_and_hasher(wanted, foldhash::fast::RandomState::default());
    let mut order = Vec::with_capacity(wanted);
    while order.len() < wanted {
        let pick = draw();
        if seen.insert(pick) {
            order.push(pick);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_follow_redis_cases_and_picks_are_distinct() {
        assert_eq!(plan(0, 5), Picks::Repeats(0));
        assert_eq!(plan(-7, 5), Picks::Repeats(7));
        assert_eq!(plan(1, 5), Picks::Repeats(1));
        assert_eq!(plan(5, 5), Picks::All);
        assert_eq!(plan(3, 5), Picks::Distinct(3));
        assert_eq!(plan(i64::MIN + 1, 5), Picks::TooMany);
        assert_eq!(plan(-(1 << 20), 5), Picks::Repeats(1 << 20));
        for (wanted, size) in [(2, 100), (90, 100), (1, 2)] {
            let picks = distinct(wanted, size, || (0..size).collect(), || below(size));
            let unique: HashSet<usize> = picks.iter().copied().collect();
            assert_eq!((picks.len(), unique.len()), (wanted, wanted));
            assert!(picks.iter().all(|&i| i < size));
        }
    }
}
