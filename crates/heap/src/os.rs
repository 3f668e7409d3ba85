//! The operating-system calls the heap makes, and nothing else.
//!
//! The heap reserves one range of address space up front with `PROT_NONE` (it costs no memory and
//! counts against no commit limit, as GHC's two-step allocator does), makes megablocks readable and
//! writable as the high-water mark advances (`mprotect`), and hands pages back with
//! `MADV_DONTNEED`, after which they read as zero and are no longer resident. Nothing is ever
//! left unmapped while the heap lives, so a pointer into the committed prefix stays valid memory
//! for the heap's whole life; `unreserve` runs once, from `Drop`.
//!
//! A large region that must move to grow moves its pages rather than its bytes: `remap` is
//! `mremap(MREMAP_FIXED | MREMAP_DONTUNMAP)` from one range of the reservation to another, so the
//! page-table entries move in O(pages) with no copy and no second resident copy, and the source
//! stays mapped (reading as zero, like a purged range). If the kernel refuses (before Linux 5.7, or
//! when the source spans several mappings) the destination is mapped afresh and the caller copies.
//!
//! The arena is marked `MADV_NOHUGEPAGE`: a transparent huge page would make one touched byte cost
//! 2 MiB of resident memory and would break the page-granular accounting in `stats.rs`.
//!
//! Miri cannot run these calls (and no Miri toolchain can be installed on this machine), so the
//! heap's tests run natively; the stress test's cookies and `Heap::validate` stand in for it.

use crate::HeapError;
use std::ptr::NonNull;

/// Reserves `len` bytes of address space aligned to `align` (a power of two), inaccessible.
pub(crate) fn reserve(len: usize, align: usize) -> Result<NonNull<u8>, HeapError> {
    assert!(align.is_power_of_two() && len.is_multiple_of(align));
    let request = len.checked_add(align).ok_or(HeapError::OutOfMemory)?;
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches no
    // existing memory; the result is checked against MAP_FAILED.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            request,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return Err(HeapError::OutOfMemory);
    }
    let start = raw as usize;
    let aligned = (start + align - 1) & !(align - 1);
    let head = aligned - start;
    let tail = request - head - len;
    // SAFETY: both trimmed ranges lie inside the mapping just created and are not used by anyone.
    unsafe {
        if head > 0 {
            libc::munmap(raw, head);
        }
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
        libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_NOHUGEPAGE);
    }
    Ok(NonNull::new(aligned as *mut u8).expect("mmap returned a null mapping"))
}

/// Makes `[ptr, ptr + len)` readable and writable.
///
/// # Safety
/// The range lies inside a reservation made by [`reserve`] and not yet released.
pub(crate) unsafe fn commit(ptr: NonNull<u8>, len: usize) -> Result<(), HeapError> {
    // SAFETY: the caller guarantees the range is ours; mprotect changes only its protection.
    let rc =
        unsafe { libc::mprotect(ptr.as_ptr().cast(), len, libc::PROT_READ | libc::PROT_WRITE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(HeapError::OutOfMemory)
    }
}

/// Gives the pages of `[ptr, ptr + len)` back to the OS; they read as zero afterwards.
///
/// # Safety
/// The range is committed, page-aligned, and holds no live object.
pub(crate) unsafe fn purge(ptr: NonNull<u8>, len: usize) {
    // SAFETY: the caller guarantees nothing live is in the range, so dropping its contents is
    // allowed; MADV_DONTNEED on a private anonymous mapping cannot fail for a valid range.
    unsafe {
        libc::madvise(ptr.as_ptr().cast(), len, libc::MADV_DONTNEED);
    }
}

/// What [`remap`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Remap {
    /// The pages moved; the source reads as zero.
    Moved,
    /// Nothing moved; both ranges are as before (the destination reads as zero).
    Refused,
    /// Nothing moved, and the destination could not be mapped again: it must never be used.
    Lost,
}

/// Moves the pages of `[from, from + len)` to `[to, to + len)` without copying them.
///
/// # Safety
/// Both ranges are committed parts of one reservation from [`reserve`], page-aligned, disjoint;
/// `to` holds no live object and `from` is not used for data afterwards (it reads as zero when
/// the pages moved, and is untouched otherwise).
pub(crate) unsafe fn remap(from: NonNull<u8>, to: NonNull<u8>, len: usize) -> Remap {
    // SAFETY: the caller guarantees both ranges are ours and that `to` is dead; with MREMAP_FIXED
    // the kernel replaces the mapping at `to`, and with MREMAP_DONTUNMAP it leaves `from` mapped.
    let moved = unsafe {
        libc::mremap(
            from.as_ptr().cast(),
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED | libc::MREMAP_DONTUNMAP,
            to.as_ptr().cast::<libc::c_void>(),
        )
    };
    if moved == to.as_ptr().cast() {
        return Remap::Moved;
    }
    // A failed MREMAP_FIXED may already have unmapped the destination: map it again, as the
    // arena commits memory (read-write, no reservation, no huge pages).
    // SAFETY: `to` is part of our reservation and dead (the caller's contract); MAP_FIXED
    // replaces only that range.
    let mapped = unsafe {
        libc::mmap(
            to.as_ptr().cast(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
            -1,
            0,
        )
    };
    if mapped != to.as_ptr().cast() {
        return Remap::Lost;
    }
    // SAFETY: the range was just mapped by us.
    unsafe { libc::madvise(to.as_ptr().cast(), len, libc::MADV_NOHUGEPAGE) };
    Remap::Refused
}

/// Counts the pages of `[ptr, ptr + len)` that are resident, with `mincore`.
///
/// # Safety
/// The range is mapped (committed or reserved) and page-aligned.
pub(crate) unsafe fn resident_pages(ptr: NonNull<u8>, len: usize) -> usize {
    const CHUNK_PAGES: usize = 16 << 10;
    let page = 4096;
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages.min(CHUNK_PAGES)];
    let mut resident = 0;
    let mut done = 0;
    while done < pages {
        let n = (pages - done).min(CHUNK_PAGES);
        // SAFETY: the caller guarantees the range is mapped; `vec` holds one byte per page of the
        // chunk, which is what mincore writes.
        let rc = unsafe {
            libc::mincore(
                ptr.as_ptr().add(done * page).cast(),
                n * page,
                vec.as_mut_ptr(),
            )
        };
        if rc == 0 {
            resident += vec[..n].iter().filter(|&&b| b & 1 == 1).count();
        }
        done += n;
    }
    resident
}

/// Releases a whole reservation.
///
/// # Safety
/// `(ptr, len)` is exactly a reservation from [`reserve`], and no pointer into it is used after.
pub(crate) unsafe fn unreserve(ptr: NonNull<u8>, len: usize) {
    // SAFETY: the caller guarantees the range is one of our mappings and is dead.
    unsafe {
        libc::munmap(ptr.as_ptr().cast(), len);
    }
}
