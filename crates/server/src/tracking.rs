//! Client-side caching: Redis 7.0's key tracking (src/tracking.c) — which clients may hold which
//! keys in a local cache, and the `invalidate` messages that tell them a key changed.
//!
//! ```text
//!  Server::tracking ─┬─ table: one partition per keyspace shard (a key's partition is its shard,
//!                    │     so the lock taken here is as contended as the shard lock already held)
//!                    │     Mutex<Table>: entries: Vec<Entry>    slot → { key, client ids }
//!                    │                   index:   HashTable<u32> hash(key) → slot
//!                    ├─ prefixes: Mutex<BTreeMap<prefix, Bcast{ keys: key → last modifier,
//!                    │                                          clients }>>   (BCAST mode)
//!                    └─ registry: RwLock<id → Tracked{ client, redirect, bcast, noloop }>
//!  ClientState::tracking ── the client's own mode: OPTIN / OPTOUT, CACHING, its prefixes, and
//!                           the invalidations it gets after its current command's reply
//!  ClientInfo::tracking ─── what CLIENT LIST shows (`t`, `R`, `B`, `redir=`)
//! ```
//!
//! # Default mode
//! After a READONLY command of a tracking client (`leave`, called by `command::run`), the keys
//! Redis's `getKeysFromCommand` names (`introspect::keys_of`) are remembered, key → client ids,
//! as OPTIN / OPTOUT and CLIENT CACHING (for the next command only) allow. A write
//! (`Server::touch`, Redis's `signalModifiedKey`), an expiry or an eviction (`deleted`) removes
//! the key's entry and sends each of its clients still tracking in default mode one message for
//! that key — except a NOLOOP client that is the one running the command. The running client
//! itself gets its message after its reply (Redis's `tracking_pending_keys`):
//! `ClientTracking::pending`, flushed by `net/conn.rs` right after each command. A client that
//! disconnected or turned tracking off is not in the registry when a key it read changes and is
//! skipped: the table forgets ids lazily, as Redis's does, so a disconnect costs nothing here.
//!
//! # BCAST
//! A modified key is matched against every registered prefix and remembered in each that
//! matches, with the client that modified it. Redis sends these once per event-loop iteration
//! (`trackingBroadcastInvalidationMessages` in beforeSleep); densekv sends them at the end of the
//! loop turn of the thread that gets there first (`broadcast`, from `net/mod.rs` before the
//! turn's replies are written), so keys modified by one client's pipeline come in one message
//! per prefix, after that client's replies, as in Redis. Expiries and evictions outside a
//! command are broadcast at once (the cron's turn has no end of its own). A prefix's message
//! lists its keys in byte order (Redis's rax order); a NOLOOP client gets the keys it did not
//! modify itself, or nothing.
//!
//! # Delivery
//! `send` is Redis's `sendTrackingMessage`: to the client, or to its REDIRECT target; a target
//! that is gone sets the client's broken-redirect flag and sends it `tracking-redir-broken`. The
//! receiver's own thread frames the message (`encode`) for its protocol: a RESP3 push, or for a
//! RESP2 redirect target with any subscription a `message` on `__redis__:invalidate`, else
//! nothing. Other connections get it as mail (`mail.rs`); the running client gets it straight
//! into its output — ahead of its reply when it is the redirect target of a client whose key it
//! modified (Redis writes it then), after its reply when it tracks the key itself. FLUSHALL and
//! FLUSHDB send every tracking client a null (`flushed`) and drop the whole table.
//!
//! # Memory
//! ```text
//!  Entry, 32 B, in the partition's slab           index bucket: u32 slot + 1 control byte
//!  ┌──────────────────────┬──────────────────────┐
//!  │ key: Box<[u8]>  16 B │ ids: Ids        16 B │  Ids::One(id) inline; Many(Box<Vec<u64>>)
//!  └──────────────────────┴──────────────────────┘  from the second client on: 32 B + 8 B/id
//! ```
//! A key read by one client costs its 32-byte entry, ≥ 4.6 B of index (5 B per bucket at ≤ 7/8
//! load) and one allocation for its bytes. Measured (`differential_tracking.rs`, 50,000 9-byte
//! keys): used_memory grows by 57 B per key (requested bytes: the slab and index between
//! resizes, and the key), where redis-server 7.0.15 grows by 99 B (a rax of keys, each pointing
//! to a rax of ids: a 24-byte rax, its head node and the 8-byte id node). A second client on a
//! key adds the 32-byte id vector, each further one 8 B. The table lives on the global allocator, so INFO's
//! `used_memory` counts it (`alloc.rs`); a partition that empties to a quarter of its capacity
//! gives the rest back, and FLUSHALL drops every partition.
//!
//! Locking: a shard lock (held by the command) → a partition (never held across anything else)
//! or the prefixes (held across a broadcast's posting, see `broadcast`) → the registry →
//! `Server::clients` → a client's info → a mailbox. Nothing here is held across a socket write.

use crate::client::ClientState;
use crate::command::{COMMANDS, flag};
use crate::mail::{Batch, Mail};
use crate::server::{ClientShared, Server};
use hashbrown::HashTable;
use parking_lot::{Mutex, RwLock};
use resp::Protocol;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::BuildHasher;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Redis's `TrackingChannelName`: where a RESP2 redirect target gets its invalidations.
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

const RELAXED: Ordering = Ordering::Relaxed;

// ---------------------------------------------------------------------------------------------
// The key table.

