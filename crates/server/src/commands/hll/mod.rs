//! HyperLogLog commands (Redis 7.0's `hyperloglog.c`): PFADD, PFCOUNT, PFMERGE, and the
//! debugging PFDEBUG and PFSELFTEST (`debug.rs`).
//!
//! An HLL is a plain string value in Redis's own format (`repr.rs`: the `HYLL` header with its
//! cached cardinality, then sparse opcodes or 16384 dense 6-bit registers), so GET, SET, DUMP
//! and RESTORE move it between densekv and Redis unchanged. The pure format lives apart from
//! the commands:
//!
//! ```text
//!  mod.rs     PFADD PFCOUNT PFMERGE      debug.rs  PFDEBUG PFSELFTEST
//!  repr.rs    header, isHLLObject check, cache, add/count/merge by encoding
//!  sparse.rs  ZERO/XZERO/VAL opcodes     dense.rs  6-bit registers
//!  murmur.rs  MurmurHash64A, hllPatLen   estimate.rs  Ertl's estimator (hllCount)
//!  fuzz.rs    `fuzz_check`: corrupt strings through every command
//! ```
//!
//! Writes follow the string's encoding. A dense HLL is edited in place in the store
//! (`Shard::edit_string`: no copy of its 12 KB): PFADD's registers, PFMERGE's into a dense
//! destination, PFCOUNT's cache. PFADD on a dense HLL costs one lookup
//! (`Shard::edit_raw_string`) and writes only the registers its elements raise; when none is
//! raised nothing is written. A sparse HLL is copied out, rewritten as Redis rewrites it (it
//! may grow or turn dense) and stored whole again.
//!
//! Redis's checks and their order are kept: a string that is not an HLL is `WRONGTYPE Key is
//! not a valid HyperLogLog string value.`, one whose sparse opcodes do not cover exactly the
//! 16384 registers is `INVALIDOBJ Corrupted HLL object detected`. The oracle is redis-server
//! 7.0.15 as Debian ships it, with the CVE-2025-32023 fix: a run past register 16383 is
//! corrupt at once (upstream 7.0.15 let trailing VALs pass in PFMERGE and PFDEBUG TODENSE,
//! and wrote out of bounds on long strings). A string that passes the header check is made
//! `raw` first (Redis's `dbUnshareStringValue`), even when the command then fails or writes
//! nothing. One behaviour is not Redis's: a sparse string whose last opcode is an XZERO cut in
//! half gets its missing second byte from past the string's end. A command starts with 0 there
//! (Redis's NUL terminator) and follows the bytes Redis's rewrites leave there
//! (`sparse::Rewrite`), but Redis keeps them from one command to the next, which densekv, storing
//! the string's bytes only, cannot.
//!
//! Effects, as Redis's: PFADD that changed a register (or created the key) and PFMERGE touch
//! the key, send `pfadd` (after `new` when they created it) and are written to the AOF as
//! sent; PFADD that failed half-way keeps the writes it made but signals nothing. PFCOUNT of
//! one key whose cache was stale rewrites the cache: it touches the key and is written to the
//! AOF (`propagate_as`: it is not a WRITE command) without an event. PFDEBUG GETREG and
//! TODENSE count a change when they make a sparse HLL dense, and are written to the AOF, but
//! touch nothing (Redis only bumps `dirty`). Read lookups (PFCOUNT, PFMERGE's sources) count
//! keyspace hits and misses and send `keymiss`.

mod debug;
mod dense;
mod estimate;
pub mod fuzz;
mod murmur;
pub mod repr;
mod sparse;

pub use fuzz::fuzz_check;

use super::keys::{created, expired_so_far, keymiss};
use crate::command::{
    ADMIN, Ctx, DENYOOM, FAST, K1, KALL, Keys, MAY_REPLICATE, NOKEYS, READONLY, Replied, Spec,
    WRITE, table,
};
use crate::notify::class;
use repr::{Corrupt, Encoding, REGISTERS, Rewrite};
use store::{EMBSTR_MAX_BYTES, Str, Ttl};

/// Redis's reply for a key that holds a string but no HLL.
pub const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
/// Redis's reply for an HLL whose sparse opcodes are corrupt.
pub const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

/// PFDEBUG's key, after its subcommand.
const K2: Keys = Keys::Range {
    first: 2,
    last: 2,
    step: 1,
};

pub static COMMANDS: &[Spec] = table! {
    // name        arity, flags,                     keys,   member, handler
    "pfadd",       -2,    WRITE | DENYOOM | FAST,    K1,     0,      pfadd;
    "pfcount",     -2,    READONLY | MAY_REPLICATE,  KALL,   0,      pfcount;
    "pfmerge",     -2,    WRITE | DENYOOM,           KALL,   0,      pfmerge;
    "pfdebug",     3,     WRITE | DENYOOM | ADMIN,   K2,     0,      debug::pfdebug;
    "pfselftest",  1,     ADMIN,                     NOKEYS, 0,      debug::pfselftest;
};

