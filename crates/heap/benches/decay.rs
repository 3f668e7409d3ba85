//! Measurements of giving memory back: what stays resident after mass deletes with and without
//! `Heap::decay`, what decay costs a churning workload, and what a large value built by appends
//! costs with `Heap::realloc` against alloc-copy-free. Not a test: each scenario prints a table
//! row. Run with
//!
//! ```text
//! cargo test -p heap --release --bench decay -- --ignored --nocapture --test-threads=1
//! ```
//!
//! Dimensions: scenario (mass delete of everything / of every other key, churn, burst-and-idle,
//! large append) × policy (decay called every 100 ms, or never) × time. The keyspace is modelled as
//! the server lays it out for 1,000,000 16-byte strings: 8 KiB pages (medium groups, ~6,000 of
//! them) with out-of-line blobs and small maps interleaved as slab objects (16–512 B, one per 20
//! keys). Deleting every other key with compacted pages frees a random half of the pages and of
//! the small objects. Clocks are simulated (`decay(now_ms)` with `now_ms` stepping by 100 ms),
//! except in the churn scenarios, which run on the real clock. RSS is the process's VmRSS above
//! its value before the scenario; `est` is `stats().resident_bytes`.

use heap::{BLOCK_BYTES, Heap, HeapConfig};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::fmt::Write;
use std::ptr::NonNull;
use std::time::Instant;

const PAGES: usize = 6_000;
const SMALLS: usize = 50_000;

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

fn rss() -> u64 {
    status_bytes("VmRSS:")
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn new_heap() -> Heap {
    Heap::with_config(HeapConfig {
        reserve_bytes: 16 << 30,
        ..HeapConfig::default()
    })
    .unwrap()
}

fn alloc_written(heap: &mut Heap, size: usize) -> (NonNull<u8>, usize) {
    let ptr = heap.alloc(size).unwrap();
    // SAFETY: `size` bytes were just allocated.
    unsafe { ptr.as_ptr().write_bytes(0x3C, size) };
    (ptr, size)
}

/// The keyspace model: pages with a small object after every 20 keys' worth of them.
fn load(heap: &mut Heap, rng: &mut SmallRng) -> Vec<(NonNull<u8>, usize)> {
    let mut live = Vec::with_capacity(PAGES + SMALLS);
    for i in 0..PAGES + SMALLS {
        let size = if i % ((PAGES + SMALLS) / PAGES) == 0 {
            BLOCK_BYTES
        } else {
            rng.gen_range(16..=512)
        };
        live.push(alloc_written(heap, size));
    }
    live
}

fn free_random(
    heap: &mut Heap,
    rng: &mut SmallRng,
    live: &mut Vec<(NonNull<u8>, usize)>,
    n: usize,
) {
    for _ in 0..n {
        let (ptr, size) = live.swap_remove(rng.gen_range(0..live.len()));
        // SAFETY: live, freed once with its size.
        unsafe { heap.free(ptr, size) };
    }
}

/// Moves every small object whose slab `defrag_hint` calls sparse (alloc new, copy, free old), as
/// an active defragmenter would; returns how many moved.
fn defrag_pass(heap: &mut Heap, live: &mut [(NonNull<u8>, usize)]) -> usize {
    let mut moved = 0;
    for (ptr, size) in live.iter_mut() {
        if heap.defrag_hint(*ptr) {
            let new = heap.alloc(*size).unwrap();
            // SAFETY: both are live and `size` bytes long; the old one is freed once.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr.as_ptr(), new.as_ptr(), *size);
                heap.free(*ptr, *size);
            }
            *ptr = new;
            moved += 1;
        }
    }
    moved
}

