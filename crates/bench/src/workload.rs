//! The heap suite's workloads: what each one allocates, in which order, and what one "op" is.
//!
//! Dimensions: allocator (`alloc.rs`) × workload (below) × pass × round. Every child process runs
//! one (allocator, workload) pair for all its rounds; the suite runs every pair once per pass
//! (5 passes of 5 rounds by default), and the reported time is the median of all 25 rounds. The
//! sequence of sizes and victims comes from a fixed-seed [`SplitMix64`], so every allocator sees
//! exactly the same requests.
//!
//! ## Large alloc/free loops: `json` (64 KiB), `mir` (256 KiB), `vm` (2 MiB)
//! hakmem's three scenarios. A window of [`WINDOW_LEN`] = 4 live objects of one fixed size is
//! filled (allocated and touched), then each iteration
//! 1. allocates one new object and writes one byte into every 4 KiB page of it (so memory the
//!    allocator has handed back to the OS must be faulted in again: an allocator that releases
//!    too eagerly pays a page fault per page, and that is what these scenarios measure);
//! 2. frees a pseudo-random member of the window and puts the new object in its place.
//!
//! One op = one iteration (alloc + touch + free). Iterations per round are chosen so that every
//! loop touches the same number of pages per round ([`Sizes::loop_pages_per_round`]): 2 MiB
//! objects run 32× fewer iterations than 64 KiB ones. Each round starts from the same seed and
//! frees its window at the end, so rounds are identical and the allocator may release memory
//! between them. The accounting sample is taken in the last round, window still live.
//!
//! ## `small`: 1,000,000 live objects of 16–512 B
//! Build phase: allocate [`Sizes::small_live`] objects of uniform random size in 16..=512 bytes
//! and write the first 8 bytes of each (timed once, reported as `build ns/op`). Then each round
//! runs [`Sizes::small_steps_per_round`] steps of: pick a uniformly random live slot, free it,
//! allocate a new object of a new random size there, write its first 8 bytes. One op = one
//! step. Rounds continue the same sequence (the live set carries over). The accounting sample is
//! taken after the last round, all objects live. Peak RSS here is the density number: about
//! 264 requested bytes per object on average, so 1,000,000 objects request ~252 MiB.
//!
//! ## `descriptors`: densekv only, 32-byte versus 64-byte block descriptors
//! `Heap::<32>` and `Heap::<64>`, each reserved at 2× the heap size, get [`Sizes::desc_heap_bytes`]
//! (4 GiB) of `BLOCK_BYTES` allocations that are never touched, so only descriptor pages become
//! resident. Each round then times [`Sizes::census_repeats`] calls of `heap.census()`, which walks
//! every block descriptor. One op = one descriptor visited (blocks allocated × repeats).

use std::hint::black_box;
use std::ptr::NonNull;
use std::time::Instant;

use clap::ValueEnum;
use heap::{BLOCK_BYTES, Heap, HeapConfig};
use serde::{Deserialize, Serialize};

use crate::alloc::{AllocFn, BenchAlloc};
use crate::machine;
use crate::rng::SplitMix64;

/// Live objects in a large-loop window.
pub const WINDOW_LEN: usize = 4;
/// The stride of the touch loop: one write per (smallest) page.
const PAGE_BYTES: usize = 4096;
const LOOP_SEED: u64 = 0x6A73_6F6E_6D69_7276; // "jsonmirv"
const SMALL_SEED: u64 = 0x736D_616C_6C31_6D21; // "small1m!"
const SMALL_MIN_BYTES: u64 = 16;
const SMALL_MAX_BYTES: u64 = 512;

/// One workload of the heap suite; the value of `--workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    Json,
    Mir,
    Vm,
    Small,
    Descriptors,
}

impl Workload {
    /// The workloads run on every compared allocator.
    pub const COMPARED: [Self; 4] = [Self::Json, Self::Mir, Self::Vm, Self::Small];

    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Mir => "mir",
            Self::Vm => "vm",
            Self::Small => "small",
            Self::Descriptors => "descriptors",
        }
    }

    /// Object size of a large loop; `None` for the others.
    pub fn loop_object_bytes(self) -> Option<usize> {
        match self {
            Self::Json => Some(64 << 10),
            Self::Mir => Some(256 << 10),
            Self::Vm => Some(2 << 20),
            Self::Small | Self::Descriptors => None,
        }
    }
}

/// How big a run is: full (the real suite) or quick (the smoke test).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sizes {
    pub loop_pages_per_round: usize,
    pub small_live: usize,
    pub small_steps_per_round: usize,
    pub desc_heap_bytes: usize,
    pub census_repeats: usize,
    /// Timed rounds per child process.
    pub rounds: usize,
    /// Child processes per (allocator, workload), run in separate passes over the whole suite.
    pub passes: usize,
}

