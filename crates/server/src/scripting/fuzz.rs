//! [`fuzz_check`]: the body of the `script_eval` fuzz target, kept in the crate so that the
//! stable test `tests/fuzz_scripting.rs` replays `fuzz/corpus/script_eval/` without nightly or
//! libFuzzer. Its promise is the one a server makes to every client: no script text and no
//! arguments crash it, hang it, or leave it unable to serve the next command.
//!
//! Input layout (every byte string decodes to something; nothing is rejected):
//!
//! ```text
//!  byte 0   bits 0-1  entry: 0 EVAL · 1 SCRIPT LOAD, EVALSHA · 2 FUNCTION LOAD of the text as
//!                     the body of function `f` · 3 FUNCTION LOAD of the text as a whole library;
//!                     entries 2 and 3 then FCALL f
//!           bit 2     the read-only form: EVAL_RO, EVALSHA_RO, FCALL_RO
//!           bit 3     HELLO 3 first: the caller speaks RESP3
//!           bits 4-5  flags: EVAL's shebang (none · `#!lua` · `#!lua flags=no-writes` ·
//!                     `#!lua flags=allow-oom,allow-stale,no-cluster`), or the function's
//!                     (none · {} · {'no-writes'} · {'allow-oom','allow-stale'})
//!           bit 6     run twice (the second run finds the script cached and the VM used)
//!           bit 7     inside MULTI … EXEC
//!  byte 1   numkeys: 0xff "-1" · 0xfe "x" · 0xfd "99999999999999999999" · else byte % 16
//!  rest     the script text, then its keys and arguments, split at NUL bytes
//!           (text cut to SCRIPT_BYTES_MAX, at most ARGS_MAX arguments)
//! ```
//!
//! One session per input, on one in-process [`Server`] shared by every input:
//!
//! ```text
//!  worker thread (I/O thread's stack) ─ FLUSHALL, SCRIPT FLUSH, FUNCTION FLUSH  → +OK each
//!   ─ HELLO 3? ─ SCRIPT LOAD / FUNCTION LOAD REPLACE ─ [MULTI] run [run] [EXEC]   armed
//!   ─ PING, SET, GET, EVAL of a known script                                   → exact replies
//!  watchdog thread, while armed: a script past RUN_MS_MAX gets SCRIPT KILL / FUNCTION KILL;
//!   one that wrote (UNKILLABLE), or still runs at 4 × RUN_MS_MAX, gets SHUTDOWN NOSAVE;
//!   past HANG_MAX armed, or past RSS_BYTES_MAX resident at any time: the process aborts
//! ```
//!
//! Invariants asserted: no panic; every reply is exactly one well-formed RESP frame
//! ([`frame_len`]), with only RESP2 types for a RESP2 caller and no RESP2 nulls for a RESP3 one;
//! a command stopped by SHUTDOWN NOSAVE writes no reply; no script is left running or busy; the
//! caller is never told to close; and after every input the keyspace and EVAL still work.
//! Memory stays bounded by the text cap and the Lua VM's own limit (`vm::MEMORY_LIMIT`), and the
//! process aborts past RSS_BYTES_MAX (see `guard_memory`). What neither the watchdog nor the
//! VM can interrupt stays as slow here as in Redis: a C function that runs long without
//! returning to Lua (a backtracking pattern, FUNCTION LOAD until its own 500 ms timeout).

