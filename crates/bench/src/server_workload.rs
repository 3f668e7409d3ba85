//! The server suite's memory workloads: which command loads entry `i`, which reply it must get,
//! and which command reads entry `i` back with which expected answer.
//!
//! Dimensions: server (densekv, redis-server) × workload (below) × N (growth: 10⁵, 10⁶, 10⁷).
//! An *entry* is the thing one load step adds, and bytes per entry divide by the number of them:
//!
//! | workload | one entry = one command                                                 | entry is |
//! |----------|--------------------------------------------------------------------------|----------|
//! | strings  | `SET key:%012d <16 random alphanumeric bytes>`                           | key      |
//! | media    | `SET media:<1155315+7i> <random 1..=2·10⁹>`                             | key      |
//! | bucket   | `HSET mediabucket:<id/1000> <id%1000> <random 1..=2·10⁹>`, id=1155315+i | field    |
//! | users    | `HSET user:<i> name .. email .. age .. city .. created ..`              | hash (5 fields) |
//! | lists    | `RPUSH list:<i%10000> <8..=16 random alphanumeric bytes>`                | item     |
//! | sets     | `SADD set:<i%10000> m<8 hex digits, a bijection of i>`                   | member   |
//! | zsets    | `ZADD zset:<i%10000> <random integer 0..10⁶> z<8 hex digits of i>`       | member   |
//! | ttl      | `SET ttl:%012d <16 random alphanumeric bytes> EX <3600..=7200>`          | key      |
//!
//! `--workload` also names issue #31's sorted-set cases, `zset_big` and `zset_mid`
//! ([`WorkloadChoice`]; they live in `server_zsets.rs`, having sizes of their own and no N).
//!
//! `users` counts hashes, not fields, because the data-types issue states its target per user
//! hash (≤ 80 bytes including the key); every other hash workload counts fields.
//!
//! Everything random about entry `i` comes from its own [`SplitMix64`], seeded from the workload's
//! seed and `i` ([`entry_rng`]), so entry `i` can be regenerated alone: the read-back check picks
//! a sample of indices and recomputes the expected values without keeping the loaded data. The
//! same seed gives the same commands on every run and for both servers.

use clap::ValueEnum;
use clap::builder::PossibleValue;
use serde::Serialize;

use crate::rng::SplitMix64;
use crate::server_resp::Reply;
use crate::server_zsets::ZsetCase;

/// Lists, sets and sorted sets spread their entries over this many keys.
pub const COLLECTION_KEYS: u64 = 10_000;
/// The first media id of the `media` and `bucket` workloads (the Instagram example's numbers).
const MEDIA_ID_BASE: u64 = 1_155_315;
const CITIES: [&str; 8] = [
    "Berlin", "Lisbon", "Nairobi", "Osaka", "Paris", "Quito", "Seattle", "Sydney",
];
const ALPHANUMERIC: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// One memory workload; the value of `--workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemWorkload {
    Strings,
    Media,
    Bucket,
    Users,
    Lists,
    Sets,
    Zsets,
    Ttl,
}