impl Sizes {
    /// Rounds of 30–300 ms for the fast allocators, so a timer tick or a context switch is noise
    /// rather than signal; the whole suite (5 passes) then takes about 80 s on the 2-core
    /// development machine. An allocator that faulted every page in again on `vm` would add up
    /// to ~15 s per pass.
    pub const FULL: Self = Self {
        loop_pages_per_round: 1 << 23,
        small_live: 1_000_000,
        small_steps_per_round: 2_000_000,
        desc_heap_bytes: 4 << 30,
        census_repeats: 20,
        rounds: 5,
        passes: 5,
    };
    /// A smoke test of every code path, a few seconds in all.
    pub const QUICK: Self = Self {
        loop_pages_per_round: 4096,
        small_live: 20_000,
        small_steps_per_round: 20_000,
        desc_heap_bytes: 64 << 20,
        census_repeats: 2,
        rounds: 3,
        passes: 1,
    };

    pub fn new(quick: bool, rounds: Option<usize>, passes: Option<usize>) -> Self {
        let base = if quick { Self::QUICK } else { Self::FULL };
        Self {
            rounds: rounds.unwrap_or(base.rounds).max(1),
            passes: passes.unwrap_or(base.passes).max(1),
            ..base
        }
    }

    /// Iterations per round of the large loop over `object_bytes` objects.
    pub fn loop_iterations(&self, object_bytes: usize) -> usize {
        (self.loop_pages_per_round / object_bytes.div_ceil(PAGE_BYTES)).max(1)
    }
}

/// The victims of a large loop: which window slot each iteration frees.
#[derive(Debug, Clone)]
pub struct LoopPlan {
    rng: SplitMix64,
}

impl LoopPlan {
    pub fn new() -> Self {
        Self {
            rng: SplitMix64::new(LOOP_SEED),
        }
    }

    pub fn next_victim(&mut self) -> usize {
        self.rng.below(WINDOW_LEN as u64) as usize
    }
}

/// The sizes and victims of the `small` workload.
#[derive(Debug, Clone)]
pub struct SmallPlan {
    rng: SplitMix64,
    live: u64,
}

impl SmallPlan {
    pub fn new(live: usize) -> Self {
        Self {
            rng: SplitMix64::new(SMALL_SEED),
            live: live as u64,
        }
    }

    /// The size of the next object, uniform in 16..=512 bytes.
    pub fn next_size(&mut self) -> usize {
        self.rng.between(SMALL_MIN_BYTES, SMALL_MAX_BYTES) as usize
    }

    /// One churn step: (slot to free and refill, size of its new object).
    pub fn next_step(&mut self) -> (usize, usize) {
        let slot = self.rng.below(self.live) as usize;
        (slot, self.next_size())
    }
}

/// What a child measured; `child.rs` adds the process's peak and wraps it in a report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measurement {
    pub ops_per_round: u64,
    pub ns_per_op: Vec<f64>,
    /// The `small` build phase and the `descriptors` block allocation, in ns per object.
    pub build_ns_per_op: Option<f64>,
    /// `VmRSS` before the measured allocator served its first request.
    pub baseline_rss_bytes: u64,
    /// `VmRSS` at the sample point, and the allocator's own estimate at the same moment.
    pub sample_rss_bytes: u64,
    pub allocator_resident_bytes: Option<u64>,
    /// The allocator's resident bytes as the kernel reports them (`mincore`), same moment.
    pub allocator_measured_bytes: Option<u64>,
    /// Bytes live at the sample point, as requested.
    pub live_requested_bytes: u64,
    /// Minor page faults during the timed rounds (all rounds together).
    pub timed_minor_faults: u64,
}

/// Runs a large loop or `small` on whichever allocator [`crate::alloc::with_allocator`] passes.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub workload: Workload,
    pub sizes: Sizes,
}

impl AllocFn<Measurement> for Run {
    fn call<A: BenchAlloc>(self, alloc: &mut A) -> Measurement {
        match self.workload {
            Workload::Small => run_small(alloc, &self.sizes),
            w => {
                let object_bytes = w
                    .loop_object_bytes()
                    .unwrap_or_else(|| panic!("{} is not an allocator workload", w.name()));
                run_loop(alloc, object_bytes, &self.sizes)
            }
        }
    }
}

