//! Client-side caching against redis-server 7.0.15: the same scenario of several connections
//! (RESP3 and RESP2) runs on both servers, and every byte each connection receives is compared.
//!
//! A step sends one command on one connection and reads frames up to its reply (RESP3 pushes
//! before it included), then syncs every connection: a PING, and every frame up to its PONG.
//! Invalidations a command causes reach their receivers before the command's reply reaches
//! its sender (both servers post them first), so a PING sent afterwards always finds them
//! ahead of its PONG and the transcripts do not depend on timing. What does depend on time —
//! waiting for the active expiry cycle, for a closed connection to be gone — is polled with
//! commands that are not part of the transcript.
//!
//! Client ids differ between the servers: commands name other connections by placeholder
//! (`{R2}`), and each transcript has the connections' ids replaced by their names.
//!
//! Covered: default mode in RESP3 (one message per key, after the reply for the client's own
//! writes, MULTI/EXEC, keys found by a command's key finder), OPTIN and OPTOUT with CLIENT
//! CACHING (for the next command, kept across CLIENT commands and a transaction), NOLOOP,
//! BCAST with prefixes (one message per prefix per event-loop batch, keys in byte order,
//! NOLOOP), REDIRECT to a RESP2 client with subscriptions (and to one without, which gets
//! nothing), to a RESP3 client that modifies the key itself (its push comes before its reply),
//! a broken redirect (`tracking-redir-broken`, flag R), FLUSHALL's null to every tracking
//! client (`_` or `$-1` by the tracking client's protocol, even through a redirect), expiry
//! (active and lazy, by another client and by the client itself), `tracking-table-max-keys`,
//! RESET, a disconnect, every error text of CLIENT TRACKING and CLIENT CACHING, GETREDIR,
//! TRACKINGINFO in both protocols, CLIENT LIST's flags and `redir=`, INFO's tracking fields.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::{Client, Server, render};

/// One connection of the scenario.
struct Conn {
    client: Client,
    id: u64,
    resp3: bool,
    /// RESP2 with subscriptions: PING answers `pong` as a message.
    subscribed: bool,
    /// Inside MULTI: a PING would be queued, so the connection is not synced.
    multi: bool,
    log: Vec<String>,
}

impl Conn {
    fn ping_reply(&self) -> &'static [u8] {
        if self.subscribed && !self.resp3 {
            b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
        } else {
            b"+PONG\r\n"
        }
    }
}

/// One run of the scenario on one server.
struct Session<'a> {
    server: &'a Server,
    conns: BTreeMap<&'static str, Conn>,
    /// Every id a connection had, with its name (closed ones too).
    names: Vec<(u64, &'static str)>,
    closed: BTreeMap<&'static str, Vec<String>>,
    /// Steps so far: a frame that arrives while syncing is logged with the step that caused it.
    step: usize,
}

