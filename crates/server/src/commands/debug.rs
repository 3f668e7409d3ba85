//! DEBUG: Redis 7.0.15's `debugCommand` (`debug.c`) with its replies and error texts byte for
//! byte, for the subcommands densekv has, plus VALIDATE (densekv's own invariant check).
//!
//! Dispatch follows Redis's chain of `strcasecmp` tests: a subcommand matches only with its
//! argument count, and anything else (a wrong count, a subcommand densekv lacks) gets Redis's
//! `unknown subcommand or wrong number of arguments for '<sub>'. Try DEBUG HELP.`. Arguments that
//! Redis reads as C strings (`atoi`, `strtod`, `memtoull`, the POPULATE prefix, LOG's text) are
//! read up to their first NUL byte, as C reads them; keys are binary-safe, as Redis's dict is.
//!
//! | subcommand | densekv |
//! |---|---|
//! | DIGEST, DIGEST-VALUE | Redis's digest exactly (below): the same 40 hex digits for the same data |
//! | OBJECT `<key>` `[fast]` | Redis's line; `encoding` is OBJECT ENCODING's name; see below for the other fields |
//! | SLEEP, ERROR, LOG, PROTOCOL, POPULATE, STRUCTSIZE shape, QUICKLIST-PACKED-THRESHOLD's parsing | as Redis |
//! | SET-ACTIVE-EXPIRE, PAUSE-CRON | stop the cron's active expiry (`Server::active_expire_shards`); PAUSE-CRON stops only that part of densekv's cron (client timeouts and ops sampling go on) |
//! | QUICKLIST-PACKED-THRESHOLD | validated as Redis and accepted: a list chunk already holds an oversized element alone, so there is no plain-node threshold to move |
//! | SET-SKIP-CHECKSUM-VALIDATION, SET-DISABLE-DENY-SCRIPTS, REPLYBUFFER, DICT-RESIZING | accepted (OK) as Redis; densekv has no RESTORE, scripts, reply-buffer peak cron or dict rehashing for them to steer yet |
//! | CHANGE-REPL-ID | logs Redis's line and replies OK; densekv has no replication, and INFO's `master_replid` (the run id) stays |
//! | SDSLEN | Redis's line; densekv stores key and value bytes packed in the keyspace entry with no spare room: `avail` is 0 and `zmalloc` is the bytes stored |
//! | LISTPACK, QUICKLIST | Redis's checks and status reply; what goes to stdout is densekv's own description of the value (its encoding, length, elements), not Redis's `lpRepr` |
//! | HTSTATS `<dbid>` `[full]`, HTSTATS-KEY `<key>` `[full]` | Redis's checks and `[Dictionary HT]`/`[Expires HT]` framing around densekv's PageHash figures (keys, pages, buckets, fill per shard), or a large zset's member index (members, leaves, slots, load); expiries live in the key's entry, not in a second table |
//! | STRUCTSIZE | Redis's `name:bytes ` shape with densekv's core structures (pages, pieces, blocks, descriptors) |
//! | PANIC, ASSERT, SEGFAULT, OOM | a panic inside the command: `log.rs` writes the bug report and aborts (SIGABRT); SEGFAULT simulates the invalid write this way rather than making one, and OOM reports the allocation Redis attempts |
//! | CLIENT-EVICTION | `maxmemory-clients is disabled.` (densekv has no client eviction; Redis's default is off too) |
//! | CONFIG-REWRITE-FORCE-ALL | writes every parameter to the config file, as densekv's CONFIG REWRITE always does |
//! | MALLCTL, MALLCTL-STR | unknown subcommands, as in a Redis built without jemalloc (densekv has its own heap) |
//! | LEAK | leaks a copy of the argument, as Redis does (leak checkers' tests) |
//!
//! HTSTATS's and HTSTATS-KEY's `full`, OBJECT's `fast` and DICT-RESIZING are later Redis's
//! forms (7.0.15 refuses them as unknown); densekv takes them so test suites of later versions
//! run. RELOAD saves, flushes and loads the RDB file as Redis does (`crate::persistence`); with
//! NOFLUSH and without MERGE a key in both is replaced where Redis would stop the server.
//! LOADAOF stays unknown until densekv has an append-only file.
//!
//! # DEBUG OBJECT's fields
//! `Value at` is where the value lives (the boxed object, or the payload in its page);
//! `refcount` is Redis's: 2147483647 for the shared integers 0..9999, 1 otherwise.
//! `serializedlength` is, until densekv writes RDB files, the length of the value in Redis's
//! plain RDB element encoding: a string as `rdbSaveRawString` writes it (integers of up to 32 bits
//! as 2–5 bytes), collections as a length then each element as such a string (zset scores as
//! 8-byte doubles), nothing LZF-compressed. It equals Redis's figure for strings of up to 20
//! bytes; Redis writes small collections as listpack blobs and compresses, so its figures for
//! those differ. `lru` and `lru_seconds_idle` are 0: densekv keeps no access clock until eviction
//! brings one. Lists add Redis's `ql_*` fields from densekv's chunks: `ql_nodes` chunks,
//! `ql_avg_node` elements per chunk, `ql_listpack_max` the `list-max-listpack-size` level of the
//! list's chunk bound (-2 for 8 KiB), `ql_compressed:0`, `ql_uncompressed_size` bytes of entries.
//!
//! # The digest
//! `computeDatasetDigest` ported: for each non-empty database (empty ones are skipped), the
//! digest mixes the db number (4 bytes, big-endian), then xors in each key's digest: mix(key),
//! mix(type number), then the value — list elements mixed in order, set members xored,
//! hash pairs and zset (member, `%.17g` score) pairs each digested apart and xored, so order
//! does not matter where Redis defines none — and `!!expire!!` xored in when the key has a TTL.
//! Integers are digested as their decimal text whatever the encoding, so the digest depends on
//! the data only. An empty dataset digests to forty zeros, as does DIGEST-VALUE of a missing key.
//! Like Redis, both read keys whose TTL has passed but which are still stored, and delete
//! nothing (`store::Shard::for_each_entry`, `peek`).

