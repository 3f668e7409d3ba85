//! The clock commands are timed with (INFO commandstats µs, SLOWLOG): the CPU's time-stamp
//! counter where the kernel keeps its own time with it, `Instant` elsewhere.
//!
//! ```text
//!  Mark = raw TSC ticks (x86_64, kernel clocksource "tsc")  |  ns since a process origin
//!  µs between two marks = (ticks × mult) >> 32,  mult = 2^32 / ticks per µs (calibrated once)
//! ```
//! Every command reads the clock once (`command::run`). Through the vDSO that read is
//! `clock_gettime` (~30 ns on this VM, 5% of the server's samples under GET at `-P 16`); `rdtsc`
//! alone is ~13 ns. The TSC is trusted only when the kernel's clocksource is `tsc`: the kernel
//! has then checked that it is invariant and synchronised across CPUs. Its rate is measured
//! once against `Instant` over a few milliseconds (`init`, at startup), each `Instant` read
//! bracketed by two TSC reads so that a preemption between them shows and the sample is retaken.
//!
//! The figures are statistics: a mark is not ordered against the command's own loads and stores
//! (no fence), which moves a reading by tens of cycles, and a difference below zero (a thread
//! that moved between CPUs) reads as zero.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A point on the command clock.
#[derive(Clone, Copy, Debug)]
pub struct Mark(u64);

#[derive(Debug)]
struct Scale {
    tsc: bool,
    /// µs = (ticks × mult) >> 32.
    mult: u64,
    origin: Instant,
}

static SCALE: OnceLock<Scale> = OnceLock::new();

/// How long the TSC rate is measured over.
const CALIBRATION: Duration = Duration::from_millis(4);

/// Measures the clock's rate now rather than on the first command.
pub fn init() {
    scale();
}

/// Now, on the command clock.
#[inline]
pub fn now() -> Mark {
    let s = scale();
    if s.tsc {
        Mark(tsc())
    } else {
        Mark(s.origin.elapsed().as_nanos() as u64)
    }
}

/// Microseconds from `start` to `end` (0 if `end` reads earlier).
#[inline]
pub fn micros(start: Mark, end: Mark) -> u64 {
    let ticks = end.0.saturating_sub(start.0);
    ((u128::from(ticks) * u128::from(scale().mult)) >> 32) as u64
}

#[inline]
fn scale() -> &'static Scale {
    SCALE.get_or_init(calibrate)
}

fn calibrate() -> Scale {
    let origin = Instant::now();
    let ns = Scale {
        tsc: false,
        mult: (1u64 << 32) / 1000,
        origin,
    };
    if !cfg!(target_arch = "x86_64") || !kernel_keeps_time_with_tsc() {
        return ns;
    }
    let (i0, t0) = paired_read();
    while i0.elapsed() < CALIBRATION {
        std::hint::spin_loop();
    }
    let (i1, t1) = paired_read();
    let us = (i1 - i0).as_nanos() as f64 / 1000.0;
    let ticks_per_us = t1.wrapping_sub(t0) as f64 / us;
    if !(ticks_per_us.is_finite() && ticks_per_us >= 1.0) {
        return ns;
    }
    Scale {
        tsc: true,
        mult: ((1u64 << 32) as f64 / ticks_per_us) as u64,
        origin,
    }
}

/// An `Instant` and the TSC at the same moment: the midpoint of two TSC reads around the
/// `Instant` read, retaken (up to a bound) while the two lie far apart.
fn paired_read() -> (Instant, u64) {
    let mut best = (Instant::now(), tsc(), u64::MAX);
    for _ in 0..16 {
        let a = tsc();
        let i = Instant::now();
        let b = tsc();
        let gap = b.wrapping_sub(a);
        if gap < best.2 {
            best = (i, a + gap / 2, gap);
        }
    }
    (best.0, best.1)
}

fn kernel_keeps_time_with_tsc() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|s| s.trim() == "tsc")
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn tsc() -> u64 {
    // SAFETY: `rdtsc` reads the time-stamp counter into registers; it touches no memory and
    // exists on every x86_64 CPU (`calibrate` uses it only where the kernel itself does).
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn tsc() -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 20 ms sleep measures at least 20 ms (a sleep never ends early) and less than the
    /// seconds a very loaded machine could add; marks never go backwards on one thread.
    #[test]
    fn measures_elapsed_microseconds() {
        init();
        let a = now();
        std::thread::sleep(Duration::from_millis(20));
        let b = now();
        let us = micros(a, b);
        assert!(
            (19_900..5_000_000).contains(&us),
            "20 ms measured as {us} µs"
        );
        assert_eq!(micros(b, a), 0, "an end before the start reads as zero");
        let mut last = now();
        for _ in 0..1000 {
            let next = now();
            assert!(next.0 >= last.0, "the clock went backwards");
            last = next;
        }
    }
}
