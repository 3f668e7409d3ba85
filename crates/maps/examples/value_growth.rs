//! Values grown by appends: `PageHash::edit_value` (the blob resized in place under
//! `capacity_for`) against the store's old path (read the value, build a new `Vec`, replace the
//! entry). Dimensions: scenario (one 512 MiB value built by 1 MiB appends; 100k appends of 10 B
//! to one key) x path (edit, copy) x measure (wall time, time per append over the run, the
//! process's peak RSS `VmHWM`, `VmRSS` after removing the key, and the heap's own figures).
//!
//! ```sh
//! cargo run --release -p maps --example value_growth -- big          # 512 MiB by 1 MiB appends
//! cargo run --release -p maps --example value_growth -- big copy     # the same by copies
//! cargo run --release -p maps --example value_growth -- small        # 100k x 10 B appends
//! cargo run --release -p maps --example value_growth -- small copy
//! MIB=128 cargo run --release -p maps --example value_growth -- big copy
//! ```
//!
//! One scenario per process, so that `VmHWM` is that scenario's peak. RSS figures are the
//! process's (the map's heap, the benchmark's 1 MiB chunk, the binary); redis-server's
//! `APPEND` build of the same 512 MiB string peaks at 537 MB.

use heap::Heap;
use maps::PageHash;
use std::fmt::Write as _;
use std::time::Instant;

fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .expect("field in /proc/self/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number of kB");
    kib * 1024
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// Appends `data` to `key`'s value by `edit_value` (`copy`: by the old read-build-replace path).
fn append(map: &mut PageHash, heap: &mut Heap, key: &[u8], data: &[u8], copy: bool) {
    let old = map.get(heap, key).map_or(0, |v| v.bytes.len());
    if copy {
        let mut value = Vec::with_capacity(old + data.len());
        value.extend_from_slice(map.get(heap, key).expect("present").bytes);
        value.extend_from_slice(data);
        map.insert(heap, key, &value).expect("memory");
    } else {
        let edited = map.edit_value(heap, key, old + data.len(), |v| {
            v[old..].copy_from_slice(data);
        });
        assert!(edited.expect("memory"), "the key is present");
    }
}

fn big(copy: bool) {
    let total_mib: usize = std::env::var("MIB").map_or(512, |v| v.parse().expect("MIB"));
    let mut heap = Heap::new().expect("heap");
    let mut map = PageHash::new(&mut heap).expect("map");
    let chunk: Vec<u8> = (0..1 << 20).map(|i| (i * 7) as u8).collect();
    let base = status_bytes("VmRSS:");
    map.insert(&mut heap, b"big", b"").expect("memory");
    let start = Instant::now();
    let mut slowest = 0f64;
    for _ in 0..total_mib {
        let t = Instant::now();
        append(&mut map, &mut heap, b"big", &chunk, copy);
        slowest = slowest.max(t.elapsed().as_secs_f64());
    }
    let elapsed = start.elapsed().as_secs_f64();
    let value = map.get(&heap, b"big").expect("present").bytes;
    assert_eq!(value.len(), total_mib << 20);
    assert!(value.chunks(1 << 20).all(|c| c == chunk.as_slice()));
    let full = status_bytes("VmRSS:");
    let memory = map.memory_bytes();
    assert!(map.remove(&mut heap, b"big"));
    let removed = status_bytes("VmRSS:");
    heap.purge();
    let purged = status_bytes("VmRSS:");
    let peak = status_bytes("VmHWM:");
    let path = if copy { "copy" } else { "edit_value" };
    println!("{total_mib} MiB by 1 MiB appends, {path}:");
    println!(
        "  time {elapsed:.3} s ({:.1} ms per append, slowest {:.1} ms)",
        elapsed * 1e3 / total_mib as f64,
        slowest * 1e3
    );
    println!(
        "  VmHWM {:.1} MiB (baseline VmRSS {:.1} MiB); VmRSS full {:.1} MiB, \
         after remove {:.1} MiB, after purge {:.1} MiB",
        mib(peak),
        mib(base),
        mib(full),
        mib(removed),
        mib(purged)
    );
    println!("  map.memory_bytes() full {:.1} MiB", mib(memory as u64));
    map.destroy(&mut heap);
}

fn small(copy: bool) {
    const WINDOW: usize = 10_000;
    let count: usize = std::env::var("COUNT").map_or(100_000, |v| v.parse().expect("COUNT"));
    let mut heap = Heap::new().expect("heap");
    let mut map = PageHash::new(&mut heap).expect("map");
    // Other keys around it, so the lookup is a real one.
    for i in 0..10_000u32 {
        let key = format!("key:{i:012}");
        map.insert(&mut heap, key.as_bytes(), b"0123456789")
            .expect("memory");
    }
    map.insert(&mut heap, b"appended", b"").expect("memory");
    let path = if copy { "copy" } else { "edit_value" };
    println!("{count} appends of 10 B to one key, {path}: ns per append by window of {WINDOW}");
    let start = Instant::now();
    let mut window = Instant::now();
    let mut line = String::new();
    for i in 1..=count {
        append(&mut map, &mut heap, b"appended", b"0123456789", copy);
        if i % WINDOW == 0 {
            let ns = window.elapsed().as_nanos() as f64 / WINDOW as f64;
            write!(line, " {ns:.0}").expect("a String takes any write");
            window = Instant::now();
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(" {line}");
    println!(
        "  total {elapsed:.3} s, {:.0} ns per append; final value {} B; VmHWM {:.1} MiB",
        elapsed * 1e9 / count as f64,
        map.get(&heap, b"appended").expect("present").bytes.len(),
        mib(status_bytes("VmHWM:"))
    );
    map.validate(&heap).expect("valid");
    map.destroy(&mut heap);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let copy = args.iter().any(|a| a == "copy");
    match args.first().map(String::as_str) {
        Some("small") => small(copy),
        Some("big") | None => big(copy),
        Some(other) => panic!("unknown scenario {other}: big | small [copy]"),
    }
}
