//! Arithmetic Redis does in `long double` — INCRBYFLOAT and the blocking commands' timeouts —
//! through the C shim in `csrc/longdouble.c`.
//!
//! Redis parses both operands with `strtold`, adds them in the platform's `long double` (80-bit
//! extended on x86-64) and prints `%.17Lf` with trailing zeros trimmed. An f64 sum differs in the
//! last digits for everyday inputs (`10.5 + 0.1` is `10.6` in Redis, `10.59999999999999964` in
//! f64), so the computation is delegated to C, where `long double` exists. A blocking timeout
//! is `ceill(seconds * 1000)` in `long double`: `1e-300` is 1 ms there and 0 ("forever") once
//! rounded through an f64 text. This file holds the crate's only FFI calls.

/// Why INCRBYFLOAT refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatError {
    /// `ERR value is not a valid float`
    NotFloat,
    /// `ERR increment would produce NaN or Infinity`
    NanOrInfinity,
}

unsafe extern "C" {
    fn densekv_incrbyfloat(
        current: *const u8,
        current_len: usize,
        has_current: libc::c_int,
        incr: *const u8,
        incr_len: usize,
        out: *mut u8,
        out_len: usize,
    ) -> libc::c_int;
    fn densekv_timeout_ms(text: *const u8, len: usize, ms: *mut libc::c_longlong) -> libc::c_int;
}

/// A blocking command's timeout in seconds converted to milliseconds as Redis converts it
/// (`None`: not a float). Out-of-range products are `i64::MIN`, as on Redis's x86-64 builds.
pub fn timeout_ms(text: &[u8]) -> Option<i64> {
    let mut ms: libc::c_longlong = 0;
    // SAFETY: `text` is valid for `text.len()` bytes and `ms` for one write during the call; the
    // C function reads at most that many bytes, writes only `*ms`, and keeps no pointer.
    let ok = unsafe { densekv_timeout_ms(text.as_ptr(), text.len(), &raw mut ms) };
    (ok != 0).then_some(ms)
}

/// `current + incr` formatted as Redis stores and replies it; `current` is `None` for a missing key.
pub fn incr_by_float(current: Option<&[u8]>, incr: &[u8]) -> Result<Vec<u8>, FloatError> {
    let mut out = vec![0u8; 5 * 1024 + 8];
    let (ptr, len) = current.map_or((std::ptr::null(), 0), |c| (c.as_ptr(), c.len()));
    // SAFETY: every pointer is valid for its length for the whole call (slices and `out`), the C
    // function reads at most those lengths, writes at most `out.len()` bytes into `out`, and keeps
    // no pointer after returning.
    let n = unsafe {
        densekv_incrbyfloat(
            ptr,
            len,
            libc::c_int::from(current.is_some()),
            incr.as_ptr(),
            incr.len(),
            out.as_mut_ptr(),
            out.len(),
        )
    };
    match n {
        -2 => Err(FloatError::NanOrInfinity),
        n if n < 0 => Err(FloatError::NotFloat),
        n => {
            out.truncate(n as usize);
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_redis_long_double_results() {
        // Values checked against redis-server 7.0.15 (see crates/resp's oracle test).
        assert_eq!(incr_by_float(Some(b"10.5"), b"0.1").unwrap(), b"10.6");
        assert_eq!(
            incr_by_float(None, b"1234.5678").unwrap(),
            b"1234.56779999999999997"
        );
        assert_eq!(incr_by_float(Some(b"3"), b"-3").unwrap(), b"0");
        assert_eq!(incr_by_float(Some(b"1"), b"1e3").unwrap(), b"1001");
        assert_eq!(incr_by_float(Some(b"abc"), b"1"), Err(FloatError::NotFloat));
        assert_eq!(incr_by_float(Some(b" 1"), b"1"), Err(FloatError::NotFloat));
        assert_eq!(incr_by_float(Some(b"1"), b"nan"), Err(FloatError::NotFloat));
        assert_eq!(
            incr_by_float(Some(b"inf"), b"1"),
            Err(FloatError::NanOrInfinity)
        );
        assert_eq!(
            incr_by_float(Some(b"1e4932"), b"1e4932"),
            Err(FloatError::NanOrInfinity)
        );
    }

    /// Timeouts as redis-server 7.0.15 reads them (`BLPOP k <t>`): the boundary cases behind
    /// "timeout is negative" and the sub-millisecond ones that must not become "forever".
    #[test]
    fn timeouts_convert_as_redis_does() {
        assert_eq!(timeout_ms(b"0"), Some(0));
        assert_eq!(timeout_ms(b"1.5"), Some(1500));
        assert_eq!(timeout_ms(b"0.0001"), Some(1));
        assert_eq!(timeout_ms(b"1e-300"), Some(1));
        assert_eq!(timeout_ms(b"-0"), Some(0));
        assert_eq!(timeout_ms(b"-0.0001"), Some(0));
        assert_eq!(timeout_ms(b"-1"), Some(-1000));
        assert_eq!(timeout_ms(b"1e17"), Some(i64::MIN));
        assert_eq!(timeout_ms(b"1e300"), Some(i64::MIN));
        assert_eq!(timeout_ms(b"inf"), Some(i64::MIN));
        assert_eq!(timeout_ms(b"9223372036854775807"), Some(i64::MIN));
        assert_eq!(
            timeout_ms(b"9223372036854775"),
            Some(9_223_372_036_854_775_000)
        );
        assert_eq!(timeout_ms(b"nan"), None);
        assert_eq!(timeout_ms(b"1x"), None);
        assert_eq!(timeout_ms(b" 1"), None);
        assert_eq!(timeout_ms(b""), None);
    }
}
