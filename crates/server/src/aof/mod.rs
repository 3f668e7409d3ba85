//! The append-only file of a running server (Redis's `aof.c`): every write command's effects
//! (`propagate.rs`) appended to the current incremental file of Redis 7's multi-part layout,
//! written and synced as `appendfsync` says before the replies that depend on them leave.
//!
//! ```text
//!  command (shards held) ─ Aof::append ─▶ Feed.buf  (SELECT when the database changes,
//!                                                    #TS:<secs> with aof-timestamp-enabled,
//!                                                    MULTI … EXEC around a block)
//!        stream offsets: appended ≥ written ≥ synced (bytes since start, across files)
//!  end of an I/O thread's turn, before its replies (`commit`, group commit):
//!     always     write(Feed.buf) + fdatasync, once for everything every thread appended so
//!                far; a thread whose offset another's sync covered just sends
//!     everysec   write(Feed.buf); the cron asks the fsync thread for an fdatasync once a
//!                second; while one runs, writes wait up to 2 s, then go anyway
//!                (`aof_delayed_fsync`)
//!     no         write(Feed.buf); the kernel syncs when it likes
//!  appenddirname/ ── files.rs: manifest, base (rewrite.rs), incremental files
//! ```
//! Invariants: `synced ≤ written ≤ appended`; a reply that follows a write under `always` leaves
//! only once `synced` covers the end of that write (`propagate::appended_here`); Feed is locked
//! only while a command holds its shards or while a writer takes the buffer, never around I/O
//! that waits on a shard. Lock order: shards, then `feed`; `out` before `feed`.
//!
//! A write error is Redis's: under `always` the server logs it and exits (an acknowledged
//! write would otherwise be lost); otherwise the bytes stay buffered, writes are refused with
//! `-MISCONF Errors writing to the AOF file: …` (`dispatch.rs`), and the cron retries.

pub mod files;
pub mod load;
pub mod rewrite;

use crate::server::{Server, unix_ms};
use parking_lot::Mutex;
use std::fs::File;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// `appendfsync`, as the configuration encodes it.
pub const FSYNC_NO: i32 = 0;
pub const FSYNC_ALWAYS: i32 = 1;
pub const FSYNC_EVERYSEC: i32 = 2;

/// How long `everysec` lets writes wait for a running fsync (Redis's 2 seconds).
const FSYNC_WAIT_MAX: Duration = Duration::from_secs(2);

/// Hands the fsync thread a file to sync and the stream offset that sync covers.
type FsyncSender = std::sync::mpsc::Sender<(Arc<File>, u64)>;

/// What is appended and not yet written.
#[derive(Debug, Default)]
struct Feed {
    buf: Vec<u8>,
    /// The database the file's last SELECT chose (`None`: the next command writes one).
    selected: Option<usize>,
    /// The database in effect where `buf` starts (`None`: `buf` starts with a SELECT).
    buf_db: Option<usize>,
    /// Bytes appended since start.
    appended: u64,
    /// Unix seconds of the last `#TS:` annotation.
    last_ts_secs: u64,
}

/// The file being appended to.
#[derive(Debug, Default)]
struct Out {
    file: Option<Arc<File>>,
    /// Stream offset at the end of what was handed to the kernel.
    written: u64,
    /// When a write first waited for a running fsync (`everysec`).
    postponed_since: Option<Instant>,
    /// Unix ms of the last fsync asked for (`everysec`).
    last_fsync_ms: u64,
    /// Bytes of whole writes in the file: a failed write is cut back to this.
    file_len: u64,
}

