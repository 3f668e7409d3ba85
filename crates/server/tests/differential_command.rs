//! COMMAND and dispatch's error paths against redis-server 7.0.15, byte for byte, in RESP2 and
//! RESP3:
//!
//! * `COMMAND INFO <name>` and `COMMAND DOCS <name>` for every command and subcommand densekv
//!   lists; COMMAND, COMMAND INFO and COMMAND DOCS of everything; COMMAND COUNT and COMMAND
//!   LIST [FILTERBY …], with redis-server's replies filtered to the names densekv has;
//! * COMMAND GETKEYS / GETKEYSANDFLAGS on a table of argument vectors, errors included;
//! * the errors dispatch writes (unknown command and subcommand with hostile names: NUL bytes,
//!   invalid UTF-8, CR/LF, 200-byte names, many long arguments; arities of containers and
//!   subcommands; EXECABORT; DEBUG's permission before AUTH) and how INFO commandstats,
//!   errorstats and CLIENT LIST report them.
//!
//! Order: redis-server keeps commands, and a container's subcommands, in a dict whose hash seed
//! is random per process, so two redis-servers list them in different orders. Lists of whole
//! commands and the subcommands inside a container's entry are compared as sets (each member
//! byte for byte); every other part of an entry is compared in order.
//!
//! CLIENT SETINFO and CLIENT NO-TOUCH are Redis 7.2's, kept by densekv for the clients that
//! send them: redis-server 7.0.15 has no entry to compare theirs with. CLIENT HELP and LATENCY
//! HELP describe subcommands densekv does not have (CLIENT PAUSE, LATENCY GRAPH…), so they
//! are not compared either.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use support::{Client, Server, frame_end, show};

/// densekv's subcommands that redis-server 7.0.15 does not have (they are Redis 7.2's).
const NEWER_THAN_7_0: [&str; 2] = ["client|setinfo", "client|no-touch"];

/// The raw bytes of each element of the aggregate reply `raw` (a map's keys and values
/// alternate), and its header line.
fn elements(raw: &[u8]) -> (&[u8], Vec<&[u8]>) {
    let header_end = raw.windows(2).position(|w| w == b"\r\n").expect("a header") + 2;
    let count: usize = std::str::from_utf8(&raw[1..header_end - 2])
        .expect("ASCII")
        .parse()
        .expect("a length");
    let count = if raw[0] == b'%' { count * 2 } else { count };
    let mut at = header_end;
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        let len = frame_end(&raw[at..]).expect("a complete element");
        items.push(&raw[at..at + len]);
        at += len;
    }
    assert_eq!(at, raw.len(), "trailing bytes after {}", show(raw));
    (&raw[..header_end], items)
}

/// The text of a bulk string reply.
fn bulk_text(raw: &[u8]) -> String {
    let (_, value) = raw.split_at(raw.iter().position(|&b| b == b'\n').expect("header") + 1);
    String::from_utf8_lossy(&value[..value.len() - 2]).into_owned()
}

/// A map's (key, value) elements.
type Pairs<'a> = Vec<(&'a [u8], &'a [u8])>;

/// (key, value) pairs of a map reply, RESP2 or RESP3, and its header line.
fn pairs(raw: &[u8]) -> (&[u8], Pairs<'_>) {
    let (header, items) = elements(raw);
    (header, items.chunks(2).map(|p| (p[0], p[1])).collect())
}

/// Both servers, each with a connection in the given protocol.
struct Pair {
    densekv: Client,
    redis: Client,
    servers: (Server, Server),
}

impl Pair {
    fn new(extra: &[&str], protocol: &str) -> Pair {
        let (d, r) = Server::pair(extra);
        let (mut densekv, mut redis) = (d.connect(), r.connect());
        if protocol == "3" {
            densekv.cmd(&["HELLO", "3"]);
            redis.cmd(&["HELLO", "3"]);
        }
        Pair {
            densekv,
            redis,
            servers: (d, r),
        }
    }

    fn both(&mut self, args: &[&[u8]]) -> (Vec<u8>, Vec<u8>) {
        (self.densekv.command(args), self.redis.command(args))
    }

    fn both_str(&mut self, args: &[&str]) -> (Vec<u8>, Vec<u8>) {
        (self.densekv.cmd(args), self.redis.cmd(args))
    }

