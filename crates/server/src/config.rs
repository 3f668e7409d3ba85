//! Configuration: redis.conf syntax, `--option value` arguments, and CONFIG GET/SET/REWRITE, all
//! driven by one table of parameters (`PARAMS`) so the three can never disagree.
//!
//! Each parameter has a name (as redis-server spells it), whether CONFIG SET may change it at run
//! time, a parser from its argument words into the typed [`Config`] field, and a formatter back.
//! Memory sizes accept Redis's units (`k` = 1000, `kb` = 1024, `m`, `mb`, `g`, `gb`).
//!
//! Persistence is not built yet, so `save` must be empty and `appendonly` must be `no`: a server
//! that accepted those settings and then lost acknowledged writes would be worse than one that
//! refuses to start. The refusal is a clear startup error naming the option.

use std::fmt::Write as _;

/// Every setting the server reads.
#[derive(Clone, Debug)]
pub struct Config {
    pub port: u16,
    pub bind: Vec<String>,
    pub protected_mode: bool,
    pub requirepass: Option<Vec<u8>>,
    pub maxclients: usize,
    pub databases: usize,
    pub dir: String,
    pub save: String,
    pub appendonly: bool,
    pub loglevel: String,
    pub logfile: String,
    pub daemonize: bool,
    pub pidfile: String,
    pub proto_max_bulk_len: u64,
    pub client_query_buffer_limit: u64,
    /// `normal` class: hard limit, soft limit, soft seconds (0 = none).
    pub output_limit_normal: (u64, u64, u64),
    pub output_limit_other: String,
    pub enable_debug_command: String,
    pub hz: u32,
    /// Microseconds a command must take to enter the slow log; negative: log nothing.
    pub slowlog_log_slower_than: i64,
    pub slowlog_max_len: u64,
    pub timeout_secs: u64,
    pub tcp_keepalive: u64,
    pub tcp_backlog: u32,
    pub maxmemory: u64,
    pub maxmemory_policy: String,
    pub io_threads: usize,
    /// Microseconds an I/O thread polls without sleeping after a turn with work (0: never);
    /// see `net.rs`.
    pub busy_poll_us: u64,
    pub shards: usize,
    /// Path of the config file the server started from, for CONFIG REWRITE.
    pub config_file: Option<String>,
}

impl Default for Config {
    fn default() -> Config {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        Config {
            port: 6379,
            bind: vec!["127.0.0.1".into(), "-::1".into()],
            protected_mode: true,
            requirepass: None,
            maxclients: 10_000,
            databases: 16,
            dir: ".".into(),
            save: String::new(),
            appendonly: false,
            loglevel: "notice".into(),
            logfile: String::new(),
            daemonize: false,
            pidfile: String::new(),
            proto_max_bulk_len: 512 << 20,
            client_query_buffer_limit: 1 << 30,
            output_limit_normal: (0, 0, 0),
            output_limit_other: "replica 268435456 67108864 60 pubsub 33554432 8388608 60".into(),
            enable_debug_command: "no".into(),
            hz: 10,
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            timeout_secs: 0,
            tcp_keepalive: 300,
            tcp_backlog: 511,
            maxmemory: 0,
            maxmemory_policy: "noeviction".into(),
            // Half the cores: the event loops do all of a command's work (parse, execute, reply),
            // and the kernel's network stack and the clients on the same host need the rest. On
            // 2 cores, one loop beside redis-benchmark measured level or better than two, without
            // the lock waits of a preempted lock holder.
            io_threads: (cores / 2).clamp(1, 8),
            busy_poll_us: 100,
            shards: 8,
            config_file: None,
        }
    }
}

type Setter = fn(&mut Config, &[String]) -> Result<(), String>;
type Getter = fn(&Config) -> String;

/// One configuration parameter.
#[allow(missing_debug_implementations)] // function pointers only
pub struct Param {
    pub name: &'static str,
    pub mutable: bool,
    pub set: Setter,
    pub get: Getter,
}

const NOT_INT: &str = "argument couldn't be parsed into an integer";