use super::busy;
use crate::client::ClientState;
use crate::server::Server;
use parking_lot::Mutex;
use resp::Protocol;
use std::io::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Longest script text kept: enough for any construct, small enough that compiling is cheap.
pub const SCRIPT_BYTES_MAX: usize = 8 * 1024;
/// Most keys and arguments passed to the script.
pub const ARGS_MAX: usize = 16;
/// A script running this long is killed (SCRIPT KILL, else SHUTDOWN NOSAVE). Short, so that a
/// corpus of infinite loops replays in seconds; long enough for any honest seed.
pub const RUN_MS_MAX: u64 = 60;
/// `busy-reply-threshold` of the harness's server: a script is busy, hence killable, this soon.
const BUSY_AFTER_MS: i64 = 10;
/// Resident memory the harness may reach: the Lua VM's 1 GiB, the keyspace a script fills in
/// RUN_MS_MAX, replies, with room to spare.
const RSS_BYTES_MAX: u64 = 4 << 30;
/// How long one input may take before the harness gives up on it as hung (a reply that grows
/// without end, a pattern that backtracks for ever): libFuzzer's `-timeout`, for the stable test.
const HANG_MAX: Duration = Duration::from_secs(30);
/// How often the watchdog looks.
const WATCH_PERIOD: Duration = Duration::from_millis(2);
/// The stack of the thread a session runs on: the server's I/O threads' (`IO_THREAD_STACK`), so
/// that a stack overflow here is one that would crash the server, and none that would not.
const WORKER_STACK_BYTES: usize = crate::IO_THREAD_STACK;

/// Which command runs the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    Eval,
    EvalSha,
    FunctionBody,
    Library,
}

/// One decoded input; see the module comment.
#[derive(Debug)]
struct Input<'a> {
    entry: Entry,
    read_only: bool,
    resp3: bool,
    flags: u8,
    twice: bool,
    in_multi: bool,
    numkeys: Vec<u8>,
    text: &'a [u8],
    args: Vec<&'a [u8]>,
}

