//! Redis 7's AOF base file in the command form, write side: the commands that rebuild a dataset,
//! byte for byte as redis-server 7.0.15's rewrite writes them (`aof.c`:
//! `rewriteAppendOnlyFileRio` and the `rewrite<Type>Object` functions; `rio.c`: the
//! `rioWriteBulk*` helpers). `aof.rs` reads these bytes back.
//!
//! ```text
//!  per non-empty database (the caller skips empty ones, as Redis does):
//!    *2 $6 SELECT $<n> <db>                              encode_select
//!    per key (encode_entry):
//!      string  *3 SET key value                          an integer string as its decimal text
//!      list    *<2+k>  RPUSH key e1 … ek                 head → tail
//!      set     *<2+k>  SADD  key m1 … mk
//!      zset    *<2+2k> ZADD  key s1 m1 … sk mk           score first, as `%.17g`
//!      hash    *<2+2k> HMSET key f1 v1 … fk vk
//!      then, when the key has a TTL:
//!              *3 PEXPIREAT key <unix ms>
//!  every argument: $<len>\r\n<bytes>\r\n; every count: *<n>\r\n (decimal, no padding)
//! ```
//! A collection of n items takes ceil(n / 64) commands: every one carries 64 items
//! (`AOF_REWRITE_ITEMS_PER_CMD`) except the last, which carries the rest; a zset or hash item is
//! a pair. Scores are `snprintf("%.17g")` (`rioWriteBulkDouble`): `1.5`, `3`, `inf`, `-inf`,
//! `0.10000000000000001`, `1e+20`, which read back to the same double.
//!
//! Invariant: the items a key's commands carry == `view.len()`. Redis writes each command's count
//! before its items, from the length the collection reports, and so does this writer; a view
//! whose iterator disagreed with its length would produce an unreadable file, so the writer
//! asserts the two agree (one comparison per item) rather than buffer a command to count it.
//!
//! Element order is the view's: rank order for zsets, head to tail for lists, the store's own
//! order for sets and hashes. Redis's order there is its dict's, which depends on its hash seed,
//! so no two Redis rewrites promise the same order either; each command's bytes are Redis's.

use std::io::Write;
use store::{Entry, Str, View};

/// Items (list elements, set members, zset or hash pairs) one command carries at most
/// (Redis's `AOF_REWRITE_ITEMS_PER_CMD`).
pub const ITEMS_PER_COMMAND_MAX: usize = 64;

/// Appends one command: `*<n>\r\n`, then `$<len>\r\n<bytes>\r\n` per argument.
pub fn encode_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    put_count(out, b'*', args.len());
    for arg in args {
        put_bulk(out, arg);
    }
}

/// The function libraries as the base rebuilds them: `FUNCTION LOAD <code>` each, ahead of
/// the keys (Redis's `rewriteFunctions`).
pub fn encode_functions(out: &mut Vec<u8>, codes: &[Vec<u8>]) {
    for code in codes {
        encode_command(out, &[b"FUNCTION", b"LOAD", code]);
    }
}

/// Appends `SELECT <db>`, as the rewrite starts each non-empty database.
pub fn encode_select(out: &mut Vec<u8>, db: usize) {
    out.extend_from_slice(b"*2\r\n$6\r\nSELECT\r\n");
    put_bulk_u64(out, db as u64);
}

