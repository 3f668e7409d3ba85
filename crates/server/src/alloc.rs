//! The global allocator of the `densekv` binary: the system allocator plus a byte count, so
//! INFO's `used_memory` covers what lives outside the shard heaps (boxed collections, client
//! buffers, the command table) as Redis's zmalloc counter does.
//!
//! One relaxed atomic add per allocation and per free, of what the allocation takes from
//! glibc ([`charge`], computed from its size): counting requested bytes left a big sorted set's
//! tree leaves (hundreds of thousands of small `Vec`s) ~6 % short of the resident memory they
//! hold. glibc keeps the pages of freed chunks until asked; the cron asks once the count has
//! stood still for a second (`trim_when_idle`), which took a 10⁶-member sorted set from 45.7 to
//! 44.9 resident bytes per member (`used_memory` 41.2 B).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

/// Bytes currently allocated through `Counting` (0 if it is not the global allocator).
pub fn allocated_bytes() -> usize {
    ALLOCATED.load(Ordering::Relaxed)
}

/// Gives the system allocator's free memory back to the OS at once (MEMORY PURGE): glibc keeps
/// what client buffers and boxed collections freed in its arenas until their tops shrink, as
/// jemalloc keeps dirty pages until Redis's MEMORY PURGE asks it to purge them.
pub fn purge_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory of glibc's arenas, under their locks; it
    // touches no live allocation and has no precondition.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// How long the count must stay put before glibc is trimmed: the heaps' decay time.
const IDLE_TRIM_MS: u64 = 1000;

/// When to trim glibc (`trim_when_idle`): once per quiet spell, a decay time after the
/// allocator's count last moved.
#[derive(Debug)]
struct IdleTrim {
    last_count: usize,
    changed_ms: u64,
    trimmed: bool,
}

impl IdleTrim {
    const fn new() -> IdleTrim {
        IdleTrim {
            last_count: 0,
            changed_ms: 0,
            trimmed: false,
        }
    }

    /// Whether to trim now, the count being `count` at `now_ms` (called on a regular tick).
    fn due(&mut self, count: usize, now_ms: u64) -> bool {
        if count != self.last_count {
            (self.last_count, self.changed_ms, self.trimmed) = (count, now_ms, false);
            return false;
        }
        let due = !self.trimmed && now_ms.saturating_sub(self.changed_ms) >= IDLE_TRIM_MS;
        self.trimmed |= due;
        due
    }
}

static IDLE_TRIM: std::sync::Mutex<IdleTrim> = std::sync::Mutex::new(IdleTrim::new());

/// The cron's tick (`now_ms` monotonic): once the allocator's count has not moved for a decay
/// time, gives glibc's free pages back once (`purge_system`), as the heaps give their freed
/// blocks back (`heap::Heap::decay`) and jemalloc's background thread does for Redis. A busy
/// server's count moves at every tick, so it never pays for the trim's walk of the arenas.
pub fn trim_when_idle(now_ms: u64) {
    let due = IDLE_TRIM
        .lock()
        .is_ok_and(|mut idle| idle.due(allocated_bytes(), now_ms));
    if due {
        purge_system();
    }
}

/// `System`, counting.
#[derive(Debug)]
pub struct Counting;

/// Below this glibc serves a request from its arenas (`M_MMAP_THRESHOLD`'s default).
const MMAP_THRESHOLD: usize = 128 << 10;

/// Bytes a request of `size` takes from glibc: its chunk, the request plus the 8-byte header
/// rounded up to 16 and at least 32 (`request2size`); from `MMAP_THRESHOLD` on, pages of its
/// own. A pure function of the size, so an allocation and its free count the same.
fn charge(size: usize) -> usize {
    if size >= MMAP_THRESHOLD {
        (size + 16).next_multiple_of(4096)
    } else {
        (size + 8).next_multiple_of(16).max(32)
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees hold; the counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            ALLOCATED.fetch_add(charge(layout.size()), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            ALLOCATED.fetch_add(charge(layout.size()), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        ALLOCATED.fetch_sub(charge(layout.size()), Ordering::Relaxed);
        // SAFETY: forwarded under the caller's contract.
        unsafe { System.dealloc(ptr, layout) };
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            ALLOCATED.fetch_sub(charge(layout.size()), Ordering::Relaxed);
            ALLOCATED.fetch_add(charge(new_size), Ordering::Relaxed);
        }
        p
    }
}

#[cfg(test)]
mod idle_tests {
    use super::{IDLE_TRIM_MS, IdleTrim};

    #[test]
    fn trims_once_per_quiet_spell() {
        let mut idle = IdleTrim::new();
        assert!(!idle.due(100, 0), "the count moved");
        assert!(!idle.due(100, IDLE_TRIM_MS - 1));
        assert!(idle.due(100, IDLE_TRIM_MS), "a decay time without a change");
        assert!(!idle.due(100, 5 * IDLE_TRIM_MS), "once per spell");
        assert!(!idle.due(90, 5 * IDLE_TRIM_MS + 100), "moved again");
        assert!(!idle.due(90, 6 * IDLE_TRIM_MS));
        assert!(idle.due(90, 6 * IDLE_TRIM_MS + 100));
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::charge;

    /// `charge` is glibc's own chunk size: its usable size plus the 8-byte header.
    #[test]
    fn charge_is_glibcs_chunk() {
        for size in [0, 1, 23, 24, 25, 40, 100, 1000, 4096, 100_000] {
            // SAFETY: a fresh allocation, measured, then freed once.
            let usable = unsafe {
                let p = libc::malloc(size);
                assert!(!p.is_null());
                let usable = libc::malloc_usable_size(p);
                libc::free(p);
                usable
            };
            assert_eq!(charge(size), usable + 8, "{size} bytes");
        }
    }
}