/// The append-only file's state (`Server::aof`).
#[derive(Debug)]
pub struct Aof {
    /// Commands are appended: `appendonly yes`, or waiting for the rewrite that turns it on.
    feeding: AtomicBool,
    /// `appendfsync`, cached for the hot path.
    policy: AtomicI32,
    /// `aof-timestamp-enabled`, cached.
    timestamps: AtomicBool,
    /// `no-appendfsync-on-rewrite`, cached, and whether a background job (a save or a
    /// rewrite: Redis's child) runs: together they skip the fsync.
    no_fsync_on_rewrite: AtomicBool,
    job_running: AtomicBool,
    feed: Mutex<Feed>,
    out: Mutex<Out>,
    written: AtomicU64,
    synced: Arc<AtomicU64>,
    /// An fsync runs in the background (`aof_pending_bio_fsync`).
    fsync_running: Arc<AtomicBool>,
    fsync_thread: Mutex<Option<FsyncSender>>,
    pub delayed_fsync: AtomicU64,
    /// The last write failed: its error (`aof_last_write_status:err`).
    pub write_error: Mutex<Option<String>>,
    pub write_failed: AtomicBool,
    /// Bytes in the current files (`aof_current_size`) and the base at the last rewrite.
    pub current_size: AtomicU64,
    pub base_size: AtomicU64,
    /// The layout and the rewrite's status (`files.rs`, `rewrite.rs`).
    pub files: Mutex<files::Layout>,
    pub rewrite: rewrite::Status,
}

impl Aof {
    pub fn new(config: &crate::Config) -> Aof {
        Aof {
            feeding: AtomicBool::new(false),
            policy: AtomicI32::new(config.appendfsync),
            timestamps: AtomicBool::new(config.aof_timestamp_enabled),
            no_fsync_on_rewrite: AtomicBool::new(config.no_appendfsync_on_rewrite),
            job_running: AtomicBool::new(false),
            feed: Mutex::new(Feed::default()),
            out: Mutex::new(Out::default()),
            written: AtomicU64::new(0),
            synced: Arc::new(AtomicU64::new(0)),
            fsync_running: Arc::new(AtomicBool::new(false)),
            fsync_thread: Mutex::new(None),
            delayed_fsync: AtomicU64::new(0),
            write_error: Mutex::new(None),
            write_failed: AtomicBool::new(false),
            current_size: AtomicU64::new(0),
            base_size: AtomicU64::new(0),
            files: Mutex::new(files::Layout::new(config)),
            rewrite: rewrite::Status::default(),
        }
    }

    /// Whether commands are appended now.
    #[inline]
    pub fn feeding(&self) -> bool {
        self.feeding.load(Ordering::Relaxed)
    }

    /// The configuration changed: the cached `appendfsync` and `aof-timestamp-enabled`.
    pub fn configure(&self, config: &crate::Config) {
        self.policy.store(config.appendfsync, Ordering::Relaxed);
        self.timestamps
            .store(config.aof_timestamp_enabled, Ordering::Relaxed);
        self.no_fsync_on_rewrite
            .store(config.no_appendfsync_on_rewrite, Ordering::Relaxed);
    }

    /// A background save or rewrite started (`true`) or ended.
    pub fn set_job_running(&self, running: bool) {
        self.job_running.store(running, Ordering::Relaxed);
    }

    /// `no-appendfsync-on-rewrite` holds the fsync back now.
    fn fsync_held_back(&self) -> bool {
        self.no_fsync_on_rewrite.load(Ordering::Relaxed) && self.job_running.load(Ordering::Relaxed)
    }

    /// Appends `ops` (database, encoded command), as one MULTI … EXEC block when `wrap`;
    /// returns the stream offset at their end.
    pub fn append(&self, ops: &[(usize, Vec<u8>)], wrap: bool) -> u64 {
        let mut feed = self.feed.lock();
        let start = feed.buf.len();
        if self.timestamps.load(Ordering::Relaxed) {
            annotate(&mut feed);
        }
        if wrap {
            select(&mut feed, ops[0].0);
            feed.buf.extend_from_slice(b"*1\r\n$5\r\nMULTI\r\n");
        }
        for (db, bytes) in ops {
            select(&mut feed, *db);
            feed.buf.extend_from_slice(bytes);
        }
        if wrap {
            feed.buf.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
        }
        feed.appended += (feed.buf.len() - start) as u64;
        feed.appended
    }

    /// The stream offset of everything appended so far.
    pub fn appended(&self) -> u64 {
        self.feed.lock().appended
    }

