//! MEMORY (USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE, HELP) and INFO's memory section: one
//! picture of where the process's memory is, with Redis's names for its parts.
//!
//! ```text
//!  used_memory (total.allocated)  = heap allocated (every shard)  + global allocator's live bytes
//!  allocator.active               = heap blocks in use             + global allocator's live bytes
//!  allocator.resident             = heap resident estimate         + global allocator's live bytes
//!                                   (blocks in use + dirty free blocks + descriptor pages)
//!  rss                            = VmRSS of the process (binary, stacks, libc arenas included)
//!
//!  allocator-fragmentation.ratio  = active / allocated      (slab slots and blocks not in use)
//!  allocator-rss.ratio            = resident / active       (freed, not yet given back: decay)
//!  rss-overhead.ratio             = rss / resident          (what is not the heap's)
//!  fragmentation                  = rss / used_memory       (mem_fragmentation_ratio)
//!
//!  overhead.total = startup.allocated + clients.normal + aof.buffer
//!                   + Σ db.N.overhead.hashtable.main  (the keyspace maps' directory and the
//!                     unused bytes of their pages: what holds no key or value)
//!  dataset.bytes  = used_memory − overhead.total
//! ```
//! The global allocator's resident bytes are not known (glibc keeps its own free lists), so
//! its live bytes stand in for them in both active and resident; what it keeps beyond them
//! shows in `rss-overhead`. A TTL is stored with its key, so `overhead.hashtable.expires` is 0.

use super::args::{is, parse_i64};
use crate::command::{ALL, Ctx, Keys, LOADING, NOKEYS, NONE, READONLY, STALE, Spec, table};
use crate::config::Config;
use crate::server::Server;
use std::fmt::Write as _;

pub static SUBCOMMANDS: &[Spec] = table! {
    // name                arity, flags,           keys,                                       member, handler
    "memory|usage",        -3,    READONLY,        Keys::Range { first: 2, last: 2, step: 1 }, 0,      usage;
    "memory|stats",        2,     NONE,            ALL,                                        0,      stats;
    "memory|doctor",       2,     NONE,            ALL,                                        0,      doctor;
    "memory|malloc-stats", 2,     NONE,            ALL,                                        0,      malloc_stats;
    "memory|purge",        2,     NONE,            ALL,                                        0,      purge;
    "memory|help",         2,     LOADING | STALE, NOKEYS,                                     0,      help;
};

/// Memory figures summed over the shards (their locks are held by the caller).
#[derive(Debug, Default)]
pub struct Memory {
    /// `used_memory`: heap allocated bytes plus the global allocator's.
    pub used: u64,
    /// The global allocator's live bytes.
    pub global: u64,
    /// Heap bytes of blocks in use (slabs, groups, large regions), descriptor pages included.
    pub active: u64,
    /// Heap resident estimate: `active` plus freed blocks not yet given back.
    pub resident: u64,
    pub reserved: u64,
    pub requested: u64,
    pub large_cache: u64,
    pub dirty: u64,
    /// Keyspace maps' bytes that hold no entry (directory, unused page bytes), per database.
    pub keyspace_overhead: Vec<(usize, u64)>,
    pub keys: u64,
    pub shapes: u64,
    pub shape_hits: u64,
    pub shape_misses: u64,
    pub shape_fallbacks: u64,
    /// Keys per encoding (`store::Encoding::slot`).
    pub encodings: [u64; store::ENCODING_SLOTS],
}

/// Sums the memory figures of every shard `ctx` holds.
pub fn totals(ctx: &mut Ctx<'_, '_>) -> Memory {
    let global = crate::alloc::allocated_bytes() as u64;
    let mut m = Memory {
        used: global,
        global,
        active: global,
        resident: global,
        ..Memory::default()
    };
    let databases = ctx.server.config.read().databases;
    let mut overhead = vec![0u64; databases];
    for shard in ctx.locks.iter_mut() {
        let s = shard.heap().stats();
        m.used += s.allocated_bytes;
        m.resident += s.resident_bytes;
        m.active += s.resident_bytes.saturating_sub(s.dirty_bytes);
        m.reserved += s.reserved_bytes;
        m.requested += s.requested_bytes;
        m.large_cache += s.large_cache_bytes;
        m.dirty += s.dirty_bytes;
        for (db, bytes) in overhead.iter_mut().enumerate() {
            *bytes += keyspace_overhead(shard, db);
            m.keys += shard.len(db) as u64;
        }
        let shapes = shard.shapes().stats();
        m.shapes += shapes.shapes;
        m.shape_hits += shapes.cache_hits;
        m.shape_misses += shapes.cache_misses;
        m.shape_fallbacks += shapes.too_complex;
        for (t, n) in m.encodings.iter_mut().zip(shard.encoding_counts()) {
            *t += n;
        }
    }
    m.keyspace_overhead = overhead
        .into_iter()
        .enumerate()
        .filter(|&(db, _)| ctx.locks.iter_mut().any(|s| s.len(db) > 0))
        .collect();
    m
}

