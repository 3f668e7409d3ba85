//! What the types suite's measurements share: the error that tells a refused command from a
//! broken measurement ([`MeasureError`]), checked pipelined loads, resident memory around a load
//! ([`measure_load`]), calls timed one at a time ([`time_calls`]) and the probe that finds out
//! before a run whether densekv answers a scenario's commands at all ([`probe`]).
//!
//! ```text
//! measure_load   warm-up: the load's first ≤ 50 commands, then DEL of its key ─
//!                MEMORY PURGE, used₀, VmRSS₀ (still for 0.3 s) ─ open a connection ─ load
//!                (every reply checked) ─ close it ─ wait ≥ settle, then until VmRSS is still
//!                for 2 s ─ MEMORY PURGE, wait until still for 0.3 s ─ VmRSS₁, used₁
//!                ΔVmRSS = VmRSS₁ − VmRSS₀, Δused = used₁ − used₀
//! time_calls     send one command, read its reply, check it; repeat; ms of every call
//! ```
//!
//! The memory protocol is the server suite's (`server_memory.rs`: its still and slack times, and
//! the 12 s settle that waits out jemalloc's 10 s dirty-page decay in redis-server), with three
//! differences. The load's connection is closed before the second reading, so neither server is
//! charged for a query buffer that a pipelined 1 MiB write left behind (redis-server shrinks an
//! idle client's buffer only every few seconds); the first reading has no client either. Both
//! readings follow a `MEMORY PURGE` (jemalloc's purge of every arena in redis-server, an immediate
//! decay of every shard heap and a `malloc_trim` in densekv; a server that refuses it is read
//! without, and `purged` says so): the settle alone did not always suffice. Growing a 12.5 MB
//! string in 1 MiB steps leaves ~15 MiB of freed extents in jemalloc, and in one of two identical
//! redis-servers they were still resident 14 s after the load (ΔVmRSS 27.1 MiB against 12.3 MiB),
//! where the purge reads 12.2 MiB in both. The purge makes the figure what the data holds rather
//! than when the allocator's clock ran.
//!
//! And a warm-up before the first reading runs the load's first commands on the load's own key and
//! deletes it, so what a server pays once for the first use of a command rather than for the data
//! is in the baseline of both: code paged in from the binary (densekv's first SETBITs fault in 256
//! KiB of its text, file-backed pages VmRSS counts), allocator metadata for a new size class, the
//! key's place in the keyspace. Without it the 100M-bit bitmap's ΔVmRSS was 12,496 KiB in densekv
//! against 12,372 KiB in redis-server, where densekv's anonymous memory alone was 12,240 KiB: the
//! first-use costs, not the bitmap, decided the comparison.
//!
//! An error reply is [`MeasureError::Refused`]: the server does not do what the scenario needs
//! (`-ERR unknown command 'GEOADD'` while densekv's GEO is being written), and the suite reports
//! the scenario *not measured* on that server. Anything else that goes wrong (a wrong reply, an
//! I/O error, a crash) is [`MeasureError::Failed`], a failure of the run.

use std::fmt;
use std::time::{Duration, Instant};

use crate::server_memory::{QUIET_SLACK, QUIET_STILL};
use crate::server_proc::{REPLY_TIMEOUT, ServerProcess};
use crate::server_resp::{Connection, Reply, encode};

/// The first reading is taken once VmRSS has been still this long (as `server_memory` does).
const BEFORE_STILL: Duration = Duration::from_millis(300);

/// Why a measurement has no figure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeasureError {
    /// The server answered one of the scenario's commands with an error: `<command> replied
    /// -<error>`.
    Refused(String),
    /// Anything else: a wrong reply, an I/O error, a server that exited.
    Failed(String),
}

impl fmt::Display for MeasureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(why) | Self::Failed(why) => f.write_str(why),
        }
    }
}

/// A shortened command line for messages: arguments past the sixth and bytes past the 40th of
/// one argument are elided (a SETRANGE chunk is 64 KiB).
pub fn shown<A: AsRef<[u8]>>(args: &[A]) -> String {
    const ARGS_SHOWN_MAX: usize = 6;
    const ARG_BYTES_SHOWN_MAX: usize = 40;
    let mut words: Vec<String> = args
        .iter()
        .take(ARGS_SHOWN_MAX)
        .map(|arg| {
            let bytes = arg.as_ref();
            let head = &bytes[..bytes.len().min(ARG_BYTES_SHOWN_MAX)];
            let mut word = String::from_utf8_lossy(head).into_owned();
            if bytes.len() > ARG_BYTES_SHOWN_MAX {
                word.push('…');
            }
            word
        })
        .collect();
    if args.len() > ARGS_SHOWN_MAX {
        words.push(format!("… ({} arguments)", args.len()));
    }
    words.join(" ")
}