use super::args::{NOT_INTEGER, is, parse_i64};
use crate::command::{ADMIN, ALL, Ctx, LOADING, NOSCRIPT, PROTECTED, STALE, Spec, table};
use crate::server::unix_ms;
use resp::Protocol;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::Ordering;
use store::{Entry, Kind, Shard, Str, Ttl, View};

pub static COMMANDS: &[Spec] = table! {
    // name   arity, flags,                                          keys, member, handler
    "debug",  -2,    ADMIN | NOSCRIPT | LOADING | STALE | PROTECTED, ALL,  0,      debug;
};

/// DEBUG HELP, after Redis's header: Redis's lines for the subcommands densekv has, and VALIDATE.
const HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LEAK <string>",
    "    Create a memory leak of the input string.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "HTSTATS <dbid> [full]",
    "    Return hash table statistics of the specified Redis database.",
    "HTSTATS-KEY <key> [full]",
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    "OBJECT <key> [fast]",
    "    Show low level info about `key` and associated value.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "SDSLEN <key>",
    "    Show low level SDS string info representing `key` and value.",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "STRUCTSIZE",
    "    Return the size of different Redis core C structures.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "CLIENT-EVICTION",
    "    Show low level client eviction pools info (maxmemory-clients).",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "DICT-RESIZING <0|1>",
    "    Enable or disable the main dict and expire dict resizing.",
    "VALIDATE",
    "    Check every keyspace structure's invariants (densekv).",
    "HELP",
    "    Prints this help.",
];

/// DEBUG (`enable-debug-command` is checked by dispatch: the line is PROTECTED).
pub fn debug(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let sub = c_str(args[1]).to_ascii_lowercase();
    if !run_inspection(ctx, &sub, args) && !run_control(ctx, &sub, args) {
        unknown_subcommand(ctx, args[1]);
    }
}

/// The subcommands that look at the dataset or the server; false when `sub` is none of them.
fn run_inspection(ctx: &mut Ctx<'_, '_>, sub: &[u8], args: &[&[u8]]) -> bool {
    match (sub, args.len()) {
        (b"help", 2) => help(ctx),
        (b"object", 3 | 4) => object(ctx, args),
        (b"sdslen", 3) => sdslen(ctx, args[2]),
        (b"listpack", 3) => describe(ctx, args[2], Describe::Listpack),
        (b"quicklist", 3 | 4) => {
            let full = args.get(3).is_some_and(|a| atoi(a) != 0);
            describe(ctx, args[2], Describe::Quicklist { full });
        }
        (b"digest", 2) => {
            let mut shards: Vec<&mut Shard> = ctx.locks.iter_mut().collect();
            let digest = dataset_digest(&mut shards);
            ctx.out.simple(hex(&digest).as_bytes());
        }
        (b"digest-value", _) => digest_values(ctx, &args[2..]),
        (b"protocol", 3) => protocol(ctx, args[2]),
        (b"structsize", 2) => structsize(ctx),
        (b"htstats", 3 | 4) => htstats(ctx, args),
        (b"htstats-key", 3 | 4) => htstats_key(ctx, args),
        (b"client-eviction", 2) => ctx.error("ERR maxmemory-clients is disabled."),
        (b"validate", 2) => {
            let failure = ctx
                .locks
                .iter_mut()
                .find_map(|shard| shard.validate().err());
            match failure {
                Some(e) => ctx.error(&format!("ERR {e}")),
                None => ctx.ok(),
            }
        }
        _ => return false,
    }
    true
}

/// The subcommands that change or crash the server; false when `sub` is none of them.
fn run_control(ctx: &mut Ctx<'_, '_>, sub: &[u8], args: &[&[u8]]) -> bool {
    match (sub, args.len()) {
        (b"segfault" | b"panic" | b"oom" | b"assert", _) => crash(sub),
        (b"reload", _) => reload(ctx, args),
        (b"loadaof", _) => loadaof(ctx),
        (b"log", 3) => {
            let text = String::from_utf8_lossy(c_str(args[2]));
            crate::log::warning(&format!("DEBUG LOG: {text}"));
            ctx.ok();
        }
        (b"leak", 3) => {
            // What the subcommand is for: memory that is never freed, for leak checkers' tests.
            Box::leak(args[2].to_vec().into_boxed_slice());
            ctx.ok();
        }
        (b"populate", 3..=5) => populate(ctx, args),
        (b"sleep", 3) => {
            sleep(args[2]);
            ctx.ok();
        }
        (b"set-active-expire", 3) => {
            let on = atoi(args[2]) != 0;
            ctx.server
                .active_expire_enabled
                .store(on, Ordering::Relaxed);
            ctx.ok();
        }
        (b"pause-cron", 3) => {
            let paused = atoi(args[2]) != 0;
            ctx.server.cron_paused.store(paused, Ordering::Relaxed);
            ctx.ok();
        }
        (b"quicklist-packed-threshold", 3) => match memtoull(args[2]) {
            Some(size) if size <= (1 << 32) - (1 << 20) => ctx.ok(),
            _ => {
                ctx.error("ERR argument must be a memory value bigger than 1 and smaller than 4gb");
            }
        },
        (b"set-skip-checksum-validation" | b"set-disable-deny-scripts" | b"dict-resizing", 3) => {
            ctx.ok();
        }
        // Redis writes `-<text>` as it is (newlines made spaces) and does not count it as an
        // error reply in INFO, so neither does densekv.
        (b"error", 3) => ctx.out.error(args[2]),
        (b"change-repl-id", 2) => {
            crate::log::warning("Changing replication IDs after receiving DEBUG change-repl-id");
            ctx.ok();
        }
        (b"stringmatch-test", 2) => {
            stringmatch_fuzz();
            ctx.out
                .simple(b"Apparently Redis did not crash: test passed");
        }
        (b"config-rewrite-force-all", 2) => config_rewrite_force_all(ctx),
        (b"replybuffer", 4) => replybuffer(ctx, args),
        _ => return false,
    }
    true
}

