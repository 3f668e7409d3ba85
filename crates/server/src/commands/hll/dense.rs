//! The dense HyperLogLog registers: 16384 six-bit counters packed little-endian, bit 0 of the
//! first register at bit 0 of the first byte, 12288 bytes after the 16-byte header.
//!
//! ```text
//!  byte:   0        1        2        3
//!        +--------+--------+--------+--------+--
//!        |11000000|22221111|33333322|55444444| …   (bit 7 on the left; digit = register)
//!        +--------+--------+--------+--------+--
//!  register i: bits 6·i … 6·i + 5  →  byte 6·i / 8, shifted right by 6·i mod 8
//! ```
//!
//! Every function takes the register bytes alone (`registers.len() == DENSE_REGISTER_BYTES`).
//! Redis's macros read and write one byte past a register's first byte, which for the last
//! register is the sds string's NUL terminator: only its zero bits are ever involved (the last
//! register starts at bit 2 of the last byte and fits in it), so here the byte past the end
//! reads as 0 and is never written.

use super::repr::{DENSE_REGISTER_BYTES, REGISTER_MAX, REGISTERS};

/// The value of register `index` (Redis's `HLL_DENSE_GET_REGISTER`).
#[inline]
pub fn get(registers: &[u8], index: usize) -> u8 {
    let byte = index * 6 / 8;
    let shift = (index * 6) & 7;
    let b0 = u32::from(registers[byte]);
    let b1 = u32::from(registers.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> shift) | (b1 << (8 - shift))) & u32::from(REGISTER_MAX)) as u8
}

/// Sets register `index` to `value` (≤ 63; Redis's `HLL_DENSE_SET_REGISTER`).
#[inline]
pub fn set(registers: &mut [u8], index: usize, value: u8) {
    debug_assert!(value <= REGISTER_MAX);
    let byte = index * 6 / 8;
    let shift = (index * 6) & 7;
    let v = u32::from(value);
    let mask = u32::from(REGISTER_MAX);
    registers[byte] = ((u32::from(registers[byte]) & !(mask << shift)) | (v << shift)) as u8;
    if let Some(next) = registers.get_mut(byte + 1) {
        let spill = 8 - shift;
        *next = ((u32::from(*next) & !(mask >> spill)) | (v >> spill)) as u8;
    }
}

/// `hllDenseSet`: raises register `index` to `count` when it is lower; true when it changed.
#[inline]
pub fn raise(registers: &mut [u8], index: usize, count: u8) -> bool {
    if count > get(registers, index) {
        set(registers, index, count);
        true
    } else {
        false
    }
}

/// Adds each register's value to `histogram` (`hllDenseRegHisto`), twelve bytes (sixteen
/// registers) at a time as Redis unrolls it.
pub fn histogram(registers: &[u8], histogram: &mut [u32; 64]) {
    debug_assert_eq!(registers.len(), DENSE_REGISTER_BYTES);
    for r in registers.chunks_exact(12) {
        let r: [u32; 12] = std::array::from_fn(|i| u32::from(r[i]));
        let values = [
            r[0],
            r[0] >> 6 | r[1] << 2,
            r[1] >> 4 | r[2] << 4,
            r[2] >> 2,
            r[3],
            r[3] >> 6 | r[4] << 2,
            r[4] >> 4 | r[5] << 4,
            r[5] >> 2,
            r[6],
            r[6] >> 6 | r[7] << 2,
            r[7] >> 4 | r[8] << 4,
            r[8] >> 2,
            r[9],
            r[9] >> 6 | r[10] << 2,
            r[10] >> 4 | r[11] << 4,
            r[11] >> 2,
        ];
        for v in values {
            histogram[(v & 63) as usize] += 1;
        }
    }
}

/// Raises `max[i]` to register `i` for every register (`hllMerge`'s dense case).
pub fn merge_into(registers: &[u8], max: &mut [u8; REGISTERS]) {
    for (i, m) in max.iter_mut().enumerate() {
        let value = get(registers, i);
        if value > *m {
            *m = value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Setting a register changes it and no other (PFSELFTEST's first test, with a model).
    #[test]
    fn registers_are_independent() {
        let mut registers = vec![0u8; DENSE_REGISTER_BYTES];
        let mut model = vec![0u8; REGISTERS];
        let mut state = 0x1234_5678_u64;
        for step in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let index = (state % REGISTERS as u64) as usize;
            let value = ((state >> 20) & 63) as u8;
            set(&mut registers, index, value);
            model[index] = value;
            assert_eq!(get(&registers, index), value);
            if step % 20_000 == 0 {
                for (i, &m) in model.iter().enumerate() {
                    assert_eq!(get(&registers, i), m, "register {i}");
                }
                let mut h = [0u32; 64];
                histogram(&registers, &mut h);
                let mut expected = [0u32; 64];
                for &m in &model {
                    expected[m as usize] += 1;
                }
                assert_eq!(h, expected);
            }
        }
    }

    #[test]
    fn last_register_fits_its_byte() {
        let mut registers = vec![0u8; DENSE_REGISTER_BYTES];
        set(&mut registers, REGISTERS - 1, 63);
        assert_eq!(registers[DENSE_REGISTER_BYTES - 1], 0b1111_1100);
        assert_eq!(get(&registers, REGISTERS - 1), 63);
        assert_eq!(get(&registers, REGISTERS - 2), 0);
        assert!(!raise(&mut registers, REGISTERS - 1, 5));
        assert!(raise(&mut registers, 0, 5));
    }
}