/// Loads the keyspace, frees `fraction` of it (then runs one defragmentation pass, with
/// `defrag`), then ages it for 5 s of simulated time, calling decay every 100 ms (or not), and
/// prints RSS at each checkpoint as a fraction of the load.
fn mass_delete(name: &str, fraction: f64, decay: bool, defrag: bool) {
    let base = rss();
    let mut heap = new_heap();
    let mut rng = SmallRng::seed_from_u64(5);
    let mut live = load(&mut heap, &mut rng);
    let loaded = rss() - base;
    let count = (live.len() as f64 * fraction) as usize;
    free_random(&mut heap, &mut rng, &mut live, count);
    if defrag {
        let before = heap.fragmentation();
        let moved = defrag_pass(&mut heap, &mut live);
        let after = heap.fragmentation();
        println!(
            "defrag pass: moved {moved} objects; slab bytes {:.1} -> {:.1} MiB, free slot bytes \
             {:.1} -> {:.1} MiB",
            mib(before.slab_bytes),
            mib(after.slab_bytes),
            mib(before.free_slot_bytes),
            mib(after.free_slot_bytes)
        );
    }
    let mut row = format!(
        "{name:<14} {:<8} loaded {:>6.1} MiB | freed {:>4.2}",
        match (decay, defrag) {
            (false, _) => "never",
            (true, false) => "decay",
            (true, true) => "defrag",
        },
        mib(loaded),
        (rss() - base) as f64 / loaded as f64
    );
    let mut now_ms = 0;
    for checkpoint in [500, 1_000, 2_000, 5_000] {
        let start = Instant::now();
        while now_ms < checkpoint {
            now_ms += 100;
            if decay {
                heap.decay(now_ms);
            }
        }
        let spent = start.elapsed();
        let held = rss().saturating_sub(base);
        let _ = write!(
            row,
            " | {:.1} s {:>4.2} ({:>4.0} µs)",
            checkpoint as f64 / 1000.0,
            held as f64 / loaded as f64,
            spent.as_secs_f64() * 1e6
        );
    }
    let stats = heap.stats();
    let _ = write!(
        row,
        " | est {:>5.1} MiB, dirty {:>4.1} MiB",
        mib(stats.resident_bytes),
        mib(stats.dirty_bytes + stats.empty_slab_bytes)
    );
    println!("{row}");
    let count = live.len();
    free_random(&mut heap, &mut rng, &mut live, count);
}

/// Replaces random objects of the keyspace for `seconds` of real time; with `decay`, calls it
/// every 100 ms. Prints ns per replacement and the page faults taken.
fn churn(seconds: f64, decay: bool) {
    let mut heap = new_heap();
    let mut rng = SmallRng::seed_from_u64(9);
    let mut live = load(&mut heap, &mut rng);
    let start = Instant::now();
    let mut next_decay_ms = 100;
    let mut ops = 0u64;
    let faults = minor_faults();
    while start.elapsed().as_secs_f64() < seconds {
        for _ in 0..1024 {
            let index = rng.gen_range(0..live.len());
            let (ptr, size) = live[index];
            // SAFETY: live, freed once with its size; replaced just below.
            unsafe { heap.free(ptr, size) };
            live[index] = alloc_written(&mut heap, size);
        }
        ops += 1024;
        let now_ms = start.elapsed().as_millis() as u64;
        if decay && now_ms >= next_decay_ms {
            heap.decay(now_ms);
            next_decay_ms = now_ms + 100;
        }
    }
    let ns = start.elapsed().as_secs_f64() * 1e9 / ops as f64;
    println!(
        "churn          {:<8} {ns:>6.1} ns/replacement, {:.3} faults/op, dirty {:.1} MiB",
        if decay { "decay" } else { "never" },
        (minor_faults() - faults) as f64 / ops as f64,
        mib(heap.stats().dirty_bytes)
    );
    let count = live.len();
    free_random(&mut heap, &mut rng, &mut live, count);
}