/// Redis's `addReplySubcommandSyntaxError` for DEBUG: the subcommand as sent, at most 128 bytes
/// of it up to a NUL (`%.128s`).
fn unknown_subcommand(ctx: &mut Ctx<'_, '_>, sub: &[u8]) {
    let sub = c_str(sub);
    let mut text = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    text.extend_from_slice(&sub[..sub.len().min(128)]);
    text.extend_from_slice(b"'. Try DEBUG HELP.");
    ctx.failed = true;
    ctx.server.count_error(&text);
    ctx.out.error(&text);
}

fn help(ctx: &mut Ctx<'_, '_>) {
    ctx.out.array_len(HELP.len());
    for line in HELP {
        ctx.out.simple(line.as_bytes());
    }
}

/// PANIC, ASSERT, SEGFAULT and OOM: a panic inside the command, which `log.rs` turns into a bug
/// report naming DEBUG and an abort, with every shard locked as a real bug would leave them.
fn crash(sub: &[u8]) -> ! {
    let now = unix_ms() / 1000;
    match sub {
        b"panic" => panic!("DEBUG PANIC called at Unix time {now}"),
        b"assert" => panic!("assertion failed: 1 == 2 (DEBUG ASSERT)"),
        b"oom" => panic!(
            "Out Of Memory allocating {} bytes (DEBUG OOM)",
            usize::MAX / 2
        ),
        _ => panic!(
            "crashed by signal: 11 (DEBUG SEGFAULT: densekv simulates the write to read-only \
             memory as this panic)"
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Arguments as C reads them.

/// The argument as a C string: up to its first NUL.
fn c_str(arg: &[u8]) -> &[u8] {
    arg.split(|&b| b == 0).next().unwrap_or(arg)
}

/// `s` after its leading white space (as C's number parsers skip it).
fn after_space(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|&b| !crate::number::is_space(b))
        .unwrap_or(s.len());
    &s[start..]
}

/// C's `atoi` (glibc: `(int) strtol(s, NULL, 10)`): leading space, a sign, digits, the rest
/// ignored; `strtol` saturates at the `long` range and the cast keeps the low 32 bits.
fn atoi(arg: &[u8]) -> i32 {
    let s = after_space(c_str(arg));
    let (negative, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = digits
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0i128, |v, &d| (v * 10 + i128::from(d - b'0')).min(1 << 64));
    let value = if negative { -magnitude } else { magnitude };
    value.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64 as i32
}

/// Longest prefix SLEEP's `strtod` is tried on; a longer number only adds digits that cannot
/// change a sleep.
const STRTOD_PREFIX_MAX: usize = 512;

/// C's `strtod(s, NULL)`: the longest prefix (after leading space) that is a number, else 0.
fn strtod(arg: &[u8]) -> f64 {
    let s = after_space(c_str(arg));
    let end = s
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))
        .unwrap_or(s.len())
        .min(STRTOD_PREFIX_MAX);
    (1..=end)
        .rev()
        .find_map(|n| crate::number::strtod_whole(&s[..n]))
        .unwrap_or(0.0)
}

/// DEBUG SLEEP: Redis converts the seconds to microseconds as a `long long` (x86-64 gives
/// `LLONG_MIN` for what does not fit, NaN included) and `nanosleep` refuses a negative time.
fn sleep(arg: &[u8]) {
    let micros = strtod(arg) * 1_000_000.0;
    let fits = micros.is_finite()
        && micros > -9.223_372_036_854_776e18
        && micros < 9.223_372_036_854_776e18;
    let micros = if fits { micros as i64 } else { i64::MIN };
    if micros > 0 {
        std::thread::sleep(std::time::Duration::from_micros(micros as u64));
    }
}

/// Redis's `memtoull`: digits and an optional unit (`b`, `k`, `kb`, `m`, `mb`, `g`, `gb`, any
/// case); `None` for a sign, another unit or 128 digits or more. `strtoull` saturates and the
/// unit multiplies modulo 2^64, as in C.
fn memtoull(arg: &[u8]) -> Option<u64> {
    let p = c_str(arg);
    if p.first() == Some(&b'-') {
        return None;
    }
    let digits = p.iter().take_while(|b| b.is_ascii_digit()).count();
    let unit: u64 = match p[digits..].to_ascii_lowercase().as_slice() {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1000 * 1000,
        b"mb" => 1024 * 1024,
        b"g" => 1000 * 1000 * 1000,
        b"gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits >= 128 {
        return None;
    }
    let value = p[..digits].iter().fold(0u64, |v, &d| {
        v.checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .unwrap_or(u64::MAX)
    });
    Some(value.wrapping_mul(unit))
}

/// Redis's `getPositiveLongFromObjectOrReply` with no message of its own.
fn positive(arg: &[u8]) -> Result<i64, &'static str> {
    parse_i64(arg)
        .filter(|&n| n >= 0)
        .ok_or("ERR value is out of range, must be positive")
}

// ---------------------------------------------------------------------------------------------
// Looking at values.

/// DEBUG OBJECT `<key>` `[fast]` (the module doc says what each field means here).
fn object(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let fast = args.len() == 4 && is(c_str(args[3]), "fast");
    let (db, key) = (ctx.db(), args[2]);
    match ctx.shard(key).peek(db, key, |e| object_line(&e, fast)) {
        Some(line) => ctx.out.simple(line.as_bytes()),
        None => ctx.error("ERR no such key"),
    }
}

fn object_line(e: &Entry<'_>, fast: bool) -> String {
    let shared = matches!(e.view, View::String(Str::Int(i)) if (0..10_000).contains(&i));
    let refcount = if shared { i32::MAX } else { 1 };
    let mut line = format!(
        "Value at:{:#x} refcount:{refcount} encoding:{}",
        e.address(),
        e.object_encoding()
    );
    if !fast {
        let _ = write!(line, " serializedlength:{}", serialized_len(&e.view));
    }
    line.push_str(" lru:0 lru_seconds_idle:0");
    if let View::List(list) = e.view {
        let nodes = list.chunk_count();
        let _ = write!(
            line,
            " ql_nodes:{nodes} ql_avg_node:{:.2} ql_listpack_max:{} ql_compressed:0 ql_uncompressed_size:{}",
            list.len() as f64 / nodes as f64,
            listpack_max(list.chunk_bytes()),
            list.entry_bytes()
        );
    }
    line
}

