//! Reading the configuration as redis-server does (`main()`'s argument handling,
//! `loadServerConfig`, `loadServerConfigFromString`):
//!
//! ```text
//!  densekv [file] [--name value …] [-]
//!    file      the first argument when it does not start with '-' (a glob pattern is allowed)
//!    -         first or last: read stdin after the file
//!    options   "--name v1 v2" become the text "name \"v1\" \"v2\" ", one line per option,
//!              appended after "\n" to file + stdin; a lone "--save" is `save ""`
//!  text ─▶ lines split on \n, trimmed of " \t\r\n", '#' lines and blanks skipped,
//!          words split as sdssplitargs (quotes, \xHH escapes), the name lowercased
//!    directive   one argument unless MULTI_ARG; a MULTI_ARG one given as one quoted
//!                argument is split again ("save \"900 1 300 10\"")
//!    deprecated  list-max-ziplist-entries/value, lua-replicate-commands: skipped
//!    include     another file (glob: every match, none is fine), its own line numbers
//!    rename-command, user   recorded (rename list; the default user's password)
//!    loadmodule, module.configs, sentinel   refused: densekv has no modules, no Sentinel
//!  end of each text: the log file must open, hz is kept within 1-500
//! ```
//!
//! A bad line is fatal: redis-server's block on stderr (`*** FATAL CONFIG FILE ERROR (Redis
//! 7.0.15) ***`, the line number, `>>> 'line'`, the reason) and exit code 1, so the messages
//! operators and tools know keep meaning the same.

use super::{Config, SetContext, flag, lookup, set};
use std::io::Read as _;

/// A startup configuration error.
#[derive(Debug)]
pub enum ConfigError {
    /// Redis's FATAL CONFIG FILE ERROR block: the offending line (number, trimmed text) when
    /// there is one, and the reason.
    Fatal {
        line: Option<(usize, Vec<u8>)>,
        reason: String,
    },
    /// A file that cannot be read: Redis logs this as a warning before exiting.
    Unreadable(String),
}

impl ConfigError {
    /// The bytes redis-server writes to stderr (`Fatal`) or logs (`Unreadable`).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            ConfigError::Fatal { line, reason } => {
                let mut out = format!(
                    "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\n",
                    crate::REDIS_VERSION
                )
                .into_bytes();
                if let Some((number, text)) = line {
                    out.extend_from_slice(
                        format!("Reading the configuration file, at line {number}\n").as_bytes(),
                    );
                    out.extend_from_slice(b">>> '");
                    out.extend_from_slice(text);
                    out.extend_from_slice(b"'\n");
                }
                out.extend_from_slice(reason.as_bytes());
                out.push(b'\n');
                out
            }
            ConfigError::Unreadable(text) => text.clone().into_bytes(),
        }
    }

    /// The reason alone (for tests and logs).
    pub fn reason(&self) -> &str {
        match self {
            ConfigError::Fatal { reason, .. } | ConfigError::Unreadable(reason) => reason,
        }
    }

    /// The line number of the error, if it has one.
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::Fatal { line, .. } => line.as_ref().map(|(n, _)| *n),
            ConfigError::Unreadable(_) => None,
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_bytes()))
    }
}

impl std::error::Error for ConfigError {}

/// Includes nest at most this deep: Redis recurses without a bound, so a file that includes
/// itself exhausts its stack; here it is an error.
const INCLUDE_DEPTH_MAX: usize = 64;

/// The loader's state across nested includes.
struct Loader<'a> {
    config: &'a mut Config,
    /// Redis's `reading_config_file`: set while a text is read, and cleared when any text (an
    /// included one too) ends, so after an `include` later `save` lines replace the list rather
    /// than add to it, as in Redis.
    reading_file: bool,
    depth: usize,
}

