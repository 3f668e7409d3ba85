//! MONITOR: every command any client runs, shown to the clients that asked, in Redis's line
//! format (`replicationFeedMonitors`):
//!
//! ```text
//!  +1700000000.123456 [0 127.0.0.1:50000] "set" "k" "v"\r\n
//!   └ seconds.micros ┘ └db┘ └ client ┘   └ each argument as sdscatrepr ┘
//! ```
//! A command is fed after it ran (Redis 7.0's `call`), with the database selected then, unless
//! it is an ADMIN or SKIP_MONITOR command; secrets (AUTH's password, HELLO's AUTH pair,
//! sensitive CONFIG SET values) show as `(redacted)`, as in the slow log. Inside EXEC each queued
//! command is fed as it runs and EXEC after them; a queued command is not fed when queued.
//!
//! The line is formatted once and shared (`Mail::Raw`) with every monitor, through its thread's
//! mailbox like a pub/sub message; a monitor that stops reading is cut off by the `normal`
//! output limit. With no monitor a command pays one atomic load.

use crate::client::ClientState;
use crate::mail::Mail;
use crate::pubsub::Sub;
use crate::server::Server;
use parking_lot::RwLock;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The clients in MONITOR mode.
#[derive(Debug, Default)]
pub struct Monitors {
    list: RwLock<Vec<Sub>>,
    count: AtomicUsize,
}

impl Monitors {
    /// Adds a monitor; false if it already was one (MONITOR twice replies once).
    pub fn add(&self, sub: Sub) -> bool {
        let mut list = self.list.write();
        if list.iter().any(|s| s.id == sub.id) {
            return false;
        }
        list.push(sub);
        self.count.store(list.len(), Ordering::Relaxed);
        true
    }

    /// Removes monitor `id` (RESET, a closed connection).
    pub fn remove(&self, id: u64) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut list = self.list.write();
        list.retain(|s| s.id != id);
        self.count.store(list.len(), Ordering::Relaxed);
    }

    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }
}

/// Shows `args`, just run by `client`, to every monitor.
pub fn feed(server: &Server, client: &ClientState, name: &str, args: &[&[u8]]) {
    let line: Arc<[u8]> = line(client, name, args, crate::server::unix_us()).into();
    server
        .mail
        .post_sorted(server, Some(client.shared.thread), |batches| {
            for sub in server.monitors.list.read().iter() {
                batches[sub.thread].push((sub.id, Mail::Raw(Arc::clone(&line))));
            }
        });
}

/// One MONITOR line, a status reply: time, database and client, then the arguments.
fn line(client: &ClientState, name: &str, args: &[&[u8]], now_us: u64) -> Vec<u8> {
    let secret = crate::commands::server::secret_arguments(name, args);
    let mut text = String::with_capacity(64 + args.iter().map(|a| a.len() + 3).sum::<usize>());
    let _ = write!(
        text,
        "+{}.{:06} [{} {}] ",
        now_us / 1_000_000,
        now_us % 1_000_000,
        client.db,
        client.shared.addr
    );
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        if secret.contains(&i) {
            text.push_str("\"(redacted)\"");
        } else {
            text.push_str(&resp::inline::repr(arg));
        }
    }
    text.push_str("\r\n");
    text.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line has Redis's layout, escapes as sdscatrepr, and hides AUTH's password.
    #[test]
    fn line_format() {
        let server = Server::new(crate::Config::default()).expect("server");
        let state = ClientState::new(server.fake_client(), true);
        let text = line(
            &state,
            "set",
            &[b"set", b"k\n", b"\x01\""],
            1_700_000_000_000_042,
        );
        assert_eq!(
            text,
            b"+1700000000.000042 [0 ] \"set\" \"k\\n\" \"\\x01\\\"\"\r\n".to_vec()
        );
        let text = line(&state, "auth", &[b"auth", b"pw"], 5);
        assert_eq!(text, b"+0.000005 [0 ] \"auth\" \"(redacted)\"\r\n".to_vec());
    }
}