    /// Before an I/O thread sends replies: what was appended up to `target` is written, and
    /// under `always` synced (group commit: one write and one fdatasync cover every thread's
    /// appends so far). Returns at once when that is so already.
    pub fn commit(&self, target: u64) {
        let policy = self.policy.load(Ordering::Relaxed);
        let policy = if policy == FSYNC_ALWAYS && self.fsync_held_back() {
            FSYNC_NO
        } else {
            policy
        };
        let done = |aof: &Aof| {
            aof.written.load(Ordering::Acquire) >= target
                && (policy != FSYNC_ALWAYS || aof.synced.load(Ordering::Acquire) >= target)
        };
        if done(self) {
            return;
        }
        let mut out = self.out.lock();
        if done(self) {
            return;
        }
        self.write_out(&mut out, policy);
    }

    /// Hands the buffer to the kernel (and syncs under `always`), with `out` held.
    fn write_out(&self, out: &mut Out, policy: i32) {
        if policy == FSYNC_EVERYSEC && self.postpone(out) {
            return;
        }
        let Some(file) = out.file.clone() else {
            return;
        };
        let (buf, buf_db, end) = {
            let mut feed = self.feed.lock();
            let selected = feed.selected;
            let buf_db = std::mem::replace(&mut feed.buf_db, selected);
            (std::mem::take(&mut feed.buf), buf_db, feed.appended)
        };
        if !buf.is_empty() {
            if let Err(e) = (&*file).write_all(&buf) {
                self.write_failed(out, &buf, buf_db, &e, policy);
                return;
            }
            out.file_len += buf.len() as u64;
            self.current_size
                .fetch_add(buf.len() as u64, Ordering::Relaxed);
            self.recovered();
        }
        out.written = end;
        self.written.store(end, Ordering::Release);
        if policy == FSYNC_ALWAYS {
            if let Err(e) = file.sync_data() {
                crate::log::warning(&format!(
                    "Can't persist the AOF file when the AOF fsync policy is 'always': {e}. Exiting..."
                ));
                std::process::exit(1);
            }
            self.synced.store(end, Ordering::Release);
        }
    }

    /// `everysec`: true while a write should wait for the fsync that is running (at most
    /// `FSYNC_WAIT_MAX`, then it goes and `aof_delayed_fsync` counts it).
    fn postpone(&self, out: &mut Out) -> bool {
        if !self.fsync_running.load(Ordering::Acquire) {
            out.postponed_since = None;
            return false;
        }
        let since = *out.postponed_since.get_or_insert_with(Instant::now);
        if since.elapsed() < FSYNC_WAIT_MAX {
            return true;
        }
        out.postponed_since = None;
        self.delayed_fsync.fetch_add(1, Ordering::Relaxed);
        crate::log::notice(
            "Asynchronous AOF fsync is taking too long (disk is busy?). Writing the AOF buffer without waiting for fsync to complete, this may slow down Redis.",
        );
        false
    }

    /// A write failed: the bytes go back in front of the buffer, and the error is reported.
    fn write_failed(
        &self,
        out: &mut Out,
        buf: &[u8],
        buf_db: Option<usize>,
        e: &std::io::Error,
        policy: i32,
    ) {
        if policy == FSYNC_ALWAYS {
            crate::log::warning(&format!(
                "Can't recover from AOF write error when the AOF fsync policy is 'always': {e}. Exiting..."
            ));
            std::process::exit(1);
        }
        // The file may hold part of the buffer: cut it back to what was whole before.
        if let Some(file) = out.file.as_ref() {
            let _ = file.set_len(out.file_len);
        }
        let mut feed = self.feed.lock();
        let mut restored = buf.to_vec();
        restored.extend_from_slice(&feed.buf);
        feed.buf = restored;
        feed.buf_db = buf_db;
        if !self.write_failed.swap(true, Ordering::Relaxed) {
            crate::log::warning(&format!("Error writing to the AOF file: {e}"));
        }
        // strerror's text, as Redis's reply has it.
        let text = e.to_string();
        let text = text.split(" (os error").next().unwrap_or_default();
        *self.write_error.lock() = Some(text.to_string());
    }