impl<'a> Input<'a> {
    fn decode(data: &'a [u8]) -> Input<'a> {
        let mode = data.first().copied().unwrap_or(0);
        let numkeys = match data.get(1).copied().unwrap_or(0) {
            0xff => b"-1".to_vec(),
            0xfe => b"x".to_vec(),
            0xfd => b"99999999999999999999".to_vec(),
            n => (n % 16).to_string().into_bytes(),
        };
        let rest = data.get(2..).unwrap_or_default();
        let mut parts = rest.split(|&b| b == 0);
        let text = parts.next().unwrap_or_default();
        Input {
            entry: [
                Entry::Eval,
                Entry::EvalSha,
                Entry::FunctionBody,
                Entry::Library,
            ][usize::from(mode & 3)],
            read_only: mode & 4 != 0,
            resp3: mode & 8 != 0,
            flags: (mode >> 4) & 3,
            twice: mode & 0x40 != 0,
            in_multi: mode & 0x80 != 0,
            numkeys,
            text: &text[..text.len().min(SCRIPT_BYTES_MAX)],
            args: parts.take(ARGS_MAX).collect(),
        }
    }

    /// The script EVAL and SCRIPT LOAD get: the text behind the shebang the flags choose.
    fn eval_body(&self) -> Vec<u8> {
        let shebang: &[u8] = match self.flags {
            0 => b"",
            1 => b"#!lua\n",
            2 => b"#!lua flags=no-writes\n",
            _ => b"#!lua flags=allow-oom,allow-stale,no-cluster\n",
        };
        [shebang, self.text].concat()
    }

    /// The library FUNCTION LOAD gets: the text as the body of `f` (with KEYS and ARGV named
    /// as EVAL names them, so one text runs both ways), or as the library itself.
    fn library(&self) -> Vec<u8> {
        if self.entry == Entry::Library {
            return [&b"#!lua name=fuzz\n"[..], self.text].concat();
        }
        let flags: &[u8] = match self.flags {
            0 => b"",
            1 => b", flags={}",
            2 => b", flags={'no-writes'}",
            _ => b", flags={'allow-oom', 'allow-stale'}",
        };
        [
            &b"#!lua name=fuzz\nredis.register_function{function_name='f', callback=function(KEYS, ARGV)\n"[..],
            self.text,
            b"\nend",
            flags,
            b"}",
        ]
        .concat()
    }

    /// The command that runs the script, given its sha for EVALSHA.
    fn run_command(&self, body: &[u8], sha: &[u8]) -> Vec<Vec<u8>> {
        let (name, target): (&[u8], &[u8]) = match (self.entry, self.read_only) {
            (Entry::Eval, false) => (b"EVAL", body),
            (Entry::Eval, true) => (b"EVAL_RO", body),
            (Entry::EvalSha, false) => (b"EVALSHA", sha),
            (Entry::EvalSha, true) => (b"EVALSHA_RO", sha),
            (_, false) => (b"FCALL", b"f"),
            (_, true) => (b"FCALL_RO", b"f"),
        };
        let mut command = vec![name.to_vec(), target.to_vec(), self.numkeys.clone()];
        command.extend(self.args.iter().map(|a| a.to_vec()));
        command
    }
}

/// The server every input runs against, the lock that runs one input at a time (scripts hold
/// the whole server, and `running` is one record), and whether the watchdog may act.
#[derive(Debug)]
struct Harness {
    server: Server,
    one_at_a_time: Mutex<()>,
    /// When the session's armed phase began; `None` outside it.
    armed: Mutex<Option<Instant>>,
    /// The input being checked, for the message when the harness gives up on it.
    input: Mutex<Vec<u8>>,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    static WATCHDOG: OnceLock<()> = OnceLock::new();
    let harness = HARNESS.get_or_init(|| {
        // Slow-script warnings and `redis.log` lines would flood the fuzzer's output.
        crate::log::set_level("nothing");
        let config = crate::Config {
            busy_reply_threshold: BUSY_AFTER_MS,
            ..crate::Config::default()
        };
        Harness {
            server: Server::new(config).expect("a server with the default configuration"),
            one_at_a_time: Mutex::new(()),
            armed: Mutex::new(None),
            input: Mutex::new(Vec::new()),
        }
    });
    WATCHDOG.get_or_init(|| {
        std::thread::Builder::new()
            .name("fuzz-watchdog".into())
            .spawn(move || watch(harness))
            .expect("spawn the watchdog");
    });
    harness
}

/// The watchdog's loop: stops overdue scripts while a session is in its armed phase (holding
/// `armed` while acting means no action lands after the session disarmed), and guards the
/// machine's memory.
fn watch(harness: &'static Harness) {
    for tick in 0_u64.. {
        std::thread::sleep(WATCH_PERIOD);
        if tick % 16 == 0 {
            guard_memory();
        }
        let armed = harness.armed.lock();
        if let Some(since) = *armed {
            if since.elapsed() > HANG_MAX {
                let input = resp::inline::repr(&harness.input.lock());
                give_up(&format!("input {input} still runs after {HANG_MAX:?}"));
            }
            stop_if_overdue(&harness.server);
        }
    }
}

/// Aborts the process once it holds more than RSS_BYTES_MAX. Some inputs grow without bound
/// outside Lua, where neither the VM's limit nor SCRIPT KILL reaches, in Redis as here: a
/// returned table that holds the same table twice at every level (`t = {t, t}` a thousand
/// times) is a reply of 2^1000 elements. Aborting reports such an input as a crash, as
/// libFuzzer's `-rss_limit_mb` would, instead of letting it take the machine's memory.
fn guard_memory() {
    let rss = crate::commands::memory::rss_bytes();
    if rss > RSS_BYTES_MAX {
        give_up(&format!("{rss} bytes resident, over {RSS_BYTES_MAX}"));
    }
}

/// Ends the process, saying why: the session's thread is stuck where no panic can reach it.
/// Written straight to stderr, as a test's captured output would be lost with the process.
fn give_up(why: &str) -> ! {
    let _ = writeln!(
        std::io::stderr(),
        "script_eval fuzz harness: {why}: aborting"
    );
    std::process::abort();
}

/// What another client would do about a script past RUN_MS_MAX: SCRIPT KILL (or FUNCTION
/// KILL), and SHUTDOWN NOSAVE when that is refused because the script wrote, or did not help.
fn stop_if_overdue(server: &Server) {
    let running = &server.scripting.running;
    let started = running.started_ms.load(Ordering::Acquire);
    let elapsed = busy::now_ms().saturating_sub(started);
    if started == 0 || elapsed < RUN_MS_MAX {
        return;
    }
    let eval = running.eval.load(Ordering::Acquire);
    let unkillable = matches!(busy::kill(server, eval), Err(e) if e.starts_with("UNKILLABLE"));
    if unkillable || elapsed >= 4 * RUN_MS_MAX {
        server.shutdown.store(true, Ordering::Release);
    }
}

/// The fuzz entry point: decodes `data` (see the module comment), runs it against the
/// harness's server on a thread with an I/O thread's stack, and panics on any violated
/// invariant.
pub fn fuzz_check(data: &[u8]) {
    let harness = harness();
    let _one = harness.one_at_a_time.lock();
    data.clone_into(&mut harness.input.lock());
    let input = Input::decode(data);
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("fuzz-script".into())
            .stack_size(WORKER_STACK_BYTES)
            .spawn_scoped(scope, || session(harness, &input))
            .expect("spawn the session's thread");
        if let Err(panic) = worker.join() {
            std::panic::resume_unwind(panic);
        }
    });
}

