//! Shapes suite (`bench shapes`): what a shaped hash costs against the encodings it replaces.
//!
//! Dimensions:
//! * **lookup** — structure {shaped record, SmallMap (≤ 8 fields) or PageHash (more), hashbrown
//!   `HashMap<Vec<u8>, Vec<u8>>`} × fields per hash {1..16} × operation {HGET of a present field};
//!   10,000 hashes of one shape, fields looked up round-robin, median ns/op over rounds.
//! * **memory** — N records (default 1,000,000) of the issue's `user:N` hash (`name` `user<r>`,
//!   `email` `u<i>@example.com`, `age` 18–89, `city` one of 8, `created` 1.7·10⁹ + r): bytes per
//!   record of value storage for the shaped record (heap bytes of the records plus the shape tree),
//!   the same hash as a SmallMap in the heap, and as a Redis listpack (its exact encoded size,
//!   computed with listpack.c's entry encodings: the allocation Redis makes before jemalloc rounds).
//!
//! Same fixed-seed data for every structure; ratios are against the SmallMap (the unshaped
//! encoding densekv would otherwise use).

use crate::rng::SplitMix64;
use crate::stats::median;
use heap::Heap;
use maps::{PageHash, SmallMap};
use shape::ShapeTree;
use shape::record;
use std::hint::black_box;
use std::time::Instant;

const FIELD_NAMES: [&str; 16] = [
    "name", "email", "age", "city", "created", "zip", "phone", "country", "state", "street",
    "company", "title", "score", "level", "status", "updated",
];
const CITIES: [&str; 8] = [
    "Oslo", "Lisbon", "Nairobi", "Osaka", "Lima", "Toronto", "Hanoi", "Cairo",
];

/// Options from the command line.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub records: usize,
    pub rounds: usize,
    pub lookups: usize,
}

/// One lookup measurement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LookupRow {
    pub fields: usize,
    pub shaped_ns: f64,
    pub smallmap_ns: f64,
    pub smallmap_kind: &'static str,
    pub hashbrown_ns: f64,
    /// Share of shaped lookups answered by the (shape, field) cache.
    pub shape_cache_hit_rate: f64,
}

/// The memory measurement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemoryRow {
    pub records: usize,
    pub shaped_bytes_per_record: f64,
    pub shape_tree_bytes: usize,
    pub smallmap_bytes_per_record: f64,
    pub listpack_bytes_per_record: f64,
}

fn user_record(rng: &mut SplitMix64, i: usize) -> [(Vec<u8>, Vec<u8>); 5] {
    let r = rng.next_u64();
    [
        (
            b"name".to_vec(),
            format!("user{}", r % 1_000_000).into_bytes(),
        ),
        (b"email".to_vec(), format!("u{i}@example.com").into_bytes()),
        (
            b"age".to_vec(),
            (18 + rng.below(72)).to_string().into_bytes(),
        ),
        (
            b"city".to_vec(),
            CITIES[rng.below(8) as usize].as_bytes().to_vec(),
        ),
        (
            b"created".to_vec(),
            (1_700_000_000 + rng.below(10_000_000))
                .to_string()
                .into_bytes(),
        ),
    ]
}

/// Bytes of one listpack entry holding `value`, as listpack.c encodes it (integer forms for
/// canonical integers, string forms otherwise, plus the back-length).
pub fn listpack_entry_bytes(value: &[u8]) -> usize {
    let encoded = match shape::canonical_i64(value) {
        Some(v) if (0..=127).contains(&v) => 1,
        Some(v) if (-4096..4096).contains(&v) => 2,
        Some(v) if i16::try_from(v).is_ok() => 3,
        Some(v) if (-(1 << 23)..(1 << 23)).contains(&v) => 4,
        Some(v) if i32::try_from(v).is_ok() => 5,
        Some(_) => 9,
        None if value.len() < 64 => 1 + value.len(),
        None if value.len() < 4096 => 2 + value.len(),
        None => 5 + value.len(),
    };
    let backlen = match encoded {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        2_097_152..=268_435_455 => 4,
        _ => 5,
    };
    encoded + backlen
}

/// A listpack of `pairs` (header 6 bytes, entries, end byte).
pub fn listpack_bytes(pairs: &[(Vec<u8>, Vec<u8>)]) -> usize {
    6 + pairs
        .iter()
        .map(|(f, v)| listpack_entry_bytes(f) + listpack_entry_bytes(v))
        .sum::<usize>()
        + 1
}

fn time_rounds(rounds: usize, ops: usize, mut body: impl FnMut() -> u64) -> f64 {
    let mut per_op = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        black_box(body());
        per_op.push(start.elapsed().as_nanos() as f64 / ops as f64);
    }
    median(&per_op).unwrap_or(f64::NAN)
}

/// Hashes per lookup measurement, all of one shape (a tenth of that for PageHash).
const HASHES: usize = 10_000;

/// The value of field `f` of hash `h` in the lookup measurements.
fn field_value(h: usize, f: usize) -> Vec<u8> {
    format!("v{h}-{f}").into_bytes()
}