fn one(args: &[String]) -> Result<&str, String> {
    match args {
        [one] => Ok(one),
        _ => Err("wrong number of arguments".into()),
    }
}

fn parse_int<T: std::str::FromStr>(args: &[String], min: i64, max: i64) -> Result<T, String> {
    let text = one(args)?;
    let value: i64 = text.parse().map_err(|_| NOT_INT.to_string())?;
    if value < min || value > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    text.parse().map_err(|_| NOT_INT.to_string())
}

fn parse_bool(args: &[String]) -> Result<bool, String> {
    match one(args)?.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes".into() } else { "no".into() }
}

/// Parses a memory size with Redis's units (`memtoull`).
pub fn parse_memory(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(mul)
}

fn memory(args: &[String]) -> Result<u64, String> {
    parse_memory(one(args)?).ok_or_else(|| "argument must be a memory value".to_string())
}

/// A memory size of at least 1 MiB (`proto-max-bulk-len`, `client-query-buffer-limit`).
fn memory_at_least_1mb(args: &[String]) -> Result<u64, String> {
    let v = memory(args)?;
    if v < 1024 * 1024 {
        return Err("argument must be between 1048576 and 9223372036854775807 inclusive".into());
    }
    Ok(v)
}

/// The parameter table: CONFIG GET lists these names in this order.
pub static PARAMS: &[Param] = &[
    Param {
        name: "port",
        mutable: false,
        set: |c, a| {
            c.port = parse_int(a, 0, 65535)?;
            Ok(())
        },
        get: |c| c.port.to_string(),
    },
    Param {
        name: "bind",
        mutable: false,
        set: |c, a| {
            if a.is_empty() {
                return Err("wrong number of arguments".into());
            }
            c.bind = a
                .iter()
                .flat_map(|w| w.split_whitespace().map(String::from))
                .collect();
            Ok(())
        },
        get: |c| c.bind.join(" "),
    },
    Param {
        name: "protected-mode",
        mutable: true,
        set: |c, a| {
            c.protected_mode = parse_bool(a)?;
            Ok(())
        },
        get: |c| yes_no(c.protected_mode),
    },
    Param {
        name: "requirepass",
        mutable: true,
        set: |c, a| {
            let pass = one(a)?;
            c.requirepass = if pass.is_empty() {
                None
            } else {
                Some(pass.as_bytes().to_vec())
            };
            Ok(())
        },
        get: |c| {
            c.requirepass
                .as_ref()
                .map_or(String::new(), |p| String::from_utf8_lossy(p).into_owned())
        },
    },
    Param {
        name: "maxclients",
        mutable: true,
        set: |c, a| {
            c.maxclients = parse_int(a, 1, i64::from(i32::MAX))?;
            Ok(())
        },
        get: |c| c.maxclients.to_string(),
    },
    Param {
        name: "databases",
        mutable: false,
        set: |c, a| {
            c.databases = parse_int(a, 1, i64::from(i32::MAX))?;
            Ok(())
        },
        get: |c| c.databases.to_string(),
    },
    Param {
        name: "dir",
        mutable: true,
        set: |c, a| {
            let dir = one(a)?;
            if !std::path::Path::new(dir).is_dir() {
                return Err(format!("No such file or directory: {dir}"));
            }
            c.dir = dir.to_string();
            Ok(())
        },
        get: |c| {
            std::fs::canonicalize(&c.dir)
                .map_or_else(|_| c.dir.clone(), |p| p.display().to_string())
        },
    },
    Param {
        name: "save",
        mutable: true,
        set: |c, a| {
            let joined = a.join(" ");
            if !joined.trim().is_empty() {
                return Err("RDB snapshots are not supported yet: use save \"\"".into());
            }
            c.save = String::new();
            Ok(())
        },
        get: |c| c.save.clone(),
    },
    Param {
        name: "appendonly",
        mutable: true,
        set: |c, a| {
            if parse_bool(a)? {
                return Err("the append-only file is not supported yet: use appendonly no".into());
            }
            c.appendonly = false;
            Ok(())
        },
        get: |c| yes_no(c.appendonly),
    },
    Param {
        name: "loglevel",
        mutable: true,
        set: |c, a| {
            let level = one(a)?.to_ascii_lowercase();
            if !["debug", "verbose", "notice", "warning", "nothing"].contains(&level.as_str()) {
                return Err("argument(s) must be one of the following: debug, verbose, notice, warning, nothing".into());
            }
            c.loglevel = level;
            Ok(())
        },
        get: |c| c.loglevel.clone(),
    },
    Param {
        name: "logfile",
        mutable: false,
        set: |c, a| {
            c.logfile = one(a)?.to_string();
            Ok(())
        },
        get: |c| c.logfile.clone(),
    },
    Param {
        name: "daemonize",
        mutable: false,
        set: |c, a| {
            c.daemonize = parse_bool(a)?;
            Ok(())
        },
        get: |c| yes_no(c.daemonize),
    },
    Param {
        name: "pidfile",
        mutable: false,
        set: |c, a| {
            c.pidfile = one(a)?.to_string();
            Ok(())
        },
        get: |c| c.pidfile.clone(),
    },
    Param {
        name: "proto-max-bulk-len",
        mutable: true,
        set: |c, a| {
            c.proto_max_bulk_len = memory_at_least_1mb(a)?;
            Ok(())
        },
        get: |c| c.proto_max_bulk_len.to_string(),
    },
    Param {
        name: "client-query-buffer-limit",
        mutable: true,
        set: |c, a| {
            c.client_query_buffer_limit = memory_at_least_1mb(a)?;
            Ok(())
        },
        get: |c| c.client_query_buffer_limit.to_string(),
    },
    Param {
        name: "client-output-buffer-limit",
        mutable: true,
        set: |c, a| {
            let words: Vec<&str> = a.iter().flat_map(|w| w.split_whitespace()).collect();
            if words.is_empty() || !words.len().is_multiple_of(4) {
                return Err("Wrong number of arguments in buffer limit configuration.".into());
            }
            let mut other = String::new();
            for chunk in words.chunks(4) {
                let class = chunk[0].to_ascii_lowercase();
                let hard = parse_memory(chunk[1]).ok_or(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
                )?;
                let soft = parse_memory(chunk[2]).ok_or(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
                )?;
                let secs: u64 = chunk[3].parse().map_err(|_| "Error in hard, soft or soft_seconds setting in buffer limit configuration.")?;
                match class.as_str() {
                    "normal" => c.output_limit_normal = (hard, soft, secs),
                    "replica" | "slave" | "pubsub" => {
                        let name = if class == "slave" {
                            "replica"
                        } else {
                            class.as_str()
                        };
                        let _ = write!(
                            other,
                            "{}{name} {hard} {soft} {secs}",
                            if other.is_empty() { "" } else { " " }
                        );
                    }
                    _ => {
                        return Err(
                            "Invalid client class specified in buffer limit configuration.".into(),
                        );
                    }
                }
            }
            if !other.is_empty() {
                c.output_limit_other = other;
            }
            Ok(())
        },
        get: |c| {
            let (h, s, t) = c.output_limit_normal;
            format!("normal {h} {s} {t} {}", c.output_limit_other)
        },
    },
    Param {
        name: "enable-debug-command",
        mutable: false,
        set: |c, a| {
            let v = one(a)?.to_ascii_lowercase();
            if !["yes", "no", "local"].contains(&v.as_str()) {
                return Err("argument(s) must be one of the following: no, yes, local".into());
            }
            c.enable_debug_command = v;
            Ok(())
        },
        get: |c| c.enable_debug_command.clone(),
    },
    Param {
        name: "hz",
        mutable: true,
        set: |c, a| {
            c.hz = parse_int::<u32>(a, 0, i64::from(i32::MAX))?.clamp(1, 500);
            Ok(())
        },
        get: |c| c.hz.to_string(),
    },
    Param {
        name: "slowlog-log-slower-than",
        mutable: true,
        set: |c, a| {
            c.slowlog_log_slower_than = parse_int(a, -1, i64::MAX)?;
            Ok(())
        },
        get: |c| c.slowlog_log_slower_than.to_string(),
    },
    Param {
        name: "slowlog-max-len",
        mutable: true,
        set: |c, a| {
            c.slowlog_max_len = parse_int(a, 0, i64::MAX)?;
            Ok(())
        },
        get: |c| c.slowlog_max_len.to_string(),
    },
    Param {
        name: "timeout",
        mutable: true,
        set: |c, a| {
            c.timeout_secs = parse_int(a, 0, i64::from(i32::MAX))?;
            Ok(())
        },
        get: |c| c.timeout_secs.to_string(),
    },
    Param {
        name: "tcp-keepalive",
        mutable: true,
        set: |c, a| {
            c.tcp_keepalive = parse_int(a, 0, i64::from(i32::MAX))?;
            Ok(())
        },
        get: |c| c.tcp_keepalive.to_string(),
    },
    Param {
        name: "tcp-backlog",
        mutable: false,
        set: |c, a| {
            c.tcp_backlog = parse_int(a, 0, i64::from(i32::MAX))?;
            Ok(())
        },
        get: |c| c.tcp_backlog.to_string(),
    },
    Param {
        name: "maxmemory",
        mutable: true,
        set: |c, a| {
            c.maxmemory = memory(a)?;
            Ok(())
        },
        get: |c| c.maxmemory.to_string(),
    },
    Param {
        name: "maxmemory-policy",
        mutable: true,
        set: |c, a| {
            let v = one(a)?.to_ascii_lowercase();
            if v != "noeviction" {
                return Err("only noeviction is supported: eviction is not built yet".into());
            }
            c.maxmemory_policy = v;
            Ok(())
        },
        get: |c| c.maxmemory_policy.clone(),
    },
    Param {
        name: "io-threads",
        mutable: false,
        set: |c, a| {
            c.io_threads = parse_int(a, 1, 128)?;
            Ok(())
        },
        get: |c| c.io_threads.to_string(),
    },
    Param {
        name: "busy-poll-us",
        mutable: true,
        set: |c, a| {
            c.busy_poll_us = parse_int(a, 0, 1_000_000)?;
            Ok(())
        },
        get: |c| c.busy_poll_us.to_string(),
    },
    Param {
        name: "shards",
        mutable: false,
        set: |c, a| {
            c.shards = parse_int(a, 1, 1024)?;
            Ok(())
        },
        get: |c| c.shards.to_string(),
    },
];

