//! Benchmarks of the `maps` crate against hashbrown and std, issue 3's list. Dimensions:
//! structure (IntMap / PageHash / SmallMap vs hashbrown, std, linear scan) x key distribution
//! (random u64, sequential u64, 16+16-byte strings, 1..8 small fields) x operation (insert,
//! lookup hit, lookup miss) x `probe_count_max` (1..128), reporting bytes per entry next to
//! ns/op and the ratio to hashbrown. Every time is the median of `ROUNDS` rounds (default 3).
//!
//! ```text
//! cargo run --release -p maps --example maps_bench            # full: 1M entries
//! cargo run --release -p maps --example maps_bench -- --quick # 100k entries, 1 round
//! cargo run --release -p maps --example maps_bench -- --only small   # one suite
//! ```
//!
//! Writes the table to stdout and JSON to `bench-results/maps.json` (workspace root).
//! Bytes: our maps report `memory_bytes()` (pages + directory + page list + blobs) and the heap's
//! `allocated_bytes` delta; peers are measured with a counting global allocator, both as
//! requested bytes and as glibc malloc chunk bytes (max(32, round16(size + 8))), which is what
//! they really cost in a process using the system allocator.

use heap::Heap;
use maps::{Config, IntMap, PageHash, SmallInsert, SmallMap};
use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

struct Counting;

static REQUESTED: AtomicI64 = AtomicI64::new(0);
static CHUNKS: AtomicI64 = AtomicI64::new(0);

fn chunk(size: usize) -> i64 {
    ((size + 8 + 15) & !15).max(32) as i64
}

