//! RDB files (`rdbSaveRio`, `rdbLoadRio`): a whole dataset, version 10, as redis-server 7.0 writes
//! and reads it. The writer takes the store's entries database by database; the reader hands
//! back each key's database, name, `Value` and expiry for the caller to store (names and raw
//! strings borrow the file's bytes; collections are owned).
//!
//! ```text
//!  "REDIS0010"                                  magic and 4-digit version (ASCII)
//!  FA aux-key aux-value  …                      AUX: redis-ver, redis-bits, ctime, used-mem,
//!                                               aof-base (strings; integers int-encoded)
//!  F5 code  …                                   FUNCTION2: one function library's source
//!  per non-empty database:
//!    FE db                                      SELECTDB (a length)
//!    FB db-size expires-size                    RESIZEDB (two lengths)
//!    per key: [FC ms: u64 LE]                   EXPIRETIME_MS when the key has a TTL
//!             type key object                   value.rs (the key is an RDB string)
//!  FF                                           EOF
//!  CRC-64 of every byte before: u64 LE          0 when rdbchecksum is off
//! ```
//! The reader also takes what older files hold: EXPIRETIME (FD, seconds: u32 LE), IDLE (F8, a
//! length) and FREQ (F9, one byte), which it reads and ignores (densekv keeps no access clock
//! yet), versions 1 to 10, and files without a checksum (version < 5, or a stored CRC of 0, which
//! Redis writes when `rdbchecksum no`). A module's aux data (F7) or values, the functions of Redis
//! 7.0's release candidates (F6: name, engine and description fields before the code) and
//! streams are refused by name: densekv has none of them. Every byte is hostile input
//! (`value.rs` checks the values); a file that ends early, names a database past `databases`, or
//! fails its checksum is an error, and nothing read before the error is kept by the caller's
//! contract (load into a fresh keyspace, swap on success).

use crate::FormatError;
use crate::codec::{self, RDB_VERSION, Reader, opcode};
use crate::crc64::crc64;
use crate::value::{self, Value};
use std::borrow::Cow;
use std::io::{self, Write};
use store::{Entry, Shard};

/// The file's first bytes before the version digits.
const MAGIC: &[u8] = b"REDIS";
/// The Redis version densekv's files claim (`redis-ver`): the release whose format they follow.
pub const REDIS_VER: &str = "7.0.15";

/// Appends one key's record to `out`: its expiry (EXPIRETIME_MS) if it has one, the value's
/// type, the key and the object; LZF for strings over 20 bytes when `compress`.
pub fn encode_entry(out: &mut Vec<u8>, e: &Entry<'_>, compress: bool) {
    if let Some(at) = e.expire_at_ms {
        out.push(opcode::EXPIRETIME_MS);
        codec::put_millis_le(out, at);
    }
    let encoding = e.object_encoding();
    out.push(value::rdb_type_of(&e.view, encoding));
    codec::put_string(out, e.key, compress);
    value::write_object(out, &e.view, encoding, compress);
}

/// What the writer is told about the server (the AUX fields and the options).
#[derive(Clone, Debug)]
pub struct SaveOptions {
    /// LZF for strings over 20 bytes (`rdbcompression`).
    pub compress: bool,
    /// Write the CRC-64 trailer; 0 when off (`rdbchecksum`).
    pub checksum: bool,
    /// Unix seconds of the save (`ctime`).
    pub ctime_secs: u64,
    /// Bytes of memory in use (`used-mem`).
    pub used_mem_bytes: u64,
    /// The file is the base of an append-only file (`aof-base 1`).
    pub aof_base: bool,
    /// The function libraries' sources, written after the AUX fields (FUNCTION2 each).
    pub functions: Vec<Vec<u8>>,
}

