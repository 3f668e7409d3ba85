//! The `hll_corrupt` fuzz target on stable: the seeds defined here, the files of
//! `fuzz/corpus/hll_corrupt/` when there are any, then seeded mutations, each through
//! `server::commands::hll::fuzz_check` (input layout in `crates/server/src/commands/hll/fuzz.rs`:
//! a mode byte, then the string stored at the HLL key). Every input must get a well-formed reply
//! to every HLL command — a count, OK, or WRONGTYPE / INVALIDOBJ — without a panic, a hang or
//! an allocation sized by the data, and leave the server serving.
//!
//! The mutations are the ways an HLL string goes bad: bits flipped and bytes replaced, opcodes
//! injected (ZERO, XZERO, VAL of any length and value), the string cut anywhere (a cut XZERO
//! included), XZERO and VAL runs appended past the 16384 registers, a dense string one byte or
//! a few hundred too long or too short, the encoding byte set to 0, 1 or junk, the cached
//! cardinality's stale bit flipped, pieces of other seeds spliced in, and the mode byte
//! changed (hll-sparse-max-bytes, command order, elements added).
//!
//! `DENSEKV_WRITE_CORPUS=1` writes the seeds to the corpus directory (for `cargo fuzz run
//! hll_corrupt`); `DENSEKV_FUZZ_MUTATIONS=n` runs n mutations instead of `MUTATIONS`,
//! `DENSEKV_SEED=n` other ones; `DENSEKV_FUZZ_INPUT=path` replays that one file instead (a
//! libFuzzer crash artifact, say).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use server::commands::hll::fuzz_check;
use std::path::PathBuf;
use std::time::Instant;

/// Mutations per run: a few seconds in `--profile ci`.
const MUTATIONS: usize = 30_000;

const HEADER: usize = 16;
const REGISTERS: usize = 16_384;
const DENSE_BYTES: usize = 12_304;

fn header(encoding: u8, card: Option<u64>) -> Vec<u8> {
    let mut h = b"HYLL".to_vec();
    h.push(encoding);
    h.extend_from_slice(&[0, 0, 0]);
    h.extend_from_slice(&card.unwrap_or(1 << 63).to_le_bytes());
    h
}

/// A dense HLL holding `registers` (six bits each, packed little-endian as Redis packs them).
fn dense(registers: &[u8]) -> Vec<u8> {
    let mut out = header(0, None);
    out.resize(DENSE_BYTES, 0);
    for (i, &r) in registers.iter().enumerate() {
        let bit = i * 6;
        let v = u32::from(r & 63) << (bit % 8);
        let at = HEADER + bit / 8;
        out[at] |= v as u8;
        if let Some(next) = out.get_mut(at + 1) {
            *next |= (v >> 8) as u8;
        }
    }
    out
}

fn sparse(ops: &[u8]) -> Vec<u8> {
    [header(1, None), ops.to_vec()].concat()
}

/// The seeds: a name, the mode byte, the string.
fn seeds() -> Vec<(&'static str, u8, Vec<u8>)> {
    let mut state = 0x9e37_79b9_u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    let random_registers: Vec<u8> = (0..REGISTERS).map(|_| (next() % 20) as u8).collect();
    let high_registers: Vec<u8> = (0..REGISTERS).map(|_| 40 + (next() % 24) as u8).collect();
    vec![
        ("sparse-empty", 0, sparse(&[0x7f, 0xff])),
        (
            "sparse-empty-cached",
            0b0010_0000,
            [header(1, Some(0)), vec![0x7f, 0xff]].concat(),
        ),
        (
            "sparse-redis-example",
            0b0100_0100,
            sparse(&[0x43, 0xe8, 0x84, 0x12, 0x89, 0x7b, 0xc1]),
        ),
        (
            "sparse-vals",
            0b1110_0001,
            sparse(&[0xfc, 0xfc, 0x80, 0x81, 0x7f, 0xf5]),
        ),
        ("sparse-zero-runs", 0b0000_1010, sparse(&[0x3f; 256])),
        ("sparse-short", 0b0001_0000, sparse(&[0x5f, 0xff])),
        ("sparse-cut-xzero", 0b1000_0000, sparse(&[0x7f])),
        (
            "sparse-overflow",
            0b0000_0011,
            sparse(&[0x7f, 0xff, 0x7f, 0xff, 0x83]),
        ),
        ("header-only", 0, header(1, None)),
        ("dense-empty", 0b0000_0100, dense(&[])),
        ("dense-random", 0b0110_1000, dense(&random_registers)),
        ("dense-high", 0b0001_1100, dense(&high_registers)),
        ("dense-all-63", 0, dense(&[63; REGISTERS])),
        (
            "bad-encoding",
            0,
            [header(7, None), vec![0x7f, 0xff]].concat(),
        ),
        (
            "bad-magic",
            0,
            [b"HYLX".to_vec(), header(1, None)[4..].to_vec()].concat(),
        ),
        ("empty", 0, Vec::new()),
        ("integer", 0, b"12345".to_vec()),
    ]
}

