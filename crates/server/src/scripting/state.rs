//! What every thread shares about scripts: the script cache (SCRIPT LOAD, EVAL), the function
//! libraries (FUNCTION LOAD), `math.random`'s generator, and the one script running now.
//!
//! ```text
//!  cache:     sha1 (40 lowercase hex) → Script { body, flags }     one for the server
//!  libraries: FUNCTION's registry (functions.rs), with a generation each change bumps
//!  flushes:   bumped by SCRIPT FLUSH; a thread whose VM saw an older value rebuilds it, so
//!             the compiled scripts it held are freed too
//!  running:   at most one script runs at a time (it holds every shard), so one record:
//!             started_ms ≠ 0 ⇔ a script runs; busy ⇒ started_ms ≠ 0
//! ```

use super::flags::Flags;
use super::functions::Registry;
use super::rand::Rand48;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// A cached EVAL script.
#[derive(Debug)]
pub struct Script {
    pub body: Vec<u8>,
    pub flags: Flags,
    /// The shebang's length: the code Lua compiles starts there (keeping its newline).
    pub code_at: usize,
}

/// The running script, as other threads see it.
#[derive(Debug, Default)]
pub struct Running {
    /// Monotonic ms (`crate::clock`-independent: `Instant` since server start) when the running
    /// script started; 0 when none runs.
    pub started_ms: AtomicU64,
    /// Past `busy-reply-threshold`: other clients get `-BUSY`.
    pub busy: AtomicBool,
    /// SCRIPT KILL or FUNCTION KILL asked the script to stop.
    pub kill: AtomicBool,
    /// The script ran a write command: it cannot be killed.
    pub wrote: AtomicBool,
    /// It is an EVAL script (SCRIPT KILL), not a function (FUNCTION KILL).
    pub eval: AtomicBool,
    /// The running function's name and the FCALL that called it (FUNCTION STATS); an EVAL
    /// script's sha, with no command kept (FUNCTION STATS refuses while one runs).
    pub name: Mutex<(String, Vec<Vec<u8>>)>,
}

/// Scripting's server-wide state.
#[derive(Debug)]
pub struct Scripting {
    /// By lowercase sha. SHA-1s are not chosen by clients, so a fast hasher will do.
    pub cache: RwLock<HashMap<String, Arc<Script>, foldhash::fast::RandomState>>,
    /// Bytes the cache holds (`used_memory_scripts_eval`).
    pub cache_bytes: AtomicUsize,
    /// SCRIPT FLUSHes so far: a VM built before the last one is rebuilt.
    pub flushes: AtomicU64,
    pub libraries: RwLock<Registry>,
    pub rand: Mutex<Rand48>,
    pub running: Running,
    /// Bytes each thread's EVAL VM uses, summed by INFO (`used_memory_vm_eval`).
    pub vm_bytes: Box<[AtomicUsize]>,
    /// Bytes each thread's function VM uses (`used_memory_vm_functions`).
    pub function_vm_bytes: Box<[AtomicUsize]>,
}

