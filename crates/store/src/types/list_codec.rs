//! The entry codec of list chunks: one length per element, written on the side it is read from.
//!
//! ```text
//!  front entry:  [ len: LEB128 varint | bytes (len) ]             read head → tail
//!  back entry:   [ bytes (len) | len: LEB128 varint, reversed ]   read tail → head
//!                a 10-byte element takes 1 + 10 = 11 bytes either way (up to 127 bytes: +1)
//! ```
//! A back entry's varint is stored byte-reversed, so its first LEB128 byte is the entry's last
//! byte and a reader walking backwards meets it first (as a listpack's backlen). Redis's
//! listpack spends a length on both sides of every element (encoding byte and backlen) so that
//! one run can be read both ways; a chunk here is two runs instead (`list.rs`), a front run that
//! only needs reading forward and a back run that only needs reading backward, which halves the
//! overhead of short elements: `entry_size(n) == n + varint::len(n)`.
//!
//! Converting a run between the two forms keeps every entry's size and place: only its bytes
//! move, by the varint's length (`to_back`, `to_front`).

use maps::varint;

/// Bytes an entry holding `len` bytes takes, in either form.
#[inline]
pub fn entry_size(len: usize) -> usize {
    len + varint::len(len as u64)
}

/// Writes the varint of `n` into `dst` (exactly its length), byte-reversed when `reversed`.
#[inline]
fn put_len(dst: &mut [u8], n: usize, reversed: bool) {
    varint::put(dst, n as u64);
    if reversed {
        dst.reverse();
    }
}

/// Writes the front entry of `value` into `dst`, which is exactly `entry_size(value.len())` long.
#[inline]
pub(crate) fn encode_front(dst: &mut [u8], value: &[u8]) {
    let h = dst.len() - value.len();
    debug_assert_eq!(h, varint::len(value.len() as u64));
    put_len(&mut dst[..h], value.len(), false);
    dst[h..].copy_from_slice(value);
}

/// Writes the back entry of `value` into `dst`, which is exactly `entry_size(value.len())` long.
#[inline]
pub(crate) fn encode_back(dst: &mut [u8], value: &[u8]) {
    let n = value.len();
    debug_assert_eq!(dst.len() - n, varint::len(n as u64));
    dst[..n].copy_from_slice(value);
    put_len(&mut dst[n..], n, true);
}

/// The front entry starting at `at`: (value start, value length, entry end).
#[inline]
pub(crate) fn read_forward(buf: &[u8], at: usize) -> (usize, usize, usize) {
    let (n, h) = varint::get(&buf[at..]);
    let (v, n) = (at + h, n as usize);
    (v, n, v + n)
}

/// The back entry ending at `end`: (entry start, value length); the value starts the entry.
#[inline]
pub(crate) fn read_backward(buf: &[u8], end: usize) -> (usize, usize) {
    let b = buf[end - 1];
    if b < 0x80 {
        let n = b as usize;
        return (end - 1 - n, n);
    }
    let (mut n, mut shift, mut i) = (0usize, 0, end - 1);
    loop {
        let b = buf[i];
        n |= ((b & 0x7f) as usize) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
        i -= 1;
    }
    (i - n, n)
}

/// Rewrites the front entries filling `buf[from..to]` as back entries, in place: O(to − from).
pub(crate) fn to_back(buf: &mut [u8], from: usize, to: usize) {
    let mut at = from;
    while at < to {
        let (v, n, end) = read_forward(buf, at);
        buf.copy_within(v..end, at);
        put_len(&mut buf[at + n..end], n, true);
        at = end;
    }
    debug_assert_eq!(at, to);
}

/// Rewrites the back entries filling `buf[from..to]` as front entries, in place: O(to − from).
pub(crate) fn to_front(buf: &mut [u8], from: usize, to: usize) {
    let mut end = to;
    while end > from {
        let (start, n) = read_backward(buf, end);
        let h = end - start - n;
        buf.copy_within(start..start + n, start + h);
        put_len(&mut buf[start..start + h], n, false);
        end = start;
    }
    debug_assert_eq!(end, from);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_round_trips_every_length_class() {
        for n in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let value: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
            let s = entry_size(n);
            let mut buf = vec![0xAAu8; s + 4];
            encode_front(&mut buf[2..2 + s], &value);
            let (v, len, end) = read_forward(&buf, 2);
            assert_eq!((len, end), (n, 2 + s));
            assert_eq!(&buf[v..v + len], &value[..]);
            encode_back(&mut buf[2..2 + s], &value);
            let (start, len2) = read_backward(&buf, 2 + s);
            assert_eq!((start, len2), (2, n));
            assert_eq!(&buf[2..2 + n], &value[..]);
        }
    }

    #[test]
    fn runs_convert_both_ways_in_place() {
        let values: Vec<Vec<u8>> = [0usize, 5, 127, 128, 3000, 1]
            .iter()
            .map(|&n| (0..n).map(|i| (i % 251) as u8).collect())
            .collect();
        let total: usize = values.iter().map(|v| entry_size(v.len())).sum();
        let mut buf = vec![0u8; total + 2];
        let mut at = 1;
        for v in &values {
            encode_front(&mut buf[at..at + entry_size(v.len())], v);
            at += entry_size(v.len());
        }
        let front = buf.clone();
        to_back(&mut buf, 1, 1 + total);
        let mut end = 1 + total;
        for v in values.iter().rev() {
            let (start, n) = read_backward(&buf, end);
            assert_eq!(&buf[start..start + n], &v[..]);
            end = start;
        }
        assert_eq!(end, 1);
        to_front(&mut buf, 1, 1 + total);
        assert_eq!(buf, front);
    }
}
