//! Inserts N random keys into one map and prints ns per insert: the insert path alone, for
//! profilers and for instruction counts that the shared machine's noise does not move.
//!
//! `seq` inserts the keys 0..N into an IntMap (the bench's sequential workload) instead of
//! random ones. With `SHAPE=1` it prints the map's shape (pages, global depth, fill) and bytes
//! per entry after the inserts.
//!
//! With `GETS=1` it then looks every key up once in a random order and prints ns per lookup
//! (instructions per lookup: the difference of two cachegrind runs, with and without).
//!
//! ```sh
//! cargo run --release -p maps --example insert_profile -- int      # IntMap, random u64 -> u64
//! cargo run --release -p maps --example insert_profile -- seq      # IntMap, 0..N -> itself
//! cargo run --release -p maps --example insert_profile -- bytes    # PageHash, 16 B -> 16 B
//! N=300000 valgrind --tool=cachegrind --cache-sim=no \
//!     target/release/examples/insert_profile bytes                 # instructions ("I refs")
//! ```
//!
//! The heap reserves 1 GiB of address space (valgrind cannot map the default 64 GiB).

use heap::{Heap, HeapConfig};
use maps::{IntMap, PageHash};
use std::time::Instant;

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `keys` in a seeded random order (the lookup order).
fn shuffled<T: Clone>(keys: &[T]) -> Vec<T> {
    let mut order = keys.to_vec();
    let mut seed = 7;
    for i in (1..order.len()).rev() {
        let j = (splitmix(&mut seed) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The lookup loops, out of line so that a profiler can count them alone
/// (`valgrind --tool=callgrind --toggle-collect='insert_profile::*_gets'`).
#[inline(never)]
fn int_gets(map: &IntMap, order: &[u64]) -> u64 {
    let mut sum = 0u64;
    for &k in order {
        sum = sum.wrapping_add(map.get(k).expect("hit"));
    }
    sum
}

#[inline(never)]
fn bytes_gets(map: &PageHash, heap: &Heap, order: &[[u8; 16]]) -> usize {
    let mut sum = 0usize;
    for k in order {
        sum = sum.wrapping_add(map.get(heap, k).expect("hit").bytes.len());
    }
    sum
}

fn main() {
    let gets = std::env::var("GETS").is_ok_and(|v| v == "1");
    let which = std::env::args().nth(1).unwrap_or_else(|| "bytes".into());
    let n: usize = std::env::var("N").map_or(1_000_000, |v| v.parse().expect("N is a count"));
    let mut seed = 42;
    let keys: Vec<u64> = if which == "seq" {
        (0..n as u64).collect()
    } else {
        (0..n).map(|_| splitmix(&mut seed)).collect()
    };
    let mut heap = Heap::with_config(HeapConfig {
        reserve_bytes: 1 << 30,
        ..HeapConfig::default()
    })
    .expect("heap");
    let t = Instant::now();
    match which.as_str() {
        "int" | "seq" => {
            let mut map = IntMap::new(&mut heap).expect("map");
            for &k in &keys {
                map.insert(&mut heap, k, k).expect("insert");
            }
            println!("{:.1} ns/insert", t.elapsed().as_nanos() as f64 / n as f64);
            if std::env::var("SHAPE").is_ok_and(|v| v == "1") {
                println!("{:?}", map.shape());
                println!("{:.3} B/entry", map.memory_bytes() as f64 / n as f64);
            }
            if gets {
                let order = shuffled(&keys);
                let t = Instant::now();
                std::hint::black_box(int_gets(&map, &order));
                println!("{:.1} ns/get", t.elapsed().as_nanos() as f64 / n as f64);
            }
        }
        "bytes" => {
            let keys: Vec<[u8; 16]> = keys
                .iter()
                .map(|k| {
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&k.to_le_bytes());
                    b[8..].copy_from_slice(&k.to_be_bytes());
                    b
                })
                .collect();
            let t = Instant::now();
            let mut map = PageHash::new(&mut heap).expect("map");
            for k in &keys {
                map.insert(&mut heap, k, k).expect("insert");
            }
            println!("{:.1} ns/insert", t.elapsed().as_nanos() as f64 / n as f64);
            if std::env::var("SHAPE").is_ok_and(|v| v == "1") {
                println!("{:?}", map.shape());
                println!("{:.3} B/entry", map.memory_bytes() as f64 / n as f64);
            }
            if gets {
                let order = shuffled(&keys);
                let t = Instant::now();
                std::hint::black_box(bytes_gets(&map, &heap, &order));
                println!("{:.1} ns/get", t.elapsed().as_nanos() as f64 / n as f64);
            }
        }
        other => panic!("unknown map {other:?}: int, seq or bytes"),
    }
}