/// RDB's length prefix (`rdbSaveLen`): 1, 2, 5 or 9 bytes.
fn rdb_len_bytes(len: usize) -> usize {
    match len {
        0..64 => 1,
        64..16_384 => 2,
        _ if u32::try_from(len).is_ok() => 5,
        _ => 9,
    }
}

/// A string as `rdbSaveRawString` writes it without compression: an integer of up to 11
/// characters that fits 32 bits as 2, 3 or 5 bytes, anything else as its length and bytes.
fn rdb_string_bytes(s: &Str<'_>) -> usize {
    let int = match s {
        Str::Int(i) => Some(*i),
        Str::Bytes(b) if b.len() <= 11 => store::canonical_i64(b),
        Str::Bytes(_) => None,
    };
    match int {
        Some(i) if i8::try_from(i).is_ok() => 2,
        Some(i) if i16::try_from(i).is_ok() => 3,
        Some(i) if i32::try_from(i).is_ok() => 5,
        _ => {
            let len = s.len();
            rdb_len_bytes(len) + len
        }
    }
}

/// DEBUG OBJECT's `serializedlength` (see the module doc).
fn serialized_len(view: &View<'_>) -> usize {
    let elements = match view {
        View::String(s) => return rdb_string_bytes(s),
        View::List(l) => l
            .iter_from(0)
            .map(|e| rdb_string_bytes(&Str::Bytes(e)))
            .sum::<usize>(),
        View::Set(s) => s.iter().map(|m| rdb_string_bytes(&m)).sum(),
        View::Hash(h) => h
            .iter()
            .map(|(f, v)| rdb_string_bytes(&f) + rdb_string_bytes(&v))
            .sum(),
        View::ZSet(z) => z
            .iter(0, false)
            .map(|(_, m)| rdb_string_bytes(&Str::Bytes(m)) + 8)
            .sum(),
    };
    rdb_len_bytes(view.len()) + elements
}

/// DEBUG SDSLEN `<key>` (see the module doc for densekv's figures).
fn sdslen(ctx: &mut Ctx<'_, '_>, key: &[u8]) {
    let db = ctx.db();
    let found = ctx.shard(key).peek(db, key, |e| match e.view {
        View::String(Str::Bytes(v)) => Some(v.len()),
        _ => None,
    });
    match found {
        None => ctx.error("ERR no such key"),
        Some(None) => ctx.error("ERR Not an sds encoded string."),
        Some(Some(len)) => {
            let k = key.len();
            let line = format!(
                "key_sds_len:{k}, key_sds_avail:0, key_zmalloc: {k}, val_sds_len:{len}, val_sds_avail:0, val_zmalloc: {len}"
            );
            ctx.out.simple(line.as_bytes());
        }
    }
}

/// Which structure LISTPACK or QUICKLIST asks about.
#[derive(Clone, Copy, Debug)]
enum Describe {
    Listpack,
    Quicklist { full: bool },
}

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save (unless NOSAVE), flush (unless NOFLUSH) and
/// load the RDB file back, replying as Redis's `debugCommand` does.
fn reload(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (mut flush, mut save) = (true, true);
    for &opt in &args[2..] {
        if is(opt, "merge") {
            // Loading replaces a key of the same name whether or not MERGE is given.
        } else if is(opt, "noflush") {
            flush = false;
        } else if is(opt, "nosave") {
            save = false;
        } else {
            return ctx
                .error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
        }
    }
    let reloaded = ctx.with_all_shards(|server, shards| {
        if save && crate::persistence::save(server, shards).is_err() {
            return Err("ERR");
        }
        if flush {
            for shard in shards.iter_mut() {
                (0..shard.databases()).for_each(|db| shard.flush(db));
            }
            crate::tracking::flushed(server);
            crate::scripting::functions::clear(server);
        }
        match crate::rdb_load::load_held(server, shards) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err("ERR Error trying to load the RDB dump"),
            Err(e) => {
                crate::log::warning(&e);
                Err("ERR Error trying to load the RDB dump")
            }
        }
    });
    match reloaded {
        Ok(()) => {
            crate::log::warning("DB reloaded by DEBUG RELOAD");
            ctx.ok();
        }
        Err(e) => ctx.error(e),
    }
}

/// DEBUG LOADAOF: the AOF written out, the keyspace emptied and loaded back from the files; a
/// load that fails (or finds no files) exits the process, as Redis's does.
fn loadaof(ctx: &mut Ctx<'_, '_>) {
    // DEBUG holds every shard (its key spec is ALL, and EXEC's are all held too).
    match crate::aof::load::reload(ctx.server, ctx.locks) {
        Ok(()) => {
            crate::tracking::flushed(ctx.server);
            crate::log::warning("Append Only File loaded by DEBUG LOADAOF");
            ctx.ok();
        }
        Err(e) => {
            crate::log::warning(&e);
            std::process::exit(1);
        }
    }
}

/// The `list-max-listpack-size` level (-1 … -5) of a chunk bound of 4 … 64 KiB.
fn listpack_max(chunk_bytes: usize) -> i32 {
    -((chunk_bytes / 4096).max(1).ilog2() as i32 + 1)
}

/// DEBUG LISTPACK / QUICKLIST `<key>`: Redis's lookup (expiring the key if its time passed),
/// encoding check and status reply; densekv's description of the value goes to stdout, where
/// Redis prints its `lpRepr` / `quicklistRepr`.
fn describe(ctx: &mut Ctx<'_, '_>, key: &[u8], what: Describe) {
    let (db, now) = (ctx.db(), ctx.now_ms);
    let shard = ctx.shard(key);
    if !shard.contains(db, key, now) {
        return ctx.error("ERR no such key");
    }
    let text = shard
        .peek(db, key, |e| {
            let name = e.object_encoding();
            match what {
                Describe::Listpack if name == "listpack" => Some(description(&e, true)),
                Describe::Quicklist { full } if name == "quicklist" => Some(description(&e, full)),
                _ => None,
            }
        })
        .flatten();
    match (text, what) {
        (None, Describe::Listpack) => ctx.error("ERR Not a listpack encoded object."),
        (None, Describe::Quicklist { .. }) => ctx.error("ERR Not a quicklist encoded object."),
        (Some(text), _) => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text.as_bytes());
            let _ = stdout.flush();
            ctx.out.simple(match what {
                Describe::Listpack => b"Listpack structure printed on stdout",
                Describe::Quicklist { .. } => b"Quicklist structure printed on stdout",
            });
        }
    }
}

