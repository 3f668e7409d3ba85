//! Accepting connections: `maxclients` and protected mode (refused with Redis's own texts and
//! counted in `rejected_connections`), TCP options (`TCP_NODELAY`, `tcp-keepalive` as Redis's
//! `anetKeepAlive` sets it), the client's shared record (CLIENT LIST, KILL, blocking) and its
//! registration with the thread's poll. A new connection holds no buffers (`buffers.rs`).

use super::conn::Conn;
use crate::client::{ClientState, Input};
use crate::server::{ClientInfo, ClientShared, Server, unix_ms};
use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Poll, Token};
use resp::{Limits, Parser};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Accepts every connection waiting on `listener` for thread `thread`.
pub(super) fn accept_all(
    server: &Arc<Server>,
    poll: &Poll,
    listener: &TcpListener,
    thread: usize,
    conns: &mut super::ConnTable,
) {
    loop {
        let (mut stream, peer) = match listener.accept() {
            Ok(pair) => pair,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // EMFILE and the like: the connection stays queued and is retried on the next
                // accept event. Redis logs the same way.
                crate::log::warning(&format!("Accepting client connection: {e}"));
                return;
            }
        };
        server
            .stats
            .connections_received
            .fetch_add(1, Ordering::Relaxed);
        let Some((authenticated, limits, keepalive_secs)) = admit(server, &mut stream, peer) else {
            continue;
        };
        set_options(&stream, keepalive_secs);
        let shared = client_shared(server, &stream, peer, thread);
        // The client id is the token: mail for a client finds its connection by id.
        let token = shared.id as usize;
        let interest = Interest::READABLE | Interest::WRITABLE;
        if poll
            .registry()
            .register(&mut stream, Token(token), interest)
            .is_err()
        {
            continue;
        }
        server.clients.lock().insert(shared.id, Arc::clone(&shared));
        server.connected.fetch_add(1, Ordering::Relaxed);
        let input = Input {
            query: Vec::new(),
            filled: 0,
            pos: 0,
            parser: Parser::new(limits),
        };
        let state = ClientState::new(shared, authenticated);
        let conn = Conn::new(stream, input, state);
        super::conn::publish(&conn);
        conns.insert(token, conn);
    }
}

/// Decides whether a new connection is served: `None` (after telling it why) when `maxclients`
/// is reached or protected mode refuses its address; else whether it starts authenticated, its
/// parser's limits, and `tcp-keepalive`.
fn admit(server: &Server, stream: &mut TcpStream, peer: SocketAddr) -> Option<(bool, Limits, u64)> {
    let config = server.config.read();
    let refuse = |stream: &mut TcpStream, text: &[u8]| {
        server
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        let _ = stream.write(text);
    };
    if server.connected.load(Ordering::Relaxed) >= config.maxclients {
        refuse(stream, b"-ERR max number of clients reached\r\n");
        return None;
    }
    if config.protected_mode && config.requirepass.is_none() && !peer.ip().is_loopback() {
        refuse(stream, DENIED);
        return None;
    }
    let authenticated = config.requirepass.is_none();
    let limits = Limits {
        proto_max_bulk_len: config.proto_max_bulk_len,
        auth_required: !authenticated,
    };
    Some((authenticated, limits, config.tcp_keepalive))
}

/// `TCP_NODELAY`, and keepalive probes after `keepalive_secs` idle, every third of that, three
/// times, as Redis's `anetKeepAlive` does (0: off).
fn set_options(stream: &TcpStream, keepalive_secs: u64) {
    let _ = stream.set_nodelay(true);
    if keepalive_secs > 0 {
        let idle = Duration::from_secs(keepalive_secs);
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(idle)
            .with_interval(Duration::from_secs((keepalive_secs / 3).max(1)))
            .with_retries(3);
        let _ = socket2::SockRef::from(stream).set_tcp_keepalive(&keepalive);
    }
}

/// The state of a new client that other threads see (CLIENT LIST, KILL, blocking), with its id.
fn client_shared(
    server: &Server,
    stream: &TcpStream,
    peer: SocketAddr,
    thread: usize,
) -> Arc<ClientShared> {
    let id = server.next_client_id();
    Arc::new(ClientShared {
        id,
        addr: peer.to_string(),
        laddr: stream
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default(),
        fd: stream.as_raw_fd(),
        thread,
        created: Instant::now(),
        info: parking_lot::Mutex::new(ClientInfo {
            resp: 2,
            multi: -1,
            ..ClientInfo::default()
        }),
        killed: AtomicBool::new(false),
        watch_dirty: AtomicBool::new(false),
        last_interaction_ms: AtomicU64::new(unix_ms()),
        last_cmd: AtomicUsize::new(0),
        buffers: crate::server::BufferStats::default(),
        blocked: AtomicBool::new(false),
    })
}

/// Redis 7.0's protected-mode refusal, word for word (its "Setup a an" included).
const DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

#[cfg(test)]
mod tests {
    /// The refusal is Redis's text byte for byte: compared with the string in Redis 7.0.15's
    /// networking.c, pieced together the way the C compiler joins it.
    #[test]
    fn protected_mode_text_is_redis_own() {
        let text = std::str::from_utf8(super::DENIED).expect("ascii");
        assert!(text.starts_with("-DENIED Redis is running in protected mode because protected "));
        assert!(text.contains("4) Setup a an authentication password for the default user. "));
        assert!(text.ends_with("the server to start accepting connections from the outside.\r\n"));
        assert_eq!(text.len(), 1067);
    }
}
