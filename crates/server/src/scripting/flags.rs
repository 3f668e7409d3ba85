//! Script flags: the `#!lua flags=…` shebang of EVAL scripts (Redis's
//! `evalExtractShebangFlags`) and the `flags` of `redis.register_function`, and what they do to
//! the command's own flags (`scriptFlagsToCmdFlags`).
//!
//! ```text
//!  body = "#!lua flags=no-writes,allow-oom\n…"   → Flags { compat: false, bits: NO_WRITES|ALLOW_OOM }
//!  body = "return 1"                              → Flags { compat: true, bits: 0 }  (EVAL's old mode)
//!  the shebang line is cut from the code, its '\n' kept, so line numbers stay the user's
//! ```

use crate::command::flag;
use crate::server::Server;

pub const NO_WRITES: u32 = 1;
pub const ALLOW_OOM: u32 = 1 << 1;
pub const ALLOW_STALE: u32 = 1 << 2;
pub const NO_CLUSTER: u32 = 1 << 3;
pub const ALLOW_CROSS_SLOT: u32 = 1 << 4;

/// Each flag with its name, in Redis's order (`scripts_flags_def`), which is also the order
/// FUNCTION LIST prints them in.
pub const NAMES: [(u32, &str); 5] = [
    (NO_WRITES, "no-writes"),
    (ALLOW_OOM, "allow-oom"),
    (ALLOW_STALE, "allow-stale"),
    (NO_CLUSTER, "no-cluster"),
    (ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
];

/// A script's flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// An EVAL script without a shebang: the command's own flags rule, as before Redis 7.
    pub compat: bool,
    pub bits: u32,
}

impl Flags {
    pub fn has(self, bit: u32) -> bool {
        !self.compat && self.bits & bit != 0
    }

    /// Whether the script runs read-only: `_RO` commands always, else a flagged `no-writes`.
    pub fn read_only(self, ro_command: bool) -> bool {
        ro_command || self.has(NO_WRITES)
    }

    /// The flags dispatch checks EVAL or FCALL by, given its own (`scriptFlagsToCmdFlags`).
    pub fn command_flags(self, own: u32) -> u32 {
        if self.compat {
            return own;
        }
        let mut flags = own & !(flag::STALE | flag::DENYOOM | flag::WRITE | flag::MAY_REPLICATE);
        if self.bits & (ALLOW_OOM | NO_WRITES) == 0 {
            flags |= flag::DENYOOM;
        }
        if self.bits & NO_WRITES == 0 {
            flags |= flag::WRITE;
        }
        if self.bits & ALLOW_STALE != 0 {
            flags |= flag::STALE;
        }
        flags
    }
}

/// The flags a script command about to run declares, if any (Redis's `evalGetCommandFlags`
/// and `fcallGetCommandFlags`): an EVAL body's shebang, a cached EVALSHA script's, a
/// registered function's. `None` for other commands, a script without a shebang, or one not
/// found (the command then fails on its own).
pub fn declared(server: &Server, command: &str, args: &[&[u8]]) -> Option<Flags> {
    let target = args.get(1)?;
    let flags = match command {
        "eval" | "eval_ro" => from_shebang(target).ok()?.0,
        "evalsha" | "evalsha_ro" => server.scripting.cached(target)?.flags,
        "fcall" | "fcall_ro" => {
            let name = String::from_utf8_lossy(target).to_ascii_lowercase();
            super::functions::flags_of(server, &name)?
        }
        _ => return None,
    };
    (!flags.compat).then_some(flags)
}

/// The flag named `name`.
pub fn by_name(name: &[u8]) -> Option<u32> {
    NAMES
        .iter()
        .find(|(_, n)| n.as_bytes() == name)
        .map(|(bit, _)| *bit)
}

/// Reads the shebang of an EVAL script: its flags and how many bytes of `body` it takes (up to,
/// not including, its newline). `Err` holds Redis's error text, without `ERR `.
pub fn from_shebang(body: &[u8]) -> Result<(Flags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((
            Flags {
                compat: true,
                bits: 0,
            },
            0,
        ));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let mut bytes = Vec::new();
    let mut spans = Vec::new();
    if resp::inline::split_args(&body[..end], &mut bytes, &mut spans).is_err() || spans.is_empty() {
        return Err("Invalid engine in script shebang".into());
    }
    let part = |i: usize| &bytes[spans[i].clone()];
    if part(0) != b"#!lua" {
        return Err(format!(
            "Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(part(0))
        ));
    }
    let mut bits = 0;
    for i in 1..spans.len() {
        let Some(list) = part(i).strip_prefix(b"flags=") else {
            return Err(format!(
                "Unknown lua shebang option: {}",
                String::from_utf8_lossy(part(i))
            ));
        };
        for name in split_flags(list) {
            let Some(bit) = by_name(name) else {
                return Err(format!(
                    "Unexpected flag in script shebang: {}",
                    String::from_utf8_lossy(name)
                ));
            };
            bits |= bit;
        }
    }
    Ok((
        Flags {
            compat: false,
            bits,
        },
        end,
    ))
}

/// `sdssplitlen(list, ",")`: an empty list is no flag at all; otherwise every piece counts,
/// empty ones included (`flags=,` names the flag "").
fn split_flags(list: &[u8]) -> impl Iterator<Item = &[u8]> {
    let pieces = if list.is_empty() {
        None
    } else {
        Some(list.split(|&b| b == b','))
    };
    pieces.into_iter().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_shebang_is_compat_mode() {
        let (flags, len) = from_shebang(b"return 1").unwrap();
        assert!(flags.compat);
        assert_eq!(len, 0);
        assert_eq!(flags.command_flags(flag::WRITE), flag::WRITE);
    }

    #[test]
    fn shebang_flags_and_length() {
        let body = b"#!lua flags=no-writes,allow-oom\nreturn 1";
        let (flags, len) = from_shebang(body).unwrap();
        assert_eq!(flags.bits, NO_WRITES | ALLOW_OOM);
        assert_eq!(body[len], b'\n');
        assert_eq!(flags.command_flags(flag::MAY_REPLICATE), 0);
        let (plain, _) = from_shebang(b"#!lua\nreturn 1").unwrap();
        assert_eq!(
            plain.command_flags(flag::MAY_REPLICATE),
            flag::WRITE | flag::DENYOOM
        );
    }

    #[test]
    fn shebang_errors_are_redis_texts() {
        let err = |b: &[u8]| from_shebang(b).unwrap_err();
        assert_eq!(err(b"#!lua"), "Invalid script shebang");
        assert_eq!(
            err(b"#!python\n"),
            "Unexpected engine in script shebang: #!python"
        );
        assert_eq!(err(b"#!lua x=1\n"), "Unknown lua shebang option: x=1");
        assert_eq!(
            err(b"#!lua flags=no-writes,bad\n"),
            "Unexpected flag in script shebang: bad"
        );
        assert_eq!(
            err(b"#!lua flags=,\n"),
            "Unexpected flag in script shebang: "
        );
        assert_eq!(from_shebang(b"#!lua flags=\n").unwrap().0.bits, 0);
    }
}
