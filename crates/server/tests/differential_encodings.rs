//! The encoding thresholds against redis-server 7.0.15: `hash-max-listpack-*`,
//! `set-max-intset-entries`, `zset-max-listpack-*` and `list-max-listpack-size` (and their
//! `ziplist` aliases) changed by CONFIG SET every round, then a seeded stream of writes to
//! hashes, sets, sorted sets and lists, each followed by OBJECT ENCODING of the key it wrote, so
//! every conversion has to happen at the same write as in Redis. At each round's start (right
//! after the thresholds change) every key's OBJECT ENCODING is compared too: a change converts
//! nothing by itself. Each round ends by comparing every key's contents.
//!
//! Left out: SPOP with a count, which in Redis 7.0 may rebuild the set from the members it keeps
//! (a hashtable of integers becomes an intset again), where densekv keeps the set's encoding.

#[macro_use]
mod support;

use rand::Rng;
use support::Server;
use support::diff::{Check, Cmd, Gen, Twin, command_count, seed};

const KEYS_PER_TYPE: usize = 5;

fn key(prefix: &str, g: &mut Gen) -> Vec<u8> {
    format!("{prefix}{}", g.below(KEYS_PER_TYPE)).into_bytes()
}

/// A string of a length near the thresholds a round may pick, or an integer.
fn element(g: &mut Gen) -> Vec<u8> {
    match g.below(10) {
        0..=3 => g.rng.gen_range(-40i64..40).to_string().into_bytes(),
        4 => g.rng.r#gen::<i64>().to_string().into_bytes(),
        5 => {
            let len = *g.pick(&[0usize, 1, 2, 3, 4, 7, 8, 9, 63, 64, 65, 99, 100, 101, 300]);
            let c = b'a' + g.below(4) as u8;
            vec![c; len]
        }
        _ => format!("e{}", g.below(30)).into_bytes(),
    }
}

fn thresholds(g: &mut Gen) -> Cmd {
    let hash_entries = if g.chance(0.5) {
        "hash-max-listpack-entries"
    } else {
        "hash-max-ziplist-entries"
    };
    let zset_value = if g.chance(0.5) {
        "zset-max-listpack-value"
    } else {
        "zset-max-ziplist-value"
    };
    let pick = |g: &mut Gen, values: &[&str]| g.pick(values).to_string();
    let pairs = [
        (
            hash_entries,
            pick(g, &["0", "1", "2", "5", "16", "128", "512", "1000"]),
        ),
        (
            "hash-max-listpack-value",
            pick(g, &["0", "1", "3", "8", "64", "65", "200", "1kb"]),
        ),
        (
            "set-max-intset-entries",
            pick(g, &["0", "1", "5", "50", "512", "513", "2000"]),
        ),
        (
            "zset-max-listpack-entries",
            pick(g, &["0", "1", "5", "40", "128", "300"]),
        ),
        (
            zset_value,
            pick(g, &["0", "1", "3", "8", "64", "100", "300"]),
        ),
        (
            "list-max-listpack-size",
            pick(g, &["-1", "-2", "-3", "-5", "-9", "1", "5", "128"]),
        ),
    ];
    let mut args = vec![b"CONFIG".to_vec(), b"SET".to_vec()];
    for (name, value) in pairs {
        args.push(name.as_bytes().to_vec());
        args.push(value.into_bytes());
    }
    Cmd::new(args)
}

fn hash_write(g: &mut Gen) -> (Cmd, Vec<u8>) {
    let k = key("h", g);
    let cmd = match g.below(10) {
        0..=4 => {
            let mut args = vec![b"HSET".to_vec(), k.clone()];
            let most = *g.pick(&[3usize, 3, 40]);
            for _ in 0..g.rng.gen_range(1..=most) {
                args.push(element(g));
                args.push(element(g));
            }
            Cmd::new(args)
        }
        5 => cmd!["HSETNX", k, element(g), element(g)],
        6 => cmd![
            "HINCRBY",
            k,
            element(g),
            g.rng.gen_range(-5i64..5).to_string()
        ],
        7 => cmd!["HINCRBYFLOAT", k, element(g), "1.5"],
        8 => cmd!["HDEL", k, element(g), element(g)],
        _ => cmd!["DEL", k],
    };
    (cmd, k)
}

