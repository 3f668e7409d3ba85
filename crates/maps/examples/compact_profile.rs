//! Memory given back by compaction after uniform removals, and what compaction costs.
//! Dimensions: structure (PageHash with 16-byte `key:%012d` keys and 16-byte values; IntMap
//! with random u64 pairs) x removed share (every other key, then down to a tenth, then all) x
//! measure (`memory_bytes()` against the full load, page fill, heap `allocated_bytes`, time of
//! the compaction to completion, its longest step, and a pass over a map with nothing to do).
//!
//! ```sh
//! cargo run --release -p maps --example compact_profile                 # PageHash, 1M
//! cargo run --release -p maps --example compact_profile -- int          # IntMap, 1M
//! N=200000 BUDGET=64 cargo run --release -p maps --example compact_profile
//! ```
//!
//! "To completion" is what an owner polling the map does: `compact_step(heap, BUDGET)` while
//! `sparse()` holds (default budget 256 units: a visit, merge or move each).

use heap::Heap;
use maps::{CompactProgress, IntMap, PageHash};
use std::time::{Duration, Instant};

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The two maps behind one interface.
enum Map {
    Bytes(PageHash),
    Int(IntMap, Vec<u64>),
}

impl Map {
    fn key(i: usize) -> [u8; 16] {
        let mut k = [0u8; 16];
        k.copy_from_slice(format!("key:{i:012}").as_bytes());
        k
    }

    fn insert(&mut self, heap: &mut Heap, i: usize) {
        match self {
            Map::Bytes(m) => {
                let v = format!("{i:016}");
                m.insert(heap, &Self::key(i), v.as_bytes()).unwrap();
            }
            Map::Int(m, keys) => {
                m.insert(heap, keys[i], keys[i] >> 7).unwrap();
            }
        }
    }

    fn remove(&mut self, heap: &mut Heap, i: usize) {
        let found = match self {
            Map::Bytes(m) => m.remove(heap, &Self::key(i)),
            Map::Int(m, keys) => m.remove(heap, keys[i]).is_some(),
        };
        assert!(found, "key {i} present");
    }

    fn memory_bytes(&self) -> usize {
        match self {
            Map::Bytes(m) => m.memory_bytes(),
            Map::Int(m, _) => m.memory_bytes(),
        }
    }

    fn shape(&self) -> maps::Shape {
        match self {
            Map::Bytes(m) => m.shape(),
            Map::Int(m, _) => m.shape(),
        }
    }

    fn sparse(&self) -> bool {
        match self {
            Map::Bytes(m) => m.sparse(),
            Map::Int(m, _) => m.sparse(),
        }
    }

    fn step(&mut self, heap: &mut Heap, budget: usize) -> CompactProgress {
        match self {
            Map::Bytes(m) => m.compact_step(heap, budget),
            Map::Int(m, _) => m.compact_step(heap, budget),
        }
    }

    fn len(&self) -> usize {
        match self {
            Map::Bytes(m) => m.len(),
            Map::Int(m, _) => m.len(),
        }
    }
}

/// What compacting to completion took.
struct Run {
    progress: CompactProgress,
    time: Duration,
    /// Every step's time, sorted: on a shared machine the longest is mostly other processes'
    /// time slices, so the 99th and 99.9th percentiles are reported beside it.
    step_times: Vec<Duration>,
    steps: usize,
    passes: usize,
}

/// Steps while the map is sparse.
fn compact(map: &mut Map, heap: &mut Heap, budget: usize) -> Run {
    let mut run = Run {
        progress: CompactProgress::default(),
        time: Duration::ZERO,
        step_times: Vec::new(),
        steps: 0,
        passes: 0,
    };
    let start = Instant::now();
    while map.sparse() {
        let t = Instant::now();
        let p = map.step(heap, budget);
        run.step_times.push(t.elapsed());
        run.steps += 1;
        run.passes += usize::from(p.pass_done);
        run.progress.add(p);
    }
    run.time = start.elapsed();
    run.step_times.sort_unstable();
    run
}

/// One whole pass (whatever `sparse` says): its time.
fn one_pass(map: &mut Map, heap: &mut Heap, budget: usize) -> (CompactProgress, Duration) {
    let mut total = CompactProgress::default();
    let start = Instant::now();
    while !total.pass_done {
        total.add(map.step(heap, budget));
    }
    (total, start.elapsed())
}

