//! Read-ahead of the keyspace for a pipelined batch: before the first request of a batch runs,
//! the keys (and collection members) of the next few complete requests are prefetched stage by
//! stage, so the batch waits for memory once rather than once per request.

use crate::server::Server;

/// Requests read ahead per batch: a `-P 16` pipeline is one batch.
const PREFETCH_BATCH: usize = 16;

/// Keys prefetched per batch at most.
const PREFETCH_KEYS_MAX: usize = 64;

/// A key `prefetch_ahead` found: (shard, key, member or field).
type Ahead<'b> = (usize, &'b [u8], Option<&'b [u8]>);

/// Starts loading the keyspace entries of the next few complete requests in `buf` (their keys,
/// from the command table's key specs), so that a pipelined batch waits for memory once rather
/// than once per request: every key's directory word, then every page's index, then every run
/// (`Shard::prefetch`); then the same for the member or field of set, hash and sorted-set
/// commands in their collection's map (`command::member_arg`). Only a hint: a shard that is
/// busy is skipped. Returns the bytes of the requests covered; a lone key is not prefetched
/// (nothing to overlap it with).
pub(super) fn prefetch_ahead(server: &Server, db: usize, buf: &[u8]) -> usize {
    let mut batch: smallvec::SmallVec<[Ahead<'_>; PREFETCH_BATCH]> = smallvec::SmallVec::new();
    let mut spans: smallvec::SmallVec<[std::ops::Range<usize>; 24]> = smallvec::SmallVec::new();
    let (mut at, mut requests) = (0, 0);
    let mut last_spec: Option<(&[u8], &crate::command::Spec)> = None;
    while requests < PREFETCH_BATCH && batch.len() < PREFETCH_KEYS_MAX {
        spans.clear();
        let Some(peeked) = resp::peek::peek_multibulk(&buf[at..], |_, span| spans.push(span))
        else {
            break;
        };
        let arg = |i: usize| spans.get(i).map(|r| &buf[at + r.start..at + r.end]);
        if let (Some(name), Some(key)) = (arg(0), arg(1)) {
            // A pipeline mostly repeats one command: its spec is looked up once per run.
            let spec = match last_spec {
                Some((last, spec)) if last.eq_ignore_ascii_case(name) => Some(spec),
                _ => crate::command::lookup(name).map(|(_, spec)| spec),
            };
            last_spec = spec.map(|spec| (name, spec));
            let member = spec.and_then(crate::command::member_arg).and_then(arg);
            batch.push((server.shard_of(key), key, member));
            // Multi-key commands (MSET, MGET, DEL…): the rest of their keys, from the key spec.
            // A command with a member argument has one key (a command-table test holds it).
            if member.is_none()
                && peeked.argc >= 4
                && let Some(spec) = spec
            {
                let args: smallvec::SmallVec<[&[u8]; 24]> =
                    (0..spans.len()).filter_map(arg).collect();
                for i in crate::command::key_positions(spec, &args) {
                    if i != 1 && batch.len() < PREFETCH_KEYS_MAX {
                        batch.push((server.shard_of(args[i]), args[i], None));
                    }
                }
            }
        }
        at += peeked.consumed;
        requests += 1;
    }
    if batch.len() < 2 {
        return at;
    }
    let mut guards: smallvec::SmallVec<[Option<parking_lot::MutexGuard<'_, store::Shard>>; 16]> =
        (0..server.shard_count()).map(|_| None).collect();
    for &(shard, ..) in &batch {
        if guards[shard].is_none() {
            guards[shard] = server.try_lock_shard(shard);
        }
    }
    for stage in 0..3 {
        for &(shard, key, _) in &batch {
            if let Some(guard) = &guards[shard] {
                guard.prefetch(db, key, stage);
            }
        }
    }
    prefetch_members(db, &batch, &guards);
    at
}

/// The second half of `prefetch_ahead`: prefetches the slot of every member or field in its
/// collection's map, stage by stage, in the shards `guards` holds (indexed by shard).
fn prefetch_members(
    db: usize,
    batch: &[Ahead<'_>],
    guards: &[Option<parking_lot::MutexGuard<'_, store::Shard>>],
) {
    let mut maps: smallvec::SmallVec<[(store::Members<'_>, u64); PREFETCH_BATCH]> =
        smallvec::SmallVec::new();
    // A pipeline usually targets one collection: look its map up once per run of equal keys.
    let mut last: Option<(&[u8], Option<store::Members<'_>>)> = None;
    for &(shard, key, member) in batch {
        let (Some(guard), Some(member)) = (&guards[shard], member) else {
            continue;
        };
        let map = match last {
            Some((k, map)) if k == key => map,
            _ => guard.members(db, key),
        };
        last = Some((key, map));
        if let Some(map) = map {
            maps.push((map, map.hash(member)));
        }
    }
    for stage in 0..3 {
        for &(map, hash) in &maps {
            map.prefetch(hash, stage);
        }
    }
}
