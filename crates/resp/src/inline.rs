//! Inline requests: `sdssplitargs` from Redis 7.0 `sds.c`, reproduced rule for rule.
//!
//! An inline request is one line (`PING\r\n`, `SET k "a b"\n`) as typed into telnet or sent by
//! `redis-cli` for some commands. The parser (`parser.rs`) finds the line and hands its bytes,
//! without the line ending, to [`split_args`], which tokenises it:
//!
//! ```text
//!   blanks      C isspace: ' ' \t \n \v \f \r      skipped between arguments
//!   unquoted    ends at ' ' \n \r \t or end        (NOT at \v or \f: "a\vb" is one argument)
//!   "…"         escapes \n \r \t \b \a, \xHH (two hex digits, either case), \<any> = <any>
//!   '…'         only \' is an escape; every other byte is literal
//!   quote       closing quote must be followed by a blank or the end, else unbalanced quotes
//!   mid-word    a quote inside a word opens quoting for the same argument: a"b c" -> `ab c`
//! ```
//!
//! The C code walks a NUL-terminated string, so a NUL ends the line wherever it is. The parser
//! never passes a NUL (Redis's `strchr` line search stops there, and so does ours), but
//! [`split_args`] is public, so it truncates at the first NUL itself to keep the C semantics for
//! any input.
//!
//! Output layout: every argument's unescaped bytes are appended to one caller-owned `Vec<u8>`
//! and its range recorded, so a line of n arguments costs two amortised buffers, not n
//! allocations. Work is O(line length): every step consumes at least one byte or ends a token.

use std::ops::Range;

use crate::ProtocolError;

/// C `isspace` in the "C" locale (Redis never changes `LC_CTYPE`).
fn is_c_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// The byte of `line` at `i`, or NUL past its end.
fn byte_at(line: &[u8], i: usize) -> u8 {
    // Reading past the end yields NUL, as the C code reads the terminator.
    line.get(i).copied().unwrap_or(0)
}

/// Consumes the byte or escape at `p` inside double quotes, appending the byte it stands for;
/// returns the position of its last byte and whether it was the closing quote.
fn double_quoted_step(
    line: &[u8],
    mut p: usize,
    bytes: &mut Vec<u8>,
) -> Result<(usize, bool), ProtocolError> {
    let at = |i: usize| byte_at(line, i);
    let c = at(p);
    let escaped_hex = (c == b'\\' && at(p + 1) == b'x')
        .then(|| Some(hex_value(at(p + 2))? * 16 + hex_value(at(p + 3))?))
        .flatten();
    if let Some(byte) = escaped_hex {
        bytes.push(byte);
        p += 3;
    } else if c == b'\\' && at(p + 1) != 0 {
        p += 1;
        bytes.push(match at(p) {
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'b' => 0x08,
            b'a' => 0x07,
            other => other,
        });
    } else if c == b'"' {
        if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
            return Err(ProtocolError::UnbalancedQuotes);
        }
        return Ok((p, true));
    } else if c == 0 {
        return Err(ProtocolError::UnbalancedQuotes);
    } else {
        bytes.push(c);
    }
    Ok((p, false))
}

/// Consumes the byte or escape at `p` inside single quotes, appending the byte it stands for;
/// returns the position of its last byte and whether it was the closing quote.
fn single_quoted_step(
    line: &[u8],
    mut p: usize,
    bytes: &mut Vec<u8>,
) -> Result<(usize, bool), ProtocolError> {
    let at = |i: usize| byte_at(line, i);
    let c = at(p);
    if c == b'\\' && at(p + 1) == b'\'' {
        p += 1;
        bytes.push(b'\'');
    } else if c == b'\'' {
        if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
            return Err(ProtocolError::UnbalancedQuotes);
        }
        return Ok((p, true));
    } else if c == 0 {
        return Err(ProtocolError::UnbalancedQuotes);
    } else {
        bytes.push(c);
    }
    Ok((p, false))
}

/// Redis's `sdstrim(line, " \t\r\n")`: the line without leading and trailing blanks (config
/// files and AOF manifests are trimmed so before they are split).
pub fn trim_blanks(line: &[u8]) -> &[u8] {
    let blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let start = line.iter().position(|b| !blank(b)).unwrap_or(line.len());
    let end = line
        .iter()
        .rposition(|b| !blank(b))
        .map_or(start, |e| e + 1);
    &line[start..end]
}

/// Splits one inline line into arguments with `sdssplitargs` rules.
///
/// Appends each argument's bytes to `bytes` and its range (into `bytes`) to `spans`. An empty or
/// all-blank line yields no argument. On `Err(UnbalancedQuotes)` the outputs hold a partial
/// result that the caller discards along with the connection.
pub fn split_args(
    line: &[u8],
    bytes: &mut Vec<u8>,
    spans: &mut Vec<Range<usize>>,
) -> Result<(), ProtocolError> {
    let line = match line.iter().position(|&b| b == 0) {
        Some(nul) => &line[..nul],
        None => line,
    };
    let at = |i: usize| byte_at(line, i);
    let mut p = 0;
    loop {
        while at(p) != 0 && is_c_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Ok(());
        }
        let start = bytes.len();
        let mut in_double = false;
        let mut in_single = false;
        let mut done = false;
        while !done {
            let c = at(p);
            if in_double {
                (p, done) = double_quoted_step(line, p, bytes)?;
            } else if in_single {
                (p, done) = single_quoted_step(line, p, bytes)?;
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    _ => bytes.push(c),
                }
            }
            if at(p) != 0 {
                p += 1;
            }
        }
        spans.push(start..bytes.len());
    }
}