fn report(label: &str, map: &Map, heap: &Heap, full: (usize, u64)) {
    let shape = map.shape();
    let bytes = map.memory_bytes();
    println!(
        "{label:<34} len {:>8}  memory {:>11} B  ratio {:.3}  heap ratio {:.3}  fill {:.3}  \
         pages {:>5}  depth {:>2}  buckets {:>6}  B/entry {:.1}",
        map.len(),
        bytes,
        bytes as f64 / full.0 as f64,
        heap.stats().allocated_bytes as f64 / full.1 as f64,
        shape.fill_ratio,
        shape.page_count,
        shape.global_depth,
        shape.bucket_count,
        bytes as f64 / map.len().max(1) as f64,
    );
}

fn census(map: &Map) {
    let Map::Bytes(m) = map else { return };
    let c = m.page_census();
    let mut fill = [0usize; 11];
    let mut tenants = [0usize; 9];
    let mut bins = Vec::new();
    for &(used, t, bin) in &c {
        fill[used * 10 / maps::AREA_BYTES] += 1;
        tenants[t] += 1;
        if bin {
            bins.push(used * 100 / maps::AREA_BYTES);
        }
    }
    println!("  fill deciles {fill:?} tenants {tenants:?} bins {bins:?}");
}

fn report_compaction(run: &Run) {
    let p = run.progress;
    let us = |q: f64| {
        let i = ((run.step_times.len() as f64 * q) as usize).min(run.step_times.len().max(1) - 1);
        run.step_times.get(i).map_or(0.0, |t| t.as_secs_f64() * 1e6)
    };
    println!(
        "  compaction: {:.1} ms, {} passes, {} steps (us per step: median {:.0}, p99 {:.0}, \
         p99.9 {:.0}, max {:.0}); visited {} merged {} moved {} freed {} pages",
        run.time.as_secs_f64() * 1e3,
        run.passes,
        run.steps,
        us(0.5),
        us(0.99),
        us(0.999),
        us(1.0),
        p.visited,
        p.merged,
        p.moved,
        p.freed
    );
}

/// Removes the keys `indices`, reports, compacts to completion and reports again.
fn thin_then_compact(
    map: &mut Map,
    heap: &mut Heap,
    full: (usize, u64),
    budget: usize,
    label: &str,
    indices: impl Iterator<Item = usize>,
) {
    for i in indices {
        map.remove(heap, i);
    }
    report(label, map, heap, full);
    let run = compact(map, heap, budget);
    report("  then compacted", map, heap, full);
    census(map);
    report_compaction(&run);
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let n = env_or("N", 1_000_000);
    let budget = env_or("BUDGET", 256);
    let int = std::env::args().any(|a| a == "int");
    let mut heap = Heap::new().unwrap();
    let mut map = if int {
        let mut s = 1;
        let keys = (0..n).map(|_| splitmix(&mut s)).collect();
        Map::Int(IntMap::new(&mut heap).unwrap(), keys)
    } else {
        Map::Bytes(PageHash::new(&mut heap).unwrap())
    };
    let kind = if int {
        "IntMap random u64 -> u64"
    } else {
        "PageHash 16-byte keys, 16-byte values"
    };
    println!("{kind}, N = {n}, budget {budget} units per step");
    for i in 0..n {
        map.insert(&mut heap, i);
    }
    let full = (map.memory_bytes(), heap.stats().allocated_bytes);
    report("full", &map, &heap, full);
    let (p, t) = one_pass(&mut map, &mut heap, budget);
    println!(
        "  a pass with nothing to do: {:.1} ms, visited {} buckets (merged {}, moved {}, \
         freed {})",
        t.as_secs_f64() * 1e3,
        p.visited,
        p.merged,
        p.moved,
        p.freed
    );
    let (m, h) = (&mut map, &mut heap);
    thin_then_compact(
        m,
        h,
        full,
        budget,
        "every other key removed",
        (1..n).step_by(2),
    );
    let tenth = (0..n).step_by(2).filter(|i| i % 10 != 0);
    thin_then_compact(m, h, full, budget, "90% removed", tenth);
    thin_then_compact(m, h, full, budget, "all removed", (0..n).step_by(10));
}