/// One input, start to end: a clean server, the set-up, the hostile part, the liveness check.
fn session(harness: &Harness, input: &Input<'_>) {
    let server = &harness.server;
    let mut conn = Conn::new(server);
    conn.expect(&[b"FLUSHALL"], b"+OK\r\n");
    conn.expect(&[b"SCRIPT", b"FLUSH"], b"+OK\r\n");
    conn.expect(&[b"FUNCTION", b"FLUSH"], b"+OK\r\n");
    let stopped = {
        let _armed = Armed::new(harness);
        hostile(&mut conn, input)
    };
    if stopped {
        // SHUTDOWN NOSAVE ends the connection with the server; the next one starts afresh.
        conn = Conn::new(server);
    }
    assert!(!server.scripting.running_now(), "a script is still running");
    assert!(!server.scripting.busy(), "the server is still busy");
    check_alive(&mut conn);
}

/// The watchdog's licence to act, for as long as this lives; on drop, even in a panic, it is
/// withdrawn and the SHUTDOWN NOSAVE it may have sent is taken back, so the next input starts
/// with a server that is not shutting down.
struct Armed<'h>(&'h Harness);

impl<'h> Armed<'h> {
    fn new(harness: &'h Harness) -> Armed<'h> {
        *harness.armed.lock() = Some(Instant::now());
        Armed(harness)
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        *self.0.armed.lock() = None;
        self.0.server.shutdown.store(false, Ordering::Release);
    }
}

/// The part a fuzzer controls: HELLO, loading, and the runs. Returns true when SHUTDOWN NOSAVE
/// stopped a script (the connection is then gone).
fn hostile(conn: &mut Conn<'_>, input: &Input<'_>) -> bool {
    if input.resp3 {
        conn.send(&[b"HELLO", b"3"]);
    }
    let body = input.eval_body();
    let sha = super::state::sha1_hex(&body);
    match input.entry {
        Entry::Eval => {}
        Entry::EvalSha => conn.send(&[b"SCRIPT", b"LOAD", &body]),
        Entry::FunctionBody | Entry::Library => {
            conn.send(&[b"FUNCTION", b"LOAD", b"REPLACE", &input.library()]);
        }
    }
    let run = input.run_command(&body, sha.as_bytes());
    let run: Vec<&[u8]> = run.iter().map(Vec::as_slice).collect();
    let mut commands: Vec<&[&[u8]]> = vec![&run];
    if input.twice {
        commands.push(&run);
    }
    if input.in_multi {
        commands.insert(0, &[b"MULTI"]);
        commands.push(&[b"EXEC"]);
    }
    commands
        .into_iter()
        .any(|command| conn.send_hostile(command))
}

/// After every input: the server answers, stores, reads, and runs scripts as if nothing had
/// happened, including one that allocates a few megabytes (as any honest script may): a VM left
/// full of a failed script's garbage refuses it with `not enough memory`.
fn check_alive(conn: &mut Conn<'_>) {
    conn.expect(&[b"PING"], b"+PONG\r\n");
    conn.expect(&[b"SET", b"fuzz:alive", b"yes"], b"+OK\r\n");
    conn.expect(&[b"GET", b"fuzz:alive"], b"$3\r\nyes\r\n");
    conn.expect(
        &[
            b"EVAL",
            b"return redis.call('get', KEYS[1])",
            b"1",
            b"fuzz:alive",
        ],
        b"$3\r\nyes\r\n",
    );
    conn.expect(
        &[
            b"EVAL",
            b"local t = {}\nfor i = 1, 200000 do t[i] = i end\nreturn #t",
            b"0",
        ],
        b":200000\r\n",
    );
}

/// A connection without a socket: a client state and the bytes its replies would be (the
/// HyperLogLog fuzz target's harness uses it too).
pub(crate) struct Conn<'s> {
    server: &'s Server,
    client: ClientState,
    pub(crate) out: Vec<u8>,
}