/// Appends the commands that rebuild one key: its value, then PEXPIREAT when it has a TTL.
pub fn encode_entry(out: &mut Vec<u8>, e: &Entry<'_>) {
    match &e.view {
        View::String(s) => {
            out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
            put_bulk(out, e.key);
            put_bulk_str(out, *s);
        }
        View::List(l) => {
            let mut batch = Batch::new(b"RPUSH", e.key, l.len(), 1);
            for item in l.iter_from(0) {
                batch.next_item(out);
                put_bulk(out, item);
            }
            batch.finish();
        }
        View::Set(s) => {
            let mut batch = Batch::new(b"SADD", e.key, s.len(), 1);
            for member in s {
                batch.next_item(out);
                put_bulk_str(out, member);
            }
            batch.finish();
        }
        View::ZSet(z) => encode_zset(out, e.key, z),
        View::Hash(h) => {
            let mut batch = Batch::new(b"HMSET", e.key, h.len(), 2);
            for (field, value) in h {
                batch.next_item(out);
                put_bulk_str(out, field);
                put_bulk_str(out, value);
            }
            batch.finish();
        }
    }
    if let Some(at) = e.expire_at_ms {
        out.extend_from_slice(b"*3\r\n$9\r\nPEXPIREAT\r\n");
        put_bulk(out, e.key);
        put_bulk_u64(out, at);
    }
}

/// `ZADD key score member …`, in rank order, the score first (`rewriteSortedSetObject`).
fn encode_zset(out: &mut Vec<u8>, key: &[u8], z: &store::ZSetView<'_>) {
    let mut batch = Batch::new(b"ZADD", key, z.len(), 2);
    for (score, member) in z.iter(0, false) {
        batch.next_item(out);
        put_bulk_double(out, score);
        put_bulk(out, member);
    }
    batch.finish();
}

/// The commands of one collection: a header (`*<argc>`, the command's name, the key) before every
/// `ITEMS_PER_COMMAND_MAX`-th item, its count taken from the items that remain, as Redis's
/// `count`/`items` pair does.
struct Batch<'a> {
    name: &'a [u8],
    key: &'a [u8],
    /// Items not written yet.
    remaining: usize,
    /// Items written in the current command (0: the next item starts a command).
    in_command: usize,
    /// Arguments per item: 1 (list, set) or 2 (zset, hash).
    arity: usize,
}

impl<'a> Batch<'a> {
    fn new(name: &'a [u8], key: &'a [u8], items: usize, arity: usize) -> Batch<'a> {
        Batch {
            name,
            key,
            remaining: items,
            in_command: 0,
            arity,
        }
    }

    /// Called before an item's arguments are written: starts a command when one is due.
    fn next_item(&mut self, out: &mut Vec<u8>) {
        assert!(self.remaining > 0, "a view yielded more items than its len");
        if self.in_command == 0 {
            let items = self.remaining.min(ITEMS_PER_COMMAND_MAX);
            put_count(out, b'*', 2 + items * self.arity);
            put_bulk(out, self.name);
            put_bulk(out, self.key);
        }
        self.in_command = (self.in_command + 1) % ITEMS_PER_COMMAND_MAX;
        self.remaining -= 1;
    }

    fn finish(self) {
        assert_eq!(self.remaining, 0, "a view yielded fewer items than its len");
    }
}

/// `<prefix><n>\r\n` (`rioWriteBulkCount`).
fn put_count(out: &mut Vec<u8>, prefix: u8, n: usize) {
    out.push(prefix);
    write!(out, "{n}\r\n").expect("writing to a Vec cannot fail");
}

/// `$<len>\r\n<bytes>\r\n` (`rioWriteBulkString`).
fn put_bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    put_count(out, b'$', bytes.len());
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// A stored string: an integer as its decimal text (`rioWriteBulkObject`, `rioWriteBulkLongLong`).
fn put_bulk_str(out: &mut Vec<u8>, s: Str<'_>) {
    s.with_bytes(|bytes| put_bulk(out, bytes));
}

/// An unsigned number in decimal (a database index, a unix time in ms). A u64 rather than
/// Redis's `long long` because the store keeps expiries as u64; below 2^63 the text is the same.
fn put_bulk_u64(out: &mut Vec<u8>, v: u64) {
    let mut digits = [0u8; 20];
    let mut rest = &mut digits[..];
    write!(rest, "{v}").expect("a u64 has at most 20 digits");
    let len = 20 - rest.len();
    put_bulk(out, &digits[..len]);
}

