//! The files of Redis 7's multi-part AOF (`aof.c`'s manifest functions): names, the manifest
//! written atomically, the incremental file opened for appending, history deleted.
//!
//! ```text
//!  <dir>/<appenddirname>/
//!    <appendfilename>.manifest              written as temp-<appendfilename>.manifest, fsync,
//!                                           rename, fsync of the directory
//!    <appendfilename>.<seq>.base.rdb|.aof   the base: an RDB (aof-use-rdb-preamble yes) or
//!                                           commands
//!    <appendfilename>.<seq>.incr.aof        incrementals: the last is appended to
//!    temp-<appendfilename>.incr             appended to while `appendonly` waits for its first
//!                                           rewrite (CONFIG SET appendonly yes)
//! ```
//! A crash between any two steps leaves a manifest that names only whole files: a new file is
//! created before the manifest names it, and a file is deleted only after the manifest stopped
//! naming it.

use persist::aof::{AofFile, FileType, Manifest, parse_manifest};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;

/// Where the AOF lives and what its manifest says.
#[derive(Debug, Default)]
pub struct Layout {
    /// `appenddirname`, relative to the working directory (`dir`).
    pub dir: PathBuf,
    /// `appendfilename`: the stem of every file's name.
    pub filename: String,
    pub manifest: Manifest,
    /// AOF is on and waits for the rewrite that writes its first base (`AOF_WAIT_REWRITE`).
    pub waiting: bool,
}

impl Layout {
    pub fn new(config: &crate::Config) -> Layout {
        Layout {
            dir: PathBuf::from(&config.appenddirname),
            filename: config.appendfilename.clone(),
            manifest: Manifest::default(),
            waiting: false,
        }
    }

    pub fn path(&self, name: &[u8]) -> PathBuf {
        self.dir.join(String::from_utf8_lossy(name).as_ref())
    }

    fn manifest_name(&self) -> String {
        format!("{}.manifest", self.filename)
    }

    /// The temporary incremental file of a wait for the first rewrite.
    pub fn temp_incr_name(&self) -> String {
        format!("temp-{}.incr", self.filename)
    }

    /// Reads the manifest at startup, if the directory and the manifest exist (Redis's
    /// `aofLoadManifestFromDisk`): a bad one is a startup error with Redis's text.
    pub fn read_manifest(&mut self) -> Result<(), String> {
        let path = self.dir.join(self.manifest_name());
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(format!(
                    "Can't open the AOF manifest {}: {e}",
                    path.display()
                ));
            }
        };
        self.manifest = parse_manifest(&text).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Creates the directory if it is missing.
    pub fn ensure_dir(&self) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            format!(
                "Can't open or create append-only dir {}: {e}",
                self.dir.display()
            )
        })
    }

    /// Writes `manifest` atomically (Redis's `writeAofManifestFile`).
    pub fn persist(&self, manifest: &Manifest) -> Result<(), String> {
        let temp = self.dir.join(format!("temp-{}", self.manifest_name()));
        let path = self.dir.join(self.manifest_name());
        let failed = |what: &str, e: std::io::Error| format!("{what} {}: {e}", temp.display());
        let mut file =
            File::create(&temp).map_err(|e| failed("Can't open the AOF manifest file", e))?;
        file.write_all(&manifest.to_text())
            .map_err(|e| failed("Error trying to write the temporary AOF manifest file", e))?;
        file.sync_all()
            .map_err(|e| failed("Fail to fsync the temp AOF file", e))?;
        std::fs::rename(&temp, &path)
            .map_err(|e| failed("Error trying to rename the temporary AOF manifest file", e))?;
        sync_dir(&self.dir)
    }

    /// The name of the next base file, for a base in RDB form or not.
    pub fn next_base_name(&self, rdb: bool) -> Vec<u8> {
        let suffix = if rdb { "rdb" } else { "aof" };
        format!(
            "{}.{}.base.{suffix}",
            self.filename,
            self.manifest.next_base_seq()
        )
        .into_bytes()
    }

    /// A new incremental file, added to a copy of `manifest`: (its entry, the new manifest).
    pub fn next_incr(&self, manifest: &Manifest) -> (AofFile, Manifest) {
        let seq = manifest.next_incr_seq();
        let file = AofFile {
            name: format!("{}.{seq}.incr.aof", self.filename).into_bytes(),
            seq,
            kind: FileType::Incr,
        };
        let mut manifest = manifest.clone();
        manifest.incrs.push(file.clone());
        (file, manifest)
    }

    /// Deletes the history files and writes the manifest without them (`aofDelHistoryFiles`).
    pub fn delete_history(&mut self) -> Result<(), String> {
        if self.manifest.history.is_empty() {
            return Ok(());
        }
        let mut manifest = self.manifest.clone();
        let history = std::mem::take(&mut manifest.history);
        self.persist(&manifest)?;
        self.manifest = manifest;
        for file in history {
            crate::log::notice(&format!(
                "Removing the history file {} in the background",
                String::from_utf8_lossy(&file.name)
            ));
            let _ = std::fs::remove_file(self.path(&file.name));
        }
        Ok(())
    }

    /// Bytes in the base and incremental files (`aof_current_size` at startup).
    pub fn files_size(&self) -> u64 {
        let size = |f: &AofFile| std::fs::metadata(self.path(&f.name)).map_or(0, |m| m.len());
        self.manifest.base.iter().map(size).sum::<u64>()
            + self.manifest.incrs.iter().map(size).sum::<u64>()
    }

    /// Bytes in the base file.
    pub fn base_size(&self) -> u64 {
        self.manifest
            .base
            .as_ref()
            .and_then(|b| std::fs::metadata(self.path(&b.name)).ok())
            .map_or(0, |m| m.len())
    }
}

/// Opens `path` for appending, creating it.
pub fn open_append(path: &std::path::Path) -> Result<File, String> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| format!("Can't open the append-only file {}: {e}", path.display()))
}

/// Creates `path` empty for appending (`O_TRUNC`).
pub fn create_append(path: &std::path::Path) -> Result<File, String> {
    let file = File::create(path)
        .map_err(|e| format!("Can't open the append-only file {}: {e}", path.display()))?;
    drop(file);
    open_append(path)
}

/// fsync of a directory, so a rename or a new file in it survives a crash.
pub fn sync_dir(dir: &std::path::Path) -> Result<(), String> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("Fail to fsync AOF directory {}: {e}", dir.display()))
}
