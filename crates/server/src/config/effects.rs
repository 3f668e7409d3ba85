//! What directives do to the process, at startup and on CONFIG SET, each as its Redis
//! counterpart (named in its comment) does it:
//!
//! ```text
//!  maxclients            RLIMIT_NOFILE raised to maxclients + 32, else maxclients lowered
//!  oom-score-adj(-values) /proc/self/oom_score_adj, relative to the value found at first use
//!  disable-thp           prctl(PR_SET_THP_DISABLE) when THP is "always"
//!  syslog-*              openlog(ident, LOG_PID|LOG_NDELAY|LOG_NOWAIT, facility)
//!  supervised            systemd: STATUS/READY=1 datagrams to $NOTIFY_SOCKET; upstart: SIGSTOP
//!  always-show-logo      the banner, else one "Running mode=…" line
//!  port, bind            listen again: `net::rebind`
//!  *-max-listpack-*, set-max-intset-entries, list-max-listpack-size
//!                        the shards' `store::Limits` (`store_limits`), set by CONFIG SET
//! ```
//!
//! The process's umask is read once at startup (it can only be read by setting it), for CONFIG
//! REWRITE's file mode.

use super::Config;
use crate::server::Server;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

static UMASK: AtomicU32 = AtomicU32::new(0o022);

/// Reads the umask (by setting it and putting it back). Call before any thread starts.
pub fn remember_umask() {
    // SAFETY: umask(2) cannot fail; it is called before other threads exist, so no file is
    // created in between with the temporary mask.
    let mask = unsafe {
        let mask = libc::umask(0o777);
        libc::umask(mask);
        mask
    };
    UMASK.store(mask, Ordering::Relaxed);
}

pub fn umask() -> u32 {
    UMASK.load(Ordering::Relaxed)
}

/// The paths matching a glob(3) pattern, in glob's (sorted) order; none on no match or error.
pub fn glob(pattern: &[u8]) -> Vec<Vec<u8>> {
    let Ok(c_pattern) = std::ffi::CString::new(pattern) else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    // SAFETY: `g` is zeroed plain data, as glob(3) expects before its first call; on success
    // gl_pathv holds gl_pathc valid C strings, copied out before globfree releases them.
    unsafe {
        let mut g: libc::glob_t = std::mem::zeroed();
        if libc::glob(c_pattern.as_ptr(), 0, None, &raw mut g) == 0 {
            for i in 0..g.gl_pathc {
                let path = std::ffi::CStr::from_ptr(*g.gl_pathv.add(i));
                paths.push(path.to_bytes().to_vec());
            }
        }
        libc::globfree(&raw mut g);
    }
    paths
}

/// File descriptors kept beside the clients' (Redis's `CONFIG_MIN_RESERVED_FDS`).
const RESERVED_FDS: u64 = 32;

/// Redis's `adjustOpenFilesLimit`: raises RLIMIT_NOFILE to `maxclients + 32`, or as close as
/// the system allows (lowering `maxclients` to fit, with Redis's log lines). `Err` when even 32
/// descriptors are not available: the server cannot start.
pub fn adjust_open_files_limit(config: &mut Config) -> Result<(), String> {
    // Redis adds in a C unsigned int, so a maxclients near 2^32 wraps to a tiny need (and
    // CONFIG SET maxclients 4294967295 succeeds there); densekv keeps that arithmetic.
    let wanted = u64::from((config.maxclients as u32).wrapping_add(RESERVED_FDS as u32));
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for getrlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } == -1 {
        let e = std::io::Error::last_os_error();
        crate::log::warning(&format!(
            "Unable to obtain the current NOFILE limit ({}), assuming 1024 and setting the max clients configuration accordingly.",
            super::special::strerror(&e)
        ));
        config.maxclients = 1024 - RESERVED_FDS as usize;
        return Ok(());
    }
    let old = limit.rlim_cur;
    if old >= wanted {
        return Ok(());
    }
    let (best, error) = best_limit(old, wanted);
    if best < wanted {
        let asked = config.maxclients;
        if best <= RESERVED_FDS {
            return Err(format!(
                "Your current 'ulimit -n' of {old} is not enough for the server to start. Please increase your open file limit to at least {wanted}. Exiting."
            ));
        }
        config.maxclients = (best - RESERVED_FDS) as usize;
        crate::log::warning(&format!(
            "You requested maxclients of {asked} requiring at least {wanted} max file descriptors."
        ));
        crate::log::warning(&format!(
            "Server can't set maximum open files to {wanted} because of OS error: {error}."
        ));
        crate::log::warning(&format!(
            "Current maximum open files is {best}. maxclients has been reduced to {} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.",
            config.maxclients
        ));
    } else {
        crate::log::notice(&format!(
            "Increased maximum number of open files to {wanted} (it was originally set to {old})."
        ));
    }
    Ok(())
}

