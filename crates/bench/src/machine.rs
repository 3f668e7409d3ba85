//! What the harness reads from the machine: the process's memory from `/proc/self/status`, a
//! description of the machine for the JSON report, the date, and whether `perf` can count cache
//! misses here; for the persist suite, a server's children (`/proc/<pid>/task/<pid>/children`)
//! and a child's private memory (`/proc/<pid>/smaps_rollup`).
//!
//! Memory is read from `/proc` rather than `getrusage`: `ru_maxrss` gives only the peak, and the
//! accounting check needs the current resident size (`VmRSS`) as well as the peak (`VmHWM`).

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// Resident memory of this process, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// `VmHWM`: the peak resident set size since the process started.
    pub peak_rss_bytes: u64,
    /// `VmRSS`: the resident set size now.
    pub rss_bytes: u64,
}

/// Reads `VmHWM` and `VmRSS` of the calling process.
pub fn memory() -> Memory {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    parse_status(&status)
}

/// Parses the `VmHWM:` and `VmRSS:` lines (in kB, as the kernel prints them) of a
/// `/proc/<pid>/status` text; missing lines read as 0.
pub fn parse_status(status: &str) -> Memory {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    Memory {
        peak_rss_bytes: field("VmHWM:"),
        rss_bytes: field("VmRSS:"),
    }
}

/// The pids of the processes the main thread of `pid` forked that are still alive (a fork from
/// the main thread lists the child under `task/<pid>`; threads of their own would list theirs
/// under their own task). Empty when `pid` is gone.
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The memory only `pid` maps (`Private_Clean + Private_Dirty` of `/proc/<pid>/smaps_rollup`),
/// in bytes; 0 when it is gone. After a fork, a page either process has written since is
/// private to each side; a page neither wrote is shared and already in the parent's `VmRSS`.
pub fn private_bytes(pid: u32) -> u64 {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"));
    parse_private(&rollup.unwrap_or_default())
}

/// `Private_Clean + Private_Dirty` (in kB, as the kernel prints them) of a `smaps_rollup` text,
/// in bytes.
pub fn parse_private(rollup: &str) -> u64 {
    rollup
        .lines()
        .filter_map(|line| {
            let rest = line
                .strip_prefix("Private_Clean:")
                .or_else(|| line.strip_prefix("Private_Dirty:"))?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum::<u64>()
        * 1024
}

/// Minor page faults of the calling process so far (`minflt` of `/proc/self/stat`): a fault on
/// a page that is not resident, the cost an allocator that releases memory too eagerly makes its
/// caller pay on the next touch.
pub fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| parse_stat_minflt(&stat))
        .unwrap_or(0)
}

/// CPU seconds process `pid` has run so far, user and system (`utime + stime` of
/// `/proc/<pid>/stat`); `None` once it has exited.
pub fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_cpu_ticks(&stat).map(|ticks| ticks as f64 / USER_HZ)
}

/// The unit of `/proc/<pid>/stat`'s times: the kernel's `USER_HZ`, 100 on x86 and arm Linux.
const USER_HZ: f64 = 100.0;

/// Fields 14 and 15 (`utime`, `stime`) of a `/proc/<pid>/stat` line, summed, in `USER_HZ` ticks.
pub fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, after_comm) = stat.rsplit_once(')')?;
    let mut fields = after_comm.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Field 10 (`minflt`) of a `/proc/<pid>/stat` line. The fields are counted after the last `)`,
/// because the command name in field 2 may itself contain spaces and parentheses.
pub fn parse_stat_minflt(stat: &str) -> Option<u64> {
    let (_, after_comm) = stat.rsplit_once(')')?;
    after_comm.split_whitespace().nth(7)?.parse().ok()
}

/// The machine a report was measured on.
#[derive(Debug, Clone, Serialize)]
pub struct MachineInfo {
    pub nproc: usize,
    pub cpu_model: String,
    pub mem_total_bytes: u64,
    pub kernel: String,
    /// UTC, ISO 8601 (`2026-11-22T02:13:30Z`).
    pub date_utc: String,
}

impl MachineInfo {
    pub fn read() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_total_bytes = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
        Self {
            nproc: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| "unknown".to_owned()),
            mem_total_bytes,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned()),
            date_utc: iso8601_utc(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            ),
        }
    }
}

/// The first `model name` of a `/proc/cpuinfo` text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

/// Formats seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC),
/// with Howard Hinnant's `civil_from_days` instead of a date-time dependency.
pub fn iso8601_utc(epoch_secs: u64) -> String {
    let days = (epoch_secs / 86_400) as i64;
    let secs_of_day = epoch_secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs_of_day / 3600,
        secs_of_day / 60 % 60,
        secs_of_day % 60
    )
}

