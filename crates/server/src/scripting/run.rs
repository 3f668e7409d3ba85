//! One script run: what `redis.call` works with while a script (EVAL, EVALSHA, FCALL…) runs,
//! and how a command from the script is checked and run (Redis's `scriptCall`).
//!
//! ```text
//!  EVAL handler (every shard locked) ─▶ Run { server, locks, script client, flags… }
//!     └─ Current::enter(&mut run) ─── the script runs ── redis.call ─▶ Current::with(|run| …)
//!                                                                      └─ command::run(locks held)
//!     guard dropped: the pointer is cleared before `run` goes out of scope
//! ```
//! The Lua callbacks are `'static` closures, so they reach the run through a thread-local
//! pointer that is set only while the script runs on this thread (`Current`). That is this
//! module's one unsafe block. Scripts never nest (EVAL and FCALL are NOSCRIPT), so at most one
//! run is current per thread, and a callback borrows it only for the duration of one call.

use crate::client::ClientState;
use crate::command::{self, Found, Locks, flag};
use crate::server::Server;
use std::cell::Cell;
use std::sync::atomic::Ordering;

/// A script run in progress.
pub struct Run<'s, 'c> {
    pub server: &'s Server,
    pub locks: &'c mut Locks<'s>,
    /// The client the script's commands run as (Redis's Lua client): the caller's database,
    /// RESP2 unless `redis.setresp` changed it.
    pub client: &'c mut ClientState,
    /// The time every command of the script sees (Redis's script time snapshot).
    pub now_ms: u64,
    /// EVAL_RO, FCALL_RO, or a `no-writes` script: write commands are refused.
    pub read_only: bool,
    /// `allow-oom`: write commands run even past maxmemory.
    pub allow_oom: bool,
    /// Past maxmemory when the script started (Redis's `pre_command_oom_state`).
    pub oom_at_start: bool,
    /// `redis.set_repl`'s flags: whether the script's writes reach the append-only file.
    pub propagate: bool,
    /// The script's reply buffer for one command at a time.
    pub reply: Vec<u8>,
}

impl std::fmt::Debug for Run<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

/// `redis.set_repl` flags (`PROPAGATE_AOF`, `PROPAGATE_REPL`).
pub const REPL_AOF: i64 = 1;
pub const REPL_REPLICA: i64 = 2;

thread_local! {
    static CURRENT: Cell<*mut Run<'static, 'static>> = const { Cell::new(std::ptr::null_mut()) };
}

/// The run a script on this thread works with; see the module comment.
#[derive(Debug)]
pub struct Current {
    _private: (),
}

impl Current {
    /// Makes `run` current until the guard drops.
    pub fn enter(run: &mut Run<'_, '_>) -> Current {
        let pointer: *mut Run<'_, '_> = run;
        CURRENT.set(pointer.cast());
        Current { _private: () }
    }

    /// Runs `f` with the current run; `None` when no script runs on this thread (a library
    /// function called from outside a script, or at FUNCTION LOAD time).
    pub fn with<R>(f: impl FnOnce(&mut Run<'_, '_>) -> R) -> Option<R> {
        let pointer = CURRENT.replace(std::ptr::null_mut());
        if pointer.is_null() {
            return None;
        }
        // SAFETY: `pointer` was set by `enter` from a `&mut Run` that outlives the guard, and
        // the guard clears it on drop, so it points to a live run. It is taken out of the cell
        // while `f` borrows it, so no second `&mut` can be made from it (a nested `with` sees
        // null), and the lifetimes erased by the cast are not observable: `f` gets the run
        // only for this call, with fresh lifetimes.
        let result = f(unsafe { &mut *pointer });
        CURRENT.set(pointer);
        Some(result)
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        CURRENT.set(std::ptr::null_mut());
    }
}

/// Why `spec` may not run from a script with `argc` arguments (`scriptVerifyCommandArity`,
/// then the NOSCRIPT flag), if it may not.
fn refuse(spec: &command::Spec, argc: usize) -> Option<&'static str> {
    if !command::arity_ok(spec.arity, argc) {
        return Some("Wrong number of args calling Redis command from script");
    }
    if spec.flags & flag::NOSCRIPT != 0 {
        return Some("This Redis command is not allowed from script");
    }
    None
}

/// What a command run from a script gave.
#[derive(Debug)]
pub enum Called {
    /// Its reply, in the script client's protocol, in `Run::reply`.
    Reply,
    /// Refused before it ran (Redis's `scriptCall` errors): the text, `-CODE …` or plain.
    Refused(String),
}

impl Run<'_, '_> {
    /// Redis's `scriptCall`: finds the command, checks it may run from this script, and runs it
    /// with the script's locks.
    pub fn call(&mut self, args: &[&[u8]]) -> Called {
        self.reply.clear();
        let (index, spec) = match command::resolve(args) {
            Found::Command(index, spec) => (index, spec),
            Found::UnknownCommand | Found::UnknownSubcommand => {
                const UNKNOWN: &str = "Unknown Redis command called from script";
                self.server.count_error(format!("ERR {UNKNOWN}").as_bytes());
                return Called::Refused(UNKNOWN.into());
            }
        };
        if let Some(text) = refuse(spec, args.len()) {
            return self.refused(index, text);
        }
        let state = &self.server.scripting.running;
        if self.read_only && spec.flags & (flag::WRITE | flag::MAY_REPLICATE) != 0 {
            return self.refused(
                index,
                "Write commands are not allowed from read-only scripts.",
            );
        }
        let wrote = state.wrote.load(Ordering::Relaxed);
        if spec.flags & flag::WRITE != 0 && !wrote {
            if crate::bgsave::writes_denied(self.server) {
                return self.refused(index, MISCONF);
            }
            if let Some(text) = crate::aof::write_denied(self.server) {
                return self.refused(index, &format!("-{text}"));
            }
        }
        if !self.allow_oom && self.oom_at_start && !wrote && spec.flags & flag::DENYOOM != 0 {
            return self.refused(
                index,
                "-OOM command not allowed when used memory > 'maxmemory'.",
            );
        }
        if spec.flags & flag::WRITE != 0 {
            state.wrote.store(true, Ordering::Relaxed);
        }
        let pending = crate::propagate::pending_len();
        let mut mark = crate::clock::now();
        command::run(
            self.server,
            self.client,
            &mut self.reply,
            self.locks,
            index,
            args,
            self.now_ms,
            &mut mark,
        );
        if !self.propagate {
            crate::propagate::truncate_pending(pending);
        }
        Called::Reply
    }

    /// A command refused before it ran: counted as rejected, as Redis's `scriptCall` does.
    fn refused(&self, index: usize, text: &str) -> Called {
        self.server.command_stats[index]
            .rejected
            .fetch_add(1, Ordering::Relaxed);
        let counted = match text.strip_prefix('-') {
            Some(coded) => coded.to_owned(),
            None => format!("ERR {text}"),
        };
        self.server.count_error(counted.as_bytes());
        Called::Refused(text.to_owned())
    }
}

/// The MISCONF error a script's first write gets when RDB saves are failing.
const MISCONF: &str = "-MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";
