//! The global allocator of the `densekv` binary: the system allocator plus a byte count, so
//! INFO's `used_memory` covers what lives outside the shard heaps (boxed collections, client
//! buffers, the command table) as Redis's zmalloc counter does.
//!
//! One relaxed atomic add per allocation and per free. With glibc the count is what each
//! allocation really takes from it, its usable size plus the 8-byte chunk header
//! ([`charge`]): counting requested bytes left a big sorted set's tree leaves (hundreds of
//! thousands of small `Vec`s) ~6 % short of the resident memory they hold. Elsewhere it is the
//! requested size.

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

/// `System`, counting.
#[derive(Debug)]
pub struct Counting;

/// Bytes the live allocation at `ptr` of `size` requested bytes takes from the system allocator.
///
/// # Safety
/// `ptr` is a live allocation of `System`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe fn charge(ptr: *mut u8, _size: usize) -> usize {
    // SAFETY: a live allocation of glibc's malloc (`System` is malloc/posix_memalign there),
    // per the contract; `malloc_usable_size` only reads its chunk header.
    unsafe { libc::malloc_usable_size(ptr.cast()) + std::mem::size_of::<usize>() }
}

/// # Safety
/// As above.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
unsafe fn charge(_ptr: *mut u8, size: usize) -> usize {
    size
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees hold; the counter only observes sizes, of allocations that are live when it looks.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract; `p` is live when charged.
        unsafe {
            let p = System.alloc(layout);
            if !p.is_null() {
                ALLOCATED.fetch_add(charge(p, layout.size()), Ordering::Relaxed);
            }
            p
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract; `p` is live when charged.
        unsafe {
            let p = System.alloc_zeroed(layout);
            if !p.is_null() {
                ALLOCATED.fetch_add(charge(p, layout.size()), Ordering::Relaxed);
            }
            p
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded under the caller's contract; `ptr` is charged while still live.
        unsafe {
            ALLOCATED.fetch_sub(charge(ptr, layout.size()), Ordering::Relaxed);
            System.dealloc(ptr, layout);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract; the old block is charged while live,
        // the new one once returned (on failure the old one stays live and charged).
        unsafe {
            let old = charge(ptr, layout.size());
            let p = System.realloc(ptr, layout, new_size);
            if !p.is_null() {
                ALLOCATED.fetch_sub(old, Ordering::Relaxed);
                ALLOCATED.fetch_add(charge(p, new_size), Ordering::Relaxed);
            }
            p
        }
    }
}
