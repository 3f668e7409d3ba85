//! From parsed arguments to a reply: lookup, arity, authentication, MULTI queueing, locking, run —
//! in the order Redis's `processCommand` checks them, so the same bad input gets the same error.

use crate::client::{ClientState, Queued, ReplyMode};
use crate::clock::Mark;
use crate::command::{self, COMMANDS, flag};
use crate::server::Server;
use resp::ReplyWriter;
use std::sync::atomic::Ordering;

/// Runs one command from `args` (at least one argument), appending its reply to `out`. `mark`
/// is when work on it began (see `command::run`).
pub fn dispatch(
    server: &Server,
    state: &mut ClientState,
    out: &mut Vec<u8>,
    args: &[&[u8]],
    now_ms: u64,
    mark: &mut Mark,
) {
    let reply_at = out.len();
    state
        .shared
        .last_interaction_ms
        .store(now_ms, Ordering::Relaxed);
    let queued = route(server, state, out, args, now_ms, mark);
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
}

struct Routed {
    is_client_reply: bool,
}

fn reject(server: &Server, state: &mut ClientState, out: &mut Vec<u8>, text: &str) {
    server.count_error(text.as_bytes());
    ReplyWriter::new(out, state.protocol).error(text.as_bytes());
    if state.multi.is_some() {
        state.multi_error = true;
    }
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
    // A pipeline mostly repeats one command: try the client's last one before the table.
    let last = state.shared.last_cmd.load(Ordering::Relaxed).checked_sub(1);
    let found = match last.map(|i| (i, COMMANDS[i])) {
        Some((i, spec)) if spec.name.as_bytes().eq_ignore_ascii_case(args[0]) => Some((i, spec)),
        _ => command::lookup(args[0]),
    };
    let Some((index, spec)) = found else {
        reject(server, state, out, &command::unknown_command_error(args));
        return routed;
    };
    if !command::arity_ok(spec.arity, args.len()) {
        reject(server, state, out, &command::arity_error(spec.name));
        return routed;
    }
    if !state.authenticated
        && spec.flags & flag::NO_AUTH == 0
        && server.config.read().requirepass.is_some()
    {
        reject(server, state, out, "NOAUTH Authentication required.");
        return routed;
    }
    if state.multi.is_some() && spec.flags & flag::TXN_CONTROL == 0 {
        if spec.flags & flag::NO_MULTI != 0 {
            reject(
                server,
                state,
                out,
                "ERR Command not allowed inside a transaction",
            );
            return routed;
        }
        let queue = state.multi.as_mut().expect("in MULTI");
        queue.push(Queued {
            index,
            args: args.iter().map(|a| a.to_vec()).collect(),
        });
        state.shared.info.lock().multi = queue.len() as i64;
        ReplyWriter::new(out, state.protocol).simple(b"QUEUED");
        return routed;
    }
    let mut locks = command::locks_for(server, spec, args);
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