/// Builds the configuration from `densekv [config-file] [--name value …] [-]`.
pub fn from_args<A: AsRef<[u8]>>(args: &[A]) -> Result<Config, ConfigError> {
    let mut config = Config::default();
    let args: Vec<&[u8]> = args.iter().map(AsRef::as_ref).collect();
    if args.is_empty() {
        return Ok(config);
    }
    let (file, rest) = match args[0].first() {
        Some(b'-') => (None, &args[..]),
        _ => (Some(args[0]), &args[1..]),
    };
    let (options, stdin) = options_text(rest, file.is_none());
    if let Some(file) = file {
        config.config_file = Some(absolute_path(&String::from_utf8_lossy(file)));
    }
    let mut text = match file {
        Some(file) => read_config_file(file)?,
        None => Vec::new(),
    };
    if stdin {
        crate::log::warning("Reading config from stdin");
        let _ = std::io::stdin().read_to_end(&mut text);
    }
    if !options.is_empty() {
        text.push(b'\n');
        text.extend_from_slice(&options);
    }
    let mut loader = Loader {
        config: &mut config,
        reading_file: false,
        depth: 0,
    };
    loader.load(&text)?;
    Ok(config)
}

/// The options text `main()` builds from the arguments after the file, and whether stdin is
/// read (`-` as the first or the last argument).
fn options_text(args: &[&[u8]], no_file: bool) -> (Vec<u8>, bool) {
    let mut options = Vec::new();
    let mut stdin = false;
    let mut handled_last = true;
    let last = args.len().saturating_sub(1);
    for (j, &arg) in args.iter().enumerate() {
        let first_of_all = no_file && j == 0;
        if arg == b"-" && (first_of_all || j == last) {
            stdin = true;
        } else if handled_last && arg.starts_with(b"--") {
            if !options.is_empty() {
                options.push(b'\n');
            }
            options.extend_from_slice(&arg[2..]);
            options.push(b' ');
            if split(arg).is_ok_and(|words| words.len() == 1) {
                // A name alone: its value follows, unless it is `--save` with nothing after it.
                handled_last = false;
                let next_is_option = args.get(j + 1).is_some_and(|a| a.starts_with(b"--"));
                if arg.eq_ignore_ascii_case(b"--save") && (j == last || next_is_option) {
                    options.extend_from_slice(b"\"\"");
                    handled_last = j != last;
                } else if arg.eq_ignore_ascii_case(b"--sentinel") && next_is_option {
                    handled_last = true;
                }
            } else {
                handled_last = true;
            }
        } else {
            options.extend_from_slice(super::value::repr(arg).as_bytes());
            options.push(b' ');
            handled_last = true;
        }
    }
    (options, stdin)
}

/// Redis's `getAbsolutePath`: a relative path joined to the working directory, leading `../`
/// folded into it.
fn absolute_path(path: &str) -> String {
    let path = path.trim_matches([' ', '\r', '\n', '\t']);
    if path.starts_with('/') {
        return path.to_string();
    }
    let Ok(cwd) = std::env::current_dir() else {
        return path.to_string();
    };
    let mut base = cwd.display().to_string();
    if !base.ends_with('/') {
        base.push('/');
    }
    let mut rel = path;
    while let Some(rest) = rel.strip_prefix("../") {
        rel = rest;
        if base.len() > 1 {
            let trimmed = &base[..base.len() - 1];
            base.truncate(trimmed.rfind('/').map_or(1, |i| i + 1));
        }
    }
    base + rel
}

fn split(line: &[u8]) -> Result<Vec<Vec<u8>>, ()> {
    let (mut bytes, mut spans) = (Vec::new(), Vec::new());
    resp::inline::split_args(line, &mut bytes, &mut spans).map_err(|_| ())?;
    Ok(spans.into_iter().map(|s| bytes[s].to_vec()).collect())
}

/// A file's text; a pattern (`*`, `?`, `[`) reads every match in order, and none is no text.
fn read_config_file(name: &[u8]) -> Result<Vec<u8>, ConfigError> {
    let paths = if name.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
        super::effects::glob(name)
    } else {
        vec![name.to_vec()]
    };
    let mut text = Vec::new();
    for path in paths {
        use std::os::unix::ffi::OsStrExt;
        let os = std::ffi::OsStr::from_bytes(&path);
        match std::fs::read(os) {
            Ok(bytes) => text.extend_from_slice(&bytes),
            Err(e) => {
                return Err(ConfigError::Unreadable(format!(
                    "Fatal error, can't open config file '{}': {}",
                    String::from_utf8_lossy(&path),
                    super::special::strerror(&e)
                )));
            }
        }
    }
    Ok(text)
}