    fn recovered(&self) {
        if self.write_failed.swap(false, Ordering::Relaxed) {
            crate::log::warning("AOF write error looks solved, Redis can write again.");
            *self.write_error.lock() = None;
        }
    }

    /// Makes `file` the file appended to from now on: what was appended goes to the old file
    /// first, which is synced and closed. Bytes the old file would not take (a write error)
    /// go to the new one, after a SELECT of the database they were appended in.
    pub(crate) fn switch_file(&self, file: Option<File>) {
        let mut out = self.out.lock();
        let policy = self.policy.load(Ordering::Relaxed);
        self.write_out_now(&mut out, policy);
        if let Some(old) = out.file.take() {
            let _ = old.sync_data();
        }
        out.file_len = file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map_or(0, |m| m.len());
        out.file = file.map(Arc::new);
        self.synced.store(out.written, Ordering::Release);
        {
            let mut feed = self.feed.lock();
            if feed.buf.is_empty() {
                feed.selected = None;
            } else if let Some(db) = feed.buf_db.take() {
                let mut select = Vec::new();
                persist::aof_base::encode_select(&mut select, db);
                feed.appended += select.len() as u64;
                select.extend_from_slice(&feed.buf);
                feed.buf = select;
            }
        }
        self.write_out_now(&mut out, policy);
    }

    /// Writes the buffer whatever the fsync thread is doing (a switch, a stop, shutdown).
    fn write_out_now(&self, out: &mut Out, policy: i32) {
        out.postponed_since = None;
        let policy = if policy == FSYNC_EVERYSEC {
            FSYNC_NO
        } else {
            policy
        };
        self.write_out(out, policy);
    }

    /// Starts or stops appending.
    pub(crate) fn set_feeding(&self, on: bool) {
        self.feeding.store(on, Ordering::Relaxed);
        if !on {
            let mut feed = self.feed.lock();
            feed.buf.clear();
            feed.selected = None;
            feed.buf_db = None;
        }
    }

    /// Bytes in the incremental file being appended to.
    pub fn incr_len(&self) -> u64 {
        self.out.lock().file_len
    }

    /// Bytes appended and not yet written (`aof_buffer_length`).
    pub fn buffer_len(&self) -> usize {
        self.feed.lock().buf.len()
    }

    /// An fsync is running in the background (`aof_pending_bio_fsync`).
    pub fn fsync_pending(&self) -> bool {
        self.fsync_running.load(Ordering::Relaxed)
    }

    /// Thread 0's cron, every loop period: writes what no turn wrote (active expiry's DELs),
    /// retries after a write error, and under `everysec` asks for the second's fsync.
    pub fn cron(&self) {
        if !self.feeding() {
            return;
        }
        let policy = self.policy.load(Ordering::Relaxed);
        let mut out = self.out.lock();
        self.write_out(&mut out, policy);
        if policy != FSYNC_EVERYSEC || self.fsync_held_back() {
            return;
        }
        let now = unix_ms();
        if now < out.last_fsync_ms + 1000 || self.fsync_running.load(Ordering::Acquire) {
            return;
        }
        let written = out.written;
        if written <= self.synced.load(Ordering::Acquire) {
            return;
        }
        if let Some(file) = out.file.clone() {
            out.last_fsync_ms = now;
            self.background_fsync(file, written);
        }
    }

    /// Asks the fsync thread (started on first use) to sync `file` up to stream offset `end`.
    fn background_fsync(&self, file: Arc<File>, end: u64) {
        let mut thread = self.fsync_thread.lock();
        if thread.is_none() {
            *thread = spawn_fsync_thread(Arc::clone(&self.fsync_running), Arc::clone(&self.synced));
        }
        let Some(tx) = thread.as_ref() else {
            let _ = file.sync_data();
            self.synced.fetch_max(end, Ordering::Release);
            return;
        };
        self.fsync_running.store(true, Ordering::Release);
        if tx.send((file, end)).is_err() {
            self.fsync_running.store(false, Ordering::Release);
        }
    }