/// Writes an RDB file to `out`, record by record, keeping the running CRC.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    crc: u64,
    options: SaveOptions,
    /// The record being built (written and checksummed whole).
    record: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Starts a file: the magic, the version and the AUX fields.
    pub fn new(out: W, options: SaveOptions) -> io::Result<Writer<W>> {
        let mut w = Writer {
            out,
            crc: 0,
            options,
            record: Vec::with_capacity(4096),
        };
        w.record
            .extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
        w.aux(b"redis-ver", REDIS_VER.as_bytes());
        w.aux_int(b"redis-bits", 64);
        w.aux_int(b"ctime", w.options.ctime_secs as i64);
        w.aux_int(b"used-mem", w.options.used_mem_bytes as i64);
        w.aux_int(b"aof-base", i64::from(w.options.aof_base));
        w.flush_record()?;
        let functions = std::mem::take(&mut w.options.functions);
        w.functions(&functions)?;
        Ok(w)
    }

    fn aux(&mut self, key: &[u8], value: &[u8]) {
        self.record.push(opcode::AUX);
        codec::put_string(&mut self.record, key, false);
        codec::put_string(&mut self.record, value, false);
    }

    fn aux_int(&mut self, key: &[u8], value: i64) {
        self.record.push(opcode::AUX);
        codec::put_string(&mut self.record, key, false);
        codec::put_int_string(&mut self.record, value);
    }

    fn flush_record(&mut self) -> io::Result<()> {
        self.crc = crc64(self.crc, &self.record);
        self.out.write_all(&self.record)?;
        self.record.clear();
        Ok(())
    }

    /// Writes the function libraries' sources (FUNCTION2 each), after the AUX fields and
    /// before the databases, where Redis's `rdbSaveFunctions` puts them.
    fn functions(&mut self, codes: &[Vec<u8>]) -> io::Result<()> {
        for code in codes {
            self.record.push(opcode::FUNCTION2);
            codec::put_string(&mut self.record, code, self.options.compress);
            self.flush_record()?;
        }
        Ok(())
    }

    /// Starts database `db`, which holds `keys` keys of which `expires` have a TTL.
    pub fn select_db(&mut self, db: usize, keys: usize, expires: usize) -> io::Result<()> {
        self.select(db, Some((keys, expires)))
    }

    /// Starts database `db`: SELECTDB, then RESIZEDB when its (keys, expires) are given (a file
    /// may select a database more than once; a loader takes the sizes as a hint).
    pub fn select(&mut self, db: usize, sizes: Option<(usize, usize)>) -> io::Result<()> {
        self.record.push(opcode::SELECTDB);
        codec::put_len(&mut self.record, db as u64);
        if let Some((keys, expires)) = sizes {
            self.record.push(opcode::RESIZEDB);
            codec::put_len(&mut self.record, keys as u64);
            codec::put_len(&mut self.record, expires as u64);
        }
        self.flush_record()
    }

    /// Writes one key of the current database.
    pub fn entry(&mut self, e: &Entry<'_>) -> io::Result<()> {
        encode_entry(&mut self.record, e, self.options.compress);
        self.flush_record()
    }

    /// Writes every non-empty database of a keyspace held as `shards`, database by database,
    /// each with its sizes (SAVE's whole-keyspace write, with every shard held).
    pub fn keyspace(&mut self, shards: &mut [&mut Shard]) -> io::Result<()> {
        let databases = shards.first().map_or(0, |s| s.databases());
        for db in 0..databases {
            let keys: usize = shards.iter().map(|s| s.len(db)).sum();
            if keys == 0 {
                continue;
            }
            let expires = shards.iter().map(|s| s.expires(db)).sum();
            self.select_db(db, keys, expires)?;
            for shard in shards.iter_mut() {
                let mut result = Ok(());
                shard.for_each_entry(db, |e| {
                    if result.is_ok() {
                        result = self.entry(&e);
                    }
                });
                result?;
            }
        }
        Ok(())
    }

    /// Writes keys of the current database already encoded by `encode_entry`.
    pub fn records(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.crc = crc64(self.crc, bytes);
        self.out.write_all(bytes)
    }

    /// Ends the file (EOF and the checksum) and hands back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.record.push(opcode::EOF);
        self.flush_record()?;
        let crc = if self.options.checksum { self.crc } else { 0 };
        self.out.write_all(&crc.to_le_bytes())?;
        Ok(self.out)
    }
}