    /// Sends `args` to both and requires the same bytes back.
    fn same(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let (d, r) = self.both(args);
        assert!(
            d == r,
            "{}:\n densekv {}\n redis   {}",
            show(&args.concat()),
            show(&d),
            show(&r)
        );
        d
    }

    fn same_str(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.same(&args)
    }

    /// Every name densekv's COMMAND LIST gives.
    fn densekv_names(&mut self) -> BTreeSet<String> {
        let raw = self.densekv.cmd(&["COMMAND", "LIST"]);
        elements(&raw).1.into_iter().map(bulk_text).collect()
    }
}

/// A COMMAND INFO entry of densekv against redis-server's: every field in order, but the
/// subcommands of a container as a set, redis-server's filtered to `names`.
fn info_entry(dk: &[u8], rd: &[u8], names: &BTreeSet<String>) {
    let ((dh, d), (rh, r)) = (elements(dk), elements(rd));
    let name = bulk_text(d[0]);
    assert_eq!(dh, rh, "{name}");
    for field in 0..9 {
        assert!(
            d[field] == r[field],
            "{name}, field {field}:\n densekv {}\n redis   {}",
            show(d[field]),
            show(r[field])
        );
    }
    let subs = |raw: &[u8]| -> BTreeMap<String, Vec<u8>> {
        elements(raw)
            .1
            .into_iter()
            .map(|e| (bulk_text(elements(e).1[0]), e.to_vec()))
            .filter(|(n, _)| names.contains(n) && !NEWER_THAN_7_0.contains(&n.as_str()))
            .collect()
    };
    if d[9].len() <= 4 {
        assert_eq!(show(d[9]), show(r[9]), "{name} has no subcommands");
        return;
    }
    let (ds, rs) = (subs(d[9]), subs(r[9]));
    assert_eq!(ds.keys().collect::<Vec<_>>(), rs.keys().collect::<Vec<_>>());
    for (sub, entry) in &ds {
        assert!(
            *entry == rs[sub],
            "{sub}:\n densekv {}\n redis   {}",
            show(entry),
            show(&rs[sub])
        );
    }
}

/// A COMMAND DOCS entry (the map of one command's docs): every field in order, but a
/// container's `subcommands` as a set, redis-server's filtered to `names`.
fn docs_entry(name: &str, dk: &[u8], rd: &[u8], names: &BTreeSet<String>) {
    let ((dh, d), (rh, r)) = (pairs(dk), pairs(rd));
    assert_eq!(show(dh), show(rh), "{name}: docs fields");
    for ((dkey, dval), (rkey, rval)) in d.iter().zip(&r) {
        assert_eq!(show(dkey), show(rkey), "{name}");
        if *dkey != b"$11\r\nsubcommands\r\n" {
            assert!(
                dval == rval,
                "{name}, {}:\n densekv {}\n redis   {}",
                bulk_text(dkey),
                show(dval),
                show(rval)
            );
            continue;
        }
        let subs = |raw: &[u8]| -> BTreeMap<String, Vec<u8>> {
            pairs(raw)
                .1
                .into_iter()
                .map(|(k, v)| (bulk_text(k), v.to_vec()))
                .filter(|(n, _)| names.contains(n) && !NEWER_THAN_7_0.contains(&n.as_str()))
                .collect()
        };
        let (ds, rs) = (subs(dval), subs(rval));
        assert_eq!(ds.keys().collect::<Vec<_>>(), rs.keys().collect::<Vec<_>>());
        for (sub, docs) in &ds {
            docs_entry(sub, docs, &rs[sub], names);
        }
    }
}

/// COMMAND INFO and COMMAND DOCS of every command and subcommand densekv lists, one by one.
fn info_and_docs_of_each(protocol: &str) {
    let mut pair = Pair::new(&[], protocol);
    let names = pair.densekv_names();
    assert!(names.len() > 200, "{} names", names.len());
    for name in &names {
        let (dk, rd) = pair.both_str(&["COMMAND", "INFO", name]);
        if NEWER_THAN_7_0.contains(&name.as_str()) {
            assert!(rd.ends_with(b"_\r\n") || rd.ends_with(b"$-1\r\n"), "{name}");
            assert!(dk.len() > 100, "{name}: {}", show(&dk));
            continue;
        }
        let ((_, d), (_, r)) = (elements(&dk), elements(&rd));
        info_entry(d[0], r[0], &names);
        let (dk, rd) = pair.both_str(&["COMMAND", "DOCS", name]);
        let ((_, d), (_, r)) = (pairs(&dk), pairs(&rd));
        assert_eq!(show(d[0].0), show(r[0].0));
        docs_entry(name, d[0].1, r[0].1, &names);
    }
}

