//! zset commands (scaffold: the table fills in with the type).

use crate::command::Spec;

pub static COMMANDS: &[Spec] = &[];