/// One lookup measurement: hashes of `fields` fields in each structure.
fn lookup_row(fields: usize, options: Options, heap: &mut Heap) -> LookupRow {
    let names: Vec<&[u8]> = FIELD_NAMES[..fields].iter().map(|n| n.as_bytes()).collect();
    let (shaped_ns, shape_cache_hit_rate) = shaped_lookup(&names, options);
    let (smallmap_ns, smallmap_kind) = if fields <= 8 {
        (smallmap_lookup(&names, options, heap), "smallmap")
    } else {
        (pagehash_lookup(&names, options, heap), "pagehash")
    };
    let hashbrown_ns = hashbrown_lookup(&names, options);
    LookupRow {
        fields,
        shaped_ns,
        smallmap_ns,
        smallmap_kind,
        hashbrown_ns,
        shape_cache_hit_rate,
    }
}

/// Median ns per lookup of the `names` fields in shaped records, and the share of lookups the
/// shape cache answered.
fn shaped_lookup(names: &[&[u8]], options: Options) -> (f64, f64) {
    let fields = names.len();
    let mut tree = ShapeTree::default();
    let records: Vec<Vec<u8>> = (0..HASHES)
        .map(|h| {
            let mut rec = record::empty();
            for (f, name) in names.iter().enumerate() {
                record::set(&mut tree, &mut rec, name, &field_value(h, f)).expect("one shape");
            }
            rec
        })
        .collect();
    let ops = options.lookups;
    let shaped_ns = time_rounds(options.rounds, ops, || {
        let mut sum = 0u64;
        for i in 0..ops {
            let rec = &records[i % HASHES];
            let v = record::get(&mut tree, rec, names[(i * 7) % fields]);
            sum += v.map_or(0, |v| v.len() as u64);
        }
        sum
    });
    let cache = tree.stats();
    let shape_cache_hit_rate =
        cache.cache_hits as f64 / (cache.cache_hits + cache.cache_misses).max(1) as f64;
    (shaped_ns, shape_cache_hit_rate)
}

/// Median ns per lookup of the `names` fields in SmallMaps (the encoding for up to 8 fields).
fn smallmap_lookup(names: &[&[u8]], options: Options, heap: &mut Heap) -> f64 {
    let (fields, ops) = (names.len(), options.lookups);
    let maps: Vec<SmallMap> = (0..HASHES)
        .map(|h| {
            let mut m = SmallMap::new(heap).expect("heap");
            for (f, name) in names.iter().enumerate() {
                m.insert(heap, name, &field_value(h, f)).expect("heap");
            }
            m
        })
        .collect();
    let ns = time_rounds(options.rounds, ops, || {
        let mut sum = 0u64;
        for i in 0..ops {
            sum += maps[i % HASHES]
                .get(names[(i * 7) % fields])
                .map_or(0, |v| v.bytes.len() as u64);
        }
        sum
    });
    for m in maps {
        m.destroy(heap);
    }
    ns
}

/// Median ns per lookup of the `names` fields in PageHashes (the encoding beyond 8 fields).
fn pagehash_lookup(names: &[&[u8]], options: Options, heap: &mut Heap) -> f64 {
    let (fields, ops) = (names.len(), options.lookups);
    let maps: Vec<PageHash> = (0..HASHES / 10)
        .map(|h| {
            let mut m = PageHash::new(heap).expect("heap");
            for (f, name) in names.iter().enumerate() {
                m.insert(heap, name, &field_value(h, f)).expect("heap");
            }
            m
        })
        .collect();
    let heap_ref: &Heap = heap;
    let ns = time_rounds(options.rounds, ops, || {
        let mut sum = 0u64;
        for i in 0..ops {
            sum += maps[i % (HASHES / 10)]
                .get(heap_ref, names[(i * 7) % fields])
                .map_or(0, |v| v.bytes.len() as u64);
        }
        sum
    });
    for m in maps {
        m.destroy(heap);
    }
    ns
}

/// Median ns per lookup of the `names` fields in hashbrown `HashMap<Vec<u8>, Vec<u8>>`s.
fn hashbrown_lookup(names: &[&[u8]], options: Options) -> f64 {
    let (fields, ops) = (names.len(), options.lookups);
    let maps: Vec<hashbrown::HashMap<Vec<u8>, Vec<u8>>> = (0..HASHES)
        .map(|h| {
            names
                .iter()
                .enumerate()
                .map(|(f, n)| (n.to_vec(), field_value(h, f)))
                .collect()
        })
        .collect();
    time_rounds(options.rounds, ops, || {
        let mut sum = 0u64;
        for i in 0..ops {
            sum += maps[i % HASHES]
                .get(names[(i * 7) % fields])
                .map_or(0, |v| v.len() as u64);
        }
        sum
    })
}