#[test]
fn command_info_and_docs_of_every_command_resp2() {
    info_and_docs_of_each("2");
}

#[test]
fn command_info_and_docs_of_every_command_resp3() {
    info_and_docs_of_each("3");
}

/// COMMAND, COMMAND INFO and COMMAND DOCS without names: every top-level command, as sets.
fn everything(protocol: &str) {
    let mut pair = Pair::new(&[], protocol);
    let names = pair.densekv_names();
    let top: BTreeSet<String> = names.iter().filter(|n| !n.contains('|')).cloned().collect();
    for args in [&["COMMAND"][..], &["COMMAND", "INFO"]] {
        let (dk, rd) = pair.both_str(args);
        let by_name = |raw: &[u8]| -> BTreeMap<String, Vec<u8>> {
            elements(raw)
                .1
                .into_iter()
                .map(|e| (bulk_text(elements(e).1[0]), e.to_vec()))
                .filter(|(n, _)| top.contains(n))
                .collect()
        };
        let (d, r) = (by_name(&dk), by_name(&rd));
        assert_eq!(d.keys().collect::<Vec<_>>(), top.iter().collect::<Vec<_>>());
        assert_eq!(r.keys().collect::<Vec<_>>(), top.iter().collect::<Vec<_>>());
        assert_eq!(
            elements(&dk).1.len(),
            top.len(),
            "densekv lists only its own"
        );
        for (name, entry) in &d {
            info_entry(entry, &r[name], &names);
        }
    }
    let (dk, rd) = pair.both_str(&["COMMAND", "DOCS"]);
    let by_name = |raw: &[u8]| -> BTreeMap<String, Vec<u8>> {
        pairs(raw)
            .1
            .into_iter()
            .map(|(k, v)| (bulk_text(k), v.to_vec()))
            .filter(|(n, _)| top.contains(n))
            .collect()
    };
    let (d, r) = (by_name(&dk), by_name(&rd));
    assert_eq!(d.keys().collect::<Vec<_>>(), r.keys().collect::<Vec<_>>());
    assert_eq!(d.len(), top.len());
    for (name, docs) in &d {
        docs_entry(name, docs, &r[name], &names);
    }
}

#[test]
fn command_info_and_docs_of_everything_resp2() {
    everything("2");
}

#[test]
fn command_info_and_docs_of_everything_resp3() {
    everything("3");
}

/// COMMAND COUNT and COMMAND LIST [FILTERBY …]: densekv's names are redis-server's (but the
/// two newer subcommands), and every filter selects from them what redis-server's selects.
#[test]
fn command_count_and_list_match_redis() {
    let mut pair = Pair::new(&[], "2");
    let names = pair.densekv_names();
    let (_, rd) = pair.both_str(&["COMMAND", "LIST"]);
    let redis: BTreeSet<String> = elements(&rd).1.into_iter().map(bulk_text).collect();
    for name in &names {
        assert!(
            redis.contains(name) || NEWER_THAN_7_0.contains(&name.as_str()),
            "{name} is not a redis-server 7.0.15 command"
        );
    }
    let top = names.iter().filter(|n| !n.contains('|')).count();
    assert_eq!(
        pair.densekv.cmd(&["COMMAND", "COUNT"]),
        format!(":{top}\r\n").as_bytes()
    );
    list_filters_match(&mut pair, &names);
    for args in [
        &["COMMAND", "LIST", "FILTERBY"][..],
        &["COMMAND", "LIST", "FILTERBY", "ACLCAT"],
        &["COMMAND", "LIST", "FILTERBY", "NOSUCH", "x"],
        &["COMMAND", "LIST", "FILTERBY", "PATTERN", "a", "b"],
        &["COMMAND", "LIST", "nosuch"],
        &["COMMAND", "COUNT", "x"],
    ] {
        pair.same_str(args);
    }
}

