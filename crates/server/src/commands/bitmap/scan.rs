//! The byte scans under BITCOUNT and BITPOS: how many bits are set in a run of bytes, and where
//! the first set (or clear) bit is. Bit `n` of a run is bit `7 - n % 8` of byte `n / 8`: the first
//! bit is the most significant bit of the first byte, as in Redis's `bitops.c`.
//!
//! `popcount` is the one platform variant: on x86-64 with AVX2 the same loop is compiled with
//! AVX2 and POPCNT enabled, where LLVM counts 32 bytes per step with byte-table lookups
//! (`vpshufb`); elsewhere it is the portable build of that loop. Both count four independent
//! 64-bit words per step, so the adds do not wait on one another. The choice is made once per
//! call, by the standard library's cached CPU feature check.

/// How many bits of `bytes` are set.
pub fn popcount(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt")
    {
        // SAFETY: `popcount_avx2` only enables AVX2 and POPCNT, which this CPU has (checked
        // just above).
        return unsafe { popcount_avx2(bytes) };
    }
    popcount_words(bytes)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn popcount_avx2(bytes: &[u8]) -> u64 {
    popcount_words(bytes)
}

/// The counting loop both variants compile: 32 bytes a step as four words, then the tail.
#[inline(always)]
fn popcount_words(bytes: &[u8]) -> u64 {
    let mut steps = bytes.chunks_exact(32);
    let mut sums = [0u64; 4];
    for step in &mut steps {
        for (i, sum) in sums.iter_mut().enumerate() {
            let word = u64::from_le_bytes(step[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            *sum += u64::from(word.count_ones());
        }
    }
    let tail: u64 = steps
        .remainder()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum();
    sums.iter().sum::<u64>() + tail
}

/// Redis's `redisBitpos`: the position of the first bit equal to `bit` in `bytes`. Looking for
/// a clear bit in bytes that are all ones gives the position just past them (`bytes.len() × 8`:
/// the string reads as zero-padded on the right); looking for a set bit where there is none
/// gives `None`.
pub fn first_bit(bytes: &[u8], bit: bool) -> Option<u64> {
    let skip = if bit { 0u8 } else { 0xff };
    // Whole words first: runs of zeros (or ones) are skipped eight bytes at a time.
    let mut words = bytes.chunks_exact(8);
    let mut at = 0usize;
    for word in &mut words {
        if word.iter().any(|&b| b != skip) {
            break;
        }
        at += 8;
    }
    let Some(i) = bytes[at..].iter().position(|&b| b != skip) else {
        return (!bit).then_some(bytes.len() as u64 * 8);
    };
    let byte = bytes[at + i];
    let within = if bit {
        byte.leading_zeros()
    } else {
        byte.leading_ones()
    };
    Some((at + i) as u64 * 8 + u64::from(within))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_count(bytes: &[u8]) -> u64 {
        bytes.iter().map(|b| u64::from(b.count_ones())).sum()
    }

    fn naive_first(bytes: &[u8], bit: bool) -> Option<u64> {
        let found = (0..bytes.len() * 8).find(|&n| ((bytes[n / 8] >> (7 - n % 8)) & 1 == 1) == bit);
        match found {
            Some(n) => Some(n as u64),
            None if !bit => Some(bytes.len() as u64 * 8),
            None => None,
        }
    }

    /// Both scans agree with bit-by-bit versions on every length up to 100 and many patterns,
    /// at every alignment.
    #[test]
    fn scans_agree_with_naive_versions() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut buf = vec![0u8; 200];
        for len in 0..100 {
            for pattern in 0..12 {
                for b in &mut buf {
                    *b = match pattern {
                        1 => 0xff,
                        2..=5 => (next() % 256) as u8,
                        _ => 0,
                    };
                }
                if pattern >= 6 && len > 0 {
                    let n = (next() as usize) % (len * 8);
                    buf[1 + n / 8] |= 0x80 >> (n % 8);
                    if pattern >= 9 {
                        buf[1..=len].iter_mut().for_each(|b| *b = !*b);
                    }
                }
                let bytes = &buf[1..=len];
                assert_eq!(popcount(bytes), naive_count(bytes), "{len} {pattern}");
                assert_eq!(popcount_words(bytes), naive_count(bytes));
                for bit in [false, true] {
                    assert_eq!(
                        first_bit(bytes, bit),
                        naive_first(bytes, bit),
                        "{len} {bit}"
                    );
                }
            }
        }
    }
}