// SAFETY: forwards to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        REQUESTED.fetch_add(layout.size() as i64, Ordering::Relaxed);
        CHUNKS.fetch_add(chunk(layout.size()), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        REQUESTED.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        CHUNKS.fetch_sub(chunk(layout.size()), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn counted() -> (i64, i64) {
    (
        REQUESTED.load(Ordering::Relaxed),
        CHUNKS.load(Ordering::Relaxed),
    )
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn shuffled<T: Clone>(v: &[T], seed: u64) -> Vec<T> {
    let mut out = v.to_vec();
    let mut s = seed;
    for i in (1..out.len()).rev() {
        let j = (splitmix(&mut s) % (i as u64 + 1)) as usize;
        out.swap(i, j);
    }
    out
}

/// Median of `v`; 0 (shown as not measured) when empty.
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One measured configuration: medians over rounds.
#[derive(Clone, Debug, Default)]
struct Row {
    group: String,
    name: String,
    entries: usize,
    bytes: f64,
    bytes_alt: f64,
    insert_ns: f64,
    hit_ns: f64,
    miss_ns: f64,
    extra: String,
}

struct Samples {
    bytes: Vec<f64>,
    bytes_alt: Vec<f64>,
    insert: Vec<f64>,
    hit: Vec<f64>,
    miss: Vec<f64>,
}

impl Samples {
    fn new() -> Self {
        Self {
            bytes: vec![],
            bytes_alt: vec![],
            insert: vec![],
            hit: vec![],
            miss: vec![],
        }
    }
    fn row(self, group: &str, name: String, entries: usize, extra: String) -> Row {
        Row {
            group: group.into(),
            name,
            entries,
            bytes: median(self.bytes),
            bytes_alt: median(self.bytes_alt),
            insert_ns: median(self.insert),
            hit_ns: median(self.hit),
            miss_ns: median(self.miss),
            extra,
        }
    }
}

fn ns_per(start: Instant, n: usize) -> f64 {
    start.elapsed().as_nanos() as f64 / n as f64
}

/// The `IntMap` row for `probe`, and the same map read through `get_many` (batched lookups).
fn bench_intmap(
    keys: &[u64],
    values: &[u64],
    misses: &[u64],
    probe: u8,
    rounds: usize,
) -> (Row, Row) {
    let mut s = Samples::new();
    let mut sb = Samples::new();
    let mut fill = vec![];
    let order = shuffled(keys, 7);
    for _ in 0..rounds {
        let mut heap = Heap::new().unwrap();
        let before = heap.stats().allocated_bytes;
        let cfg = Config {
            probe_count_max: probe,
            ..Config::default()
        };
        let mut map = IntMap::with_config(&mut heap, &cfg).unwrap();
        let t = Instant::now();
        for (&k, &v) in keys.iter().zip(values) {
            map.insert(&mut heap, k, v).unwrap();
        }
        s.insert.push(ns_per(t, keys.len()));
        s.bytes.push(map.memory_bytes() as f64 / keys.len() as f64);
        s.bytes_alt
            .push((heap.stats().allocated_bytes - before) as f64 / keys.len() as f64);
        fill.push(map.shape().fill_ratio);
        let t = Instant::now();
        let mut sum = 0u64;
        for &k in &order {
            sum = sum.wrapping_add(map.get(k).unwrap());
        }
        s.hit.push(ns_per(t, order.len()));
        let t = Instant::now();
        for &k in misses {
            sum = sum.wrapping_add(u64::from(map.get(k).is_some()));
        }
        s.miss.push(ns_per(t, misses.len()));
        let t = Instant::now();
        map.get_many(&order, |_, v| sum = sum.wrapping_add(v.unwrap()));
        sb.hit.push(ns_per(t, order.len()));
        let t = Instant::now();
        map.get_many(misses, |_, v| {
            sum = sum.wrapping_add(u64::from(v.is_some()));
        });
        sb.miss.push(ns_per(t, misses.len()));
        sb.bytes.push(*s.bytes.last().unwrap());
        sb.bytes_alt.push(*s.bytes_alt.last().unwrap());
        black_box(sum);
        map.destroy(&mut heap);
    }
    let fill = format!("fill={:.3}", median(fill));
    (
        s.row(
            "",
            format!("IntMap probe={probe}"),
            keys.len(),
            fill.clone(),
        ),
        sb.row(
            "",
            format!("IntMap probe={probe} get_many"),
            keys.len(),
            fill + " batched lookups",
        ),
    )
}

macro_rules! bench_peer_u64 {
    ($name:expr, $ty:ty, $keys:expr, $values:expr, $misses:expr, $rounds:expr) => {{
        let (keys, values, misses): (&[u64], &[u64], &[u64]) = ($keys, $values, $misses);
        let mut s = Samples::new();
        let order = shuffled(keys, 7);
        for _ in 0..$rounds {
            let before = counted();
            let mut map: $ty = Default::default();
            let t = Instant::now();
            for (&k, &v) in keys.iter().zip(values) {
                map.insert(k, v);
            }
            s.insert.push(ns_per(t, keys.len()));
            let after = counted();
            s.bytes
                .push((after.0 - before.0) as f64 / keys.len() as f64);
            s.bytes_alt
                .push((after.1 - before.1) as f64 / keys.len() as f64);
            let t = Instant::now();
            let mut sum = 0u64;
            for k in &order {
                sum = sum.wrapping_add(*map.get(k).unwrap());
            }
            s.hit.push(ns_per(t, order.len()));
            let t = Instant::now();
            for k in misses {
                sum = sum.wrapping_add(u64::from(map.get(k).is_some()));
            }
            s.miss.push(ns_per(t, misses.len()));
            black_box(sum);
        }
        s.row("", $name.to_string(), keys.len(), String::new())
    }};
}

fn u64_suite(n: usize, rounds: usize, rows: &mut Vec<Row>) {
    let mut seed = 42u64;
    let random: Vec<u64> = (0..n).map(|_| splitmix(&mut seed)).collect();
    let random_values: Vec<u64> = (0..n).map(|_| splitmix(&mut seed)).collect();
    let misses: Vec<u64> = (0..n).map(|_| splitmix(&mut seed)).collect();
    let sequential: Vec<u64> = (0..n as u64).collect();
    let seq_misses: Vec<u64> = (n as u64..2 * n as u64).collect();
    for (group, keys, values, misses) in [
        ("u64 random", &random, &random_values, &misses),
        ("u64 sequential", &sequential, &sequential, &seq_misses),
    ] {
        let first = rows.len();
        let mut batched = None;
        for probe in [1u8, 2, 4, 8, 16, 32, 64, 128] {
            let (row, batch) = bench_intmap(keys, values, misses, probe, rounds);
            eprintln!("{group}: {row:?}");
            rows.push(row);
            if probe == 16 {
                batched = Some(batch);
            }
        }
        rows.extend(batched);
        rows.push(bench_peer_u64!("hashbrown HashMap<u64,u64>", hashbrown::HashMap<u64, u64>, keys, values, misses, rounds));
        rows.push(bench_peer_u64!("std HashMap<u64,u64>", std::collections::HashMap<u64, u64>, keys, values, misses, rounds));
        for row in &mut rows[first..] {
            row.group = group.into();
        }
    }
}

/// bytes/pair for random u64 pairs at several sizes (probe 16): the sawtooth check.
fn growth_suite(n: usize, rows: &mut Vec<Row>) {
    let mut seed = 9u64;
    let mut heap = Heap::new().unwrap();
    let mut map = IntMap::new(&mut heap).unwrap();
    let mut hb: hashbrown::HashMap<u64, u64> = hashbrown::HashMap::new();
    let before = counted();
    let marks: Vec<usize> = [1, 2, 3, 4, 5, 6, 7, 8].iter().map(|m| n * m / 4).collect();
    let mut done = 0;
    for &mark in &marks {
        while done < mark {
            let (k, v) = (splitmix(&mut seed), splitmix(&mut seed));
            map.insert(&mut heap, k, v).unwrap();
            hb.insert(k, v);
            done += 1;
        }
        let hb_bytes = (counted().0 - before.0) as f64 / mark as f64;
        rows.push(Row {
            group: "u64 random growth (probe 16)".into(),
            name: "IntMap".into(),
            entries: mark,
            bytes: map.memory_bytes() as f64 / mark as f64,
            bytes_alt: hb_bytes,
            extra: format!(
                "fill={:.3} depth={} hashbrown={hb_bytes:.1}",
                map.shape().fill_ratio,
                map.shape().global_depth
            ),
            ..Row::default()
        });
    }
    map.destroy(&mut heap);
    // Sequential pairs `i -> i` at the same sizes: their key field is one or two bytes by the
    // buckets' depth, so bytes/pair steps down as the map deepens.
    let mut heap = Heap::new().unwrap();
    let mut map = IntMap::new(&mut heap).unwrap();
    let mut done = 0u64;
    for &mark in &marks {
        while done < mark as u64 {
            map.insert(&mut heap, done, done).unwrap();
            done += 1;
        }
        rows.push(Row {
            group: "u64 sequential growth (i -> i)".into(),
            name: "IntMap".into(),
            entries: mark,
            bytes: map.memory_bytes() as f64 / mark as f64,
            extra: format!(
                "fill={:.3} depth={}",
                map.shape().fill_ratio,
                map.shape().global_depth
            ),
            ..Row::default()
        });
    }
    map.destroy(&mut heap);
}

fn string_keys(n: usize, seed: u64) -> Vec<[u8; 16]> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&splitmix(&mut s).to_le_bytes());
            k[8..].copy_from_slice(&splitmix(&mut s).to_le_bytes());
            k
        })
        .collect()
}

