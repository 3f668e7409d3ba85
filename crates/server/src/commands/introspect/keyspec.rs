//! Which arguments of a command are keys, as COMMAND GETKEYS / GETKEYSANDFLAGS find them: Redis's
//! `getKeysFromCommandWithSpecs` (src/db.c) over the key specs of the command metadata, falling
//! back to the command's own key finder (`sortGetKeys`, `setGetKeys`…, ported in
//! [`proc_keys`]) when a spec cannot say (INCOMPLETE, VARIABLE_FLAGS, a bad `numkeys`).
//!
//! This is COMMAND's view, byte for byte Redis's. Locking uses the table's `Keys`
//! (`command::key_positions`), which must cover every key found here: a unit test checks it on
//! generated argument vectors for every command.

use super::meta::{BeginSearch, FindKeys, KeySpec, Meta};

/// Key flags, in COMMAND INFO's order (`addReplyFlagsForKeyArgs`).
pub const KEY_FLAG_NAMES: [&str; 11] = [
    "RO",
    "RW",
    "OW",
    "RM",
    "access",
    "update",
    "insert",
    "delete",
    "not_key",
    "incomplete",
    "variable_flags",
];

const RO: u16 = 1;
const RW: u16 = 1 << 1;
const OW: u16 = 1 << 2;
const ACCESS: u16 = 1 << 4;
const UPDATE: u16 = 1 << 5;

/// One key found: its argument position and its flags (bits of [`KEY_FLAG_NAMES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRef {
    pub pos: usize,
    pub flags: u16,
}

fn flag_bits(spec: &KeySpec) -> u16 {
    KEY_FLAG_NAMES
        .iter()
        .enumerate()
        .filter(|(_, name)| spec.has(name))
        .fold(0, |bits, (i, _)| bits | 1 << i)
}

/// Redis's `doesCommandHaveKeys`: a key finder, or a spec that is not NOT_KEY.
pub fn has_keys(meta: &Meta) -> bool {
    meta.get_keys_function.is_some() || meta.key_specs.iter().any(|s| !s.has("not_key"))
}

/// `getKeysFromCommandWithSpecs`: the keys of `args` (args[0] is the command), empty when none
/// can be found.
pub fn get_keys(meta: &Meta, args: &[&[u8]]) -> Vec<KeyRef> {
    let has_key_spec = meta.key_specs.iter().any(|s| !s.has("not_key"));
    let variable_flags = meta.key_specs.iter().any(|s| s.has("variable_flags"));
    if has_key_spec
        && !variable_flags
        && let Some(keys) = keys_from_specs(meta, args, false)
    {
        return keys;
    }
    meta.get_keys_function
        .as_deref()
        .map_or_else(Vec::new, |name| proc_keys(name, args))
}

/// Where a spec's keys start: `None` when its keyword is absent (no keys, not an error), `Err`
/// for an unknown begin-search.
fn begin(spec: &KeySpec, args: &[&[u8]]) -> Result<Option<usize>, ()> {
    let argc = args.len() as i64;
    match &spec.begin_search {
        BeginSearch::Index { pos } => Ok(Some(*pos as usize)),
        BeginSearch::Keyword { keyword, startfrom } => {
            let (start, end) = if *startfrom > 0 {
                (*startfrom, argc - 1)
            } else {
                (argc + startfrom, 1)
            };
            let mut i = start;
            while i != end {
                if i >= argc || i < 1 {
                    break;
                }
                if eq_c_str(args[i as usize], keyword.as_bytes()) {
                    return Ok(Some(i as usize + 1));
                }
                i += if start <= end { 1 } else { -1 };
            }
            Ok(None)
        }
        BeginSearch::Unknown(()) => Err(()),
    }
}

