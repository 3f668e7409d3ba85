//! The allocators under comparison, behind one small trait.
//!
//! | id           | what                                                     | called through         |
//! |--------------|----------------------------------------------------------|------------------------|
//! | `densekv`    | `heap::Heap<32>`, the dense 32-byte descriptor layout    | `alloc` / `free`       |
//! | `densekv-64` | `heap::Heap<64>`, padded descriptors (descriptor scan)   | `alloc` / `free`       |
//! | `mimalloc`   | `mimalloc::MiMalloc`                                     | `GlobalAlloc` directly |
//! | `jemalloc`   | `tikv_jemallocator::Jemalloc` (prefixed `_rjem_` symbols) | `GlobalAlloc` directly |
//! | `system`     | `std::alloc::System` (glibc malloc)                      | `GlobalAlloc` directly |
//!
//! None of the peers is installed as `#[global_allocator]`: the harness's own vectors go to the
//! system allocator in every child, so they cost every allocator the same, and each peer serves
//! only the benchmark's requests. Every request asks for 8-byte alignment, the heap's guarantee;
//! all three peers serve that from their ordinary `malloc` path.
//!
//! The trait is sized-free (`free(ptr, size)`): densekv's heap needs the size, and the
//! `GlobalAlloc` peers need it for the `Layout` anyway. Calls are monomorphised, so the trait adds
//! no indirect call to the measured loop.

use std::alloc::{GlobalAlloc, Layout, System, handle_alloc_error};
use std::ptr::NonNull;

use clap::ValueEnum;
use heap::{Heap, HeapConfig};
use mimalloc::MiMalloc;
use serde::{Deserialize, Serialize};
use tikv_jemallocator::Jemalloc;

/// Alignment of every request; the heap's documented guarantee.
const ALIGN_BYTES: usize = 8;

/// Which allocator a measurement runs on; the value of `--alloc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AllocatorId {
    Densekv,
    #[value(name = "densekv-64")]
    #[serde(rename = "densekv-64")]
    Densekv64,
    Mimalloc,
    Jemalloc,
    System,
}

impl AllocatorId {
    /// The allocators of the time/RSS table, densekv first; mimalloc is the peer for ratios.
    pub const COMPARED: [Self; 4] = [Self::Densekv, Self::Mimalloc, Self::Jemalloc, Self::System];
    /// The peer every ratio is taken against.
    pub const PEER: Self = Self::Mimalloc;

    pub fn name(self) -> &'static str {
        match self {
            Self::Densekv => "densekv",
            Self::Densekv64 => "densekv-64",
            Self::Mimalloc => "mimalloc",
            Self::Jemalloc => "jemalloc",
            Self::System => "system",
        }
    }
}

/// What a workload needs from an allocator.
pub trait BenchAlloc {
    /// `size` bytes, 8-byte aligned. Exhaustion aborts the child: a benchmark cannot go on
    /// without its memory, and the parent reports the child's failure.
    fn alloc(&mut self, size: usize) -> NonNull<u8>;

    /// # Safety
    /// `ptr` came from `alloc(size)` on this allocator, with this `size`, and is not used after.
    unsafe fn free(&mut self, ptr: NonNull<u8>, size: usize);

    /// The allocator's own estimate of its resident bytes, where it keeps one (densekv's heap).
    fn resident_bytes(&self) -> Option<u64> {
        None
    }

    /// The allocator's resident bytes measured by the kernel (`mincore`), where it can say.
    fn measured_resident_bytes(&self) -> Option<u64> {
        None
    }
}

/// A `GlobalAlloc` called directly, not installed as the global allocator.
#[derive(Debug, Default)]
pub struct Global<A>(pub A);

fn layout(size: usize) -> Layout {
    // Cannot fail for the sizes the workloads use (at most a few MiB).
    Layout::from_size_align(size.max(1), ALIGN_BYTES).expect("benchmark size overflows Layout")
}

impl<A: GlobalAlloc> BenchAlloc for Global<A> {
    #[inline]
    fn alloc(&mut self, size: usize) -> NonNull<u8> {
        let layout = layout(size);
        // SAFETY: `layout` has a non-zero size (`layout` rounds 0 up to 1).
        let ptr = unsafe { self.0.alloc(layout) };
        NonNull::new(ptr).unwrap_or_else(|| handle_alloc_error(layout))
    }

