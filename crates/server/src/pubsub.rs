//! Pub/Sub: who listens to what, publishing, and the messages' wire forms.
//!
//! ```text
//!  Server::pubsub ── registry: RwLock<Registry>
//!                    │   channels:       channel → [Sub{id, thread}]   (subscription order)
//!                    │   shard_channels: channel → [Sub]
//!                    │   patterns:       [(pattern, compiled glob, [Sub])]   (first-subscribed
//!                    │                   order; every PUBLISH matches the channel against each)
//!                    └─ subscriptions: channels + patterns + shard channels anywhere; 0 lets a
//!                       keyspace notification or PUBLISH skip the lock
//!  ClientState::subs ── the client's own sets (its thread's; the registry mirrors them)
//! ```
//! PUBLISH takes the registry's read lock, groups the receivers by the thread that owns them and
//! posts one batch per thread (`mail.rs`): the message bytes are allocated once and shared. A
//! receiver that is the publisher itself is written to straight away, so its push comes before
//! the PUBLISH reply, as in Redis (a RESP3 client may publish to a channel it listens to).
//! (Un)subscribing takes the write lock briefly. Lock order: shard locks, then the registry,
//! then a mailbox; the registry is never held while a socket is written.
//!
//! Pattern matching is the keyspace's bounded glob (`store::glob`), compiled once per pattern.

use crate::client::ClientState;
use crate::mail::{Batch, Mail, Message};
use crate::server::Server;
use parking_lot::RwLock;
use resp::{Protocol, ReplyWriter};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use store::glob::Glob;

/// A subscriber: its client id and the thread that owns its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sub {
    pub id: u64,
    pub thread: usize,
}

#[derive(Debug)]
struct PatternSubs {
    pattern: Arc<[u8]>,
    glob: Glob,
    subs: Vec<Sub>,
}

#[derive(Debug, Default)]
struct Registry {
    channels: HashMap<Box<[u8]>, Vec<Sub>>,
    shard_channels: HashMap<Box<[u8]>, Vec<Sub>>,
    patterns: Vec<PatternSubs>,
}

/// Which of a client's three sets a (un)subscription is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }

    fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

/// A client's subscriptions. Patterns keep their subscription order (Redis keeps them in a
/// list, and PUNSUBSCRIBE without arguments answers in that order).
#[derive(Debug, Default)]
pub struct Subscriptions {
    channels: HashSet<Box<[u8]>>,
    patterns: Vec<Box<[u8]>>,
    shard_channels: HashSet<Box<[u8]>>,
}

impl Subscriptions {
    /// Channels and patterns: the count (P)SUBSCRIBE replies carry.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    pub fn shard_count(&self) -> usize {
        self.shard_channels.len()
    }

    pub fn total(&self) -> usize {
        self.count() + self.shard_count()
    }

    /// (channels, patterns, shard channels) for CLIENT LIST.
    pub fn counts(&self) -> (usize, usize, usize) {
        (
            self.channels.len(),
            self.patterns.len(),
            self.shard_channels.len(),
        )
    }

    fn count_for(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shard_count(),
            _ => self.count(),
        }
    }

    fn add(&mut self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.insert(name.into()),
            Kind::Shard => self.shard_channels.insert(name.into()),
            Kind::Pattern if self.patterns.iter().any(|p| &**p == name) => false,
            Kind::Pattern => {
                self.patterns.push(name.into());
                true
            }
        }
    }

    fn remove(&mut self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.remove(name),
            Kind::Shard => self.shard_channels.remove(name),
            Kind::Pattern => match self.patterns.iter().position(|p| &**p == name) {
                Some(i) => {
                    self.patterns.remove(i);
                    true
                }
                None => false,
            },
        }
    }

    /// Whether the client still holds the subscription `message` was published to: a message
    /// already on its way when the client unsubscribed is dropped, so nothing arrives after the
    /// confirmation of the last UNSUBSCRIBE (a RESP2 client would take it for a reply).
    pub fn receives(&self, message: &Message) -> bool {
        match &message.pattern {
            Some(pattern) => self.patterns.iter().any(|p| **p == **pattern),
            None if message.sharded => self.shard_channels.contains(&*message.channel),
            None => self.channels.contains(&*message.channel),
        }
    }

    fn names(&self, kind: Kind) -> Vec<Box<[u8]>> {
        match kind {
            Kind::Channel => self.channels.iter().cloned().collect(),
            Kind::Shard => self.shard_channels.iter().cloned().collect(),
            Kind::Pattern => self.patterns.clone(),
        }
    }
}