/// The order Redis walks a key's client ids in: its rax is keyed by each id's native
/// (little-endian) bytes, so it is the order of those bytes read big-endian.
fn rax_order(id: u64) -> u64 {
    u64::from_be_bytes(id.to_le_bytes())
}

/// The clients that may cache one key, in Redis's order (`rax_order`). Nearly every key is read
/// by one client, whose id sits inline.
#[derive(Debug)]
#[allow(
    clippy::box_collection,
    reason = "a boxed vector keeps `Ids` at 16 bytes (a bare one makes it 24) for the rare key \
              several clients read"
)]
enum Ids {
    One(u64),
    Many(Box<Vec<u64>>),
}

impl Ids {
    /// Adds `id`; false when it was there.
    fn insert(&mut self, id: u64) -> bool {
        match self {
            Ids::One(first) if *first == id => false,
            Ids::One(first) => {
                let mut ids = vec![*first, id];
                ids.sort_unstable_by_key(|&i| rax_order(i));
                *self = Ids::Many(Box::new(ids));
                true
            }
            Ids::Many(ids) => match ids.binary_search_by_key(&rax_order(id), |&i| rax_order(i)) {
                Ok(_) => false,
                Err(at) => {
                    ids.insert(at, id);
                    true
                }
            },
        }
    }

    fn as_slice(&self) -> &[u64] {
        match self {
            Ids::One(id) => std::slice::from_ref(id),
            Ids::Many(ids) => ids,
        }
    }

    fn len(&self) -> usize {
        self.as_slice().len()
    }
}

/// One tracked key.
#[derive(Debug)]
struct Entry {
    key: Box<[u8]>,
    ids: Ids,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 32);
const _: () = assert!(std::mem::size_of::<Ids>() == 16);

type Hasher = foldhash::fast::RandomState;

/// One partition of the key table: a dense slab of entries and a hash index into it, so a
/// random key (`tracking-table-max-keys`) is one index away. Invariants: `index` holds each
/// slot of `entries` once, under the hash of its key; `items` is the sum of the entries' ids.
#[derive(Debug, Default)]
struct Table {
    entries: Vec<Entry>,
    index: HashTable<u32>,
    items: usize,
}

/// What an insert added: the key, the id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Added {
    key: bool,
    item: bool,
}

impl Table {
    fn insert(&mut self, hasher: &Hasher, key: &[u8], id: u64) -> Added {
        let Table {
            entries,
            index,
            items,
        } = self;
        let hash = hasher.hash_one(key);
        if let Some(&slot) = index.find(hash, |&s| *entries[s as usize].key == *key) {
            let item = entries[slot as usize].ids.insert(id);
            *items += usize::from(item);
            return Added { key: false, item };
        }
        let slot = u32::try_from(entries.len()).expect("fewer than 2^32 keys in a partition");
        entries.push(Entry {
            key: key.into(),
            ids: Ids::One(id),
        });
        index.insert_unique(hash, slot, |&s| hasher.hash_one(&*entries[s as usize].key));
        *items += 1;
        Added {
            key: true,
            item: true,
        }
    }

    /// Removes `key`, handing back its ids.
    fn remove(&mut self, hasher: &Hasher, key: &[u8]) -> Option<Ids> {
        let hash = hasher.hash_one(key);
        let entries = &self.entries;
        let found = self
            .index
            .find_entry(hash, |&s| *entries[s as usize].key == *key)
            .ok()?;
        let (slot, _) = found.remove();
        Some(self.take(hasher, slot as usize).ids)
    }

    /// Removes a random key (the limit's eviction, Redis's `raxRandomWalk`).
    fn remove_random(&mut self, hasher: &Hasher) -> Option<Entry> {
        if self.entries.is_empty() {
            return None;
        }
        let slot = crate::commands::random::below(self.entries.len());
        let hash = hasher.hash_one(&*self.entries[slot].key);
        if let Ok(found) = self.index.find_entry(hash, |&s| s as usize == slot) {
            found.remove();
        }
        Some(self.take(hasher, slot))
    }

    /// Takes the entry at `slot`, already out of the index, from the slab: the last entry moves
    /// into its place and its index bucket is pointed there.
    fn take(&mut self, hasher: &Hasher, slot: usize) -> Entry {
        let last = self.entries.len() - 1;
        let entry = self.entries.swap_remove(slot);
        if slot != last {
            let hash = hasher.hash_one(&*self.entries[slot].key);
            let moved = self
                .index
                .find_mut(hash, |&s| s as usize == last)
                .expect("every entry is indexed");
            *moved = slot as u32;
        }
        self.items -= entry.ids.len();
        self.shrink(hasher);
        entry
    }

    /// Gives memory back once a quarter or less of the slab is used (a bounded amount of work:
    /// one copy of what is left, after at least as many removals).
    fn shrink(&mut self, hasher: &Hasher) {
        let len = self.entries.len();
        if self.entries.capacity() > 64 && len <= self.entries.capacity() / 4 {
            self.entries.shrink_to(len * 2);
            let entries = &self.entries;
            self.index
                .shrink_to(len * 2, |&s| hasher.hash_one(&*entries[s as usize].key));
        }
    }

    /// Checks the invariants (tests).
    #[cfg(test)]
    fn validate(&self, hasher: &Hasher) {
        assert_eq!(self.index.len(), self.entries.len());
        for (slot, entry) in self.entries.iter().enumerate() {
            let hash = hasher.hash_one(&*entry.key);
            assert_eq!(
                self.index.find(hash, |&s| s as usize == slot).copied(),
                Some(slot as u32)
            );
            let ids = entry.ids.as_slice();
            assert!(ids.windows(2).all(|w| rax_order(w[0]) < rax_order(w[1])));
        }
        let items: usize = self.entries.iter().map(|e| e.ids.len()).sum();
        assert_eq!(items, self.items);
    }
}

