//! A seeded dataset of every type in every encoding family, written the same way to densekv and
//! redis-server by the tests that compare whole datasets (DEBUG DIGEST, DUMP/RESTORE): strings
//! and integers of every width, lists short and long, sets intset / small / big, hashes small /
//! big, zsets small / big, TTLs on some keys, several databases, and one key crafted for each of
//! densekv's encodings.

use super::diff::Cmd;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The databases the dataset fills (others stay empty, which the digest skips).
pub const DATABASES: [usize; 4] = [0, 1, 7, 15];

/// A list, set or hash element: integers of every width, short text, long text, binary.
pub fn element(rng: &mut SmallRng) -> Vec<u8> {
    match rng.gen_range(0..10) {
        0..=2 => rng.gen_range(-300i64..300).to_string().into_bytes(),
        3 => rng.r#gen::<i64>().to_string().into_bytes(),
        4 => rng.r#gen::<i32>().to_string().into_bytes(),
        5 => {
            [&b"007"[..], b"-0", b"", b"+1", b"1.5", b"\x00\xff\r\n"][rng.gen_range(0..6)].to_vec()
        }
        6 => vec![b'L'; rng.gen_range(65..300)],
        _ => format!("e{}", rng.gen_range(0..2000)).into_bytes(),
    }
}

pub fn string_value(rng: &mut SmallRng) -> Vec<u8> {
    match rng.gen_range(0..6) {
        0 => rng.gen_range(0i64..10_000).to_string().into_bytes(),
        1 => rng.r#gen::<i64>().to_string().into_bytes(),
        2 => vec![b'v'; rng.gen_range(45..200)],
        _ => element(rng),
    }
}

/// The commands that write one key of type `kind` (0..5) with `n` elements.
pub fn writes(rng: &mut SmallRng, key: &[u8], kind: usize, big: bool) -> Vec<Cmd> {
    let n = if big {
        rng.gen_range(200..1500)
    } else {
        rng.gen_range(1..12)
    };
    let mut out = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let mut args: Vec<Vec<u8>> = match kind {
            0 => return vec![crate::cmd!["SET", key, string_value(rng)]],
            1 => vec![b"RPUSH".to_vec(), key.to_vec()],
            2 => vec![b"SADD".to_vec(), key.to_vec()],
            3 => vec![b"HSET".to_vec(), key.to_vec()],
            _ => vec![b"ZADD".to_vec(), key.to_vec()],
        };
        for _ in chunk {
            match kind {
                // Intsets: sets of integers only, now and then.
                2 if key.ends_with(b"i") => {
                    args.push(rng.gen_range(-100_000i64..100_000).to_string().into_bytes());
                }
                3 => {
                    args.push(element(rng));
                    args.push(string_value(rng));
                }
                4 => {
                    let score = match rng.gen_range(0..4) {
                        0 => rng.gen_range(-50i64..50).to_string(),
                        1 => format!("{}", f64::from(rng.gen_range(-1000i32..1000)) / 7.0),
                        2 => ["inf", "-inf", "-0", "1e300", "0.1"][rng.gen_range(0..5)].to_string(),
                        _ => format!("{:e}", rng.r#gen::<f64>() * 1e-10),
                    };
                    args.push(score.into_bytes());
                    args.push(element(rng));
                }
                _ => args.push(element(rng)),
            }
        }
        out.push(Cmd::new(args));
    }
    out
}

/// One key in each of densekv's encodings (docs/types.md has the rules that pick them), so the
/// digest is checked over all of them whatever the random dataset happens to build.
pub fn crafted() -> (Vec<Vec<u8>>, Vec<Cmd>) {
    let range = |from: usize, to: usize, f: &dyn Fn(usize) -> Vec<Vec<u8>>| -> Vec<Vec<u8>> {
        (from..to).flat_map(f).collect()
    };
    let with = |head: &[&str], rest: Vec<Vec<u8>>| {
        let mut args: Vec<Vec<u8>> = head.iter().map(|a| a.as_bytes().to_vec()).collect();
        args.extend(rest);
        Cmd::new(args)
    };
    let long = |n: usize| vec![b'w'; n];
    let cmds = vec![
        crate::cmd!["SET", "c:embstr", "hello"],
        crate::cmd!["SET", "c:raw", long(100)],
        crate::cmd!["SET", "c:int", "-42"],
        crate::cmd!["HSET", "c:hash_record", "name", "ann", "age", "42"],
        crate::cmd!["HSET", "c:hash_small", "1", "a", "2", "b"],
        with(
            &["HSET", "c:hash_flat", "1", "x"],
            range(0, 20, &|i| {
                vec![format!("f{i}").into_bytes(), b"v".to_vec()]
            }),
        ),
        with(
            &["HSET", "c:hash_ints"],
            range(0, 50, &|i| {
                vec![i.to_string().into_bytes(), (i * 7).to_string().into_bytes()]
            }),
        ),
        crate::cmd!["HSET", "c:hash_pages", "1", "x", "f", long(300)],
        crate::cmd!["SADD", "c:set_intset", "1", "2", "3"],
        crate::cmd!["SADD", "c:set_small", "a", "b", "c"],
        crate::cmd!["SADD", "c:set_flat", "a", long(100)],
        with(
            &["SADD", "c:set_ints"],
            range(0, 600, &|i| vec![(i * 3).to_string().into_bytes()]),
        ),
        crate::cmd!["SADD", "c:set_pages", "a", long(300)],
        crate::cmd!["ZADD", "c:zset_packed", "1", "a", "2", "b"],
        with(
            &["ZADD", "c:zset_index"],
            range(0, 200, &|i| {
                vec![i.to_string().into_bytes(), format!("m{i}").into_bytes()]
            }),
        ),
        crate::cmd!["RPUSH", "c:list", "a", "b", "c"],
    ];
    let keys = cmds.iter().map(|c| c.args[1].clone()).collect();
    (keys, cmds)
}

/// A seeded dataset: per database, the keys and the commands that write them (the crafted keys
/// in the first database).
pub fn dataset(seed: u64) -> Vec<(usize, Vec<Vec<u8>>, Vec<Cmd>)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut dbs = Vec::new();
    for db in DATABASES {
        let (mut keys, mut cmds) = (Vec::new(), vec![crate::cmd!["SELECT", db.to_string()]]);
        if db == DATABASES[0] {
            let (crafted_keys, crafted_cmds) = crafted();
            keys.extend(crafted_keys);
            cmds.extend(crafted_cmds);
        }
        for i in 0..rng.gen_range(40..90) {
            let kind = rng.gen_range(0..5);
            let big = kind != 0 && rng.gen_bool(0.25);
            let suffix = if kind == 2 && rng.gen_bool(0.4) {
                "i"
            } else {
                ""
            };
            let key = format!(
                "{}:{i}{suffix}",
                ["str", "list", "set", "hash", "zset"][kind]
            );
            cmds.extend(writes(&mut rng, key.as_bytes(), kind, big));
            if rng.gen_bool(0.3) {
                let ttl = rng.gen_range(100_000u64..10_000_000).to_string();
                cmds.push(crate::cmd!["PEXPIRE", key, ttl]);
            }
            keys.push(key.into_bytes());
        }
        dbs.push((db, keys, cmds));
    }
    dbs
}