fn set_write(g: &mut Gen) -> (Cmd, Vec<u8>) {
    let k = key("s", g);
    let cmd = match g.below(10) {
        0..=4 => {
            let mut args = vec![b"SADD".to_vec(), k.clone()];
            let most = *g.pick(&[3usize, 3, 60]);
            let n = g.rng.gen_range(1..=most);
            if g.chance(0.3) {
                let start = g.rng.gen_range(-100i64..100);
                args.extend((0..n as i64).map(|i| (start + i).to_string().into_bytes()));
            } else {
                args.extend((0..n).map(|_| element(g)));
            }
            Cmd::new(args)
        }
        5 => cmd!["SREM", k, element(g), element(g)],
        6 => cmd!["SMOVE", key("s", g), k, element(g)],
        7 => cmd![
            *g.pick(&["SUNIONSTORE", "SINTERSTORE", "SDIFFSTORE"]),
            k,
            key("s", g),
            key("s", g)
        ],
        _ => cmd!["DEL", k],
    };
    (cmd, k)
}

fn zset_write(g: &mut Gen) -> (Cmd, Vec<u8>) {
    let k = key("z", g);
    let cmd = match g.below(10) {
        0..=4 => {
            let mut args = vec![b"ZADD".to_vec(), k.clone()];
            let most = *g.pick(&[3usize, 3, 50]);
            for _ in 0..g.rng.gen_range(1..=most) {
                args.push(g.rng.gen_range(-20i64..20).to_string().into_bytes());
                args.push(element(g));
            }
            Cmd::new(args)
        }
        5 => cmd!["ZINCRBY", k, "2", element(g)],
        6 => cmd!["ZREM", k, element(g), element(g)],
        7 => cmd![
            "ZRANGESTORE",
            k,
            key("z", g),
            "0",
            g.rng.gen_range(-1i64..60).to_string()
        ],
        8 => cmd![
            *g.pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]),
            k,
            "2",
            key("z", g),
            key("z", g)
        ],
        _ => cmd!["DEL", k],
    };
    (cmd, k)
}

fn list_write(g: &mut Gen) -> (Cmd, Vec<u8>) {
    let k = key("l", g);
    let cmd = match g.below(8) {
        0..=2 => {
            let mut args = vec![g.pick(&[&b"RPUSH"[..], b"LPUSH"]).to_vec(), k.clone()];
            args.extend((0..g.rng.gen_range(1..80)).map(|_| element(g)));
            Cmd::new(args)
        }
        3 => cmd![
            *g.pick(&["LPOP", "RPOP"]),
            k,
            g.rng.gen_range(1..30).to_string()
        ],
        4 => cmd!["LINSERT", k, "BEFORE", element(g), element(g)],
        5 => cmd!["LSET", k, g.rng.gen_range(-5i64..5).to_string(), element(g)],
        6 => cmd!["LTRIM", k, "1", "-2"],
        _ => cmd!["DEL", k],
    };
    (cmd, k)
}

/// Every key's OBJECT ENCODING.
fn encodings(all: &[Vec<u8>]) -> Vec<Cmd> {
    all.iter().map(|k| cmd!["OBJECT", "ENCODING", k]).collect()
}

/// Every key's contents.
fn contents(all: &[Vec<u8>]) -> Vec<Cmd> {
    let mut out = Vec::new();
    for k in all {
        out.push(match k[0] {
            b'h' => cmd!["HGETALL", k].with(Check::SortedPairs),
            b's' => cmd!["SMEMBERS", k].with(Check::Sorted),
            b'z' => cmd!["ZRANGE", k, "0", "-1", "WITHSCORES"],
            _ => cmd!["LRANGE", k, "0", "-1"],
        });
    }
    out
}