/// How a command looks its key up (Redis's `lookupKeyRead` or `lookupKeyWrite`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// Counts a keyspace hit or miss and sends `keymiss` on a miss.
    Read,
    Write,
}

/// Looks `key` up and, when it holds an HLL (`repr::check`), calls `f` with its bytes and
/// encoding in place. `Some(None)`: no key. `None`: the error was replied (`WRONGTYPE` of
/// either kind).
fn with_hll<R>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    lookup: Lookup,
    f: impl FnOnce(&[u8], Encoding) -> R,
) -> Replied<R> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let found = ctx.shard(key).get_string(db, key, now, |s| match s {
        Str::Bytes(bytes) => repr::check(bytes).map(|encoding| f(bytes, encoding)),
        Str::Int(_) => None,
    });
    if lookup == Lookup::Read {
        if matches!(found, Ok(None)) {
            ctx.server.hot.add(|c| &c.keyspace_misses, 1);
            keymiss(ctx, key);
        } else {
            ctx.server.hot.add(|c| &c.keyspace_hits, 1);
        }
    }
    match found {
        Ok(found) => match found {
            None => Some(None),
            Some(Some(r)) => Some(Some(r)),
            Some(None) => {
                ctx.error(NOT_HLL);
                None
            }
        },
        Err(e) => {
            ctx.store_error(e);
            None
        }
    }
}

/// Redis's `dbUnshareStringValue` on an HLL of `len` bytes: a short one may be stored
/// `embstr`, which Redis turns `raw` before it writes (or may write) the string. Longer
/// strings are `raw` already.
fn unshare(ctx: &mut Ctx<'_, '_>, key: &[u8], len: usize) {
    if len <= EMBSTR_MAX_BYTES {
        let (db, now) = (ctx.db(), ctx.now_ms);
        if let Err(e) = ctx
            .shard(key)
            .edit_string(db, key, now, (0, false), |_, _| ())
        {
            ctx.store_error(e);
        }
    }
}

/// Stores a rewritten HLL whole: a new key without a TTL, an existing one keeping its own.
fn store(ctx: &mut Ctx<'_, '_>, key: &[u8], hll: &[u8], existed: bool) -> bool {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let ttl = if existed { Ttl::Keep } else { Ttl::Clear };
    match ctx.shard(key).put_string_raw(db, key, hll, ttl, now) {
        Ok(()) => true,
        Err(e) => {
            ctx.store_error(e);
            false
        }
    }
}

fn sparse_max_bytes(ctx: &Ctx<'_, '_>) -> u64 {
    ctx.server.config.read().hll_sparse_max_bytes
}

/// What PFADD found at its key.
enum Found {
    /// A dense HLL, and the first element that raises a register (`None`: none does).
    Dense(Option<usize>),
    /// A sparse HLL: a copy of its bytes.
    Sparse(Vec<u8>),
}

/// PFADD key [element …]: 1 when a register changed or the key was created, else 0.
pub fn pfadd(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (key, elements) = (args[1], &args[2..]);
    if let Some(updated) = add_dense_in_place(ctx, key, elements) {
        return added(ctx, key, updated, false);
    }
    // The general path: a dense HLL gets here only while a snapshot runs, is read first and
    // written only if an element raises a register; a sparse one is copied out to be
    // rewritten.
    let Some(found) = with_hll(ctx, key, Lookup::Write, |hll, encoding| match encoding {
        Encoding::Dense => Found::Dense(elements.iter().position(|e| repr::dense_raises(hll, e))),
        Encoding::Sparse => Found::Sparse(hll.to_vec()),
    }) else {
        return;
    };
    let is_new = found.is_none();
    let updated = match found {
        None => add_new(ctx, key, elements),
        Some(Found::Dense(None)) => Some(0),
        Some(Found::Dense(Some(first))) => add_dense(ctx, key, &elements[first..]),
        Some(Found::Sparse(sparse)) => add_sparse(ctx, key, elements, sparse),
    };
    if let Some(updated) = updated {
        added(ctx, key, updated, is_new);
    }
}

/// PFADD's effects once `updated` registers changed (the creation counting as one), and its
/// reply.
fn added(ctx: &mut Ctx<'_, '_>, key: &[u8], updated: u64, is_new: bool) {
    if updated > 0 {
        let db = ctx.db();
        ctx.touch(db, key);
        // Redis counts one change per register written (`server.dirty += updated`).
        ctx.count_changes((updated - 1) as u32);
        if is_new {
            created(ctx, key);
        }
        ctx.notify(class::STRING, "pfadd", key);
    }
    ctx.out.integer(i64::from(updated > 0));
}

