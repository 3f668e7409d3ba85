//! DUMP payloads as hostile input, on stable Rust (the machine has no nightly for libFuzzer): a
//! seeded stream of mutations of real payloads, each re-footed with a valid CRC so the value
//! reader itself is exercised, never panics; whatever it accepts stores into a shard and dumps
//! to a payload that reads back to the same value.
//!
//! Seeds are payloads of every type and encoding made by densekv itself (strings raw, integer and
//! LZF; lists; intset and hashtable sets; listpack and hashtable hashes; listpack and skiplist
//! zsets), plus hand-made ones in the older encodings' type bytes. Mutations: byte flips, byte
//! overwrites with boundary values (0x00, 0x3f, 0x40, 0x7f, 0x80, 0xc0..0xc3, 0xfe, 0xff),
//! truncation, duplication of a slice, and a random type byte. `DENSEKV_SEED` changes the seed.

use persist::crc64::crc64;
use persist::dump;
use persist::value::{self, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use store::{Hash, List, Set, Shard, ShardConfig, Ttl, ZSet};

const MUTATIONS: usize = 60_000;

fn seed() -> u64 {
    std::env::var("DENSEKV_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xd0_0a11)
}

/// A shard holding one key of each type and encoding family.
fn shard_with_values() -> (Shard, Vec<&'static [u8]>) {
    let mut s = Shard::new(&ShardConfig::default()).unwrap();
    s.put_string(0, b"s:int", b"12345", Ttl::Clear, 0).unwrap();
    s.put_string(0, b"s:raw", b"hello", Ttl::Clear, 0).unwrap();
    s.put_string(0, b"s:lzf", &b"abc".repeat(40), Ttl::Clear, 0)
        .unwrap();
    let fill = |s: &mut Shard, key: &[u8], n: usize, long: bool| {
        let item = |i: usize| {
            if long {
                format!("{i}:{}", "x".repeat(70)).into_bytes()
            } else {
                format!("{i}").into_bytes()
            }
        };
        s.update::<List, _>(0, &[key, b":l"].concat(), 0, true, |l| {
            (0..n).for_each(|i| l.push_back(&item(i)));
            Ok(())
        })
        .unwrap();
        s.update::<Set, _>(0, &[key, b":s"].concat(), 0, true, |st| {
            (0..n).try_for_each(|i| st.add(&item(i)).map(|_| ()))
        })
        .unwrap();
        s.update::<Hash, _>(0, &[key, b":h"].concat(), 0, true, |h| {
            (0..n).try_for_each(|i| h.set(&item(i), b"v").map(|_| ()))
        })
        .unwrap();
        s.update::<ZSet, _>(0, &[key, b":z"].concat(), 0, true, |z| {
            (0..n).try_for_each(|i| z.insert(&item(i), i as f64 / 3.0))
        })
        .unwrap();
    };
    fill(&mut s, b"small", 5, false);
    fill(&mut s, b"big", 700, true);
    let keys: Vec<&'static [u8]> = vec![
        b"s:int", b"s:raw", b"s:lzf", b"small:l", b"small:s", b"small:h", b"small:z", b"big:l",
        b"big:s", b"big:h", b"big:z",
    ];
    (s, keys)
}

fn payload_of(s: &mut Shard, key: &[u8]) -> Vec<u8> {
    let encoding = s.object_encoding(0, key, 0).expect("present");
    s.view(0, key, 0, |v, _| dump::create(&v, encoding, true))
        .expect("present")
}

/// `body` (a payload without its footer) with a valid footer.
fn refoot(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&10u16.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn mutate(rng: &mut SmallRng, body: &mut Vec<u8>) {
    const BOUNDARIES: [u8; 11] = [
        0x00, 0x3f, 0x40, 0x7f, 0x80, 0xc0, 0xc1, 0xc2, 0xc3, 0xfe, 0xff,
    ];
    for _ in 0..rng.gen_range(1..4) {
        if body.is_empty() {
            return;
        }
        let at = rng.gen_range(0..body.len());
        match rng.gen_range(0..5) {
            0 => body[at] ^= 1 << rng.gen_range(0..8),
            1 => body[at] = BOUNDARIES[rng.gen_range(0..BOUNDARIES.len())],
            2 => body.truncate(at),
            3 => {
                let end = (at + rng.gen_range(1..16)).min(body.len());
                let slice = body[at..end].to_vec();
                body.splice(at..at, slice);
            }
            _ => body[0] = rng.gen_range(0..24),
        }
    }
}

/// A ziplist of `entries` (each given as its encoding byte and data), built by hand.
fn ziplist(entries: &[&[u8]]) -> Vec<u8> {
    let mut body = Vec::new();
    let (mut prev, mut tail) = (0u8, 10u32);
    for e in entries {
        tail = 10 + body.len() as u32;
        body.push(prev);
        body.extend_from_slice(e);
        prev = 1 + e.len() as u8;
    }
    let total = 10 + body.len() as u32 + 1;
    let mut zl = total.to_le_bytes().to_vec();
    zl.extend_from_slice(&tail.to_le_bytes());
    zl.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    zl.extend_from_slice(&body);
    zl.push(0xff);
    zl
}

/// Bodies in the encodings Redis 2.6 to 6 wrote: type byte, then the object.
fn older_encodings() -> Vec<Vec<u8>> {
    let string = |bytes: &[u8]| [&[bytes.len() as u8][..], bytes].concat();
    let strings = ziplist(&[b"\x01a", b"\x01b"]);
    let zset = ziplist(&[b"\x01a", b"\xf2"]);
    vec![
        vec![1, 2, 1, b'a', 1, b'b'],
        vec![3, 1, 1, b'a', 3, b'1', b'.', b'5'],
        [&[9u8][..], &string(&[1, 1, b'f', 1, 0, b'v', 0xff])].concat(),
        [&[10u8][..], &string(&strings)].concat(),
        [&[12u8][..], &string(&zset)].concat(),
        [&[13u8][..], &string(&strings)].concat(),
        [&[14u8, 1][..], &string(&strings)].concat(),
    ]
}

/// Stores `v` in a fresh shard, dumps it and reads it back.
fn round_trip(v: &Value<'_>) -> Value<'static> {
    let mut s = Shard::new(&ShardConfig::default()).unwrap();
    value::store(v, &mut s, 0, b"k", None).expect("an accepted value stores");
    dump::read(&payload_of(&mut s, b"k"))
        .expect("densekv's own payload reads back")
        .into_owned()
}

#[test]
fn mutated_payloads_never_panic_and_accepted_ones_round_trip() {
    let (mut shard, keys) = shard_with_values();
    let mut seeds: Vec<Vec<u8>> = keys.iter().map(|k| payload_of(&mut shard, k)).collect();
    seeds.extend(older_encodings().iter().map(|b| refoot(b)));
    for p in &seeds {
        let v = dump::read(p).expect("a seed reads");
        assert_eq!(round_trip(&v).sorted(), v.sorted());
    }
    let mut rng = SmallRng::seed_from_u64(seed());
    let mut accepted = 0;
    for _ in 0..MUTATIONS {
        let p = &seeds[rng.gen_range(0..seeds.len())];
        let mut body = p[..p.len() - 10].to_vec();
        mutate(&mut rng, &mut body);
        if let Ok(v) = dump::read(&refoot(&body)) {
            accepted += 1;
            assert_eq!(round_trip(&v).sorted(), v.sorted(), "{body:?}");
        }
    }
    assert!(
        accepted > 100,
        "only {accepted} mutations were valid values"
    );
}