#[test]
fn encodings_follow_the_thresholds_as_in_redis() {
    let seed = seed(0xE1C0_0001);
    let (densekv, redis) = Server::pair(&[]);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), seed);
    let mut g = Gen::new(seed, Vec::new());
    let all: Vec<Vec<u8>> = ["h", "s", "z", "l"]
        .iter()
        .flat_map(|p| (0..KEYS_PER_TYPE).map(move |i| format!("{p}{i}").into_bytes()))
        .collect();
    let writes = command_count(12_000);
    let rounds = writes / 300;
    for _ in 0..rounds {
        twin.one(&thresholds(&mut g));
        twin.run(&encodings(&all));
        let mut batch = Vec::new();
        for _ in 0..300 {
            let (cmd, k) = match g.below(4) {
                0 => hash_write(&mut g),
                1 => set_write(&mut g),
                2 => zset_write(&mut g),
                _ => list_write(&mut g),
            };
            batch.push(cmd);
            batch.push(cmd!["OBJECT", "ENCODING", k]);
        }
        twin.run(&batch);
        twin.run(&contents(&all));
    }
    let get = cmd!["CONFIG", "GET", "*-max-*"].with(Check::SortedPairs);
    twin.one(&get);
}

/// Thresholds given at startup (on the command line, as a config file would) steer the first
/// writes already.
#[test]
fn thresholds_from_the_command_line_apply_from_the_start() {
    let args = [
        "--hash-max-ziplist-entries",
        "2",
        "--hash-max-listpack-value",
        "4",
        "--set-max-intset-entries",
        "3",
        "--zset-max-listpack-entries",
        "0",
        "--list-max-ziplist-size",
        "-5",
        "--enable-debug-command",
        "yes",
    ];
    let (densekv, redis) = Server::pair(&args);
    let mut twin = Twin::new(densekv.connect(), redis.connect(), 0);
    let steps: [(&[&str], &str, &str); 8] = [
        (&["HSET", "h1", "a", "1", "b", "2"], "h1", "listpack"),
        (&["HSET", "h1", "c", "3"], "h1", "hashtable"),
        (&["HSET", "h2", "a", "12345"], "h2", "hashtable"),
        (&["SADD", "s1", "1", "2", "3"], "s1", "intset"),
        (&["SADD", "s1", "4"], "s1", "hashtable"),
        (&["ZADD", "z1", "1", "a"], "z1", "skiplist"),
        (&["RPUSH", "l1", "a", "b"], "l1", "quicklist"),
        (&["SADD", "s2", "x"], "s2", "hashtable"),
    ];
    for (write, key, want) in steps {
        let write: Vec<Vec<u8>> = write.iter().map(|a| a.as_bytes().to_vec()).collect();
        twin.one(&Cmd::new(write));
        let ours = twin.one(&cmd!["OBJECT", "ENCODING", key]);
        assert_eq!(ours, format!("${}\r\n{want}\r\n", want.len()).into_bytes());
    }
    // The list keeps the node size it was created with, as Redis's quicklist keeps its fill.
    twin.one(&cmd!["CONFIG", "SET", "list-max-listpack-size", "-2"]);
    twin.one(&cmd!["RPUSH", "l1", "c"]);
    let fill = |reply: Vec<u8>| {
        let text = String::from_utf8_lossy(&reply).into_owned();
        text.split(' ')
            .find(|f| f.starts_with("ql_listpack_max:"))
            .map(str::to_string)
    };
    let ours = fill(twin.densekv.command(&[b"DEBUG", b"OBJECT", b"l1"]));
    let theirs = fill(twin.redis.command(&[b"DEBUG", b"OBJECT", b"l1"]));
    assert_eq!(ours.as_deref(), Some("ql_listpack_max:-5"));
    assert_eq!(ours, theirs);
}