/// The `PageHash` row for 16+16-byte strings, and the same map read through `get_many` (batched
/// lookups); `order` is `keys` shuffled.
fn bench_pagehash(
    keys: &[[u8; 16]],
    values: &[[u8; 16]],
    misses: &[[u8; 16]],
    order: &[[u8; 16]],
    rounds: usize,
) -> (Row, Row) {
    let n = keys.len();
    let mut s = Samples::new();
    let mut sb = Samples::new();
    let mut extra = String::new();
    for _ in 0..rounds {
        let mut heap = Heap::new().unwrap();
        let before = heap.stats().allocated_bytes;
        let mut map = PageHash::new(&mut heap).unwrap();
        let t = Instant::now();
        for (k, v) in keys.iter().zip(values) {
            map.insert(&mut heap, k, v).unwrap();
        }
        s.insert.push(ns_per(t, n));
        s.bytes.push(map.memory_bytes() as f64 / n as f64);
        s.bytes_alt
            .push((heap.stats().allocated_bytes - before) as f64 / n as f64);
        extra = format!("fill={:.3}", map.shape().fill_ratio);
        let t = Instant::now();
        let mut sum = 0usize;
        for k in order {
            sum += map.get(&heap, k).unwrap().bytes.len();
        }
        s.hit.push(ns_per(t, n));
        let t = Instant::now();
        for k in misses {
            sum += usize::from(map.get(&heap, k).is_some());
        }
        s.miss.push(ns_per(t, n));
        let t = Instant::now();
        map.get_many(&heap, order, |_, v| sum += v.unwrap().bytes.len());
        sb.hit.push(ns_per(t, n));
        let t = Instant::now();
        map.get_many(&heap, misses, |_, v| sum += usize::from(v.is_some()));
        sb.miss.push(ns_per(t, n));
        sb.bytes.push(*s.bytes.last().unwrap());
        sb.bytes_alt.push(*s.bytes_alt.last().unwrap());
        black_box(sum);
        map.destroy(&mut heap);
    }
    (
        s.row("16+16 strings", "PageHash".into(), n, extra.clone()),
        sb.row(
            "16+16 strings",
            "PageHash get_many".into(),
            n,
            extra + " batched lookups",
        ),
    )
}