/// densekv's description of a value: its encoding and size, and its elements when `elements`.
fn description(e: &Entry<'_>, elements: bool) -> String {
    let mut text = format!(
        "{{densekv {} (OBJECT ENCODING {}), {} elements",
        e.encoding().name(),
        e.object_encoding(),
        e.view.len()
    );
    if let View::List(l) = e.view {
        let _ = write!(
            text,
            ", {} chunks, {} bytes of entries",
            l.chunk_count(),
            l.entry_bytes()
        );
    }
    text.push_str("}\n");
    if elements {
        let mut line = |parts: &[&[u8]]| {
            text.push_str("  ");
            for p in parts {
                let _ = write!(text, "{:?} ", String::from_utf8_lossy(p));
            }
            text.push('\n');
        };
        match &e.view {
            View::String(s) => s.with_bytes(|b| line(&[b])),
            View::List(l) => l.iter_from(0).for_each(|v| line(&[v])),
            View::Set(s) => s.for_each(|m| m.with_bytes(|m| line(&[m]))),
            View::Hash(h) => h
                .iter()
                .for_each(|(f, v)| f.with_bytes(|f| v.with_bytes(|v| line(&[f, v])))),
            View::ZSet(z) => z
                .iter(0, false)
                .for_each(|(s, m)| line(&[m, resp::double::g17(s).as_bytes()])),
        }
    }
    text
}

// ---------------------------------------------------------------------------------------------
// The digest (see the module doc).

/// A SHA1-sized digest, as `computeDatasetDigest` and `xorObjectDigest` keep it.
pub type Digest = [u8; 20];

fn sha1(data: &[u8]) -> Digest {
    sha1_smol::Sha1::from(data).digest().bytes()
}

/// Redis's `xorDigest`: `digest ^= SHA1(data)`. Xor commutes, so it digests unordered elements.
pub fn xor_digest(digest: &mut Digest, data: &[u8]) {
    for (d, h) in digest.iter_mut().zip(sha1(data)) {
        *d ^= h;
    }
}

/// Redis's `mixDigest`: `digest = SHA1(digest ^ SHA1(data))`, which depends on the order of the
/// calls: it digests sequences (list elements, a key and then its value).
pub fn mix_digest(digest: &mut Digest, data: &[u8]) {
    xor_digest(digest, data);
    *digest = sha1(digest);
}

/// Redis's `mixStringObjectDigest`: an integer mixes as its decimal text.
fn mix_str(digest: &mut Digest, s: &Str<'_>) {
    s.with_bytes(|b| mix_digest(digest, b));
}

/// Redis's type numbers (`OBJ_STRING` 0 … `OBJ_HASH` 4), which the digest mixes in.
fn type_number(kind: Kind) -> u32 {
    match kind {
        Kind::String => 0,
        Kind::List => 1,
        Kind::Set => 2,
        Kind::ZSet => 3,
        Kind::Hash => 4,
    }
}

fn kind_of(view: &View<'_>) -> Kind {
    match view {
        View::String(_) => Kind::String,
        View::List(_) => Kind::List,
        View::Set(_) => Kind::Set,
        View::Hash(_) => Kind::Hash,
        View::ZSet(_) => Kind::ZSet,
    }
}

/// Redis's `xorObjectDigest`: mixes one value (and whether it expires) into `digest`.
pub fn value_digest(digest: &mut Digest, view: &View<'_>, expires: bool) {
    mix_digest(digest, &type_number(kind_of(view)).to_be_bytes());
    match view {
        View::String(s) => mix_str(digest, s),
        View::List(l) => l.iter_from(0).for_each(|e| mix_digest(digest, e)),
        View::Set(s) => s.for_each(|m| m.with_bytes(|m| xor_digest(digest, m))),
        View::ZSet(z) => {
            for (score, member) in z.iter(0, false) {
                let mut element = [0u8; 20];
                mix_digest(&mut element, member);
                mix_digest(&mut element, resp::double::g17(score).as_bytes());
                xor_digest(digest, &element);
            }
        }
        View::Hash(h) => {
            for (field, value) in h {
                let mut element = [0u8; 20];
                mix_str(&mut element, &field);
                mix_str(&mut element, &value);
                xor_digest(digest, &element);
            }
        }
    }
    if expires {
        xor_digest(digest, b"!!expire!!");
    }
}

/// Redis's `computeDatasetDigest` over the whole keyspace (`shards`: every shard, locked).
pub fn dataset_digest(shards: &mut [&mut Shard]) -> Digest {
    let mut total = [0u8; 20];
    let databases = shards.first().map_or(0, |s| s.databases());
    for db in 0..databases {
        if shards.iter().all(|s| s.is_empty(db)) {
            continue;
        }
        mix_digest(&mut total, &(db as u32).to_be_bytes());
        for shard in shards.iter_mut() {
            shard.for_each_entry(db, |e| {
                let mut key_digest = [0u8; 20];
                mix_digest(&mut key_digest, e.key);
                value_digest(&mut key_digest, &e.view, e.expire_at_ms.is_some());
                xor_digest(&mut total, &key_digest);
            });
        }
    }
    total
}

/// DEBUG DIGEST-VALUE `<key>` …: each value's digest (the key itself is not mixed in), forty
/// zeros for a key that is not stored.
fn digest_values(ctx: &mut Ctx<'_, '_>, keys: &[&[u8]]) {
    let db = ctx.db();
    ctx.out.array_len(keys.len());
    for key in keys {
        let digest = ctx
            .shard(key)
            .peek(db, key, |e| {
                let mut digest = [0u8; 20];
                value_digest(&mut digest, &e.view, e.expire_at_ms.is_some());
                digest
            })
            .unwrap_or([0; 20]);
        ctx.out.simple(hex(&digest).as_bytes());
    }
}