/// Redis's `sdscatrepr`: a double-quoted string with `\\ \" \n \r \t \a \b` escaped and other
/// unprintable bytes as `\xHH`, so `sdssplitargs` reads it back unchanged.
pub fn repr(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = std::fmt::Write::write_fmt(&mut out, format_args!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

/// Redis's `sdsneedsrepr`: whether `bytes` holds a space, a double quote, a backslash or an
/// unprintable byte, and so is written quoted (`repr`) where `split_args` reads it back.
pub fn needs_repr(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .any(|&b| matches!(b, b'\\' | b'"') || !(0x21..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::{needs_repr, repr, split_args};
    use crate::ProtocolError;

    #[test]
    fn repr_escapes_like_sdscatrepr() {
        assert_eq!(repr(b"a b"), "\"a b\"");
        assert_eq!(repr(b"q\"\\\n\x01"), "\"q\\\"\\\\\\n\\x01\"");
        assert!(
            needs_repr(b"a b") && needs_repr(b"a\x7f") && !needs_repr(b"appendonly.aof.1.base.rdb")
        );
        let (mut bytes, mut spans) = (Vec::new(), Vec::new());
        let original = b"q\"\\\n\x01 x";
        split_args(repr(original).as_bytes(), &mut bytes, &mut spans).expect("repr splits");
        assert_eq!(spans.len(), 1);
        assert_eq!(&bytes[spans[0].clone()], original);
    }

    fn split(line: &[u8]) -> Result<Vec<Vec<u8>>, ProtocolError> {
        let mut bytes = Vec::new();
        let mut spans = Vec::new();
        split_args(line, &mut bytes, &mut spans)?;
        Ok(spans.into_iter().map(|r| bytes[r].to_vec()).collect())
    }

    fn ok(line: &[u8], expected: &[&[u8]]) {
        let got = split(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        let expected: Vec<Vec<u8>> = expected.iter().map(|a| a.to_vec()).collect();
        assert_eq!(got, expected, "line {:?}", String::from_utf8_lossy(line));
    }

    fn unbalanced(line: &[u8]) {
        assert_eq!(
            split(line),
            Err(ProtocolError::UnbalancedQuotes),
            "line {:?}",
            String::from_utf8_lossy(line)
        );
    }

    #[test]
    fn plain_words_and_blanks() {
        ok(b"", &[]);
        ok(b"   \t ", &[]);
        ok(b"PING", &[b"PING"]);
        ok(b"  set  key   value  ", &[b"set", b"key", b"value"]);
        ok(b"a\tb", &[b"a", b"b"]);
        // \v and \f are skipped as leading blanks but do not end an unquoted word.
        ok(b"\x0b\x0ca\x0bb\x0cc d", &[b"a\x0bb\x0cc", b"d"]);
        ok(b"a\rb", &[b"a", b"b"]);
        ok(b"\xff\xfe x", &[b"\xff\xfe", b"x"]);
    }

    #[test]
    fn double_quote_escapes() {
        ok(br#"set k "a b""#, &[b"set", b"k", b"a b"]);
        ok(br#""\n\r\t\b\a\\\"\q""#, &[b"\n\r\t\x08\x07\\\"q"]);
        ok(br#""\x41\x7a\xFF\x00""#, &[b"Az\xff\x00"]);
        // Not two hex digits: the backslash escapes the 'x' itself.
        ok(br#""\x4g""#, &[b"x4g"]);
        ok(br#""\x4""#, &[b"x4"]);
        ok(br#""""#, &[b""]);
        ok(br#""" """#, &[b"", b""]);
        ok(b"\"a\"\x0bb", &[b"a", b"b"]);
    }

    #[test]
    fn single_quote_escapes() {
        ok(br"'a b'", &[b"a b"]);
        ok(br"'it\'s'", &[b"it's"]);
        ok(br"'\n\x41'", &[br"\n\x41"]);
        ok(br"''", &[b""]);
    }

    #[test]
    fn quote_inside_a_word_continues_the_word() {
        ok(br#"a"b c""#, &[b"ab c"]);
        ok(br"x'y z' w", &[b"xy z", b"w"]);
    }

    #[test]
    fn unbalanced_quotes() {
        unbalanced(br#"""#);
        unbalanced(br#"set k "abc"#);
        unbalanced(br#""foo"bar"#);
        unbalanced(br"'foo'bar");
        unbalanced(br"'abc");
        unbalanced(br#""abc\"#);
        unbalanced(br"'abc\'");
        unbalanced(br#""a"""#);
    }

    #[test]
    fn nul_ends_the_line() {
        ok(b"a b\0c", &[b"a", b"b"]);
        unbalanced(b"\"a\0\"");
    }
}
