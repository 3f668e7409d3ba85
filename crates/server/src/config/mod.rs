//! Configuration: every directive of Redis 7.0 (its `static_configs[]` table) plus densekv's own,
//! read from redis.conf, `--option value` arguments and stdin exactly as redis-server reads them,
//! and served by CONFIG GET / SET / REWRITE.
//!
//! ```text
//!  table.rs    one line per directive: Config field, type, default, name, alias, flags,
//!              kind (bool / string / sds / enum / number / special), status, run-time apply
//!     │  drives
//!     ├─ load.rs      redis.conf lines, include (glob), rename-command, user, --options, stdin
//!     ├─ value.rs     the generic kinds: parse with Redis's checks and error texts, format back
//!     ├─ special.rs   dir save bind replicaof client-output-buffer-limit oom-score-adj-values
//!     │               notify-keyspace-events latency-tracking-info-percentiles, is_valid checks
//!     ├─ rewrite.rs   CONFIG REWRITE: old lines replaced in place, new ones appended, atomic write
//!     ├─ effects.rs   what a directive does to the process: open-files limit, oom_score_adj,
//!     │               THP, syslog, systemd/upstart readiness, the banner, the umask
//!     ├─ user.rs      the `user` directive (the default user only) and its SHA-256
//!     └─ docs.rs      docs/config.md's table, generated from the table (a test keeps it fresh)
//! ```
//!
//! One table drives the file, the command line, CONFIG GET/SET/REWRITE and the docs, so they can
//! never disagree. Each entry carries a [`Status`] saying what densekv does with it: it *works*,
//! it is *planned* (accepted and validated now, used by scheduled work), it *maps* onto one of
//! densekv's own encoding thresholds, it has *no effect* (and why), or it is *refused* at any value
//! but its neutral default because densekv lacks the feature (replication, cluster, TLS…): a
//! server that accepted `replicaof` and then served as a primary would be worse than one that
//! says it cannot.

mod docs;
pub mod effects;
mod load;
mod rewrite;
mod special;
mod table;
mod user;
mod value;

pub use docs::{markdown_table, with_table};
pub use load::{ConfigError, from_args, load_text};
pub use rewrite::rewrite_file;
pub use table::{Config, DIRECTIVES, densekv_only};
pub use value::{format_memory, parse_memory};

/// Directive flags, Redis's `*_CONFIG` bits.
pub mod flag {
    /// No flag: settable at run time.
    pub const MODIFIABLE: u16 = 0;
    /// Only at startup.
    pub const IMMUTABLE: u16 = 1;
    /// The value is a secret (kept out of logs).
    pub const SENSITIVE: u16 = 1 << 1;
    /// Worth printing in a crash report.
    pub const DEBUG: u16 = 1 << 2;
    /// Takes several arguments (`save 3600 1 300 100`).
    pub const MULTI_ARG: u16 = 1 << 3;
    /// CONFIG GET returns it only for its exact name, never for a pattern.
    pub const HIDDEN: u16 = 1 << 4;
    /// CONFIG SET refuses it unless `enable-protected-configs` allows the client.
    pub const PROTECTED: u16 = 1 << 5;
    /// Refused while loading a dataset.
    pub const DENY_LOADING: u16 = 1 << 6;
    /// A set to the same value still counts as a change (its value refers to a file).
    pub const VOLATILE: u16 = 1 << 9;
}