/// Whether `perf stat -e cache-misses` counts on this machine (virtual machines often expose no
/// hardware counters; perf then prints `<not supported>` and exits 0).
pub fn perf_counts_cache_misses() -> bool {
    Command::new("perf")
        .args(["stat", "-x,", "-e", "cache-misses", "true"])
        .output()
        .is_ok_and(|out| {
            out.status.success() && parse_perf_csv(&String::from_utf8_lossy(&out.stderr)).is_some()
        })
}

/// The `cache-misses` count from `perf stat -x,` output (CSV on stderr: `value,unit,event,...`);
/// `None` when the event is `<not supported>`, `<not counted>` or absent.
pub fn parse_perf_csv(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|line| {
        let mut fields = line.split(',');
        let value = fields.next()?;
        let _unit = fields.next()?;
        let event = fields.next()?;
        if event.starts_with("cache-misses") {
            value.trim().parse().ok()
        } else {
            None
        }
    })
}

/// Waits for `child` for at most `timeout`, killing it (our own child, by its handle) past that.
/// Both pipes are drained on their own threads so a chatty child can never block on a full pipe
/// while we wait. Returns the exit status (`None` when killed), stdout and stderr.
pub fn wait_with_timeout(
    child: &mut std::process::Child,
    timeout: std::time::Duration,
) -> Result<(Option<std::process::ExitStatus>, String, String), String> {
    use std::io::Read;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(status);
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ok((
        status,
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::{
        cpu_model, iso8601_utc, parse_perf_csv, parse_private, parse_stat_minflt, parse_status,
    };

    #[test]
    fn status_fields_are_read_in_bytes() {
        let status =
            "Name:\tbench\nVmPeak:\t  99999 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n";
        let mem = parse_status(status);
        assert_eq!(mem.peak_rss_bytes, 2048 * 1024);
        assert_eq!(mem.rss_bytes, 1024 * 1024);
        assert_eq!(parse_status("").rss_bytes, 0);
    }

    #[test]
    fn own_status_is_readable() {
        let mem = super::memory();
        assert!(mem.rss_bytes > 0 && mem.peak_rss_bytes >= mem.rss_bytes);
    }

    #[test]
    fn private_memory_adds_clean_and_dirty() {
        let rollup = "55d0a000-7ffd1000 ---p 00000000 00:00 0  [rollup]\nRss:  3000 kB\n\
                      Shared_Clean:  1000 kB\nShared_Dirty:  500 kB\nPrivate_Clean:  200 kB\n\
                      Private_Dirty:  1300 kB\nReferenced:  3000 kB\n";
        assert_eq!(parse_private(rollup), 1500 * 1024);
        assert_eq!(parse_private(""), 0);
        assert!(super::private_bytes(std::process::id()) > 0);
        assert!(super::children(u32::MAX).is_empty());
    }

    #[test]
    fn minflt_is_field_ten() {
        let stat = "19699 (a (b) c) R 19695 19695 1938 0 -1 4194304 97 0 5 0 0 0 0 0 20 0 1 0";
        assert_eq!(parse_stat_minflt(stat), Some(97));
        assert_eq!(parse_stat_minflt("garbage"), None);
        assert!(super::minor_faults() > 0);
    }

    #[test]
    fn cpu_ticks_are_fields_fourteen_and_fifteen() {
        let stat = "7 (a) b) R 1 1 1 0 -1 0 10 0 0 0 7 3 0 0 20 0 1 0";
        assert_eq!(super::parse_stat_cpu_ticks(stat), Some(10));
        assert_eq!(super::parse_stat_cpu_ticks("7 (a) R 1"), None);
        assert!(super::cpu_secs(std::process::id()).is_some());
        assert_eq!(super::cpu_secs(u32::MAX), None);
    }

    #[test]
    fn dates() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601_utc(1_795_314_810), "2026-11-22T02:33:30Z");
    }

    #[test]
    fn cpu_model_line() {
        let text = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t: fpu\n";
        assert_eq!(
            cpu_model(text).as_deref(),
            Some("Intel(R) Xeon(R) Processor")
        );
        assert_eq!(cpu_model("processor : 0\n"), None);
    }

    #[test]
    fn perf_csv() {
        assert_eq!(
            parse_perf_csv("1234567,,cache-misses,2001,100.00,,\n"),
            Some(1_234_567)
        );
        assert_eq!(
            parse_perf_csv("<not supported>,,cache-misses,0,100.00,,\n"),
            None
        );
        assert_eq!(parse_perf_csv("garbage\n"), None);
    }
}