// ---------------------------------------------------------------------------------------------
// BCAST prefixes.

/// One prefix of BCAST mode (Redis's `bcastState`).
#[derive(Debug, Default)]
struct Bcast {
    /// Keys modified since the last broadcast, each with the client that modified it last (0:
    /// none, an expiry or an eviction), in byte order.
    keys: BTreeMap<Box<[u8]>, u64>,
    /// The clients registered for this prefix, ascending ids.
    clients: Vec<u64>,
}

#[derive(Debug, Default)]
struct Prefixes {
    map: BTreeMap<Box<[u8]>, Bcast>,
    /// Some prefix has keys to broadcast.
    pending: bool,
}

impl Prefixes {
    /// Remembers `key`, modified by client `by`, in every prefix it starts with
    /// (`trackingRememberKeyToBroadcast`). Redis walks every prefix; with more prefixes than the
    /// key has lengths, looking up each of the key's own prefixes is cheaper.
    fn note(&mut self, key: &[u8], by: u64) {
        let remember = |bs: &mut Bcast| match bs.keys.get_mut(key) {
            Some(last) => *last = by,
            None => {
                bs.keys.insert(key.into(), by);
            }
        };
        if self.map.len() > key.len() + 1 {
            for len in 0..=key.len() {
                if let Some(bs) = self.map.get_mut(&key[..len]) {
                    remember(bs);
                    self.pending = true;
                }
            }
        } else {
            for (prefix, bs) in &mut self.map {
                if key.starts_with(prefix) {
                    remember(bs);
                    self.pending = true;
                }
            }
        }
    }
}

/// The RESP array of a prefix's modified keys (`trackingBuildBroadcastReply`): all of them, or
/// for a NOLOOP client those it did not modify itself (`None` when that leaves none).
fn bcast_body(keys: &BTreeMap<Box<[u8]>, u64>, noloop: Option<u64>) -> Option<Arc<[u8]>> {
    let wanted = |by: u64| noloop.is_none_or(|me| me != by);
    let count = keys.values().filter(|&&by| wanted(by)).count();
    if count == 0 {
        return None;
    }
    let mut body = Vec::with_capacity(16 + keys.keys().map(|k| k.len() + 16).sum::<usize>());
    push_header(&mut body, b'*', count);
    for (key, _) in keys.iter().filter(|(_, by)| wanted(**by)) {
        push_bulk(&mut body, key);
    }
    Some(body.into())
}

// ---------------------------------------------------------------------------------------------
// Messages.

fn push_header(out: &mut Vec<u8>, prefix: u8, len: usize) {
    out.push(prefix);
    let _ = write!(out, "{len}\r\n");
}

fn push_bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    push_header(out, b'$', bytes.len());
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// The body of one key's invalidation: a one-key array.
fn key_body(key: &[u8]) -> Arc<[u8]> {
    let mut body = Vec::with_capacity(key.len() + 24);
    body.extend_from_slice(b"*1\r\n");
    push_bulk(&mut body, key);
    body.into()
}

/// The body of a flush's invalidation: a null in the protocol of the *tracking* client (Redis's
/// `shared.null[c->resp]`), even when a redirect target of the other protocol receives it.
fn null_body(resp3: bool) -> Arc<[u8]> {
    Arc::from(if resp3 {
        &b"_\r\n"[..]
    } else {
        &b"$-1\r\n"[..]
    })
}

/// What a client is sent: framed by its own thread for its protocol (`encode`).
#[derive(Debug)]
pub enum Invalidation {
    /// `invalidate` with its body, RESP ready: an array of keys, or a null (a flush). A RESP2
    /// receiver takes it only as a redirect target with subscriptions.
    Keys { body: Arc<[u8]>, redirected: bool },
    /// The redirect target (this id) of the receiving client is gone.
    RedirBroken(u64),
}

/// Appends `message` as a client of `protocol` with (`subscribed`) or without subscriptions
/// receives it, or nothing when it cannot (a RESP2 client not subscribed, or tracking for
/// itself: RESP2 has no pushes).
pub fn encode(out: &mut Vec<u8>, protocol: Protocol, subscribed: bool, message: &Invalidation) {
    match message {
        Invalidation::Keys { body, redirected } => {
            match protocol {
                Protocol::Resp3 => out.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n"),
                Protocol::Resp2 if *redirected && subscribed => {
                    out.extend_from_slice(b"*3\r\n$7\r\nmessage\r\n");
                    push_bulk(out, CHANNEL);
                }
                Protocol::Resp2 => return,
            }
            out.extend_from_slice(body);
        }
        Invalidation::RedirBroken(id) if protocol == Protocol::Resp3 => {
            out.extend_from_slice(b">2\r\n$21\r\ntracking-redir-broken\r\n");
            let _ = write!(out, ":{id}\r\n");
        }
        Invalidation::RedirBroken(_) => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Clients.

/// A client with tracking on, as other threads see it.
#[derive(Debug)]
struct Tracked {
    client: Arc<ClientShared>,
    /// REDIRECT's client id (0: none).
    redirect: u64,
    bcast: bool,
    noloop: bool,
}

/// A client's own tracking mode (`ClientState::tracking`, `None` while tracking is off).
#[derive(Debug, Default)]
pub struct ClientTracking {
    /// REDIRECT's client id (0: none).
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// CLIENT CACHING YES (OPTIN) or NO (OPTOUT) holds for the next command or transaction.
    pub caching: bool,
    /// The BCAST prefixes, in the order TRACKINGINFO lists them.
    pub prefixes: BTreeSet<Box<[u8]>>,
    /// Keys this client modified while it tracked them (`None`: a flush), whose invalidations
    /// follow its command's reply.
    pending: Vec<Option<Box<[u8]>>>,
}

/// What CLIENT LIST shows of a client's tracking (`ClientInfo::tracking`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListState {
    /// `t`.
    pub on: bool,
    /// `R`: a message was due while the redirect target was gone.
    pub broken: bool,
    /// `B`.
    pub bcast: bool,
    pub redirect: u64,
}

impl ListState {
    /// CLIENT LIST's `redir=`.
    pub fn redir(&self) -> i64 {
        if self.on { self.redirect as i64 } else { -1 }
    }
}

/// The modes CLIENT TRACKING ON asks for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
}

