//! The generic directive kinds of Redis's config.c: `yes`/`no`, strings, enumerations and
//! numbers, parsed with Redis's checks in Redis's order and formatted back as CONFIG GET shows
//! them. Error texts are Redis's, byte for byte: clients and the test suite match on them.
//!
//! Numbers are carried as `i64` whatever the field's type, as Redis carries them as `long long`:
//! an unsigned directive (`maxmemory`, `maxclients`, `size_t` thresholds) is bound-checked as
//! unsigned, so `maxmemory 18446744073709551615` is the `i64` -1 here and is formatted back as
//! the unsigned number it is.

use super::{Directive, EnumSpec, Kind, NumSpec, NumType, SetContext, StrSpec, flag, num};
use crate::config::Config;

/// The value as CONFIG GET shows it.
pub fn get(config: &Config, d: &Directive) -> Vec<u8> {
    match d.kind {
        Kind::Bool(b) => yes_no((b.get)(config)).as_bytes().to_vec(),
        Kind::Str(s) => (s.get)(config).to_vec(),
        Kind::Enum(e) => enum_names(e.names, (e.get)(config), d.has(flag::MULTI_ARG)).into_bytes(),
        Kind::Num(n) => format_number(&n, (n.get)(config)).into_bytes(),
        Kind::Special(s) => (s.get)(config),
    }
}

/// Sets a directive from its arguments; `Ok(true)` when the value changed (or is volatile).
pub fn set(
    config: &mut Config,
    d: &Directive,
    args: &[Vec<u8>],
    cx: SetContext,
) -> Result<bool, String> {
    let volatile = d.has(flag::VOLATILE);
    let changed = match d.kind {
        Kind::Bool(b) => {
            let value = match first(args).to_ascii_lowercase().as_slice() {
                b"yes" => true,
                b"no" => false,
                _ => return Err("argument must be 'yes' or 'no'".into()),
            };
            check(b.valid, value)?;
            let changed = (b.get)(config) != value;
            (b.set)(config, value);
            changed
        }
        Kind::Str(s) => set_string(config, &s, first(args))?,
        Kind::Enum(e) => {
            let value = enum_value(&e, args, d.has(flag::MULTI_ARG))?;
            check(e.valid, value)?;
            let changed = (e.get)(config) != value;
            (e.set)(config, value);
            changed
        }
        Kind::Num(n) => {
            let value = parse_number(&n, first(args))?;
            check_bounds(&n, value)?;
            check(n.valid, value)?;
            let changed = (n.get)(config) != value;
            (n.set)(config, value);
            changed
        }
        Kind::Special(s) => return (s.set)(config, args, cx),
    };
    Ok(changed || volatile)
}

fn first(args: &[Vec<u8>]) -> &[u8] {
    args.first().map_or(&[][..], Vec::as_slice)
}

fn check<T>(valid: super::Validator<T>, value: T) -> Result<(), String> {
    match valid {
        Some(valid) => valid(value).map_err(str::to_string),
        None => Ok(()),
    }
}

pub fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn set_string(config: &mut Config, s: &StrSpec, value: &[u8]) -> Result<bool, String> {
    // A C string ends at its first NUL: Redis validates and stores only that much.
    let value = if s.binary {
        value
    } else {
        value.split(|&b| b == 0).next().unwrap_or_default()
    };
    if let Some(valid) = s.valid {
        valid(value).map_err(str::to_string)?;
    }
    let changed = (s.get)(config) != value;
    (s.set)(config, value);
    Ok(changed)
}

/// The value of enum arguments: one name, or (bit flags) several OR-ed together.
fn enum_value(e: &EnumSpec, args: &[Vec<u8>], bitflags: bool) -> Result<i32, String> {
    let mut value = 0;
    let mut ok = !args.is_empty() && (bitflags || args.len() == 1);
    for arg in args {
        if !ok {
            break;
        }
        let matched: Vec<i32> = e
            .names
            .iter()
            .filter(|(name, _)| name.as_bytes().eq_ignore_ascii_case(arg))
            .map(|&(_, v)| v)
            .collect();
        ok = !matched.is_empty();
        value |= matched.iter().fold(0, |a, v| a | v);
    }
    if ok {
        return Ok(value);
    }
    let list: Vec<&str> = e.names.iter().map(|(n, _)| *n).collect();
    let mut text = format!(
        "argument(s) must be one of the following: {}",
        list.join(", ")
    );
    // Redis copies the text into a 256-byte buffer.
    text.truncate(255);
    Err(text)
}

