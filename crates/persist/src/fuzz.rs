//! The body of the `rdb_load` fuzz target (`fuzz/fuzz_targets/rdb_load.rs`), here so that the
//! test `tests/fuzz_corpus.rs` replays the committed corpus on stable without libFuzzer.
//!
//! ```text
//!  data = mode: u8, bytes…
//!  mode even:  bytes are an RDB file: read whole, and read through windows of 1 + mode / 2
//!              bytes as the server's loader feeds them: both must give the same keys and
//!              values, or the same error; what loads is stored into a shard
//!  mode 1 mod 4:  bytes are a DUMP payload: what reads stores into a shard and dumps to a
//!                 payload that reads back to the same value
//!  mode 3 mod 4:  bytes are an AOF file and a manifest: the command stream ends, and a cut
//!                 tail's reported end reads back as the same whole items without error
//! ```
//! Whatever the bytes, nothing may panic, hang, or allocate more than the input justifies.

use crate::rdb::{self, LoadError, Stream};
use crate::value::{self, Value};
use crate::{aof, dump};
use store::{Shard, ShardConfig};

/// A file's keys as read: (db, name, value, expiry).
type Keys = Vec<(usize, Vec<u8>, Value<'static>, Option<u64>)>;

/// Checks one fuzz input (see the module doc); panics on a violation.
pub fn fuzz_check(data: &[u8]) {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 | 2 => check_rdb(bytes, 1 + usize::from(mode / 2)),
        1 => check_dump(bytes),
        _ => check_aof(bytes),
    }
}

fn check_aof(bytes: &[u8]) {
    let _ = aof::parse_manifest(bytes);
    let mut items = Vec::new();
    let mut end = None;
    for item in aof::Commands::new(bytes) {
        match item {
            Ok(item) => items.push(item),
            Err(e) => end = Some(e),
        }
    }
    if let Some(aof::StreamError::Truncated { valid_len }) = end {
        assert!(valid_len <= bytes.len(), "a cut tail ends inside the file");
        let again: Result<Vec<_>, _> = aof::Commands::new(&bytes[..valid_len]).collect();
        assert_eq!(
            again.as_ref(),
            Ok(&items),
            "the whole items before a cut read alone"
        );
    }
}

fn check_rdb(bytes: &[u8], window: usize) {
    let mut whole = Keys::new();
    let read = rdb::read(bytes, 16, |db, key, value, at| {
        whole.push((db, key.into_owned(), value.into_owned(), at));
    })
    .map(|_| whole);
    let streamed = read_in_windows(bytes, window);
    assert_eq!(read, streamed, "whole and windowed reads differ");
    if let Ok(keys) = read {
        let mut shard = Shard::new(&ShardConfig::default()).expect("a shard");
        for (db, key, value, at) in &keys {
            value::store(value, &mut shard, *db, key, *at).expect("a read value stores");
        }
        shard.validate().expect("a valid shard");
    }
}

/// Reads `bytes` as the server's loader does: a window of `size` bytes at first, the
/// unconsumed rest kept, doubled while one record does not fit.
fn read_in_windows(bytes: &[u8], size: usize) -> Result<Keys, LoadError> {
    let mut stream = Stream::new(16);
    let mut keys = Keys::new();
    let (mut start, mut len) = (0, size);
    while !stream.ended() {
        let end = (start + len).min(bytes.len());
        let last = end == bytes.len();
        let consumed = stream.feed(
            &bytes[start..end],
            last,
            usize::MAX,
            |db, key, value, at| {
                keys.push((db, key.into_owned(), value.into_owned(), at));
            },
        )?;
        if last && !stream.ended() && consumed == 0 {
            break;
        }
        if consumed == 0 {
            len *= 2;
        }
        start += consumed;
    }
    stream.finish().map(|_| keys)
}

fn check_dump(bytes: &[u8]) {
    let Ok(value) = dump::read(bytes) else {
        return;
    };
    let mut shard = Shard::new(&ShardConfig::default()).expect("a shard");
    value::store(&value, &mut shard, 0, b"k", None).expect("a read value stores");
    shard.validate().expect("a valid shard");
    let again = shard
        .peek(0, b"k", |e| {
            let encoding = e.object_encoding();
            dump::create(&e.view, encoding, false)
        })
        .expect("the key is stored");
    let reread = dump::read(&again).expect("densekv's own payload reads");
    assert_eq!(
        value.sorted(),
        reread.sorted(),
        "a payload round trip changed the value"
    );
}