/// Deletes 20% of the keyspace, sits idle for `idle_ms` of real time (decaying every 100 ms, or
/// not), then inserts as much again: the price of decay is the refill's page faults.
fn burst_then_idle(idle_ms: u64, decay: bool) {
    let mut heap = new_heap();
    let mut rng = SmallRng::seed_from_u64(13);
    let mut live = load(&mut heap, &mut rng);
    let count = live.len() / 5;
    let start = Instant::now();
    free_random(&mut heap, &mut rng, &mut live, count);
    while start.elapsed().as_millis() < u128::from(idle_ms) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if decay {
            heap.decay(start.elapsed().as_millis() as u64);
        }
    }
    let faults = minor_faults();
    let refill = Instant::now();
    for i in 0..count {
        let size = if i % ((PAGES + SMALLS) / PAGES) == 0 {
            BLOCK_BYTES
        } else {
            rng.gen_range(16..=512)
        };
        live.push(alloc_written(&mut heap, size));
    }
    println!(
        "burst+idle {idle_ms:>4} ms {:<8} refill {:>6.1} ns/insert, {:.3} faults/insert",
        if decay { "decay" } else { "never" },
        refill.elapsed().as_secs_f64() * 1e9 / count as f64,
        (minor_faults() - faults) as f64 / count as f64
    );
    let count = live.len();
    free_random(&mut heap, &mut rng, &mut live, count);
}

fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let (_, after) = stat.rsplit_once(')').unwrap();
    after.split_whitespace().nth(7).unwrap().parse().unwrap()
}

/// Builds a value of `target` bytes by appends of ×1.5 (or of `step` bytes) from 1 MiB, with
/// `Heap::realloc` or by alloc-copy-free (what the heap did before for different classes), and
/// prints the time, the peak RSS above the start, and what stays resident after freeing it.
fn large_append(target: usize, step: Option<usize>, use_realloc: bool) {
    let mut heap = new_heap();
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let base = rss();
    let start = Instant::now();
    let mut size = 1 << 20;
    let mut value = alloc_written(&mut heap, size).0;
    let mut appends = 0;
    while size < target {
        let new = step.map_or(size + size / 2, |step| size + step).min(target);
        value = if use_realloc {
            // SAFETY: `value` is live with `size` bytes and not used after.
            unsafe { heap.realloc(value, size, new).unwrap() }
        } else {
            let moved = heap.alloc(new).unwrap();
            // SAFETY: both are live and at least `size` bytes long; the old one is freed once.
            unsafe {
                std::ptr::copy_nonoverlapping(value.as_ptr(), moved.as_ptr(), size);
                heap.free(value, size);
            }
            moved
        };
        // SAFETY: `new` bytes are allocated; the appended part is written.
        unsafe { value.as_ptr().add(size).write_bytes(0x3C, new - size) };
        size = new;
        appends += 1;
    }
    let elapsed = start.elapsed();
    let held = rss() - base;
    let peak = status_bytes("VmHWM:").saturating_sub(base);
    // SAFETY: live, freed once with its size.
    unsafe { heap.free(value, size) };
    println!(
        "large {:>4} MiB {:<14} {:<7} {appends:>4} appends {:>7.1} ms | held {:>6.1} MiB, \
         peak {:>6.1} MiB, after free {:>5.1} MiB",
        target >> 20,
        step.map_or("×1.5".to_string(), |s| format!("+{} MiB", s >> 20)),
        if use_realloc { "realloc" } else { "copy" },
        elapsed.as_secs_f64() * 1e3,
        mib(held),
        mib(peak),
        mib(rss().saturating_sub(base))
    );
}

#[test]
#[ignore = "measurement: cargo test -p heap --release --bench decay -- --ignored --nocapture --test-threads=1"]
fn measure_decay() {
    println!(
        "\nRSS as a fraction of the load, at simulated times after the frees (decay cost in µs)"
    );
    for decay in [false, true] {
        mass_delete("delete all", 1.0, decay, false);
        mass_delete("delete half", 0.5, decay, false);
    }
    mass_delete("delete half", 0.5, true, true);
    println!("\nsteady churn, 2 s of real time");
    for decay in [false, true, false, true] {
        churn(2.0, decay);
    }
    println!("\ndelete 20%, idle, refill");
    for idle_ms in [300, 1500] {
        for decay in [false, true] {
            burst_then_idle(idle_ms, decay);
        }
    }
    println!("\nlarge values built by appends");
    for use_realloc in [false, true] {
        large_append(512 << 20, None, use_realloc);
    }
    for use_realloc in [false, true] {
        large_append(128 << 20, Some(1 << 20), use_realloc);
    }
}
