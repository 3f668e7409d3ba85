//! Loading the append-only file at startup (Redis's `loadAppendOnlyFiles` and
//! `loadSingleAppendOnlyFile`): the base, then each incremental file, replayed through the
//! command table as a client with no connection, while clients get `-LOADING`.
//!
//! ```text
//!  manifest ─▶ base: starts with "REDIS"? ─ yes ─▶ rdb_load (windowed, parallel)
//!                                          └ no ──▶ commands
//!           ─▶ incr 1, 2, … : commands (persist::aof::Commands), each run with its keys'
//!              shards held; MULTI queues until EXEC, which runs with every shard held
//!  a file cut short (a crash mid-append): the last file with aof-load-truncated yes is cut
//!  back to its last whole command (before an unfinished MULTI) and loads; otherwise, and for
//!  any other file, startup fails with Redis's text
//! ```
//! Every byte is hostile input: an unknown command, a wrong arity or a malformed line fails the
//! load with a clear error; no command's announced length is allocated beyond the file's bytes.

use super::files::Layout;
use crate::client::ClientState;
use crate::command::{self, COMMANDS, Found, Locks};
use crate::server::{Server, unix_ms};
use persist::aof::{AofFile, Commands, Item, StreamError};
use std::sync::atomic::Ordering;

/// Loads the files the manifest names: `Ok(false)` when there are none (the caller then starts
/// empty: with the AOF on, Redis does not read the RDB file). Each command holds its own
/// shards, so INFO and the other commands allowed while loading are served in between.
pub fn load(server: &Server) -> Result<bool, String> {
    load_with(server, None)
}

/// DEBUG LOADAOF: what was appended is written and synced, the keyspace emptied and the files
/// loaded again, with every shard held throughout by the caller (`locks`), so nothing is
/// appended meanwhile.
pub fn reload<'s>(server: &'s Server, locks: &mut Locks<'s>) -> Result<(), String> {
    let feeding = server.aof.feeding();
    if feeding {
        server.aof.flush_and_sync();
    }
    server.aof.set_feeding(false);
    for shard in locks.iter_mut() {
        (0..shard.databases()).for_each(|db| shard.flush(db));
    }
    crate::scripting::functions::clear(server);
    let result = match load_with(server, Some(&mut *locks)) {
        Ok(true) => Ok(()),
        Ok(false) => Err("Fatal error: no append only file to load".to_string()),
        Err(e) => Err(e),
    };
    for shard in locks.iter_mut() {
        // Keys the replay found expired are gone already; no DEL is owed for them.
        shard.take_expired();
    }
    server.aof.set_feeding(feeding);
    result
}

fn load_with<'s>(server: &'s Server, mut held: Option<&mut Locks<'s>>) -> Result<bool, String> {
    let started = std::time::Instant::now();
    let (files, layout_dir) = {
        let mut layout = server.aof.files.lock();
        layout.read_manifest()?;
        let m = &layout.manifest;
        let files: Vec<(AofFile, bool)> = m
            .base
            .iter()
            .map(|b| (b.clone(), true))
            .chain(m.incrs.iter().map(|f| (f.clone(), false)))
            .collect();
        (files, layout.dir.clone())
    };
    if files.is_empty() {
        return Ok(false);
    }
    let layout = Layout {
        dir: layout_dir,
        ..Layout::default()
    };
    let mut total = 0;
    for (file, _) in &files {
        let path = layout.path(&file.name);
        total += std::fs::metadata(&path)
            .map_err(|e| {
                format!(
                    "Fatal error: can't open the append log file {}: {e}",
                    String::from_utf8_lossy(&file.name)
                )
            })?
            .len();
    }
    if total == 0 {
        return Ok(true);
    }
    let progress = &server.persistence.load;
    progress.total_bytes.store(total, Ordering::Relaxed);
    progress.loaded_bytes.store(0, Ordering::Relaxed);
    for (i, (file, base)) in files.iter().enumerate() {
        let last = i + 1 == files.len();
        let name = String::from_utf8_lossy(&file.name).into_owned();
        let began = std::time::Instant::now();
        load_file(
            server,
            held.as_deref_mut(),
            &layout.path(&file.name),
            &name,
            last,
        )?;
        let kind = if *base { "base" } else { "incr" };
        crate::log::notice(&format!(
            "DB loaded from {kind} file {name}: {:.3} seconds",
            began.elapsed().as_secs_f64()
        ));
    }
    crate::log::notice(&format!(
        "DB loaded from append only file: {:.3} seconds",
        started.elapsed().as_secs_f64()
    ));
    Ok(true)
}

