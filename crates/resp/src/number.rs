//! `string2ll`: the strict decimal integer syntax Redis uses for `*<count>` and `$<len>`.
//!
//! Redis 7.0 `util.c` accepts exactly `0` or `-?[1-9][0-9]*` of fewer than 21 bytes
//! (`LONG_STR_SIZE`) whose value fits an `i64`. Everything else is rejected: the empty string,
//! `+1`, `01`, `-0`, ` 1`, `1 `, `1.0`, and any overflow. Using `str::parse` instead would accept
//! `+1` and `007`, and Redis replies `invalid multibulk length` to those, so the syntax is
//! reproduced by hand.
//!
//! The scan is bounded: at most 20 bytes are looked at, whatever the input length.

/// `LONG_STR_SIZE` in Redis: a number of this many bytes or more is never valid.
const LONG_STR_SIZE: usize = 21;

/// Parses `bytes` with Redis's `string2ll` rules; `None` where Redis returns 0.
pub fn string2ll(bytes: &[u8]) -> Option<i64> {
    if bytes.is_empty() || bytes.len() >= LONG_STR_SIZE {
        return None;
    }
    if bytes == b"0" {
        return Some(0);
    }
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    let (first, rest) = digits.split_first()?;
    if !(b'1'..=b'9').contains(first) {
        return None;
    }
    let mut value = u64::from(first - b'0');
    for &byte in rest {
        if !byte.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(byte - b'0'))?;
    }
    if negative {
        // The magnitude of i64::MIN is one more than i64::MAX.
        if value > i64::MAX as u64 + 1 {
            return None;
        }
        Some((value as i64).wrapping_neg())
    } else {
        i64::try_from(value).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::string2ll;

    #[test]
    fn accepts_canonical_integers() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"1"), Some(1));
        assert_eq!(string2ll(b"-1"), Some(-1));
        assert_eq!(string2ll(b"1024"), Some(1024));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
    }

    #[test]
    fn rejects_what_redis_rejects() {
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"01",
            b"00",
            b"-0",
            b" 1",
            b"1 ",
            b"1.0",
            b"1e3",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"18446744073709551616",
            b"99999999999999999999",
            b"000000000000000000001",
            b"abc",
            b"1\0",
        ] {
            assert_eq!(string2ll(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn agrees_with_std_on_canonical_forms() {
        let mut x: i64 = 1;
        for _ in 0..200 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            for v in [x, x >> 7, x >> 33, x >> 55] {
                assert_eq!(string2ll(v.to_string().as_bytes()), Some(v));
            }
        }
    }
}