impl MemWorkload {
    pub const ALL: [Self; 8] = [
        Self::Strings,
        Self::Media,
        Self::Bucket,
        Self::Users,
        Self::Lists,
        Self::Sets,
        Self::Zsets,
        Self::Ttl,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Strings => "strings",
            Self::Media => "media",
            Self::Bucket => "bucket",
            Self::Users => "users",
            Self::Lists => "lists",
            Self::Sets => "sets",
            Self::Zsets => "zsets",
            Self::Ttl => "ttl",
        }
    }

    /// What one entry is, for the report's column header.
    pub fn entry_unit(self) -> &'static str {
        match self {
            Self::Strings | Self::Media | Self::Ttl => "key",
            Self::Bucket => "field",
            Self::Users => "hash (5 fields)",
            Self::Lists => "item",
            Self::Sets | Self::Zsets => "member",
        }
    }

    /// The command shape, for the report.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Strings => "SET key:%012d <16 random alphanumeric>",
            Self::Media => "SET media:<1155315+7i> <random 1..2e9>",
            Self::Bucket => "HSET mediabucket:<id/1000> <id%1000> <random 1..2e9>",
            Self::Users => "HSET user:<i> name email age city created",
            Self::Lists => "RPUSH list:<i%10000> <8..16 random alphanumeric>",
            Self::Sets => "SADD set:<i%10000> m<8 hex>",
            Self::Zsets => "ZADD zset:<i%10000> <integer score> z<8 hex>",
            Self::Ttl => "SET ttl:%012d <16 random alphanumeric> EX <3600..7200>",
        }
    }

    fn seed(self) -> u64 {
        0x6465_6E73_656B_7600 ^ (self as u64 + 1) // "densekv" + workload
    }

    /// The command that loads entry `i`.
    pub fn load_command(self, i: u64) -> Vec<Vec<u8>> {
        let mut rng = entry_rng(self.seed(), i);
        let args: Vec<String> = match self {
            Self::Strings => vec!["SET".into(), format!("key:{i:012}"), alnum(&mut rng, 16)],
            Self::Media => vec![
                "SET".into(),
                format!("media:{}", MEDIA_ID_BASE + 7 * i),
                rng.between(1, 2_000_000_000).to_string(),
            ],
            Self::Bucket => {
                let id = MEDIA_ID_BASE + i;
                vec![
                    "HSET".into(),
                    format!("mediabucket:{}", id / 1000),
                    (id % 1000).to_string(),
                    rng.between(1, 2_000_000_000).to_string(),
                ]
            }
            Self::Users => {
                let mut args = vec!["HSET".into(), format!("user:{i}")];
                for (field, value) in user_fields(&mut rng, i) {
                    args.push(field.into());
                    args.push(value);
                }
                args
            }
            Self::Lists => {
                let len = rng.between(8, 16) as usize;
                vec![
                    "RPUSH".into(),
                    collection_key("list", i),
                    alnum(&mut rng, len),
                ]
            }
            Self::Sets => vec!["SADD".into(), collection_key("set", i), member('m', i)],
            Self::Zsets => vec![
                "ZADD".into(),
                collection_key("zset", i),
                rng.below(1_000_000).to_string(),
                member('z', i),
            ],
            Self::Ttl => vec![
                "SET".into(),
                format!("ttl:{i:012}"),
                alnum(&mut rng, 16),
                "EX".into(),
                rng.between(3600, 7200).to_string(),
            ],
        };
        args.into_iter().map(String::into_bytes).collect()
    }

    /// The reply the load command of entry `i` must get, entries being loaded in order `0..N`.
    pub fn load_reply(self, i: u64) -> Reply {
        match self {
            Self::Strings | Self::Media | Self::Ttl => Reply::Simple("OK".into()),
            Self::Bucket | Self::Sets | Self::Zsets => Reply::Integer(1),
            Self::Users => Reply::Integer(5),
            // Entry i is the (i / 10000 + 1)-th item of its list.
            Self::Lists => Reply::Integer((i / COLLECTION_KEYS + 1) as i64),
        }
    }

    /// The command that reads entry `i` back, and the reply it must get.
    pub fn check(self, i: u64) -> (Vec<Vec<u8>>, Reply) {
        let load = self.load_command(i);
        let arg = |index: usize| load[index].clone();
        let (args, expected): (Vec<Vec<u8>>, Reply) = match self {
            Self::Strings | Self::Media | Self::Ttl => {
                (vec![b"GET".to_vec(), arg(1)], Reply::bulk(arg(2)))
            }
            Self::Bucket => (vec![b"HGET".to_vec(), arg(1), arg(2)], Reply::bulk(arg(3))),
            Self::Users => {
                let mut args = vec![b"HMGET".to_vec(), arg(1)];
                let mut values = Vec::new();
                for pair in load[2..].chunks(2) {
                    args.push(pair[0].clone());
                    values.push(Reply::bulk(pair[1].clone()));
                }
                (args, Reply::Array(Some(values)))
            }
            Self::Lists => (
                vec![
                    b"LINDEX".to_vec(),
                    arg(1),
                    (i / COLLECTION_KEYS).to_string().into_bytes(),
                ],
                Reply::bulk(arg(2)),
            ),
            Self::Sets => (
                vec![b"SISMEMBER".to_vec(), arg(1), arg(2)],
                Reply::Integer(1),
            ),
            Self::Zsets => (
                vec![b"ZSCORE".to_vec(), arg(1), arg(3)],
                Reply::bulk(arg(2)),
            ),
        };
        (args, expected)
    }
}

/// A value of `--workload`: a workload measured at every N, or one of issue #31's sorted-set
/// cases (`server_zsets.rs`), which have sizes of their own and are measured once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadChoice {
    PerN(MemWorkload),
    Zset(ZsetCase),
}

