//! Argument parsing shared by the command families: option words, integers as Redis reads them,
//! SCAN cursors and the SCAN family's options; and the words and numbers of the commands a
//! handler writes to the append-only file instead of itself (`Ctx::propagate_as`).

use store::glob::Glob;

/// `arg` equals `word`, ignoring ASCII case (option names).
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// An integer argument as Redis's `string2ll` reads it (the canonical decimal form of an i64).
pub fn parse_i64(arg: &[u8]) -> Option<i64> {
    store::canonical_i64(arg)
}

/// The reply for an argument that is not an integer (`getLongLongFromObjectOrReply`).
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// The reply for a count of `i64::MIN`, which Redis cannot negate.
pub const COUNT_OUT_OF_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";

/// Reads a SCAN cursor as Redis's `parseScanCursorOrReply` does with `strtoul`: optional sign
/// (a negative cursor wraps, "-1" is 2^64 - 1), decimal digits, nothing after them, no leading
/// space; the empty string is cursor 0 and a value above 2^64 - 1 is invalid.
pub fn parse_cursor(arg: &[u8]) -> Option<u64> {
    let (negative, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() {
        // No digits: strtoul consumes nothing, so only an empty argument ends at its NUL.
        return arg.is_empty().then_some(0);
    }
    let mut value: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// The options of SCAN, HSCAN, SSCAN and ZSCAN.
#[derive(Debug)]
pub struct ScanOptions {
    /// `None` for no pattern, or one that matches everything.
    pub glob: Option<Glob>,
    pub count: usize,
    /// SCAN's TYPE, lowercased.
    pub kind: Option<Vec<u8>>,
}

impl ScanOptions {
    /// Whether `key` passes MATCH.
    pub fn matches(&self, key: &[u8]) -> bool {
        self.glob.as_ref().is_none_or(|g| g.matches(key))
    }
}

/// Parses the `MATCH pattern`, `COUNT n` (and, with `with_type`, `TYPE name`) pairs of `options`,
/// as `scanGenericCommand` does: `Err` holds the error reply.
pub fn scan_options(options: &[&[u8]], with_type: bool) -> Result<ScanOptions, &'static str> {
    let mut parsed = ScanOptions {
        glob: None,
        count: 10,
        kind: None,
    };
    for pair in options.chunks(2) {
        let [name, value] = pair else {
            return Err("ERR syntax error");
        };
        if is(name, "count") {
            match parse_i64(value) {
                Some(n) if n >= 1 => parsed.count = usize::try_from(n).unwrap_or(usize::MAX),
                Some(_) => return Err("ERR syntax error"),
                None => return Err(NOT_INTEGER),
            }
        } else if is(name, "match") {
            let g = Glob::new(value);
            parsed.glob = (!g.is_everything()).then_some(g);
        } else if with_type && is(name, "type") {
            parsed.kind = Some(value.to_ascii_lowercase());
        } else {
            return Err("ERR syntax error");
        }
    }
    Ok(parsed)
}

/// The word a deletion is written to the append-only file as when Redis picks it by a
/// `lazyfree-lazy-*` option (`lazy`): UNLINK, else DEL (`shared.unlink` / `shared.del`).
pub fn deletion(lazy: bool) -> &'static [u8] {
    if lazy { b"UNLINK" } else { b"DEL" }
}

/// An integer as the decimal text Redis writes into a rewritten command
/// (`createStringObjectFromLongLong`): absolute expire times, pop counts.
pub fn decimal(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_options_parse_as_redis_does() {
        let o = scan_options(&[b"COUNT", b"5", b"match", b"a*"], false).unwrap();
        assert_eq!(o.count, 5);
        assert!(o.matches(b"abc") && !o.matches(b"b"));
        assert_eq!(
            scan_options(&[b"count"], false).unwrap_err(),
            "ERR syntax error"
        );
        assert_eq!(
            scan_options(&[b"count", b"0"], false).unwrap_err(),
            "ERR syntax error"
        );
        assert_eq!(
            scan_options(&[b"count", b"x"], false).unwrap_err(),
            NOT_INTEGER
        );
        assert_eq!(
            scan_options(&[b"type", b"set"], false).unwrap_err(),
            "ERR syntax error"
        );
        assert_eq!(
            scan_options(&[b"TYPE", b"Set"], true)
                .unwrap()
                .kind
                .as_deref(),
            Some(&b"set"[..])
        );
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b" 1"), None);
        assert_eq!(parse_cursor(b"18446744073709551616"), None);
    }
}