/// COMMAND LIST FILTERBY ACLCAT (every category, case, unknown ones), PATTERN and MODULE:
/// densekv selects what redis-server selects among the names densekv has.
fn list_filters_match(pair: &mut Pair, names: &BTreeSet<String>) {
    const CATEGORIES: &str = "keyspace read write set sortedset list hash string pubsub admin \
        fast slow blocking dangerous connection transaction scripting READ nosuch @read";
    const PATTERNS: &str = "* config* CONFIG|* *|* z*store ?et [a-c]* [^a-y]* client|[gs]* \
        *e\\t* nosuch";
    let mut filters: Vec<Vec<String>> = CATEGORIES
        .split_whitespace()
        .map(|c| vec!["ACLCAT".into(), c.into()])
        .collect();
    for pattern in PATTERNS.split_whitespace() {
        filters.push(vec!["PATTERN".into(), pattern.into()]);
    }
    filters.push(vec!["MODULE".into(), "nosuch".into()]);
    for filter in &filters {
        let mut args = vec!["COMMAND", "LIST", "FILTERBY"];
        args.extend(filter.iter().map(String::as_str));
        let (dk, rd) = pair.both_str(&args);
        let d: BTreeSet<String> = elements(&dk).1.into_iter().map(bulk_text).collect();
        let r: BTreeSet<String> = elements(&rd)
            .1
            .into_iter()
            .map(bulk_text)
            .filter(|n| names.contains(n))
            .collect();
        let d: BTreeSet<String> = d
            .into_iter()
            .filter(|n| !NEWER_THAN_7_0.contains(&n.as_str()))
            .collect();
        assert_eq!(d, r, "{args:?}");
    }
}

/// Argument vectors for COMMAND GETKEYS / GETKEYSANDFLAGS (after those two words).
const GETKEYS: &[&[&str]] = &[
    &["GET", "k"],
    &["get", "k"],
    &["SET", "k", "v"],
    &["SET", "k", "v", "EX", "1", "GET"],
    &["SET", "k", "v", "get\0x"],
    &["MSET", "a", "1", "b", "2"],
    &["MSET", "a", "1", "b"],
    &["DEL", "a", "b", "c"],
    &["RENAME", "a", "b"],
    &["COPY", "a", "b", "DB", "1"],
    &["LMOVE", "a", "b", "LEFT", "RIGHT"],
    &["BLPOP", "a", "b", "0"],
    &["BRPOPLPUSH", "a", "b", "0"],
    &["ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"],
    &["ZUNIONSTORE", "d", "2abc", "a", "b"],
    &["ZUNIONSTORE", "d", " 2", "a", "b"],
    &["ZUNIONSTORE", "d", "0", "a"],
    &["ZUNIONSTORE", "d", "5", "a"],
    &["ZUNIONSTORE", "d", "-1", "a"],
    &["ZINTERSTORE", "d", "1", "a", "AGGREGATE", "MAX"],
    &["ZDIFFSTORE", "d", "2", "a", "b"],
    &["ZUNION", "2", "a", "b", "WITHSCORES"],
    &["ZDIFF", "3", "a", "b"],
    &["ZINTERCARD", "2", "a", "b", "LIMIT", "1"],
    &["SINTERCARD", "1", "a"],
    &["SINTERCARD", "x", "a"],
    &["LMPOP", "2", "a", "b", "LEFT"],
    &["LMPOP", "3", "a", "b", "LEFT"],
    &["BLMPOP", "0", "2", "a", "b", "LEFT"],
    &["BZMPOP", "0", "1", "a", "MIN"],
    &["ZMPOP", "1", "a", "MAX", "COUNT", "2"],
    &["SORT", "k"],
    &["SORT", "k", "STORE", "d"],
    &[
        "SORT", "k", "LIMIT", "0", "1", "STORE", "d", "BY", "x", "GET", "#", "STORE", "e",
    ],
    &["SORT", "k", "STORE"],
    &["SORT_RO", "k", "BY", "x"],
    &["OBJECT", "ENCODING", "k"],
    &["object", "help"],
    &["OBJECT", "nosuch"],
    &["MEMORY", "USAGE", "k", "SAMPLES", "5"],
    &["MEMORY", "USAGE"],
    &["CONFIG", "GET", "x"],
    &["CONFIG", "nosuch"],
    &["CONFIG"],
    &["PING", "x"],
    &["PING"],
    &["GET", "a", "b"],
    &["GET"],
    &["NOSUCH", "x"],
    &["WATCH", "a", "b"],
    &["EXISTS", "a"],
    &["LCS", "a", "b", "LEN"],
    &["GETEX", "a", "PERSIST"],
    &["SMOVE", "a", "b", "m"],
    &["HSET", "h", "f", "v"],
    &["EXPIRE", "k", "1", "NX"],
    &["KEYS", "*"],
    &["FLUSHALL"],
];

