//! RDB files between densekv's `persist::rdb` and redis-server 7.0.15, both ways.
//!
//! A seeded dataset of every type, in sizes on both sides of Redis's encoding thresholds
//! (strings empty, binary, integers at the i64 bounds, long and compressible; lists of one node
//! and of many; intsets and hashtable sets; listpack and hashtable hashes; listpack and skiplist
//! zsets with inf, -inf and -0 scores), with TTLs on some keys, in three databases:
//!
//! * densekv → redis-server: the values are stored in a shard through the store's API, the
//!   shard is written with `rdb::Writer`, `redis-check-rdb` must pass the file, and a
//!   redis-server started on it must hold every key: DUMP from it reads back to the same value,
//!   with its TTL.
//! * redis-server → densekv: the same values are written to a redis-server, which SAVEs with
//!   `rdbcompression` on and off, and `rdb::read` must yield exactly the dataset.
//! * A file cut short, with a flipped byte, or from a future version, is refused.

mod support;

use persist::rdb::{self, SaveOptions};
use persist::value::{self, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use store::{Shard, ShardConfig};
use support::{Client, Server, decode};

/// (db, key) → (value, expiry).
type Dataset = BTreeMap<(usize, Vec<u8>), (Value<'static>, Option<u64>)>;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("densekv-rdb-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn element(rng: &mut SmallRng) -> Vec<u8> {
    match rng.gen_range(0..8) {
        0 => rng.gen_range(-1000i64..1000).to_string().into_bytes(),
        1 => [i64::MIN, i64::MAX, 0, -1][rng.gen_range(0..4)]
            .to_string()
            .into_bytes(),
        2 => vec![b'z'; rng.gen_range(21..300)],
        3 => (0..rng.gen_range(0..40))
            .map(|_| rng.r#gen::<u8>())
            .collect(),
        _ => format!("e{}", rng.gen_range(0..100_000)).into_bytes(),
    }
}

fn distinct(rng: &mut SmallRng, n: usize, ints: bool) -> Vec<Vec<u8>> {
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < n {
        seen.insert(if ints {
            rng.gen_range(-100_000i64..100_000).to_string().into_bytes()
        } else {
            element(rng)
        });
    }
    seen.into_iter().collect()
}

fn random_value(rng: &mut SmallRng) -> Value<'static> {
    let n = *[1usize, 3, 60, 129, 513, 1500]
        .get(rng.gen_range(0..6))
        .unwrap();
    match rng.gen_range(0..5) {
        0 => Value::String(element(rng).into()),
        1 => Value::List((0..n).map(|_| element(rng)).collect()),
        2 => {
            let ints = rng.gen_bool(0.5);
            Value::Set(distinct(rng, n, ints))
        }
        3 => Value::Hash(
            distinct(rng, n, false)
                .into_iter()
                .map(|f| (f, element(rng)))
                .collect(),
        ),
        _ => Value::ZSet(
            distinct(rng, n, false)
                .into_iter()
                .map(|m| {
                    let score = match rng.gen_range(0..5) {
                        0 => f64::INFINITY,
                        1 => f64::NEG_INFINITY,
                        2 => -0.0,
                        3 => f64::from(rng.gen_range(-50i32..50)),
                        _ => rng.gen_range(-1e9..1e9),
                    };
                    (m, score)
                })
                .collect(),
        ),
    }
}

fn dataset(seed: u64) -> Dataset {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut data = Dataset::new();
    for db in [0usize, 3, 15] {
        for i in 0..60 {
            let expiry = rng
                .gen_bool(0.3)
                .then(|| 4_000_000_000_000 + rng.gen_range(0..1_000_000));
            data.insert(
                (db, format!("k{i}").into_bytes()),
                (random_value(&mut rng), expiry),
            );
        }
    }
    data
}

fn write_with_densekv(data: &Dataset, path: &std::path::Path) {
    let mut shard = Shard::new(&ShardConfig::default()).unwrap();
    for ((db, key), (v, expiry)) in data {
        value::store(v, &mut shard, *db, key, *expiry).unwrap();
    }
    let file = std::fs::File::create(path).unwrap();
    let options = SaveOptions {
        compress: true,
        checksum: true,
        ctime_secs: 1_700_000_000,
        used_mem_bytes: shard.heap().stats().allocated_bytes,
        aof_base: false,
        functions: Vec::new(),
    };
    let mut w = rdb::Writer::new(std::io::BufWriter::new(file), options).unwrap();
    w.keyspace(&mut [&mut shard]).unwrap();
    w.finish().unwrap().flush().unwrap();
}

#[test]
fn densekv_files_load_in_redis_server() {
    let data = dataset(0x4db_0001);
    let dir = temp_dir("to-redis");
    write_with_densekv(&data, &dir.join("dump.rdb"));
    let check = Command::new("redis-check-rdb")
        .arg(dir.join("dump.rdb"))
        .output()
        .expect("redis-check-rdb (package redis-tools or redis-server) runs");
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success() && report.contains("RDB looks OK!"),
        "{report}"
    );
    let dir_arg = dir.to_str().unwrap();
    let redis = Server::redis(&["--dir", dir_arg, "--dbfilename", "dump.rdb"]);
    let mut c = redis.connect();
    let mut current_db = usize::MAX;
    for ((db, key), (v, expiry)) in &data {
        if *db != current_db {
            assert_eq!(c.cmd(&["SELECT", &db.to_string()]), b"+OK\r\n");
            current_db = *db;
        }
        let payload = decode(&c.command(&[b"DUMP", key])).bulk().to_vec();
        let got = persist::dump::read(&payload).expect("redis-server's DUMP reads");
        assert_eq!(got.sorted(), v.sorted(), "db {db} key {}", show(key));
        let pexpiretime = c.command(&[b"PEXPIRETIME", key]);
        let want = expiry.map_or(-1, |at| at as i64);
        assert_eq!(
            pexpiretime,
            format!(":{want}\r\n").into_bytes(),
            "expiry of {}",
            show(key)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// Writes `data` to a redis-server through commands.
fn write_with_redis(c: &mut Client, data: &Dataset) {
    let mut current_db = usize::MAX;
    for ((db, key), (v, expiry)) in data {
        if *db != current_db {
            c.cmd(&["SELECT", &db.to_string()]);
            current_db = *db;
        }
        let mut args: Vec<Vec<u8>> = Vec::new();
        let mut push = |name: &str, rest: Vec<Vec<u8>>| {
            let mut a = vec![name.as_bytes().to_vec(), key.clone()];
            a.extend(rest);
            args = a;
        };
        match v {
            Value::String(s) => push("SET", vec![s.to_vec()]),
            Value::List(l) => push("RPUSH", l.clone()),
            Value::Set(m) => push("SADD", m.clone()),
            Value::Hash(p) => push(
                "HSET",
                p.iter().flat_map(|(f, v)| [f.clone(), v.clone()]).collect(),
            ),
            Value::ZSet(p) => push(
                "ZADD",
                p.iter()
                    .flat_map(|(m, s)| [resp::double::g17(*s).as_bytes().to_vec(), m.clone()])
                    .collect(),
            ),
        }
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let reply = c.command(&refs);
        assert!(
            !reply.starts_with(b"-"),
            "{}",
            String::from_utf8_lossy(&reply)
        );
        if let Some(at) = expiry {
            c.command(&[b"PEXPIREAT", key, at.to_string().as_bytes()]);
        }
    }
}

#[test]
fn redis_server_files_load_in_densekv() {
    let data = dataset(0x4db_0002);
    for compression in ["yes", "no"] {
        let dir = temp_dir(&format!("from-redis-{compression}"));
        let dir_arg = dir.to_str().unwrap();
        let redis = Server::redis(&["--dir", dir_arg, "--rdbcompression", compression]);
        let mut c = redis.connect();
        write_with_redis(&mut c, &data);
        assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
        let bytes = std::fs::read(dir.join("dump.rdb")).unwrap();
        let mut got = Dataset::new();
        let loaded = rdb::read(&bytes, 16, |db, key, v, expiry| {
            got.insert((db, key.to_vec()), (v.into_owned(), expiry));
        })
        .expect("redis-server's file reads");
        assert_eq!(loaded.keys, data.len());
        assert!(
            loaded
                .aux
                .iter()
                .any(|(k, v)| k == b"redis-ver" && v == b"7.0.15")
        );
        assert_eq!(got.len(), data.len());
        for ((db, key), (v, expiry)) in &data {
            let (g, e) = &got[&(*db, key.clone())];
            assert_eq!(g.sorted(), v.sorted(), "db {db} key {}", show(key));
            assert_eq!(e, expiry, "expiry of {}", show(key));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn damaged_files_are_refused() {
    let data = dataset(0x4db_0003);
    let dir = temp_dir("damaged");
    let path = dir.join("dump.rdb");
    write_with_densekv(&data, &path);
    let bytes = std::fs::read(&path).unwrap();
    let read = |b: &[u8]| rdb::read(b, 16, |_, _, _, _| {});
    assert!(read(&bytes).is_ok());
    for cut in [
        0,
        5,
        9,
        100,
        bytes.len() / 2,
        bytes.len() - 9,
        bytes.len() - 1,
    ] {
        assert!(read(&bytes[..cut]).is_err(), "a file cut at {cut} bytes");
    }
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x01;
    assert!(read(&flipped).is_err(), "a flipped byte");
    let mut future = bytes.clone();
    future[5..9].copy_from_slice(b"0011");
    assert_eq!(
        read(&future).unwrap_err(),
        rdb::LoadError::Version("0011".into())
    );
    assert!(matches!(read(&bytes[..]).map(|l| l.keys), Ok(n) if n == data.len()));
    assert!(matches!(
        rdb::read(&bytes, 4, |_, _, _, _| {}),
        Err(rdb::LoadError::Database(4))
    ));
    let _ = std::fs::remove_dir_all(&dir);
}
