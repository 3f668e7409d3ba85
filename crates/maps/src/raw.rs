//! The unsafe core: turning heap pointers into pages and byte blobs, and back.
//!
//! Everything the maps keep in the heap is one of two things:
//!
//! ```text
//!  page   8192 B, one block, 8 KiB-aligned      PagePtr (directory words keep it in the high bits)
//!  blob   n B, any size class                   40-bit handle = Heap::offset_of(ptr), 5 bytes LE
//!         key blob:   [hash: u64 LE][key bytes]     (the hash spares a rehash when pages split)
//!         value blob: [value bytes]
//! ```
//!
//! Ownership: a map owns its pages and blobs; only `&mut self` methods of the map free them, so a
//! `&Page` or `&[u8]` handed out under `&self` cannot dangle. The maps do not own the heap, so
//! dropping a map without `destroy` leaks its pages into the heap (which dies with its shard).

use crate::page::{PAGE_BYTES, Page};
use heap::{Heap, HeapError};
use std::ptr::NonNull;

/// Bytes of a blob handle in an entry.
pub const HANDLE_BYTES: usize = 5;

/// A page in the heap. Copyable like a pointer; the map that holds it owns the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagePtr(NonNull<Page>);

impl PagePtr {
    /// Allocates a zeroed page.
    pub fn alloc(heap: &mut Heap) -> Result<Self, HeapError> {
        let ptr = heap.alloc(PAGE_BYTES)?;
        assert!(
            (ptr.as_ptr() as usize).is_multiple_of(PAGE_BYTES),
            "heap returned an unaligned block"
        );
        // SAFETY: `ptr` is a fresh allocation of PAGE_BYTES bytes, aligned to PAGE_BYTES >= the
        // alignment of `Page` (64); writing zeroes makes it a valid `Page` (any bytes are).
        unsafe { ptr.as_ptr().write_bytes(0, PAGE_BYTES) };
        Ok(Self(ptr.cast()))
    }

    /// Rebuilds a `PagePtr` from a directory word's address bits.
    #[inline]
    pub fn from_addr(addr: u64) -> Self {
        debug_assert!(addr != 0 && (addr as usize).is_multiple_of(PAGE_BYTES));
        Self(NonNull::new(addr as usize as *mut Page).expect("non-zero"))
    }

    #[inline]
    pub fn addr(self) -> u64 {
        self.0.as_ptr() as usize as u64
    }

    /// # Safety
    /// The page is live (allocated by `alloc`, not yet freed) for `'a`, and no `&mut Page` to it
    /// exists during `'a`. The map guarantees both by tying `'a` to a borrow of itself.
    #[inline]
    pub unsafe fn get<'a>(self) -> &'a Page {
        // SAFETY: live and not mutably aliased, per this function's contract.
        unsafe { self.0.as_ref() }
    }

    /// # Safety
    /// The page is live for `'a` and no other reference to it exists during `'a`.
    #[inline]
    pub unsafe fn get_mut<'a>(mut self) -> &'a mut Page {
        // SAFETY: live and unaliased, per this function's contract.
        unsafe { self.0.as_mut() }
    }

    /// # Safety
    /// The page came from `alloc` on this heap, is freed once, and is not used afterwards.
    pub unsafe fn free(self, heap: &mut Heap) {
        // SAFETY: allocated by `heap.alloc(PAGE_BYTES)`, per the contract.
        unsafe { heap.free(self.0.cast(), PAGE_BYTES) };
    }
}

/// Allocates a blob holding `parts` back to back; returns its handle.
pub fn blob_alloc(heap: &mut Heap, parts: &[&[u8]]) -> Result<u64, HeapError> {
    let size: usize = parts.iter().map(|p| p.len()).sum();
    let ptr = heap.alloc(size)?;
    let mut at = 0;
    for part in parts {
        // SAFETY: `ptr` points to at least `size` writable bytes and `at + part.len() <= size`;
        // the source is a distinct Rust slice, so the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), ptr.as_ptr().add(at), part.len()) };
        at += part.len();
    }
    Ok(heap.offset_of(ptr))
}

/// # Safety
/// `handle` is a live blob of at least `len` bytes allocated by `blob_alloc` on `heap`, and it
/// is not freed while the returned slice lives (the caller's borrow of the owning map
/// guarantees it).
#[inline]
pub unsafe fn blob(heap: &Heap, handle: u64, len: usize) -> &[u8] {
    let ptr = heap.ptr_at(handle);
    // SAFETY: live, initialised (written in full by `blob_alloc`) and at least `len` bytes.
    unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len) }
}

/// # Safety
/// `handle` is a live blob of exactly `size` bytes from `blob_alloc` on `heap`, freed once.
pub unsafe fn blob_free(heap: &mut Heap, handle: u64, size: usize) {
    let ptr = heap.ptr_at(handle);
    // SAFETY: allocated by `heap.alloc(size)` in `blob_alloc`, per the contract.
    unsafe { heap.free(ptr, size) };
}

/// Reads a 5-byte little-endian handle.
#[inline]
pub fn get_handle(bytes: &[u8]) -> u64 {
    crate::varint::get_le(bytes, HANDLE_BYTES)
}

/// Writes a 5-byte little-endian handle.
#[inline]
pub fn put_handle(out: &mut [u8], handle: u64) {
    assert!(handle < 1 << 40, "heap offset beyond 40 bits");
    crate::varint::put_le(out, handle, HANDLE_BYTES);
}

/// Asks the CPU to start loading the cache line of `value` (a hint: no effect on memory).
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has; it only hints the cache and
    // never faults, and the pointer comes from a live reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::from_ref(value).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