fn getkeys(protocol: &str) {
    let mut pair = Pair::new(&[], protocol);
    for vector in GETKEYS {
        for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
            let mut args = vec!["COMMAND", sub];
            args.extend_from_slice(vector);
            pair.same_str(&args);
        }
    }
}

#[test]
fn command_getkeys_matches_redis_resp2() {
    getkeys("2");
}

#[test]
fn command_getkeys_matches_redis_resp3() {
    getkeys("3");
}

/// COMMAND GETKEYS and GETKEYSANDFLAGS of generated argument vectors for every command and
/// subcommand densekv has: the name, then words drawn from keys, small integers (so that
/// `numkeys` arguments sometimes fit what follows) and the option words that move keys, with
/// argument counts around the arity.
#[test]
fn command_getkeys_of_generated_vectors_matches_redis() {
    use rand::{Rng, SeedableRng};
    const WORDS: &str = "k1 k2 k3 0 1 2 3 -1 2x STORE GET get LIMIT BY WEIGHTS AGGREGATE LEFT \
        MIN COUNT EX KEEPTTL x";
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(support::diff::seed(11));
    let mut pair = Pair::new(&[], "3");
    let names = pair.densekv_names();
    for name in names
        .iter()
        .filter(|n| !NEWER_THAN_7_0.contains(&n.as_str()))
    {
        let info = pair.densekv.cmd(&["COMMAND", "INFO", name]);
        let entry = elements(elements(&info).1[0]).1[1];
        let arity: i64 = String::from_utf8_lossy(&entry[1..entry.len() - 2])
            .parse()
            .expect("arity");
        for _ in 0..40 {
            let argc = arity.unsigned_abs() as usize + rng.gen_range(0..5) - 1;
            let mut args: Vec<&str> = vec!["COMMAND", "GETKEYSANDFLAGS"];
            args.extend(name.split('|'));
            while args.len() < argc + 2 {
                args.push(words[rng.gen_range(0..words.len())]);
            }
            pair.same_str(&args);
            args[1] = "GETKEYS";
            pair.same_str(&args);
        }
    }
}

/// Hostile command names and arguments: the unknown-command and unknown-subcommand texts.
#[test]
fn unknown_command_texts_match_redis() {
    let mut pair = Pair::new(&[], "2");
    let long = vec![b'a'; 200];
    let sixty = vec![b'x'; 60];
    let hundred = vec![b'y'; 100];
    let vectors: Vec<Vec<&[u8]>> = vec![
        vec![b"nosuch"],
        vec![b"nosuch", b"a", b"b"],
        vec![b"nosuch\0cmd", b"a\0b", b"c"],
        vec![b"\xff\xfe", b"\xc3\x28", b"ok"],
        vec![b"a\r\nb", b"c\rd", b"e\nf"],
        vec![&long],
        vec![&long, &long],
        vec![b"nosuch", &sixty, &sixty, &sixty, &sixty],
        vec![b"nosuch", &hundred, b"z", &hundred],
        vec![b"nosuch", b"", b"", b""],
        vec![b"nosuch", &long, b"after"],
        vec![b"config|get", b"x"],
        vec![b"CONFIG", b"nosuch"],
        vec![b"CoNfIg", b"nosuch", b"x"],
        vec![b"config", b"no\0such"],
        vec![b"config", &long],
        vec![b"config", b"\xff"],
        vec![b"config", b"a\r\nb"],
        vec![b"object", b"nosuch", b"k"],
        vec![b"client", b"nosuch"],
        vec![b"memory", b"nosuch"],
        vec![b"slowlog", b"nosuch"],
        vec![b"latency", b"nosuch"],
        vec![b"command", b"nosuch"],
    ];
    for args in &vectors {
        pair.same(args);
    }
}