fn strings_suite(n: usize, rounds: usize, rows: &mut Vec<Row>) {
    let keys = string_keys(n, 1);
    let values = string_keys(n, 2);
    let misses = string_keys(n, 3);
    let order = shuffled(&keys, 5);
    let (row, batched) = bench_pagehash(&keys, &values, &misses, &order, rounds);
    rows.push(row);
    rows.push(batched);
    macro_rules! peer {
        ($name:expr, $ty:ty, $conv:expr) => {{
            let mut s = Samples::new();
            for _ in 0..rounds {
                let before = counted();
                let mut map: $ty = Default::default();
                let t = Instant::now();
                for (k, v) in keys.iter().zip(&values) {
                    map.insert($conv(k), $conv(v));
                }
                s.insert.push(ns_per(t, n));
                let after = counted();
                s.bytes.push((after.0 - before.0) as f64 / n as f64);
                s.bytes_alt.push((after.1 - before.1) as f64 / n as f64);
                let t = Instant::now();
                let mut sum = 0usize;
                for k in &order {
                    sum += map.get(&k[..]).unwrap().len();
                }
                s.hit.push(ns_per(t, n));
                let t = Instant::now();
                for k in &misses {
                    sum += usize::from(map.get(&k[..]).is_some());
                }
                s.miss.push(ns_per(t, n));
                black_box(sum);
            }
            rows.push(s.row("16+16 strings", $name.into(), n, String::new()));
        }};
    }
    peer!(
        "hashbrown HashMap<Vec<u8>,Vec<u8>>",
        hashbrown::HashMap<Vec<u8>, Vec<u8>>,
        |b: &[u8; 16]| b.to_vec()
    );
    peer!(
        "hashbrown HashMap<Box<[u8]>,Box<[u8]>>",
        hashbrown::HashMap<Box<[u8]>, Box<[u8]>>,
        |b: &[u8; 16]| Box::<[u8]>::from(&b[..])
    );
}