/// Parses redis.conf text into `config` (as the lines of one file).
pub fn load_text(config: &mut Config, text: &str) -> Result<(), ConfigError> {
    Loader {
        config,
        reading_file: false,
        depth: 0,
    }
    .load(text.as_bytes())
}

/// What a line of the file is, once split.
enum Line {
    Skip,
    Words(Vec<Vec<u8>>),
}

impl Loader<'_> {
    /// `loadServerConfigFromString`.
    fn load(&mut self, text: &[u8]) -> Result<(), ConfigError> {
        self.reading_file = true;
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            let line = trim(raw);
            let fail = |reason: String| ConfigError::Fatal {
                line: Some((i + 1, line.to_vec())),
                reason,
            };
            let words = match classify(line) {
                Ok(Line::Skip) => continue,
                Ok(Line::Words(words)) => words,
                Err(reason) => return Err(fail(reason)),
            };
            match self.line(words) {
                Ok(()) => {}
                Err(LineError::Fatal(reason)) => return Err(fail(reason)),
                Err(LineError::Nested(e)) => return Err(e),
            }
        }
        self.finish()
    }

    /// The checks at the end of every text.
    fn finish(&mut self) -> Result<(), ConfigError> {
        let config = &mut *self.config;
        if !config.logfile.is_empty()
            && let Err(e) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&config.logfile)
        {
            return Err(ConfigError::Fatal {
                line: None,
                reason: format!("Can't open the log file: {}", super::special::strerror(&e)),
            });
        }
        if config.cluster_enabled && config.replicaof.is_some() {
            return Err(ConfigError::Fatal {
                line: None,
                reason: "replicaof directive not allowed in cluster mode".into(),
            });
        }
        config.hz = config.hz.clamp(1, 500);
        self.reading_file = false;
        Ok(())
    }

    /// One line's words: a directive or one of the file-only statements.
    fn line(&mut self, mut words: Vec<Vec<u8>>) -> Result<(), LineError> {
        words[0].make_ascii_lowercase();
        if let Some(named) = lookup(&words[0]) {
            let d = named.directive;
            let multi = d.has(flag::MULTI_ARG);
            if !multi && words.len() != 2 {
                return Err(LineError::Fatal("wrong number of arguments".into()));
            }
            // A multi-argument directive given as one (quoted) argument is split again, unless
            // it is empty (`save ""`).
            let args = if multi && words.len() == 2 && !words[1].is_empty() {
                split(&words[1]).unwrap_or_default()
            } else {
                words.split_off(1)
            };
            let cx = SetContext {
                reading_file: self.reading_file,
            };
            return set(self.config, d, &args, cx)
                .map(|_| ())
                .map_err(LineError::Fatal);
        }
        let argc = words.len();
        let name = words[0].as_slice();
        let deprecated = [
            &b"list-max-ziplist-entries"[..],
            b"list-max-ziplist-value",
            b"lua-replicate-commands",
        ];
        if deprecated.contains(&name) && argc == 2 {
            return Ok(());
        }
        match name {
            b"include" if argc == 2 => self.include(&words[1]),
            b"rename-command" if argc == 3 => {
                rename(self.config, &words[1], &words[2]).map_err(LineError::Fatal)
            }
            b"user" if argc >= 2 => {
                super::user::apply(self.config, &words[1..]).map_err(LineError::Fatal)
            }
            b"loadmodule" if argc >= 2 => Err(LineError::Fatal(
                "densekv does not support modules: loadmodule is refused".into(),
            )),
            _ if name.contains(&b'.') => Err(LineError::Fatal(if argc < 2 {
                "Module config specified without value".into()
            } else {
                "densekv does not support modules: module configuration is refused".into()
            })),
            b"sentinel" if argc == 1 => Ok(()),
            b"sentinel" => Err(LineError::Fatal(
                "sentinel directive while not in sentinel mode".into(),
            )),
            _ => Err(LineError::Fatal(
                "Bad directive or wrong number of arguments".into(),
            )),
        }
    }

    /// `include <file-or-pattern>`: the file is read as a text of its own (its line numbers in
    /// errors), right here in the order of the including file.
    fn include(&mut self, file: &[u8]) -> Result<(), LineError> {
        if self.depth >= INCLUDE_DEPTH_MAX {
            return Err(LineError::Fatal(format!(
                "include nested deeper than {INCLUDE_DEPTH_MAX} files"
            )));
        }
        let text = read_config_file(file).map_err(LineError::Nested)?;
        self.depth += 1;
        let result = self.load(&text);
        self.depth -= 1;
        result.map_err(LineError::Nested)
    }
}

