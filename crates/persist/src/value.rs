//! One value as Redis's RDB holds it: a type byte, then the object (`rdbSaveObjectType` and
//! `rdbSaveObject`), written from the store's logical view and read back into a `Value` (a raw
//! string borrowed from the input, collections owned) that the store's builders take. DUMP
//! payloads and RDB files share this layer.
//!
//! ```text
//!  written (Redis 7.0's choices, by the encoding OBJECT ENCODING names):
//!   string                STRING 0            string (integer, raw or LZF)
//!   list      quicklist   LIST_QUICKLIST_2 18 nodes, each [container 2 = packed][listpack string]
//!   set       intset      SET_INTSET 11       intset as a string
//!             hashtable   SET 2               len, members
//!   hash      listpack    HASH_LISTPACK 16    listpack of field, value, … as a string
//!             hashtable   HASH 4              len, (field, value)…
//!   zset      listpack    ZSET_LISTPACK 17    listpack of member, score, … (rank order)
//!             skiplist    ZSET_2 5            len, (member, binary double)… highest rank first
//!
//!  read: all of the above, and what older Redis wrote: LIST 1, ZSET 3 (text doubles),
//!  HASH_ZIPMAP 9, LIST_ZIPLIST 10, ZSET_ZIPLIST 12, HASH_ZIPLIST 13, LIST_QUICKLIST 14.
//! ```
//! Reading checks what Redis's loader checks with `sanitize-dump-payload yes`, always: every
//! embedded listpack, ziplist, intset and zipmap is validated whole, a count is never trusted for
//! an allocation beyond the bytes that remain, and a collection that is empty, or holds a member
//! or field twice, or a NaN score, is refused. A list node's listpack is limited by the RDB
//! string cap (`codec::STRING_MAX_BYTES`), as every string is.

use crate::codec::{self, Reader, rdb_type};
use crate::{Entry, FormatError, intset, listpack, ziplist, zipmap};
use std::borrow::Cow;
use std::collections::HashSet;
use store::{Shard, StoreError, Str, Ttl, View};

/// Bytes of entries a written list node holds at most (Redis's `list-max-listpack-size -2`).
const LIST_NODE_BYTES_MAX: usize = 8192;
/// The quicklist node container of a listpack (`QUICKLIST_NODE_CONTAINER_PACKED`).
const CONTAINER_PACKED: u64 = 2;
/// A node holding one large element as a plain string (`QUICKLIST_NODE_CONTAINER_PLAIN`).
const CONTAINER_PLAIN: u64 = 1;

/// Hash pairs: (field, value).
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// A value read from RDB bytes, in Redis's terms. A string borrows the input where it is stored
/// raw (most keys' values), so loading a file allocates nothing for it; collections are owned.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    String(Cow<'a, [u8]>),
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
    Hash(Pairs),
    /// (member, score) in any order.
    ZSet(Vec<(Vec<u8>, f64)>),
}

impl Value<'_> {
    /// The same value owning its bytes.
    #[must_use]
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::String(s) => Value::String(Cow::Owned(s.into_owned())),
            Value::List(l) => Value::List(l),
            Value::Set(m) => Value::Set(m),
            Value::Hash(p) => Value::Hash(p),
            Value::ZSet(p) => Value::ZSet(p),
        }
    }

    /// The same value with its elements in a fixed order where Redis defines none (set
    /// members, hash pairs, zset members by name), for comparing values read from different
    /// servers.
    #[must_use]
    pub fn sorted(&self) -> Value<'static> {
        match self.clone() {
            Value::Set(mut m) => {
                m.sort();
                Value::Set(m)
            }
            Value::Hash(mut p) => {
                p.sort();
                Value::Hash(p)
            }
            Value::ZSet(mut p) => {
                p.sort_by(|a, b| a.0.cmp(&b.0));
                Value::ZSet(p)
            }
            other => other.into_owned(),
        }
    }
}

/// Writes the type byte and the object of `view`, whose OBJECT ENCODING is `encoding` (Redis's
/// name, which picks the compact form exactly where redis-server would have it).
pub fn write(out: &mut Vec<u8>, view: &View<'_>, encoding: &str, compress: bool) {
    out.push(rdb_type_of(view, encoding));
    write_object(out, view, encoding, compress);
}