    /// What the fsync thread has synced (read by INFO and the tests through `synced`).
    pub fn synced(&self) -> u64 {
        self.synced.load(Ordering::Acquire)
    }

    /// Writes and syncs everything appended so far (shutdown, CONFIG SET appendonly no).
    pub fn flush_and_sync(&self) {
        let mut out = self.out.lock();
        let policy = self.policy.load(Ordering::Relaxed);
        self.write_out_now(&mut out, policy);
        if let Some(file) = out.file.as_ref() {
            if let Err(e) = file.sync_data() {
                crate::log::warning(&format!("Fail to fsync the AOF file: {e}"));
            } else {
                self.synced.store(out.written, Ordering::Release);
            }
        }
    }
}

/// The background fsync thread (Redis's bio `BIO_AOF_FSYNC`): syncs each file it is given, then
/// clears `running`.
fn spawn_fsync_thread(running: Arc<AtomicBool>, synced: Arc<AtomicU64>) -> Option<FsyncSender> {
    let (tx, rx) = std::sync::mpsc::channel::<(Arc<File>, u64)>();
    std::thread::Builder::new()
        .name("aof-fsync".into())
        .spawn(move || {
            for (file, end) in rx {
                match file.sync_data() {
                    Ok(()) => {
                        synced.fetch_max(end, Ordering::Release);
                    }
                    Err(e) => crate::log::warning(&format!("Fail to fsync the AOF file: {e}")),
                }
                running.store(false, Ordering::Release);
            }
        })
        .ok()?;
    Some(tx)
}

/// Writes SELECT when `db` is not the file's current database.
fn select(feed: &mut Feed, db: usize) {
    if feed.selected != Some(db) {
        persist::aof_base::encode_select(&mut feed.buf, db);
        feed.selected = Some(db);
    }
}

/// Writes a `#TS:<unix secs>` annotation when the second changed, as Redis's
/// `genAofTimestampAnnotationIfNeeded`.
fn annotate(feed: &mut Feed) {
    let now = unix_ms() / 1000;
    if now > feed.last_ts_secs {
        feed.buf
            .extend_from_slice(format!("#TS:{now}\r\n").as_bytes());
        feed.last_ts_secs = now;
    }
}

/// The server's view for the I/O loop: before replies go out, what this thread (and, for
/// served blocked clients, anyone) appended must be written — and synced under `always`.
pub fn before_replies(server: &Server, mail: bool) {
    if !server.aof.feeding() {
        return;
    }
    let target = if mail {
        server.aof.appended()
    } else {
        crate::propagate::appended_here()
    };
    server.aof.commit(target);
}