// ---------------------------------------------------------------------------------------------
// The shared state.

/// Client-side caching's shared state (`Server::tracking`).
#[derive(Debug)]
pub struct Tracking {
    /// Clients with tracking on (INFO `tracking_clients`).
    clients: AtomicUsize,
    /// Keys in the table (INFO `tracking_total_keys`).
    keys: AtomicUsize,
    /// Client ids over every key (INFO `tracking_total_items`).
    items: AtomicUsize,
    /// Prefixes registered (INFO `tracking_total_prefixes`); 0 lets a write skip their lock.
    prefix_count: AtomicUsize,
    table: Box<[Mutex<Table>]>,
    hasher: Hasher,
    prefixes: Mutex<Prefixes>,
    registry: RwLock<HashMap<u64, Arc<Tracked>>>,
    /// `tracking-table-max-keys` (0: no limit).
    max_keys: AtomicU64,
    /// Limit rounds in a row that ended still over the limit (each does more work).
    limit_rounds: AtomicU32,
}

impl Tracking {
    pub fn new(config: &crate::config::Config) -> Tracking {
        Tracking {
            clients: AtomicUsize::new(0),
            keys: AtomicUsize::new(0),
            items: AtomicUsize::new(0),
            prefix_count: AtomicUsize::new(0),
            table: (0..config.shards.max(1))
                .map(|_| Mutex::new(Table::default()))
                .collect(),
            hasher: Hasher::default(),
            prefixes: Mutex::new(Prefixes::default()),
            registry: RwLock::new(HashMap::new()),
            max_keys: AtomicU64::new(config.tracking_table_max_keys),
            limit_rounds: AtomicU32::new(0),
        }
    }

    /// CONFIG SET tracking-table-max-keys.
    pub fn configure(&self, config: &crate::config::Config) {
        self.max_keys.store(config.tracking_table_max_keys, RELAXED);
    }

    /// (INFO `tracking_clients`, `tracking_total_keys`, `tracking_total_items`,
    /// `tracking_total_prefixes`).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (
            self.clients.load(RELAXED),
            self.keys.load(RELAXED),
            self.items.load(RELAXED),
            self.prefix_count.load(RELAXED),
        )
    }

    /// Whether any client has tracking on (`command::run` skips `enter`/`leave` otherwise).
    #[inline]
    pub fn active(&self) -> bool {
        self.clients.load(RELAXED) > 0
    }

    /// Nothing to invalidate: no key tracked, no prefix.
    #[inline]
    fn idle(&self) -> bool {
        self.keys.load(RELAXED) == 0 && self.prefix_count.load(RELAXED) == 0
    }

    /// `trackingInvalidateKey(c, key, 1)`: `key` changed, by client `by` (0: none).
    fn invalidate(&self, server: &Server, key: &[u8], by: u64) {
        if self.prefix_count.load(RELAXED) > 0 {
            self.prefixes.lock().note(key, by);
        }
        if self.keys.load(RELAXED) == 0 {
            return;
        }
        if let Some(ids) = self.take_key(server, key) {
            self.notify(server, key, &ids);
        }
    }

    // The counts change under the lock of the partition that changed, so they never fall below
    // what the partitions hold, not even for a moment.

    /// Adds `id` to `key`'s clients.
    fn add_key(&self, server: &Server, key: &[u8], id: u64) {
        let mut table = self.table[server.shard_of(key)].lock();
        let added = table.insert(&self.hasher, key, id);
        // A key read again by the same client changes nothing: no write to the shared counts.
        if added.key {
            self.keys.fetch_add(1, RELAXED);
        }
        if added.item {
            self.items.fetch_add(1, RELAXED);
        }
    }

    /// Removes `key`, handing back its clients.
    fn take_key(&self, server: &Server, key: &[u8]) -> Option<Ids> {
        let mut table = self.table[server.shard_of(key)].lock();
        let ids = table.remove(&self.hasher, key)?;
        self.keys.fetch_sub(1, RELAXED);
        self.items.fetch_sub(ids.len(), RELAXED);
        Some(ids)
    }

    /// A random key of a random non-empty partition, removed.
    fn take_random(&self) -> Option<Entry> {
        let parts = self.table.len();
        let start = crate::commands::random::below(parts);
        (0..parts).find_map(|i| {
            let mut table = self.table[(start + i) % parts].lock();
            let entry = table.remove_random(&self.hasher)?;
            self.keys.fetch_sub(1, RELAXED);
            self.items.fetch_sub(entry.ids.len(), RELAXED);
            Some(entry)
        })
    }

    /// Empties every partition (a flush).
    fn clear(&self) {
        for part in &self.table {
            let mut table = part.lock();
            let taken = std::mem::take(&mut *table);
            self.keys.fetch_sub(taken.entries.len(), RELAXED);
            self.items.fetch_sub(taken.items, RELAXED);
            drop(table);
            drop(taken);
        }
    }

    /// Sends `key`'s invalidation to each of `ids` that still tracks in default mode.
    fn notify(&self, server: &Server, key: &[u8], ids: &Ids) {
        let (current, thread) = CURRENT.get();
        let mut outbox = Outbox::new(current, (current != 0).then_some(thread));
        let mut body = None;
        {
            let registry = self.registry.read();
            for &id in ids.as_slice() {
                let Some(tracked) = registry.get(&id) else {
                    continue;
                };
                // A client that switched to BCAST after reading the key in default mode gets
                // nothing for it, as in Redis.
                if tracked.bcast || (tracked.noloop && id == current) {
                    continue;
                }
                if id == current {
                    PENDING.with_borrow_mut(|pending| pending.push(Some(key.into())));
                    continue;
                }
                let body = body.get_or_insert_with(|| key_body(key));
                send(server, tracked, Arc::clone(body), &mut outbox);
            }
        }
        outbox.post_here(server);
    }

    /// `trackingLimitUsedSlots`: over `tracking-table-max-keys`, invalidates random keys until
    /// under it, at most 100 × (rounds in a row that ended over it) keys per call.
    fn limit(&self, server: &Server) {
        let max = self.max_keys.load(RELAXED);
        if max == 0 {
            return;
        }
        let over = || self.keys.load(RELAXED) as u64 > max;
        if !over() {
            // Runs after every command: a store only when there is something to reset.
            if self.limit_rounds.load(RELAXED) != 0 {
                self.limit_rounds.store(0, RELAXED);
            }
            return;
        }
        let effort = 100 * (self.limit_rounds.load(RELAXED) + 1);
        for _ in 0..effort {
            let Some(entry) = self.take_random() else {
                break;
            };
            self.notify(server, &entry.key, &entry.ids);
            if !over() {
                self.limit_rounds.store(0, RELAXED);
                return;
            }
        }
        self.limit_rounds.fetch_add(1, RELAXED);
    }
}

