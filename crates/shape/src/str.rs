//! A Redis string as densekv stores it: bytes, or an integer kept in binary because its text is
//! the canonical decimal form of an i64 (Redis's `OBJ_ENCODING_INT`, listpack's integer entries).
//!
//! ```text
//!  text                 Str                  why
//!  "42", "-7", "0"      Int(42), Int(-7)…    canonical: no sign but `-`, no leading zero, not "-0"
//!  "007", "+1", "-0"    Bytes(…)             not canonical: reading back must give the same bytes
//!  "1e3", " 1", ""      Bytes(…)
//! ```
//! Every layer that keeps values (records here, the store's strings, sets and hashes) uses this
//! one type and this one test, so a value reads back byte for byte wherever it was stored.

/// A string value as stored: borrowed bytes, or an integer whose decimal text is the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Str<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

/// Bytes of the longest i64 in decimal (`-9223372036854775808`).
pub const I64_TEXT_BYTES_MAX: usize = 20;

impl Str<'_> {
    /// Appends the value's bytes (an integer in decimal) to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match *self {
            Str::Int(i) => out.extend_from_slice(format_i64(&mut [0; I64_TEXT_BYTES_MAX], i)),
            Str::Bytes(bytes) => out.extend_from_slice(bytes),
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        self.write_to(&mut out);
        out
    }

    /// Calls `f` with the value's text, formatting an integer on the stack.
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match *self {
            Str::Int(i) => f(format_i64(&mut [0; I64_TEXT_BYTES_MAX], i)),
            Str::Bytes(bytes) => f(bytes),
        }
    }

    /// Length of the value's text (STRLEN, HSTRLEN).
    pub fn len(&self) -> usize {
        match *self {
            Str::Int(i) => {
                let digits = i
                    .unsigned_abs()
                    .checked_ilog10()
                    .map_or(1, |d| d as usize + 1);
                digits + usize::from(i < 0)
            }
            Str::Bytes(bytes) => bytes.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The integer the value's text is the canonical form of.
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            Str::Int(i) => Some(i),
            Str::Bytes(b) => canonical_i64(b),
        }
    }
}

/// The i64 whose canonical decimal form is exactly `bytes` (Redis's `string2ll`).
pub fn canonical_i64(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    if digits.is_empty()
        || digits.len() > 19
        || (digits[0] == b'0' && (digits.len() > 1 || negative))
    {
        return None;
    }
    let mut value: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(d - b'0');
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some(value)
}

/// Writes `v` in decimal at the end of `buf` and returns that text (no allocation).
pub fn format_i64(buf: &mut [u8; I64_TEXT_BYTES_MAX], v: i64) -> &[u8] {
    let mut n = v.unsigned_abs();
    let mut at = buf.len();
    // Bounded: a u64 has at most 20 digits.
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        // i64::MIN has 19 digits, so there is room for the sign.
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_format_and_parse_back() {
        for i in [0, -1, 7, 10, i64::MIN, i64::MAX, -1_000_000] {
            let mut buf = [0; I64_TEXT_BYTES_MAX];
            let text = format_i64(&mut buf, i);
            assert_eq!(text, i.to_string().as_bytes());
            assert_eq!(canonical_i64(text), Some(i));
            assert_eq!(Str::Int(i).len(), text.len());
            assert_eq!(Str::Int(i).to_vec(), text);
        }
        for not in [
            &b"-0"[..],
            b"007",
            b"+1",
            b"",
            b"-",
            b"1e3",
            b" 1",
            b"9223372036854775808",
        ] {
            assert_eq!(canonical_i64(not), None, "{not:?}");
        }
        assert_eq!(Str::Bytes(b"12").as_int(), Some(12));
    }
}
