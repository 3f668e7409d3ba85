//! Redis 7's append-only file, read side: the manifest of the multi-part layout and the command
//! stream of one AOF file (`aof.c`: `aofLoadManifestFromFile`, `loadSingleAppendOnlyFile`). The
//! server's AOF (writing, rewriting, loading at startup) builds on these; what is here reads
//! exactly what redis-server 7.0 writes, as hostile input.
//!
//! ```text
//!  appenddirname/ (appendonlydir)
//!    appendonly.aof.manifest        one line per file, in this order:
//!      file appendonly.aof.1.base.rdb seq 1 type b      the base: an RDB preamble (.rdb) or
//!                                                       commands (.aof); at most one
//!      file appendonly.aof.1.incr.aof seq 1 type h      history: left from before a rewrite
//!      file appendonly.aof.2.incr.aof seq 2 type i      incrementals, seq strictly increasing
//!    (`#` lines are comments; a name that needs quoting is written as `sdscatrepr` does, and
//!     read with `sdssplitargs`; unknown key/value pairs are ignored, for forward compatibility)
//!
//!  an AOF file's commands: *<argc>\r\n then argc × $<len>\r\n<bytes>\r\n (as Redis reads
//!  them: lines end at \n, and the two bytes after an argument are skipped unread)
//!  annotations between commands: #<text>\r\n (e.g. `#TS:<unix time>` with aof-timestamp-enabled)
//! ```
//! A file may end in the middle of a command (a crash while appending): the reader reports where
//! the last whole command ended, and the caller decides (`aof-load-truncated`). Anything else that
//! is not a command or an annotation is a format error at its offset.

use resp::inline::{split_args, trim_blanks as trim};

/// What a manifest line names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    /// `b`: the base file.
    Base,
    /// `h`: an incremental file of before the last rewrite, to be deleted.
    History,
    /// `i`: an incremental file, replayed after the base in sequence order.
    Incr,
}

/// One file of the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AofFile {
    pub name: Vec<u8>,
    pub seq: i64,
    pub kind: FileType,
}

/// A parsed manifest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<AofFile>,
    pub history: Vec<AofFile>,
    /// In file order, which is sequence order.
    pub incrs: Vec<AofFile>,
}

/// Why a manifest was refused: Redis's texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ManifestError(pub &'static str);

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Longest manifest line Redis reads (`MANIFEST_MAX_LINE`).
const LINE_MAX: usize = 1024;

/// Parses a manifest file's bytes with Redis's rules and error texts.
pub fn parse_manifest(text: &[u8]) -> Result<Manifest, ManifestError> {
    let invalid = ManifestError("Invalid AOF manifest file format");
    if text.is_empty() {
        return Err(ManifestError("Found an empty AOF manifest"));
    }
    let mut manifest = Manifest::default();
    let mut rest = text;
    while !rest.is_empty() {
        let Some(end) = rest.iter().take(LINE_MAX).position(|&b| b == b'\n') else {
            // A comment line is skipped before Redis looks for its end of line.
            if rest[0] == b'#' && rest.len() <= LINE_MAX {
                break;
            }
            return Err(ManifestError(
                "The AOF manifest file contains too long line",
            ));
        };
        let line = &rest[..end];
        rest = &rest[end + 1..];
        if line.first() == Some(&b'#') {
            continue;
        }
        let file = parse_line(line).ok_or(invalid)??;
        add(&mut manifest, file)?;
    }
    Ok(manifest)
}