/// The RDB type `view` is written as (`rdbSaveObjectType`).
pub fn rdb_type_of(view: &View<'_>, encoding: &str) -> u8 {
    match view {
        View::String(_) => rdb_type::STRING,
        View::List(_) => rdb_type::LIST_QUICKLIST_2,
        View::Set(_) if encoding == "intset" => rdb_type::SET_INTSET,
        View::Set(_) => rdb_type::SET,
        View::Hash(_) if encoding == "listpack" => rdb_type::HASH_LISTPACK,
        View::Hash(_) => rdb_type::HASH,
        View::ZSet(_) if encoding == "listpack" => rdb_type::ZSET_LISTPACK,
        View::ZSet(_) => rdb_type::ZSET_2,
    }
}

/// Writes the object of `view` in the form `rdb_type_of` names (`rdbSaveObject`).
pub fn write_object(out: &mut Vec<u8>, view: &View<'_>, encoding: &str, compress: bool) {
    match (view, rdb_type_of(view, encoding)) {
        (View::String(s), _) => s.with_bytes(|b| codec::put_string(out, b, compress)),
        (View::List(l), _) => write_list_nodes(out, l.iter_from(0), compress),
        (View::Set(s), rdb_type::SET_INTSET) => {
            let mut values: Vec<i64> = s.iter().map(|m| m.as_int().expect("intset")).collect();
            values.sort_unstable();
            codec::put_string(out, &intset::encode(&values), compress);
        }
        (View::Set(s), _) => {
            codec::put_len(out, s.len() as u64);
            for m in s {
                m.with_bytes(|m| codec::put_string(out, m, compress));
            }
        }
        (View::Hash(h), rdb_type::HASH_LISTPACK) => {
            let mut lp = listpack::Writer::new();
            for (f, v) in h {
                push_str(&mut lp, f);
                push_str(&mut lp, v);
            }
            codec::put_string(out, &lp.finish(), compress);
        }
        (View::Hash(h), _) => {
            codec::put_len(out, h.len() as u64);
            for (f, v) in h {
                f.with_bytes(|f| codec::put_string(out, f, compress));
                v.with_bytes(|v| codec::put_string(out, v, compress));
            }
        }
        (View::ZSet(z), rdb_type::ZSET_LISTPACK) => {
            let mut lp = listpack::Writer::new();
            for (score, member) in z.iter(0, false) {
                lp.push_str(member);
                push_score(&mut lp, score);
            }
            codec::put_string(out, &lp.finish(), compress);
        }
        (View::ZSet(z), _) => {
            codec::put_len(out, z.len() as u64);
            // Highest rank first, as Redis walks its skiplist from the tail.
            for (score, member) in z.iter(z.len() - 1, true) {
                codec::put_string(out, member, compress);
                codec::put_binary_double(out, score);
            }
        }
    }
}

fn push_str(lp: &mut listpack::Writer, s: Str<'_>) {
    match s.as_int() {
        Some(v) => lp.push_int(v),
        None => s.with_bytes(|b| lp.push_str(b)),
    }
}

/// A zset score as `zzlInsertAt` appends it: an integer when `double2ll` takes it, else the text
/// `d2string` prints.
fn push_score(lp: &mut listpack::Writer, score: f64) {
    match double2ll(score) {
        Some(v) => lp.push_int(v),
        None => lp.push_str(&d2string(score)),
    }
}

/// Redis's `double2ll`: the integer an integral score within ±2^62 is.
#[allow(clippy::float_cmp)] // exactly integral is the point
fn double2ll(d: f64) -> Option<i64> {
    let limit = (i64::MAX / 2) as f64;
    (d.is_finite() && (-limit..=limit).contains(&d) && d == d.trunc()).then_some(d as i64)
}

/// Redis's `d2string` for a score `double2ll` refused: inf, -inf or `%.17g`.
fn d2string(d: f64) -> Vec<u8> {
    if d.is_infinite() {
        return if d > 0.0 {
            b"inf".to_vec()
        } else {
            b"-inf".to_vec()
        };
    }
    resp::double::g17(d).as_bytes().to_vec()
}

/// The quicklist nodes of a list: listpacks of at most `LIST_NODE_BYTES_MAX` bytes of entries
/// (one larger element alone in its node, as Redis's packed nodes allow).
fn write_list_nodes<'a>(out: &mut Vec<u8>, items: impl Iterator<Item = &'a [u8]>, compress: bool) {
    let mut nodes: Vec<Vec<u8>> = Vec::new();
    let mut lp = listpack::Writer::new();
    let mut bytes = 0usize;
    for item in items {
        let size = item.len() + 11;
        if bytes > 0 && bytes + size > LIST_NODE_BYTES_MAX {
            nodes.push(std::mem::take(&mut lp).finish());
            bytes = 0;
        }
        lp.push_str(item);
        bytes += size;
    }
    if bytes > 0 {
        nodes.push(lp.finish());
    }
    codec::put_len(out, nodes.len() as u64);
    for node in nodes {
        codec::put_len(out, CONTAINER_PACKED);
        codec::put_string(out, &node, compress);
    }
}

