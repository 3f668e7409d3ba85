//! Memory goes back to the OS, measured by the kernel: after freeing everything, `decay` on a
//! (simulated) clock and `purge` must each bring VmRSS down by at least 80% of what the load added,
//! with the heap's estimate within 10% of VmRSS; a large value grown by `realloc` must peak near
//! its own size (no second copy) and leave nothing resident once freed. One test function, so no
//! other test thread allocates while it measures. Bounds are generous: the point is "returned",
//! not the last megabyte.

use heap::{Heap, HeapConfig};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ptr::NonNull;

/// A field of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

fn vm_rss_bytes() -> u64 {
    status_bytes("VmRSS:")
}

/// Resets the process's peak RSS (VmHWM) to its current RSS; false where the kernel cannot.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The estimate is within 10% of the measured delta, or within 4 MiB when both are small (the
/// test binary's own allocations move VmRSS by a few pages either way).
fn assert_estimate_tracks(what: &str, rss_delta: u64, estimate: u64) {
    let (lo, hi) = (rss_delta.min(estimate), rss_delta.max(estimate));
    assert!(
        hi - lo <= (4 << 20) || hi as f64 <= lo as f64 * 1.10,
        "{what}: VmRSS delta {rss_delta} vs heap estimate {estimate}"
    );
}

/// Allocates about `bytes` of small objects (16–512 B, every byte written) into `live`.
fn load_small(
    heap: &mut Heap,
    rng: &mut SmallRng,
    live: &mut Vec<(NonNull<u8>, usize)>,
    bytes: usize,
) {
    let mut total = 0;
    while total < bytes {
        let size = rng.gen_range(16..=512);
        let ptr = heap.alloc(size).unwrap();
        // SAFETY: `size` bytes were just allocated.
        unsafe { ptr.as_ptr().write_bytes(0xA5, size) };
        live.push((ptr, size));
        total += size;
    }
}

fn free_in_random_order(heap: &mut Heap, rng: &mut SmallRng, live: &mut Vec<(NonNull<u8>, usize)>) {
    while !live.is_empty() {
        let (ptr, size) = live.swap_remove(rng.gen_range(0..live.len()));
        // SAFETY: live, freed once with its size.
        unsafe { heap.free(ptr, size) };
    }
}

const LOAD_BYTES: usize = 200 << 20;

#[test]
fn freed_memory_leaves_vm_rss_by_decay_by_purge_and_for_large_values() {
    let mut heap = Heap::<32>::with_config(HeapConfig {
        reserve_bytes: 8 << 30,
        ..HeapConfig::default()
    })
    .unwrap();
    let mut rng = SmallRng::seed_from_u64(11);
    // The pointer list is touched once up front, so its pages are in the baseline.
    let mut live: Vec<(NonNull<u8>, usize)> = vec![(NonNull::dangling(), 0); 1_600_000];
    live.clear();
    let base = vm_rss_bytes();
    decay_round(&mut heap, &mut rng, &mut live, base);
    purge_round(&mut heap, &mut rng, &mut live, base);
    large_round(&mut heap);
    heap.validate();
}

/// Loads small objects, frees everything in random order, and lets decay return it.
fn decay_round(
    heap: &mut Heap,
    rng: &mut SmallRng,
    live: &mut Vec<(NonNull<u8>, usize)>,
    base: u64,
) {
    let load_bytes = LOAD_BYTES;
    load_small(heap, rng, live, load_bytes);
    let grown = vm_rss_bytes() - base;
    assert!(grown > load_bytes as u64, "grew only {grown}");
    assert_estimate_tracks("after load", grown, heap.stats().resident_bytes);
    free_in_random_order(heap, rng, live);
    let freed = vm_rss_bytes().saturating_sub(base);
    let mut now_ms = 1_000_000;
    let mut released = 0;
    while now_ms <= 1_002_000 {
        released += heap.decay(now_ms);
        now_ms += 100;
    }
    let decayed = vm_rss_bytes().saturating_sub(base);
    let stats = heap.stats();
    assert!(
        decayed <= grown / 5,
        "decay: VmRSS above baseline {grown} -> {freed} after free -> {decayed} after 2 s of decay"
    );
    assert!(released as u64 >= stats.decayed_bytes.min(grown / 2));
    assert!(stats.resident_bytes <= HeapConfig::default().dirty_reserve_bytes as u64 + (1 << 20));
    assert_estimate_tracks("after decay", decayed, stats.resident_bytes);
    eprintln!(
        "decay: VmRSS above baseline {} MiB loaded, {} MiB after free, {} MiB after 2 s of decay \
         (estimate {} KiB)",
        grown >> 20,
        freed >> 20,
        decayed >> 20,
        stats.resident_bytes >> 10
    );
}