// ---------------------------------------------------------------------------------------------
// The running command.

thread_local! {
    /// The client whose command runs on this thread (0: none) and that client's thread: Redis's
    /// `server.current_client` while a command executes.
    static CURRENT: Cell<(u64, usize)> = const { Cell::new((0, 0)) };
    /// Messages for the running client that go ahead of its reply (it is the redirect target of
    /// a client whose key it modified).
    static NOW: RefCell<Vec<Invalidation>> = const { RefCell::new(Vec::new()) };
    /// Keys the running client modified while tracking them (`None`: a flush).
    static PENDING: RefCell<Vec<Option<Box<[u8]>>>> = const { RefCell::new(Vec::new()) };
}

/// Where one event's messages go: the running client's own output, or mail, grouped by thread.
struct Outbox {
    /// The running client (0: none).
    current: u64,
    /// The thread posting (it takes its own mail at the end of its turn, unwoken).
    from_thread: Option<usize>,
    here: Vec<Invalidation>,
    batches: Vec<Batch>,
}

impl Outbox {
    fn new(current: u64, from_thread: Option<usize>) -> Outbox {
        Outbox {
            current,
            from_thread,
            here: Vec::new(),
            batches: Vec::new(),
        }
    }

    fn deliver(&mut self, server: &Server, id: u64, thread: usize, message: Invalidation) {
        if id == self.current {
            self.here.push(message);
            return;
        }
        if self.batches.is_empty() {
            self.batches = (0..server.mail.threads()).map(|_| Vec::new()).collect();
        }
        self.batches[thread].push((id, Mail::Invalidate(message)));
    }

    /// Posts the mail; returns what is for the running client.
    fn post(self, server: &Server) -> Vec<Invalidation> {
        for (thread, mut batch) in self.batches.into_iter().enumerate() {
            server
                .mail
                .post(server, thread, self.from_thread, &mut batch);
        }
        self.here
    }

    /// Posts the mail; what is for the running client goes ahead of its reply.
    fn post_here(self, server: &Server) {
        let here = self.post(server);
        if !here.is_empty() {
            NOW.with_borrow_mut(|now| now.extend(here));
        }
    }
}

/// Redis's `sendTrackingMessage`: `body` to the client `tracked`, or to its redirect target.
fn send(server: &Server, tracked: &Tracked, body: Arc<[u8]>, outbox: &mut Outbox) {
    let client = &tracked.client;
    if tracked.redirect == 0 {
        let message = Invalidation::Keys {
            body,
            redirected: false,
        };
        return outbox.deliver(server, client.id, client.thread, message);
    }
    let target = server
        .clients
        .lock()
        .get(&tracked.redirect)
        .map(|c| c.thread);
    if let Some(thread) = target {
        let message = Invalidation::Keys {
            body,
            redirected: true,
        };
        outbox.deliver(server, tracked.redirect, thread, message);
    } else {
        client.info.lock().tracking.broken = true;
        let message = Invalidation::RedirBroken(tracked.redirect);
        outbox.deliver(server, client.id, client.thread, message);
    }
}

/// What `enter` saved, for `leave`.
#[derive(Debug)]
#[must_use]
pub struct Running {
    outer: (u64, usize),
    outer_now: Vec<Invalidation>,
    reply_at: usize,
}

