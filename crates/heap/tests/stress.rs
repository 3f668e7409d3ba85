//! Fixed-seed stress test (after mimalloc's `test-stress.c`): millions of allocations of mixed
//! sizes; every object is filled with a cookie derived from its id when allocated and checked when
//! freed, so any overlap between two live objects or any write by the heap into a live object shows
//! up as a wrong byte.

use heap::{Heap, HeapConfig};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ptr::NonNull;

struct Object {
    ptr: NonNull<u8>,
    size: usize,
    cookie: u64,
}

fn cookie_byte(cookie: u64, index: usize) -> u8 {
    (cookie >> ((index % 8) * 8)) as u8 ^ (index / 8) as u8
}

/// Objects up to 64 KiB are covered byte by byte; larger ones at every 509th byte and at both ends,
/// which still catches any overlap (it would clobber whole pages) at a tolerable cost.
fn stride(size: usize) -> usize {
    if size <= 64 << 10 { 1 } else { 509 }
}

fn fill(object: &Object) {
    let bytes = object.ptr.as_ptr();
    let mut i = 0;
    while i < object.size {
        // SAFETY: i < size, inside the live object.
        unsafe { bytes.add(i).write(cookie_byte(object.cookie, i)) };
        i += stride(object.size);
    }
    // SAFETY: the last byte is inside the object.
    unsafe {
        bytes
            .add(object.size - 1)
            .write(cookie_byte(object.cookie, object.size - 1));
    }
}

fn check(object: &Object) {
    let bytes = object.ptr.as_ptr();
    let mut i = 0;
    while i < object.size {
        // SAFETY: i < size, inside the live object.
        let got = unsafe { bytes.add(i).read() };
        assert_eq!(
            got,
            cookie_byte(object.cookie, i),
            "object {:#x} byte {i}",
            object.cookie
        );
        i += stride(object.size);
    }
}

fn random_size(rng: &mut SmallRng) -> usize {
    match rng.gen_range(0..1000) {
        0..=699 => rng.gen_range(1..=512),
        700..=899 => rng.gen_range(513..=32 << 10),
        900..=989 => rng.gen_range((32 << 10) + 1..512 << 10),
        990..=998 => rng.gen_range(512 << 10..=4 << 20),
        _ => rng.gen_range((4 << 20) + 1..=24 << 20),
    }
}

#[test]
fn mixed_sizes_with_cookies() {
    let mut heap = Heap::<32>::with_config(HeapConfig {
        reserve_bytes: 16 << 30,
        ..HeapConfig::default()
    })
    .unwrap();
    let mut rng = SmallRng::seed_from_u64(0x5eed_cafe);
    let mut live: Vec<Object> = Vec::new();
    let mut live_bytes = 0usize;
    let mut next_cookie = 1u64;
    let ops = 2_000_000;
    for op in 0..ops {
        let grow = live.is_empty()
            || (live.len() < 100_000 && live_bytes < 512 << 20 && rng.gen_bool(0.55));
        if grow {
            let size = random_size(&mut rng);
            let ptr = heap.alloc(size).expect("alloc");
            let object = Object {
                ptr,
                size,
                cookie: next_cookie.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            };
            next_cookie += 1;
            fill(&object);
            live_bytes += size;
            live.push(object);
        } else {
            let index = rng.gen_range(0..live.len());
            let object = live.swap_remove(index);
            check(&object);
            live_bytes -= object.size;
            // SAFETY: the object is live and freed once with its size.
            unsafe { heap.free(object.ptr, object.size) };
        }
        if op % 250_000 == 0 {
            heap.validate();
            assert_eq!(heap.stats().requested_bytes, live_bytes as u64);
        }
    }
    for object in live.drain(..) {
        check(&object);
        // SAFETY: live, freed once.
        unsafe { heap.free(object.ptr, object.size) };
    }
    heap.validate();
    let stats = heap.stats();
    assert_eq!((stats.requested_bytes, stats.allocated_bytes), (0, 0));
    heap.purge();
    heap.validate();
    assert_eq!(heap.stats().dirty_bytes, 0);
}