/// The same load again (reusing the arena), freed, then one purge.
fn purge_round(
    heap: &mut Heap,
    rng: &mut SmallRng,
    live: &mut Vec<(NonNull<u8>, usize)>,
    base: u64,
) {
    let load_bytes = LOAD_BYTES;
    load_small(heap, rng, live, load_bytes);
    let regrown = vm_rss_bytes().saturating_sub(base);
    assert_estimate_tracks("after reload", regrown, heap.stats().resident_bytes);
    free_in_random_order(heap, rng, live);
    heap.purge();
    let purged = vm_rss_bytes().saturating_sub(base);
    assert!(
        purged <= regrown / 5,
        "purge: VmRSS above baseline {regrown} -> {purged}"
    );
    assert_eq!(heap.stats().resident_bytes, 0);
    assert_estimate_tracks("after purge", purged, 0);
    eprintln!(
        "purge: VmRSS above baseline {} MiB loaded, {} MiB after free + purge",
        regrown >> 20,
        purged >> 20
    );
}

/// A 256 MiB value built by appends (growth by half each time, with an allocation after each step
/// so the next cannot always grow in place), then freed.
fn large_round(heap: &mut Heap) {
    let peak_known = reset_peak();
    let before = vm_rss_bytes();
    let mut size = 1 << 20;
    let mut value = heap.alloc(size).unwrap();
    // SAFETY: `size` bytes were just allocated.
    unsafe { value.as_ptr().write_bytes(1, size) };
    let mut blockers = Vec::new();
    while size < 256 << 20 {
        let new = (size + size / 2).min(256 << 20);
        // SAFETY: `value` is live with `size` bytes and not used after.
        value = unsafe { heap.realloc(value, size, new).unwrap() };
        // SAFETY: `new` bytes are allocated; the first `size` were kept.
        unsafe { value.as_ptr().add(size).write_bytes(1, new - size) };
        size = new;
        blockers.push(heap.alloc(600 << 10).unwrap());
    }
    let held = vm_rss_bytes() - before;
    let estimate = heap.stats().resident_bytes;
    let blocker_bytes = (blockers.len() * (600 << 10)) as u64;
    assert!(
        held <= size as u64 + blocker_bytes + (16 << 20),
        "{size} B value holds {held}"
    );
    let mut peak = 0;
    if peak_known {
        peak = status_bytes("VmHWM:") - before;
        assert!(
            peak <= size as u64 + blocker_bytes + (32 << 20),
            "{size} B value peaked at {peak}: a second copy"
        );
    }
    // SAFETY: the whole value is allocated and was written.
    let bytes = unsafe { std::slice::from_raw_parts(value.as_ptr(), size) };
    assert!(bytes.iter().step_by(4096).all(|&b| b == 1));
    // SAFETY: live, freed once with its size.
    unsafe { heap.free(value, size) };
    let after_free = vm_rss_bytes().saturating_sub(before);
    assert!(
        after_free <= blocker_bytes + (16 << 20),
        "{after_free} still resident after freeing the value"
    );
    eprintln!(
        "large: {} MiB value built by realloc holds {} MiB (estimate {} MiB, {} blockers of \
         600 KiB), peak {} MiB, {} MiB after free",
        size >> 20,
        held >> 20,
        estimate >> 20,
        blockers.len(),
        peak >> 20,
        after_free >> 20
    );
    for blocker in blockers {
        // SAFETY: live, freed once with its size.
        unsafe { heap.free(blocker, 600 << 10) };
    }
    heap.purge();
    assert_eq!(heap.stats().resident_bytes, 0);
}