fn memory_row(options: Options) -> MemoryRow {
    let n = options.records;
    let mut rng = SplitMix64::new(0x5EED_0005);
    let data: Vec<[(Vec<u8>, Vec<u8>); 5]> = (0..n).map(|i| user_record(&mut rng, i)).collect();

    let mut heap: Heap = Heap::new().expect("heap");
    let mut tree = ShapeTree::default();
    let mut scratch = record::empty();
    let mut shaped = Vec::with_capacity(n);
    for pairs in &data {
        scratch.truncate(0);
        scratch.extend_from_slice(&record::empty());
        for (f, v) in pairs {
            record::set(&mut tree, &mut scratch, f, v).expect("one shape");
        }
        let ptr = heap.alloc(scratch.len()).expect("heap");
        // SAFETY: `ptr` has `scratch.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(scratch.as_ptr(), ptr.as_ptr(), scratch.len()) };
        // The copy in the heap takes over the scratch record's hold on its shape.
        shaped.push((ptr, scratch.len()));
    }
    let shaped_heap = heap.stats().allocated_bytes as f64;
    let tree_bytes = tree.memory_bytes();

    let mut small_heap: Heap = Heap::new().expect("heap");
    let mut small = Vec::with_capacity(n);
    for pairs in &data {
        let mut m = SmallMap::new(&mut small_heap).expect("heap");
        for (f, v) in pairs {
            m.insert(&mut small_heap, f, v).expect("heap");
        }
        small.push(m);
    }
    let small_bytes = small_heap.stats().allocated_bytes as f64;
    let listpack: usize = data.iter().map(|p| listpack_bytes(p)).sum();
    for (ptr, len) in shaped {
        // SAFETY: each record was allocated above with this length and is freed once.
        unsafe { heap.free(ptr, len) };
    }
    for m in small {
        m.destroy(&mut small_heap);
    }
    MemoryRow {
        records: n,
        shaped_bytes_per_record: (shaped_heap + tree_bytes as f64) / n as f64,
        shape_tree_bytes: tree_bytes,
        smallmap_bytes_per_record: small_bytes / n as f64,
        listpack_bytes_per_record: listpack as f64 / n as f64,
    }
}

/// Runs the suite, prints its tables and writes `bench-results/shapes.json`.
pub fn run(options: Options) -> std::io::Result<()> {
    let mut heap: Heap = Heap::new().expect("heap");
    eprintln!("shapes: lookups, 1..16 fields");
    let lookups: Vec<LookupRow> = (1..=16)
        .map(|f| lookup_row(f, options, &mut heap))
        .collect();
    eprintln!("shapes: memory of {} user records", options.records);
    let memory = memory_row(options);
    println!(
        "\nshapes suite: HGET of a present field, median ns/op over {} rounds of {} lookups",
        options.rounds, options.lookups
    );
    println!(
        "{:>6} {:>10} {:>14} {:>10} {:>12} {:>16}",
        "fields", "shaped", "smallmap/page", "hashbrown", "shaped/small", "shaped/hashbrown"
    );
    for r in &lookups {
        println!(
            "{:>6} {:>10.1} {:>9.1} ({:>1}) {:>10.1} {:>11.2}x {:>15.2}x {:>10.3}",
            r.fields,
            r.shaped_ns,
            r.smallmap_ns,
            &r.smallmap_kind[..1],
            r.hashbrown_ns,
            r.shaped_ns / r.smallmap_ns,
            r.shaped_ns / r.hashbrown_ns,
            r.shape_cache_hit_rate
        );
    }
    println!(
        "\nmemory, {} user records (value storage per record): shaped {:.1} B (tree {} B in all), SmallMap {:.1} B, listpack {:.1} B; shaped/SmallMap {:.2}x",
        memory.records,
        memory.shaped_bytes_per_record,
        memory.shape_tree_bytes,
        memory.smallmap_bytes_per_record,
        memory.listpack_bytes_per_record,
        memory.shaped_bytes_per_record / memory.smallmap_bytes_per_record
    );
    std::fs::create_dir_all("bench-results")?;
    let json = serde_json::json!({ "suite": "shapes", "lookups": lookups, "memory": memory });
    std::fs::write(
        "bench-results/shapes.json",
        serde_json::to_string_pretty(&json).unwrap_or_default(),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_sizes_follow_listpack_c() {
        assert_eq!(listpack_entry_bytes(b"42"), 2);
        assert_eq!(listpack_entry_bytes(b"1700000000"), 6);
        assert_eq!(listpack_entry_bytes(b"name"), 6);
        assert_eq!(listpack_entry_bytes(&[b'x'; 100]), 103);
        assert_eq!(
            listpack_bytes(&[(b"age".to_vec(), b"42".to_vec())]),
            6 + 5 + 2 + 1
        );
    }

    #[test]
    fn quick_run_produces_sane_numbers() {
        let options = Options {
            records: 2000,
            rounds: 1,
            lookups: 2000,
        };
        let memory = memory_row(options);
        assert!(memory.shaped_bytes_per_record < memory.smallmap_bytes_per_record);
        assert!(memory.listpack_bytes_per_record > 60.0);
        let mut heap: Heap = Heap::new().expect("heap");
        let row = lookup_row(3, options, &mut heap);
        assert!(row.shaped_ns > 0.0 && row.hashbrown_ns > 0.0);
    }
}