impl<'a> Session<'a> {
    fn new(server: &'a Server) -> Session<'a> {
        Session {
            server,
            conns: BTreeMap::new(),
            names: Vec::new(),
            closed: BTreeMap::new(),
            step: 0,
        }
    }

    fn conn(&mut self, name: &str) -> &mut Conn {
        self.conns
            .get_mut(name)
            .unwrap_or_else(|| panic!("no connection {name}"))
    }

    /// Opens connection `name`, RESP3 when `resp3` (HELLO's reply is not compared: it names
    /// the server's version).
    fn open(&mut self, name: &'static str, resp3: bool) {
        let mut client = self.server.connect();
        if resp3 {
            let hello = client.cmd(&["HELLO", "3"]);
            assert!(hello.starts_with(b"%"), "HELLO 3: {}", render(&hello));
        }
        let reply = client.cmd(&["CLIENT", "ID"]);
        let id = std::str::from_utf8(&reply[1..reply.len() - 2])
            .expect("ASCII")
            .parse()
            .expect("an id");
        self.names.push((id, name));
        let conn = Conn {
            client,
            id,
            resp3,
            subscribed: false,
            multi: false,
            log: Vec::new(),
        };
        self.conns.insert(name, conn);
    }

    /// `{NAME}` in an argument becomes that connection's id.
    fn expand(&self, arg: &str) -> String {
        let mut arg = arg.to_string();
        for (&name, conn) in &self.conns {
            arg = arg.replace(&format!("{{{name}}}"), &conn.id.to_string());
        }
        arg
    }

    /// Sends `args` on `name`, logging every frame up to its reply, then syncs every
    /// connection.
    fn cmd(&mut self, name: &str, args: &[&str]) {
        let expanded: Vec<String> = args.iter().map(|a| self.expand(a)).collect();
        let conn = self.conn(name);
        conn.log.push(format!("» {}", args.join(" ")));
        let argv: Vec<&[u8]> = expanded.iter().map(String::as_bytes).collect();
        conn.client.send(&support::encode(&argv));
        loop {
            let frame = conn.client.read_reply();
            conn.log.push(format!("  {}", render(&frame)));
            if !(conn.resp3 && frame.starts_with(b">")) {
                break;
            }
        }
        if args[0].eq_ignore_ascii_case("subscribe") {
            conn.subscribed = true;
        }
        if args[0].eq_ignore_ascii_case("multi") {
            conn.multi = true;
        } else if ["exec", "discard", "reset"]
            .iter()
            .any(|c| args[0].eq_ignore_ascii_case(c))
        {
            conn.multi = false;
        }
        self.sync_all();
    }

    /// Sends `args` on `name` in one write, logging every frame up to the last reply.
    fn pipeline(&mut self, name: &str, commands: &[&[&str]]) {
        let conn = self.conn(name);
        let mut bytes = Vec::new();
        for args in commands {
            conn.log.push(format!("» {}", args.join(" ")));
            let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            support::encode_into(&mut bytes, &argv);
        }
        conn.client.send(&bytes);
        let mut replies = 0;
        while replies < commands.len() {
            let frame = conn.client.read_reply();
            conn.log.push(format!("  {}", render(&frame)));
            if !(conn.resp3 && frame.starts_with(b">")) {
                replies += 1;
            }
        }
        self.sync_all();
    }

    /// A command whose reply is not part of the transcript (polling).
    fn quiet(&mut self, name: &str, args: &[&str]) -> Vec<u8> {
        let expanded: Vec<String> = args.iter().map(|a| self.expand(a)).collect();
        let conn = self.conn(name);
        let argv: Vec<&[u8]> = expanded.iter().map(String::as_bytes).collect();
        conn.client.command(&argv)
    }

    /// Every connection: PING, and every frame up to its PONG.
    fn sync_all(&mut self) {
        self.step += 1;
        let step = self.step;
        for conn in self.conns.values_mut().filter(|c| !c.multi) {
            conn.client.send(&support::encode(&[b"PING"]));
            let pong = conn.ping_reply();
            loop {
                let frame = conn.client.read_reply();
                if frame == pong {
                    break;
                }
                conn.log.push(format!("  ~{step} {}", render(&frame)));
            }
        }
    }

    /// Only the `flags=` and `redir=` of `target`'s CLIENT LIST line, asked by `name`.
    fn list_flags(&mut self, name: &str, target: &str) {
        let line = self.quiet(name, &["CLIENT", "LIST", "ID", &format!("{{{target}}}")]);
        let text = String::from_utf8_lossy(&line).into_owned();
        let fields: Vec<&str> = text
            .split_whitespace()
            .filter(|f| f.starts_with("flags=") || f.starts_with("redir="))
            .collect();
        let conn = self.conn(name);
        conn.log
            .push(format!("» CLIENT LIST ID {{{target}}} (flags, redir)"));
        conn.log.push(format!("  {}", fields.join(" ")));
    }

    /// INFO's tracking fields, asked by `name`.
    fn info_tracking(&mut self, name: &str) {
        let mut fields = Vec::new();
        for section in ["clients", "stats"] {
            let text = String::from_utf8_lossy(&self.quiet(name, &["INFO", section])).into_owned();
            fields.extend(
                text.lines()
                    .filter(|l| l.starts_with("tracking_"))
                    .map(str::to_string),
            );
        }
        let conn = self.conn(name);
        conn.log.push("» INFO tracking_*".into());
        conn.log.push(format!("  {}", fields.join(" ")));
    }

    /// Closes `name` and waits until the server has let it go (`by` asks).
    fn close(&mut self, name: &'static str, by: &str) {
        let conn = self.conns.remove(name).expect("an open connection");
        let id = conn.id;
        self.closed.insert(name, conn.log);
        drop(conn.client);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let list = self.quiet(by, &["CLIENT", "LIST", "ID", &id.to_string()]);
            if !String::from_utf8_lossy(&list).contains(&format!("id={id} ")) {
                return;
            }
            assert!(Instant::now() < deadline, "client {name} still listed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until DBSIZE (of `name`'s database) is 0: the active expiry cycle deleted the keys.
    fn wait_empty(&mut self, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.quiet(name, &["DBSIZE"]) != b":0\r\n" {
            assert!(Instant::now() < deadline, "keys never expired");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Every transcript, with ids replaced by connection names.
    fn transcripts(mut self) -> BTreeMap<&'static str, Vec<String>> {
        let mut all = std::mem::take(&mut self.closed);
        for (name, conn) in std::mem::take(&mut self.conns) {
            all.insert(name, conn.log);
        }
        let mut names = self.names.clone();
        // Longer ids first, so 12 is not rewritten inside 123.
        names.sort_by_key(|(id, _)| std::cmp::Reverse(id.to_string().len()));
        for log in all.values_mut() {
            // Only where the reply says an id: small integers elsewhere stay as they are.
            let mut getredir = false;
            for line in log.iter_mut() {
                if let Some(command) = line.strip_prefix("» ") {
                    getredir = command.eq_ignore_ascii_case("client getredir");
                    continue;
                }
                for (id, name) in &names {
                    for context in [
                        "redirect\\r\\n",
                        "tracking-redir-broken\\r\\n",
                        "$2\\r\\nid\\r\\n",
                    ] {
                        *line = line.replace(
                            &format!("{context}:{id}\\r\\n"),
                            &format!("{context}:<{name}>\\r\\n"),
                        );
                    }
                    *line = line.replace(&format!("redir={id}"), &format!("redir=<{name}>"));
                    if getredir && *line == format!("  :{id}\\r\\n") {
                        *line = format!("  :<{name}>\\r\\n");
                    }
                }
                getredir = false;
            }
        }
        all
    }
}

/// Runs `scenario` on redis-server and on densekv with one I/O thread and with four (whose
/// connections, spread over the threads, get their messages as mail), and compares each
/// connection's transcript.
fn differential(extra: &[&str], scenario: fn(&mut Session<'_>)) {
    let redis = Server::redis(extra);
    let theirs = {
        let mut session = Session::new(&redis);
        scenario(&mut session);
        session.transcripts()
    };
    for threads in ["1", "4"] {
        let mut args = extra.to_vec();
        args.extend_from_slice(&["--io-threads", threads]);
        let densekv = Server::densekv(&args);
        let mut session = Session::new(&densekv);
        scenario(&mut session);
        compare(&session.transcripts(), &theirs);
    }
}

/// Fails at the first line where a connection's transcripts differ.
fn compare(ours: &BTreeMap<&str, Vec<String>>, theirs: &BTreeMap<&str, Vec<String>>) {
    if std::env::var_os("DENSEKV_TRACKING_DUMP").is_some() {
        for (name, log) in ours {
            eprintln!("== {name}\n{}", log.join("\n"));
        }
    }
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (name, our_log) in ours {
        let their_log = &theirs[name];
        let differs = our_log
            .iter()
            .zip(their_log)
            .position(|(a, b)| a != b)
            .or_else(|| {
                (our_log.len() != their_log.len()).then(|| our_log.len().min(their_log.len()))
            });
        if let Some(at) = differs {
            let from = at.saturating_sub(12);
            let excerpt =
                |log: &[String]| log[from.min(log.len())..(at + 4).min(log.len())].join("\n");
            panic!(
                "connection {name} differs at line {at}\n--- densekv:\n{}\n--- redis-server:\n{}",
                excerpt(our_log),
                excerpt(their_log)
            );
        }
    }
}

/// Default mode, OPTIN / OPTOUT / CACHING, NOLOOP, key finders, MULTI, GETREDIR, TRACKINGINFO,
/// CLIENT LIST, RESET, a disconnect.
fn default_mode(s: &mut Session<'_>) {
    reads_and_writes(s);
    opt_in_and_out(s);
    reset_and_disconnect(s);
}

/// Who is told what after which write, in default mode.
fn reads_and_writes(s: &mut Session<'_>) {
    s.open("A", true);
    s.open("B", false);
    s.open("F", true);
    s.cmd("A", &["CLIENT", "TRACKINGINFO"]);
    s.cmd("A", &["CLIENT", "GETREDIR"]);
    s.cmd("A", &["CLIENT", "TRACKING", "ON"]);
    s.cmd("F", &["CLIENT", "TRACKING", "on"]);
    s.cmd("A", &["CLIENT", "TRACKINGINFO"]);
    s.cmd("A", &["CLIENT", "GETREDIR"]);
    s.list_flags("B", "A");
    s.cmd("B", &["SET", "k1", "v"]);
    s.cmd("A", &["GET", "k1"]);
    s.cmd("F", &["GET", "k1"]);
    s.cmd("A", &["GET", "k1"]);
    s.info_tracking("B");
    // Both readers are told, once each; a second write finds nobody.
    s.cmd("B", &["SET", "k1", "w"]);
    s.cmd("B", &["SET", "k1", "x"]);
    // A missing key is tracked too; one message per key of a multi-key write.
    s.cmd("A", &["MGET", "k2", "k3", "k4"]);
    s.cmd("B", &["MSET", "k4", "1", "k2", "2", "k9", "3"]);
    s.cmd("B", &["DEL", "k3", "k4"]);
    // The client's own write: its invalidation follows its reply.
    s.cmd("A", &["GET", "own"]);
    s.cmd("A", &["SET", "own", "1"]);
    s.cmd("A", &["MGET", "o1", "o2"]);
    s.cmd("A", &["DEL", "o1", "o2", "o3"]);
    s.cmd("A", &["MSET", "o1", "1", "o2", "2"]);
    s.cmd("A", &["GET", "o1"]);
    s.cmd("A", &["MULTI"]);
    s.cmd("A", &["SET", "o1", "3"]);
    s.cmd("A", &["GET", "o2"]);
    s.cmd("A", &["EXEC"]);
    s.cmd("B", &["SET", "o2", "x"]);
    // Keys found by a command's own key finder (ZUNION) and by a legacy range (LRANGE);
    // a write command's keys are not remembered.
    s.cmd("A", &["ZUNION", "2", "z1", "z2"]);
    s.cmd("A", &["LRANGE", "l1", "0", "-1"]);
    s.cmd("A", &["INCR", "counter"]);
    s.cmd("B", &["ZADD", "z2", "1", "m"]);
    s.cmd("B", &["RPUSH", "l1", "a"]);
    s.cmd("B", &["INCR", "counter"]);
    s.cmd("A", &["TYPE", "l1"]);
    s.cmd("A", &["STRLEN", "l1"]);
    s.cmd("B", &["LPOP", "l1"]);
    s.info_tracking("B");
}

/// OPTIN and OPTOUT with CLIENT CACHING, NOLOOP, a RESP2 client tracking for itself.
fn opt_in_and_out(s: &mut Session<'_>) {
    // OPTIN: only after CACHING YES, for one command (CLIENT commands and a transaction keep it).
    s.open("O", true);
    s.cmd("O", &["CLIENT", "TRACKING", "ON", "OPTIN"]);
    s.cmd("O", &["CLIENT", "CACHING", "NO"]);
    s.cmd("O", &["CLIENT", "CACHING", "maybe"]);
    s.cmd("O", &["GET", "oa"]);
    s.cmd("O", &["CLIENT", "CACHING", "YES"]);
    s.cmd("O", &["CLIENT", "TRACKINGINFO"]);
    s.cmd("O", &["GET", "ob"]);
    s.cmd("O", &["GET", "oc"]);
    s.cmd("O", &["CLIENT", "CACHING", "yes"]);
    s.cmd("O", &["CLIENT", "GETNAME"]);
    s.cmd("O", &["GET", "od"]);
    s.cmd("O", &["CLIENT", "CACHING", "YES"]);
    s.cmd("O", &["MULTI"]);
    s.cmd("O", &["GET", "oe"]);
    s.cmd("O", &["GET", "of"]);
    s.cmd("O", &["EXEC"]);
    s.cmd("O", &["GET", "og"]);
    s.cmd("O", &["CLIENT", "CACHING", "YES"]);
    s.cmd("O", &["NOSUCHCOMMAND"]);
    s.cmd("O", &["GET", "oh"]);
    s.cmd("O", &["CLIENT", "TRACKINGINFO"]);
    s.cmd(
        "B",
        &[
            "MSET", "oa", "1", "ob", "1", "oc", "1", "od", "1", "oe", "1", "of", "1", "og", "1",
            "oh", "1",
        ],
    );
    s.cmd("O", &["CLIENT", "TRACKING", "ON", "OPTOUT"]);
    s.cmd("O", &["CLIENT", "TRACKING", "OFF"]);
    // OPTOUT: everything but what follows CACHING NO.
    s.open("P", true);
    s.cmd("P", &["CLIENT", "TRACKING", "ON", "OPTOUT"]);
    s.cmd("P", &["CLIENT", "CACHING", "YES"]);
    s.cmd("P", &["GET", "pa"]);
    s.cmd("P", &["CLIENT", "CACHING", "NO"]);
    s.cmd("P", &["CLIENT", "TRACKINGINFO"]);
    s.cmd("P", &["GET", "pb"]);
    s.cmd("P", &["GET", "pc"]);
    s.cmd("P", &["CLIENT", "TRACKING", "ON", "OPTIN"]);
    s.cmd("B", &["MSET", "pa", "1", "pb", "1", "pc", "1"]);
    no_loop(s);
}

/// NOLOOP, and a RESP2 client tracking for itself.
fn no_loop(s: &mut Session<'_>) {
    // NOLOOP: nothing for the client's own writes, and the key is forgotten all the same.
    s.open("N", true);
    s.cmd("N", &["CLIENT", "TRACKING", "ON", "NOLOOP"]);
    s.cmd("N", &["CLIENT", "TRACKINGINFO"]);
    s.cmd("N", &["GET", "na"]);
    s.cmd("N", &["SET", "na", "1"]);
    s.cmd("B", &["SET", "na", "2"]);
    s.cmd("N", &["GET", "nb"]);
    s.cmd("B", &["SET", "nb", "2"]);
    // A RESP2 client tracking for itself gets nothing (no pushes in RESP2).
    s.open("T2", false);
    s.cmd("T2", &["CLIENT", "TRACKING", "ON"]);
    s.cmd("T2", &["GET", "t2"]);
    s.cmd("B", &["SET", "t2", "1"]);
    s.cmd("T2", &["CLIENT", "TRACKINGINFO"]);
    s.list_flags("B", "T2");
    s.info_tracking("B");
}

/// RESET and a disconnect turn tracking off; their stale ids are skipped.
fn reset_and_disconnect(s: &mut Session<'_>) {
    s.cmd("F", &["GET", "r1"]);
    s.cmd("A", &["GET", "r1"]);
    s.cmd("A", &["RESET"]);
    s.cmd("A", &["CLIENT", "TRACKINGINFO"]);
    s.cmd("A", &["CLIENT", "GETREDIR"]);
    s.list_flags("B", "A");
    s.close("F", "B");
    s.info_tracking("B");
    s.cmd("B", &["SET", "r1", "1"]);
    s.cmd("A", &["HELLO", "3", "SETNAME", "a"]);
    s.cmd("A", &["GET", "r1"]);
    s.cmd("B", &["SET", "r1", "2"]);
}

/// Redirection: to RESP2 clients with and without subscriptions, to a RESP3 client that writes
/// the key itself, to a client that goes away.
fn redirect(s: &mut Session<'_>) {
    s.open("B", false);
    s.open("R2", false);
    s.open("S2", false);
    s.open("N2", false);
    s.cmd("R2", &["SUBSCRIBE", "__redis__:invalidate"]);
    s.cmd("S2", &["SUBSCRIBE", "other"]);
    s.open("D", false);
    s.open("D3", true);
    s.open("DS", true);
    s.open("DN", false);
    s.cmd("D", &["CLIENT", "TRACKING", "ON", "REDIRECT", "{R2}"]);
    s.cmd("D3", &["CLIENT", "TRACKING", "ON", "REDIRECT", "{R2}"]);
    s.cmd("DS", &["CLIENT", "TRACKING", "ON", "REDIRECT", "{S2}"]);
    s.cmd("DN", &["CLIENT", "TRACKING", "ON", "REDIRECT", "{N2}"]);
    s.cmd("D", &["CLIENT", "GETREDIR"]);
    s.cmd("D", &["CLIENT", "TRACKINGINFO"]);
    s.list_flags("B", "D");
    s.cmd("D", &["GET", "rk1"]);
    s.cmd("D3", &["GET", "rk3"]);
    s.cmd("DS", &["GET", "rk3"]);
    s.cmd("DN", &["GET", "rk4"]);
    s.cmd("B", &["SET", "rk1", "1"]);
    s.cmd("B", &["SET", "rk3", "1"]);
    s.cmd("B", &["SET", "rk4", "1"]);
    // The tracking client's own write goes to its redirect target too.
    s.cmd("D3", &["GET", "rk5"]);
    s.cmd("D3", &["SET", "rk5", "1"]);
    // A RESP3 target that modifies the key: its push comes ahead of its reply.
    s.open("G", true);
    s.open("A4", true);
    s.cmd("A4", &["CLIENT", "TRACKING", "ON", "REDIRECT", "{G}"]);
    s.cmd("A4", &["GET", "q"]);
    s.cmd("G", &["SET", "q", "v"]);
    s.cmd("A4", &["MGET", "q", "q2"]);
    s.cmd("G", &["DEL", "q", "q2"]);
    // A client redirecting to itself.
    s.open("SELF", true);
    s.cmd("SELF", &["CLIENT", "TRACKING", "ON", "REDIRECT", "{SELF}"]);
    s.cmd("SELF", &["GET", "sk"]);
    s.cmd("SELF", &["SET", "sk", "1"]);
    // FLUSHALL: a null to every tracking client, framed by the tracking client's protocol.
    s.cmd("A4", &["GET", "q"]);
    s.cmd("G", &["FLUSHALL"]);
    s.cmd("B", &["FLUSHDB"]);
    s.cmd("SELF", &["FLUSHALL"]);
    // The redirect target goes away.
    s.open("X", true);
    s.open("A3", true);
    s.cmd("A3", &["CLIENT", "TRACKING", "ON", "REDIRECT", "{X}"]);
    s.cmd("A3", &["GET", "bk"]);
    s.close("X", "B");
    s.list_flags("B", "A3");
    s.cmd("B", &["SET", "bk", "1"]);
    s.cmd("A3", &["CLIENT", "TRACKINGINFO"]);
    s.cmd("A3", &["CLIENT", "GETREDIR"]);
    s.list_flags("B", "A3");
    s.cmd("A3", &["GET", "bk"]);
    s.cmd("A3", &["SET", "bk", "2"]);
    s.cmd("B", &["FLUSHALL"]);
    s.cmd("A3", &["CLIENT", "TRACKING", "ON"]);
    s.cmd("A3", &["CLIENT", "TRACKINGINFO"]);
    s.list_flags("B", "A3");
    s.info_tracking("B");
}

/// BCAST: prefixes, batching, NOLOOP, TRACKINGINFO, and every error text of TRACKING and
/// CACHING.
fn broadcast(s: &mut Session<'_>) {
    prefixes(s);
    errors(s);
}

/// BCAST with prefixes: one message per prefix and batch, NOLOOP, a RESP2 redirect.
fn prefixes(s: &mut Session<'_>) {
    s.open("B", false);
    s.open("C", true);
    s.open("C2", true);
    s.open("C3", false);
    s.open("R2", false);
    s.cmd("R2", &["SUBSCRIBE", "__redis__:invalidate"]);
    s.cmd(
        "C",
        &[
            "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "obj:",
        ],
    );
    s.cmd("C2", &["CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"]);
    s.cmd(
        "C3",
        &[
            "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "REDIRECT", "{R2}",
        ],
    );
    s.cmd("C", &["CLIENT", "TRACKINGINFO"]);
    s.cmd("C2", &["CLIENT", "TRACKINGINFO"]);
    s.cmd("C3", &["CLIENT", "TRACKINGINFO"]);
    s.list_flags("B", "C");
    s.list_flags("B", "C3");
    s.info_tracking("B");
    s.cmd("B", &["SET", "user:1", "a"]);
    s.cmd("B", &["MSET", "user:2", "x", "obj:1", "y", "zz", "1"]);
    s.pipeline(
        "B",
        &[
            &["SET", "user:3", "a"],
            &["SET", "user:4", "b"],
            &["DEL", "user:3"],
        ],
    );
    // A BCAST client reading keys tracks nothing in the table.
    s.cmd("C", &["GET", "user:5"]);
    s.info_tracking("B");
    // NOLOOP: the client's own keys are left out, and a message that would be empty is not sent.
    s.cmd("C2", &["SET", "zz2", "1"]);
    s.cmd("B", &["SET", "zz3", "1"]);
    s.cmd("C", &["SET", "user:9", "1"]);
    s.cmd("C", &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "us"]);
    s.cmd("C", &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "new"]);
    s.cmd("C", &["CLIENT", "TRACKINGINFO"]);
    s.cmd("C", &["CLIENT", "TRACKING", "ON"]);
    s.cmd("C", &["CLIENT", "CACHING", "YES"]);
    s.cmd("B", &["SET", "newkey", "1"]);
    s.cmd("C", &["CLIENT", "TRACKING", "OFF"]);
    s.cmd("B", &["SET", "newkey", "2"]);
    s.info_tracking("B");
}

/// Every error of CLIENT TRACKING and CLIENT CACHING, in Redis's order of checks, in RESP3 and
/// RESP2, and how errorstats counts them.
fn errors(s: &mut Session<'_>) {
    s.open("E", true);
    s.open("E2", false);
    for e in ["E", "E2"] {
        let errors: &[&[&str]] = &[
            &["CLIENT", "TRACKING"],
            &["CLIENT", "TRACKING", "maybe"],
            &["CLIENT", "TRACKING", "maybe", "REDIRECT", "999999"],
            &["CLIENT", "TRACKING", "ON", "FOO"],
            &["CLIENT", "TRACKING", "ON", "REDIRECT"],
            &["CLIENT", "TRACKING", "ON", "PREFIX"],
            &["CLIENT", "TRACKING", "ON", "REDIRECT", "abc"],
            &["CLIENT", "TRACKING", "ON", "REDIRECT", "0"],
            &["CLIENT", "TRACKING", "ON", "REDIRECT", "-3"],
            &[
                "CLIENT", "TRACKING", "ON", "REDIRECT", "{B}", "REDIRECT", "{B}",
            ],
            &["CLIENT", "TRACKING", "ON", "PREFIX", "a"],
            &["CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"],
            &["CLIENT", "TRACKING", "ON", "BCAST", "OPTOUT"],
            &["CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"],
            &[
                "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "ab",
            ],
            &[
                "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a",
            ],
            &[
                "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "x",
            ],
            &["CLIENT", "CACHING", "YES"],
            &["CLIENT", "CACHING"],
            &["CLIENT", "CACHING", "YES", "NO"],
            &["CLIENT", "GETREDIR", "x"],
            &["CLIENT", "TRACKINGINFO", "x"],
            &["CLIENT", "TRACKING", "ON", "OPTIN"],
            &["CLIENT", "TRACKING", "ON", "OPTOUT"],
            &["CLIENT", "TRACKING", "ON", "BCAST"],
            &["CLIENT", "CACHING", "NO"],
            &["CLIENT", "TRACKING", "OFF", "BCAST", "PREFIX", "q"],
            &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "q"],
            &["CLIENT", "TRACKING", "ON", "BCAST"],
            &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "qq"],
            &["CLIENT", "TRACKING", "OFF"],
            &["CLIENT", "TRACKING", "OFF"],
        ];
        for args in errors {
            s.cmd(e, args);
        }
    }
    s.cmd("B", &["INFO", "errorstats"]);
}

/// Expiry: the active cycle and lazy expiry (by another client and by the client itself), in
/// default and BCAST mode; FLUSHALL sends the null. The TTLs leave the reads 400 ms, so a
/// loaded machine does not see a key expire before it is read.
fn expiry(s: &mut Session<'_>) {
    s.open("A", true);
    s.open("B", false);
    s.open("C", true);
    s.cmd("A", &["SELECT", "9"]);
    s.cmd("B", &["SELECT", "9"]);
    s.cmd("A", &["CLIENT", "TRACKING", "ON"]);
    s.cmd("C", &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "e"]);
    s.cmd("B", &["SET", "e1", "v", "PX", "400"]);
    s.cmd("A", &["GET", "e1"]);
    s.wait_empty("B");
    s.sync_all();
    s.cmd("B", &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    s.cmd("B", &["SET", "e2", "v", "PX", "400"]);
    s.cmd("B", &["SET", "e3", "v", "PX", "400"]);
    s.cmd("A", &["MGET", "e2", "e3"]);
    std::thread::sleep(Duration::from_millis(700));
    s.cmd("B", &["GET", "e2"]);
    s.cmd("A", &["GET", "e3"]);
    s.cmd("B", &["SET", "e3", "w"]);
    s.cmd("B", &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    s.cmd("A", &["GET", "f1"]);
    s.cmd("B", &["FLUSHALL"]);
    s.cmd("A", &["FLUSHALL"]);
    s.info_tracking("B");
}

/// `tracking-table-max-keys`: keys over the limit are invalidated until the table is back at it.
fn max_keys(s: &mut Session<'_>) {
    s.open("M", true);
    s.open("B", false);
    s.cmd("M", &["CLIENT", "TRACKING", "ON"]);
    s.cmd("B", &["CONFIG", "SET", "tracking-table-max-keys", "3"]);
    for key in ["m1", "m2", "m3"] {
        s.cmd("M", &["GET", key]);
    }
    s.info_tracking("B");
    s.cmd("B", &["CONFIG", "SET", "tracking-table-max-keys", "1"]);
    s.info_tracking("B");
    s.cmd("B", &["CONFIG", "SET", "tracking-table-max-keys", "0"]);
    s.cmd("M", &["MGET", "m4", "m5", "m6"]);
    s.info_tracking("B");
}

#[test]
fn default_mode_matches_redis() {
    differential(&[], default_mode);
}

#[test]
fn redirection_matches_redis() {
    differential(&[], redirect);
}

#[test]
fn broadcast_mode_and_errors_match_redis() {
    differential(&[], broadcast);
}

#[test]
fn expiry_and_flush_match_redis() {
    differential(&["--enable-debug-command", "yes"], expiry);
}

/// Which keys the limit evicts is random: the transcripts are compared with key names hidden.
#[test]
fn table_limit_matches_redis() {
    let densekv = Server::densekv(&["--io-threads", "4"]);
    let redis = Server::redis(&[]);
    let run = |server: &Server| {
        let mut session = Session::new(server);
        max_keys(&mut session);
        let mut logs = session.transcripts();
        for log in logs.values_mut() {
            for line in log.iter_mut() {
                for n in 1..=6 {
                    *line = line.replace(&format!("$2\\r\\nm{n}\\r\\n"), "$2\\r\\nm?\\r\\n");
                }
            }
        }
        logs
    };
    assert_eq!(run(&densekv), run(&redis));
}

/// Redis 7.0.15 answers an overlap between two new prefixes past the first with the error and
/// then OK (two replies); densekv answers the error alone and leaves tracking off.
#[test]
fn overlapping_new_prefixes_get_one_reply() {
    let server = Server::densekv(&[]);
    let mut c = server.connect();
    let reply = c.cmd(&[
        "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "b", "PREFIX", "bc",
    ]);
    assert_eq!(
        reply,
        b"-ERR Prefix 'b' overlaps with another provided prefix 'bc'. Prefixes for a single client must not overlap.\r\n"
    );
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(c.cmd(&["CLIENT", "GETREDIR"]), b":-1\r\n");
}

/// `used_memory` in INFO.
fn used_memory(client: &mut Client) -> i64 {
    let info = String::from_utf8_lossy(&client.cmd(&["INFO", "memory"])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .expect("used_memory")
        .trim()
        .parse()
        .expect("a number")
}

/// The tracking table is memory INFO counts: 50,000 tracked keys (one reader each) cost about
/// what `tracking.rs` says (57 B per 9-byte key measured; redis-server 7.0.15: 99 B), and
/// FLUSHALL gives it back.
#[test]
fn the_table_is_counted_in_used_memory_and_freed() {
    const KEYS: i64 = 50_000;
    let server = Server::densekv(&[]);
    let mut reader = server.connect();
    let mut admin = server.connect();
    assert!(reader.cmd(&["HELLO", "3"]).starts_with(b"%"));
    assert_eq!(reader.cmd(&["CLIENT", "TRACKING", "ON"]), b"+OK\r\n");
    // Warm the connections' buffers, so what follows measures the table alone.
    let batch: Vec<Vec<Vec<u8>>> = (0..500)
        .map(|i| vec![b"GET".to_vec(), format!("warm:{i:05}").into_bytes()])
        .collect();
    reader.pipeline(&batch);
    admin.cmd(&["FLUSHALL"]);
    while reader.cmd(&["PING"]) != b"+PONG\r\n" {}
    let before = used_memory(&mut admin);
    for chunk in 0..KEYS / 500 {
        let mut mget = vec![b"MGET".to_vec()];
        mget.extend((0..500).map(|i| format!("key:{:05}", chunk * 500 + i).into_bytes()));
        reader.pipeline(&[mget]);
    }
    let info = String::from_utf8_lossy(&admin.cmd(&["INFO", "stats"])).into_owned();
    assert!(
        info.contains(&format!("tracking_total_keys:{KEYS}\r\n")),
        "{info}"
    );
    let tracked = used_memory(&mut admin);
    let per_key = (tracked - before) / KEYS;
    eprintln!("tracking table: {per_key} B per key");
    assert!(
        (40..=160).contains(&per_key),
        "{per_key} B per tracked key (before {before}, after {tracked})"
    );
    admin.cmd(&["FLUSHALL"]);
    while reader.cmd(&["PING"]) != b"+PONG\r\n" {}
    let after = used_memory(&mut admin);
    assert!(
        after - before < (tracked - before) / 10,
        "FLUSHALL left {} of {} bytes",
        after - before,
        tracked - before
    );
}