enum LineError {
    /// This line is wrong: reported with its number and text.
    Fatal(String),
    /// An included file failed: its own error, as it is.
    Nested(ConfigError),
}

/// Redis's `sdstrim(line, " \t\r\n")` (loading and CONFIG REWRITE trim lines alike).
pub(super) use resp::inline::trim_blanks as trim;

fn classify(line: &[u8]) -> Result<Line, String> {
    if line.is_empty() || line[0] == b'#' {
        return Ok(Line::Skip);
    }
    let words = split(line).map_err(|()| "Unbalanced quotes in configuration line".to_string())?;
    Ok(if words.is_empty() {
        Line::Skip
    } else {
        Line::Words(words)
    })
}

/// `rename-command <from> <to>`: checked against Redis 7.0's command names (and the renames
/// before it) with Redis's errors; recorded for the command table.
fn rename(config: &mut Config, from: &[u8], to: &[u8]) -> Result<(), String> {
    let mut names: Vec<String> = REDIS_COMMANDS.iter().map(|s| (*s).to_string()).collect();
    for (old, new) in &config.renames {
        names.retain(|n| !n.eq_ignore_ascii_case(old));
        if !new.is_empty() {
            names.push(new.clone());
        }
    }
    let from = String::from_utf8_lossy(from).into_owned();
    let to = String::from_utf8_lossy(to).into_owned();
    if !names.iter().any(|n| n.eq_ignore_ascii_case(&from)) {
        return Err("No such command in rename-command".into());
    }
    names.retain(|n| !n.eq_ignore_ascii_case(&from));
    if !to.is_empty() && names.iter().any(|n| n.eq_ignore_ascii_case(&to)) {
        return Err("Target command name already exists".into());
    }
    config.renames.push((from, to));
    Ok(())
}