/// What `db`'s keyspace map spends beyond its entries: the directory and the unused bytes of
/// its pages.
fn keyspace_overhead(shard: &store::Shard, db: usize) -> u64 {
    shard.keyspace_shape(db).map_or(0, |s| {
        let pages = (s.page_count * maps::PAGE_BYTES) as f64;
        (s.directory_bytes as f64 + pages * (1.0 - s.fill_ratio)) as u64
    })
}

/// The process's resident set (VmRSS), from `/proc/self/statm`.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

/// Redis's `bytesToHuman`.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b < 1024.0 {
        format!("{bytes}B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.2}K", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", b / 1024.0 / 1024.0)
    } else {
        format!("{:.2}G", b / 1024.0 / 1024.0 / 1024.0)
    }
}

/// The machine's memory in bytes (`MemTotal`), 0 when unknown.
pub fn total_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// Redis's `getMemoryOverheadData`, on densekv's parts (see the module doc).
#[derive(Debug)]
struct Overhead {
    startup: u64,
    clients: u64,
    aof_buffer: u64,
    total: u64,
    dataset: u64,
    bytes_per_key: u64,
    dataset_perc: f64,
    peak_perc: f64,
}

fn overhead(server: &Server, mem: &Memory, peak: u64) -> Overhead {
    let startup = server.initial_memory();
    let clients = server.client_memory().0 as u64;
    let aof_buffer = server.aof.buffer_len() as u64;
    let keyspace: u64 = mem.keyspace_overhead.iter().map(|&(_, b)| b).sum();
    let total = startup + clients + aof_buffer + keyspace;
    let dataset = mem.used.saturating_sub(total);
    let net = mem.used.saturating_sub(startup).max(1);
    Overhead {
        startup,
        clients,
        aof_buffer,
        total,
        dataset,
        bytes_per_key: net.checked_div(mem.keys).unwrap_or(0),
        dataset_perc: dataset as f64 * 100.0 / net as f64,
        peak_perc: mem.used as f64 * 100.0 / peak.max(1) as f64,
    }
}

/// INFO's memory section.
pub fn info_section(t: &mut String, server: &Server, mem: &Memory, config: &Config) {
    let rss = rss_bytes();
    let peak = server.note_used_memory(mem.used);
    let over = overhead(server, mem, peak);
    let used = mem.used;
    let _ = write!(
        t,
        "used_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{:.2}%\r\nused_memory_overhead:{}\r\nused_memory_startup:{}\r\nused_memory_dataset:{}\r\nused_memory_dataset_perc:{:.2}%\r\nallocator_allocated:{used}\r\nallocator_active:{}\r\nallocator_resident:{}\r\ntotal_system_memory:{}\r\ntotal_system_memory_human:{}\r\n{}maxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nallocator_frag_ratio:{:.2}\r\nallocator_frag_bytes:{}\r\nallocator_rss_ratio:{:.2}\r\nallocator_rss_bytes:{}\r\nrss_overhead_ratio:{:.2}\r\nrss_overhead_bytes:{}\r\nmem_fragmentation_ratio:{:.2}\r\nmem_fragmentation_bytes:{}\r\nmem_not_counted_for_evict:0\r\nmem_clients_normal:{}\r\nmem_aof_buffer:{}\r\nmem_allocator:densekv-heap\r\n",
        human(used),
        human(rss),
        human(peak),
        over.peak_perc,
        over.total,
        over.startup,
        over.dataset,
        over.dataset_perc,
        mem.active,
        mem.resident,
        total_memory(),
        human(total_memory()),
        server.scripting.info_fields(),
        config.maxmemory,
        human(config.maxmemory),
        config.maxmemory_policy,
        ratio(mem.active, used),
        mem.active as i64 - used as i64,
        ratio(mem.resident, mem.active),
        mem.resident as i64 - mem.active as i64,
        ratio(rss, mem.resident),
        rss as i64 - mem.resident as i64,
        ratio(rss, used),
        rss as i64 - used as i64,
        over.clients,
        over.aof_buffer,
    );
    let defrag = &server.defrag;
    let _ = write!(
        t,
        "active_defrag_running:{}\r\nlazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n",
        defrag.running_percent()
    );
    info_densekv(t, mem);
}