impl Scripting {
    pub fn new(threads: usize) -> Scripting {
        Scripting {
            cache: RwLock::new(HashMap::default()),
            cache_bytes: AtomicUsize::new(0),
            flushes: AtomicU64::new(0),
            libraries: RwLock::new(Registry::default()),
            rand: Mutex::new(Rand48::default()),
            running: Running::default(),
            vm_bytes: (0..threads.max(1)).map(|_| AtomicUsize::new(0)).collect(),
            function_vm_bytes: (0..threads.max(1)).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// The cached script `sha` (any case).
    pub fn cached(&self, sha: &[u8]) -> Option<Arc<Script>> {
        let key = lowercase_sha(sha)?;
        self.cache.read().get(key.as_str()).cloned()
    }

    /// Caches `body` (already checked: its shebang parses) under its SHA-1; returns the sha.
    pub fn add(&self, sha: String, body: &[u8], flags: Flags, code_at: usize) -> Arc<Script> {
        let mut cache = self.cache.write();
        if let Some(found) = cache.get(&sha) {
            return Arc::clone(found);
        }
        let script = Arc::new(Script {
            body: body.to_vec(),
            flags,
            code_at,
        });
        self.cache_bytes
            .fetch_add(body.len() + sha.len() + 64, Ordering::Relaxed);
        cache.insert(sha, Arc::clone(&script));
        script
    }

    /// SCRIPT FLUSH: forgets every cached script; each thread's VM is rebuilt at its next use.
    pub fn flush(&self) {
        self.cache.write().clear();
        self.cache_bytes.store(0, Ordering::Relaxed);
        self.flushes.fetch_add(1, Ordering::Release);
    }

    /// `used_memory_vm_eval`: every thread's EVAL VM.
    pub fn vm_bytes(&self) -> usize {
        self.vm_bytes
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .sum()
    }

    /// INFO memory's scripting fields, in Redis 7.0's order (`genRedisInfoString`): the VMs'
    /// memory as each thread last published it, the script cache's and the libraries' bytes.
    pub fn info_fields(&self) -> String {
        let eval_vm = self.vm_bytes();
        let function_vm: usize = self
            .function_vm_bytes
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .sum();
        let scripts = self.cache_bytes.load(Ordering::Relaxed);
        let cached = self.cache.read().len();
        let registry = self.libraries.read();
        let functions_bytes: usize = registry
            .libraries
            .values()
            .map(|l| {
                let names: usize = l.functions.iter().map(|f| f.name.len() + 64).sum();
                l.name.len() + l.code.len() + names + 64
            })
            .sum();
        let human = crate::commands::memory::human;
        format!(
            "used_memory_lua:{eval_vm}\r\nused_memory_vm_eval:{eval_vm}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{scripts}\r\nnumber_of_cached_scripts:{cached}\r\nnumber_of_functions:{}\r\nnumber_of_libraries:{}\r\nused_memory_vm_functions:{function_vm}\r\nused_memory_vm_total:{}\r\nused_memory_vm_total_human:{}\r\nused_memory_functions:{functions_bytes}\r\nused_memory_scripts:{}\r\nused_memory_scripts_human:{}\r\n",
            human(eval_vm as u64),
            registry.functions.len(),
            registry.libraries.len(),
            eval_vm + function_vm,
            human((eval_vm + function_vm) as u64),
            scripts + functions_bytes,
            human((scripts + functions_bytes) as u64),
        )
    }

    /// Every function library's source, by library name (what a save writes).
    pub fn library_codes(&self) -> Vec<Vec<u8>> {
        let registry = self.libraries.read();
        registry
            .libraries
            .values()
            .map(|library| library.code.clone())
            .collect()
    }

    /// Whether a script is running (it holds every shard).
    pub fn running_now(&self) -> bool {
        self.running.started_ms.load(Ordering::Acquire) != 0
    }

    /// Whether a script has run past `busy-reply-threshold`.
    pub fn busy(&self) -> bool {
        self.running.busy.load(Ordering::Acquire)
    }
}

/// A script's sha as the cache keys it: 40 bytes, lowercased, on the stack (EVALSHA names it in
/// any case). `None` for any other length or a byte that is not ASCII.
#[derive(Clone, Copy, Debug)]
pub struct Sha([u8; 40]);

impl Sha {
    pub fn as_str(&self) -> &str {
        // `lowercase_sha` admits ASCII only.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

pub fn lowercase_sha(sha: &[u8]) -> Option<Sha> {
    let bytes: [u8; 40] = sha.try_into().ok()?;
    bytes
        .is_ascii()
        .then(|| Sha(bytes.map(|b| b.to_ascii_lowercase())))
}

/// The lowercase hex SHA-1 of `data` (Redis's `sha1hex`).
pub fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_is_lowercase_hex() {
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    }

    #[test]
    fn cache_finds_any_case_and_flush_empties_it() {
        let s = Scripting::new(1);
        let sha = sha1_hex(b"return 1");
        s.add(sha.clone(), b"return 1", Flags::default(), 0);
        assert!(s.cached(sha.to_uppercase().as_bytes()).is_some());
        assert!(s.cached(b"abc").is_none());
        s.flush();
        assert!(s.cached(sha.as_bytes()).is_none());
        assert_eq!(s.flushes.load(Ordering::Relaxed), 1);
    }
}
