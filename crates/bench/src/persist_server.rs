//! What the persist and aof suites' measurements share: a server in a temporary directory of its
//! own, its N keys, a pipelined overwrite of them, and the state of its background job (BGSAVE
//! or BGREWRITEAOF).
//!
//! ```text
//! <binary> --port P --bind 127.0.0.1 --save "" --appendonly no
//!          --dir /tmp/densekv-bench-persist-<pid>-<label>-<n> --enable-debug-command yes
//!          [--appendonly yes --appendfsync <policy>: the aof suite's servers]
//! DEBUG POPULATE N key 16        keys key:0 … key:<N-1>, values "value:<i>" padded to 16 bytes
//! SET <key(i)> <value(i)>        for every i, 1000 commands per write, every reply +OK
//! INFO persistence               rdb_bgsave_in_progress:0|1
//!                                aof_rewrite_in_progress:0|1, aof_rewrite_scheduled:0|1
//! ```
//!
//! The servers are [`ServerProcess`]es (`server_proc.rs`): started on ephemeral ports, stopped
//! by pid. Only `--save ""` keeps them from saving on their own, so nothing but the suites'
//! SAVE, BGSAVE and BGREWRITEAOF (and, with the AOF on, the appends) writes a file, and each
//! writes it into the directory the suite removes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::server_proc::{REPLY_TIMEOUT, ServerKind, ServerProcess, info_field};
use crate::server_resp::{Connection, Reply, encode};

/// Commands per pipelined write of the overwrite and the loader.
pub const BATCH_LEN: u64 = 1000;
/// Between two looks at `INFO persistence` (and two memory samples).
pub const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// The longest a background save may run before the measurement gives up on it.
pub const SAVE_LIMIT: Duration = Duration::from_secs(600);

/// Temporary directories made by this process so far, to name the next one.
static DIRS_MADE: AtomicUsize = AtomicUsize::new(0);