/// The highest limit between `old` and `wanted` that setrlimit accepts, stepping down by 16
/// (at most `(wanted - old) / 16 + 1` tries), and the last error.
fn best_limit(old: u64, wanted: u64) -> (u64, String) {
    let mut best = wanted;
    let mut error = String::new();
    while best > old {
        let limit = libc::rlimit {
            rlim_cur: best,
            rlim_max: best,
        };
        // SAFETY: `limit` is a valid rlimit read by setrlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) } != -1 {
            break;
        }
        error = super::special::strerror(&std::io::Error::last_os_error());
        if best < 16 {
            best = old;
            break;
        }
        best -= 16;
    }
    (best.max(old), error)
}

/// Whether the process changed its oom_score_adj, and the value it found before.
static OOM_BASE: Mutex<Option<i32>> = Mutex::new(None);

/// Redis's `setOOMScoreAdj(-1)` for a primary: writes `oom-score-adj-values`' first value
/// (relative to the score found at first use, or absolute), or puts the original back when
/// `oom-score-adj` is `no`.
pub fn set_oom_score_adj(config: &Config) -> Result<(), String> {
    let mut base = OOM_BASE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let value = if config.oom_score_adj != 0 {
        let original = if let Some(original) = *base {
            original
        } else {
            let text = std::fs::read_to_string("/proc/self/oom_score_adj").map_err(|e| {
                let text = format!(
                    "Unable to read oom_score_adj: {}",
                    super::special::strerror(&e)
                );
                crate::log::warning(&text);
                text
            })?;
            let original = text.trim().parse().unwrap_or(0);
            *base = Some(original);
            original
        };
        let mut value = config.oom_score_adj_values[0];
        if config.oom_score_adj == 1 {
            value += original;
        }
        value.clamp(-1000, 1000)
    } else if let Some(original) = base.take() {
        original
    } else {
        return Ok(());
    };
    std::fs::write("/proc/self/oom_score_adj", format!("{value}\n")).map_err(|e| {
        let text = format!(
            "Unable to write oom_score_adj: {}",
            super::special::strerror(&e)
        );
        crate::log::warning(&text);
        text
    })
}

/// Redis's `THPDisable` (from `linuxMemoryWarnings`): with `disable-thp yes` and THP set to
/// `always`, opts the process out; warns when that fails.
pub fn disable_thp(config: &Config) {
    let always = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| s.contains("[always]"));
    if !always {
        return;
    }
    // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integer arguments.
    if config.disable_thp && unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } == 0 {
        return;
    }
    crate::log::warning(
        "WARNING you have Transparent Huge Pages (THP) support enabled in your kernel. This will create latency and memory usage issues with densekv. To fix this issue run the command 'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled' as root, and add it to your /etc/rc.local in order to retain the setting after a reboot. densekv must be restarted after THP is disabled (set to 'madvise' or 'never').",
    );
}

/// Opens syslog when `syslog-enabled` is on: every log line then also goes there.
pub fn start_syslog(config: &Config) {
    if config.syslog_enabled {
        crate::log::enable_syslog(&config.syslog_ident, config.syslog_facility);
    }
}

/// Redis's `redisIsSupervised`: resolves `auto`, checks the environment, and sends systemd its
/// first status. Returns whether the server is supervised (then it does not daemonize); the
/// mode in `config.supervised` becomes the one in use.
pub fn supervise(config: &mut Config) -> bool {
    let mut mode = config.supervised;
    if mode == 1 {
        if std::env::var_os("UPSTART_JOB").is_some() {
            crate::log::verbose("Upstart supervision detected.");
            mode = 3;
        } else if std::env::var_os("NOTIFY_SOCKET").is_some() {
            crate::log::verbose("Systemd supervision detected.");
            mode = 2;
        }
    }
    let supervised = match mode {
        3 if std::env::var_os("UPSTART_JOB").is_none() => {
            crate::log::warning("upstart supervision requested, but UPSTART_JOB not found!");
            false
        }
        3 => true,
        2 if std::env::var_os("NOTIFY_SOCKET").is_none() => {
            crate::log::warning(
                "systemd supervision requested or auto-detected, but NOTIFY_SOCKET environment variable not found!",
            );
            false
        }
        2 => {
            let sent = sd_notify("STATUS=densekv is starting...\n");
            if sent {
                crate::log::notice(
                    "Supervised by systemd. Please make sure you set appropriate values for TimeoutStartSec and TimeoutStopSec in your service unit.",
                );
            }
            sent
        }
        _ => false,
    };
    if supervised {
        config.supervised = mode;
    }
    supervised
}

/// Tells the supervisor the server accepts connections (call once listening).
pub fn notify_ready(supervised: i32) {
    match supervised {
        2 => {
            sd_notify("STATUS=Ready to accept connections\n");
            sd_notify("READY=1\n");
        }
        3 => {
            crate::log::notice("supervised by upstart, will stop to signal readiness.");
            // SAFETY: raise(SIGSTOP) only stops this process until upstart continues it.
            unsafe {
                libc::raise(libc::SIGSTOP);
            }
            // SAFETY: the environment is only read at startup, before this point.
            unsafe { std::env::remove_var("UPSTART_JOB") };
        }
        _ => {}
    }
}