/// densekv's own memory fields: the heap's parts, SmallMap hints, shapes, keys per encoding.
fn info_densekv(t: &mut String, mem: &Memory) {
    let hints = maps::hint_stats();
    let _ = write!(
        t,
        "densekv_heap_requested:{}\r\ndensekv_heap_reserved:{}\r\ndensekv_heap_large_cache:{}\r\ndensekv_heap_dirty:{}\r\ndensekv_smallmap_hint_hits:{}\r\ndensekv_smallmap_hint_misses:{}\r\ndensekv_smallmap_not_found:{}\r\ndensekv_shapes:{}\r\ndensekv_shape_cache_hits:{}\r\ndensekv_shape_cache_misses:{}\r\ndensekv_shape_fallbacks:{}\r\n",
        mem.requested,
        mem.reserved,
        mem.large_cache,
        mem.dirty,
        hints.hint_hit,
        hints.hint_miss,
        hints.not_found,
        mem.shapes,
        mem.shape_hits,
        mem.shape_misses,
        mem.shape_fallbacks
    );
    for encoding in store::Encoding::ALL {
        let count = mem.encodings[encoding.slot()];
        let _ = write!(t, "densekv_keys_{}:{count}\r\n", encoding.name());
    }
}

/// MEMORY USAGE: the bytes the key `args[2]` and its value take (null when it does not exist).
pub fn usage(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    // `SAMPLES n` any number of times, as Redis parses it (the last one wins; densekv
    // measures exactly, so the count changes nothing).
    let mut j = 3;
    while j < args.len() {
        if !(is(args[j], "samples") && j + 1 < args.len()) {
            return ctx.syntax_error();
        }
        match parse_i64(args[j + 1]) {
            None => return ctx.not_integer(),
            Some(n) if n < 0 => return ctx.syntax_error(),
            Some(_) => {}
        }
        j += 2;
    }
    let key = args[2];
    let (db, now) = (ctx.db(), ctx.now_ms);
    let usage = ctx.shard(key).memory_usage(db, key, now);
    match usage {
        Some(n) => ctx.out.integer(n as i64),
        None => ctx.out.null(),
    }
}

/// MEMORY STATS: Redis 7.0's map, field for field (see the module doc for what each is here).
pub fn stats(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let mem = totals(ctx);
    let server = ctx.server;
    let rss = rss_bytes();
    let peak = server.note_used_memory(mem.used);
    let over = overhead(server, &mem, peak);
    let out = &mut ctx.out;
    out.map_len(27 + mem.keyspace_overhead.len());
    let int = |out: &mut resp::ReplyWriter<'_>, name: &str, value: i64| {
        out.bulk(name.as_bytes());
        out.integer(value);
    };
    for (name, value) in [
        ("peak.allocated", peak),
        ("total.allocated", mem.used),
        ("startup.allocated", over.startup),
        ("replication.backlog", 0),
        ("clients.slaves", 0),
        ("clients.normal", over.clients),
        ("cluster.links", 0),
        ("aof.buffer", over.aof_buffer),
        ("lua.caches", 0),
        ("functions.caches", 0),
    ] {
        int(out, name, value as i64);
    }
    for &(db, bytes) in &mem.keyspace_overhead {
        out.bulk(format!("db.{db}").as_bytes());
        out.map_len(3);
        int(out, "overhead.hashtable.main", bytes as i64);
        int(out, "overhead.hashtable.expires", 0);
        int(out, "overhead.hashtable.slot-to-keys", 0);
    }
    int(out, "overhead.total", over.total as i64);
    int(out, "keys.count", mem.keys as i64);
    int(out, "keys.bytes-per-key", over.bytes_per_key as i64);
    int(out, "dataset.bytes", over.dataset as i64);
    let double = |out: &mut resp::ReplyWriter<'_>, name: &str, value: f64| {
        out.bulk(name.as_bytes());
        out.double(value);
    };
    double(out, "dataset.percentage", over.dataset_perc);
    double(out, "peak.percentage", over.peak_perc);
    int(out, "allocator.allocated", mem.used as i64);
    int(out, "allocator.active", mem.active as i64);
    int(out, "allocator.resident", mem.resident as i64);
    let pairs = [
        ("allocator-fragmentation", mem.active, mem.used),
        ("allocator-rss", mem.resident, mem.active),
        ("rss-overhead", rss, mem.resident),
    ];
    for (name, a, b) in pairs {
        double(out, &format!("{name}.ratio"), ratio(a, b));
        int(out, &format!("{name}.bytes"), a as i64 - b as i64);
    }
    double(out, "fragmentation", ratio(rss, mem.used));
    int(out, "fragmentation.bytes", rss as i64 - mem.used as i64);
}