/// Why a file could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// Not an RDB file, or a version densekv cannot read.
    Version(String),
    /// The bytes are not a valid RDB file (what is wrong, and the key when one was being read).
    Format(FormatError, Option<Vec<u8>>),
    /// A database past the configured `databases`.
    Database(u64),
    /// The checksum does not match.
    Checksum,
    /// Something densekv has no place for yet (modules, functions, streams).
    Unsupported(&'static str),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Version(v) => write!(f, "Can't handle RDB format version {v}"),
            LoadError::Format(e, None) => write!(f, "Bad RDB data: {e}"),
            LoadError::Format(e, Some(k)) => {
                write!(f, "Bad RDB data: {e} (key {})", String::from_utf8_lossy(k))
            }
            LoadError::Database(db) => write!(
                f,
                "Data file was created with a server configured to handle more than {db} databases"
            ),
            LoadError::Checksum => f.write_str("Wrong RDB checksum"),
            LoadError::Unsupported(what) => write!(
                f,
                "The RDB file holds {what}, which densekv does not support yet"
            ),
        }
    }
}

/// What a load found besides the keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    pub version: u16,
    pub keys: usize,
    /// The AUX fields, in file order.
    pub aux: Vec<(Vec<u8>, Vec<u8>)>,
    /// The function libraries' sources (FUNCTION2), in file order.
    pub functions: Vec<Vec<u8>>,
}

/// Reads a whole RDB file, calling `key(db, name, value, expire_at_ms)` for every key, with
/// `databases` the highest database count the caller can store. Names and raw string values
/// borrow `bytes`.
pub fn read<'a>(
    bytes: &'a [u8],
    databases: usize,
    key: impl FnMut(usize, Cow<'a, [u8]>, Value<'a>, Option<u64>),
) -> Result<Loaded, LoadError> {
    let mut stream = Stream::new(databases);
    stream.feed(bytes, true, usize::MAX, key)?;
    stream.finish()
}

/// A file read piece by piece (the server's load, which never holds the whole file): `feed`
/// takes the bytes that follow what it consumed so far, parses the whole records among them,
/// and says how many bytes it consumed; the caller keeps the rest and appends more.
///
/// A record that does not parse in a window that is not the file's last is retried with more
/// bytes: a record cut by the window's end fails like a corrupt one (a count larger than the
/// bytes left, a string past the end), so only once the window holds the rest of the file is a
/// failure the file's. Each record changes the stream's state only once it parsed whole, so a
/// retry starts from the same state.
#[derive(Debug)]
pub struct Stream {
    databases: usize,
    /// `None` until the header was read.
    version: Option<u16>,
    db: usize,
    expire_at: Option<u64>,
    loaded: Loaded,
    /// CRC-64 of every byte consumed so far.
    crc: u64,
    /// The EOF opcode and the trailer were read.
    ended: bool,
}

impl Stream {
    pub fn new(databases: usize) -> Stream {
        Stream {
            databases,
            version: None,
            db: 0,
            expire_at: None,
            loaded: Loaded::default(),
            crc: 0,
            ended: false,
        }
    }

    /// Keys read so far.
    pub fn keys(&self) -> usize {
        self.loaded.keys
    }

    /// The AUX fields read so far, in file order.
    pub fn aux(&self) -> &[(Vec<u8>, Vec<u8>)] {
        &self.loaded.aux
    }