/// Redis 7.0's top-level commands (src/commands.c, without the Sentinel-only `sentinel`):
/// `rename-command` accepts any of them, so a file written for redis-server loads here even
/// when it renames a command densekv does not have yet.
const REDIS_COMMANDS: &[&str] = &[
    "bitcount",
    "bitfield",
    "bitfield_ro",
    "bitop",
    "bitpos",
    "getbit",
    "setbit",
    "asking",
    "cluster",
    "readonly",
    "readwrite",
    "auth",
    "client",
    "echo",
    "hello",
    "ping",
    "quit",
    "reset",
    "select",
    "copy",
    "del",
    "dump",
    "exists",
    "expire",
    "expireat",
    "expiretime",
    "keys",
    "migrate",
    "move",
    "object",
    "persist",
    "pexpire",
    "pexpireat",
    "pexpiretime",
    "pttl",
    "randomkey",
    "rename",
    "renamenx",
    "restore",
    "scan",
    "sort",
    "sort_ro",
    "touch",
    "ttl",
    "type",
    "unlink",
    "wait",
    "geoadd",
    "geodist",
    "geohash",
    "geopos",
    "georadius",
    "georadiusbymember",
    "georadiusbymember_ro",
    "georadius_ro",
    "geosearch",
    "geosearchstore",
    "hdel",
    "hexists",
    "hget",
    "hgetall",
    "hincrby",
    "hincrbyfloat",
    "hkeys",
    "hlen",
    "hmget",
    "hmset",
    "hrandfield",
    "hscan",
    "hset",
    "hsetnx",
    "hstrlen",
    "hvals",
    "pfadd",
    "pfcount",
    "pfdebug",
    "pfmerge",
    "pfselftest",
    "blmove",
    "blmpop",
    "blpop",
    "brpop",
    "brpoplpush",
    "lindex",
    "linsert",
    "llen",
    "lmove",
    "lmpop",
    "lpop",
    "lpos",
    "lpush",
    "lpushx",
    "lrange",
    "lrem",
    "lset",
    "ltrim",
    "rpop",
    "rpoplpush",
    "rpush",
    "rpushx",
    "psubscribe",
    "publish",
    "pubsub",
    "punsubscribe",
    "spublish",
    "ssubscribe",
    "subscribe",
    "sunsubscribe",
    "unsubscribe",
    "eval",
    "evalsha",
    "evalsha_ro",
    "eval_ro",
    "fcall",
    "fcall_ro",
    "function",
    "script",
    "acl",
    "bgrewriteaof",
    "bgsave",
    "command",
    "config",
    "dbsize",
    "debug",
    "failover",
    "flushall",
    "flushdb",
    "info",
    "lastsave",
    "latency",
    "lolwut",
    "memory",
    "module",
    "monitor",
    "psync",
    "replconf",
    "replicaof",
    "restore-asking",
    "role",
    "save",
    "shutdown",
    "slaveof",
    "slowlog",
    "swapdb",
    "sync",
    "time",
    "sadd",
    "scard",
    "sdiff",
    "sdiffstore",
    "sinter",
    "sintercard",
    "sinterstore",
    "sismember",
    "smembers",
    "smismember",
    "smove",
    "spop",
    "srandmember",
    "srem",
    "sscan",
    "sunion",
    "sunionstore",
    "bzmpop",
    "bzpopmax",
    "bzpopmin",
    "zadd",
    "zcard",
    "zcount",
    "zdiff",
    "zdiffstore",
    "zincrby",
    "zinter",
    "zintercard",
    "zinterstore",
    "zlexcount",
    "zmpop",
    "zmscore",
    "zpopmax",
    "zpopmin",
    "zrandmember",
    "zrange",
    "zrangebylex",
    "zrangebyscore",
    "zrangestore",
    "zrank",
    "zrem",
    "zremrangebylex",
    "zremrangebyrank",
    "zremrangebyscore",
    "zrevrange",
    "zrevrangebylex",
    "zrevrangebyscore",
    "zrevrank",
    "zscan",
    "zscore",
    "zunion",
    "zunionstore",
    "xack",
    "xadd",
    "xautoclaim",
    "xclaim",
    "xdel",
    "xgroup",
    "xinfo",
    "xlen",
    "xpending",
    "xrange",
    "xread",
    "xreadgroup",
    "xrevrange",
    "xsetid",
    "xtrim",
    "append",
    "decr",
    "decrby",
    "get",
    "getdel",
    "getex",
    "getrange",
    "getset",
    "incr",
    "incrby",
    "incrbyfloat",
    "lcs",
    "mget",
    "mset",
    "msetnx",
    "psetex",
    "set",
    "setex",
    "setnx",
    "setrange",
    "strlen",
    "substr",
    "discard",
    "exec",
    "multi",
    "unwatch",
    "watch",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
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
    fn options_become_lines_as_in_redis_main() {
        let (text, stdin) = options_text(
            &[
                &b"--port"[..],
                b"7000",
                b"--save",
                b"--loglevel",
                b"verbose",
                b"-",
            ],
            true,
        );
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "port \"7000\" \nsave \"\"\nloglevel \"verbose\" "
        );
        assert!(stdin);
        let (text, _) = options_text(&[&b"--maxmemory"[..], b"--5"], true);
        assert_eq!(String::from_utf8(text).unwrap(), "maxmemory \"--5\" ");
        let (text, _) = options_text(&[&b"--port 7000"[..], b"--save"], false);
        assert_eq!(String::from_utf8(text).unwrap(), "port 7000 \nsave \"\"");
    }

    #[test]
    fn errors_name_the_line_and_the_reason() {
        let e = from_args(&args(&["--port", "abc"])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line 2\n>>> 'port \"abc\"'\nargument couldn't be parsed into an integer\n"
        );
        let e = from_args(&args(&["--nosuch", "1"])).unwrap_err();
        assert_eq!(e.reason(), "Bad directive or wrong number of arguments");
        let mut c = Config::default();
        let e = load_text(&mut c, "port 1\n\n  bogus  \n").unwrap_err();
        assert_eq!(e.line(), Some(3));
        assert!(e.to_string().contains(">>> 'bogus'"), "{e}");
        let e = load_text(&mut c, "requirepass \"x\n").unwrap_err();
        assert_eq!(e.reason(), "Unbalanced quotes in configuration line");
        let e = load_text(&mut c, "port 1 2\n").unwrap_err();
        assert_eq!(e.reason(), "wrong number of arguments");
    }

    #[test]
    fn config_file_syntax() {
        let mut c = Config::default();
        load_text(
            &mut c,
            "# comment\nPORT 7001\nrequirepass \"p w\"\nclient-output-buffer-limit normal 1mb 512kb 10\nsave \"100 1 200 2\"\n",
        )
        .unwrap();
        assert_eq!(c.port, 7001);
        assert_eq!(c.requirepass.as_deref(), Some(&b"p w"[..]));
        assert_eq!(c.output_limit_normal, (1 << 20, 512 << 10, 10));
        assert_eq!(c.save, vec![(100, 1), (200, 2)]);
    }

    #[test]
    fn save_lines_accumulate_in_a_file() {
        let mut c = Config::default();
        load_text(&mut c, "save 1 1\nsave 2 2\n").unwrap();
        assert_eq!(c.save, vec![(1, 1), (2, 2)]);
        let mut c = Config::default();
        load_text(&mut c, "save \"\"\nsave 3 3\n").unwrap();
        assert_eq!(c.save, vec![(3, 3)]);
        let mut c = Config::default();
        load_text(&mut c, "hz 1000\n").unwrap();
        assert_eq!(c.hz, 500);
    }

    #[test]
    fn deprecated_and_file_only_directives() {
        let mut c = Config::default();
        load_text(
            &mut c,
            "list-max-ziplist-entries 512\nlua-replicate-commands yes\nrename-command KEYS \"\"\nrename-command get fetch\nsentinel\n",
        )
        .unwrap();
        assert_eq!(
            c.renames,
            vec![
                ("KEYS".into(), String::new()),
                ("get".into(), "fetch".into())
            ]
        );
        let e = load_text(&mut c, "rename-command get x\n").unwrap_err();
        assert_eq!(e.reason(), "No such command in rename-command");
        let e = load_text(&mut c, "rename-command set fetch\n").unwrap_err();
        assert_eq!(e.reason(), "Target command name already exists");
        let e = load_text(&mut c, "loadmodule /x.so\n").unwrap_err();
        assert!(e.reason().contains("modules"), "{e}");
        let e = load_text(&mut c, "foo.bar\n").unwrap_err();
        assert_eq!(e.reason(), "Module config specified without value");
    }

    #[test]
    fn refused_values_name_the_feature() {
        let mut c = Config::default();
        load_text(&mut c, "cluster-enabled no\ntls-port 0\nslaveof no one\n").unwrap();
        let e = load_text(&mut c, "replicaof 127.0.0.1 6380\n").unwrap_err();
        assert_eq!(
            e.reason(),
            "densekv does not support replication: 'replicaof' must be left unset"
        );
        let e = load_text(&mut c, "cluster-enabled yes\n").unwrap_err();
        assert_eq!(
            e.reason(),
            "densekv does not support cluster mode: 'cluster-enabled' must be 'no'"
        );
    }

    #[test]
    fn absolute_paths_as_redis() {
        let cwd = std::env::current_dir().unwrap().display().to_string();
        assert_eq!(absolute_path("/etc/x.conf"), "/etc/x.conf");
        assert_eq!(absolute_path("x.conf"), format!("{cwd}/x.conf"));
        let parent = std::path::Path::new(&cwd)
            .parent()
            .unwrap()
            .display()
            .to_string();
        assert_eq!(absolute_path("../x.conf"), format!("{parent}/x.conf"));
    }
}