fn hex(digest: &Digest) -> String {
    digest.iter().fold(String::with_capacity(40), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

// ---------------------------------------------------------------------------------------------
// Writing and replying.

/// DEBUG POPULATE `<count>` `[prefix]` `[size]`: `prefix:<n>` → `value:<n>` (zero-padded or cut
/// to `size`) for n in 0..count, skipping keys that exist; names longer than Redis's 128-byte
/// buffer are cut as `snprintf` cuts them. Watchers of a created key are told; the dirty counter
/// is not bumped (Redis's POPULATE does neither more nor less).
fn populate(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let count = match positive(args[2]) {
        Ok(n) => n,
        Err(e) => return ctx.error(e),
    };
    let size = match args.get(4).map(|a| positive(a)).transpose() {
        Ok(size) => size.unwrap_or(0) as usize,
        Err(e) => return ctx.error(e),
    };
    let prefix = args.get(3).map_or(&b"key"[..], |p| c_str(p));
    let (db, now) = (ctx.db(), ctx.now_ms);
    let watched: HashSet<Vec<u8>> = ctx
        .server
        .watched_keys(Some(db))
        .into_iter()
        .map(|(_, k)| k)
        .collect();
    let (mut key, mut value) = (Vec::new(), Vec::new());
    for n in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        let _ = write!(key, ":{n}");
        key.truncate(127);
        value.clear();
        let _ = write!(value, "value:{n}");
        if size > 0 {
            value.resize(size, 0);
        }
        let shard = ctx.shard(&key);
        if shard.contains(db, &key, now) {
            continue;
        }
        if let Err(e) = shard.put_string(db, &key, &value, Ttl::Clear, now) {
            return ctx.store_error(e);
        }
        if watched.contains(&key) {
            ctx.server.touch_watchers(db, &key);
        }
        crate::tracking::touched(ctx.server, &key);
    }
    ctx.ok();
}

/// DEBUG PROTOCOL `<type>`: Redis's test value of each reply type, in the client's protocol.
#[allow(
    clippy::approx_constant,
    reason = "Redis's test double is 3.141, not pi"
)]
fn protocol(ctx: &mut Ctx<'_, '_>, name: &[u8]) {
    let resp3 = ctx.out.protocol() == Protocol::Resp3;
    let name = c_str(name).to_ascii_lowercase();
    let out = &mut ctx.out;
    match name.as_slice() {
        b"string" => out.bulk(b"Hello World"),
        b"integer" => out.integer(12345),
        b"double" => out.double(3.141),
        b"bignum" => out.big_number(b"1234567999999999999999999999999999999"),
        b"null" => out.null(),
        b"array" | b"set" => {
            if name == b"set" {
                out.set_len(3);
            } else {
                out.array_len(3);
            }
            (0..3).for_each(|j| out.integer(j));
        }
        b"map" => {
            out.map_len(3);
            for j in 0..3 {
                out.integer(j);
                out.boolean(j == 1);
            }
        }
        b"attrib" => {
            if resp3 {
                // An attribute map precedes the reply it annotates (RESP3 only).
                out.out_mut().extend_from_slice(b"|1\r\n");
                out.bulk(b"key-popularity");
                out.array_len(2);
                out.bulk(b"key:123");
                out.integer(90);
            }
            out.bulk(b"Some real reply following the attribute");
        }
        b"push" if !resp3 => ctx.error("ERR RESP2 is not supported by this command"),
        b"push" => {
            out.push_len(2);
            out.bulk(b"server-cpu-usage");
            out.integer(42);
            out.bulk(b"Some real reply following the push reply");
        }
        b"true" | b"false" => out.boolean(name == b"true"),
        b"verbatim" => out.verbatim(b"This is a verbatim\nstring", *b"txt"),
        _ => ctx.error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false"),
    }
}

/// DEBUG STRUCTSIZE: Redis's `name:bytes ` list, with densekv's core structures.
fn structsize(ctx: &mut Ctx<'_, '_>) {
    let sizes = format!(
        "bits:{} page:{} piece:{} block:{} blockdesc:{} megablock:{} ",
        usize::BITS,
        maps::PAGE_BYTES,
        maps::PIECE_BYTES,
        heap::BLOCK_BYTES,
        size_of::<heap::desc::BlockDesc>(),
        heap::MEGABLOCK_BYTES
    );
    ctx.out.bulk(sizes.as_bytes());
}

// ---------------------------------------------------------------------------------------------
// Table statistics.

/// DEBUG HTSTATS `<dbid>` `[full]`: the PageHash of the database in every shard.
fn htstats(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let Some(db) = parse_i64(args[2]) else {
        return ctx.error(NOT_INTEGER);
    };
    let full = args.len() == 4 && is(c_str(args[3]), "full");
    let databases = ctx.server.config.read().databases;
    let Some(db) = usize::try_from(db).ok().filter(|&d| d < databases) else {
        return ctx.error("ERR Out of range database");
    };
    let mut text = String::from("[Dictionary HT]\n");
    let (mut keys, mut expires, mut lines) = (0, 0, Vec::new());
    let (mut total, shard_count) = (TableFigures::default(), ctx.server.shard_count());
    for (i, shard) in ctx.locks.iter_mut().enumerate() {
        keys += shard.len(db);
        expires += shard.expires(db);
        if let Some(shape) = shard.keyspace_shape(db) {
            let figures = TableFigures::of(shard.len(db), &shape, shard.memory_bytes(db));
            lines.push(format!(" shard {i}: {}\n", figures.line()));
            total.add(&figures);
        }
    }
    if keys == 0 {
        text.push_str("No stats available for empty dictionaries\n");
    } else {
        let _ = writeln!(
            text,
            "PageHash in {} of {} shards: {}",
            lines.len(),
            shard_count,
            total.line()
        );
        if full {
            for l in &lines {
                text.push_str(l);
            }
        }
    }
    text.push_str("[Expires HT]\n");
    if expires == 0 {
        text.push_str("No stats available for empty dictionaries\n");
    } else {
        let _ = writeln!(
            text,
            "No table of its own: an expiry is 8 bytes in its key's entry. keys with an expiry: {expires}"
        );
    }
    ctx.out.verbatim(text.as_bytes(), *b"txt");
}