/// What densekv does with a directive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// densekv implements it.
    Works(&'static str),
    /// Accepted with full validation; scheduled work (named) will act on it.
    Planned(&'static str),
    /// Redis's encoding threshold, steering densekv's own encodings (see docs/types.md).
    Maps(&'static str),
    /// Accepted, but densekv has nothing it could act on (the reason).
    NoEffect(&'static str),
    /// densekv lacks the feature (named): only the neutral default value is accepted.
    Refused(&'static str),
}

impl Status {
    /// The doc's one-word name of the status.
    pub fn word(self) -> &'static str {
        match self {
            Status::Works(_) => "works",
            Status::Planned(_) => "planned",
            Status::Maps(_) => "maps",
            Status::NoEffect(_) => "no effect",
            Status::Refused(_) => "refused value",
        }
    }

    /// The status's note.
    pub fn note(self) -> &'static str {
        match self {
            Status::Works(s)
            | Status::Planned(s)
            | Status::Maps(s)
            | Status::NoEffect(s)
            | Status::Refused(s) => s,
        }
    }
}

/// What CONFIG SET must do to the running server after the new value is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Apply {
    None,
    LogLevel,
    SlowLog,
    Hz,
    MaxClients,
    OomScore,
    CrashLog,
    /// `maxmemory` and its policy, samples, tenacity, LFU factors: cached by the eviction
    /// state; the access policy is handed to every shard by CONFIG SET itself.
    Eviction,
    /// `repl-backlog-size` below 16 KiB becomes 16 KiB, as Redis's `resizeReplicationBacklog`.
    ReplBacklog,
    /// Needs the network loop: listen on the new port.
    Port,
    /// Needs the network loop: listen on the new addresses.
    Bind,
    /// The shards' encoding thresholds (`effects::store_limits`), handed to every shard once
    /// the new configuration is in place (it cannot fail).
    EncodingLimits,
    /// `appendonly`: the AOF is switched on (a rewrite) or off, with every shard held, once
    /// the new configuration is in place (`aof::rewrite::turn_on`).
    AppendOnly,
    /// `appendfsync`, `aof-timestamp-enabled`, `no-appendfsync-on-rewrite`: cached by the AOF.
    AofOptions,
    /// `notify-keyspace-events`: cached in `Server::notify_flags`.
    Messaging,
    /// `tracking-table-max-keys`: cached by `Server::tracking`.
    Tracking,
}

/// An `is_valid` check of a new value: the error is Redis's text.
pub type Validator<T> = Option<fn(T) -> Result<(), &'static str>>;
/// An `is_valid` check of a string value.
pub type StrValidator = Option<fn(&[u8]) -> Result<(), &'static str>>;
/// A special directive's setter: `Ok(true)` when the value changed (its apply must run).
pub type SpecialSet = fn(&mut Config, &[Vec<u8>], SetContext) -> Result<bool, String>;
/// A special directive's CONFIG REWRITE.
pub type SpecialRewrite = fn(&Config, &str, &mut rewrite::Rewrite);

/// `yes`/`no` directives.
#[allow(missing_debug_implementations)] // function pointers
#[derive(Clone, Copy)]
pub struct BoolSpec {
    pub get: fn(&Config) -> bool,
    pub set: fn(&mut Config, bool),
    pub valid: Validator<bool>,
}

/// String directives: C strings (cut at a NUL) or binary-safe `sds` ones.
#[allow(missing_debug_implementations)] // function pointers
#[derive(Clone, Copy)]
pub struct StrSpec {
    pub get: fn(&Config) -> &[u8],
    pub set: fn(&mut Config, &[u8]),
    /// `EMPTY_STRING_IS_NULL`: an empty value means "unset" (not written by CONFIG REWRITE).
    pub null_if_empty: bool,
    /// `sds`: binary-safe; otherwise the value ends at its first NUL byte, as a C string does.
    pub binary: bool,
    pub valid: StrValidator,
}

/// Enumerations, single-valued or (with `MULTI_ARG`) bit flags.
#[allow(missing_debug_implementations)] // function pointers
#[derive(Clone, Copy)]
pub struct EnumSpec {
    pub names: &'static [(&'static str, i32)],
    pub get: fn(&Config) -> i32,
    pub set: fn(&mut Config, i32),
    pub valid: Validator<i32>,
}

/// The C type behind a number: it decides between Redis's signed and unsigned bound checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumType {
    Int,
    UInt,
    Long,
    ULong,
    LongLong,
    ULongLong,
    SizeT,
    SSizeT,
    TimeT,
    OffT,
}

/// Numbers: plain integers, or with `MEMORY` units, `PERCENT` (stored negative), `OCTAL`.
#[allow(missing_debug_implementations)] // function pointers
#[derive(Clone, Copy)]
pub struct NumSpec {
    pub ty: NumType,
    pub lower: i64,
    pub upper: i64,
    pub flags: u8,
    pub get: fn(&Config) -> i64,
    pub set: fn(&mut Config, i64),
    pub valid: Validator<i64>,
}

/// Number flags (Redis's `MEMORY_CONFIG`, `PERCENT_CONFIG`, `OCTAL_CONFIG`).
pub mod num {
    pub const INTEGER: u8 = 0;
    pub const MEMORY: u8 = 1;
    pub const PERCENT: u8 = 1 << 1;
    pub const OCTAL: u8 = 1 << 2;
}

/// Directives with their own parser, formatter and rewrite (`dir`, `save`, `bind`…).
#[allow(missing_debug_implementations)] // function pointers
#[derive(Clone, Copy)]
pub struct SpecialSpec {
    pub set: SpecialSet,
    pub get: fn(&Config) -> Vec<u8>,
    pub rewrite: SpecialRewrite,
}