/// Hit and miss lookup times of one small hash in a SmallMap, a hashbrown map and a linear
/// `Vec`, round by round (all three in each round).
fn time_small_lookups(
    small: &SmallMap,
    hb: &hashbrown::HashMap<Vec<u8>, Vec<u8>>,
    linear: &[(Vec<u8>, Vec<u8>)],
    keys: &[Vec<u8>],
    misses: &[Vec<u8>],
    lookups: usize,
    rounds: usize,
) -> [Samples; 3] {
    let size = keys.len();
    let (mut sm, mut hbs, mut lin) = (Samples::new(), Samples::new(), Samples::new());
    for _ in 0..rounds {
        let mut sum = 0usize;
        let t = Instant::now();
        for i in 0..lookups {
            sum += small.get(black_box(&keys[i % size])).unwrap().bytes.len();
        }
        sm.hit.push(ns_per(t, lookups));
        let t = Instant::now();
        for i in 0..lookups {
            sum += usize::from(small.get(black_box(&misses[i % 4096])).is_some());
        }
        sm.miss.push(ns_per(t, lookups));
        let t = Instant::now();
        for i in 0..lookups {
            sum += hb.get(black_box(&keys[i % size][..])).unwrap().len();
        }
        hbs.hit.push(ns_per(t, lookups));
        let t = Instant::now();
        for i in 0..lookups {
            sum += usize::from(hb.get(black_box(&misses[i % 4096][..])).is_some());
        }
        hbs.miss.push(ns_per(t, lookups));
        let find = |k: &[u8]| {
            linear
                .iter()
                .find(|(lk, _)| lk.as_slice() == k)
                .map(|(_, v)| v)
        };
        let t = Instant::now();
        for i in 0..lookups {
            sum += find(black_box(&keys[i % size])).unwrap().len();
        }
        lin.hit.push(ns_per(t, lookups));
        let t = Instant::now();
        for i in 0..lookups {
            sum += usize::from(find(black_box(&misses[i % 4096])).is_some());
        }
        lin.miss.push(ns_per(t, lookups));
        black_box(sum);
    }
    [sm, hbs, lin]
}

fn small_suite(lookups: usize, rounds: usize, rows: &mut Vec<Row>) {
    for size in 1..=8usize {
        let keys: Vec<Vec<u8>> = (0..size)
            .map(|i| format!("field:{i:04}").into_bytes())
            .collect();
        let values: Vec<Vec<u8>> = (0..size)
            .map(|i| format!("value:{i:04}").into_bytes())
            .collect();
        let misses: Vec<Vec<u8>> = (0..4096)
            .map(|i| format!("other:{i:04}").into_bytes())
            .collect();
        let mut heap = Heap::new().unwrap();
        let mut small = SmallMap::new(&mut heap).unwrap();
        for (k, v) in keys.iter().zip(&values) {
            assert_eq!(
                small.insert(&mut heap, k, v).unwrap(),
                SmallInsert::Inserted
            );
        }
        let before = counted();
        let mut hb: hashbrown::HashMap<Vec<u8>, Vec<u8>> = hashbrown::HashMap::new();
        for (k, v) in keys.iter().zip(&values) {
            hb.insert(k.clone(), v.clone());
        }
        let hb_bytes = counted().1 - before.1;
        let before = counted();
        let linear: Vec<(Vec<u8>, Vec<u8>)> =
            keys.iter().cloned().zip(values.iter().cloned()).collect();
        let linear_bytes = counted().1 - before.1;
        maps::reset_hint_stats();
        let [mut sm, mut hbs, mut lin] =
            time_small_lookups(&small, &hb, &linear, &keys, &misses, lookups, rounds);
        let stats = maps::hint_stats();
        // A miss lookup compares its hint against all `size` stored hints; the ideal rate of
        // false matches per compared hint is 1/256 (hit lookups add a few to hint_miss too).
        let compared = stats.not_found as f64 * size as f64;
        let extra = format!(
            "hint_hit={} hint_miss={} not_found={} miss_rate_per_hint={:.5} (ideal {:.5})",
            stats.hint_hit,
            stats.hint_miss,
            stats.not_found,
            stats.hint_miss as f64 / compared,
            1.0 / 256.0
        );
        for s in [&mut sm, &mut hbs, &mut lin] {
            s.bytes = vec![0.0];
            s.bytes_alt = vec![0.0];
            s.insert = vec![0.0];
        }
        sm.bytes = vec![small.memory_bytes() as f64];
        hbs.bytes = vec![hb_bytes as f64];
        lin.bytes = vec![linear_bytes as f64];
        rows.push(sm.row("SmallMap", "SmallMap".into(), size, extra));
        rows.push(hbs.row(
            "SmallMap",
            "hashbrown HashMap<Vec<u8>,Vec<u8>>".into(),
            size,
            String::new(),
        ));
        rows.push(lin.row(
            "SmallMap",
            "linear Vec<(Vec<u8>,Vec<u8>)>".into(),
            size,
            String::new(),
        ));
        small.destroy(&mut heap);
    }
}

