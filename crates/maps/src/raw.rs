//! The unsafe core: turning heap pointers into pages and byte blobs, and back.
//!
//! Everything the maps keep in the heap is one of two things:
//!
//! ```text
//!  page   8192 B, one block, 8 KiB-aligned      PagePtr (directory words keep it in the high bits)
//!  blob   n B, any size class                   40-bit handle = Heap::offset_of(ptr), 5 bytes LE
//!         key blob:   [hash: u64 LE][key bytes]     (the hash spares a rehash when pages split)
//!         value blob: [value bytes][slack]          capacity_for(len) bytes (`pagehash.rs`)
//! ```
//!
//! A blob's size is never stored: its owner recomputes it from the entry (`8 + key len`, or
//! `capacity_for(value len)`) to free, resize or move it, so every call here takes it. Bytes
//! past a blob's length are uninitialised (only the functions here write or zero them), and no
//! slice handed out reaches past the length.
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

/// Allocates a blob of `capacity` bytes holding `parts` back to back, then zeroes up to `len`
/// (`parts` total `<= len <= capacity`); returns its handle. Bytes past `len` stay
/// uninitialised: nothing reads a blob past its entry's length (value blobs keep slack for
/// growth, `pagehash.rs`).
pub fn blob_alloc(
    heap: &mut Heap,
    capacity: usize,
    len: usize,
    parts: &[&[u8]],
) -> Result<u64, HeapError> {
    let size: usize = parts.iter().map(|p| p.len()).sum();
    assert!(
        size <= len && len <= capacity,
        "blob parts exceed its length or capacity"
    );
    let ptr = heap.alloc(capacity)?;
    let mut at = 0;
    for part in parts {
        // SAFETY: `ptr` points to at least `capacity >= size` writable bytes and
        // `at + part.len() <= size`; the source is a distinct Rust slice, so the ranges do not
        // overlap.
        unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), ptr.as_ptr().add(at), part.len()) };
        at += part.len();
    }
    // SAFETY: `size..len` lies inside the `capacity` bytes just allocated.
    unsafe { ptr.as_ptr().add(size).write_bytes(0, len - size) };
    Ok(heap.offset_of(ptr))
}

/// # Safety
/// `handle` is a live blob from `blob_alloc` (or `blob_resize`, `blob_move`) on `heap` whose
/// first `len` bytes are initialised, and it is not freed while the returned slice lives (the
/// caller's borrow of the owning map guarantees it).
#[inline]
pub unsafe fn blob(heap: &Heap, handle: u64, len: usize) -> &[u8] {
    let ptr = heap.ptr_at(handle);
    // SAFETY: live, and its first `len` bytes initialised, per the contract.
    unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len) }
}

/// The first `len` bytes of a blob, for writing. The slice borrows `heap` so that no allocation
/// can move or free the blob while it lives.
///
/// # Safety
/// As [`blob`], and no other reference to the blob's bytes exists while the slice lives (the
/// caller holds `&mut` of the map that owns the blob).
pub unsafe fn blob_mut(heap: &mut Heap, handle: u64, len: usize) -> &mut [u8] {
    let ptr = heap.ptr_at(handle);
    // SAFETY: live, initialised for `len` bytes and unaliased, per the contract.
    unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), len) }
}

/// Writes `bytes` at the start of a blob.
///
/// # Safety
/// `handle` is a live blob from this module on `heap` of at least `bytes.len()` bytes, and no
/// reference to its bytes exists during the call.
pub unsafe fn blob_write(heap: &mut Heap, handle: u64, bytes: &[u8]) {
    let ptr = heap.ptr_at(handle);
    // SAFETY: the blob has room for `bytes` and is not aliased, per the contract; the source is
    // a Rust slice outside the heap's blobs, so the ranges do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr.as_ptr(), bytes.len()) };
}

/// Resizes a blob from `old_capacity` to `new_capacity` bytes (`Heap::realloc`: in place when
/// the heap can) unless they are equal, keeping its first `min(old_len, new_len)` bytes and
/// zeroing `old_len..new_len` when it grows. Returns the (possibly new) handle; on error the
/// blob is untouched.
///
/// # Safety
/// `handle` is a live blob of exactly `old_capacity` bytes from this module on `heap`, its first
/// `old_len` bytes initialised; `new_len <= new_capacity`. On success the old handle is dead
/// unless it is the one returned.
pub unsafe fn blob_resize(
    heap: &mut Heap,
    handle: u64,
    (old_capacity, old_len): (usize, usize),
    (new_capacity, new_len): (usize, usize),
) -> Result<u64, HeapError> {
    assert!(old_len <= old_capacity && new_len <= new_capacity);
    let mut ptr = heap.ptr_at(handle);
    if old_capacity != new_capacity {
        // SAFETY: allocated for exactly `old_capacity` bytes, per the contract.
        ptr = unsafe { heap.realloc(ptr, old_capacity, new_capacity)? };
    }
    if new_len > old_len {
        // SAFETY: `old_len..new_len` lies inside the `new_capacity` bytes of the live blob.
        unsafe { ptr.as_ptr().add(old_len).write_bytes(0, new_len - old_len) };
    }
    Ok(heap.offset_of(ptr))
}

/// Moves a blob of `capacity` bytes to a fresh allocation of the same size (alloc, copy its
/// first `len` bytes, free the old one), for the active defragmenter; returns the new handle.
/// On error the blob is untouched.
///
/// # Safety
/// As [`blob_free`] for `(handle, capacity)`, with its first `len <= capacity` bytes
/// initialised. On success the old handle is dead.
pub unsafe fn blob_move(
    heap: &mut Heap,
    handle: u64,
    capacity: usize,
    len: usize,
) -> Result<u64, HeapError> {
    assert!(len <= capacity);
    let old = heap.ptr_at(handle);
    let new = heap.alloc(capacity)?;
    // SAFETY: both are live allocations of `capacity >= len` bytes and distinct (the old one is
    // not yet freed); the first `len` bytes of the old one are initialised. It is freed once,
    // with its exact size, per the contract.
    unsafe {
        std::ptr::copy_nonoverlapping(old.as_ptr(), new.as_ptr(), len);
        heap.free(old, capacity);
    }
    Ok(heap.offset_of(new))
}

/// Whether moving the blob would help its slab empty ([`Heap::defrag_hint`]).
pub fn blob_defrag_hint(heap: &Heap, handle: u64) -> bool {
    heap.defrag_hint(heap.ptr_at(handle))
}

/// What the heap holds at a blob's address: `(bytes per object, objects)` of the unit it lies
/// in ([`Heap::block_usage`]), for `PageHash::validate`; `None` if the handle points outside
/// the heap's committed memory.
pub fn blob_unit(heap: &Heap, handle: u64) -> Option<(usize, usize)> {
    let ptr = heap.ptr_at(handle);
    if !heap.contains(ptr) {
        return None;
    }
    let usage = heap.block_usage(ptr);
    Some((
        usage.used_bytes / usage.live_objects.max(1),
        usage.live_objects,
    ))
}

/// # Safety
/// `handle` is a live blob of exactly `size` bytes from this module on `heap`, freed once.
pub unsafe fn blob_free(heap: &mut Heap, handle: u64, size: usize) {
    let ptr = heap.ptr_at(handle);
    // SAFETY: allocated by `heap.alloc(size)` or `heap.realloc(_, _, size)`, per the contract.
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