/// One `file … seq … type …` line: `None` when it is not one, `Some(Err)` for a bad name.
fn parse_line(line: &[u8]) -> Option<Result<AofFile, ManifestError>> {
    let (mut bytes, mut spans) = (Vec::new(), Vec::new());
    split_args(trim(line), &mut bytes, &mut spans).ok()?;
    if spans.len() < 6 || spans.len() % 2 != 0 {
        return None;
    }
    let (mut name, mut seq, mut kind) = (None, 0i64, None);
    for pair in spans.chunks(2) {
        let (key, value) = (&bytes[pair[0].clone()], &bytes[pair[1].clone()]);
        if key.eq_ignore_ascii_case(b"file") {
            if value.contains(&b'/') {
                return Some(Err(ManifestError("File can't be a path, just a filename")));
            }
            name = Some(value.to_vec());
        } else if key.eq_ignore_ascii_case(b"seq") {
            seq = atoll(value);
        } else if key.eq_ignore_ascii_case(b"type") {
            kind = value.first().copied();
        }
    }
    let (name, kind) = (name.filter(|n| !n.is_empty())?, kind.filter(|&k| k != 0)?);
    if seq == 0 {
        return None;
    }
    let kind = match kind {
        b'b' => FileType::Base,
        b'h' => FileType::History,
        b'i' => FileType::Incr,
        _ => return Some(Err(ManifestError("Unknown AOF file type"))),
    };
    Some(Ok(AofFile { name, seq, kind }))
}

/// Adds a parsed line to the manifest, with Redis's checks.
fn add(manifest: &mut Manifest, file: AofFile) -> Result<(), ManifestError> {
    match file.kind {
        FileType::Base if manifest.base.is_some() => {
            Err(ManifestError("Found duplicate base file information"))
        }
        FileType::Base => {
            manifest.base = Some(file);
            Ok(())
        }
        FileType::History => {
            manifest.history.push(file);
            Ok(())
        }
        FileType::Incr => {
            if manifest
                .incrs
                .last()
                .is_some_and(|last| file.seq <= last.seq)
                || file.seq <= 0
            {
                return Err(ManifestError("Found a non-monotonic sequence number"));
            }
            manifest.incrs.push(file);
            Ok(())
        }
    }
}

impl Manifest {
    /// The manifest's text as Redis writes it (`getAofManifestAsString`): the base, then the
    /// history files, then the incremental files, one `file <name> seq <n> type <t>` line each,
    /// a name that needs it quoted as `sdscatrepr` quotes it.
    pub fn to_text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let files = self.base.iter().chain(&self.history).chain(&self.incrs);
        for file in files {
            out.extend_from_slice(b"file ");
            if resp::inline::needs_repr(&file.name) {
                out.extend_from_slice(resp::inline::repr(&file.name).as_bytes());
            } else {
                out.extend_from_slice(&file.name);
            }
            let kind = match file.kind {
                FileType::Base => 'b',
                FileType::History => 'h',
                FileType::Incr => 'i',
            };
            out.extend_from_slice(format!(" seq {} type {kind}\n", file.seq).as_bytes());
        }
        out
    }

    /// The sequence number the next base file takes (Redis's `curr_base_file_seq + 1`).
    pub fn next_base_seq(&self) -> i64 {
        self.base.as_ref().map_or(0, |b| b.seq) + 1
    }

    /// The sequence number the next incremental file takes.
    pub fn next_incr_seq(&self) -> i64 {
        self.incrs.last().map_or(0, |f| f.seq) + 1
    }

    /// Makes `name` the base (sequence `next_base_seq`), the old base history, as Redis's
    /// `getNewBaseFileNameAndMarkPreAsHistory` does.
    pub fn new_base(&mut self, name: Vec<u8>) {
        let seq = self.next_base_seq();
        if let Some(mut old) = self.base.take() {
            old.kind = FileType::History;
            self.history.insert(0, old);
        }
        self.base = Some(AofFile {
            name,
            seq,
            kind: FileType::Base,
        });
    }

    /// The incremental files become history, but the last when `keep_last` (the AOF is on and
    /// writes to it), as Redis's `markRewrittenIncrAofAsHistory`.
    pub fn retire_incrs(&mut self, keep_last: bool) {
        let keep = if keep_last { self.incrs.pop() } else { None };
        for mut file in self.incrs.drain(..).rev() {
            file.kind = FileType::History;
            self.history.insert(0, file);
        }
        self.incrs.extend(keep);
    }
}

/// C's `atoll`: optional blanks and sign, then digits up to the first non-digit (saturating).
fn atoll(text: &[u8]) -> i64 {
    let text = trim(text);
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = digits
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0i64, |n, &d| {
            n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
        });
    if negative { -magnitude } else { magnitude }
}