/// The names of an enum value, as Redis's `configEnumGetName` (bit flags: every matching name,
/// highest first in table order; "unknown" when bits are left over).
pub fn enum_names(names: &[(&str, i32)], value: i32, bitflags: bool) -> String {
    let mut out: Option<String> = None;
    let mut unmatched = value;
    for &(name, v) in names {
        if value == v {
            return name.to_string();
        }
        if bitflags && v != 0 && v == (unmatched & v) {
            out = Some(match out {
                Some(s) => format!("{s} {name}"),
                None => name.to_string(),
            });
            unmatched &= !v;
        }
    }
    match out {
        Some(s) if unmatched == 0 => s,
        _ => "unknown".to_string(),
    }
}

/// The value of a single-valued enum's name (for enums kept as names in `Config`).
pub fn enum_value_of(names: &[(&str, i32)], name: &str) -> i32 {
    names
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map_or(0, |&(_, v)| v)
}

/// The first name of an enum value.
pub fn enum_name_of(names: &[(&'static str, i32)], value: i32) -> &'static str {
    names
        .iter()
        .find(|&&(_, v)| v == value)
        .map_or("unknown", |&(n, _)| n)
}

/// Parses a memory size with Redis's units (`memtoull`): digits, then nothing, `b`, `k`, `kb`,
/// `m`, `mb`, `g` or `gb` (any case). No digits is 0, as `strtoull` reads it; an overflowing
/// number saturates and the unit multiplies with wrap-around, as in C.
pub fn parse_memory(text: &[u8]) -> Option<u64> {
    if text.first() == Some(&b'-') {
        return None;
    }
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    let unit = text[digits..].to_ascii_lowercase();
    let mul: u64 = match unit.as_slice() {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1_000_000,
        b"mb" => 1 << 20,
        b"g" => 1_000_000_000,
        b"gb" => 1 << 30,
        _ => return None,
    };
    if digits >= 128 {
        return None;
    }
    let value = text[..digits].iter().fold(0u64, |acc, &d| {
        acc.checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .unwrap_or(u64::MAX)
    });
    Some(value.wrapping_mul(mul))
}

/// Redis's `string2ll`: an optional `-`, then digits without a leading zero (or "0" alone),
/// within `i64`.
pub fn string2ll(text: &[u8]) -> Option<i64> {
    if text == b"0" {
        return Some(0);
    }
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        if value > 1u64 << 63 {
            return None;
        }
        Some((value as i64).wrapping_neg())
    } else {
        i64::try_from(value).ok()
    }
}

/// `strtoll(text, &end, 8)` that must consume the whole text: leading blanks and a sign are
/// allowed, and an empty text is 0 (no digits leaves `end` at the start, which is its end).
fn parse_octal(text: &[u8]) -> Option<i64> {
    let rest = text.trim_ascii_start();
    let (negative, rest) = match rest.split_first() {
        Some((b'-', r)) => (true, r),
        Some((b'+', r)) => (false, r),
        _ => (false, rest),
    };
    let digits = rest
        .iter()
        .take_while(|b| (b'0'..=b'7').contains(b))
        .count();
    if digits == 0 {
        return text.is_empty().then_some(0);
    }
    if digits != rest.len() {
        return None;
    }
    let mut value: i128 = 0;
    for &d in rest {
        value = value * 8 + i128::from(d - b'0');
        if value > i128::from(i64::MAX) + 1 {
            return None;
        }
    }
    let value = if negative { -value } else { value };
    i64::try_from(value).ok()
}

/// Parses a number's text as Redis's `numericParseString`: a memory size, a percentage, an octal
/// number, or (only with no flag) a plain integer; the error names what was expected.
fn parse_number(n: &NumSpec, text: &[u8]) -> Result<i64, String> {
    if n.flags & num::MEMORY != 0
        && let Some(v) = parse_memory(text)
    {
        return Ok(v as i64);
    }
    if n.flags & num::PERCENT != 0
        && text.len() > 1
        && text.ends_with(b"%")
        && let Some(v) = string2ll(&text[..text.len() - 1])
        && v >= 0
    {
        return Ok(-v);
    }
    if n.flags & num::OCTAL != 0
        && let Some(v) = parse_octal(text)
    {
        return Ok(v);
    }
    if n.flags == num::INTEGER
        && let Some(v) = string2ll(text)
    {
        return Ok(v);
    }
    Err(
        if n.flags & num::MEMORY != 0 && n.flags & num::PERCENT != 0 {
            "argument must be a memory or percent value"
        } else if n.flags & num::MEMORY != 0 {
            "argument must be a memory value"
        } else if n.flags & num::OCTAL != 0 {
            "argument couldn't be parsed as an octal number"
        } else {
            "argument couldn't be parsed into an integer"
        }
        .into(),
    )
}

/// Redis's `numericBoundaryCheck`: unsigned types compare as unsigned, percentages (negative
/// values) against the lower bound only.
fn check_bounds(n: &NumSpec, v: i64) -> Result<(), String> {
    if matches!(n.ty, NumType::ULongLong | NumType::UInt | NumType::SizeT) {
        let (u, lo, hi) = (v as u64, n.lower as u64, n.upper as u64);
        if u > hi || u < lo {
            return Err(if n.flags & num::OCTAL != 0 {
                format!("argument must be between {lo:o} and {hi:o} inclusive")
            } else {
                format!("argument must be between {lo} and {hi} inclusive")
            });
        }
    } else if n.flags & num::PERCENT != 0 && v < 0 {
        if v < n.lower {
            return Err(format!(
                "percentage argument must be less or equal to {}",
                -n.lower
            ));
        }
    } else if v > n.upper || v < n.lower {
        return Err(format!(
            "argument must be between {} and {} inclusive",
            n.lower, n.upper
        ));
    }
    Ok(())
}

/// A number as CONFIG GET shows it.
pub fn format_number(n: &NumSpec, v: i64) -> String {
    if n.flags & num::PERCENT != 0 && v < 0 {
        format!("{}%", -v)
    } else if n.flags & num::MEMORY != 0 {
        (v as u64).to_string()
    } else if n.flags & num::OCTAL != 0 {
        format!("{:o}", v as u64)
    } else {
        v.to_string()
    }
}

/// A byte count as CONFIG REWRITE writes it (`rewriteConfigFormatMemory`): in gb, mb or kb when
/// it is a whole number of them. The value is a C `long long`, so sizes past `i64::MAX` print
/// as negative numbers, as Redis prints them.
pub fn format_memory(bytes: i64) -> String {
    const GB: i64 = 1 << 30;
    const MB: i64 = 1 << 20;
    const KB: i64 = 1 << 10;
    if bytes != 0 && bytes % GB == 0 {
        format!("{}gb", bytes / GB)
    } else if bytes != 0 && bytes % MB == 0 {
        format!("{}mb", bytes / MB)
    } else if bytes != 0 && bytes % KB == 0 {
        format!("{}kb", bytes / KB)
    } else {
        bytes.to_string()
    }
}

pub use resp::inline::repr;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units_as_memtoull() {
        assert_eq!(parse_memory(b"512mb"), Some(512 << 20));
        assert_eq!(parse_memory(b"1GB"), Some(1 << 30));
        assert_eq!(parse_memory(b"100k"), Some(100_000));
        assert_eq!(parse_memory(b"12"), Some(12));
        assert_eq!(parse_memory(b"7b"), Some(7));
        assert_eq!(parse_memory(b""), Some(0));
        assert_eq!(parse_memory(b"kb"), Some(0));
        assert_eq!(parse_memory(b"1xb"), None);
        assert_eq!(parse_memory(b"-1"), None);
        assert_eq!(parse_memory(b" 1"), None);
        assert_eq!(parse_memory(b"18446744073709551615"), Some(u64::MAX));
    }

    #[test]
    fn integers_as_string2ll() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b"9223372036854775808"[..],
            b"01",
            b"-0",
            b"+1",
            b"",
            b"-",
            b" 1",
            b"1 ",
        ] {
            assert_eq!(string2ll(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn octal_as_strtoll() {
        assert_eq!(parse_octal(b"777"), Some(0o777));
        assert_eq!(parse_octal(b""), Some(0));
        assert_eq!(parse_octal(b" +17"), Some(0o17));
        assert_eq!(parse_octal(b"-1"), Some(-1));
        assert_eq!(parse_octal(b"8"), None);
        assert_eq!(parse_octal(b" "), None);
    }

    #[test]
    fn memory_is_rewritten_in_the_largest_whole_unit() {
        assert_eq!(format_memory(0), "0");
        assert_eq!(format_memory(1 << 30), "1gb");
        assert_eq!(format_memory(3 << 20), "3mb");
        assert_eq!(format_memory(1536), "1536");
        assert_eq!(format_memory(2048), "2kb");
        assert_eq!(format_memory(-1), "-1");
    }

    #[test]
    fn bitflag_names() {
        let names = &[
            ("default", 0),
            ("save", 1),
            ("nosave", 2),
            ("now", 4),
            ("force", 8),
        ];
        assert_eq!(enum_names(names, 0, true), "default");
        assert_eq!(enum_names(names, 10, true), "nosave force");
        assert_eq!(enum_names(names, 16, true), "unknown");
    }

    #[test]
    fn repr_escapes_like_sdscatrepr() {
        assert_eq!(repr(b"a b"), "\"a b\"");
        assert_eq!(repr(b"q\"\\\n\x01"), "\"q\\\"\\\\\\n\\x01\"");
    }
}
