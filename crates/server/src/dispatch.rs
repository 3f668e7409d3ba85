//! From parsed arguments to a reply: lookup (a container's subcommand by `args[1]`), arity,
//! DEBUG's permission, authentication, MULTI queueing, locking, run — in the order Redis's
//! `processCommand` checks them, so the same bad input gets the same error, counted the same
//! way (errorstats; `rejected_calls` of the command or subcommand it names).

use crate::client::{ClientState, Queued, ReplyMode};
use crate::clock::Mark;
use crate::command::{self, COMMANDS, Found, Spec, flag};
use crate::server::Server;
use resp::ReplyWriter;
use std::sync::atomic::Ordering;

/// Runs one command from `args` (at least one argument), appending its reply to `out`. `mark`
/// is when work on it began (see `command::run`). Returns false when a CLIENT PAUSE postponed
/// it (`state.postponed`): the request must stay unconsumed and be sent here again later.
pub fn dispatch(
    server: &Server,
    state: &mut ClientState,
    out: &mut Vec<u8>,
    args: &[&[u8]],
    now_ms: u64,
    mark: &mut Mark,
) -> bool {
    let reply_at = out.len();
    state
        .shared
        .last_interaction_ms
        .store(now_ms, Ordering::Relaxed);
    let queued = route(server, state, out, args, now_ms, mark);
    if state.postponed {
        return false;
    }
    match state.reply_mode {
        ReplyMode::On => {}
        ReplyMode::Off => out.truncate(reply_at),
        ReplyMode::Skip => {
            out.truncate(reply_at);
            // SKIP drops exactly the next command's reply; CLIENT REPLY SKIP itself set it.
            if !queued.is_client_reply {
                state.reply_mode = ReplyMode::On;
            }
        }
    }
    if !state.pushes.is_empty() {
        out.extend_from_slice(&state.pushes);
        state.pushes.clear();
    }
    true
}

struct Routed {
    is_client_reply: bool,
}

