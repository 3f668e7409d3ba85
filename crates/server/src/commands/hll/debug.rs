//! PFDEBUG and PFSELFTEST, Redis 7.0's HyperLogLog debugging commands.
//!
//! ```text
//!  PFDEBUG GETREG key    the 16384 registers (a sparse HLL is made dense first, and stays so)
//!  PFDEBUG DECODE key    a sparse HLL's opcodes: "Z:16384", "z:19 v:3,2 …"
//!  PFDEBUG ENCODING key  +dense or +sparse
//!  PFDEBUG TODENSE key   1 when it made a sparse HLL dense, else 0
//!  PFSELFTEST            +OK, or -ERR TESTFAILED …
//! ```
//!
//! PFDEBUG looks the key up and checks it before it reads the subcommand, so an unknown
//! subcommand on a missing key is "The specified key does not exist", as in Redis.

use super::repr::{self, DENSE_BYTES, DENSE_REGISTER_BYTES, Encoding, HEADER_BYTES, REGISTERS};
use super::{CORRUPT, Lookup, dense, sparse, unshare, with_hll};
use crate::command::Ctx;

pub fn pfdebug(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (sub, key) = (args[1], args[2]);
    let held = with_hll(ctx, key, Lookup::Write, |hll, encoding| {
        (hll.to_vec(), encoding)
    });
    let Some(held) = held else { return };
    let Some((hll, encoding)) = held else {
        return ctx.error("ERR The specified key does not exist");
    };
    unshare(ctx, key, hll.len());
    if sub.eq_ignore_ascii_case(b"getreg") {
        if let Some(dense) = densify(ctx, key, hll, encoding) {
            ctx.out.array_len(REGISTERS);
            for index in 0..REGISTERS {
                let value = dense::get(&dense[HEADER_BYTES..], index);
                ctx.out.integer(i64::from(value));
            }
        }
    } else if sub.eq_ignore_ascii_case(b"decode") {
        if encoding == Encoding::Sparse {
            ctx.out.bulk(&sparse::decode(&hll));
        } else {
            ctx.error("ERR HLL encoding is not sparse");
        }
    } else if sub.eq_ignore_ascii_case(b"encoding") {
        let name: &[u8] = if encoding == Encoding::Dense {
            b"dense"
        } else {
            b"sparse"
        };
        ctx.out.simple(name);
    } else if sub.eq_ignore_ascii_case(b"todense") {
        let was_sparse = encoding == Encoding::Sparse;
        if densify(ctx, key, hll, encoding).is_some() {
            ctx.out.integer(i64::from(was_sparse));
        }
    } else {
        // C's `%s`: the subcommand up to its first NUL byte.
        let sub = sub.split(|&b| b == 0).next().unwrap_or_default();
        let text = [&b"ERR Unknown PFDEBUG subcommand '"[..], sub, b"'"].concat();
        ctx.failed = true;
        ctx.server.count_error(&text);
        ctx.out.error(&text);
    }
}

/// The dense form of `hll`, stored when it was sparse: a change Redis counts (`dirty`, so the
/// command reaches the AOF) without signalling the key. `None` after replying INVALIDOBJ.
fn densify(ctx: &mut Ctx<'_, '_>, key: &[u8], hll: Vec<u8>, encoding: Encoding) -> Option<Vec<u8>> {
    if encoding == Encoding::Dense {
        return Some(hll);
    }
    let Ok(dense) = sparse::to_dense(&hll) else {
        ctx.error(CORRUPT);
        return None;
    };
    let (db, now) = (ctx.db(), ctx.now_ms);
    if let Err(e) = ctx
        .shard(key)
        .put_string_raw(db, key, &dense, store::Ttl::Keep, now)
    {
        ctx.store_error(e);
        return None;
    }
    ctx.count_changes(1);
    Some(dense)
}

pub fn pfselftest(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let max_bytes = ctx.server.config.read().hll_sparse_max_bytes;
    match self_test(max_bytes, || crate::commands::random::random() as u32 >> 1) {
        Ok(()) => ctx.ok(),
        Err(text) => ctx.error(&format!("ERR {text}")),
    }
}

/// Redis's self test: register writes and reads (1000 rounds of random values over every
/// register), then 10 million distinct elements added to a dense HLL and to one that starts
/// sparse, checked at 1, 10, 100 … elements: sparse while small, both estimates equal, and
/// the error within six standard errors (1 for 10 elements). `rand` is C's `rand()`.
pub fn self_test(sparse_max_bytes: u64, mut rand: impl FnMut() -> u32) -> Result<(), String> {
    test_registers(&mut rand)?;
    let mut dense = vec![0u8; DENSE_BYTES];
    let mut hll = repr::Rewrite::new(sparse::new());
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed = u64::from(rand()) | u64::from(rand()) << 32;
    for j in 1..=10_000_000_u64 {
        let element = (j ^ seed).to_le_bytes();
        repr::dense_add(&mut dense, &element);
        // Redis ignores the result too: a fresh HLL cannot be corrupt.
        let _ = repr::add(&mut hll, &element, sparse_max_bytes);
        if j != checkpoint {
            continue;
        }
        if j < sparse_max_bytes / 2 && repr::check(&hll.bytes) != Some(Encoding::Sparse) {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let estimate = repr::count(&dense, Encoding::Dense).unwrap_or_default();
        let encoding = repr::check(&hll.bytes).unwrap_or(Encoding::Sparse);
        if repr::count(&hll.bytes, encoding) != Ok(estimate) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = (checkpoint as i64 - estimate as i64).unsigned_abs();
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

/// The first part of the self test: random values written to every register read back.
fn test_registers(rand: &mut impl FnMut() -> u32) -> Result<(), String> {
    let mut registers = vec![0u8; DENSE_REGISTER_BYTES];
    let mut expected = vec![0u8; REGISTERS];
    for _ in 0..1000 {
        for (index, e) in expected.iter_mut().enumerate() {
            *e = (rand() & u32::from(repr::REGISTER_MAX)) as u8;
            dense::set(&mut registers, index, *e);
        }
        for (index, &e) in expected.iter().enumerate() {
            let value = dense::get(&registers, index);
            if value != e {
                return Err(format!(
                    "TESTFAILED Register {index} should be {e} but is {value}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_test_passes() {
        let mut state = 12345_u64;
        let rand = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as u32
        };
        assert_eq!(self_test(3000, rand), Ok(()));
    }
}