/// A directory under the system's temporary directory, removed with everything in it on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Makes `densekv-bench-persist-<pid>-<label>-<count>`.
    pub fn new(label: &str) -> Result<Self, String> {
        let count = DIRS_MADE.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "densekv-bench-persist-{}-{label}-{count}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The RDB file a server started in this directory saves to (`dbfilename`'s default).
    pub fn dump(&self) -> PathBuf {
        self.path.join("dump.rdb")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Starts `kind` working in `dir` with DEBUG enabled (and, from `server_proc`, no save points
/// and no AOF).
pub fn start_in(kind: ServerKind, binary: &Path, dir: &TempDir) -> Result<ServerProcess, String> {
    start_in_with(kind, binary, dir, &[])
}

/// [`start_in`] with `options` last on the command line (`--appendonly yes`, ...), where they
/// override the defaults before them.
pub fn start_in_with(
    kind: ServerKind,
    binary: &Path,
    dir: &TempDir,
    options: &[&str],
) -> Result<ServerProcess, String> {
    let mut extra = vec![
        "--dir".to_owned(),
        dir.path().display().to_string(),
        "--enable-debug-command".to_owned(),
        "yes".to_owned(),
    ];
    extra.extend(options.iter().map(|o| (*o).to_owned()));
    ServerProcess::start_with(kind, binary, &extra)
}

/// A connection to `port` whose replies may take [`REPLY_TIMEOUT`].
pub fn connect(port: u16) -> Result<Connection, String> {
    Connection::open(port, REPLY_TIMEOUT).map_err(|e| format!("cannot connect: {e}"))
}

/// Sends `args` and checks that the reply is the status `want`.
pub fn expect_status(connection: &mut Connection, args: &[&str], want: &str) -> Result<(), String> {
    match connection.command(args) {
        Ok(Reply::Simple(s)) if s == want => Ok(()),
        Ok(reply) => Err(format!("{}: {reply}", args.join(" "))),
        Err(e) => Err(format!("{}: {e}", args.join(" "))),
    }
}

/// `DEBUG POPULATE n key 16`: the suite's dataset.
pub fn populate(connection: &mut Connection, n: u64) -> Result<(), String> {
    expect_status(
        connection,
        &["DEBUG", "POPULATE", &n.to_string(), "key", "16"],
        "OK",
    )
}

/// `CONFIG SET rdb-key-save-delay <delay>`.
pub fn set_save_delay(connection: &mut Connection, delay: i32) -> Result<(), String> {
    expect_status(
        connection,
        &["CONFIG", "SET", "rdb-key-save-delay", &delay.to_string()],
        "OK",
    )
}

/// `BGSAVE`, which both servers answer `+Background saving started`.
pub fn bgsave(connection: &mut Connection) -> Result<(), String> {
    BackgroundJob::Bgsave.start(connection)
}

/// Whether a background save is running (`rdb_bgsave_in_progress:1`). redis-server clears it
/// when its cron reaps the child, up to 100 ms after the child exits.
pub fn save_in_progress(connection: &mut Connection) -> Result<bool, String> {
    BackgroundJob::Bgsave.in_progress(connection)
}

/// The background job a memory measurement runs (`persist_bgsave.rs`): the persist suite's
/// BGSAVE, or the aof suite's BGREWRITEAOF. In redis-server both fork a child that writes an
/// RDB body (the rewrite's base, with `aof-use-rdb-preamble yes`, both servers' default); in
/// densekv both are the same snapshot walk (`bgsave.rs`), and both honour `rdb-key-save-delay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackgroundJob {
    Bgsave,
    Bgrewriteaof,
}

impl BackgroundJob {
    /// `Err` once the job, begun at `started`, has run longer than [`SAVE_LIMIT`].
    pub fn within_limit(self, started: Instant) -> Result<(), String> {
        if started.elapsed() > SAVE_LIMIT {
            return Err(format!(
                "the background {} still runs after {} s",
                self.name(),
                SAVE_LIMIT.as_secs()
            ));
        }
        Ok(())
    }

    /// The command, lower-case.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bgsave => "bgsave",
            Self::Bgrewriteaof => "bgrewriteaof",
        }
    }

    /// Server options the job needs on top of [`start_in`]'s: a rewrite needs the AOF on.
    pub fn server_options(self) -> &'static [&'static str] {
        match self {
            Self::Bgsave => &[],
            Self::Bgrewriteaof => &["--appendonly", "yes"],
        }
    }

    /// Sends the command and checks the reply both servers give when the job starts at once.
    pub fn start(self, connection: &mut Connection) -> Result<(), String> {
        match self {
            Self::Bgsave => expect_status(connection, &["BGSAVE"], "Background saving started"),
            Self::Bgrewriteaof => expect_status(
                connection,
                &["BGREWRITEAOF"],
                "Background append only file rewriting started",
            ),
        }
    }

    /// Whether the job runs or waits to: `rdb_bgsave_in_progress:1` for a save;
    /// `aof_rewrite_in_progress:1` or `aof_rewrite_scheduled:1` for a rewrite. redis-server
    /// clears either when its cron reaps the child, up to 100 ms after the child exits.
    pub fn in_progress(self, connection: &mut Connection) -> Result<bool, String> {
        let info = info_persistence(connection)?;
        let fields: &[&str] = match self {
            Self::Bgsave => &["rdb_bgsave_in_progress"],
            Self::Bgrewriteaof => &["aof_rewrite_in_progress", "aof_rewrite_scheduled"],
        };
        let mut running = false;
        for field in fields {
            let value = info_field(&info, field)
                .ok_or_else(|| format!("INFO persistence has no {field}"))?;
            running |= value == 1;
        }
        Ok(running)
    }
}

/// The text of `INFO persistence`.
pub fn info_persistence(connection: &mut Connection) -> Result<String, String> {
    match connection.command(&["INFO", "persistence"]) {
        Ok(Reply::Bulk(Some(text))) => Ok(String::from_utf8_lossy(&text).into_owned()),
        Ok(reply) => Err(format!("INFO persistence: {reply}")),
        Err(e) => Err(format!("INFO persistence: {e}")),
    }
}

/// Waits, at most [`SAVE_LIMIT`], until no background save is running.
pub fn wait_saved(connection: &mut Connection) -> Result<(), String> {
    wait_done(connection, BackgroundJob::Bgsave)
}

/// Waits, at most [`SAVE_LIMIT`], until `job` neither runs nor waits to, looking every
/// [`POLL_INTERVAL`].
pub fn wait_done(connection: &mut Connection, job: BackgroundJob) -> Result<(), String> {
    let started = Instant::now();
    while job.in_progress(connection)? {
        job.within_limit(started)?;
        thread::sleep(POLL_INTERVAL);
    }
    Ok(())
}

/// `DBSIZE`.
pub fn dbsize(connection: &mut Connection) -> Result<u64, String> {
    match connection.command(&["DBSIZE"]) {
        Ok(Reply::Integer(n)) => u64::try_from(n).map_err(|_| format!("DBSIZE: {n}")),
        Ok(reply) => Err(format!("DBSIZE: {reply}")),
        Err(e) => Err(format!("DBSIZE: {e}")),
    }
}

