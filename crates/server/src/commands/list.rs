//! list commands (scaffold: the table fills in with the type).

use crate::command::Spec;

pub static COMMANDS: &[Spec] = &[];

// Placeholders until the list type lands (replaced by the list module's own).
pub fn pop_for_blocked(
    _ctx: &mut crate::command::Ctx<'_, '_>,
    _key: &[u8],
    _left: bool,
    _count: usize,
) -> Option<Vec<Vec<u8>>> {
    None
}

pub fn move_for_blocked(
    _ctx: &mut crate::command::Ctx<'_, '_>,
    _src: &[u8],
    _dst: &[u8],
    _from_left: bool,
    _to_left: bool,
) -> Result<Option<Vec<u8>>, ()> {
    Ok(None)
}