impl<'s> Conn<'s> {
    pub(crate) fn new(server: &'s Server) -> Conn<'s> {
        Conn {
            server,
            client: ClientState::new(server.fake_client(), true),
            out: Vec::new(),
        }
    }

    /// Runs `args`; the reply is left in `self.out`.
    fn dispatch(&mut self, args: &[&[u8]]) {
        self.out.clear();
        let mut mark = crate::clock::now();
        let now_ms = crate::server::unix_ms();
        let ran = crate::dispatch::dispatch(
            self.server,
            &mut self.client,
            &mut self.out,
            args,
            now_ms,
            &mut mark,
        );
        assert!(ran, "{} was postponed", show(args));
    }

    /// Runs `args` and checks its reply.
    pub(crate) fn send(&mut self, args: &[&[u8]]) {
        self.dispatch(args);
        self.check_reply(args);
    }

    /// The reply `dispatch` left is exactly one well-formed frame, and the caller stays
    /// connected.
    fn check_reply(&self, args: &[&[u8]]) {
        let resp3 = self.client.protocol == Protocol::Resp3;
        match frame_len(&self.out, resp3) {
            Ok(len) if len == self.out.len() => {}
            Ok(len) => panic!(
                "{}: {} bytes after the reply's one frame: {}",
                show(args),
                self.out.len() - len,
                resp::inline::repr(&self.out)
            ),
            Err(e) => panic!(
                "{}: malformed reply ({e}): {}",
                show(args),
                resp::inline::repr(&self.out)
            ),
        }
        assert!(!self.client.close_now, "{} closed the caller", show(args));
    }

    /// Runs a command the watchdog may stop. Returns true once SHUTDOWN NOSAVE was sent: the
    /// connection is then over. A script it stopped closes the caller and, outside EXEC,
    /// writes no reply (Redis exits mid-script); a SHUTDOWN NOSAVE that came just after the
    /// script ended leaves a whole reply.
    fn send_hostile(&mut self, args: &[&[u8]]) -> bool {
        if self.server.shutdown.load(Ordering::Acquire) {
            return true;
        }
        self.dispatch(args);
        if self.client.close_now {
            assert!(
                self.server.shutdown.load(Ordering::Acquire),
                "{} closed the caller",
                show(args)
            );
            if !args[0].eq_ignore_ascii_case(b"EXEC") {
                assert!(
                    self.out.is_empty(),
                    "{}: a reply after SHUTDOWN NOSAVE: {}",
                    show(args),
                    resp::inline::repr(&self.out)
                );
            }
            return true;
        }
        self.check_reply(args);
        self.server.shutdown.load(Ordering::Acquire)
    }

    /// Runs `args` and checks the reply byte for byte.
    pub(crate) fn expect(&mut self, args: &[&[u8]], reply: &[u8]) {
        self.send(args);
        assert_eq!(
            resp::inline::repr(&self.out),
            resp::inline::repr(reply),
            "{}",
            show(args)
        );
    }
}

/// A command as a log line, cut short.
pub(crate) fn show(args: &[&[u8]]) -> String {
    let mut text = String::new();
    for arg in args {
        text.push_str(&resp::inline::repr(arg));
        text.push(' ');
    }
    text.chars().take(300).collect()
}

/// The length of the one RESP frame at the start of `bytes`, every part checked: the type
/// bytes, lengths, integers, doubles, booleans and line ends. RESP3 types are allowed only
/// when `resp3`, RESP2's null bulk and null array only when not (Redis 7.0 writes `_` for both
/// to a RESP3 client). `Err` says what is wrong. Iterative: a deep reply cannot overflow it.
pub fn frame_len(bytes: &[u8], resp3: bool) -> Result<usize, String> {
    let mut at = 0;
    // Frames still to read: the one asked for plus the children of aggregates read so far.
    let mut pending: u64 = 1;
    while pending > 0 {
        pending -= 1;
        let (kind, line, next) = line_at(bytes, at)?;
        at = next;
        let children = match kind {
            b'+' | b'-' => 0,
            b':' => integer(line).map(|_| 0)?,
            b'$' => match length(line, !resp3)? {
                Some(len) => {
                    at = blob_end(bytes, at, len)?;
                    0
                }
                None => 0,
            },
            b'*' => length(line, !resp3)?.unwrap_or(0),
            _ if !resp3 => return Err(format!("RESP3 type {:?} for RESP2", char::from(kind))),
            _ => {
                let (children, end) = resp3_frame(kind, line, bytes, at)?;
                at = end;
                children
            }
        };
        pending = pending.saturating_add(children);
    }
    Ok(at)
}

/// A RESP3-only frame of type `kind` whose first line is `line`, its body (if any) starting at
/// `at`: the children it announces and where it ends.
fn resp3_frame(kind: u8, line: &[u8], bytes: &[u8], at: usize) -> Result<(u64, usize), String> {
    let count = || length(line, false).map(|n| n.unwrap_or(0));
    Ok(match kind {
        b'_' if line.is_empty() => (0, at),
        b',' => {
            double(line)?;
            (0, at)
        }
        b'#' if line == b"t" || line == b"f" => (0, at),
        // Redis 7.0 writes a script's `big_number` as the script gave it (CR and LF made
        // spaces), digits or not, so only the line's shape is checked.
        b'(' => (0, at),
        b'=' | b'!' => {
            let len = count()?;
            let end = blob_end(bytes, at, len)?;
            if kind == b'=' && (len < 4 || bytes[at + 3] != b':') {
                return Err("verbatim string without its `xxx:` format".into());
            }
            (0, end)
        }
        b'%' => (count()?.saturating_mul(2), at),
        b'~' | b'>' => (count()?, at),
        b'|' => (count()?.saturating_mul(2).saturating_add(1), at),
        _ => {
            return Err(format!(
                "type {:?} with line {}",
                char::from(kind),
                resp::inline::repr(line)
            ));
        }
    })
}

/// The frame starting at `at`: its type byte, the rest of its first line, and where the next
/// part starts. The line may hold neither CR nor LF: it ends at the first of them, with CRLF.
fn line_at(bytes: &[u8], at: usize) -> Result<(u8, &[u8], usize), String> {
    let Some(&kind) = bytes.get(at) else {
        return Err(format!("a frame missing at byte {at}"));
    };
    let start = at + 1;
    let end = bytes[start..]
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .map(|i| start + i)
        .ok_or_else(|| format!("a line without CRLF at byte {at}"))?;
    if bytes.get(end..end + 2) != Some(b"\r\n") {
        return Err(format!("a bare CR or LF at byte {end}"));
    }
    Ok((kind, &bytes[start..end], end + 2))
}

/// A canonical decimal i64: an optional minus, digits, no leading zero, no `-0`.
fn integer(line: &[u8]) -> Result<i64, String> {
    let text = std::str::from_utf8(line).map_err(|_| "integer not ASCII".to_owned())?;
    match text.parse::<i64>() {
        Ok(n) if n.to_string() == text => Ok(n),
        _ => Err(format!("integer {}", resp::inline::repr(line))),
    }
}

/// A length: `None` for the null `-1` when `null_allowed`, else at least 0.
fn length(line: &[u8], null_allowed: bool) -> Result<Option<u64>, String> {
    match integer(line)? {
        -1 if null_allowed => Ok(None),
        n if n >= 0 => Ok(Some(n as u64)),
        n => Err(format!("length {n}")),
    }
}

/// Where a blob of `len` bytes starting at `at` ends, after its CRLF.
fn blob_end(bytes: &[u8], at: usize, len: u64) -> Result<usize, String> {
    let end = usize::try_from(len)
        .ok()
        .and_then(|len| at.checked_add(len))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| format!("a blob of {len} bytes cut short"))?;
    if bytes.get(end..end + 2) != Some(b"\r\n") {
        return Err(format!("a blob of {len} bytes not ended by CRLF"));
    }
    Ok(end + 2)
}

