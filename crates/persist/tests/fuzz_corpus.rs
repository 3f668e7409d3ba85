//! The `rdb_load` fuzz target on stable: replays every file of `fuzz/corpus/rdb_load/` through
//! `persist::fuzz_check`, then runs seeded mutations of RDB files through it (the machine has
//! no nightly for libFuzzer; `dump_mutations.rs` does the same for DUMP payloads).
//!
//! `DENSEKV_WRITE_CORPUS=1 cargo test -p persist --test fuzz_corpus` writes the seed files (clear
//! the directory first: RDB files differ from run to run with the per-process key hash):
//! RDB files of every type and encoding (with TTLs, several databases, LZF strings), DUMP
//! payloads and AOF streams and manifests, each behind its mode byte (see
//! `persist::fuzz_check`), and mutations of a file.

use persist::crc64::crc64;
use persist::rdb::{self, SaveOptions};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;
use store::{Hash, List, Set, Shard, ShardConfig, Ttl, ZSet};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/rdb_load")
}

/// A shard with values of every type on both sides of each encoding threshold, in two
/// databases, some with TTLs.
fn stocked() -> Shard {
    let mut s = Shard::new(&ShardConfig::default()).unwrap();
    for db in [0, 3] {
        s.put_string(db, b"int", b"-12345", Ttl::Clear, 0).unwrap();
        s.put_string(db, b"raw", b"hello", Ttl::At(1 << 45), 0)
            .unwrap();
        s.put_string(db, b"lzf", &b"abcd".repeat(30), Ttl::Clear, 0)
            .unwrap();
        s.put_string(db, b"", b"", Ttl::Clear, 0).unwrap();
        for (name, n) in [(&b"small"[..], 3usize), (b"big", 300)] {
            let key = |t: &[u8]| [name, b":", t].concat();
            s.update::<List, _>(db, &key(b"l"), 0, true, |l| {
                (0..n).for_each(|i| l.push_back(format!("e{i}").as_bytes()));
                Ok(())
            })
            .unwrap();
            s.update::<Set, _>(db, &key(b"i"), 0, true, |st| {
                (0..n).try_for_each(|i| st.add(i.to_string().as_bytes()).map(drop))
            })
            .unwrap();
            s.update::<Set, _>(db, &key(b"s"), 0, true, |st| {
                (0..n).try_for_each(|i| st.add(format!("m{i}").as_bytes()).map(drop))
            })
            .unwrap();
            s.update::<Hash, _>(db, &key(b"h"), 0, true, |h| {
                (0..n).try_for_each(|i| h.set(format!("f{i}").as_bytes(), b"v").map(drop))
            })
            .unwrap();
            s.update::<ZSet, _>(db, &key(b"z"), 0, true, |z| {
                (0..n).try_for_each(|i| z.insert(format!("m{i}").as_bytes(), i as f64 / 7.0))
            })
            .unwrap();
        }
    }
    s
}

fn rdb_file(shard: &mut Shard, compress: bool) -> Vec<u8> {
    let options = SaveOptions {
        compress,
        checksum: true,
        ctime_secs: 1_700_000_000,
        used_mem_bytes: 1 << 20,
        aof_base: false,
        functions: Vec::new(),
    };
    let mut w = rdb::Writer::new(Vec::new(), options).unwrap();
    w.keyspace(&mut [shard]).unwrap();
    w.finish().unwrap()
}

/// Seed inputs: RDB files (mode 0 and larger windows) and every key's DUMP payload (mode 1).
fn seeds() -> Vec<Vec<u8>> {
    let mut shard = stocked();
    let mut seeds = Vec::new();
    for (compress, mode) in [(true, 0u8), (false, 14), (true, 126)] {
        seeds.push([&[mode][..], &rdb_file(&mut shard, compress)].concat());
    }
    let mut payloads = Vec::new();
    shard.for_each_entry(0, |e| {
        let encoding = e.object_encoding();
        payloads.push(persist::dump::create(&e.view, encoding, true));
    });
    seeds.extend(payloads.into_iter().map(|p| [&[1u8][..], &p].concat()));
    for aof in AOF_SEEDS {
        seeds.push([&[3u8][..], aof].concat());
    }
    let file = rdb_file(&mut shard, true);
    let mut rng = SmallRng::seed_from_u64(7);
    for _ in 0..16 {
        let mode = 2 * rng.gen_range(0u8..100);
        seeds.push([&[mode][..], &mutate(&mut rng, &file)].concat());
    }
    seeds
}

/// AOF inputs (mode 3): commands with annotations, a cut tail, and a manifest.
const AOF_SEEDS: [&[u8]; 3] = [
    b"#TS:1700000000\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nset\r\n$1\r\nk\r\n$3\r\nv\r\n\r\n",
    b"*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nincr\r\n$1\r\nn\r\n*1\r\n$4\r\nEXEC\r\n*3\r\n$3\r\nset\r\n$2\r\nk",
    b"file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n",
];

/// A mutation of an RDB file whose checksum is made right again, so the reader gets past it.
fn mutate(rng: &mut SmallRng, file: &[u8]) -> Vec<u8> {
    let mut body = file[..file.len() - 8].to_vec();
    for _ in 0..rng.gen_range(1..4) {
        let at = rng.gen_range(0..body.len());
        match rng.gen_range(0..4) {
            0 => body[at] ^= 1 << rng.gen_range(0..8),
            1 => {
                const BOUNDARY: [u8; 9] = [0x00, 0x3f, 0x40, 0x7f, 0x80, 0xc0, 0xc3, 0xfe, 0xff];
                body[at] = BOUNDARY[rng.gen_range(0..9)];
            }
            2 => body.truncate(at.max(1)),
            _ => {
                let end = (at + rng.gen_range(1..64)).min(body.len());
                let slice = body[at..end].to_vec();
                body.splice(at..at, slice);
            }
        }
    }
    let crc = crc64(0, &body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

#[test]
fn replay_fuzz_corpus() {
    let dir = corpus_dir();
    if std::env::var_os("DENSEKV_WRITE_CORPUS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (i, seed) in seeds().into_iter().enumerate() {
            // The index keeps names apart: a whole RDB file behind mode 0 has a CRC of 0.
            let name = format!("seed-{i:02}-{:016x}", crc64(0, &seed));
            std::fs::write(dir.join(name), seed).unwrap();
        }
    }
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus directory {}: {e}", dir.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .collect();
    entries.sort();
    for path in &entries {
        persist::fuzz_check(&std::fs::read(path).expect("readable corpus file"));
    }
    assert!(
        entries.len() >= 20,
        "only {} corpus files found",
        entries.len()
    );
}

#[test]
fn mutated_rdb_files_never_panic_and_read_the_same_in_windows() {
    let mut shard = stocked();
    let files = [rdb_file(&mut shard, true), rdb_file(&mut shard, false)];
    let mut rng = SmallRng::seed_from_u64(0x0d_b5a7e);
    for i in 0..3000 {
        let file = mutate(&mut rng, &files[i % 2]);
        let mode = 2 * rng.gen_range(0u8..100);
        persist::fuzz_check(&[&[mode][..], &file].concat());
    }
}