/// One item of an AOF file's command stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// A command's arguments, borrowed from the file.
    Command(Vec<&'a [u8]>),
    /// An annotation line's text after `#` (e.g. `TS:1700000000`).
    Annotation(&'a [u8]),
}

/// Why a command stream stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// The file ends inside a command: every whole command ends at or before `valid_len`.
    Truncated { valid_len: usize },
    /// Bytes that are no command (Redis's "Bad file format reading the append only file").
    Format { at: usize, what: &'static str },
}

/// The commands of one AOF file (after an RDB preamble, if any), in order.
#[derive(Clone, Debug)]
pub struct Commands<'a> {
    bytes: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Commands<'a> {
    pub fn new(bytes: &'a [u8]) -> Commands<'a> {
        Commands {
            bytes,
            pos: 0,
            failed: false,
        }
    }

    /// Bytes of whole items read so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    fn item(&self, at: usize) -> Result<(Item<'a>, usize), StreamError> {
        let truncated = StreamError::Truncated {
            valid_len: self.pos,
        };
        let format = |what| StreamError::Format { at, what };
        let (first, next) = line(self.bytes, at).ok_or(truncated)?;
        match first.first() {
            Some(b'#') => return Ok((Item::Annotation(&first[1..]), next)),
            Some(b'*') => {}
            _ => return Err(format("a command must start with '*'")),
        }
        let argc = number(&first[1..])
            .filter(|&n| n >= 1)
            .ok_or(format("invalid argument count"))?;
        // Each argument takes at least 5 bytes ("$0\r\n\r\n"): a count the rest of the file
        // cannot hold is cut short, and never reserves more than the bytes justify.
        let mut args = Vec::with_capacity((argc as usize).min((self.bytes.len() - next) / 5 + 1));
        let mut p = next;
        for _ in 0..argc {
            let (header, after) = line(self.bytes, p).ok_or(truncated)?;
            if header.first() != Some(&b'$') {
                return Err(format("an argument must start with '$'"));
            }
            let len = number(&header[1..]).ok_or(format("invalid argument length"))? as usize;
            let end = after
                .checked_add(len)
                .ok_or(format("invalid argument length"))?;
            // Redis discards the two bytes after an argument without looking at them.
            if end.checked_add(2).is_none_or(|e| e > self.bytes.len()) {
                return Err(truncated);
            }
            args.push(&self.bytes[after..end]);
            p = end + 2;
        }
        Ok((Item::Command(args), p))
    }
}