/// Arity errors of containers alone and of subcommands, and the subcommands whose handler
/// checks more than the table's arity.
#[test]
fn container_and_subcommand_arity_match_redis() {
    let mut pair = Pair::new(&[], "2");
    for args in [
        &["CONFIG"][..],
        &["config", "get"],
        &["CONFIG", "SET", "a"],
        &["CONFIG", "SET", "maxclients", "10", "timeout"],
        &["CONFIG", "RESETSTAT", "x"],
        &["CONFIG", "REWRITE", "x"],
        &["CONFIG", "HELP", "x"],
        &["OBJECT"],
        &["OBJECT", "ENCODING"],
        &["OBJECT", "ENCODING", "a", "b"],
        &["OBJECT", "REFCOUNT", "nokey"],
        &["MEMORY"],
        &["MEMORY", "USAGE"],
        &["MEMORY", "USAGE", "nokey", "SAMPLES"],
        &["MEMORY", "DOCTOR", "x"],
        &["MEMORY", "STATS", "x"],
        &["SLOWLOG"],
        &["SLOWLOG", "LEN", "x"],
        &["SLOWLOG", "RESET", "x"],
        &["SLOWLOG", "GET", "1", "2"],
        &["slowlog", "gEt", "1", "2"],
        &["SLOWLOG", "GET", "-2"],
        &["LATENCY"],
        &["LATENCY", "HISTORY"],
        &["LATENCY", "LATEST", "x"],
        &["LATENCY", "DOCTOR", "x"],
        &["CLIENT"],
        &["CLIENT", "ID", "x"],
        &["CLIENT", "GETNAME", "x"],
        &["CLIENT", "SETNAME"],
        &["CLIENT", "KILL"],
        &["CLIENT", "REPLY"],
        &["CLIENT", "NO-EVICT"],
        &["CLIENT", "HELP", "x"],
        &["COMMAND", "COUNT", "x"],
        &["COMMAND", "GETKEYS"],
        &["COMMAND", "GETKEYS", "GET"],
        &["COMMAND", "GETKEYSANDFLAGS", "GET"],
        &["COMMAND", "HELP", "x"],
        &["CONFIG", "HELP"],
        &["OBJECT", "HELP"],
        &["MEMORY", "HELP"],
        &["SLOWLOG", "HELP"],
        &["COMMAND", "HELP"],
        &[
            "COMMAND",
            "INFO",
            "config|get|x",
            "config|",
            "|get",
            "get|x",
            "CONFIG|GET",
            "Get",
        ],
        &["COMMAND", "DOCS", "config|get|x", "nosuch", "Config|Help"],
        &["GET"],
        &["PING", "a", "b"],
    ] {
        pair.same_str(args);
    }
}

/// A rejected EXEC aborts the transaction at once (EXECABORT and the error without its ERR),
/// in MULTI or not, and forgets the watched keys; a command rejected in MULTI makes EXEC abort.
#[test]
fn rejected_exec_aborts_like_redis() {
    let (d, r) = Server::pair(&[]);
    let mut pair = Pair {
        densekv: d.connect(),
        redis: r.connect(),
        servers: (d, r),
    };
    let (mut other_d, mut other_r) = (pair.servers.0.connect(), pair.servers.1.connect());
    for args in [
        &["EXEC", "x"][..],
        &["MULTI"],
        &["SET", "k", "1"],
        &["EXEC", "x"],
        &["EXEC"],
        &["WATCH", "w"],
        &["EXEC", "x"],
        &["MULTI"],
        &["GET", "w"],
    ] {
        pair.same_str(args);
    }
    // The WATCH was dropped with the aborted transaction: another client's write does not
    // make this EXEC fail.
    other_d.cmd(&["SET", "w", "v"]);
    other_r.cmd(&["SET", "w", "v"]);
    for args in [
        &["EXEC"][..],
        &["MULTI"],
        &["NOSUCH"],
        &["GET"],
        &["CONFIG", "nosuch"],
        &["EXEC"],
        &["MULTI"],
        &["SHUTDOWN"],
        &["EXEC"],
    ] {
        pair.same_str(args);
    }
}

