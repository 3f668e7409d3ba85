//! `densekv [config-file] [--option value …] [-]`: the server binary.
//!
//! Startup follows redis-server's `main()`: read the configuration (a bad line prints Redis's
//! FATAL CONFIG FILE ERROR block to stderr and exits 1), settle supervision (systemd, upstart),
//! daemonize unless supervised, open the log (and syslog), raise the open-files limit for
//! `maxclients`, write the pid file, show the banner, apply `disable-thp` and `oom-score-adj`,
//! then run the server; the supervisor hears READY once it listens.

use server::config::{self, Config, effects};

#[global_allocator]
static ALLOCATOR: server::alloc::Counting = server::alloc::Counting;

/// Where a daemon without a `pidfile` writes its pid, as Redis (`CONFIG_DEFAULT_PID_FILE`).
const DEFAULT_PID_FILE: &str = "/var/run/redis.pid";

fn main() {
    use std::os::unix::ffi::OsStringExt;
    let args: Vec<Vec<u8>> = std::env::args_os()
        .skip(1)
        .map(OsStringExt::into_vec)
        .collect();
    match args.first().map(Vec::as_slice) {
        Some(b"-v" | b"--version") => {
            println!(
                "densekv v={} (Redis {} compatible)",
                server::DENSEKV_VERSION,
                server::REDIS_VERSION
            );
            return;
        }
        Some(b"-h" | b"--help") => {
            println!(
                "Usage: densekv [/path/to/redis.conf] [options] [-]\n       densekv - (read config from stdin)\n       densekv -v | --version\n\nEvery redis.conf directive is an option: densekv --port 7777 --maxclients 100\nWhat densekv does with each one: docs/config.md"
            );
            return;
        }
        _ => {}
    }
    effects::remember_umask();
    let mut config = match config::from_args(&args) {
        Ok(config) => config,
        Err(e @ config::ConfigError::Unreadable(_)) => {
            server::log::warning(&String::from_utf8_lossy(&e.to_bytes()));
            std::process::exit(1);
        }
        Err(e) => {
            use std::io::Write as _;
            let _ = std::io::stderr().write_all(&e.to_bytes());
            std::process::exit(1);
        }
    };
    let daemonized = start(&mut config, args.is_empty());
    let pidfile = write_pidfile(&config, daemonized);
    let result = server::run(config);
    if let Some(pidfile) = pidfile {
        let _ = std::fs::remove_file(pidfile);
    }
    if let Err(e) = result {
        server::log::warning(&e);
        std::process::exit(1);
    }
}

/// Supervision, daemon, log, limits, banner and process settings; whether it daemonized.
fn start(config: &mut Config, no_arguments: bool) -> bool {
    let supervised = effects::supervise(config);
    let daemonize = config.daemonize && !supervised;
    if daemonize {
        // SAFETY: called before any thread is started; daemon(3) forks and the parent exits.
        if unsafe { libc::daemon(1, 0) } != 0 {
            eprintln!("daemonize failed: {}", std::io::Error::last_os_error());
            std::process::exit(1);
        }
    }
    if let Err(e) = server::log::init(&config.loglevel, &config.logfile) {
        eprintln!("Can't open the log file: {e}");
        std::process::exit(1);
    }
    effects::start_syslog(config);
    server::log::set_crash_log(config.crash_log_enabled);
    server::log::warning("oO0OoO0OoO0Oo densekv is starting oO0OoO0OoO0Oo");
    if no_arguments {
        server::log::warning(
            "Warning: no config file specified, using the default config. In order to specify a config file use densekv /path/to/redis.conf",
        );
    } else {
        server::log::warning("Configuration loaded");
    }
    if let Err(e) = effects::adjust_open_files_limit(config) {
        server::log::warning(&e);
        std::process::exit(1);
    }
    effects::banner(config);
    effects::disable_thp(config);
    let _ = effects::set_oom_score_adj(config);
    daemonize
}

/// Writes the pid file (Redis's `createPidFile`): the configured one, or the default path when
/// daemonized without one. Returns the path to remove at exit.
fn write_pidfile(config: &Config, daemonized: bool) -> Option<String> {
    let path = match config.pidfile.as_str() {
        "" if daemonized => DEFAULT_PID_FILE,
        "" => return None,
        path => path,
    };
    if let Err(e) = std::fs::write(path, format!("{}\n", std::process::id())) {
        server::log::warning(&format!("Failed to write PID file: {e}"));
        return None;
    }
    Some(path.to_string())
}