impl WorkloadChoice {
    const ALL: [Self; 10] = [
        Self::PerN(MemWorkload::Strings),
        Self::PerN(MemWorkload::Media),
        Self::PerN(MemWorkload::Bucket),
        Self::PerN(MemWorkload::Users),
        Self::PerN(MemWorkload::Lists),
        Self::PerN(MemWorkload::Sets),
        Self::PerN(MemWorkload::Zsets),
        Self::PerN(MemWorkload::Ttl),
        Self::Zset(ZsetCase::Big),
        Self::Zset(ZsetCase::Mid),
    ];

    /// The per-N workloads and the sorted-set cases `choices` select; every one of both when
    /// `choices` is empty (the default run).
    pub fn split(choices: &[Self]) -> (Vec<MemWorkload>, Vec<ZsetCase>) {
        let choices = if choices.is_empty() {
            &Self::ALL[..]
        } else {
            choices
        };
        let mut workloads = Vec::new();
        let mut cases = Vec::new();
        for &choice in choices {
            match choice {
                Self::PerN(w) if !workloads.contains(&w) => workloads.push(w),
                Self::Zset(c) if !cases.contains(&c) => cases.push(c),
                _ => {}
            }
        }
        (workloads, cases)
    }
}

impl ValueEnum for WorkloadChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            Self::PerN(workload) => workload.to_possible_value(),
            Self::Zset(case) => case.to_possible_value(),
        }
    }
}

/// The generator of entry `i`: SplitMix64 seeded with a hash of (seed, i), so that neighbouring
/// entries do not share draws (seeding with `seed + i` directly would make entry `i`'s second draw
/// entry `i+1`'s first, since SplitMix64's state advances by a constant).
pub fn entry_rng(seed: u64, i: u64) -> SplitMix64 {
    SplitMix64::new(SplitMix64::new(seed ^ i.wrapping_mul(0xD6E8_FEB8_6659_FD93)).next_u64())
}

fn alnum(rng: &mut SplitMix64, len: usize) -> String {
    (0..len)
        .map(|_| char::from(ALPHANUMERIC[rng.below(ALPHANUMERIC.len() as u64) as usize]))
        .collect()
}

fn collection_key(prefix: &str, i: u64) -> String {
    format!("{prefix}:{}", i % COLLECTION_KEYS)
}

/// `<tag><8 hex digits>`: a bijection of `i` below 2³² (multiplication by an odd constant mod 2³²
/// is invertible), so members never collide and `SADD`/`ZADD` always add one.
fn member(tag: char, i: u64) -> String {
    format!("{tag}{:08x}", (i as u32).wrapping_mul(0x9E37_79B1))
}

