//! The unsafe core of list chunks: a byte buffer in the shard heap, behind a safe wrapper.
//!
//! ```text
//!  Buf { ptr: NonNull<u8>, cap: u32 }      16 bytes (12 used + padding, shared with the chunk's
//!   ptr ──▶ [ cap bytes, all initialised ]           offsets in `list.rs`'s `Chunk`)
//!          a heap allocation of exactly `cap` bytes: cap == Heap::usable_size(cap) below the
//!          large classes, so no byte of the slot is wasted behind the buffer's back
//! ```
//! Why the heap and not `Box<[u8]>`: ten thousand lists growing side by side through glibc left
//! the buffers they outgrew in free lists that later, larger requests could not use (resident
//! memory 16 % above the live bytes, which `malloc_trim` did not recover). The heap's size
//! classes serve every buffer from a slab of its own size, so a buffer freed by one growing list
//! is taken by the next list growing into that size, and slabs that empty go back to the block
//! runs; and INFO's `used_memory` counts them as the heap's allocated bytes.
//!
//! Invariants: `ptr` is a live allocation of exactly `cap` bytes of the heap it came from, owned
//! by this `Buf` alone; all `cap` bytes are initialised (zeroed on allocation, then only written
//! through `bytes_mut`). A `Buf` never frees itself: its owner calls `free` with the same heap
//! (dropping one leaks its bytes into the heap, which dies with its shard, as a map's pages do).
//! Reads need no heap, so a `Buf` must not outlive its heap: lists live in a shard's objects,
//! which the shard destroys before its heap (`shard.rs`), and tests declare the heap first.

use heap::{Heap, HeapError};
use std::ptr::NonNull;

/// A zero-initialised byte buffer of the shard heap (see the module doc).
#[derive(Debug)]
pub(crate) struct Buf {
    ptr: NonNull<u8>,
    cap: u32,
}

// SAFETY: a `Buf` owns its allocation exclusively (no other pointer to it exists), like a
// `Box<[u8]>`; its heap moves between threads only together with the shard that owns both, and
// the heap is only touched through the owner's `&mut Heap`.
unsafe impl Send for Buf {}
// SAFETY: `&Buf` only reads the bytes (no interior mutability), as `&Box<[u8]>` does.
unsafe impl Sync for Buf {}

/// The buffer size to ask for when at least `bytes` are needed: the whole size class, so the
/// slack the class would waste becomes room for pushes.
pub(crate) fn capacity_at_least(bytes: usize) -> usize {
    <Heap>::usable_size(bytes.max(1)).min(u32::MAX as usize)
}

impl Buf {
    /// A zeroed buffer of `cap` bytes. Panics when the heap is out of memory, as `Box` does (a
    /// list push has no error path; the heap's reservation is 64 GiB).
    pub(crate) fn alloc(heap: &mut Heap, cap: usize) -> Buf {
        let cap32 = u32::try_from(cap).unwrap_or_else(|_| panic!("list chunk of {cap} bytes"));
        let ptr = heap
            .alloc_zeroed(cap)
            .unwrap_or_else(|e: HeapError| panic!("list chunk of {cap} bytes: {e}"));
        Buf { ptr, cap: cap32 }
    }

    #[inline]
    pub(crate) fn cap(&self) -> usize {
        self.cap as usize
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is live for `cap` initialised bytes (module invariants), and `&self`
        // excludes every `&mut` to them.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.cap()) }
    }

    #[inline]
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as `bytes`; `&mut self` makes the slice the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap()) }
    }

    /// Gives the buffer back to `heap`.
    pub(crate) fn free(self, heap: &mut Heap) {
        // SAFETY: `ptr` came from `heap.alloc_zeroed(cap)` (the caller passes the heap the list
        // lives in), is freed once because `self` is consumed, and no slice of it outlives the
        // borrow of `self` that made it.
        unsafe { heap.free(self.ptr, self.cap()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_whole_classes_and_free_cleanly() {
        let mut heap = Heap::new().unwrap();
        for want in [1usize, 64, 100, 1000, 8192, 9000, 40_000, 700_000] {
            let cap = capacity_at_least(want);
            assert!(cap >= want);
            assert_eq!(<Heap>::usable_size(cap), cap, "{want}");
            let mut b = Buf::alloc(&mut heap, cap);
            assert!(b.bytes().iter().all(|&x| x == 0));
            b.bytes_mut()[cap - 1] = 7;
            assert_eq!(b.bytes()[cap - 1], 7);
            b.free(&mut heap);
        }
        assert_eq!(heap.stats().requested_bytes, 0);
    }
}