/// The text of a refusal's error.
enum Text {
    /// A text Redis formats (`rejectCommandFormat`, `rejectCommandSds`): replied after `ERR `.
    Formatted(Vec<u8>),
    /// One of Redis's shared errors, its code included (`NOAUTH …`).
    Shared(&'static str),
    /// An error made here, its code included (`MISCONF Errors writing to the AOF file: …`).
    Coded(String),
}

/// Why dispatch refuses a command: the error, and the command or subcommand it concerns when
/// one was found (its `rejected_calls` counts it).
struct Refusal {
    command: Option<(usize, &'static Spec)>,
    text: Text,
}

/// Redis's `rejectCommand`: the error reply (counted in errorstats, and in the command's
/// `rejected_calls` when there is a command), and a transaction in progress is flagged so that
/// EXEC aborts. EXEC itself, rejected, aborts the transaction at once (`execCommandAbort`):
/// `-EXECABORT Transaction discarded because of: <error>`, the error without its `ERR`.
fn reject(server: &Server, state: &mut ClientState, out: &mut Vec<u8>, refusal: &Refusal) {
    if state.multi.is_some() {
        state.multi_error = true;
    }
    let exec = refusal.command.is_some_and(|(_, spec)| spec.name == "exec");
    if let Some((index, _)) = refusal.command {
        server.command_stats[index]
            .rejected
            .fetch_add(1, Ordering::Relaxed);
    }
    let body = match &refusal.text {
        Text::Formatted(body) => body.as_slice(),
        Text::Shared(text) => text.as_bytes(),
        Text::Coded(text) => text.as_bytes(),
    };
    let text = if exec {
        crate::commands::transaction::discard_transaction(server, state);
        [&b"EXECABORT Transaction discarded because of: "[..], body].concat()
    } else if let Text::Formatted(body) = &refusal.text {
        [&b"ERR "[..], body].concat()
    } else {
        body.to_vec()
    };
    server.count_error(&text);
    ReplyWriter::new(out, state.protocol).error(&text);
}

/// Whether `enable-debug-command` lets this client run a PROTECTED command (DEBUG): `yes`, or
/// `local` from a loopback address, as Redis's `allowProtectedAction`.
fn protected_allowed(server: &Server, state: &ClientState) -> bool {
    let config = server.config.read();
    let mode = config.enable_debug_command.as_str();
    let addr = state.shared.addr.as_str();
    mode == "yes" || (mode == "local" && (addr.starts_with("127.") || addr.starts_with("[::1]")))
}

const DEBUG_NOT_ALLOWED: &[u8] = b"DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

/// The command `args` name: the client's previous command when the name is the same (a
/// pipeline mostly repeats one command), else the table's answer.
fn find(state: &ClientState, args: &[&[u8]]) -> Found {
    let last = state.shared.last_cmd.load(Ordering::Relaxed).checked_sub(1);
    match last.map(|i| (i, COMMANDS[i])) {
        Some((i, spec))
            if spec.subcommands.is_empty()
                && !spec.is_subcommand()
                && spec.name.as_bytes().eq_ignore_ascii_case(args[0])
                && !command::has_renames() =>
        {
            Found::Command(i, spec)
        }
        _ => command::resolve(args),
    }
}

/// The checks of Redis's `processCommand` before a command runs or is queued, in its order:
/// existence, arity, DEBUG's permission, authentication, MULTI's rules.
fn check(
    server: &Server,
    state: &ClientState,
    args: &[&[u8]],
    now_ms: u64,
) -> Result<(usize, &'static Spec), Refusal> {
    let (index, spec) = match find(state, args) {
        Found::Command(index, spec) => (index, spec),
        Found::UnknownSubcommand => {
            let text = Text::Formatted(command::unknown_subcommand_text(args));
            return Err(Refusal {
                command: None,
                text,
            });
        }
        Found::UnknownCommand => {
            let text = Text::Formatted(command::unknown_command_text(args));
            return Err(Refusal {
                command: None,
                text,
            });
        }
    };
    let refuse = |text| {
        Err(Refusal {
            command: Some((index, spec)),
            text,
        })
    };
    if !command::arity_ok(spec.arity, args.len()) {
        let text = format!("wrong number of arguments for '{}' command", spec.name);
        return refuse(Text::Formatted(text.into_bytes()));
    }
    if spec.flags & flag::PROTECTED != 0 && !protected_allowed(server, state) {
        return refuse(Text::Formatted(DEBUG_NOT_ALLOWED.to_vec()));
    }
    if !state.authenticated
        && spec.flags & flag::NO_AUTH == 0
        && server.config.read().requirepass.is_some()
    {
        return refuse(Text::Shared("NOAUTH Authentication required."));
    }
    if state.multi.is_some() && spec.flags & flag::NO_MULTI != 0 {
        let text = b"Command not allowed inside a transaction".to_vec();
        return refuse(Text::Formatted(text));
    }
    // Each check reads its atomic first: the common case costs a load per command.
    // Redis does not evict (nor refuse for memory) while a script is busy.
    if server.eviction.limited()
        && !server.scripting.busy()
        && out_of_memory(server, state, spec, args, now_ms)
    {
        return refuse(Text::Shared(OOM));
    }
    if crate::bgsave::writes_denied(server)
        && (spec.name == "ping" || flags_of(server, state, spec, args) & flag::WRITE != 0)
    {
        return refuse(Text::Shared(MISCONF));
    }
    if let Some(text) = crate::aof::write_denied(server)
        && (spec.name == "ping" || flags_of(server, state, spec, args) & flag::WRITE != 0)
    {
        return refuse(Text::Coded(text));
    }
    if let Some(text) = mode_refusal(state, spec) {
        return refuse(Text::Formatted(text));
    }
    if server.persistence.load.loading.load(Ordering::Relaxed)
        && flags_of(server, state, spec, args) & flag::LOADING == 0
    {
        return refuse(Text::Shared(
            "LOADING Redis is loading the dataset in memory",
        ));
    }
    if server.scripting.busy() && spec.flags & flag::ALLOW_BUSY == 0 {
        return refuse(Text::Shared(crate::scripting::busy::busy_error(server)));
    }
    Ok((index, spec))
}

/// What a connection's mode forbids: a MONITOR client (Redis's replica) touching the keyspace,
/// a RESP2 client with subscriptions running anything but the pub/sub commands, PING, QUIT and
/// RESET.
fn mode_refusal(state: &ClientState, spec: &Spec) -> Option<Vec<u8>> {
    if state.monitor && spec.flags & (flag::WRITE | flag::MAY_REPLICATE | flag::READONLY) != 0 {
        return Some(b"Replica can't interact with the keyspace".to_vec());
    }
    if state.subscribed() && state.protocol == resp::Protocol::Resp2 && !allowed_subscribed(spec) {
        let text = format!(
            "Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            spec.name
        );
        return Some(text.into_bytes());
    }
    None
}

/// What a RESP2 client with subscriptions may run (Redis's `processCommand`).
fn allowed_subscribed(spec: &Spec) -> bool {
    matches!(
        spec.name,
        "ping"
            | "subscribe"
            | "ssubscribe"
            | "unsubscribe"
            | "sunsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "quit"
            | "reset"
    )
}

/// Whether a CLIENT PAUSE in force postpones this command (`pause.rs`): every command under
/// `ALL`; under `WRITE` those that may write or replicate (EXEC: with one queued). MONITOR
/// clients are Redis's replicas, which are never paused.
fn paused(server: &Server, state: &ClientState, spec: &Spec, args: &[&[u8]], now_ms: u64) -> bool {
    use crate::pause::Kind;
    match server.pause.kind(now_ms) {
        Kind::None => false,
        _ if state.monitor => false,
        Kind::All => true,
        Kind::Write => {
            let may_write = flag::WRITE | flag::MAY_REPLICATE;
            let queued = match &state.multi {
                Some(queue) if spec.name == "exec" => queue
                    .iter()
                    .any(|q| queued_flags(server, q) & may_write != 0),
                _ => false,
            };
            command_flags(server, spec, args) & may_write != 0 || queued
        }
    }
}

/// Redis's `shared.oomerr`.
const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Evicts as `maxmemory` asks (before every command, as Redis's `processCommand`), and whether
/// this command must be refused for it: a DENYOOM one (EXEC: with a DENYOOM command queued), or
/// any command but EXEC, DISCARD, QUIT and RESET inside MULTI, when nothing more could be freed.
fn out_of_memory(
    server: &Server,
    state: &ClientState,
    spec: &Spec,
    args: &[&[u8]],
    now_ms: u64,
) -> bool {
    if server.eviction.perform(server, now_ms) == crate::evict::Outcome::Ok {
        return false;
    }
    let queued_in_multi =
        state.multi.is_some() && !matches!(spec.name, "exec" | "discard" | "quit" | "reset");
    flags_of(server, state, spec, args) & flag::DENYOOM != 0 || queued_in_multi
}

/// Redis's `shared.bgsaveerr`.
const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// The flags dispatch's checks go by: a command's own (`command_flags`), and for EXEC also
/// what its queued commands add: any one's WRITE, and LOADING only if every one has it
/// (Redis's `mstate.cmd_flags` and `cmd_inv_flags`).
fn flags_of(server: &Server, state: &ClientState, spec: &Spec, args: &[&[u8]]) -> u32 {
    match &state.multi {
        Some(queue) if spec.name == "exec" => {
            let flags = |q: &Queued| queued_flags(server, q);
            let write = queue.iter().fold(0, |f, q| f | flags(q)) & (flag::WRITE | flag::DENYOOM);
            let loading = queue.iter().all(|q| flags(q) & flag::LOADING != 0);
            (spec.flags & !flag::LOADING)
                | write
                | if loading {
                    spec.flags & flag::LOADING
                } else {
                    0
                }
        }
        _ => command_flags(server, spec, args),
    }
}

/// A command's flags as dispatch's checks see them (Redis's `getCommandFlags`): the table's,
/// but for a script that declares flags (a shebang, a registered function's flags) those
/// decide whether it writes and may be refused for memory (`scripting::flags::declared`).
fn command_flags(server: &Server, spec: &Spec, args: &[&[u8]]) -> u32 {
    match crate::scripting::flags::declared(server, spec.name, args) {
        Some(declared) => declared.command_flags(spec.flags),
        None => spec.flags,
    }
}

/// `command_flags` of a command queued in MULTI.
fn queued_flags(server: &Server, queued: &Queued) -> u32 {
    let args: Vec<&[u8]> = queued.args.iter().map(Vec::as_slice).collect();
    command_flags(server, COMMANDS[queued.index], &args)
}

fn route(
    server: &Server,
    state: &mut ClientState,
    out: &mut Vec<u8>,
    args: &[&[u8]],
    now_ms: u64,
    mark: &mut Mark,
) -> Routed {
    let is_client_reply = args.len() >= 2
        && args[0].eq_ignore_ascii_case(b"client")
        && args[1].eq_ignore_ascii_case(b"reply");
    let routed = Routed { is_client_reply };
    let (index, spec) = match check(server, state, args, now_ms) {
        Ok(found) => found,
        Err(refusal) => {
            reject(server, state, out, &refusal);
            return routed;
        }
    };
    if paused(server, state, spec, args, now_ms) {
        state.postponed = true;
        return routed;
    }
    if spec.flags & flag::TXN_CONTROL == 0
        && let Some(queue) = state.multi.as_mut()
    {
        queue.push(Queued {
            index,
            args: args.iter().map(|a| a.to_vec()).collect(),
        });
        state.shared.info.lock().multi = queue.len() as i64;
        ReplyWriter::new(out, state.protocol).simple(b"QUEUED");
        return routed;
    }
    let Some(mut locks) = command::locks_unless_busy(server, spec, args) else {
        let text = Text::Shared(crate::scripting::busy::busy_error(server));
        let refusal = Refusal {
            command: Some((index, spec)),
            text,
        };
        reject(server, state, out, &refusal);
        return routed;
    };
    command::run(server, state, out, &mut locks, index, args, now_ms, mark);
    state.shared.last_cmd.store(index + 1, Ordering::Relaxed);
    routed
}

/// Runs a queued transaction with every shard locked (EXEC); `locks` holds them all.
pub fn run_queued<'s>(
    server: &'s Server,
    state: &mut ClientState,
    out: &mut Vec<u8>,
    locks: &mut command::Locks<'s>,
    queue: Vec<Queued>,
    now_ms: u64,
) {
    ReplyWriter::new(out, state.protocol).array_len(queue.len());
    let mut mark = crate::clock::now();
    for queued in queue {
        let args: Vec<&[u8]> = queued.args.iter().map(Vec::as_slice).collect();
        let spec = COMMANDS[queued.index];
        if spec.flags & flag::NO_AUTH == 0
            && !state.authenticated
            && server.config.read().requirepass.is_some()
        {
            ReplyWriter::new(out, state.protocol).error(b"NOAUTH Authentication required.");
            continue;
        }
        command::run(
            server,
            state,
            out,
            locks,
            queued.index,
            &args,
            now_ms,
            &mut mark,
        );
    }
}