/// DEBUG HTSTATS-KEY `<key>` `[full]`: the PageHash holding the members of a set or hash, or
/// a large zset's member index, when its encoding has one.
fn htstats_key(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (db, now, key) = (ctx.db(), ctx.now_ms, args[2]);
    let shard = ctx.shard(key);
    if !shard.contains(db, key, now) {
        return ctx.error("ERR no such key");
    }
    let text = shard.members(db, key).map(|members| match members {
        store::Members::Map(map) => {
            let figures = TableFigures::of(map.len(), &map.shape(), map.memory_bytes());
            format!("PageHash: {}\n", figures.line())
        }
        store::Members::ZSet(zset) => format!("ZSetIndex: {}\n", zset.stats_line()),
    });
    match text {
        Some(text) => ctx.out.verbatim(text.as_bytes(), *b"txt"),
        None => ctx.error(
            "ERR The value stored at the specified key is not represented using an hash table",
        ),
    }
}

/// One PageHash's figures, or their sum over shards.
#[derive(Debug, Default)]
struct TableFigures {
    entries: usize,
    pages: usize,
    buckets: usize,
    /// Used payload bytes over payload capacity, summed weighted by pages (divided on output).
    fill_pages: f64,
    directory_bytes: usize,
    memory_bytes: usize,
}

impl TableFigures {
    fn of(entries: usize, shape: &maps::Shape, memory_bytes: usize) -> TableFigures {
        TableFigures {
            entries,
            pages: shape.page_count,
            buckets: shape.bucket_count,
            fill_pages: shape.fill_ratio * shape.page_count as f64,
            directory_bytes: shape.directory_bytes,
            memory_bytes,
        }
    }

    fn add(&mut self, other: &TableFigures) {
        self.entries += other.entries;
        self.pages += other.pages;
        self.buckets += other.buckets;
        self.fill_pages += other.fill_pages;
        self.directory_bytes += other.directory_bytes;
        self.memory_bytes += other.memory_bytes;
    }

    fn line(&self) -> String {
        let fill = if self.pages == 0 {
            0.0
        } else {
            100.0 * self.fill_pages / self.pages as f64
        };
        format!(
            "entries: {}, pages: {} of {} bytes, buckets: {}, fill: {fill:.2}%, directory: {} bytes, memory: {} bytes",
            self.entries,
            self.pages,
            maps::PAGE_BYTES,
            self.buckets,
            self.directory_bytes,
            self.memory_bytes
        )
    }
}

// ---------------------------------------------------------------------------------------------
// The rest.

/// Iterations of Redis's `stringmatchlen_fuzz_test`.
const STRINGMATCH_FUZZ_CYCLES: usize = 10_000_000;

/// Redis's `stringmatchlen_fuzz_test` run against densekv's glob matcher: random patterns and
/// strings of up to 31 bytes below 128, matched for crashes (the matches are only counted).
fn stringmatch_fuzz() -> usize {
    let mut matches = 0;
    let (mut string, mut pattern) = ([0u8; 32], [0u8; 32]);
    for _ in 0..STRINGMATCH_FUZZ_CYCLES {
        let bits = super::random::random();
        let (string_len, pattern_len) = ((bits % 32) as usize, ((bits >> 5) % 32) as usize);
        for chunk in string[..string_len]
            .chunks_mut(8)
            .chain(pattern[..pattern_len].chunks_mut(8))
        {
            let bytes = super::random::random().to_le_bytes();
            for (b, r) in chunk.iter_mut().zip(bytes) {
                *b = r & 0x7f;
            }
        }
        matches += usize::from(store::glob::matches(
            &pattern[..pattern_len],
            &string[..string_len],
        ));
    }
    matches
}

/// DEBUG CONFIG-REWRITE-FORCE-ALL: CONFIG REWRITE with every parameter written, defaults
/// included. Without a config file, Redis's `rewriteConfig(NULL, 1)` fails with `EFAULT`, whose
/// text it replies.
fn config_rewrite_force_all(ctx: &mut Ctx<'_, '_>) {
    let config = ctx.server.config.read().clone();
    let Some(path) = config.config_file.as_deref() else {
        return ctx.error("ERR CONFIG-REWRITE-FORCE-ALL failed: Bad address");
    };
    let umask = crate::config::effects::umask();
    match crate::config::rewrite_file(&config, path, umask, true) {
        Ok(()) => ctx.ok(),
        Err(text) => ctx.error(&format!("ERR CONFIG-REWRITE-FORCE-ALL failed: {text}")),
    }
}

