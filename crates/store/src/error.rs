//! The store's one error type: every fallible store operation returns it, and the server turns it
//! into a reply with `StoreError::reply_text`.

use maps::MapError;

/// Why a store operation failed. A failed write leaves the keyspace as it was before the call,
/// except where an operation's doc says what partial effect remains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The key holds a value of another type.
    WrongType,
    /// The heap (or the OS behind it) could not provide memory.
    OutOfMemory,
    /// A page of a keyspace or collection map has no room for the entry at the map's deepest
    /// split: only a flood of keys whose hashes collide gets here.
    Full,
}

impl StoreError {
    /// The Redis-style error reply for this error.
    pub fn reply_text(self) -> &'static str {
        match self {
            StoreError::WrongType => {
                "WRONGTYPE Operation against a key holding the wrong kind of value"
            }
            StoreError::OutOfMemory => "OOM command not allowed when used memory > 'maxmemory'.",
            StoreError::Full => {
                "ERR densekv cannot place this key: too many keys with colliding hashes in one bucket"
            }
        }
    }
}

impl From<MapError> for StoreError {
    fn from(e: MapError) -> StoreError {
        match e {
            MapError::OutOfMemory => StoreError::OutOfMemory,
            MapError::Full => StoreError::Full,
        }
    }
}

impl From<heap::HeapError> for StoreError {
    fn from(_: heap::HeapError) -> StoreError {
        StoreError::OutOfMemory
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.reply_text())
    }
}

impl std::error::Error for StoreError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_errors_keep_their_cause() {
        assert_eq!(
            StoreError::from(MapError::OutOfMemory),
            StoreError::OutOfMemory
        );
        assert_eq!(StoreError::from(MapError::Full), StoreError::Full);
        assert!(StoreError::Full.reply_text().starts_with("ERR "));
        assert!(StoreError::WrongType.reply_text().starts_with("WRONGTYPE "));
    }
}