/// The key `DEBUG POPULATE n key` made for `index`.
pub fn populated_key(index: u64) -> String {
    format!("key:{index}")
}

/// The key redis-benchmark's `-r` makes for `index` (`key:__rand_int__`, 12 digits).
pub fn benchmark_key(index: u64) -> String {
    format!("key:{index:012}")
}

/// A 16-byte value for `index` that no DEBUG POPULATE value equals (`new:000000000042`).
pub fn new_value(index: u64) -> String {
    format!("new:{index:012}")
}

/// `SET key(i) value(i)` for every i in `0..n` over one new connection to `port`, [`BATCH_LEN`]
/// commands per write, every reply checked. `before_last` runs on the connection just before
/// the last batch is sent.
pub fn set_all(
    port: u16,
    n: u64,
    key: fn(u64) -> String,
    value: fn(u64) -> String,
    mut before_last: impl FnMut(&mut Connection) -> Result<(), String>,
) -> Result<(), String> {
    let mut connection = connect(port)?;
    let mut encoded = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + BATCH_LEN).min(n);
        if end == n {
            before_last(&mut connection)?;
        }
        encoded.clear();
        for index in start..end {
            encode(&["SET", &key(index), &value(index)], &mut encoded);
        }
        let count = (end - start) as usize;
        let replies = connection
            .pipeline(&encoded, count)
            .map_err(|e| format!("SET batch at {start}: {e}"))?;
        if let Some(bad) = replies.iter().find(|r| **r != Reply::Simple("OK".into())) {
            return Err(format!("SET batch at {start}: {bad}"));
        }
        start = end;
    }
    Ok(())
}

/// The last `DB loaded from disk: X seconds` of a server log (redis-server's line; densekv logs
/// the same one).
pub fn loaded_secs(log: &str) -> Option<f64> {
    logged_secs(log, "DB loaded from disk")
}

/// The X of the last log line with `marker` followed by `…: X seconds`: `DB loaded from disk`,
/// and for an AOF `DB loaded from base file`, `DB loaded from incr file` (each followed by the
/// file's name) and `DB loaded from append only file`, all redis-server's lines that densekv
/// logs alike.
pub fn logged_secs(log: &str, marker: &str) -> Option<f64> {
    log.lines().rev().find_map(|line| {
        let (_, rest) = line.split_once(marker)?;
        let (_, secs) = rest.rsplit_once(": ")?;
        secs.trim_end()
            .strip_suffix(" seconds")?
            .trim()
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::{TempDir, benchmark_key, loaded_secs, logged_secs, new_value, populated_key};

    #[test]
    fn keys_and_values_have_the_shapes_the_servers_use() {
        assert_eq!(populated_key(42), "key:42");
        assert_eq!(benchmark_key(42), "key:000000000042");
        assert_eq!(new_value(999_999).len(), 16);
        assert_eq!(new_value(0), "new:000000000000");
    }

    #[test]
    fn loaded_seconds_come_from_the_last_load_line() {
        let log = "1:M 01 Dec 2026 10:00:00.000 * DB loaded from disk: 0.500 seconds\n\
                   1:M 01 Dec 2026 10:00:01.000 * Ready to accept connections\n\
                   2:M 01 Dec 2026 10:00:02.000 * DB loaded from disk: 1.250 seconds\n";
        assert_eq!(loaded_secs(log), Some(1.25));
        assert_eq!(loaded_secs("* Ready to accept connections\n"), None);
    }

    #[test]
    fn aof_load_seconds_come_from_their_own_lines() {
        let log = "1:M * DB loaded from base file appendonly.aof.1.base.rdb: 0.512 seconds\n\
                   1:M * DB loaded from incr file appendonly.aof.1.incr.aof: 0.250 seconds\n\
                   1:M * DB loaded from append only file: 0.771 seconds\n";
        assert_eq!(logged_secs(log, "DB loaded from base file"), Some(0.512));
        assert_eq!(logged_secs(log, "DB loaded from incr file"), Some(0.25));
        assert_eq!(
            logged_secs(log, "DB loaded from append only file"),
            Some(0.771)
        );
        assert_eq!(loaded_secs(log), None);
    }

    #[test]
    fn temp_dirs_are_removed_on_drop() {
        let dir = TempDir::new("test").unwrap();
        let path = dir.path().to_path_buf();
        std::fs::write(dir.dump(), b"x").unwrap();
        assert!(path.is_dir());
        drop(dir);
        assert!(!path.exists());
    }
}