/// Loads one file: an RDB base, or commands.
fn load_file<'s>(
    server: &'s Server,
    mut held: Option<&mut Locks<'s>>,
    path: &std::path::Path,
    name: &str,
    last: bool,
) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| {
        format!("Fatal error: can't open the append log file {name} for reading: {e}")
    })?;
    if bytes.starts_with(b"REDIS") {
        crate::log::notice("Reading RDB base file on AOF loading...");
        let mut hold = |f: &mut dyn FnMut(&mut [&mut store::Shard])| match held.as_deref_mut() {
            Some(locks) => f(&mut locks.iter_mut().collect::<Vec<_>>()),
            None => f(&mut Locks::all(server).iter_mut().collect::<Vec<_>>()),
        };
        crate::rdb_load::load_path(server, path, &mut hold).map_err(|e| {
            format!("Error reading the RDB base file {name}, AOF loading aborted: {e}")
        })?;
        return Ok(());
    }
    let mut replay = Replay::new(server, held);
    let result = replay.replay(&bytes, name);
    server
        .persistence
        .load
        .loaded_bytes
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    match result {
        Ok(()) if replay.queue.is_none() => Ok(()),
        Ok(()) => {
            crate::log::warning(&format!(
                "Revert incomplete MULTI/EXEC transaction in AOF file {name}"
            ));
            truncate(server, path, name, replay.before_multi, last)
        }
        Err(StreamError::Truncated { valid_len }) => {
            let valid = if replay.queue.is_some() {
                replay.before_multi
            } else {
                valid_len
            };
            truncate(server, path, name, valid, last)
        }
        Err(StreamError::Format { .. }) => Err(format!(
            "Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
        )),
    }
}

/// A file that ends early: cut back to `valid` bytes when `aof-load-truncated` allows it (the
/// last file only), else the load fails with Redis's advice.
fn truncate(
    server: &Server,
    path: &std::path::Path,
    name: &str,
    valid: usize,
    last: bool,
) -> Result<(), String> {
    if !last {
        return Err("Fatal error: the truncated file is not the last file".into());
    }
    let unexpected = format!(
        "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
    );
    if !server.config.read().aof_load_truncated {
        return Err(unexpected);
    }
    crate::log::warning(&format!(
        "!!! Warning: short read while loading the AOF file {name}!!!"
    ));
    crate::log::warning(&format!(
        "!!! Truncating the AOF {name} at offset {valid} !!!"
    ));
    let cut = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(valid as u64));
    if let Err(e) = cut {
        crate::log::warning(&format!("Error truncating the AOF file {name}: {e}"));
        return Err(unexpected);
    }
    crate::log::warning(&format!(
        "AOF {name} loaded anyway because aof-load-truncated is enabled"
    ));
    Ok(())
}

/// The replay of one file's commands.
struct Replay<'s, 'h> {
    server: &'s Server,
    /// Every shard, held by the caller for the whole replay (DEBUG LOADAOF); `None`: each
    /// command takes its own.
    held: Option<&'h mut Locks<'s>>,
    client: ClientState,
    /// Commands queued since MULTI (`None`: not in a transaction).
    queue: Option<Vec<(usize, Vec<Vec<u8>>)>>,
    /// Where the file stood before the open MULTI.
    before_multi: usize,
    out: Vec<u8>,
    mark: crate::clock::Mark,
}

impl<'s, 'h> Replay<'s, 'h> {
    fn new(server: &'s Server, held: Option<&'h mut Locks<'s>>) -> Replay<'s, 'h> {
        Replay {
            server,
            held,
            client: ClientState::new(server.fake_client(), true),
            queue: None,
            before_multi: 0,
            out: Vec::new(),
            mark: crate::clock::now(),
        }
    }

    /// Replays every command of `bytes`; a malformed or cut file stops it with its error.
    fn replay(&mut self, bytes: &[u8], name: &str) -> Result<(), StreamError> {
        let mut commands = Commands::new(bytes);
        let mut at = 0;
        while let Some(item) = commands.next() {
            match item? {
                Item::Annotation(_) => {}
                Item::Command(args) => {
                    if let Err(e) = self.command(&args, at) {
                        crate::log::warning(&format!("{e} reading the append only file {name}"));
                        return Err(StreamError::Format {
                            at,
                            what: "a command that cannot run",
                        });
                    }
                }
            }
            at = commands.pos();
        }
        Ok(())
    }

