//! Redis's CRC-64: the checksum at the end of every RDB file and DUMP payload.
//!
//! The parameters are those of Redis's `crc64.c` ("CRC-64-Jones" as pycrc names it):
//!
//! ```text
//! polynomial  0xad93d23594c935a9   (normal form; 0x95ac9329ac4bc9b5 bit-reversed)
//! reflected   input and output     (bits are processed least significant first)
//! initial     the `crc` argument   (Redis starts a file or payload at 0)
//! final xor   none
//! check       crc64(0, b"123456789") == 0xe9c6d914c4b8d9ca
//! ```
//!
//! Because there is no final xor and no initial inversion, the value returned for one piece is
//! exactly the state to continue from: `crc64(crc64(0, a), b) == crc64(0, a ++ b)`. The RDB
//! writer relies on that to checksum a file as it streams out.
//!
//! The RDB and DUMP trailers store the result as 8 bytes little-endian.
//!
//! The loop is slicing-by-8, as Redis's `crcspeed.c`: eight 256-entry tables (16 KiB, built at
//! compile time) fold eight input bytes per step instead of one. Table 0 is the classic
//! byte-at-a-time table; table `k` advances an entry of table `k - 1` by one more zero byte.
//! `TABLES[k][i] == crc of byte i followed by k zero bytes`, which is what lets the eight
//! lookups of one step be xored together.

/// The Jones polynomial, bit-reversed for the reflected (LSB-first) algorithm.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

/// Slicing-by-8 tables; see the module comment for the invariant each one satisfies.
static TABLES: [[u64; 256]; 8] = build_tables();

const fn build_tables() -> [[u64; 256]; 8] {
    let mut tables = [[0u64; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        tables[0][i] = crc;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = tables[k - 1][i];
            tables[k][i] = (prev >> 8) ^ tables[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    tables
}

/// Continues Redis's CRC-64 from `crc` over `data` (start with 0, as Redis does).
pub fn crc64(crc: u64, data: &[u8]) -> u64 {
    let mut crc = crc;
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        // Little-endian: the first byte of the chunk is the one the next table step consumes.
        let x = crc ^ u64::from_le_bytes(word);
        crc = TABLES[7][(x & 0xff) as usize]
            ^ TABLES[6][((x >> 8) & 0xff) as usize]
            ^ TABLES[5][((x >> 16) & 0xff) as usize]
            ^ TABLES[4][((x >> 24) & 0xff) as usize]
            ^ TABLES[3][((x >> 32) & 0xff) as usize]
            ^ TABLES[2][((x >> 40) & 0xff) as usize]
            ^ TABLES[1][((x >> 48) & 0xff) as usize]
            ^ TABLES[0][(x >> 56) as usize];
    }
    for &byte in chunks.remainder() {
        crc = (crc >> 8) ^ TABLES[0][((crc ^ byte as u64) & 0xff) as usize];
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// One bit at a time, straight from the definition: the reference the tables must match.
    fn crc64_bitwise(mut crc: u64, data: &[u8]) -> u64 {
        for &byte in data {
            crc ^= byte as u64;
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ POLY_REFLECTED
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    #[test]
    fn check_value_from_redis() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn lorem_ipsum_vector_from_redis() {
        // crc64.c's second test vector; Redis passes sizeof(li), so the trailing NUL counts.
        let li = b"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed \
            do eiusmod tempor incididunt ut labore et dolore magna \
            aliqua. Ut enim ad minim veniam, quis nostrud exercitation \
            ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis \
            aute irure dolor in reprehenderit in voluptate velit esse \
            cillum dolore eu fugiat nulla pariatur. Excepteur sint \
            occaecat cupidatat non proident, sunt in culpa qui officia \
            deserunt mollit anim id est laborum.\0";
        assert_eq!(crc64(0, li), 0xc779_4709_e696_83b3);
    }

    #[test]
    fn dump_payload_trailer_from_redis() {
        // `SET k hello` then `DUMP k` on redis-server 7.0.15: the last 8 bytes are the CRC-64
        // (little-endian) of everything before them.
        let dump = [
            0x00, 0x05, b'h', b'e', b'l', b'l', b'o', 0x0a, 0x00, 0x63, 0x72, 0xdf, 0x76, 0x65,
            0x34, 0x20, 0x0a,
        ];
        let (body, trailer) = dump.split_at(dump.len() - 8);
        assert_eq!(
            crc64(0, body),
            u64::from_le_bytes(trailer.try_into().unwrap())
        );
    }

    #[test]
    fn empty_input_keeps_the_state() {
        assert_eq!(crc64(0, b""), 0);
        assert_eq!(crc64(0x1234, b""), 0x1234);
    }

    #[test]
    fn two_pieces_equal_one_call() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let whole = crc64(0, &data);
        for split in [0, 1, 7, 8, 9, 100, 999, 1000] {
            let (a, b) = data.split_at(split);
            assert_eq!(crc64(crc64(0, a), b), whole, "split at {split}");
        }
    }

    #[test]
    fn tables_agree_with_bitwise_reference() {
        let mut rng = SmallRng::seed_from_u64(0x00c0_ffee);
        for len in 0..200 {
            let data: Vec<u8> = (0..len).map(|_| rng.r#gen()).collect();
            let seed: u64 = if len % 2 == 0 { 0 } else { rng.r#gen() };
            assert_eq!(crc64(seed, &data), crc64_bitwise(seed, &data), "len {len}");
        }
    }
}
