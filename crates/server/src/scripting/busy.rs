//! Busy scripts: `busy-reply-threshold` (alias `lua-time-limit`), `-BUSY`, SCRIPT KILL and
//! FUNCTION KILL (Redis's `scriptInterrupt`, `scriptKill`).
//!
//! ```text
//!  count hook, every 100,000 Lua instructions of a running script:
//!    elapsed ≥ threshold ∧ ¬busy → busy ← true, "Slow script detected" logged
//!    busy → the thread's other connections are served (`net::serve_others`): new ones
//!           accepted, their commands answered, so SCRIPT KILL arrives with one I/O thread
//!    SHUTDOWN NOSAVE → raise, whether or not the script wrote (its effects are not written
//!           to the AOF: the server is exiting without saving)
//!    kill → raise {err = "ERR Script killed by user with SCRIPT KILL..."}, and from then on
//!           at every line, so a pcall in the script cannot keep it alive
//!  other clients, while busy: every command without ALLOW_BUSY gets -BUSY (dispatch), and a
//!  thread waiting for a shard the script holds stops waiting and replies -BUSY too
//!  SCRIPT KILL / FUNCTION KILL: NOTBUSY unless busy; UNKILLABLE once the script wrote;
//!  -BUSY when the other kind of script runs; else kill ← true and OK
//! ```

use crate::server::Server;
use std::sync::LazyLock;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Lua instructions between two checks (Redis's `LUA_MASKCOUNT` period).
pub const HOOK_PERIOD: i32 = 100_000;

static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Monotonic milliseconds (from the first call).
pub fn now_ms() -> u64 {
    EPOCH.elapsed().as_millis() as u64
}

/// `shared.slowevalerr` and `shared.slowscripterr`.
pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// The `-BUSY` error for the script running now.
pub fn busy_error(server: &Server) -> &'static str {
    if server.scripting.running.eval.load(Ordering::Relaxed) {
        BUSY_EVAL
    } else {
        BUSY_FUNCTION
    }
}

/// Starts watching the script about to run: the VM's count hook (installed when the VM was
/// built, `vm.rs`) asks `check` from now on.
pub fn arm() {
    super::lua_ext::set_hook_check(Some(check));
}

/// Stops watching: the script ended.
pub fn disarm() {
    super::lua_ext::set_hook_check(None);
}

/// The count hook's decision: `Some(error)` to stop the script with that error. A busy
/// script's thread serves its other connections first (`net::serve_others`), so a SCRIPT KILL
/// or SHUTDOWN NOSAVE sent to it takes effect at once.
fn check() -> Option<&'static str> {
    super::run::Current::with(|run| {
        let server = run.server;
        if !note_busy(server) {
            return None;
        }
        crate::net::serve_others();
        if server.shutdown.load(Ordering::Acquire) {
            return Some("Script killed by SHUTDOWN NOSAVE...");
        }
        if server.scripting.running.kill.load(Ordering::Acquire) {
            crate::log::warning("Lua script killed by user with SCRIPT KILL.");
            return Some("Script killed by user with SCRIPT KILL...");
        }
        None
    })
    .flatten()
}

/// Marks the running script busy once it has passed `busy-reply-threshold`; whether it is.
fn note_busy(server: &Server) -> bool {
    let running = &server.scripting.running;
    if running.busy.load(Ordering::Relaxed) {
        return true;
    }
    let threshold = server.config.read().busy_reply_threshold;
    let elapsed = now_ms().saturating_sub(running.started_ms.load(Ordering::Relaxed));
    if elapsed < threshold.max(0) as u64 {
        return false;
    }
    running.busy.store(true, Ordering::Release);
    let (name, _) = running.name.lock().clone();
    let command = if running.eval.load(Ordering::Relaxed) {
        "SCRIPT KILL"
    } else {
        "FUNCTION KILL"
    };
    crate::log::warning(&format!(
        "Slow script detected: still in execution after {elapsed} milliseconds. You can try killing the script using the {command} command. Script name is: {name}."
    ));
    true
}

/// SCRIPT KILL (`eval`) or FUNCTION KILL: the reply, `Ok` meaning `+OK`.
pub fn kill(server: &Server, eval: bool) -> Result<(), &'static str> {
    let running = &server.scripting.running;
    if running.started_ms.load(Ordering::Acquire) == 0 || !running.busy.load(Ordering::Acquire) {
        return Err("NOTBUSY No scripts in execution right now.");
    }
    if running.wrote.load(Ordering::Acquire) {
        return Err(
            "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
        );
    }
    let running_eval = running.eval.load(Ordering::Acquire);
    if eval && !running_eval {
        return Err(BUSY_FUNCTION);
    }
    if !eval && running_eval {
        return Err(BUSY_EVAL);
    }
    running.kill.store(true, Ordering::Release);
    Ok(())
}