fn elapsed_ns_per_op(start: Instant, ops: usize) -> f64 {
    start.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

/// Allocates `size` bytes and writes one byte into every 4 KiB page of them.
#[inline]
fn alloc_touched<A: BenchAlloc>(alloc: &mut A, size: usize) -> NonNull<u8> {
    let ptr = alloc.alloc(size);
    for offset in (0..size).step_by(PAGE_BYTES) {
        // SAFETY: `offset < size`, inside the allocation. Volatile, because a plain store into
        // memory that is freed without being read is dead and the compiler may drop it.
        unsafe { ptr.as_ptr().add(offset).write_volatile(1) };
    }
    ptr
}

/// Allocates `size >= 8` bytes and writes `value` into their first 8 bytes.
#[inline]
fn alloc_small<A: BenchAlloc>(alloc: &mut A, size: usize, value: u64) -> NonNull<u8> {
    let ptr = alloc.alloc(size);
    // SAFETY: `size >= 16`, so the first 8 bytes are inside the allocation; `[u8; 8]` has
    // alignment 1. Volatile for the same reason as in `alloc_touched`.
    unsafe {
        ptr.as_ptr()
            .cast::<[u8; 8]>()
            .write_volatile(value.to_le_bytes());
    }
    ptr
}

fn run_loop<A: BenchAlloc>(alloc: &mut A, object_bytes: usize, sizes: &Sizes) -> Measurement {
    let iterations = sizes.loop_iterations(object_bytes);
    let mut out = Measurement {
        ops_per_round: iterations as u64,
        ns_per_op: Vec::with_capacity(sizes.rounds),
        baseline_rss_bytes: machine::memory().rss_bytes,
        live_requested_bytes: (WINDOW_LEN * object_bytes) as u64,
        ..Measurement::default()
    };
    for round in 0..sizes.rounds {
        let mut plan = LoopPlan::new();
        let mut window = [NonNull::<u8>::dangling(); WINDOW_LEN];
        for slot in &mut window {
            *slot = alloc_touched(alloc, object_bytes);
        }
        let faults = machine::minor_faults();
        let start = Instant::now();
        for _ in 0..iterations {
            let fresh = alloc_touched(alloc, object_bytes);
            let victim = plan.next_victim();
            // SAFETY: every window slot holds a live `object_bytes` allocation of `alloc`,
            // replaced right after it is freed.
            unsafe { alloc.free(window[victim], object_bytes) };
            window[victim] = fresh;
        }
        out.ns_per_op.push(elapsed_ns_per_op(start, iterations));
        out.timed_minor_faults += machine::minor_faults() - faults;
        if round + 1 == sizes.rounds {
            out.sample_rss_bytes = machine::memory().rss_bytes;
            out.allocator_resident_bytes = alloc.resident_bytes();
            out.allocator_measured_bytes = alloc.measured_resident_bytes();
        }
        for ptr in window {
            // SAFETY: as above; the window is dropped after this loop.
            unsafe { alloc.free(ptr, object_bytes) };
        }
    }
    out
}

fn run_small<A: BenchAlloc>(alloc: &mut A, sizes: &Sizes) -> Measurement {
    // Reserved before the baseline so the slot table is part of it, not of the allocator's bytes.
    let mut slots: Vec<(NonNull<u8>, u32)> = Vec::with_capacity(sizes.small_live);
    slots.extend((0..sizes.small_live).map(|_| (NonNull::dangling(), 0)));
    let mut plan = SmallPlan::new(sizes.small_live);
    let mut out = Measurement {
        ops_per_round: sizes.small_steps_per_round as u64,
        ns_per_op: Vec::with_capacity(sizes.rounds),
        baseline_rss_bytes: machine::memory().rss_bytes,
        ..Measurement::default()
    };
    let start = Instant::now();
    for (index, slot) in slots.iter_mut().enumerate() {
        let size = plan.next_size();
        *slot = (alloc_small(alloc, size, index as u64), size as u32);
    }
    out.build_ns_per_op = Some(elapsed_ns_per_op(start, sizes.small_live));
    for _ in 0..sizes.rounds {
        let faults = machine::minor_faults();
        let start = Instant::now();
        for step in 0..sizes.small_steps_per_round {
            let (index, size) = plan.next_step();
            let (ptr, old_size) = slots[index];
            // SAFETY: every slot holds a live allocation of `alloc` of its recorded size,
            // replaced right after it is freed.
            unsafe { alloc.free(ptr, old_size as usize) };
            slots[index] = (alloc_small(alloc, size, step as u64), size as u32);
        }
        out.ns_per_op
            .push(elapsed_ns_per_op(start, sizes.small_steps_per_round));
        out.timed_minor_faults += machine::minor_faults() - faults;
    }
    out.sample_rss_bytes = machine::memory().rss_bytes;
    out.allocator_resident_bytes = alloc.resident_bytes();
    out.allocator_measured_bytes = alloc.measured_resident_bytes();
    out.live_requested_bytes = slots.iter().map(|&(_, size)| u64::from(size)).sum();
    for (ptr, size) in slots {
        // SAFETY: as above; `slots` is consumed.
        unsafe { alloc.free(ptr, size as usize) };
    }
    out
}

/// Times `census()` over [`Sizes::desc_heap_bytes`] of untouched blocks in a `Heap<DESC_BYTES>`.
/// With `census == false` only the heap is built (the baseline of a `perf stat` difference).
pub fn run_descriptors<const DESC_BYTES: usize>(sizes: &Sizes, census: bool) -> Measurement {
    let config = HeapConfig {
        reserve_bytes: sizes.desc_heap_bytes * 2,
        ..HeapConfig::default()
    };
    let mut heap = Heap::<DESC_BYTES>::with_config(config)
        .unwrap_or_else(|e| panic!("Heap::<{DESC_BYTES}>::with_config: {e}"));
    let blocks = sizes.desc_heap_bytes / BLOCK_BYTES;
    let mut out = Measurement {
        ops_per_round: (blocks * sizes.census_repeats) as u64,
        baseline_rss_bytes: machine::memory().rss_bytes,
        live_requested_bytes: (blocks * BLOCK_BYTES) as u64,
        ..Measurement::default()
    };
    let start = Instant::now();
    for index in 0..blocks {
        // The blocks are deliberately neither touched nor kept: only their descriptors matter.
        if let Err(e) = heap.alloc(BLOCK_BYTES) {
            panic!("Heap::<{DESC_BYTES}>: block {index} of {blocks}: {e}");
        }
    }
    out.build_ns_per_op = Some(elapsed_ns_per_op(start, blocks));
    if census {
        for _ in 0..sizes.rounds {
            let faults = machine::minor_faults();
            let start = Instant::now();
            for _ in 0..sizes.census_repeats {
                black_box(heap.census());
            }
            out.ns_per_op
                .push(elapsed_ns_per_op(start, blocks * sizes.census_repeats));
            out.timed_minor_faults += machine::minor_faults() - faults;
        }
    }
    out.sample_rss_bytes = machine::memory().rss_bytes;
    out.allocator_resident_bytes = Some(heap.stats().resident_bytes);
    out.allocator_measured_bytes = Some(heap.measure_resident_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::{LoopPlan, Run, Sizes, SmallPlan, WINDOW_LEN, Workload};
    use crate::alloc::{AllocatorId, with_allocator};

    #[test]
    fn loop_plan_is_deterministic_and_in_range() {
        let a: Vec<usize> = {
            let mut plan = LoopPlan::new();
            (0..1000).map(|_| plan.next_victim()).collect()
        };
        let mut plan = LoopPlan::new();
        let b: Vec<usize> = (0..1000).map(|_| plan.next_victim()).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|&v| v < WINDOW_LEN));
        for slot in 0..WINDOW_LEN {
            assert!(a.contains(&slot), "slot {slot} never chosen");
        }
    }

    #[test]
    fn small_plan_is_deterministic_and_in_range() {
        let trace = |live| {
            let mut plan = SmallPlan::new(live);
            let sizes: Vec<usize> = (0..live).map(|_| plan.next_size()).collect();
            let steps: Vec<(usize, usize)> = (0..5000).map(|_| plan.next_step()).collect();
            (sizes, steps)
        };
        let (sizes, steps) = trace(1000);
        assert_eq!((sizes.clone(), steps.clone()), trace(1000));
        assert!(sizes.iter().all(|s| (16..=512).contains(s)));
        assert!(
            steps
                .iter()
                .all(|&(slot, size)| slot < 1000 && (16..=512).contains(&size))
        );
        // The mean of uniform 16..=512 is 264; 1000 draws land well within ±20.
        let mean = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
        assert!((mean - 264.0).abs() < 20.0, "mean size {mean}");
    }

    #[test]
    fn loop_iterations_touch_the_same_pages() {
        let sizes = Sizes::FULL;
        let pages = |w: Workload| {
            let bytes = w.loop_object_bytes().unwrap();
            sizes.loop_iterations(bytes) * bytes / 4096
        };
        assert_eq!(pages(Workload::Json), sizes.loop_pages_per_round);
        assert_eq!(pages(Workload::Mir), sizes.loop_pages_per_round);
        assert_eq!(pages(Workload::Vm), sizes.loop_pages_per_round);
    }

    #[test]
    fn workloads_run_on_a_peer() {
        let sizes = Sizes {
            loop_pages_per_round: 64,
            small_live: 500,
            small_steps_per_round: 500,
            rounds: 2,
            ..Sizes::QUICK
        };
        for workload in Workload::COMPARED {
            let m = with_allocator(AllocatorId::System, Run { workload, sizes });
            assert_eq!(m.ns_per_op.len(), 2);
            assert!(m.ns_per_op.iter().all(|ns| *ns > 0.0));
            assert!(m.sample_rss_bytes > 0 && m.live_requested_bytes > 0);
        }
    }
}