impl<'a> Iterator for Commands<'a> {
    type Item = Result<Item<'a>, StreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos == self.bytes.len() {
            return None;
        }
        match self.item(self.pos) {
            Ok((item, next)) => {
                self.pos = next;
                Some(Ok(item))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// The line at `at` (up to its `\n`, as `fgets` reads it) without its `\r\n` or `\n`, and the
/// position after it; `None` when the file ends first.
fn line(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let rest = bytes.get(at..)?;
    let end = rest.iter().position(|&b| b == b'\n')?;
    let text = &rest[..end];
    Some((text.strip_suffix(b"\r").unwrap_or(text), at + end + 1))
}

/// A non-negative decimal of at most 18 digits (Redis reads counts and lengths with `strtol`
/// and refuses what does not fit).
fn number(text: &[u8]) -> Option<i64> {
    if text.is_empty() || text.len() > 18 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(atoll(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rewrite's manifest steps, written and read back: the new base takes the next
    /// sequence, the old base and every incremental file but the current one become history,
    /// and a name with a space is quoted.
    #[test]
    fn manifest_text_round_trips_through_a_rewrite() {
        let incr = |name: &[u8], seq| AofFile {
            name: name.to_vec(),
            seq,
            kind: FileType::Incr,
        };
        let mut m = Manifest::default();
        m.new_base(b"appendonly.aof.1.base.rdb".to_vec());
        m.incrs.push(incr(b"appendonly.aof.1.incr.aof", 1));
        m.incrs
            .push(incr(b"odd name.2.incr.aof", m.next_incr_seq()));
        m.new_base(b"appendonly.aof.2.base.rdb".to_vec());
        m.retire_incrs(true);
        let text = m.to_text();
        let expected: &[u8] = b"file appendonly.aof.2.base.rdb seq 2 type b\n\
file appendonly.aof.1.incr.aof seq 1 type h\n\
file appendonly.aof.1.base.rdb seq 1 type h\n\
file \"odd name.2.incr.aof\" seq 2 type i\n";
        assert_eq!(
            String::from_utf8_lossy(&text),
            String::from_utf8_lossy(expected)
        );
        assert_eq!(parse_manifest(&text).unwrap(), m);
        assert_eq!((m.next_base_seq(), m.next_incr_seq()), (3, 3));
    }

    #[test]
    fn a_redis_manifest_parses() {
        let text = b"file appendonly.aof.1.base.rdb seq 1 type b\n\
                     file appendonly.aof.1.incr.aof seq 1 type h\n\
                     # a comment\n\
                     file appendonly.aof.2.incr.aof seq 2 type i\n\
                     file \"odd name.aof\" seq 3 type i extra pair\n";
        let m = parse_manifest(text).unwrap();
        assert_eq!(m.base.unwrap().name, b"appendonly.aof.1.base.rdb");
        assert_eq!(m.history.len(), 1);
        let names: Vec<&[u8]> = m.incrs.iter().map(|f| f.name.as_slice()).collect();
        assert_eq!(names, [&b"appendonly.aof.2.incr.aof"[..], b"odd name.aof"]);
    }

    #[test]
    fn bad_manifests_get_redis_errors() {
        let err = |t: &[u8]| parse_manifest(t).unwrap_err().0;
        assert_eq!(err(b""), "Found an empty AOF manifest");
        assert_eq!(err(b"\n"), "Invalid AOF manifest file format");
        assert_eq!(err(b"file a seq 1\n"), "Invalid AOF manifest file format");
        assert_eq!(
            err(b"file a seq 0 type b\n"),
            "Invalid AOF manifest file format"
        );
        assert_eq!(
            err(b"file x/a seq 1 type b\n"),
            "File can't be a path, just a filename"
        );
        assert_eq!(err(b"file a seq 1 type z\n"), "Unknown AOF file type");
        assert_eq!(
            err(b"file a seq 1 type b\nfile b seq 2 type b\n"),
            "Found duplicate base file information"
        );
        assert_eq!(
            err(b"file a seq 2 type i\nfile b seq 2 type i\n"),
            "Found a non-monotonic sequence number"
        );
        let long = [b"file ".as_slice(), &[b'a'; 1100], b" seq 1 type b\n"].concat();
        assert_eq!(err(&long), "The AOF manifest file contains too long line");
        assert_eq!(
            err(b"file a seq 1 type b"),
            "The AOF manifest file contains too long line"
        );
    }

    #[test]
    fn commands_annotations_and_a_cut_tail() {
        let file = b"#TS:1700000000\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n";
        let items: Vec<_> = Commands::new(file).collect::<Result<_, _>>().unwrap();
        assert_eq!(items[0], Item::Annotation(b"TS:1700000000"));
        assert_eq!(items[2], Item::Command(vec![&b"SET"[..], b"k", b""]));
        for cut in 1..file.len() {
            let mut c = Commands::new(&file[..cut]);
            let last = c.by_ref().last().unwrap();
            if let Err(e) = last {
                let StreamError::Truncated { valid_len } = e else {
                    panic!("cut at {cut}: {e:?}");
                };
                assert!(
                    valid_len < cut && [0, 16, 39].contains(&valid_len),
                    "{valid_len}"
                );
            }
        }
        // A length shorter than the argument: as in Redis, the two bytes after it are skipped
        // and what follows is no command.
        let bad: Vec<_> = Commands::new(b"*1\r\n$3\r\nGETX\r\n").collect();
        assert_eq!(bad[0], Ok(Item::Command(vec![&b"GET"[..]])));
        assert!(matches!(bad[1], Err(StreamError::Format { at: 13, .. })));
        let bad = Commands::new(b"SET k v\r\n").last().unwrap();
        assert!(matches!(bad, Err(StreamError::Format { at: 0, .. })));
    }
}