    #[inline]
    unsafe fn free(&mut self, ptr: NonNull<u8>, size: usize) {
        // SAFETY: the caller guarantees `ptr` came from `alloc(size)` on this allocator, and
        // `layout(size)` is the layout that allocation used.
        unsafe { self.0.dealloc(ptr.as_ptr(), layout(size)) }
    }
}

/// densekv's heap, with `DESC_BYTES`-byte block descriptors.
pub struct Dense<const DESC_BYTES: usize>(pub Heap<DESC_BYTES>);

impl<const DESC_BYTES: usize> std::fmt::Debug for Dense<DESC_BYTES> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Written by hand so this crate does not depend on the heap's own `Debug` output.
        write!(f, "Dense<{DESC_BYTES}>")
    }
}

impl<const DESC_BYTES: usize> Dense<DESC_BYTES> {
    pub fn with_config(config: HeapConfig) -> Self {
        Self(Heap::with_config(config).unwrap_or_else(|e| panic!("densekv Heap::with_config: {e}")))
    }
}

impl<const DESC_BYTES: usize> BenchAlloc for Dense<DESC_BYTES> {
    #[inline]
    fn alloc(&mut self, size: usize) -> NonNull<u8> {
        match self.0.alloc(size) {
            Ok(ptr) => ptr,
            Err(e) => panic!("densekv heap: alloc({size}) failed: {e}"),
        }
    }

    #[inline]
    unsafe fn free(&mut self, ptr: NonNull<u8>, size: usize) {
        // SAFETY: forwarded from the caller: `ptr` came from `alloc(size)` on this heap.
        unsafe { self.0.free(ptr, size) }
    }

    fn resident_bytes(&self) -> Option<u64> {
        Some(self.0.stats().resident_bytes)
    }

    fn measured_resident_bytes(&self) -> Option<u64> {
        Some(self.0.measure_resident_bytes())
    }
}

/// Calls `f` with a fresh instance of allocator `id`, monomorphised per allocator.
pub fn with_allocator<R>(id: AllocatorId, f: impl AllocFn<R>) -> R {
    match id {
        AllocatorId::Densekv => f.call(&mut Dense::<32>::with_config(HeapConfig::default())),
        AllocatorId::Densekv64 => f.call(&mut Dense::<64>::with_config(HeapConfig::default())),
        AllocatorId::Mimalloc => f.call(&mut Global(MiMalloc)),
        AllocatorId::Jemalloc => f.call(&mut Global(Jemalloc)),
        AllocatorId::System => f.call(&mut Global(System)),
    }
}

/// A computation generic over the allocator (a closure cannot be generic, so this is a trait).
pub trait AllocFn<R> {
    fn call<A: BenchAlloc>(self, alloc: &mut A) -> R;
}

#[cfg(test)]
mod tests {
    use super::{AllocFn, AllocatorId, BenchAlloc, with_allocator};

    struct RoundTrip;

    impl AllocFn<()> for RoundTrip {
        fn call<A: BenchAlloc>(self, alloc: &mut A) {
            for size in [1, 16, 100, 4096, 70_000] {
                let ptr = alloc.alloc(size);
                assert_eq!(ptr.as_ptr() as usize % 8, 0);
                // SAFETY: the allocation holds `size >= 1` bytes.
                unsafe { ptr.as_ptr().write_bytes(0xA5, size) };
                // SAFETY: `ptr` came from `alloc(size)` just above.
                unsafe { alloc.free(ptr, size) };
            }
        }
    }

    #[test]
    fn peers_round_trip() {
        // densekv is left out: its crate has its own tests, and this one must not depend on it.
        for id in [
            AllocatorId::Mimalloc,
            AllocatorId::Jemalloc,
            AllocatorId::System,
        ] {
            with_allocator(id, RoundTrip);
        }
    }

    #[test]
    fn names_match_cli_values() {
        use clap::ValueEnum;
        for id in AllocatorId::value_variants() {
            let value = id.to_possible_value().expect("no skipped variants");
            assert_eq!(value.get_name(), id.name());
            let json = serde_json::to_string(id).expect("serializes");
            assert_eq!(json, format!("\"{}\"", id.name()));
        }
    }
}