/// PFADD's common case with one lookup: a dense HLL in a live raw string, its registers raised
/// where they lie. `None` for anything else (no key, a sparse HLL, not an HLL, a snapshot under
/// way), which the general path then looks up again.
fn add_dense_in_place(ctx: &mut Ctx<'_, '_>, key: &[u8], elements: &[&[u8]]) -> Option<u64> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let edited = ctx.shard(key).edit_raw_string(db, key, now, |hll| {
        let dense = matches!(repr::check(hll), Some(Encoding::Dense));
        dense.then(|| raise_dense(hll, elements))
    });
    edited.flatten()
}

/// Adds `elements` to the dense HLL `hll`; returns the registers raised, and marks the cached
/// cardinality stale if any was.
fn raise_dense(hll: &mut [u8], elements: &[&[u8]]) -> u64 {
    let mut updated = 0;
    for element in elements {
        updated += u64::from(repr::dense_add(hll, element));
    }
    if updated > 0 {
        repr::invalidate(hll);
    }
    updated
}

/// PFADD on a missing key: a new sparse HLL with the elements, stored without a TTL. Counts the
/// creation as a change, as Redis does (so even `PFADD key` alone replies 1).
fn add_new(ctx: &mut Ctx<'_, '_>, key: &[u8], elements: &[&[u8]]) -> Option<u64> {
    let max_bytes = sparse_max_bytes(ctx);
    let mut hll = Rewrite::new(sparse::new());
    let mut updated = 1;
    for element in elements {
        // A fresh HLL is valid, so no add can fail.
        if repr::add(&mut hll, element, max_bytes) == Ok(true) {
            updated += 1;
        }
    }
    repr::invalidate(&mut hll.bytes);
    store(ctx, key, &hll.bytes, false).then_some(updated)
}

/// PFADD on a dense HLL, from the first element that raises a register: the registers are
/// raised in the stored string itself.
fn add_dense(ctx: &mut Ctx<'_, '_>, key: &[u8], elements: &[&[u8]]) -> Option<u64> {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let edited = ctx
        .shard(key)
        .edit_string(db, key, now, (0, false), |hll, _| {
            raise_dense(hll, elements)
        });
    match edited {
        Ok(updated) => Some(updated.unwrap_or(0)),
        Err(e) => {
            ctx.store_error(e);
            None
        }
    }
}

/// PFADD on a sparse HLL (`hll`, a copy of the stored bytes): the elements are added one
/// by one (the HLL may turn dense on the way) and the result stored when a register changed.
/// An element that finds the opcodes corrupt ends the command with INVALIDOBJ, the writes made
/// so far kept and signalled to no one, as in Redis.
fn add_sparse(ctx: &mut Ctx<'_, '_>, key: &[u8], elements: &[&[u8]], hll: Vec<u8>) -> Option<u64> {
    let len = hll.len();
    let mut hll = Rewrite::new(hll);
    let max_bytes = sparse_max_bytes(ctx);
    let mut updated = 0;
    let mut corrupt = false;
    for element in elements {
        let Ok(changed) = repr::add(&mut hll, element, max_bytes) else {
            corrupt = true;
            break;
        };
        updated += u64::from(changed);
    }
    if updated == 0 {
        unshare(ctx, key, len);
    } else {
        if !corrupt {
            repr::invalidate(&mut hll.bytes);
        }
        if !store(ctx, key, &hll.bytes, true) {
            return None;
        }
    }
    if corrupt {
        ctx.error(CORRUPT);
        return None;
    }
    Some(updated)
}

/// What a single-key PFCOUNT found in the cache.
enum Cache {
    Fresh(u64),
    Stale(Result<u64, Corrupt>),
}

/// PFCOUNT key [key …]: the estimate of one HLL (its cache, refreshed when stale) or of the
/// union of several (computed apart, no cache written).
pub fn pfcount(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() > 2 {
        return pfcount_union(ctx, &args[1..]);
    }
    let key = args[1];
    let found = with_hll(ctx, key, Lookup::Read, |hll, encoding| {
        let cache = match repr::cached(hll) {
            Some(card) => Cache::Fresh(card),
            None => Cache::Stale(repr::count(hll, encoding)),
        };
        (hll.len(), cache)
    });
    let Some(found) = found else { return };
    let Some((len, cache)) = found else {
        return ctx.out.integer(0);
    };
    unshare(ctx, key, len);
    match cache {
        // Redis replies the u64 as a signed integer (2^63 reads as -2^63).
        Cache::Fresh(card) => ctx.out.integer(card as i64),
        Cache::Stale(Err(Corrupt)) => ctx.error(CORRUPT),
        Cache::Stale(Ok(card)) => store_cache(ctx, args, card),
    }
}