    /// Runs (or queues, inside MULTI) one command that starts at offset `at`.
    fn command(&mut self, args: &[&[u8]], at: usize) -> Result<(), String> {
        let unknown = || {
            format!(
                "Unknown command '{}'",
                String::from_utf8_lossy(args.first().copied().unwrap_or_default())
            )
        };
        let Found::Command(index, spec) = command::resolve(args) else {
            return Err(unknown());
        };
        if !command::arity_ok(spec.arity, args.len()) {
            return Err(format!("Wrong number of arguments for '{}'", spec.name));
        }
        // Redis never writes these (a served pop is written as LPOP & co.); the loader's client
        // has no connection to block or subscribe with.
        if spec.flags & (command::flag::BLOCKING | command::flag::PUBSUB) != 0 {
            return Err(format!("Command '{}' cannot be replayed", spec.name));
        }
        match spec.name {
            "multi" => {
                self.queue = Some(Vec::new());
                self.before_multi = at;
            }
            "exec" => self.exec(),
            _ => match self.queue.as_mut() {
                Some(queue) => queue.push((index, args.iter().map(|a| a.to_vec()).collect())),
                None => self.run(index, args),
            },
        }
        Ok(())
    }

    /// EXEC: the queued commands with every shard held.
    fn exec(&mut self) {
        let Some(queue) = self.queue.take() else {
            return;
        };
        let commands: Vec<(usize, Vec<&[u8]>)> = queue
            .iter()
            .map(|(index, args)| (*index, args.iter().map(Vec::as_slice).collect()))
            .collect();
        self.run_all(&commands, Locks::all);
    }

    /// One command, with its own shards (or the held ones).
    fn run(&mut self, index: usize, args: &[&[u8]]) {
        let own = |server| command::locks_for(server, COMMANDS[index], args);
        self.run_all(&[(index, args.to_vec())], own);
    }

    /// Runs `commands` with the held shards, or with the locks `own` takes for them.
    fn run_all(
        &mut self,
        commands: &[(usize, Vec<&[u8]>)],
        own: impl FnOnce(&'s Server) -> Locks<'s>,
    ) {
        let mut taken = None;
        let locks = match self.held.as_deref_mut() {
            Some(locks) => locks,
            None => taken.insert(own(self.server)),
        };
        for (index, args) in commands {
            let now = unix_ms();
            let (server, client, out) = (self.server, &mut self.client, &mut self.out);
            command::run(
                server,
                client,
                out,
                locks,
                *index,
                args,
                now,
                &mut self.mark,
            );
            self.out.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of commands of every type, in three databases, with a transaction.
    fn sample() -> Vec<u8> {
        let commands: &[&[&[u8]]] = &[
            &[b"SET", b"s", b"v", b"PXAT", b"99999999999999"],
            &[b"INCRBY", b"n", b"7"],
            &[b"RPUSH", b"l", b"a", b"b", b"c"],
            &[b"SELECT", b"3"],
            &[b"SADD", b"set", b"1", b"2", b"x"],
            &[b"HSET", b"h", b"f", b"v", b"g", b"w"],
            &[b"MULTI"],
            &[b"ZADD", b"z", b"1.5", b"m", b"-inf", b"n"],
            &[b"LMOVE", b"l", b"l2", b"LEFT", b"RIGHT"],
            &[b"EXEC"],
            &[b"SELECT", b"9"],
            &[b"PEXPIREAT", b"set", b"1"],
            &[b"SETRANGE", b"s", b"3", b"xyz"],
            &[b"DEL", b"n"],
        ];
        let mut out = b"#TS:1700000000\r\n".to_vec();
        for args in commands {
            persist::aof_base::encode_command(&mut out, args);
        }
        out
    }

    /// Hostile files: thousands of seeded mutations of a valid file (bytes flipped, inserted,
    /// deleted, the file cut) replay or fail with an error, never panic, and every shard is
    /// whole afterwards.
    #[test]
    fn mutated_files_replay_or_fail_cleanly() {
        let server = Server::new(crate::Config::default()).expect("a server");
        let original = sample();
        let mut replay = Replay::new(&server, None);
        assert_eq!(replay.replay(&original, "sample"), Ok(()));
        assert!(replay.queue.is_none());
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..3000 {
            let mut bytes = original.clone();
            for _ in 0..=next(4) {
                let at = next(bytes.len());
                match next(4) {
                    0 => bytes[at] = next(256) as u8,
                    1 => bytes.insert(at, b"*$\r\n0123456789-"[next(15)]),
                    2 => {
                        bytes.remove(at);
                    }
                    _ => bytes.truncate(at),
                }
                if bytes.is_empty() {
                    break;
                }
            }
            let mut replay = Replay::new(&server, None);
            let _ = replay.replay(&bytes, "mutated");
        }
        for i in 0..server.shard_count() {
            server.lock_shard(i).validate().expect("a whole shard");
        }
    }
}