fn print(rows: &[Row]) {
    let mut group = "";
    for row in rows {
        // The peer of a row: hashbrown in the same group at the same size (SmallMap sizes 1..8).
        let base = rows.iter().find(|r| {
            r.group == row.group && r.name.starts_with("hashbrown") && r.entries == row.entries
        });
        if row.group != group {
            group = &row.group;
            println!("\n## {group}");
            println!(
                "{:<40} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  vs hashbrown (ins/hit/miss) ; notes",
                "structure", "entries", "B/entry", "B(alt)", "ins ns", "hit ns", "miss ns"
            );
        }
        let ratio = base
            .filter(|b| b.insert_ns > 0.0 || b.hit_ns > 0.0)
            .map(|b| {
                let r = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
                format!(
                    "{:.2}x/{:.2}x/{:.2}x",
                    r(row.insert_ns, b.insert_ns),
                    r(row.hit_ns, b.hit_ns),
                    r(row.miss_ns, b.miss_ns)
                )
            })
            .unwrap_or_default();
        println!(
            "{:<40} {:>9} {:>9.2} {:>9.2} {:>9.1} {:>9.1} {:>9.1}  {} {}",
            row.name,
            row.entries,
            row.bytes,
            row.bytes_alt,
            row.insert_ns,
            row.hit_ns,
            row.miss_ns,
            ratio,
            row.extra
        );
    }
}

fn json(rows: &[Row]) -> String {
    let mut out = String::from("[\n");
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {{\"group\": \"{}\", \"structure\": \"{}\", \"entries\": {}, \"bytes_per_entry\": {:.3}, \
             \"bytes_per_entry_alt\": {:.3}, \"insert_ns\": {:.2}, \"hit_ns\": {:.2}, \"miss_ns\": {:.2}, \"notes\": \"{}\"}}{}",
            r.group,
            r.name,
            r.entries,
            r.bytes,
            r.bytes_alt,
            r.insert_ns,
            r.hit_ns,
            r.miss_ns,
            r.extra,
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    out.push(']');
    out
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 100_000 } else { 1_000_000 };
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(if quick { 1 } else { 3 });
    // `--only SUITE` (u64, growth, strings, small) runs one suite.
    let only: Option<String> = std::env::args().skip_while(|a| a != "--only").nth(1);
    let run = |suite: &str| only.as_deref().is_none_or(|o| o == suite);
    let mut rows = Vec::new();
    if run("u64") {
        u64_suite(n, rounds, &mut rows);
    }
    if run("growth") {
        growth_suite(n, &mut rows);
    }
    if run("strings") {
        strings_suite(n, rounds, &mut rows);
    }
    if run("small") {
        small_suite(
            if quick { 1_000_000 } else { 5_000_000 },
            rounds.max(3),
            &mut rows,
        );
    }
    println!("# maps benchmarks: {n} entries, median of {rounds} rounds");
    println!("# B/entry: IntMap/PageHash memory_bytes() (B(alt): heap allocated_bytes delta);");
    println!(
        "#          peers: requested bytes (B(alt): glibc chunk bytes); SmallMap rows: total bytes"
    );
    print(&rows);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench-results");
    std::fs::create_dir_all(&dir).expect("create bench-results");
    let path = dir.join("maps.json");
    std::fs::write(&path, json(&rows)).expect("write maps.json");
    println!("\nwrote {}", path.display());
}