fn user_fields(rng: &mut SplitMix64, i: u64) -> [(&'static str, String); 5] {
    [
        ("name", format!("user{}", rng.next_u64() % 1_000_000)),
        ("email", format!("u{i}@example.com")),
        ("age", rng.between(18, 89).to_string()),
        (
            "city",
            CITIES[rng.below(CITIES.len() as u64) as usize].to_owned(),
        ),
        (
            "created",
            (1_700_000_000 + rng.next_u64() % 10_000_000).to_string(),
        ),
    ]
}

/// `count` distinct indices below `n` to read back: the first and last entries plus seeded random
/// ones, sorted. Deterministic, so a failure can be reproduced.
pub fn sample_indices(n: u64, count: usize) -> Vec<u64> {
    if n <= count as u64 {
        return (0..n).collect();
    }
    let mut rng = SplitMix64::new(0x7361_6D70_6C65_2121 ^ n);
    let mut picked = std::collections::BTreeSet::from([0, n - 1]);
    while picked.len() < count {
        picked.insert(rng.below(n));
    }
    picked.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::{COLLECTION_KEYS, MemWorkload, WorkloadChoice, member, sample_indices};
    use crate::server_resp::Reply;
    use crate::server_zsets::ZsetCase;

    #[test]
    fn workload_choices_parse_and_split() {
        let parse = |text: &str| WorkloadChoice::from_str(text, false);
        assert_eq!(parse("lists"), Ok(WorkloadChoice::PerN(MemWorkload::Lists)));
        assert_eq!(parse("zset_big"), Ok(WorkloadChoice::Zset(ZsetCase::Big)));
        assert_eq!(parse("zset_mid"), Ok(WorkloadChoice::Zset(ZsetCase::Mid)));
        assert!(parse("zset-mid").is_err());
        let (workloads, cases) = WorkloadChoice::split(&[]);
        assert_eq!(workloads, MemWorkload::ALL);
        assert_eq!(cases, [ZsetCase::Big, ZsetCase::Mid]);
        let chosen = ["zset_mid", "zsets", "zset_mid"].map(|t| parse(t).unwrap());
        let (workloads, cases) = WorkloadChoice::split(&chosen);
        assert_eq!(workloads, [MemWorkload::Zsets]);
        assert_eq!(cases, [ZsetCase::Mid]);
    }

    fn text(args: &[Vec<u8>]) -> Vec<String> {
        args.iter()
            .map(|a| String::from_utf8(a.clone()).unwrap())
            .collect()
    }

    #[test]
    fn same_seed_same_commands() {
        for workload in MemWorkload::ALL {
            for i in [0, 1, 999, 1_000_000] {
                assert_eq!(workload.load_command(i), workload.load_command(i));
                assert_eq!(workload.check(i), workload.check(i));
            }
            assert_ne!(workload.load_command(1), workload.load_command(2));
        }
    }

    #[test]
    fn commands_have_the_specified_shape() {
        let strings = text(&MemWorkload::Strings.load_command(42));
        assert_eq!(strings[..2], ["SET", "key:000000000042"]);
        assert!(strings[2].len() == 16 && strings[2].bytes().all(|b| b.is_ascii_alphanumeric()));

        let media = text(&MemWorkload::Media.load_command(3));
        assert_eq!(media[1], "media:1155336");
        let value: u64 = media[2].parse().unwrap();
        assert!((1..=2_000_000_000).contains(&value));

        let bucket = text(&MemWorkload::Bucket.load_command(10));
        assert_eq!(bucket[..3], ["HSET", "mediabucket:1155", "325"]);

        let users = text(&MemWorkload::Users.load_command(7));
        assert_eq!(users.len(), 12);
        assert_eq!(users[1], "user:7");
        assert_eq!(users[4..6], ["email", "u7@example.com"]);
        let age: u64 = users[7].parse().unwrap();
        assert!((18..=89).contains(&age));
        let created: u64 = users[11].parse().unwrap();
        assert!((1_700_000_000..1_710_000_000).contains(&created));

        let ttl = text(&MemWorkload::Ttl.load_command(5));
        assert_eq!(ttl[3], "EX");
        let ex: u64 = ttl[4].parse().unwrap();
        assert!((3600..=7200).contains(&ex));

        let lists = text(&MemWorkload::Lists.load_command(COLLECTION_KEYS + 3));
        assert_eq!(lists[1], "list:3");
        assert_eq!(
            MemWorkload::Lists.load_reply(COLLECTION_KEYS + 3),
            Reply::Integer(2)
        );
    }

    #[test]
    fn members_never_collide() {
        let members: std::collections::HashSet<String> =
            (0..200_000).map(|i| member('m', i)).collect();
        assert_eq!(members.len(), 200_000);
    }

    #[test]
    fn read_back_expects_what_was_loaded() {
        let (args, expected) = MemWorkload::Strings.check(9);
        assert_eq!(text(&args), ["GET", "key:000000000009"]);
        assert_eq!(
            expected,
            Reply::bulk(MemWorkload::Strings.load_command(9)[2].clone())
        );
        let (args, expected) = MemWorkload::Users.check(9);
        assert_eq!(
            text(&args),
            ["HMGET", "user:9", "name", "email", "age", "city", "created"]
        );
        let Reply::Array(Some(values)) = expected else {
            panic!("HMGET expects an array")
        };
        assert_eq!(values[1], Reply::bulk("u9@example.com"));
        let (args, expected) = MemWorkload::Zsets.check(4);
        let load = text(&MemWorkload::Zsets.load_command(4));
        assert_eq!(text(&args), ["ZSCORE", load[1].as_str(), load[3].as_str()]);
        assert_eq!(expected, Reply::bulk(load[2].clone()));
        // A value that differs from the loaded one does not match the expectation.
        let (_, expected) = MemWorkload::Media.check(1);
        assert_ne!(expected, Reply::bulk("0"));
    }

    #[test]
    fn samples_are_deterministic_distinct_and_in_range() {
        let sample = sample_indices(1_000_000, 1000);
        assert_eq!(sample.len(), 1000);
        assert_eq!(sample, sample_indices(1_000_000, 1000));
        assert_eq!(sample[0], 0);
        assert_eq!(sample[999], 999_999);
        assert!(sample.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample_indices(5, 1000), [0, 1, 2, 3, 4]);
    }
}