/// A command of `client` starts, its reply to be written at `reply_at` of its output.
#[inline]
pub fn enter(client: &ClientState, reply_at: usize) -> Running {
    let outer = CURRENT.replace((client.shared.id, client.shared.thread));
    let outer_now = NOW.with_borrow_mut(std::mem::take);
    Running {
        outer,
        outer_now,
        reply_at,
    }
}

/// The command at table index `index` ran (its shards still held): its keys are remembered if
/// it read them for a tracking client (Redis's `call`), the table is held to its limit (Redis:
/// before each command), and the messages due to the client are placed around its reply.
pub fn leave(
    server: &Server,
    running: Running,
    client: &mut ClientState,
    out: &mut Vec<u8>,
    index: usize,
    args: &[&[u8]],
) {
    if client.tracking.is_some() && COMMANDS[index].flags & flag::READONLY != 0 {
        remember(server, client, index, args);
    }
    let now = NOW.with_borrow_mut(std::mem::take);
    if !now.is_empty() {
        let mut bytes = Vec::new();
        for message in &now {
            encode(&mut bytes, client.protocol, client.subscribed(), message);
        }
        let at = running.reply_at.min(out.len());
        out.splice(at..at, bytes);
    }
    let tracking = &server.tracking;
    if tracking.clients.load(RELAXED) > 0 && tracking.max_keys.load(RELAXED) > 0 {
        tracking.limit(server);
        // What the limit sends a client redirected here follows the reply, as Redis's, run
        // before the next command, would send it.
        let after = NOW.with_borrow_mut(std::mem::take);
        for message in &after {
            encode(out, client.protocol, client.subscribed(), message);
        }
    }
    NOW.set(running.outer_now);
    let pending = PENDING.with_borrow_mut(std::mem::take);
    if !pending.is_empty()
        && let Some(tracking) = client.tracking.as_deref_mut()
    {
        tracking.pending.extend(pending);
    }
    CURRENT.set(running.outer);
}

/// `trackingRememberKeys`: the keys of the command at `index` go into the table for `client`,
/// unless BCAST, OPTIN without CACHING YES or OPTOUT with CACHING NO says otherwise.
fn remember(server: &Server, client: &ClientState, index: usize, args: &[&[u8]]) {
    let Some(mode) = client.tracking.as_deref() else {
        return;
    };
    if mode.bcast || (mode.optin && !mode.caching) || (mode.optout && mode.caching) {
        return;
    }
    // Shard channels count as keys for COMMAND, not for tracking.
    if COMMANDS[index].flags & flag::PUBSUB != 0 {
        return;
    }
    let tracking = &server.tracking;
    let id = client.shared.id;
    for at in crate::commands::introspect::keys_of(index, args) {
        tracking.add_key(server, args[at], id);
    }
}

/// After each command `name` of `client` (`net/conn.rs`, right after dispatch): CLIENT CACHING
/// ends unless this was a CLIENT command or a transaction goes on (Redis's `resetClient`), and
/// the invalidations of keys the client modified follow its reply.
#[inline]
pub fn after_command(server: &Server, client: &mut ClientState, out: &mut Vec<u8>, name: &[u8]) {
    let in_multi = client.multi.is_some();
    let Some(mode) = client.tracking.as_deref_mut() else {
        return;
    };
    if !in_multi && !name.eq_ignore_ascii_case(b"client") {
        mode.caching = false;
    }
    if !mode.pending.is_empty() {
        flush_pending(server, client, out);
    }
}

/// Redis's `trackingHandlePendingKeyInvalidations`.
fn flush_pending(server: &Server, client: &mut ClientState, out: &mut Vec<u8>) {
    let Some(mode) = client.tracking.as_deref_mut() else {
        return;
    };
    let pending = std::mem::take(&mut mode.pending);
    let id = client.shared.id;
    let Some(tracked) = server.tracking.registry.read().get(&id).cloned() else {
        return;
    };
    let mut outbox = Outbox::new(id, Some(client.shared.thread));
    let resp3 = client.protocol == Protocol::Resp3;
    for key in pending {
        let body = key.map_or_else(|| null_body(resp3), |key| key_body(&key));
        send(server, &tracked, body, &mut outbox);
    }
    for message in outbox.post(server) {
        encode(out, client.protocol, client.subscribed(), &message);
    }
}

// ---------------------------------------------------------------------------------------------
// Keyspace events.

/// A write modified `key` (`Server::touch`, Redis's `signalModifiedKey`).
#[inline]
pub fn touched(server: &Server, key: &[u8]) {
    let tracking = &server.tracking;
    if tracking.idle() {
        return;
    }
    tracking.invalidate(server, key, CURRENT.get().0);
}

/// Keys deleted by expiry or eviction (Redis's `signalModifiedKey(NULL, …)`): outside a command
/// (the cron) their BCAST messages go at once.
pub fn deleted(server: &Server, keys: &[(usize, Vec<u8>)]) {
    let tracking = &server.tracking;
    if keys.is_empty() || tracking.idle() {
        return;
    }
    for (_, key) in keys {
        tracking.invalidate(server, key, 0);
    }
    if CURRENT.get().0 == 0 {
        broadcast(server, None);
    }
}