/// Connects to the server at `port`; `role` names the connection in the error.
pub fn open(port: u16, role: &str) -> Result<Connection, MeasureError> {
    Connection::open(port, REPLY_TIMEOUT)
        .map_err(|e| MeasureError::Failed(format!("{role}: cannot connect: {e}")))
}

/// Sends `args` and returns the reply; an error reply is `Refused`, an I/O error `Failed`.
pub fn ask<A: AsRef<[u8]>>(connection: &mut Connection, args: &[A]) -> Result<Reply, MeasureError> {
    match connection.command(args) {
        Ok(Reply::Error(text)) => Err(MeasureError::Refused(format!(
            "{} replied -{text}",
            shown(args)
        ))),
        Ok(reply) => Ok(reply),
        Err(e) => Err(MeasureError::Failed(format!("{}: {e}", shown(args)))),
    }
}

/// [`ask`] for a command whose reply is an integer.
pub fn ask_integer<A: AsRef<[u8]>>(
    connection: &mut Connection,
    args: &[A],
) -> Result<i64, MeasureError> {
    match ask(connection, args)? {
        Reply::Integer(n) => Ok(n),
        other => Err(MeasureError::Failed(format!(
            "{} replied {other}, not an integer",
            shown(args)
        ))),
    }
}

/// One command of a load and the integer it must be answered with (`None`: any integer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub args: Vec<Vec<u8>>,
    pub reply: Option<i64>,
}

impl Step {
    /// A command answered with `reply`.
    pub fn new<A: AsRef<[u8]>>(args: &[A], reply: i64) -> Self {
        Self {
            args: args.iter().map(|a| a.as_ref().to_vec()).collect(),
            reply: Some(reply),
        }
    }

    /// A command answered with any integer (a PFADD that may or may not change a register).
    pub fn any_integer<A: AsRef<[u8]>>(args: &[A]) -> Self {
        Self {
            reply: None,
            ..Self::new(args, 0)
        }
    }
}

/// A pipelined write holds at most this many commands…
pub const BATCH_STEPS_MAX: usize = 1000;
/// …and at most about this many bytes (the dense bitmap's 64 KiB SETRANGE chunks).
const BATCH_BYTES_MAX: usize = 1 << 20;

/// Sends `steps` in pipelined batches and checks every reply against its step: the first error
/// reply is `Refused`, the first other difference `Failed`.
pub fn run_steps(connection: &mut Connection, steps: &[Step]) -> Result<(), MeasureError> {
    let mut encoded = Vec::new();
    let mut first = 0;
    while first < steps.len() {
        encoded.clear();
        let mut end = first;
        while end < steps.len()
            && end - first < BATCH_STEPS_MAX
            && (end == first || encoded.len() < BATCH_BYTES_MAX)
        {
            encode(&steps[end].args, &mut encoded);
            end += 1;
        }
        let replies = connection
            .pipeline(&encoded, end - first)
            .map_err(|e| MeasureError::Failed(format!("loading commands {first}..{end}: {e}")))?;
        for (step, reply) in steps[first..end].iter().zip(replies) {
            check_step(step, &reply)?;
        }
        first = end;
    }
    Ok(())
}

fn check_step(step: &Step, reply: &Reply) -> Result<(), MeasureError> {
    match reply {
        Reply::Integer(n) if step.reply.is_none_or(|r| r == *n) => Ok(()),
        Reply::Error(text) => Err(MeasureError::Refused(format!(
            "{} replied -{text}",
            shown(&step.args)
        ))),
        other => Err(MeasureError::Failed(format!(
            "{} replied {other}, expected {}",
            shown(&step.args),
            step.reply
                .map_or("an integer".to_owned(), |r| format!(":{r}"))
        ))),
    }
}

/// The memory of one load: VmRSS and `used_memory` before and after, and the load's time.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MemoryDelta {
    pub rss_before_bytes: u64,
    pub rss_after_bytes: u64,
    /// `None` when the server does not report `used_memory`.
    pub used_memory_before_bytes: Option<u64>,
    pub used_memory_after_bytes: Option<u64>,
    pub load_secs: f64,
    /// Whether the server answered both `MEMORY PURGE`s with +OK.
    pub purged: bool,
}

impl MemoryDelta {
    /// ΔVmRSS in bytes (negative if the server shrank).
    pub fn rss_delta_bytes(&self) -> f64 {
        self.rss_after_bytes as f64 - self.rss_before_bytes as f64
    }

    /// Δused_memory in bytes, when the server reports it.
    pub fn used_delta_bytes(&self) -> Option<f64> {
        Some(self.used_memory_after_bytes? as f64 - self.used_memory_before_bytes? as f64)
    }

