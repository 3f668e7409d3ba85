//! `densekv [config-file] [--option value …]`: the server binary.

#[global_allocator]
static ALLOCATOR: server::alloc::Counting = server::alloc::Counting;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("-v" | "--version")) {
        println!(
            "densekv v={} (Redis {} compatible)",
            server::DENSEKV_VERSION,
            server::REDIS_VERSION
        );
        return;
    }
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        println!(
            "Usage: densekv [/path/to/redis.conf] [--option value …]\n       densekv -v | --version"
        );
        return;
    }
    let config = match server::config::from_args(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = server::log::init(&config.loglevel, &config.logfile) {
        eprintln!("Can't open the log file: {e}");
        std::process::exit(1);
    }
    if config.daemonize {
        // SAFETY: called before any thread is started; daemon(3) forks and the parent exits.
        if unsafe { libc::daemon(1, 0) } != 0 {
            eprintln!("daemonize failed: {}", std::io::Error::last_os_error());
            std::process::exit(1);
        }
    }
    if !config.pidfile.is_empty() {
        let _ = std::fs::write(&config.pidfile, format!("{}\n", std::process::id()));
    }
    let pidfile = config.pidfile.clone();
    let result = server::run(config);
    if !pidfile.is_empty() {
        let _ = std::fs::remove_file(&pidfile);
    }
    if let Err(e) = result {
        server::log::warning(&e);
        std::process::exit(1);
    }
}