/// FLUSHALL, FLUSHDB, DEBUG RELOAD (`trackingInvalidateKeysOnFlush`): every tracking client is
/// sent a null ("every key"), and the table is dropped.
pub fn flushed(server: &Server) {
    let tracking = &server.tracking;
    if tracking.clients.load(RELAXED) > 0 {
        let (current, thread) = CURRENT.get();
        let mut outbox = Outbox::new(current, (current != 0).then_some(thread));
        let mut all: Vec<Arc<Tracked>> = tracking.registry.read().values().cloned().collect();
        all.sort_by_key(|t| t.client.id);
        for tracked in &all {
            if tracked.client.id == current {
                PENDING.with_borrow_mut(|pending| pending.push(None));
                continue;
            }
            let resp3 = tracked.client.info.lock().resp == 3;
            send(server, tracked, null_body(resp3), &mut outbox);
        }
        outbox.post_here(server);
    }
    tracking.clear();
}

/// Sends every prefix's modified keys to its clients (`trackingBroadcastInvalidationMessages`):
/// at the end of a loop turn (`from_thread`: the thread, which takes its own mail right after)
/// and after the cron. The prefixes stay locked while the mail is posted, so a thread that
/// finds nothing left to send knows that what its commands modified is already posted before
/// it writes their replies.
pub fn broadcast(server: &Server, from_thread: Option<usize>) {
    let tracking = &server.tracking;
    if tracking.prefix_count.load(RELAXED) == 0 {
        return;
    }
    let mut prefixes = tracking.prefixes.lock();
    if !prefixes.pending {
        return;
    }
    prefixes.pending = false;
    let mut outbox = Outbox::new(0, from_thread);
    {
        let registry = tracking.registry.read();
        for bs in prefixes.map.values_mut() {
            let Some(all) = bcast_body(&bs.keys, None) else {
                continue;
            };
            for id in &bs.clients {
                let Some(tracked) = registry.get(id) else {
                    continue;
                };
                let body = if tracked.noloop {
                    match bcast_body(&bs.keys, Some(*id)) {
                        Some(body) => body,
                        None => continue,
                    }
                } else {
                    Arc::clone(&all)
                };
                send(server, tracked, body, &mut outbox);
            }
            bs.keys.clear();
        }
    }
    let _ = outbox.post(server);
}

/// Thread 0's cron: the table is held to its limit even when no command comes (Redis's
/// `serverCron`), and BCAST keys left by the cron go out.
pub fn cron(server: &Server) {
    let tracking = &server.tracking;
    if tracking.clients.load(RELAXED) > 0 {
        tracking.limit(server);
    }
    broadcast(server, None);
}

// ---------------------------------------------------------------------------------------------
// Turning tracking on and off.

/// `enableTracking`: `client` tracks, as `options` say, sending to `redirect` (0: itself); BCAST
/// registers `prefixes` (none: every key, the empty prefix).
pub fn enable(
    server: &Server,
    client: &mut ClientState,
    redirect: u64,
    options: Options,
    prefixes: &[&[u8]],
) {
    let tracking = &server.tracking;
    let id = client.shared.id;
    let mut mode = client.tracking.take().unwrap_or_else(|| {
        tracking.clients.fetch_add(1, RELAXED);
        Box::default()
    });
    mode.redirect = redirect;
    mode.bcast = options.bcast;
    mode.optin = options.optin;
    mode.optout = options.optout;
    mode.noloop = options.noloop;
    if options.bcast {
        let all: &[&[u8]] = &[b""];
        let mut table = tracking.prefixes.lock();
        for &prefix in if prefixes.is_empty() { all } else { prefixes } {
            let bs = table.map.entry(prefix.into()).or_default();
            if let Err(at) = bs.clients.binary_search(&id) {
                bs.clients.insert(at, id);
                mode.prefixes.insert(prefix.into());
            }
        }
        tracking.prefix_count.store(table.map.len(), RELAXED);
    }
    let tracked = Arc::new(Tracked {
        client: Arc::clone(&client.shared),
        redirect,
        bcast: options.bcast,
        noloop: options.noloop,
    });
    tracking.registry.write().insert(id, tracked);
    client.shared.info.lock().tracking = ListState {
        on: true,
        broken: false,
        bcast: options.bcast,
        redirect,
    };
    client.tracking = Some(mode);
}

