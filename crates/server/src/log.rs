//! The server log: redis-server's line format (`pid:M dd Mon yyyy hh:mm:ss.mmm * message`) to
//! stdout or the configured `logfile`, filtered by `loglevel`, and to syslog(3) when
//! `syslog-enabled` is on.

use parking_lot::Mutex;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

static LEVEL: AtomicU8 = AtomicU8::new(2);
static FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);
static SYSLOG: AtomicBool = AtomicBool::new(false);
/// `crash-log-enabled`: whether a panic writes its bug report before aborting.
static CRASH_LOG: AtomicBool = AtomicBool::new(true);

/// Sends every log line to syslog(3) too, under `ident` and `facility` (Redis's `openlog`).
pub fn enable_syslog(ident: &str, facility: i32) {
    // openlog keeps the pointer: the identity must live as long as the process.
    let ident: &'static std::ffi::CStr = Box::leak(
        std::ffi::CString::new(ident.replace('\0', ""))
            .unwrap_or_default()
            .into_boxed_c_str(),
    );
    // SAFETY: `ident` is a NUL-terminated string that is never freed.
    unsafe {
        libc::openlog(
            ident.as_ptr(),
            libc::LOG_PID | libc::LOG_NDELAY | libc::LOG_NOWAIT,
            facility,
        );
    }
    SYSLOG.store(true, Ordering::Relaxed);
}

/// `crash-log-enabled`.
pub fn set_crash_log(enabled: bool) {
    CRASH_LOG.store(enabled, Ordering::Relaxed);
}

fn to_syslog(level: u8, message: &str) {
    if !SYSLOG.load(Ordering::Relaxed) {
        return;
    }
    let priority = [
        libc::LOG_DEBUG,
        libc::LOG_INFO,
        libc::LOG_NOTICE,
        libc::LOG_WARNING,
    ][usize::from(level.min(3))];
    let Ok(text) = std::ffi::CString::new(message.replace('\0', "")) else {
        return;
    };
    // SAFETY: a constant "%s" format with one NUL-terminated string argument.
    unsafe { libc::syslog(priority, c"%s".as_ptr(), text.as_ptr()) };
}

/// Writes `text` as it is (no timestamp), at notice level: the startup banner.
pub fn raw(text: &str) {
    if LEVEL.load(Ordering::Relaxed) > 2 {
        return;
    }
    let mut file = FILE.lock();
    match file.as_mut() {
        Some(f) => {
            let _ = f.write_all(text.as_bytes());
        }
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
}

/// Sets the level (`debug`, `verbose`, `notice`, `warning`, `nothing`) and the destination.
pub fn init(level: &str, logfile: &str) -> std::io::Result<()> {
    set_level(level);
    if !logfile.is_empty() {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logfile)?;
        *FILE.lock() = Some(file);
    }
    Ok(())
}

pub fn set_level(level: &str) {
    let n = match level {
        "debug" => 0,
        "verbose" => 1,
        "notice" => 2,
        "warning" => 3,
        _ => 4,
    };
    LEVEL.store(n, Ordering::Relaxed);
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn write(level: u8, mark: char, message: &str) {
    if level < LEVEL.load(Ordering::Relaxed) {
        return;
    }
    to_syslog(level, message);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: `tm` is plain data that gmtime_r fills; `secs` outlives the call.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::gmtime_r(&raw const secs, &raw mut tm);
        tm
    };
    let line = format!(
        "{}:M {:02} {} {} {:02}:{:02}:{:02}.{:03} {} {}\n",
        std::process::id(),
        tm.tm_mday,
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        now.subsec_millis(),
        mark,
        message
    );
    let mut file = FILE.lock();
    match file.as_mut() {
        Some(f) => {
            let _ = f.write_all(line.as_bytes());
        }
        None => {
            let _ = std::io::stdout().write_all(line.as_bytes());
        }
    }
}

/// Logs at Redis's level `level` (0 debug … 3 warning), with its mark (`redis.log`).
pub fn at_level(level: i32, message: &str) {
    let mark = ['.', '-', '*', '#'][level.clamp(0, 3) as usize];
    write(level.clamp(0, 3) as u8, mark, message);
}

pub fn verbose(message: &str) {
    write(1, '-', message);
}

pub fn notice(message: &str) {
    write(2, '*', message);
}

pub fn warning(message: &str) {
    write(3, '#', message);
}

thread_local! {
    /// The command this thread is running (name, argument count), for the crash report.
    static CURRENT: std::cell::Cell<Option<(&'static str, usize)>> =
        const { std::cell::Cell::new(None) };
}

/// Notes the command this thread starts running (`command::run`).
#[inline]
pub fn set_current_command(name: &'static str, argc: usize) {
    CURRENT.with(|c| c.set(Some((name, argc))));
}

#[inline]
pub fn clear_current_command() {
    CURRENT.with(|c| c.set(None));
}

/// Makes every panic a crash: the hook writes a bug report (the panic, the thread, the command
/// it was running, a backtrace) to the log and to stderr, then aborts the process. A panic is a
/// bug, and one inside a command may have left a shard half-edited; Redis's `serverPanic` and
/// failed assertions end the same way rather than serve from a keyspace it cannot vouch for.
pub fn install_crash_report() {
    std::panic::set_hook(Box::new(|info| {
        if !CRASH_LOG.load(Ordering::Relaxed) {
            std::process::abort();
        }
        let thread = std::thread::current();
        let command = CURRENT.with(std::cell::Cell::get).map_or_else(
            || "none".to_string(),
            |(name, argc)| format!("'{name}' with {argc} arguments"),
        );
        let report = format!(
            "\n\n=== DENSEKV BUG REPORT START: Cut & paste starting from here ===\n\
             # densekv {} (Redis {}) crashed: {info}\n\
             # thread: {}\n\
             # current command: {command}\n\
             ------ STACK TRACE ------\n{}\n\
             === DENSEKV BUG REPORT END. Make sure to include from START to END. ===\n",
            crate::DENSEKV_VERSION,
            crate::REDIS_VERSION,
            thread.name().unwrap_or("main"),
            std::backtrace::Backtrace::force_capture(),
        );
        let _ = std::io::stderr().write_all(report.as_bytes());
        // The log's lock may be held by the panicking thread itself: never wait for it.
        if let Some(mut file) = FILE.try_lock()
            && let Some(f) = file.as_mut()
        {
            let _ = f.write_all(report.as_bytes());
            let _ = f.sync_all();
        }
        std::process::abort();
    }));
}