/// MEMORY DOCTOR: Redis's checks (`getMemoryDoctorReport`) on the figures of MEMORY STATS.
pub fn doctor(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let mem = totals(ctx);
    let server = ctx.server;
    let rss = rss_bytes();
    let peak = server.note_used_memory(mem.used);
    let over = overhead(server, &mem, peak);
    let clients = server.clients.lock().len().max(1) as u64;
    let report = doctor_report(&Findings {
        used: mem.used,
        peak,
        rss,
        active: mem.active,
        resident: mem.resident,
        clients_per_client: over.clients / clients,
    });
    ctx.out.verbatim(report.as_bytes(), *b"txt");
}

/// What MEMORY DOCTOR looks at.
#[derive(Debug)]
struct Findings {
    used: u64,
    peak: u64,
    rss: u64,
    active: u64,
    resident: u64,
    clients_per_client: u64,
}

const MIB: u64 = 1 << 20;

/// Redis's report texts; the allocator named is densekv's heap.
fn doctor_report(f: &Findings) -> String {
    if f.used < 5 * MIB {
        return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".to_string();
    }
    let over = |a: u64, b: u64, r: f64| ratio(a, b) > r && a.saturating_sub(b) > 10 * MIB;
    let findings = [
        (ratio(f.peak, f.used) > 1.5, " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n".to_string()),
        (over(f.rss, f.used, 1.4), " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"densekv-heap\".\n\n".to_string()),
        (over(f.active, f.used, 1.1), " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n".to_string()),
        (over(f.resident, f.active, 1.1), " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n".to_string()),
        (over(f.rss, f.resident, 1.1), " * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n".to_string()),
        (f.clients_per_client > 200 * 1024, " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n".to_string()),
    ];
    let found: Vec<&String> = findings
        .iter()
        .filter(|(hit, _)| *hit)
        .map(|(_, t)| t)
        .collect();
    if found.is_empty() {
        return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".to_string();
    }
    let mut s =
        "Sam, I detected a few issues in this Redis instance memory implants:\n\n".to_string();
    for text in found {
        s.push_str(text);
    }
    s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
    s
}

/// MEMORY MALLOC-STATS: the heap's and the global allocator's figures.
pub fn malloc_stats(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    let mem = totals(ctx);
    let text = format!(
        "densekv heap: allocated={} active={} resident={} reserved={} large_cache={} dirty={}\nglobal allocator: allocated={}\n",
        mem.used - mem.global,
        mem.active - mem.global,
        mem.resident - mem.global,
        mem.reserved,
        mem.large_cache,
        mem.dirty,
        mem.global
    );
    ctx.out.verbatim(text.as_bytes(), *b"txt");
}

/// MEMORY PURGE: every shard heap gives back at once what decay would give back over time, and
/// the system allocator its free pages.
pub fn purge(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    for shard in ctx.locks.iter_mut() {
        shard.purge();
    }
    crate::alloc::purge_system();
    ctx.ok();
}

pub fn help(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    super::server::help(
        ctx,
        &[
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
            "HELP",
            "    Prints this help.",
        ],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(used: u64) -> Findings {
        Findings {
            used,
            peak: used,
            rss: used,
            active: used,
            resident: used,
            clients_per_client: 0,
        }
    }

    #[test]
    fn doctor_reports_what_redis_checks() {
        assert!(doctor_report(&findings(MIB)).contains("empty or is using very little"));
        assert!(doctor_report(&findings(100 * MIB)).starts_with("Hi Sam, I can't find"));
        let peak = Findings {
            peak: 200 * MIB,
            ..findings(100 * MIB)
        };
        let report = doctor_report(&peak);
        assert!(report.contains(" * Peak memory") && report.ends_with("help you.\n"));
        let fragmented = Findings {
            active: 150 * MIB,
            resident: 150 * MIB,
            rss: 151 * MIB,
            ..findings(100 * MIB)
        };
        let report = doctor_report(&fragmented);
        assert!(report.contains("High allocator fragmentation"));
        assert!(report.contains("High total RSS"));
        assert!(!report.contains("High process RSS"));
    }
}