fn input(mode: u8, value: &[u8]) -> Vec<u8> {
    [vec![mode], value.to_vec()].concat()
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/hll_corrupt")
}

/// Prints the input being checked if the check panics.
struct NameOnPanic<'a>(&'a [u8]);

impl Drop for NameOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("failing input: {}", resp::inline::repr(self.0));
        }
    }
}

fn check(bytes: &[u8]) {
    let _named = NameOnPanic(bytes);
    fuzz_check(bytes);
}

#[test]
fn seeds_and_corpus_replay() {
    if std::env::var_os("DENSEKV_WRITE_CORPUS").is_some() {
        let dir = corpus_dir();
        std::fs::create_dir_all(&dir).unwrap();
        for (index, (name, mode, value)) in seeds().iter().enumerate() {
            std::fs::write(dir.join(format!("{index:02}-{name}")), input(*mode, value)).unwrap();
        }
    }
    if let Some(path) = std::env::var_os("DENSEKV_FUZZ_INPUT") {
        return check(&std::fs::read(&path).expect("a readable input file"));
    }
    for (_, mode, value) in seeds() {
        check(&input(mode, &value));
    }
    let files = std::fs::read_dir(corpus_dir())
        .into_iter()
        .flatten()
        .flatten();
    for file in files {
        check(&std::fs::read(file.path()).expect("a readable corpus file"));
    }
}

/// Opcodes a mutation injects: ZERO, XZERO and VAL at their extremes and in between.
const OPCODES: &[&[u8]] = &[
    &[0x00],
    &[0x3f],
    &[0x40, 0x00],
    &[0x7f, 0xff],
    &[0x5f, 0xff],
    &[0x80],
    &[0x83],
    &[0xfc],
    &[0xff],
    &[0x7f],
];

/// One mutant of a seed's string: one to four edits, `other` supplying splices.
fn mutate(rng: &mut SmallRng, value: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = value.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let at = rng.gen_range(0..=out.len());
        match rng.gen_range(0..10) {
            0 if at < out.len() => out[at] ^= 1 << rng.gen_range(0..8),
            1 if at < out.len() => out[at] = rng.r#gen(),
            2 => {
                let op = OPCODES[rng.gen_range(0..OPCODES.len())];
                let at = at.max(HEADER.min(out.len()));
                out.splice(at..at, op.iter().copied());
            }
            3 => out.truncate(at),
            4 => {
                // Runs past the 16384 registers.
                for _ in 0..rng.gen_range(1..4) {
                    out.extend_from_slice(if rng.gen_bool(0.5) {
                        &[0x7f, 0xff]
                    } else {
                        &[0x83]
                    });
                }
            }
            5 => {
                let len = (DENSE_BYTES as i64 + rng.gen_range(-300..300)).max(0) as usize;
                out.resize(len, rng.r#gen());
            }
            6 if out.len() > 4 => out[4] = [0, 1, 2, 0x80, 0xff][rng.gen_range(0..5)],
            7 if out.len() >= HEADER => out[15] ^= 0x80,
            8 if !other.is_empty() => {
                let from = rng.gen_range(0..other.len());
                let to = (from + rng.gen_range(1..64)).min(other.len());
                out.splice(at..at, other[from..to].iter().copied());
            }
            _ => {
                if at < out.len() {
                    out.remove(at);
                }
            }
        }
    }
    out
}

#[test]
fn seeded_mutations_never_crash_or_wedge_the_server() {
    let seeds = seeds();
    let count = std::env::var("DENSEKV_FUZZ_MUTATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(MUTATIONS);
    let rng_seed = std::env::var("DENSEKV_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0x4c4c_5948);
    let mut rng = SmallRng::seed_from_u64(rng_seed);
    let started = Instant::now();
    for _ in 0..count {
        let (_, mode, value) = &seeds[rng.gen_range(0..seeds.len())];
        let (_, _, other) = &seeds[rng.gen_range(0..seeds.len())];
        let mode = if rng.gen_bool(0.3) {
            rng.r#gen()
        } else {
            *mode
        };
        check(&input(mode, &mutate(&mut rng, value, other)));
    }
    eprintln!("{count} mutations in {} ms", started.elapsed().as_millis());
}