/// Reads the object of RDB type `t` (its type byte already read).
pub fn read<'a>(t: u8, r: &mut Reader<'a>) -> Result<Value<'a>, FormatError> {
    let value = match t {
        rdb_type::STRING => Value::String(r.string()?),
        rdb_type::LIST => Value::List(read_strings(r)?),
        rdb_type::SET => Value::Set(distinct(read_strings(r)?, "duplicate set members")?),
        rdb_type::ZSET | rdb_type::ZSET_2 => Value::ZSet(read_zset(r, t == rdb_type::ZSET_2)?),
        rdb_type::HASH => Value::Hash(read_hash(r)?),
        rdb_type::HASH_ZIPMAP => {
            let blob = r.string()?;
            let pairs = zipmap::pairs(&blob)?
                .into_iter()
                .map(|(f, v)| (f.to_vec(), v.to_vec()))
                .collect();
            Value::Hash(distinct_pairs(pairs)?)
        }
        rdb_type::LIST_ZIPLIST => Value::List(texts(&ziplist::entries(&r.string()?)?)),
        rdb_type::SET_INTSET => {
            let values = intset::decode(&r.string()?)?;
            Value::Set(values.iter().map(|v| v.to_string().into_bytes()).collect())
        }
        rdb_type::ZSET_ZIPLIST => Value::ZSet(zset_pairs(&ziplist::entries(&r.string()?)?)?),
        rdb_type::HASH_ZIPLIST => Value::Hash(hash_pairs(&ziplist::entries(&r.string()?)?)?),
        rdb_type::LIST_QUICKLIST => Value::List(read_quicklist(r, false)?),
        rdb_type::HASH_LISTPACK => Value::Hash(hash_pairs(&listpack::entries(&r.string()?)?)?),
        rdb_type::ZSET_LISTPACK => Value::ZSet(zset_pairs(&listpack::entries(&r.string()?)?)?),
        rdb_type::LIST_QUICKLIST_2 => Value::List(read_quicklist(r, true)?),
        rdb_type::STREAM_LISTPACKS | rdb_type::STREAM_LISTPACKS_2 => {
            return Err(FormatError("streams are not supported yet"));
        }
        rdb_type::MODULE_2 => return Err(FormatError("module values are not supported")),
        _ => return Err(FormatError("unknown value type")),
    };
    if value_len(&value) == 0 && !matches!(value, Value::String(_)) {
        return Err(FormatError("empty collection"));
    }
    Ok(value)
}

fn value_len(v: &Value<'_>) -> usize {
    match v {
        Value::String(_) => 1,
        Value::List(l) | Value::Set(l) => l.len(),
        Value::Hash(h) => h.len(),
        Value::ZSet(z) => z.len(),
    }
}

/// A count of items that each take at least one byte: never more than the bytes that remain.
fn count(r: &mut Reader<'_>) -> Result<usize, FormatError> {
    let n = r.len_value()?;
    if n > r.remaining() as u64 {
        return Err(FormatError("count past the end of the input"));
    }
    Ok(n as usize)
}

fn read_strings(r: &mut Reader<'_>) -> Result<Vec<Vec<u8>>, FormatError> {
    let n = count(r)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(r.string()?.into_owned());
    }
    Ok(out)
}

fn read_hash(r: &mut Reader<'_>) -> Result<Pairs, FormatError> {
    let n = count(r)?;
    let mut pairs = Vec::with_capacity(n);
    for _ in 0..n {
        let f = r.string()?.into_owned();
        pairs.push((f, r.string()?.into_owned()));
    }
    distinct_pairs(pairs)
}

fn read_zset(r: &mut Reader<'_>, binary: bool) -> Result<Vec<(Vec<u8>, f64)>, FormatError> {
    let n = count(r)?;
    let mut pairs = Vec::with_capacity(n);
    for _ in 0..n {
        let m = r.string()?.into_owned();
        let score = if binary {
            r.binary_double()?
        } else {
            r.old_double()?
        };
        pairs.push((m, score));
    }
    checked_zset(pairs)
}

