//! Resident memory: the heap's own estimate (`stats().resident_bytes`) must track the process's
//! VmRSS within 10%, and VmRSS must fall after mass deletes. One test function, so no other test
//! thread allocates while it measures.

use heap::{Heap, HeapConfig};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ptr::NonNull;

fn vm_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

fn assert_within_10_percent(what: &str, rss_delta: u64, estimate: u64) {
    let (lo, hi) = (
        rss_delta.min(estimate) as f64,
        rss_delta.max(estimate) as f64,
    );
    assert!(
        hi <= lo * 1.10,
        "{what}: VmRSS delta {rss_delta} vs heap estimate {estimate}"
    );
}

#[test]
fn estimate_tracks_vm_rss_and_rss_falls_after_deletes() {
    let mut heap = Heap::<32>::with_config(HeapConfig {
        reserve_bytes: 8 << 30,
        ..HeapConfig::default()
    })
    .unwrap();
    let mut rng = SmallRng::seed_from_u64(7);
    let mut live: Vec<(NonNull<u8>, usize)> = Vec::with_capacity(1_100_000);
    let base = vm_rss_bytes();

    // 1,000,000 small objects, every byte written.
    for _ in 0..1_000_000 {
        let size = rng.gen_range(16..=512);
        let ptr = heap.alloc(size).unwrap();
        // SAFETY: `size` bytes were just allocated.
        unsafe { ptr.as_ptr().write_bytes(1, size) };
        live.push((ptr, size));
    }
    // Medium and large objects, every page written.
    for i in 0..300 {
        let size = if i % 10 == 0 {
            3 << 20
        } else {
            rng.gen_range(40_000..500_000)
        };
        let ptr = heap.alloc(size).unwrap();
        // SAFETY: `size` bytes were just allocated.
        unsafe { ptr.as_ptr().write_bytes(2, size) };
        live.push((ptr, size));
    }
    let grown = vm_rss_bytes() - base;
    assert!(grown > 300 << 20, "grew only {grown}");
    assert_within_10_percent("after load", grown, heap.stats().resident_bytes);

    // Delete the oldest 90% (as expiring or flushing old keys does): whole slabs empty, and
    // resident memory must follow once the heap purges. A random 90% would leave a survivor in
    // nearly every slab; giving that memory back is the defragmenter's job, not the allocator's.
    let keep_from = live.len() * 9 / 10;
    let kept = live.split_off(keep_from);
    for (ptr, size) in live.drain(..) {
        // SAFETY: live, freed once.
        unsafe { heap.free(ptr, size) };
    }
    heap.purge();
    let after = vm_rss_bytes().saturating_sub(base);
    let stats = heap.stats();
    let kept_bytes: usize = kept.iter().map(|&(_, size)| size).sum();
    assert!(
        after < (kept_bytes as u64) * 13 / 10 + (16 << 20),
        "RSS {after} did not fall from {grown} toward the {kept_bytes} bytes still live"
    );
    // Only whole free blocks can be given back: the survivors pin their slabs, so compare the
    // estimate with RSS rather than with the survivors' bytes.
    assert_within_10_percent("after deletes", after, stats.resident_bytes);

    for (ptr, size) in kept {
        // SAFETY: live, freed once.
        unsafe { heap.free(ptr, size) };
    }
    heap.purge();
    let empty = vm_rss_bytes().saturating_sub(base);
    assert!(
        empty < 16 << 20,
        "{empty} bytes still resident after freeing everything"
    );
}