/// One datagram to `$NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace), as
/// sd_notify(3) sends it. Whether it was sent.
fn sd_notify(message: &str) -> bool {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    // Without a socket there is nobody to tell: sd_notify(3) returns 0 then, silently.
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else {
        return false;
    };
    let target = target.to_string_lossy().into_owned();
    let address = match target.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes()),
        None => SocketAddr::from_pathname(&target),
    };
    let sent = address.and_then(|address| {
        let socket = UnixDatagram::unbound()?;
        socket.send_to_addr(message.as_bytes(), &address)
    });
    if let Err(e) = &sent {
        crate::log::warning(&format!("Can't send notification to systemd: {e}"));
    }
    sent.is_ok()
}

/// The startup banner (`redisAsciiArt`): shown when the log is a terminal or with
/// `always-show-logo yes`; otherwise one line with the mode and port.
pub fn banner(config: &Config) {
    // SAFETY: isatty only inspects the descriptor.
    let tty = unsafe { libc::isatty(libc::STDOUT_FILENO) } == 1;
    let show =
        (!config.syslog_enabled && config.logfile.is_empty() && tty) || config.always_show_logo;
    if !show {
        crate::log::notice(&format!("Running mode=standalone, port={}.", config.port));
        return;
    }
    let art = format!(
        "\n\
         \x20    _                         _\n\
         \x20 __| | ___ _ __  ___  ___  | | ____   __      densekv {} (Redis {} compatible) 64 bit\n\
         \x20/ _` |/ _ \\ '_ \\/ __|/ _ \\ | |/ /\\ \\ / /\n\
         | (_| |  __/ | | \\__ \\  __/ |   <  \\ V /       Running in standalone mode\n\
         \x20\\__,_|\\___|_| |_|___/\\___| |_|\\_\\  \\_/        Port: {}\n\
         \x20                                              PID: {}\n\n",
        crate::DENSEKV_VERSION,
        crate::REDIS_VERSION,
        config.port,
        std::process::id()
    );
    crate::log::raw(&art);
}

/// Runs one CONFIG SET apply with the new configuration; the error is Redis's text.
pub fn apply(server: &Server, apply: super::Apply, config: &mut Config) -> Result<(), String> {
    use super::Apply;
    match apply {
        // Encoding limits are handed to the shards by CONFIG SET itself, which knows the locks
        // it holds (`commands::config::share_limits`).
        Apply::None | Apply::EncodingLimits | Apply::AppendOnly => {}
        Apply::AofOptions => server.aof.configure(config),
        Apply::LogLevel => crate::log::set_level(&config.loglevel),
        Apply::SlowLog => server
            .slowlog_slower_than
            .store(config.slowlog_log_slower_than, Ordering::Relaxed),
        Apply::Hz => config.hz = config.hz.clamp(1, 500),
        Apply::MaxClients => {
            let asked = config.maxclients;
            adjust_open_files_limit(config)?;
            if config.maxclients != asked {
                return Err(format!(
                    "The operating system is not able to handle the specified number of clients, try with {}",
                    config.maxclients
                ));
            }
        }
        Apply::OomScore => set_oom_score_adj(config)
            .map_err(|_| "Failed to set current oom_score_adj. Check server logs.".to_string())?,
        Apply::CrashLog => crate::log::set_crash_log(config.crash_log_enabled),
        Apply::Eviction => server.eviction.configure(config),
        Apply::Tracking => server.tracking.configure(config),
        Apply::Messaging => server
            .notify_flags
            .store(config.notify_keyspace_events, Ordering::Relaxed),
        Apply::ReplBacklog => config.repl_backlog_size = config.repl_backlog_size.max(16 << 10),
        Apply::Port | Apply::Bind => rebind(server, apply, config)?,
    }
    Ok(())
}

/// The store's encoding thresholds as `config` sets them (Redis's `*-max-listpack-*`,
/// `set-max-intset-entries`, `list-max-listpack-size`).
pub fn store_limits(config: &Config) -> store::Limits {
    let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    store::Limits {
        hash_listpack_entries: size(config.hash_max_listpack_entries),
        hash_listpack_value: size(config.hash_max_listpack_value),
        set_intset_entries: size(config.set_max_intset_entries),
        zset_listpack_entries: size(config.zset_max_listpack_entries),
        zset_listpack_value: size(config.zset_max_listpack_value),
        list_chunk_bytes: store::Limits::list_chunk_bytes_for(i64::from(
            config.list_max_listpack_size,
        )),
    }
}

fn rebind(server: &Server, apply: super::Apply, config: &Config) -> Result<(), String> {
    let failed = if apply == super::Apply::Port {
        "Unable to listen on this port. Check server logs."
    } else {
        "Failed to bind to specified addresses."
    };
    crate::net::rebind(server, config).map_err(|e| {
        crate::log::warning(&e);
        failed.to_string()
    })
}