/// DEBUG REPLYBUFFER PEAK-RESET-TIME `<never|reset|ms>` / RESIZING `<0|1>`: checked as Redis
/// checks them and accepted (densekv's output buffers have no peak-reset cron to steer).
fn replybuffer(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let (what, value) = (c_str(args[2]), c_str(args[3]));
    if is(what, "peak-reset-time") {
        if !is(value, "never") && !is(value, "reset") && parse_i64(args[3]).is_none() {
            return ctx.error(NOT_INTEGER);
        }
    } else if !is(what, "resizing") {
        return unknown_subcommand(ctx, args[1]);
    }
    ctx.ok();
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::{Hash, List, Set, ShardConfig, ZSet};

    fn from_hex(text: &str) -> Digest {
        let mut d = [0u8; 20];
        for (i, b) in d.iter_mut().enumerate() {
            *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap();
        }
        d
    }

    #[test]
    fn xor_and_mix_follow_their_definitions() {
        // FIPS 180 test vector.
        let abc = from_hex("a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(sha1(b"abc"), abc);
        let mut d = [0u8; 20];
        xor_digest(&mut d, b"abc");
        assert_eq!(d, abc);
        xor_digest(&mut d, b"abc");
        assert_eq!(d, [0; 20], "xor twice cancels");
        mix_digest(&mut d, b"abc");
        assert_eq!(d, sha1(&abc));
        // Mixing depends on order; xoring does not.
        let (mut ab, mut ba) = ([0u8; 20], [0u8; 20]);
        mix_digest(&mut ab, b"a");
        mix_digest(&mut ab, b"b");
        mix_digest(&mut ba, b"b");
        mix_digest(&mut ba, b"a");
        assert_ne!(ab, ba);
        assert_eq!(hex(&abc), "a9993e364706816aba3e25717850c26c9cd0d89d");
    }

    /// A shard holding what redis-server 7.0.15 was given for the digests below.
    fn stocked() -> Shard {
        let mut s = Shard::new(&ShardConfig::default()).unwrap();
        s.put_string(0, b"a", b"1", Ttl::Clear, 0).unwrap();
        s.put_string(0, b"b", b"hello", Ttl::Clear, 0).unwrap();
        s.update::<List, _>(0, b"l", 0, true, |l| {
            for e in [b"a", b"b", b"c"] {
                l.push_back(e);
            }
            Ok(())
        })
        .unwrap();
        s
    }

    fn value(shard: &mut Shard, key: &[u8]) -> String {
        let d = shard.peek(0, key, |e| {
            let mut d = [0u8; 20];
            value_digest(&mut d, &e.view, e.expire_at_ms.is_some());
            d
        });
        hex(&d.unwrap_or([0; 20]))
    }

    /// Digests redis-server 7.0.15 printed for the same data (`SET a 1`, `SET b hello`,
    /// `RPUSH l a b c`, `SADD s x 2 y`, `HSET h f1 v1 f2 2`, `ZADD z 1.5 m 2 n -0.1 o`,
    /// `SET t v PX 100000000`, then `SET a 1` in db 3).
    #[test]
    fn digests_equal_redis_servers() {
        let mut shard = stocked();
        assert_eq!(
            hex(&dataset_digest(&mut [&mut shard])),
            "ed5343054f373042930d755c2f4fad63b813a7d8"
        );
        let s = &mut shard;
        s.update::<Set, _>(0, b"s", 0, true, |set| {
            [&b"x"[..], b"2", b"y"]
                .iter()
                .try_for_each(|m| set.add(m).map(drop))
        })
        .unwrap();
        s.update::<Hash, _>(0, b"h", 0, true, |h| {
            h.set(b"f1", b"v1")?;
            h.set(b"f2", b"2")
        })
        .unwrap();
        s.update::<ZSet, _>(0, b"z", 0, true, |z| {
            z.insert(b"m", 1.5)?;
            z.insert(b"n", 2.0)?;
            z.insert(b"o", -0.1)
        })
        .unwrap();
        s.put_string(0, b"t", b"v", Ttl::At(u64::MAX / 2), 0)
            .unwrap();
        let expected = [
            ("a", "b4fc66738120fba0b5aa500ab5c2bf89cea1c5da"),
            ("b", "36b23a1456b2dce2c3ed252c456761301dba8060"),
            ("l", "8bf72d812571eea9b927f3c11beb0c4165a6ff89"),
            ("s", "eccffdbd2837a69a1e4b1375f1229f14c0974e6e"),
            ("h", "fc076e867f7dbf566ea58172a151d82d78b8f845"),
            ("z", "9443f284d4a284c92758d2fa27a9506de047e121"),
            ("t", "311b17018163335616e089f6b951c82c477335ac"),
            ("missing", "0000000000000000000000000000000000000000"),
        ];
        for (key, digest) in expected {
            assert_eq!(value(s, key.as_bytes()), digest, "{key}");
        }
        s.put_string(3, b"a", b"1", Ttl::Clear, 0).unwrap();
        // The same data split over two shards digests the same.
        let mut other = Shard::new(&ShardConfig::default()).unwrap();
        assert!(s.remove(0, b"b", 0));
        other.put_string(0, b"b", b"hello", Ttl::Clear, 0).unwrap();
        assert_eq!(
            hex(&dataset_digest(&mut [s, &mut other])),
            "c2c317bdc2c6aecad0b5f9d5bdff5c4d243c99eb"
        );
        let mut empty = Shard::new(&ShardConfig::default()).unwrap();
        assert_eq!(hex(&dataset_digest(&mut [&mut empty])), "0".repeat(40));
    }

    #[test]
    #[allow(clippy::float_cmp, reason = "strtod's results here are exact")]
    fn c_arguments_read_as_c_reads_them() {
        assert_eq!(atoi(b" 42abc"), 42);
        assert_eq!(atoi(b"-7"), -7);
        assert_eq!(atoi(b"abc"), 0);
        assert_eq!(atoi(b"4294967296"), 0, "strtol's value cast to int");
        assert_eq!(atoi(b"99999999999999999999"), -1, "LONG_MAX cast to int");
        assert_eq!(atoi(b"1\x002"), 1);
        assert_eq!(strtod(b"0.5s"), 0.5);
        assert_eq!(strtod(b"  1e3x"), 1000.0);
        assert_eq!(strtod(b"x"), 0.0);
        assert_eq!(memtoull(b"1k"), Some(1000));
        assert_eq!(memtoull(b"1KB"), Some(1024));
        assert_eq!(memtoull(b"3gb"), Some(3 << 30));
        assert_eq!(memtoull(b""), Some(0));
        assert_eq!(memtoull(b"-1"), None);
        assert_eq!(memtoull(b"1x"), None);
        assert_eq!(memtoull(b"+1"), None);
        assert_eq!(memtoull(b"18446744073709551616"), Some(u64::MAX));
    }

    #[test]
    fn serialized_length_of_strings_is_rdbs() {
        assert_eq!(rdb_string_bytes(&Str::Int(1)), 2);
        assert_eq!(rdb_string_bytes(&Str::Int(300)), 3);
        assert_eq!(rdb_string_bytes(&Str::Int(70_000)), 5);
        assert_eq!(rdb_string_bytes(&Str::Int(1 << 40)), 1 + 13);
        assert_eq!(rdb_string_bytes(&Str::Bytes(b"hello")), 6);
        assert_eq!(rdb_string_bytes(&Str::Bytes(b"12")), 2);
        assert_eq!(rdb_string_bytes(&Str::Bytes(&[b'x'; 100])), 102);
    }

    #[test]
    fn the_glob_fuzz_survives() {
        assert!(stringmatch_fuzz() > 0);
    }
}
