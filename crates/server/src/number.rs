//! Numbers as Redis reads them from arguments: `strtod`'s grammar (decimal, `inf`/`nan`, hex
//! floats) and `string2d`'s rules for a score. Sorted-set scores, their range bounds and SORT's
//! weights all parse here.

// Scores are compared exactly, as Redis compares its doubles.
#![allow(clippy::float_cmp)]

/// `s` read whole as `strtod` reads it (no leading space here): decimal, `inf`, `infinity`,
/// `nan` (any case, signed) and hex floats (`0x10`, `-0x1.8p3`). `None` unless all of `s` is used.
pub fn strtod_whole(s: &[u8]) -> Option<f64> {
    let (negative, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.len() > 2 && body[0] == b'0' && (body[1] | 0x20) == b'x' {
        let v = parse_hex(&body[2..])?;
        return Some(if negative { -v } else { v });
    }
    // Rust's float grammar is strtod's decimal and inf/nan grammar.
    std::str::from_utf8(s).ok()?.parse::<f64>().ok()
}

/// The digits of a hex float after `0x`: hex digits, an optional fraction, an optional binary
/// exponent `p[+-]digits`. Exact while the mantissa fits 53 bits (what clients send).
fn parse_hex(s: &[u8]) -> Option<f64> {
    let mut mantissa = 0f64;
    let mut exponent: i64 = 0;
    let mut digits = 0;
    let mut i = 0;
    let mut in_fraction = false;
    while i < s.len() {
        let b = s[i];
        if b == b'.' && !in_fraction {
            in_fraction = true;
        } else if let Some(d) = (b as char).to_digit(16) {
            mantissa = mantissa * 16.0 + f64::from(d);
            if in_fraction {
                exponent -= 4;
            }
            digits += 1;
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < s.len() {
        if s[i] | 0x20 != b'p' {
            return None;
        }
        let e: i64 = std::str::from_utf8(&s[i + 1..]).ok()?.parse().ok()?;
        if s[i + 1..].first() == Some(&b'+') && s.len() == i + 2 {
            return None;
        }
        exponent = exponent.saturating_add(e);
    }
    Some(mantissa * 2f64.powi(exponent.clamp(-2000, 2000) as i32))
}

pub fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

pub fn is_inf_literal(s: &[u8]) -> bool {
    let t = s
        .strip_prefix(b"+")
        .or_else(|| s.strip_prefix(b"-"))
        .unwrap_or(s);
    t.eq_ignore_ascii_case(b"inf") || t.eq_ignore_ascii_case(b"infinity")
}

/// Redis's `string2d`: the whole argument is a float, no leading space, no NaN, and no overflow
/// to infinity or underflow to zero.
pub fn parse_score(s: &[u8]) -> Option<f64> {
    if s.is_empty() || is_space(s[0]) {
        return None;
    }
    let v = strtod_whole(s)?;
    if v.is_nan() {
        return None;
    }
    if v.is_infinite() && !is_inf_literal(s) {
        return None;
    }
    if v == 0.0
        && s.iter()
            .take_while(|&&b| b != b'e' && b != b'E')
            .any(|b| (b'1'..=b'9').contains(b))
    {
        return None;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_like_string2d() {
        assert_eq!(parse_score(b"1e3"), Some(1000.0));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"nan"), None);
        assert_eq!(parse_score(b"1x"), None);
        assert_eq!(parse_score(b" 1"), None);
        assert_eq!(parse_score(b""), None);
        assert_eq!(parse_score(b"1e400"), None);
        assert_eq!(parse_score(b"1e-400"), None);
        assert_eq!(parse_score(b"0e-400"), Some(0.0));
        assert!(parse_score(b"-0").is_some_and(|v| v == 0.0 && v.is_sign_negative()));
        assert_eq!(parse_score(b"0x10"), Some(16.0));
        assert_eq!(parse_score(b"-0x1.8p1"), Some(-3.0));
        assert_eq!(parse_score(b"0x"), None);
        assert_eq!(parse_score(b"INF"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"-Infinity"), Some(f64::NEG_INFINITY));
    }
}
