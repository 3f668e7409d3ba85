//! Model-based randomized test: the same random operations go to the heap and to a reference model
//! (a `BTreeMap` of live address ranges with their sizes and fill bytes). After every operation the
//! heap's answer must agree with the model: new ranges never overlap live ones, contents survive
//! `realloc`, the byte counters equal the model's sums, and `validate()` finds every descriptor,
//! free run and free chain consistent after every step. Each seed switches operation kinds on and
//! off at random, so runs that only grow, only churn one size, purge often, or decay on a clock
//! that jumps by 0–400 ms all occur; one size profile in five is of large regions up to 24 MiB, so
//! `realloc` grows and shrinks them in place, into free megablocks, and by remapping.

use heap::{Heap, HeapConfig};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ptr::NonNull;

#[derive(Clone, Copy, Debug)]
struct Live {
    size: usize,
    fill: u8,
}

fn sizes(rng: &mut SmallRng, profile: u32) -> usize {
    match profile {
        0 => rng.gen_range(0..=64),
        1 => rng.gen_range(1..=40_000),
        2 => rng.gen_range(1..=8) * 8192,
        3 => rng.gen_range(1..=3 << 20),
        _ => rng.gen_range(1..=24 << 20),
    }
}

fn check_range(model: &BTreeMap<usize, Live>, start: usize, size: usize) {
    let size = size.max(1);
    if let Some((&prev, live)) = model.range(..=start).next_back() {
        assert!(
            prev + live.size.max(1) <= start,
            "overlaps the object at {prev:#x}"
        );
    }
    if let Some((&next, _)) = model.range(start..).next() {
        assert!(start + size <= next, "overlaps the object at {next:#x}");
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario: its steps or its table of cases stay together"
)]
fn run(seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut heap = Heap::<32>::with_config(HeapConfig {
        reserve_bytes: 4 << 30,
        large_cache_bytes_max: rng.gen_range(0..=32) << 20,
        release_batch_bytes: rng.gen_range(1..=16) << 20,
        dirty_bytes_max: rng.gen_range(0..=4) << 20,
        dirty_decay_ms: [0, 100, 1000][rng.gen_range(0..3)],
        dirty_reserve_bytes: rng.gen_range(0..=2) << 18,
    })
    .unwrap();
    let enabled: [bool; 5] = [
        true,
        rng.gen_bool(0.7),
        rng.gen_bool(0.5),
        rng.gen_bool(0.1),
        rng.gen_bool(0.6),
    ];
    let profile = rng.gen_range(0..5);
    // Large profiles write every byte of objects up to 24 MiB: fewer of them, fewer steps.
    let (live_max, steps) = if profile == 4 { (12, 400) } else { (400, 3000) };
    let mut model: BTreeMap<usize, Live> = BTreeMap::new();
    let mut now_ms = rng.gen_range(0..1_000_000u64);
    for step in 0..steps {
        let op = rng.gen_range(0..5);
        if !enabled[op] {
            continue;
        }
        match op {
            0 if model.len() < live_max => {
                let size = sizes(&mut rng, profile);
                let ptr = heap.alloc(size).unwrap();
                let fill = gen_fill(&mut rng);
                check_range(&model, ptr.as_ptr() as usize, size);
                // SAFETY: `size` bytes were just allocated.
                unsafe { ptr.as_ptr().write_bytes(fill, size) };
                model.insert(ptr.as_ptr() as usize, Live { size, fill });
            }
            1 | 0 if !model.is_empty() => {
                let index = rng.gen_range(0..model.len());
                let (&addr, &live) = model.iter().nth(index).unwrap();
                let ptr = NonNull::new(addr as *mut u8).unwrap();
                verify(ptr, live);
                model.remove(&addr);
                // SAFETY: live, freed once with its size.
                unsafe { heap.free(ptr, live.size) };
            }
            2 if !model.is_empty() => {
                let index = rng.gen_range(0..model.len());
                let (&addr, &live) = model.iter().nth(index).unwrap();
                let new_profile = rng.gen_range(0..5).min(profile + 1);
                let new_size = sizes(&mut rng, new_profile);
                model.remove(&addr);
                let old = NonNull::new(addr as *mut u8).unwrap();
                // SAFETY: live with `live.size`; the old pointer is not used after.
                let ptr = unsafe { heap.realloc(old, live.size, new_size).unwrap() };
                verify(
                    ptr,
                    Live {
                        size: live.size.min(new_size),
                        fill: live.fill,
                    },
                );
                check_range(&model, ptr.as_ptr() as usize, new_size);
                // SAFETY: `new_size` bytes are allocated.
                unsafe { ptr.as_ptr().write_bytes(live.fill, new_size) };
                model.insert(
                    ptr.as_ptr() as usize,
                    Live {
                        size: new_size,
                        fill: live.fill,
                    },
                );
            }
            3 => {
                heap.purge();
                let stats = heap.stats();
                assert_eq!(
                    (
                        stats.dirty_bytes,
                        stats.large_cache_bytes,
                        stats.empty_slab_bytes
                    ),
                    (0, 0, 0),
                    "seed {seed} step {step}: purge leaves nothing freed resident"
                );
            }
            4 => {
                now_ms += rng.gen_range(0..400);
                heap.decay(now_ms);
            }
            _ => {}
        }
        let stats = heap.stats();
        let requested: usize = model.values().map(|l| l.size).sum();
        let usable: usize = model
            .values()
            .map(|l| Heap::<32>::usable_size(l.size))
            .sum();
        assert_eq!(
            stats.requested_bytes as usize, requested,
            "seed {seed} step {step}"
        );
        assert_eq!(
            stats.allocated_bytes as usize, usable,
            "seed {seed} step {step}"
        );
        heap.validate();
    }
    for (&addr, &live) in &model {
        let ptr = NonNull::new(addr as *mut u8).unwrap();
        verify(ptr, live);
        // SAFETY: live, freed once.
        unsafe { heap.free(ptr, live.size) };
    }
    heap.validate();
    assert_eq!(heap.stats().allocated_bytes, 0);
}

fn gen_fill(rng: &mut SmallRng) -> u8 {
    rng.gen_range(1..=255)
}

/// Checks every byte of objects up to 64 KiB; of larger ones, one byte in every 4 KiB page at an
/// offset that moves from page to page, and the last byte (a lost or zeroed page still shows).
fn verify(ptr: NonNull<u8>, live: Live) {
    // SAFETY: the model says `live.size` bytes at `ptr` are a live object.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), live.size) };
    let ok = if live.size <= 64 << 10 {
        bytes.iter().all(|&b| b == live.fill)
    } else {
        bytes.iter().step_by(4099).all(|&b| b == live.fill) && bytes[live.size - 1] == live.fill
    };
    assert!(ok, "contents of {ptr:?} changed");
}

#[test]
fn heap_agrees_with_model() {
    for seed in 0..30 {
        run(seed);
    }
}