/// Writes PFCOUNT's fresh estimate into the HLL's header in place: a change to the key, written
/// to the AOF as the PFCOUNT itself (Redis propagates any command that changed `dirty`).
fn store_cache(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], card: u64) {
    let key = args[1];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let edited = ctx
        .shard(key)
        .edit_string(db, key, now, (0, false), |hll, _| {
            repr::store_cached(hll, card);
        });
    if let Err(e) = edited {
        return ctx.store_error(e);
    }
    ctx.touch(db, key);
    ctx.propagate_as(args);
    ctx.out.integer(card as i64);
}

/// Merges the HLLs at `keys` into `max` (Redis's loop over `hllMerge`), in order, each key's
/// check before the next: `Some(dense)` — whether any was dense — or `None` once an error
/// was replied. Missing keys count as empty HLLs.
fn merge_keys(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]], max: &mut [u8; REGISTERS]) -> Option<bool> {
    let mut any_dense = false;
    for &key in keys {
        let merged = with_hll(ctx, key, Lookup::Read, |hll, encoding| {
            any_dense |= encoding == Encoding::Dense;
            repr::merge_into(hll, encoding, max)
        });
        // Keys expired by the lookups are announced in the order of the lookups.
        expired_so_far(ctx);
        match merged? {
            None | Some(Ok(())) => {}
            Some(Err(Corrupt)) => {
                ctx.error(CORRUPT);
                return None;
            }
        }
    }
    Some(any_dense)
}

fn pfcount_union(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]]) {
    let mut max = [0u8; REGISTERS];
    if merge_keys(ctx, keys, &mut max).is_some() {
        ctx.out.integer(repr::count_registers(&max) as i64);
    }
}

/// PFMERGE destkey [sourcekey …]: the union of the destination and the sources, written to the
/// destination, which is made dense when any input was.
pub fn pfmerge(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let dest = args[1];
    let mut max = [0u8; REGISTERS];
    let Some(any_dense) = merge_keys(ctx, &args[1..], &mut max) else {
        return;
    };
    // The destination was among the keys merged, so it is missing or a valid HLL.
    let held = with_hll(ctx, dest, Lookup::Write, |hll, encoding| {
        (encoding == Encoding::Sparse).then(|| hll.to_vec())
    });
    let Some(held) = held else { return };
    let is_new = held.is_none();
    let written = match held {
        Some(None) => merge_dense(ctx, dest, &max),
        Some(Some(sparse)) => merge_rewrite(ctx, dest, sparse, &max, any_dense, true),
        None => merge_rewrite(ctx, dest, sparse::new(), &max, any_dense, false),
    };
    if !written {
        return;
    }
    let db = ctx.db();
    ctx.touch(db, dest);
    if is_new {
        created(ctx, dest);
    }
    ctx.notify(class::STRING, "pfadd", dest);
    ctx.ok();
}

/// PFMERGE into a dense destination, in place.
fn merge_dense(ctx: &mut Ctx<'_, '_>, dest: &[u8], max: &[u8; REGISTERS]) -> bool {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let edited = ctx
        .shard(dest)
        .edit_string(db, dest, now, (0, false), |hll, _| {
            let registers = &mut hll[repr::HEADER_BYTES..];
            for (index, &count) in max.iter().enumerate() {
                if count != 0 {
                    dense::raise(registers, index, count);
                }
            }
            repr::invalidate(hll);
        });
    edited.map_err(|e| ctx.store_error(e)).is_ok()
}

/// PFMERGE into a sparse destination (`hll`, a copy, or a new one when `existed` is false):
/// made dense first when any input was, then each non-zero register written in order, as
/// Redis's `hllSparseSet` writes them (the result may still turn dense on the way).
fn merge_rewrite(
    ctx: &mut Ctx<'_, '_>,
    dest: &[u8],
    hll: Vec<u8>,
    max: &[u8; REGISTERS],
    any_dense: bool,
    existed: bool,
) -> bool {
    let mut hll = Rewrite::new(hll);
    if any_dense {
        let Ok(dense) = sparse::to_dense(&hll.bytes) else {
            ctx.error(CORRUPT);
            return false;
        };
        hll.bytes = dense;
    }
    let max_bytes = sparse_max_bytes(ctx);
    for (index, &count) in max.iter().enumerate() {
        if count != 0 {
            repr::raise(&mut hll, index, count, max_bytes);
        }
    }
    repr::invalidate(&mut hll.bytes);
    store(ctx, dest, &hll.bytes, existed)
}