/// DEBUG's permission is checked after the arity and before AUTH, as processCommand does.
#[test]
fn debug_permission_comes_before_auth() {
    let mut pair = Pair::new(
        &["--requirepass", "pw", "--enable-debug-command", "no"],
        "2",
    );
    for args in [
        &["DEBUG", "SLEEP", "0"][..],
        &["DEBUG"],
        &["debug", "nosuch"],
        &["GET", "k"],
        &["GET"],
        &["NOSUCH"],
        &["CONFIG", "nosuch"],
        &["CONFIG", "GET", "x"],
        &["AUTH", "pw"],
        &["DEBUG", "SLEEP", "0"],
        &["MULTI"],
        &["DEBUG", "SLEEP", "0"],
        &["EXEC"],
    ] {
        pair.same_str(args);
    }
    let mut pair = Pair::new(
        &["--requirepass", "pw", "--enable-debug-command", "local"],
        "2",
    );
    for args in [
        &["DEBUG", "SLEEP", "0"][..],
        &["AUTH", "pw"],
        &["DEBUG", "SLEEP", "0"],
    ] {
        pair.same_str(args);
    }
}

/// INFO commandstats lines without their timings: (name, calls, rejected, failed).
fn command_stats(client: &mut Client) -> BTreeSet<(String, String, String, String)> {
    let raw = client.cmd(&["INFO", "commandstats"]);
    let text = bulk_text(&raw);
    text.lines()
        .filter_map(|line| line.strip_prefix("cmdstat_"))
        .map(|line| {
            let (name, fields) = line.split_once(':').expect("name:fields");
            let field = |key: &str| {
                fields
                    .split(',')
                    .find_map(|f| f.strip_prefix(key))
                    .expect("a field")
                    .to_string()
            };
            (
                name.to_string(),
                field("calls="),
                field("rejected_calls="),
                field("failed_calls="),
            )
        })
        .collect()
}

/// Subcommands are counted under their full names, rejections under the command or
/// subcommand they name, in commandstats, errorstats and CLIENT LIST as in redis-server.
#[test]
fn stats_name_subcommands_like_redis() {
    let (d, r) = Server::pair(&[]);
    let (mut dk, mut rd) = (d.connect(), r.connect());
    let sequence: &[&[&str]] = &[
        &["CONFIG", "GET", "maxmemory"],
        &["CONFIG"],
        &["CONFIG", "nosuch"],
        &["CONFIG", "GET"],
        &["SLOWLOG", "GET", "1", "2"],
        &["SLOWLOG", "LEN"],
        &["OBJECT", "ENCODING", "nokey"],
        &["SET", "k", "v"],
        &["OBJECT", "FREQ", "k"],
        &["COMMAND", "INFO", "get"],
        &["COMMAND", "GETKEYS", "PING", "x"],
        &["NOSUCH"],
        &["GET"],
        &["MULTI"],
        &["GET"],
        &["EXEC"],
        &["EXEC", "x"],
        &["MEMORY", "USAGE", "nokey"],
    ];
    for args in sequence {
        assert_eq!(show(&dk.cmd(args)), show(&rd.cmd(args)), "{args:?}");
    }
    assert_eq!(command_stats(&mut dk), command_stats(&mut rd));
    let errors = |client: &mut Client| -> Vec<String> {
        let raw = client.cmd(&["INFO", "errorstats"]);
        bulk_text(&raw).lines().map(str::to_string).collect()
    };
    assert_eq!(errors(&mut dk), errors(&mut rd));
    // CLIENT LIST names another client's last command by its full name.
    let (mut dk2, mut rd2) = (d.connect(), r.connect());
    dk2.cmd(&["CONFIG", "GET", "maxmemory"]);
    rd2.cmd(&["CONFIG", "GET", "maxmemory"]);
    let cmds = |client: &mut Client| -> Vec<String> {
        let raw = client.cmd(&["CLIENT", "LIST"]);
        bulk_text(&raw)
            .lines()
            .filter_map(|l| {
                l.split(' ')
                    .find(|f| f.starts_with("cmd="))
                    .map(String::from)
            })
            .collect()
    };
    assert_eq!(cmds(&mut dk), ["cmd=client|list", "cmd=config|get"]);
    assert_eq!(cmds(&mut rd), ["cmd=client|list", "cmd=config|get"]);
}