/// The last key's position and the step of a spec starting at `first`; `Err` when it cannot
/// say (unknown, or a `numkeys` that is not a non-negative integer).
fn find(spec: &KeySpec, args: &[&[u8]], first: i64) -> Result<(i64, i64, i64), ()> {
    let argc = args.len() as i64;
    match &spec.find_keys {
        FindKeys::Range {
            lastkey,
            step,
            limit,
        } => {
            let last = if *lastkey >= 0 {
                first + lastkey
            } else if *limit == 0 {
                argc + lastkey
            } else {
                first + ((argc - first) / limit + lastkey)
            };
            Ok((first, last, *step))
        }
        FindKeys::Keynum {
            keynumidx,
            firstkey,
            step,
        } => {
            if *keynumidx >= argc {
                return Err(());
            }
            let count = args
                .get((first + keynumidx) as usize)
                .and_then(|a| resp::string2ll(a))
                .filter(|&n| n >= 0)
                .ok_or(())?;
            let first = first + firstkey;
            Ok((first, first + count - 1, *step))
        }
        FindKeys::Unknown(()) => Err(()),
    }
}

/// `getKeysUsingKeySpecs`: every key the specs find, or `None` when a spec is invalid or
/// incomplete for these arguments. With `partial`, such specs are skipped instead
/// (`GET_KEYSPEC_RETURN_PARTIAL`); NOT_KEY specs are always skipped.
pub fn keys_from_specs(meta: &Meta, args: &[&[u8]], partial: bool) -> Option<Vec<KeyRef>> {
    let argc = args.len() as i64;
    let mut keys = Vec::new();
    for spec in &meta.key_specs {
        if spec.has("not_key") {
            continue;
        }
        let found = begin(spec, args).and_then(|start| match start {
            None => Ok(None),
            Some(first) => find(spec, args, first as i64).map(Some),
        });
        let (first, last, step) = match found {
            Ok(None) => continue,
            Ok(Some(range)) => range,
            Err(()) if partial => continue,
            Err(()) => return None,
        };
        if last >= argc || last < first || first >= argc {
            if partial {
                continue;
            }
            return None;
        }
        let flags = flag_bits(spec);
        let mut i = first;
        while i <= last {
            // Only commands of negative arity can get here with too few arguments: their keys
            // are left to the command to reject.
            if i < argc {
                keys.push(KeyRef {
                    pos: i as usize,
                    flags,
                });
            }
            i += step.max(1);
        }
        if spec.has("incomplete") && !partial {
            return None;
        }
    }
    Some(keys)
}

/// Whether the C string `arg` (up to its first NUL) equals `word`, ignoring ASCII case.
fn eq_c_str(arg: &[u8], word: &[u8]) -> bool {
    let arg = arg
        .iter()
        .position(|&b| b == 0)
        .map_or(arg, |end| &arg[..end]);
    arg.eq_ignore_ascii_case(word)
}

/// C's `atoi` as glibc has it: `(int) strtol(s, NULL, 10)`: leading white space, a sign, the
/// digits up to the first other byte; saturated to `long`, then cut to `int`.
fn atoi(arg: &[u8]) -> i32 {
    let mut bytes = arg
        .iter()
        .copied()
        .skip_while(|b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .peekable();
    let negative = match bytes.peek() {
        Some(b'-') => {
            bytes.next();
            true
        }
        Some(b'+') => {
            bytes.next();
            false
        }
        _ => false,
    };
    let mut value: i64 = 0;
    for b in bytes.take_while(u8::is_ascii_digit) {
        let digit = i64::from(b - b'0');
        value = if negative {
            value.saturating_mul(10).saturating_sub(digit)
        } else {
            value.saturating_mul(10).saturating_add(digit)
        };
    }
    value as i32
}

/// Redis's `genericGetKeys`: `numkeys` at `count_at`, the keys from `first`, then the
/// destination at `store` (0: none); nothing when `numkeys` is out of range.
fn generic(store: usize, count_at: usize, first: usize, args: &[&[u8]]) -> Vec<KeyRef> {
    let Some(count) = args.get(count_at).map(|a| atoi(a)) else {
        return Vec::new();
    };
    let available = args.len().saturating_sub(first) as i64;
    if count < 1 || i64::from(count) > available {
        return Vec::new();
    }
    let mut keys: Vec<KeyRef> = (0..count as usize)
        .map(|i| KeyRef {
            pos: first + i,
            flags: 0,
        })
        .collect();
    if store != 0 {
        keys.push(KeyRef {
            pos: store,
            flags: 0,
        });
    }
    keys
}

/// `sortGetKeys`: the sorted key, and the destination of the last `STORE` (LIMIT skips two
/// arguments, GET and BY one).
fn sort_keys(args: &[&[u8]]) -> Vec<KeyRef> {
    let mut keys = vec![KeyRef {
        pos: 1,
        flags: RO | ACCESS,
    }];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        if eq_c_str(args[i], b"limit") {
            i += 2;
        } else if eq_c_str(args[i], b"store") && i + 1 < args.len() {
            store = Some(i + 1);
        } else if eq_c_str(args[i], b"get") || eq_c_str(args[i], b"by") {
            i += 1;
        }
        i += 1;
    }
    keys.extend(store.map(|pos| KeyRef {
        pos,
        flags: OW | UPDATE,
    }));
    keys
}