    /// Δused_memory / ΔVmRSS: 1.0 when the server's accounting matches what the kernel sees.
    pub fn used_over_rss(&self) -> Option<f64> {
        let rss = self.rss_delta_bytes();
        (rss > 0.0).then(|| self.used_delta_bytes().map(|used| used / rss))?
    }
}

/// The warm-up runs at most this many of the load's first commands (module doc).
pub const WARM_UP_STEPS_MAX: usize = 50;

/// Runs `load` on a connection of its own into `server` and reads the memory around it (module
/// doc), the second reading after at least `settle`. First the warm-up: the first
/// [`WARM_UP_STEPS_MAX`] of `warm_up` (the load's first commands), then `DEL key`.
pub fn measure_load<T>(
    server: &ServerProcess,
    settle: Duration,
    (warm_up, key): (&[Step], &str),
    load: impl FnOnce(&mut Connection) -> Result<T, MeasureError>,
) -> Result<(T, MemoryDelta), MeasureError> {
    let mut connection = open(server.port, "warm-up")?;
    run_steps(
        &mut connection,
        &warm_up[..warm_up.len().min(WARM_UP_STEPS_MAX)],
    )?;
    if ask_integer(&mut connection, &["DEL", key])? != 1 {
        return Err(MeasureError::Failed(format!(
            "the warm-up left no key {key} to delete"
        )));
    }
    drop(connection);
    let purged_before = purge(server.port)?;
    // INFO before VmRSS: its first run pages in code of its own (up to 64 KiB of densekv's text),
    // which the load must not be charged for.
    let used_memory_before_bytes = server.used_memory();
    let rss_before_bytes = server.wait_quiet(BEFORE_STILL, Duration::ZERO, QUIET_SLACK);
    let mut connection = open(server.port, "load")?;
    let started = Instant::now();
    let loaded = load(&mut connection)?;
    let load_secs = started.elapsed().as_secs_f64();
    drop(connection);
    // A smoke run's short settle only needs the server to have answered everything.
    let still = if settle.is_zero() {
        BEFORE_STILL
    } else {
        QUIET_STILL
    };
    server.wait_quiet(still, settle, settle + QUIET_SLACK);
    let purged_after = purge(server.port)?;
    let rss_after_bytes = server.wait_quiet(BEFORE_STILL, Duration::ZERO, QUIET_SLACK);
    let memory = MemoryDelta {
        rss_before_bytes,
        rss_after_bytes,
        used_memory_before_bytes,
        used_memory_after_bytes: server.used_memory(),
        load_secs,
        purged: purged_before && purged_after,
    };
    Ok((loaded, memory))
}

/// `MEMORY PURGE` on a connection of its own: whether it was answered +OK (a refusal is not an
/// error: the reading is then taken without it).
fn purge(port: u16) -> Result<bool, MeasureError> {
    let mut connection = open(port, "MEMORY PURGE")?;
    match connection.command(&["MEMORY", "PURGE"]) {
        Ok(reply) => Ok(reply == Reply::Simple("OK".to_owned())),
        Err(e) => Err(MeasureError::Failed(format!("MEMORY PURGE: {e}"))),
    }
}

/// Sends `args` `calls` times, one at a time, checking each reply with `check`; returns the ms
/// of every call, from writing the command to reading its reply.
pub fn time_calls<A: AsRef<[u8]>>(
    connection: &mut Connection,
    args: &[A],
    calls: usize,
    check: impl Fn(&Reply) -> Result<(), String>,
) -> Result<Vec<f64>, MeasureError> {
    let mut times_ms = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let reply = ask(connection, args)?;
        times_ms.push(started.elapsed().as_secs_f64() * 1e3);
        check(&reply).map_err(|why| MeasureError::Failed(format!("{}: {why}", shown(args))))?;
    }
    Ok(times_ms)
}

/// The reply kind a probe expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Integer,
    Array,
}

/// Sends each command once and returns the first refusal: an error reply, or a reply of another
/// kind than expected (`None` when all were answered as expected).
pub fn probe(port: u16, commands: &[(&[&str], Expect)]) -> Result<Option<String>, String> {
    let mut connection =
        Connection::open(port, REPLY_TIMEOUT).map_err(|e| format!("probe: cannot connect: {e}"))?;
    for &(args, expect) in commands {
        let reply = connection
            .command(args)
            .map_err(|e| format!("probe: {}: {e}", args.join(" ")))?;
        let fits = match (expect, &reply) {
            (_, Reply::Error(_)) => false,
            (Expect::Integer, reply) => matches!(reply, Reply::Integer(_)),
            (Expect::Array, reply) => matches!(reply, Reply::Array(Some(_))),
        };
        if !fits {
            return Ok(Some(format!("{} replied {reply}", args.join(" "))));
        }
    }
    Ok(None)
}