/// Whether the last AOF write failed: writes are refused with this error (`dispatch.rs`).
pub fn write_denied(server: &Server) -> Option<String> {
    if !server.aof.write_failed.load(Ordering::Relaxed) {
        return None;
    }
    let error = server.aof.write_error.lock().clone().unwrap_or_default();
    Some(format!("MISCONF Errors writing to the AOF file: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aof(policy: i32) -> Aof {
        let config = crate::Config {
            appendfsync: policy,
            ..crate::Config::default()
        };
        let aof = Aof::new(&config);
        aof.set_feeding(true);
        aof
    }

    fn cmd(args: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        persist::aof_base::encode_command(&mut out, args);
        out
    }

    fn temp_file(name: &str) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!("densekv-aof-{}-{name}", std::process::id()));
        let file = super::files::create_append(&path).expect("temp file");
        (path, file)
    }

    /// SELECT only when the database changes, MULTI … EXEC around a block, offsets that
    /// count every byte; after a switch of file the first command selects again.
    #[test]
    fn append_selects_wraps_and_counts() {
        let aof = aof(FSYNC_NO);
        let set = cmd(&[b"SET", b"k", b"v"]);
        let end = aof.append(&[(0, set.clone())], false);
        let again = aof.append(&[(0, set.clone())], false);
        let block = aof.append(&[(3, set.clone()), (0, set.clone())], true);
        let mut expected = cmd(&[b"SELECT", b"0"]);
        expected.extend_from_slice(&set);
        assert_eq!(end, expected.len() as u64);
        expected.extend_from_slice(&set);
        assert_eq!(again, expected.len() as u64);
        expected.extend_from_slice(&cmd(&[b"SELECT", b"3"]));
        expected.extend_from_slice(&cmd(&[b"MULTI"]));
        expected.extend_from_slice(&set);
        expected.extend_from_slice(&cmd(&[b"SELECT", b"0"]));
        expected.extend_from_slice(&set);
        expected.extend_from_slice(&cmd(&[b"EXEC"]));
        assert_eq!(block, expected.len() as u64);
        assert_eq!(aof.feed.lock().buf, expected);
        let (path, file) = temp_file("select");
        aof.switch_file(Some(file));
        assert_eq!(
            std::fs::read(&path).unwrap(),
            expected,
            "the switch wrote it out"
        );
        aof.append(&[(0, set.clone())], false);
        let (next, file) = temp_file("select-next");
        aof.switch_file(Some(file));
        expected.extend_from_slice(&set);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            expected,
            "the old file got its part"
        );
        aof.append(&[(0, set.clone())], false);
        assert!(aof.feed.lock().buf.starts_with(&cmd(&[b"SELECT", b"0"])));
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(next);
    }

    /// `commit` writes what was appended up to the target (and under `always` syncs it), once:
    /// a second commit with nothing new does nothing.
    #[test]
    fn commit_writes_and_syncs_to_the_target() {
        for policy in [FSYNC_ALWAYS, FSYNC_EVERYSEC, FSYNC_NO] {
            let aof = aof(policy);
            let (path, file) = temp_file(&format!("commit-{policy}"));
            aof.switch_file(Some(file));
            let end = aof.append(&[(0, cmd(&[b"INCR", b"n"]))], false);
            assert!(aof.written.load(Ordering::Relaxed) < end);
            aof.commit(end);
            assert_eq!(aof.written.load(Ordering::Relaxed), end);
            assert_eq!(
                aof.synced() >= end,
                policy == FSYNC_ALWAYS,
                "policy {policy}"
            );
            assert_eq!(std::fs::metadata(&path).unwrap().len(), end);
            assert_eq!(aof.current_size.load(Ordering::Relaxed), end);
            aof.commit(end);
            assert_eq!(std::fs::metadata(&path).unwrap().len(), end);
            let _ = std::fs::remove_file(path);
        }
    }

    /// A failed write (a full disk) keeps the bytes buffered and refuses writes with Redis's
    /// MISCONF text; the next write that works brings everything out, in order.
    #[test]
    fn a_failed_write_keeps_the_bytes_and_recovers() {
        let aof = aof(FSYNC_NO);
        let full = OpenOptionsExt::append_dev_full();
        aof.switch_file(Some(full));
        let first = cmd(&[b"SET", b"a", b"1"]);
        let end = aof.append(&[(0, first.clone())], false);
        aof.commit(end);
        assert!(aof.write_failed.load(Ordering::Relaxed));
        assert_eq!(
            aof.write_error.lock().as_deref(),
            Some("No space left on device")
        );
        assert!(aof.written.load(Ordering::Relaxed) < end);
        let second = cmd(&[b"SET", b"b", b"2"]);
        let end = aof.append(&[(0, second.clone())], false);
        let (path, file) = temp_file("recover");
        aof.switch_file(Some(file));
        assert!(!aof.write_failed.load(Ordering::Relaxed));
        let mut expected = cmd(&[b"SELECT", b"0"]);
        expected.extend_from_slice(&first);
        expected.extend_from_slice(&second);
        assert_eq!(std::fs::read(&path).unwrap(), expected);
        assert_eq!(aof.written.load(Ordering::Relaxed), end);
        let _ = std::fs::remove_file(path);
    }

    /// `/dev/full` opened for appending: every write fails with ENOSPC.
    struct OpenOptionsExt;

    impl OpenOptionsExt {
        fn append_dev_full() -> File {
            std::fs::OpenOptions::new()
                .append(true)
                .open("/dev/full")
                .expect("/dev/full")
        }
    }
}