/// `setGetKeys`: the key, read too when a `GET` option follows the value.
fn set_keys(args: &[&[u8]]) -> Vec<KeyRef> {
    let get = args.iter().skip(3).any(|a| eq_c_str(a, b"get"));
    vec![KeyRef {
        pos: 1,
        flags: if get {
            RW | ACCESS | UPDATE
        } else {
            OW | UPDATE
        },
    }]
}

/// `bitfieldGetKeys`: the key, read-only while every operation before the first SET or
/// INCRBY (or the first word it cannot read) is a GET or an OVERFLOW.
fn bitfield_keys(args: &[&[u8]]) -> Vec<KeyRef> {
    let mut readonly = true;
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        if eq_c_str(args[i], b"get") && left >= 2 {
            i += 2;
        } else if eq_c_str(args[i], b"overflow") && left >= 1 {
            i += 1;
        } else {
            // SET, INCRBY, or a syntax error (taken as a write, as Redis takes it).
            readonly = false;
            break;
        }
        i += 1;
    }
    vec![KeyRef {
        pos: 1,
        flags: if readonly {
            RO | ACCESS
        } else {
            RW | ACCESS | UPDATE
        },
    }]
}

/// `georadiusGetKeys`: the key, and the last STORE or STOREDIST destination from argument 5 on.
fn georadius_keys(args: &[&[u8]]) -> Vec<KeyRef> {
    let mut keys = vec![KeyRef { pos: 1, flags: 0 }];
    let mut stored = None;
    let mut i = 5;
    while i < args.len() {
        if (eq_c_str(args[i], b"store") || eq_c_str(args[i], b"storedist")) && i + 1 < args.len() {
            stored = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    keys.extend(stored.map(|pos| KeyRef { pos, flags: 0 }));
    keys
}

/// The key finders Redis's metadata names for densekv's commands (a test holds the data to it).
#[cfg(test)]
pub const PROCS: [&str; 14] = [
    "bitfieldGetKeys",
    "georadiusGetKeys",
    "evalGetKeys",
    "functionGetKeys",
    "setGetKeys",
    "sortGetKeys",
    "sortROGetKeys",
    "sintercardGetKeys",
    "zunionInterDiffGetKeys",
    "zunionInterDiffStoreGetKeys",
    "lmpopGetKeys",
    "blmpopGetKeys",
    "zmpopGetKeys",
    "bzmpopGetKeys",
];

/// The keys Redis's C key finder `name` returns for `args`.
pub fn proc_keys(name: &str, args: &[&[u8]]) -> Vec<KeyRef> {
    match name {
        "setGetKeys" => set_keys(args),
        "bitfieldGetKeys" => bitfield_keys(args),
        "georadiusGetKeys" => georadius_keys(args),
        "sortGetKeys" => sort_keys(args),
        "sortROGetKeys" => vec![KeyRef {
            pos: 1,
            flags: RO | ACCESS,
        }],
        "sintercardGetKeys" | "zunionInterDiffGetKeys" | "lmpopGetKeys" | "zmpopGetKeys" => {
            generic(0, 1, 2, args)
        }
        "zunionInterDiffStoreGetKeys" => generic(1, 2, 3, args),
        "blmpopGetKeys" | "bzmpopGetKeys" | "evalGetKeys" | "functionGetKeys" => {
            generic(0, 2, 3, args)
        }
        other => unreachable!("no port of Redis's key finder {other} (keyspec::PROCS)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoi_is_glibc_s() {
        for (text, value) in [
            (&b"12"[..], 12),
            (b"  -3x", -3),
            (b"+7", 7),
            (b"x1", 0),
            (b"", 0),
            (b"4294967297", 1),
            (b"99999999999999999999", -1),
            (b"\t\n 5", 5),
        ] {
            assert_eq!(atoi(text), value, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn sort_finds_the_last_store() {
        let args: Vec<&[u8]> = vec![
            b"sort", b"k", b"limit", b"store", b"x", b"get", b"store", b"store", b"d1", b"store",
            b"d2",
        ];
        let keys: Vec<usize> = sort_keys(&args).iter().map(|k| k.pos).collect();
        assert_eq!(keys, [1, 10]);
    }

    /// The words a generated argument vector draws from: every token of the command's
    /// arguments (so that keywords such as STORE, WEIGHTS or LIMIT come up), small integers
    /// (so that `numkeys` arguments sometimes fit what follows), and key-like strings.
    fn vocabulary(args: &[super::super::meta::Arg], words: &mut Vec<Vec<u8>>) {
        for arg in args {
            if let Some(token) = &arg.token {
                words.push(token.as_bytes().to_vec());
            }
            vocabulary(arg.arguments.as_deref().unwrap_or_default(), words);
        }
    }

    /// The shards dispatch locks (`command::key_positions` of the table's `Keys`) cover every
    /// key the key specs yield, on generated argument vectors for every command: a command
    /// never touches a key whose shard it has not locked. `Keys::All` locks every shard.
    #[test]
    fn lock_positions_cover_the_key_specs() {
        use crate::command::{COMMANDS, Keys, key_positions};
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let (mut vectors, mut keys) = (0, 0);
        for (index, spec) in COMMANDS.iter().enumerate() {
            let meta = super::super::meta::of(index);
            if matches!(spec.keys, Keys::All) || !spec.subcommands.is_empty() {
                continue;
            }
            let mut words: Vec<Vec<u8>> = ["0", "1", "2", "3", "-1", "k1", "k2", "k3", "v"]
                .iter()
                .map(|w| w.as_bytes().to_vec())
                .collect();
            vocabulary(&meta.arguments, &mut words);
            let prefix: Vec<&[u8]> = spec.name.split('|').map(str::as_bytes).collect();
            for _ in 0..2000 {
                let argc = if spec.arity > 0 {
                    spec.arity as usize
                } else {
                    spec.arity.unsigned_abs() as usize + rng.gen_range(0..7)
                };
                let mut args = prefix.clone();
                while args.len() < argc {
                    args.push(&words[rng.gen_range(0..words.len())]);
                }
                let locked = key_positions(spec, &args);
                for key in keys_from_specs(meta, &args, true).unwrap_or_default() {
                    assert!(
                        locked.contains(&key.pos),
                        "{}: key at {} not locked ({:?} locks {locked:?})",
                        spec.name,
                        key.pos,
                        args.iter()
                            .map(|a| String::from_utf8_lossy(a))
                            .collect::<Vec<_>>(),
                    );
                    keys += 1;
                }
                vectors += 1;
            }
        }
        assert!(
            vectors > 100_000 && keys > 100_000,
            "{vectors} vectors, {keys} keys"
        );
    }

    /// Every key finder the metadata names has a port.
    #[test]
    fn every_named_key_finder_is_ported() {
        for (i, _) in crate::command::COMMANDS.iter().enumerate() {
            if let Some(name) = &super::super::meta::of(i).get_keys_function {
                assert!(PROCS.contains(&name.as_str()), "{name}");
            }
        }
    }
}