    /// Whether the file was read to its end (EOF and the checksum).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Parses the whole records at the start of `window`, at most `max_keys` keys, calling
    /// `key` for each key; returns the bytes consumed. `last`: `window` holds the rest of the
    /// file, so a record that does not parse is the file's error.
    pub fn feed<'a>(
        &mut self,
        window: &'a [u8],
        last: bool,
        max_keys: usize,
        mut key: impl FnMut(usize, Cow<'a, [u8]>, Value<'a>, Option<u64>),
    ) -> Result<usize, LoadError> {
        let mut r = Reader::new(window);
        let mut consumed = 0;
        let mut keys = 0;
        let result = loop {
            if self.ended || keys == max_keys {
                break Ok(());
            }
            let step = if self.version.is_none() {
                self.header(&mut r)
            } else {
                self.record(&mut r, &mut key)
            };
            match step {
                Ok(got_key) => {
                    keys += usize::from(got_key);
                    consumed = r.pos();
                }
                Err(_) if !last => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        self.crc = crc64(self.crc, &window[..consumed]);
        result.map(|()| consumed)
    }

    /// What the file held besides its keys, once it was read to its end.
    pub fn finish(self) -> Result<Loaded, LoadError> {
        if !self.ended {
            let e = if self.version.is_none() {
                LoadError::Version("(wrong signature trying to load DB from file)".into())
            } else {
                LoadError::Format(codec::TRUNCATED, None)
            };
            return Err(e);
        }
        Ok(self.loaded)
    }

    fn header(&mut self, r: &mut Reader<'_>) -> Result<bool, LoadError> {
        let bytes = r.bytes(9).map_err(|_| {
            LoadError::Version("(wrong signature trying to load DB from file)".into())
        })?;
        let version = check_header(bytes)?;
        self.version = Some(version);
        self.loaded.version = version;
        Ok(false)
    }

    /// One record (an opcode and what follows it); true when it was a key. On `Err` the
    /// stream is as it was before the record.
    fn record<'a>(
        &mut self,
        r: &mut Reader<'a>,
        key: &mut impl FnMut(usize, Cow<'a, [u8]>, Value<'a>, Option<u64>),
    ) -> Result<bool, LoadError> {
        let format = |e| LoadError::Format(e, None);
        match r.u8().map_err(format)? {
            opcode::EOF => self.trailer(r)?,
            opcode::SELECTDB => {
                let n = r.len_value().map_err(format)?;
                if n >= self.databases as u64 {
                    return Err(LoadError::Database(self.databases as u64));
                }
                self.db = n as usize;
            }
            opcode::RESIZEDB => {
                r.len_value().map_err(format)?;
                r.len_value().map_err(format)?;
            }
            opcode::AUX => {
                let k = r.string().map_err(format)?.into_owned();
                let v = r.string().map_err(format)?.into_owned();
                self.loaded.aux.push((k, v));
            }
            opcode::EXPIRETIME_MS => self.expire_at = Some(r.millis_le().map_err(format)?),
            opcode::EXPIRETIME => {
                self.expire_at = Some(u64::from(r.seconds_le().map_err(format)?) * 1000);
            }
            opcode::IDLE => drop(r.len_value().map_err(format)?),
            opcode::FREQ => drop(r.u8().map_err(format)?),
            opcode::MODULE_AUX => return Err(LoadError::Unsupported("module data")),
            opcode::FUNCTION2 => {
                let code = r.string().map_err(format)?.into_owned();
                self.loaded.functions.push(code);
            }
            opcode::FUNCTION => return Err(LoadError::Unsupported("pre-release functions")),
            t => {
                let name = r.string().map_err(format)?;
                let v = value::read(t, r).map_err(|e| match e {
                    FormatError("streams are not supported yet") => {
                        LoadError::Unsupported("streams")
                    }
                    FormatError("module values are not supported") => {
                        LoadError::Unsupported("module values")
                    }
                    e => LoadError::Format(e, Some(name.to_vec())),
                })?;
                key(self.db, name, v, self.expire_at.take());
                self.loaded.keys += 1;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// After EOF: the CRC of every byte before it (versions ≥ 5; a stored 0 means none was
    /// computed). `r` is positioned just after the EOF opcode.
    fn trailer(&mut self, r: &mut Reader<'_>) -> Result<(), LoadError> {
        let version = self.version.expect("the header was read");
        if version >= 5 {
            let crc = crc64(self.crc, r.consumed());
            let stored = r
                .u64_le()
                .map_err(|_| LoadError::Format(FormatError("the checksum is missing"), None))?;
            if stored != 0 && stored != crc {
                return Err(LoadError::Checksum);
            }
        }
        self.ended = true;
        Ok(())
    }
}

/// The version of a file starting `REDISnnnn`.
fn check_header(bytes: &[u8]) -> Result<u16, LoadError> {
    if bytes.len() < 9 || &bytes[..5] != MAGIC {
        return Err(LoadError::Version(
            "(wrong signature trying to load DB from file)".into(),
        ));
    }
    let digits = std::str::from_utf8(&bytes[5..9]).unwrap_or("");
    match digits.parse::<u16>() {
        Ok(v) if (1..=RDB_VERSION).contains(&v) && digits.bytes().all(|b| b.is_ascii_digit()) => {
            Ok(v)
        }
        _ => Err(LoadError::Version(digits.to_string())),
    }
}