/// The parameter called `name` (case-insensitive).
pub fn param(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// A startup configuration error, printed like redis-server's and ending the process.
#[derive(Debug)]
pub struct ConfigError {
    pub line: Option<usize>,
    pub text: String,
    pub reason: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "\n*** FATAL CONFIG FILE ERROR (densekv {}) ***",
            env!("CARGO_PKG_VERSION")
        )?;
        match self.line {
            Some(line) => writeln!(f, "Reading the configuration file, at line {line}")?,
            None => writeln!(f, "Reading the command line arguments")?,
        }
        writeln!(f, ">>> '{}'", self.text)?;
        write!(f, "{}", self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// Applies one directive (`name arg…`).
fn apply(config: &mut Config, words: &[String], line: Option<usize>) -> Result<(), ConfigError> {
    let err = |reason: String| ConfigError {
        line,
        text: words.join(" "),
        reason,
    };
    let Some((name, args)) = words.split_first() else {
        return Ok(());
    };
    let Some(param) = param(name) else {
        return Err(err("Bad directive or wrong number of arguments".into()));
    };
    (param.set)(config, args).map_err(err)
}

/// Parses redis.conf text into `config`.
pub fn load_text(config: &mut Config, text: &str) -> Result<(), ConfigError> {
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (mut bytes, mut spans) = (Vec::new(), Vec::new());
        resp::inline::split_args(trimmed.as_bytes(), &mut bytes, &mut spans).map_err(|_| {
            ConfigError {
                line: Some(i + 1),
                text: trimmed.to_string(),
                reason: "Unbalanced quotes in configuration line".into(),
            }
        })?;
        let words: Vec<String> = spans
            .iter()
            .map(|span| String::from_utf8_lossy(&bytes[span.clone()]).into_owned())
            .collect();
        apply(config, &words, Some(i + 1))?;
    }
    Ok(())
}

/// Builds the configuration from `densekv [config-file] [--name value …]`.
pub fn from_args(args: &[String]) -> Result<Config, ConfigError> {
    let mut config = Config::default();
    let mut rest = args;
    if let Some(first) = rest.first()
        && !first.starts_with("--")
    {
        let text = std::fs::read_to_string(first).map_err(|e| ConfigError {
            line: None,
            text: first.clone(),
            reason: format!("Fatal error, can't open config file '{first}': {e}"),
        })?;
        load_text(&mut config, &text)?;
        config.config_file = Some(first.clone());
        rest = &rest[1..];
    }
    let mut directive: Vec<String> = Vec::new();
    for arg in rest {
        if let Some(name) = arg.strip_prefix("--") {
            if !directive.is_empty() {
                apply(&mut config, &directive, None)?;
            }
            directive = vec![name.to_string()];
        } else if directive.is_empty() {
            return Err(ConfigError {
                line: None,
                text: arg.clone(),
                reason: "Invalid argument: options must start with --".into(),
            });
        } else {
            directive.push(arg.clone());
        }
    }
    if !directive.is_empty() {
        apply(&mut config, &directive, None)?;
    }
    Ok(config)
}

/// The text of a config file holding every parameter (CONFIG REWRITE).
pub fn render(config: &Config) -> String {
    let mut out = String::from("# Written by densekv CONFIG REWRITE\n");
    for p in PARAMS {
        let value = (p.get)(config);
        let _ = writeln!(
            out,
            "{} \"{}\"",
            p.name,
            value.replace('\\', "\\\\").replace('"', "\\\"")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_string()).collect()
    }

    #[test]
    fn arguments_override_defaults() {
        let c = from_args(&args(&[
            "--port",
            "7000",
            "--bind",
            "127.0.0.1",
            "::1",
            "--maxclients",
            "5",
        ]))
        .unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.bind, vec!["127.0.0.1", "::1"]);
        assert_eq!(c.maxclients, 5);
    }

    #[test]
    fn unknown_and_invalid_options_are_startup_errors() {
        let e = from_args(&args(&["--nosuch", "1"])).unwrap_err();
        assert!(e.to_string().contains("Bad directive"), "{e}");
        let e = from_args(&args(&["--port", "abc"])).unwrap_err();
        assert!(
            e.to_string().contains("couldn't be parsed into an integer"),
            "{e}"
        );
        let e = from_args(&args(&["--appendonly", "yes"])).unwrap_err();
        assert!(e.to_string().contains("append-only"), "{e}");
        assert!(from_args(&args(&["--save", ""])).is_ok());
        assert!(from_args(&args(&["--daemonize", "no"])).is_ok());
    }

    #[test]
    fn config_file_syntax() {
        let mut c = Config::default();
        load_text(&mut c, "# comment\nport 7001\nrequirepass \"p w\"\nclient-output-buffer-limit normal 1mb 512kb 10\n").unwrap();
        assert_eq!(c.port, 7001);
        assert_eq!(c.requirepass.as_deref(), Some(&b"p w"[..]));
        assert_eq!(c.output_limit_normal, (1 << 20, 512 << 10, 10));
        let e = load_text(&mut c, "port 1\nbogus\n").unwrap_err();
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("512mb"), Some(512 << 20));
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("100k"), Some(100_000));
        assert_eq!(parse_memory("12"), Some(12));
        assert_eq!(parse_memory("1xb"), None);
    }

    #[test]
    fn rewrite_round_trips() {
        let c = Config {
            port: 7777,
            ..Config::default()
        };
        let text = render(&c);
        let mut back = Config::default();
        load_text(&mut back, &text).unwrap();
        assert_eq!(back.port, 7777);
        assert_eq!(back.bind, c.bind);
    }
}