/// A uniform draw in `[0, 1)` with 53 random bits.
pub fn unit(rng: &mut crate::rng::SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
// The expected figures are small integers and halves, exact in binary floating point.
#[allow(clippy::float_cmp)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::{
        Expect, MeasureError, MemoryDelta, Step, ask_integer, measure_load, open, probe, run_steps,
        shown, time_calls,
    };
    use crate::server_proc::{ServerKind, ServerProcess};
    use crate::server_resp::Reply;

    #[test]
    fn long_commands_are_shortened() {
        let chunk = vec![b'x'; 65_536];
        let args: [&[u8]; 4] = [b"SETRANGE", b"bitmap", b"0", &chunk];
        let text = shown(&args);
        assert!(text.starts_with("SETRANGE bitmap 0 xxxx"), "{text}");
        assert!(text.ends_with('…') && text.len() < 80, "{text}");
        let many: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        assert_eq!(shown(&many), "0 1 2 3 4 5 … (10 arguments)");
    }

    #[test]
    fn memory_deltas() {
        let m = MemoryDelta {
            rss_before_bytes: 1000,
            rss_after_bytes: 3000,
            used_memory_before_bytes: Some(500),
            used_memory_after_bytes: Some(2500),
            load_secs: 0.5,
            purged: true,
        };
        assert_eq!(m.rss_delta_bytes(), 2000.0);
        assert_eq!(m.used_delta_bytes(), Some(2000.0));
        assert_eq!(m.used_over_rss(), Some(1.0));
        let shrank = MemoryDelta {
            rss_after_bytes: 900,
            used_memory_after_bytes: None,
            ..m
        };
        assert_eq!(shrank.used_over_rss(), None);
    }

    /// Against a redis-server this test starts: a checked load, its memory, timed calls, the
    /// probe; then refusals from one whose SETBIT is renamed away.
    #[test]
    fn the_driver_drives_a_real_redis_server() {
        let server = ServerProcess::start(ServerKind::Redis, Path::new("redis-server"))
            .expect("redis-server starts (the suite's tests need it, as the workspace's do)");
        let steps: Vec<Step> = (0..3000)
            .map(|i| Step::new(&["SETBIT", "b", &(i * 8).to_string(), "1"], 0))
            .collect();
        let warm_up = (&steps[..], "b");
        let ((), memory) =
            measure_load(&server, Duration::ZERO, warm_up, |c| run_steps(c, &steps)).unwrap();
        assert!(memory.rss_after_bytes > 0 && memory.load_secs > 0.0 && memory.purged);
        assert!(memory.used_delta_bytes().unwrap() > 2000.0, "{memory:?}");
        let mut c = open(server.port, "test").unwrap();
        let times = time_calls(&mut c, &["BITCOUNT", "b"], 3, |r| match r {
            Reply::Integer(3000) => Ok(()),
            other => Err(format!("replied {other}")),
        })
        .unwrap();
        assert_eq!(times.len(), 3);
        let wrong = run_steps(&mut c, &[Step::new(&["SETBIT", "b", "0", "1"], 0)]);
        assert!(matches!(wrong, Err(MeasureError::Failed(_))), "{wrong:?}");
        let commands: [(&[&str], Expect); 2] = [
            (&["SETBIT", "p", "7", "1"], Expect::Integer),
            (&["BITCOUNT", "p"], Expect::Integer),
        ];
        assert_eq!(probe(server.port, &commands), Ok(None));
        let wrong_kind: [(&[&str], Expect); 1] = [(&["BITCOUNT", "p"], Expect::Array)];
        assert_eq!(
            probe(server.port, &wrong_kind),
            Ok(Some("BITCOUNT p replied :1".to_owned()))
        );

        let refusing = ServerProcess::start_with(
            ServerKind::Redis,
            Path::new("redis-server"),
            &["--rename-command", "SETBIT", ""].map(String::from),
        )
        .expect("redis-server starts");
        let refusal = probe(refusing.port, &commands).unwrap().unwrap();
        assert!(
            refusal.starts_with("SETBIT p 7 1 replied -ERR unknown command"),
            "{refusal}"
        );
        let mut c = open(refusing.port, "test").unwrap();
        match ask_integer(&mut c, &["SETBIT", "b", "1", "1"]) {
            Err(MeasureError::Refused(why)) => assert!(why.contains("unknown command"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            run_steps(&mut c, &steps[..2]),
            Err(MeasureError::Refused(_))
        ));
    }
}