/// `disableTracking` (CLIENT TRACKING OFF, RESET, a closed connection): the client leaves the
/// registry and its prefixes; its ids in the table are dropped lazily.
pub fn disable(server: &Server, client: &mut ClientState) {
    let Some(mode) = client.tracking.take() else {
        return;
    };
    let tracking = &server.tracking;
    let id = client.shared.id;
    {
        let mut registry = tracking.registry.write();
        registry.remove(&id);
        if registry.capacity() > 64 && registry.len() < registry.capacity() / 4 {
            registry.shrink_to_fit();
        }
    }
    if mode.bcast {
        let mut table = tracking.prefixes.lock();
        for prefix in &mode.prefixes {
            if let Some(bs) = table.map.get_mut(prefix) {
                bs.clients.retain(|&c| c != id);
                if bs.clients.is_empty() {
                    table.map.remove(prefix);
                }
            }
        }
        tracking.prefix_count.store(table.map.len(), RELAXED);
    }
    tracking.clients.fetch_sub(1, RELAXED);
    client.shared.info.lock().tracking = ListState::default();
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// The table against a model: inserts, removals and random removals, switched on and off at
    /// random, then every key and id checked both ways, and the invariants after every step.
    #[test]
    fn table_matches_a_model() {
        let hasher = Hasher::default();
        for seed in 0..8u64 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut table = Table::default();
            let mut model: std::collections::HashMap<Vec<u8>, BTreeSet<u64>> =
                std::collections::HashMap::new();
            let (p_insert, p_remove) = (rng.gen_range(0.3..0.9), rng.gen_range(0.0..0.5));
            for step in 0..4000 {
                let key = format!("k{}", rng.gen_range(0..300)).into_bytes();
                let roll: f64 = rng.r#gen();
                if roll < p_insert {
                    let id = rng.gen_range(1..6u64) << (8 * rng.gen_range(0..3));
                    let added = table.insert(&hasher, &key, id);
                    let entry = model.entry(key.clone());
                    let was_new = matches!(entry, std::collections::hash_map::Entry::Vacant(_));
                    let item = entry.or_default().insert(id);
                    assert_eq!(added, Added { key: was_new, item });
                } else if roll < p_insert + p_remove {
                    let got = table
                        .remove(&hasher, &key)
                        .map(|ids| ids.as_slice().to_vec());
                    let want = model.remove(&key).map(|ids| {
                        let mut ids: Vec<u64> = ids.into_iter().collect();
                        ids.sort_unstable_by_key(|&i| rax_order(i));
                        ids
                    });
                    assert_eq!(got, want);
                } else if let Some(entry) = table.remove_random(&hasher) {
                    let ids = model
                        .remove(&*entry.key)
                        .expect("a random key is a real key");
                    assert_eq!(entry.ids.len(), ids.len());
                } else {
                    assert!(model.is_empty());
                }
                if step % 97 == 0 {
                    table.validate(&hasher);
                }
            }
            table.validate(&hasher);
            assert_eq!(table.entries.len(), model.len());
            for (key, ids) in &model {
                let hash = hasher.hash_one(&key[..]);
                let slot = *table
                    .index
                    .find(hash, |&s| *table.entries[s as usize].key == key[..])
                    .expect("a model key is in the table");
                let got: BTreeSet<u64> = table.entries[slot as usize]
                    .ids
                    .as_slice()
                    .iter()
                    .copied()
                    .collect();
                assert_eq!(&got, ids);
            }
            while table.remove_random(&hasher).is_some() {}
            table.validate(&hasher);
            assert_eq!(table.items, 0);
            assert!(
                table.entries.capacity() <= 64,
                "an emptied table gives its slab back"
            );
        }
    }

    /// Ids come out in Redis's rax order: by their little-endian bytes.
    #[test]
    fn ids_walk_in_rax_order() {
        let mut ids = Ids::One(256);
        for id in [1, 255, 2, 256, 257] {
            ids.insert(id);
        }
        assert_eq!(ids.as_slice(), &[256, 1, 257, 2, 255]);
        assert_eq!(ids.len(), 5);
    }

    /// A key lands in every prefix it starts with, by either walk, with its last modifier; a
    /// NOLOOP client's array leaves out what it modified, and is absent when that is all.
    #[test]
    fn prefixes_match_keys_and_build_arrays() {
        for extra in [0, 40] {
            let mut prefixes = Prefixes::default();
            for p in ["", "a", "ab", "b"] {
                prefixes.map.insert(p.as_bytes().into(), Bcast::default());
            }
            for i in 0..extra {
                prefixes
                    .map
                    .insert(format!("zz{i}").into_bytes().into(), Bcast::default());
            }
            prefixes.note(b"abc", 7);
            prefixes.note(b"b", 8);
            prefixes.note(b"abc", 9);
            assert!(prefixes.pending);
            let keys = |p: &str| -> Vec<(Vec<u8>, u64)> {
                prefixes.map[p.as_bytes()]
                    .keys
                    .iter()
                    .map(|(k, &by)| (k.to_vec(), by))
                    .collect()
            };
            assert_eq!(keys(""), vec![(b"abc".to_vec(), 9), (b"b".to_vec(), 8)]);
            assert_eq!(keys("a"), vec![(b"abc".to_vec(), 9)]);
            assert_eq!(keys("ab"), vec![(b"abc".to_vec(), 9)]);
            assert_eq!(keys("b"), vec![(b"b".to_vec(), 8)]);
            let all = &prefixes.map[&b""[..]].keys;
            assert_eq!(
                &*bcast_body(all, None).expect("keys"),
                b"*2\r\n$3\r\nabc\r\n$1\r\nb\r\n"
            );
            assert_eq!(
                &*bcast_body(all, Some(9)).expect("keys"),
                b"*1\r\n$1\r\nb\r\n"
            );
            assert!(bcast_body(&prefixes.map[&b"a"[..]].keys, Some(9)).is_none());
        }
    }

    /// The frames each receiver gets, byte for byte as Redis sends them.
    #[test]
    fn messages_are_framed_per_receiver() {
        let frame = |protocol, subscribed, message: &Invalidation| {
            let mut out = Vec::new();
            encode(&mut out, protocol, subscribed, message);
            out
        };
        let key = Invalidation::Keys {
            body: key_body(b"foo"),
            redirected: false,
        };
        assert_eq!(
            frame(Protocol::Resp3, false, &key),
            b">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nfoo\r\n"
        );
        assert!(frame(Protocol::Resp2, true, &key).is_empty());
        let redirected = Invalidation::Keys {
            body: null_body(true),
            redirected: true,
        };
        assert_eq!(
            frame(Protocol::Resp2, true, &redirected),
            b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n_\r\n"
        );
        assert!(frame(Protocol::Resp2, false, &redirected).is_empty());
        assert_eq!(&*null_body(false), b"$-1\r\n");
        let broken = Invalidation::RedirBroken(42);
        assert_eq!(
            frame(Protocol::Resp3, false, &broken),
            b">2\r\n$21\r\ntracking-redir-broken\r\n:42\r\n"
        );
        assert!(frame(Protocol::Resp2, false, &broken).is_empty());
    }
}