/// The server's pub/sub state.
#[derive(Debug, Default)]
pub struct PubSub {
    registry: RwLock<Registry>,
    /// Subscriptions of every kind held anywhere.
    subscriptions: AtomicUsize,
}

impl PubSub {
    /// Whether anyone listens to anything (a notification with no listener costs a load).
    pub fn anyone(&self) -> bool {
        self.subscriptions.load(Ordering::Relaxed) > 0
    }

    fn add(&self, kind: Kind, name: &[u8], sub: Sub) {
        let mut r = self.registry.write();
        match kind {
            Kind::Channel => r.channels.entry(name.into()).or_default().push(sub),
            Kind::Shard => r.shard_channels.entry(name.into()).or_default().push(sub),
            Kind::Pattern => match r.patterns.iter_mut().find(|p| &*p.pattern == name) {
                Some(p) => p.subs.push(sub),
                None => r.patterns.push(PatternSubs {
                    pattern: name.into(),
                    glob: Glob::new(name),
                    subs: vec![sub],
                }),
            },
        }
        self.subscriptions.fetch_add(1, Ordering::Relaxed);
    }

    fn remove(&self, kind: Kind, name: &[u8], id: u64) {
        let mut r = self.registry.write();
        let emptied = match kind {
            Kind::Channel => remove_from_map(&mut r.channels, name, id),
            Kind::Shard => remove_from_map(&mut r.shard_channels, name, id),
            Kind::Pattern => {
                let found = r.patterns.iter().position(|p| &*p.pattern == name);
                found.is_some_and(|i| {
                    let subs = &mut r.patterns[i].subs;
                    let before = subs.len();
                    subs.retain(|s| s.id != id);
                    let removed = subs.len() < before;
                    if subs.is_empty() {
                        r.patterns.remove(i);
                    }
                    removed
                })
            }
        };
        if emptied {
            self.subscriptions.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS: the channels with subscribers matching `pattern`.
    pub fn channels(&self, shard: bool, pattern: Option<&[u8]>) -> Vec<Box<[u8]>> {
        let r = self.registry.read();
        let map = if shard {
            &r.shard_channels
        } else {
            &r.channels
        };
        let glob = pattern.map(|p| (Glob::new(p), p.is_empty()));
        map.keys()
            .filter(|c| {
                glob.as_ref()
                    .is_none_or(|(g, empty)| pattern_matches(g, *empty, c))
            })
            .cloned()
            .collect()
    }

    /// PUBSUB NUMSUB / SHARDNUMSUB: the subscriber count of `channel`.
    pub fn numsub(&self, shard: bool, channel: &[u8]) -> usize {
        let r = self.registry.read();
        let map = if shard {
            &r.shard_channels
        } else {
            &r.channels
        };
        map.get(channel).map_or(0, Vec::len)
    }

    /// PUBSUB NUMPAT: patterns with at least one subscriber.
    pub fn numpat(&self) -> usize {
        self.registry.read().patterns.len()
    }

    /// (channels, patterns, shard channels) with subscribers, for INFO.
    pub fn sizes(&self) -> (usize, usize, usize) {
        let r = self.registry.read();
        (r.channels.len(), r.patterns.len(), r.shard_channels.len())
    }
}

/// Redis's `stringmatchlen` for a channel: the keyspace glob, except that an empty channel is
/// matched only by the empty pattern (`*` matches every key in KEYS, which shortcuts it, but
/// no empty channel).
fn pattern_matches(glob: &Glob, pattern_empty: bool, channel: &[u8]) -> bool {
    if channel.is_empty() {
        pattern_empty
    } else {
        glob.matches(channel)
    }
}

/// Removes `id` from `name`'s subscribers, dropping the channel once nobody listens; true if
/// `id` was there.
fn remove_from_map(map: &mut HashMap<Box<[u8]>, Vec<Sub>>, name: &[u8], id: u64) -> bool {
    let Some(subs) = map.get_mut(name) else {
        return false;
    };
    let before = subs.len();
    subs.retain(|s| s.id != id);
    let removed = subs.len() < before;
    if subs.is_empty() {
        map.remove(name);
    }
    removed
}

/// SUBSCRIBE / PSUBSCRIBE / SSUBSCRIBE of `names`: one confirmation per name, counted after it.
pub fn subscribe(
    server: &Server,
    client: &mut ClientState,
    out: &mut Vec<u8>,
    kind: Kind,
    names: &[&[u8]],
) {
    let out = &mut ReplyWriter::new(out, client.protocol);
    let sub = Sub {
        id: client.shared.id,
        thread: client.shared.thread,
    };
    for &name in names {
        let subs = client.subs.get_or_insert_with(Box::default);
        if subs.add(kind, name) {
            server.pubsub.add(kind, name, sub);
        }
        let count = subs.count_for(kind);
        confirmation(out, kind.subscribe_word(), Some(name), count);
    }
    publish_counts(client);
}

/// UNSUBSCRIBE / PUNSUBSCRIBE / SUNSUBSCRIBE: of `names`, or of everything of that kind when
/// `names` is empty (one confirmation with a null name when there was nothing).
pub fn unsubscribe(
    server: &Server,
    client: &mut ClientState,
    out: Option<&mut Vec<u8>>,
    kind: Kind,
    names: &[&[u8]],
) {
    let protocol = client.protocol;
    let mut out = out.map(|out| ReplyWriter::new(out, protocol));
    let all;
    let names: Vec<&[u8]> = if names.is_empty() {
        all = client
            .subs
            .as_ref()
            .map(|s| s.names(kind))
            .unwrap_or_default();
        all.iter().map(|n| &**n).collect()
    } else {
        names.to_vec()
    };
    for &name in &names {
        let subs = client.subs.get_or_insert_with(Box::default);
        if subs.remove(kind, name) {
            server.pubsub.remove(kind, name, client.shared.id);
        }
        let count = subs.count_for(kind);
        if let Some(out) = out.as_mut() {
            confirmation(out, kind.unsubscribe_word(), Some(name), count);
        }
    }
    if names.is_empty()
        && let Some(out) = out.as_mut()
    {
        let count = client.subs.as_ref().map_or(0, |s| s.count_for(kind));
        confirmation(out, kind.unsubscribe_word(), None, count);
    }
    if client.subs.as_ref().is_some_and(|s| s.total() == 0) {
        client.subs = None;
    }
    publish_counts(client);
}

/// Drops every subscription of a client without replying (RESET, a closed connection).
pub fn forget(server: &Server, client: &mut ClientState) {
    if client.subs.is_some() {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            unsubscribe(server, client, None, kind, &[]);
        }
    }
}

/// Keeps CLIENT LIST's `sub`, `psub` and `ssub` in step with the client's sets.
fn publish_counts(client: &ClientState) {
    let counts = client.subs.as_ref().map_or((0, 0, 0), |s| s.counts());
    client.shared.info.lock().subscriptions = counts;
}

/// `[kind, name or null, count]` as a push in RESP3 and an array in RESP2.
fn confirmation(out: &mut ReplyWriter, word: &[u8], name: Option<&[u8]>, count: usize) {
    push_header(out, 3);
    out.bulk(word);
    match name {
        Some(name) => out.bulk(name),
        None => out.null(),
    }
    out.integer(count as i64);
}

fn push_header(out: &mut ReplyWriter, len: usize) {
    match out.protocol() {
        Protocol::Resp2 => out.array_len(len),
        Protocol::Resp3 => out.push_len(len),
    }
}

/// Appends `message` as `protocol` frames it: `message`/`smessage` or, with a pattern,
/// `pmessage` (`Message::frame` keeps the result).
pub fn encode(out: &mut Vec<u8>, protocol: Protocol, message: &Message) {
    let mut w = ReplyWriter::new(out, protocol);
    if let Some(pattern) = &message.pattern {
        push_header(&mut w, 4);
        w.bulk(b"pmessage");
        w.bulk(pattern);
    } else {
        push_header(&mut w, 3);
        w.bulk(if message.sharded {
            b"smessage"
        } else {
            b"message"
        });
    }
    w.bulk(&message.channel);
    w.bulk(&message.payload);
}

/// The publisher, when a command publishes: its id and output, so that a message to itself goes
/// straight into its output ahead of the command's reply.
#[derive(Debug)]
pub struct Publisher<'a> {
    pub id: u64,
    pub thread: usize,
    pub protocol: Protocol,
    pub out: &'a mut Vec<u8>,
}