/// A score as `rioWriteBulkDouble` writes it: `%.17g` (glibc's `inf` and `-inf` included).
fn put_bulk_double(out: &mut Vec<u8>, score: f64) {
    put_bulk(out, resp::double::g17(score).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::{Commands, Item};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::collections::{BTreeMap, BTreeSet};
    use store::{Hash, List, Set, Shard, ShardConfig, Ttl, ZSet};

    type Args = Vec<Vec<u8>>;

    fn shard() -> Shard {
        Shard::new(&ShardConfig::default()).unwrap()
    }

    /// The commands of `bytes`, which must be whole commands and nothing else.
    fn parse(bytes: &[u8]) -> Vec<Args> {
        let mut commands = Commands::new(bytes);
        let parsed = commands
            .by_ref()
            .map(|item| match item.unwrap() {
                Item::Command(args) => args.iter().map(|a| a.to_vec()).collect(),
                Item::Annotation(a) => panic!("annotation {a:?}"),
            })
            .collect();
        assert_eq!(commands.pos(), bytes.len(), "every byte is a whole command");
        parsed
    }

    /// The bytes `encode_entry` writes for `key` of database 0.
    fn encoded(shard: &mut Shard, key: &[u8]) -> Vec<u8> {
        shard
            .peek(0, key, |e| {
                let mut out = Vec::new();
                encode_entry(&mut out, &e);
                out
            })
            .expect("the key is stored")
    }

    fn args(list: &[&str]) -> Args {
        list.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn commands_and_select_are_resp_multibulks() {
        let mut out = Vec::new();
        encode_command(&mut out, &[b"SET", b"k\r\n", b""]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$0\r\n\r\n");
        out.clear();
        encode_select(&mut out, 0);
        encode_select(&mut out, 15);
        assert_eq!(
            out,
            b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*2\r\n$6\r\nSELECT\r\n$2\r\n15\r\n"
        );
    }

    #[test]
    fn a_list_of_130_is_rpush_of_64_64_and_2() {
        let mut s = shard();
        let items: Vec<String> = (0..130).map(|i| format!("e{i}")).collect();
        s.update::<List, _>(0, b"l", 0, true, |l| {
            for i in &items {
                l.push_back(i.as_bytes());
            }
            Ok(())
        })
        .unwrap();
        let commands = parse(&encoded(&mut s, b"l"));
        let sizes: Vec<usize> = commands.iter().map(|c| c.len() - 2).collect();
        assert_eq!(sizes, [64, 64, 2]);
        for c in &commands {
            assert_eq!(c[..2], args(&["RPUSH", "l"]));
        }
        let written: Vec<&[u8]> = commands
            .iter()
            .flat_map(|c| &c[2..])
            .map(Vec::as_slice)
            .collect();
        let stored: Vec<&[u8]> = items.iter().map(String::as_bytes).collect();
        assert_eq!(written, stored, "head to tail");
    }

    #[test]
    fn a_ttl_follows_the_value_as_pexpireat() {
        let mut s = shard();
        s.put_string(0, b"k", b"v", Ttl::At(1_700_000_000_123), 0)
            .unwrap();
        s.update::<Set, _>(0, b"s", 0, true, |st| st.add(b"m").map(|_| ()))
            .unwrap();
        assert!(s.set_expire(0, b"s", Some(42), 0).unwrap());
        s.put_string(0, b"forever", b"v", Ttl::Clear, 0).unwrap();
        assert_eq!(
            parse(&encoded(&mut s, b"k")),
            [
                args(&["SET", "k", "v"]),
                args(&["PEXPIREAT", "k", "1700000000123"])
            ]
        );
        assert_eq!(
            encoded(&mut s, b"s"),
            b"*3\r\n$4\r\nSADD\r\n$1\r\ns\r\n$1\r\nm\r\n*3\r\n$9\r\nPEXPIREAT\r\n$1\r\ns\r\n$2\r\n42\r\n"
        );
        assert_eq!(parse(&encoded(&mut s, b"forever")).len(), 1, "no PEXPIREAT");
    }

    #[test]
    fn an_integer_string_is_its_decimal_text() {
        let mut s = shard();
        s.put_string(0, b"n", b"-12345", Ttl::Clear, 0).unwrap();
        s.put_string(0, b"min", b"-9223372036854775808", Ttl::Clear, 0)
            .unwrap();
        let is_int = |s: &mut Shard, key: &[u8]| {
            s.peek(0, key, |e| matches!(e.view, View::String(Str::Int(_))))
        };
        assert_eq!(
            is_int(&mut s, b"n"),
            Some(true),
            "the integer path is tested"
        );
        assert_eq!(is_int(&mut s, b"min"), Some(true));
        assert_eq!(
            encoded(&mut s, b"n"),
            b"*3\r\n$3\r\nSET\r\n$1\r\nn\r\n$6\r\n-12345\r\n"
        );
        assert_eq!(
            parse(&encoded(&mut s, b"min")),
            [args(&["SET", "min", "-9223372036854775808"])]
        );
    }

    #[test]
    fn zset_scores_are_written_as_redis_prints_them() {
        let mut s = shard();
        let pairs: [(&[u8], f64); 3] = [(b"a", 1.5), (b"b", f64::NEG_INFINITY), (b"c", 3.0)];
        s.update::<ZSet, _>(0, b"z", 0, true, |z| {
            pairs.iter().try_for_each(|&(m, score)| z.insert(m, score))
        })
        .unwrap();
        // Rank order, as Redis walks a listpack zset; `%.17g` of 3.0 is "3".
        assert_eq!(
            encoded(&mut s, b"z"),
            b"*8\r\n$4\r\nZADD\r\n$1\r\nz\r\n\
              $4\r\n-inf\r\n$1\r\nb\r\n$3\r\n1.5\r\n$1\r\na\r\n$1\r\n3\r\n$1\r\nc\r\n"
        );
        let pairs: [(&[u8], f64); 4] = [
            (b"p", 0.1),
            (b"q", 1e20),
            (b"r", 2.5e-5),
            (b"t", f64::INFINITY),
        ];
        s.update::<ZSet, _>(0, b"y", 0, true, |z| {
            pairs.iter().try_for_each(|&(m, score)| z.insert(m, score))
        })
        .unwrap();
        assert_eq!(
            parse(&encoded(&mut s, b"y")),
            [args(&[
                "ZADD",
                "y",
                "2.5000000000000001e-05",
                "r",
                "0.10000000000000001",
                "p",
                "1e+20",
                "q",
                "inf",
                "t"
            ])]
        );
    }

    /// Pairs of a command's arguments after its name and key, sorted.
    fn sorted_pairs(commands: &[Args]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut pairs: Vec<_> = commands
            .iter()
            .flat_map(|c| c[2..].chunks(2).map(|p| (p[0].clone(), p[1].clone())))
            .collect();
        pairs.sort();
        pairs
    }

    #[test]
    fn a_hash_is_hmset_pairs_64_at_a_time() {
        let mut s = shard();
        s.update::<Hash, _>(0, b"h", 0, true, |h| {
            h.set(b"name", b"ada")?;
            h.set(b"age", b"36")?;
            h.set(b"7", b"-1").map(|_| ())
        })
        .unwrap();
        let commands = parse(&encoded(&mut s, b"h"));
        assert_eq!(commands.len(), 1);
        assert_eq!(commands[0][..2], args(&["HMSET", "h"]));
        let want: Vec<(Vec<u8>, Vec<u8>)> = [("7", "-1"), ("age", "36"), ("name", "ada")]
            .iter()
            .map(|(f, v)| (f.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect();
        assert_eq!(sorted_pairs(&commands), want);

        s.update::<Hash, _>(0, b"big", 0, true, |h| {
            (0..100).try_for_each(|i| h.set(format!("f{i}").as_bytes(), b"v").map(|_| ()))
        })
        .unwrap();
        let bytes = encoded(&mut s, b"big");
        assert!(bytes.starts_with(b"*130\r\n$5\r\nHMSET\r\n$3\r\nbig\r\n"));
        let commands = parse(&bytes);
        let sizes: Vec<usize> = commands.iter().map(Vec::len).collect();
        assert_eq!(sizes, [2 + 2 * 64, 2 + 2 * 36]);
        let fields: BTreeSet<Vec<u8>> = sorted_pairs(&commands).into_iter().map(|p| p.0).collect();
        assert_eq!(
            fields,
            (0..100).map(|i| format!("f{i}").into_bytes()).collect()
        );
    }

    #[test]
    fn a_set_is_sadd_64_at_a_time_integers_in_decimal() {
        let mut s = shard();
        s.update::<Set, _>(0, b"ints", 0, true, |st| {
            (-50..50).try_for_each(|i| st.add(i.to_string().as_bytes()).map(|_| ()))
        })
        .unwrap();
        let commands = parse(&encoded(&mut s, b"ints"));
        let sizes: Vec<usize> = commands.iter().map(|c| c.len() - 2).collect();
        assert_eq!(sizes, [64, 36]);
        assert!(commands.iter().all(|c| c[..2] == args(&["SADD", "ints"])));
        let mut members: Vec<i64> = commands
            .iter()
            .flat_map(|c| &c[2..])
            .map(|m| std::str::from_utf8(m).unwrap().parse().unwrap())
            .collect();
        members.sort_unstable();
        assert_eq!(members, (-50..50).collect::<Vec<i64>>());
    }

    /// A value in Redis's terms, order-free where Redis's type is.
    #[derive(Clone, Debug, PartialEq)]
    enum Model {
        String(Vec<u8>),
        List(Vec<Vec<u8>>),
        Set(BTreeSet<Vec<u8>>),
        Hash(BTreeMap<Vec<u8>, Vec<u8>>),
        /// member → the score's bits.
        ZSet(BTreeMap<Vec<u8>, u64>),
    }

    /// (db, key) → (value, expiry).
    type Keyspace = BTreeMap<(usize, Vec<u8>), (Model, Option<u64>)>;

    /// An element: integers (intsets, integer entries), short text, or text long enough to
    /// push a collection out of its compact encoding; only integers when `ints`.
    fn element(rng: &mut SmallRng, ints: bool) -> Vec<u8> {
        match if ints { 0 } else { rng.gen_range(0..3) } {
            0 => rng.gen_range(-300i64..300).to_string().into_bytes(),
            1 => format!("m{}", rng.gen_range(0..500)).into_bytes(),
            _ => format!(
                "{}:{}",
                rng.gen_range(0..50),
                "x".repeat(rng.gen_range(60..100))
            )
            .into_bytes(),
        }
    }

    /// A score of every class `%.17g` prints differently; never NaN (no zset holds one) nor
    /// -0.0 (which a zset need not keep apart from 0).
    fn score(rng: &mut SmallRng) -> f64 {
        let score = match rng.gen_range(0..5) {
            0 => f64::from(rng.gen_range(-1000i32..1000)),
            1 => f64::from(rng.gen_range(-1000i32..1000)) / 8.0,
            2 => [f64::INFINITY, f64::NEG_INFINITY, 0.1, 1e20, 2.5e-5][rng.gen_range(0..5)],
            _ => f64::from_bits(rng.r#gen()),
        };
        if score.is_nan() || score == 0.0 {
            1.0
        } else {
            score
        }
    }

    /// Stores a random value of a random type under `key` and returns its model.
    fn fill(s: &mut Shard, rng: &mut SmallRng, db: usize, key: &[u8]) -> Model {
        let n = if rng.gen_bool(0.3) {
            rng.gen_range(60..300)
        } else {
            rng.gen_range(1..10)
        };
        let ints = rng.gen_bool(0.3);
        let elem = |rng: &mut SmallRng| element(rng, ints);
        match rng.gen_range(0..5) {
            0 => {
                let v = elem(rng);
                s.put_string(db, key, &v, Ttl::Clear, 0).unwrap();
                Model::String(v)
            }
            1 => {
                let items: Vec<Vec<u8>> = (0..n).map(|_| elem(rng)).collect();
                s.update::<List, _>(db, key, 0, true, |l| {
                    for i in &items {
                        l.push_back(i);
                    }
                    Ok(())
                })
                .unwrap();
                Model::List(items)
            }
            2 => {
                let members: BTreeSet<Vec<u8>> = (0..n).map(|_| elem(rng)).collect();
                s.update::<Set, _>(db, key, 0, true, |st| {
                    members.iter().try_for_each(|m| st.add(m).map(|_| ()))
                })
                .unwrap();
                Model::Set(members)
            }
            3 => {
                let pairs: BTreeMap<Vec<u8>, Vec<u8>> =
                    (0..n).map(|_| (elem(rng), elem(rng))).collect();
                s.update::<Hash, _>(db, key, 0, true, |h| {
                    pairs.iter().try_for_each(|(f, v)| h.set(f, v).map(|_| ()))
                })
                .unwrap();
                Model::Hash(pairs)
            }
            _ => {
                let pairs: BTreeMap<Vec<u8>, u64> =
                    (0..n).map(|_| (elem(rng), score(rng).to_bits())).collect();
                s.update::<ZSet, _>(db, key, 0, true, |z| {
                    pairs
                        .iter()
                        .try_for_each(|(m, bits)| z.insert(m, f64::from_bits(*bits)))
                })
                .unwrap();
                Model::ZSet(pairs)
            }
        }
    }

    /// The whole keyspace as `rewriteAppendOnlyFileRio` writes it; also the OBJECT ENCODING
    /// names it met, to show the test crossed every encoding.
    fn rewrite(s: &mut Shard) -> (Vec<u8>, BTreeSet<&'static str>) {
        let (mut out, mut encodings) = (Vec::new(), BTreeSet::new());
        for db in 0..s.databases() {
            if s.len(db) == 0 {
                continue;
            }
            encode_select(&mut out, db);
            s.for_each_entry(db, |e| {
                encodings.insert(e.object_encoding());
                encode_entry(&mut out, &e);
            });
        }
        (out, encodings)
    }

    fn number<T: std::str::FromStr>(arg: &[u8]) -> T
    where
        T::Err: std::fmt::Debug,
    {
        std::str::from_utf8(arg).unwrap().parse().unwrap()
    }

    /// Adds one value command's items to `model`; returns how many items it carried. Every
    /// member, field and zset member must be new: the multiset written is the set stored.
    fn apply(model: &mut Model, name: &[u8], items: &[Vec<u8>]) -> usize {
        match (model, name) {
            (Model::String(v), b"SET") => {
                assert_eq!(items.len(), 1);
                v.clone_from(&items[0]);
                1
            }
            (Model::List(l), b"RPUSH") => {
                l.extend_from_slice(items);
                items.len()
            }
            (Model::Set(st), b"SADD") => {
                for m in items {
                    assert!(st.insert(m.clone()), "{m:?} twice");
                }
                items.len()
            }
            (Model::Hash(h), b"HMSET") => {
                assert_eq!(items.len() % 2, 0);
                for p in items.chunks(2) {
                    assert!(
                        h.insert(p[0].clone(), p[1].clone()).is_none(),
                        "{p:?} twice"
                    );
                }
                items.len() / 2
            }
            (Model::ZSet(z), b"ZADD") => {
                assert_eq!(items.len() % 2, 0);
                for p in items.chunks(2) {
                    let bits = number::<f64>(&p[0]).to_bits();
                    assert!(z.insert(p[1].clone(), bits).is_none(), "{p:?} twice");
                }
                items.len() / 2
            }
            (model, name) => panic!("{name:?} on {model:?}"),
        }
    }

    /// The empty model a value command starts.
    fn model_for(name: &[u8]) -> Model {
        match name {
            b"SET" => Model::String(Vec::new()),
            b"RPUSH" => Model::List(Vec::new()),
            b"SADD" => Model::Set(BTreeSet::new()),
            b"HMSET" => Model::Hash(BTreeMap::new()),
            b"ZADD" => Model::ZSet(BTreeMap::new()),
            _ => panic!("unexpected command {name:?}"),
        }
    }

    /// Replays a rewrite into a model, checking its shape: SELECT before any key, each key
    /// written in one run, only a key's last command short of 64 items, PEXPIREAT once after
    /// its key's value. Returns the model and the databases selected.
    fn replay(commands: &[Args]) -> (Keyspace, Vec<usize>) {
        let (mut keyspace, mut selected) = (Keyspace::new(), Vec::new());
        // The key the previous value command wrote and the items it carried.
        let mut previous: Option<((usize, Vec<u8>), usize)> = None;
        for c in commands {
            let name = c[0].as_slice();
            if name == b"SELECT" {
                selected.push(number(&c[1]));
                previous = None;
                continue;
            }
            let key = (*selected.last().expect("SELECT comes first"), c[1].clone());
            if name == b"PEXPIREAT" {
                let (_, ttl) = keyspace.get_mut(&key).expect("PEXPIREAT follows its key");
                assert!(
                    ttl.replace(number(&c[2])).is_none(),
                    "one PEXPIREAT per key"
                );
                previous = None;
                continue;
            }
            match &previous {
                Some((k, items)) if *k == key => assert_eq!(*items, ITEMS_PER_COMMAND_MAX),
                _ => assert!(!keyspace.contains_key(&key), "{key:?} written in two runs"),
            }
            let (model, _) = keyspace
                .entry(key.clone())
                .or_insert_with(|| (model_for(name), None));
            let items = apply(model, name, &c[2..]);
            assert!((1..=ITEMS_PER_COMMAND_MAX).contains(&items));
            previous = Some((key, items));
        }
        (keyspace, selected)
    }

    #[test]
    fn a_rewrite_replays_to_exactly_what_was_stored() {
        for seed in 0..4u64 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut s = shard();
            let mut stored = Keyspace::new();
            for i in 0..200 {
                // Databases 0, 3 and 7 only: the empty ones must get no SELECT.
                let db = [0, 3, 7][rng.gen_range(0..3)];
                let key = format!("k{i}").into_bytes();
                let model = fill(&mut s, &mut rng, db, &key);
                let ttl = rng
                    .gen_bool(0.3)
                    .then(|| rng.gen_range(1..2_000_000_000_000));
                if ttl.is_some() {
                    assert!(s.set_expire(db, &key, ttl, 0).unwrap());
                }
                stored.insert((db, key), (model, ttl));
            }
            let (bytes, encodings) = rewrite(&mut s);
            let (written, selected) = replay(&parse(&bytes));
            assert_eq!(selected, [0, 3, 7], "seed {seed}");
            assert_eq!(written, stored, "seed {seed}");
            for name in [
                "int",
                "embstr",
                "raw",
                "quicklist",
                "intset",
                "listpack",
                "hashtable",
            ] {
                assert!(
                    encodings.contains(name),
                    "seed {seed}: no {name} in {encodings:?}"
                );
            }
            assert!(encodings.contains("skiplist"), "seed {seed}: {encodings:?}");
        }
    }
}
