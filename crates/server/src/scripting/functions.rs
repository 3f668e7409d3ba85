//! FUNCTION libraries (Redis's `functions.c`): the registry every thread shares.
//!
//! ```text
//!  Registry { libraries: name → Library { code, functions }, functions: name → library,
//!             generation }       a function name is unique across libraries
//!  each change bumps `generation`; a thread whose function VM loaded an older generation
//!  reloads every library's code into a fresh VM before its next FCALL
//! ```

use std::collections::BTreeMap;

/// One registered function.
#[derive(Clone, Debug)]
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<Vec<u8>>,
    /// `flags::NAMES` bits.
    pub flags: u32,
}

/// One library: its whole code (shebang included) and its functions.
#[derive(Clone, Debug)]
pub struct Library {
    pub name: String,
    pub code: Vec<u8>,
    pub functions: Vec<FunctionInfo>,
}

/// The loaded libraries.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    pub libraries: BTreeMap<String, Library>,
    /// Function name → library name.
    pub functions: BTreeMap<String, String>,
    pub generation: u64,
}