impl<'a> Publisher<'a> {
    /// `client` publishing, its own messages going to `out`.
    pub fn of(client: &ClientState, out: &'a mut Vec<u8>) -> Publisher<'a> {
        Publisher {
            id: client.shared.id,
            thread: client.shared.thread,
            protocol: client.protocol,
            out,
        }
    }

    /// The same publisher for one more publish.
    pub fn reborrow(&mut self) -> Publisher<'_> {
        Publisher {
            id: self.id,
            thread: self.thread,
            protocol: self.protocol,
            out: self.out,
        }
    }
}

/// PUBLISH / SPUBLISH: sends `payload` to `channel`'s subscribers and, unless sharded, to every
/// pattern subscriber it matches; returns how many receivers it had.
pub fn publish(
    server: &Server,
    sharded: bool,
    channel: &[u8],
    payload: &[u8],
    mut publisher: Option<Publisher<'_>>,
) -> usize {
    if !server.pubsub.anyone() {
        return 0;
    }
    let from = publisher.as_ref().map(|p| p.thread);
    server.mail.post_sorted(server, from, |batches| {
        collect(server, sharded, channel, payload, &mut publisher, batches)
    })
}

/// Sorts the receivers of a publish into `batches` by thread (the publisher itself gets its
/// message at once); returns their number.
fn collect(
    server: &Server,
    sharded: bool,
    channel: &[u8],
    payload: &[u8],
    publisher: &mut Option<Publisher<'_>>,
    batches: &mut [Batch],
) -> usize {
    let mut receivers = 0;
    let mut send = |subs: &[Sub], pattern: Option<&Arc<[u8]>>| {
        if subs.is_empty() {
            return;
        }
        let message = Arc::new(Message::new(sharded, pattern.cloned(), channel, payload));
        for sub in subs {
            match publisher.as_mut() {
                Some(p) if p.id == sub.id => p.out.extend_from_slice(message.frame(p.protocol)),
                _ => batches[sub.thread].push((sub.id, Mail::Message(Arc::clone(&message)))),
            }
        }
        receivers += subs.len();
    };
    let r = server.pubsub.registry.read();
    let map = if sharded {
        &r.shard_channels
    } else {
        &r.channels
    };
    if let Some(subs) = map.get(channel) {
        send(subs, None);
    }
    if !sharded {
        let matching = r
            .patterns
            .iter()
            .filter(|p| pattern_matches(&p.glob, p.pattern.is_empty(), channel));
        for p in matching {
            send(&p.subs, Some(&p.pattern));
        }
    }
    receivers
}