/// A RESP3 double as Redis 7.0 writes one: `inf`, `-inf`, or `%.17g` of the value, which is a
/// number, `nan` or `-nan` (glibc prints the sign of a NaN; `0/0` in Lua has it set).
fn double(line: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(line).map_err(|_| "double not ASCII".to_owned())?;
    let number = text
        .bytes()
        .all(|b| b.is_ascii_digit() || b"+-.e".contains(&b))
        && text.parse::<f64>().is_ok();
    if number || matches!(text, "inf" | "-inf" | "nan" | "-nan") {
        Ok(())
    } else {
        Err(format!("double {}", resp::inline::repr(line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_redis_writes_are_accepted_whole() {
        let frames: &[(&[u8], bool)] = &[
            (b"+OK\r\n", false),
            (b"-ERR x y\r\n", false),
            (b":-42\r\n", false),
            (b"$-1\r\n", false),
            (b"*-1\r\n", false),
            (b"$3\r\na\r\n\r\n", false),
            (b"*2\r\n*1\r\n:0\r\n$0\r\n\r\n", false),
            (b"_\r\n", true),
            (b",-inf\r\n", true),
            (b",3.0000000000000001e-05\r\n", true),
            (b"#t\r\n", true),
            (b"(-123456789012345678901234567890\r\n", true),
            (b"(\r\n", true),
            (b"=7\r\ntxt:abc\r\n", true),
            (b"%1\r\n+a\r\n~1\r\n_\r\n", true),
            (b"|1\r\n+k\r\n+v\r\n:1\r\n", true),
        ];
        for &(frame, resp3) in frames {
            assert_eq!(
                frame_len(frame, resp3),
                Ok(frame.len()),
                "{}",
                resp::inline::repr(frame)
            );
        }
        assert_eq!(frame_len(b"+OK\r\n+OK\r\n", false), Ok(5));
    }

    #[test]
    fn malformed_frames_are_refused() {
        let frames: &[(&[u8], bool)] = &[
            (b"", false),
            (b"+OK\n", false),
            (b"-ERR a\rb\r\n", false),
            (b":01\r\n", false),
            (b":-0\r\n", false),
            (b"$4\r\nabc\r\n", false),
            (b"$-2\r\n", false),
            (b"*2\r\n:1\r\n", false),
            (b"_\r\n", false),
            (b"$-1\r\n", true),
            (b"*-1\r\n", true),
            (b",1.5x\r\n", true),
            (b"#x\r\n", true),
            (b"=3\r\nabc\r\n", true),
            (b"?\r\n", true),
        ];
        for &(frame, resp3) in frames {
            assert!(
                frame_len(frame, resp3).is_err(),
                "{}",
                resp::inline::repr(frame)
            );
        }
    }

    #[test]
    fn decoding_takes_any_bytes() {
        let input = Input::decode(b"");
        assert_eq!(input.entry, Entry::Eval);
        assert_eq!(input.numkeys, b"0");
        let input = Input::decode(b"\xff\xfereturn 1\0k\0a\0b");
        assert_eq!(input.entry, Entry::Library);
        assert!(input.read_only && input.resp3 && input.twice && input.in_multi);
        assert_eq!(input.numkeys, b"x");
        assert_eq!(input.text, b"return 1");
        assert_eq!(input.args, [&b"k"[..], b"a", b"b"]);
        let long = [&[0u8, 3][..], &vec![b'-'; 3 * SCRIPT_BYTES_MAX]].concat();
        assert_eq!(Input::decode(&long).text.len(), SCRIPT_BYTES_MAX);
    }
}