/// Quicklist nodes: ziplists (`LIST_QUICKLIST`), or containers of listpacks and plain elements
/// (`LIST_QUICKLIST_2`); empty nodes are skipped, as Redis skips them.
fn read_quicklist(r: &mut Reader<'_>, v2: bool) -> Result<Vec<Vec<u8>>, FormatError> {
    let nodes = count(r)?;
    let mut items = Vec::new();
    for _ in 0..nodes {
        let container = if v2 { r.len_value()? } else { CONTAINER_PACKED };
        let blob = r.string()?;
        match container {
            CONTAINER_PLAIN if v2 => items.push(blob.into_owned()),
            CONTAINER_PACKED if v2 => items.extend(texts(&listpack::entries(&blob)?)),
            CONTAINER_PACKED => items.extend(texts(&ziplist::entries(&blob)?)),
            _ => return Err(FormatError("unknown quicklist container")),
        }
    }
    Ok(items)
}

fn text(e: &Entry<'_>) -> Vec<u8> {
    match e {
        Entry::Int(v) => v.to_string().into_bytes(),
        Entry::Str(s) => s.to_vec(),
    }
}

fn texts(entries: &[Entry<'_>]) -> Vec<Vec<u8>> {
    entries.iter().map(text).collect()
}

fn hash_pairs(entries: &[Entry<'_>]) -> Result<Pairs, FormatError> {
    if entries.len() % 2 == 1 {
        return Err(FormatError("odd number of hash entries"));
    }
    distinct_pairs(
        entries
            .chunks(2)
            .map(|p| (text(&p[0]), text(&p[1])))
            .collect(),
    )
}

fn zset_pairs(entries: &[Entry<'_>]) -> Result<Vec<(Vec<u8>, f64)>, FormatError> {
    if entries.len() % 2 == 1 {
        return Err(FormatError("odd number of zset entries"));
    }
    let mut pairs = Vec::with_capacity(entries.len() / 2);
    for p in entries.chunks(2) {
        let score = match p[1] {
            Entry::Int(v) => v as f64,
            Entry::Str(s) => parse_score(s).ok_or(FormatError("zset score not a number"))?,
        };
        pairs.push((text(&p[0]), score));
    }
    checked_zset(pairs)
}

/// A score a ziplist or listpack holds as text (`zzlStrtod`): a decimal number, `inf`, `-inf`.
fn parse_score(s: &[u8]) -> Option<f64> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn checked_zset(pairs: Vec<(Vec<u8>, f64)>) -> Result<Vec<(Vec<u8>, f64)>, FormatError> {
    if pairs.iter().any(|(_, s)| s.is_nan()) {
        return Err(FormatError("zset score is NaN"));
    }
    let mut seen = HashSet::with_capacity(pairs.len());
    if !pairs.iter().all(|(m, _)| seen.insert(m.as_slice())) {
        return Err(FormatError("duplicate zset members"));
    }
    Ok(pairs)
}

fn distinct(items: Vec<Vec<u8>>, what: &'static str) -> Result<Vec<Vec<u8>>, FormatError> {
    let mut seen = HashSet::with_capacity(items.len());
    if items.iter().all(|m| seen.insert(m.as_slice())) {
        Ok(items)
    } else {
        Err(FormatError(what))
    }
}

fn distinct_pairs(pairs: Vec<(Vec<u8>, Vec<u8>)>) -> Result<Pairs, FormatError> {
    let mut seen = HashSet::with_capacity(pairs.len());
    if pairs.iter().all(|(f, _)| seen.insert(f.as_slice())) {
        Ok(pairs)
    } else {
        Err(FormatError("duplicate hash fields"))
    }
}

/// Stores `value` under `key` of `shard` with `expire_at`, replacing whatever was there, in the
/// encoding the shard would choose for it. On `Err` the key keeps its old value.
pub fn store(
    value: &Value<'_>,
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    expire_at: Option<u64>,
) -> Result<(), StoreError> {
    match value {
        Value::String(s) => {
            let ttl = expire_at.map_or(Ttl::Clear, Ttl::At);
            shard.put_string(db, key, s, ttl, 0)
        }
        Value::List(items) => {
            let mut b = shard.builder::<store::List>()?;
            for v in items {
                b.push_back(v);
            }
            b.finish(db, key, expire_at)
        }
        Value::Set(members) => {
            let mut b = shard.builder::<store::Set>()?;
            for m in members {
                b.insert(m)?;
            }
            b.finish(db, key, expire_at)
        }
        Value::Hash(pairs) => {
            let mut b = shard.builder::<store::Hash>()?;
            for (f, v) in pairs {
                b.insert(f, v)?;
            }
            b.finish(db, key, expire_at)
        }
        Value::ZSet(pairs) => {
            let longest = pairs.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
            let mut b = shard.zset_builder(pairs.len(), longest)?;
            for (m, score) in pairs {
                b.insert(m, *score)?;
            }
            b.finish(db, key, expire_at)
        }
    }
}