/// Where a set comes from: `save` lines accumulate while a file is read.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetContext {
    pub reading_file: bool,
}

/// How a directive's value is parsed, stored and formatted.
#[allow(missing_debug_implementations)] // function pointers
#[derive(Clone, Copy)]
pub enum Kind {
    Bool(BoolSpec),
    Str(StrSpec),
    Enum(EnumSpec),
    Num(NumSpec),
    Special(SpecialSpec),
}

/// One configuration directive.
#[derive(Clone, Copy)]
pub struct Directive {
    pub name: &'static str,
    pub alias: Option<&'static str>,
    pub flags: u16,
    pub kind: Kind,
    pub status: Status,
    pub apply: Apply,
}

impl std::fmt::Debug for Directive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directive")
            .field("name", &self.name)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl Directive {
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
}

/// A name CONFIG and the file know: a directive under its own name or its alias.
#[derive(Clone, Copy, Debug)]
pub struct Named {
    pub directive: &'static Directive,
    /// The name as registered (the alias, for an alias).
    pub name: &'static str,
    /// Its position in the registry of names: two names of one directive are two entries, as in
    /// Redis's dict (CONFIG SET replica-priority 1 slave-priority 2 is not a duplicate).
    pub id: usize,
}

/// The directive called `name` (case-insensitive), by its name or its alias.
pub fn lookup(name: &[u8]) -> Option<Named> {
    names().find(|n| n.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Every registered name: each directive's name, then its alias.
pub fn names() -> impl Iterator<Item = Named> {
    DIRECTIVES.iter().enumerate().flat_map(|(i, d)| {
        let own = Named {
            directive: d,
            name: d.name,
            id: 2 * i,
        };
        let alias = d.alias.map(|a| Named {
            directive: d,
            name: a,
            id: 2 * i + 1,
        });
        std::iter::once(own).chain(alias)
    })
}

/// The directive's value as CONFIG GET shows it.
pub fn get(config: &Config, d: &Directive) -> Vec<u8> {
    value::get(config, d)
}

/// Sets `d` from its arguments (already split), with Redis's validation and error texts; a
/// refused directive also fails when left at anything but its default. `Ok(true)`: the value
/// changed (or the directive is volatile), so its apply must run.
pub fn set(
    config: &mut Config,
    d: &Directive,
    args: &[Vec<u8>],
    cx: SetContext,
) -> Result<bool, String> {
    let changed = value::set(config, d, args, cx)?;
    if let Status::Refused(feature) = d.status {
        let now = get(config, d);
        let neutral = get(table::defaults(), d);
        if now != neutral {
            return Err(refusal(d.name, feature, &neutral));
        }
    }
    Ok(changed)
}

/// The error for a value densekv cannot honour.
fn refusal(name: &str, feature: &str, neutral: &[u8]) -> String {
    if neutral.is_empty() {
        format!("densekv does not support {feature}: '{name}' must be left unset")
    } else {
        format!(
            "densekv does not support {feature}: '{name}' must be '{}'",
            String::from_utf8_lossy(neutral)
        )
    }
}

/// Splits a CONFIG SET value: a multi-argument directive's value on single spaces (Redis's
/// `sdssplitlen`, so two spaces make an empty argument and an empty value no argument), any
/// other as one argument.
pub fn split_set_value(d: &Directive, value: &[u8]) -> Vec<Vec<u8>> {
    if d.has(flag::MULTI_ARG) && value.is_empty() {
        Vec::new()
    } else if d.has(flag::MULTI_ARG) {
        value.split(|&b| b == b' ').map(<[u8]>::to_vec).collect()
    } else {
        vec![value.to_vec()]
    }
}

/// Whether `client_addr` ("ip:port") is a loopback client as Redis's `islocalClient` sees one.
pub fn is_local_addr(client_addr: &str) -> bool {
    let ip = client_addr
        .rsplit_once(':')
        .map_or(client_addr, |(ip, _)| ip);
    let ip = ip.trim_start_matches('[').trim_end_matches(']');
    ip == "127.0.0.1" || ip == "::1"
}

/// Whether a protected action (`enable-protected-configs`, `enable-debug-command` values
/// 0 = no, 1 = yes, 2 = local) is allowed for a client, as Redis's `allowProtectedAction`.
pub fn allow_protected(setting: i32, client_addr: &str) -> bool {
    setting == 1 || (setting == 2 && is_local_addr(client_addr))
}
