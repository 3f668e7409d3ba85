//! zset commands (scaffold: the table fills in with the type).

use crate::command::Spec;

pub static COMMANDS: &[Spec] = &[];

// Placeholder until the sorted-set type lands (replaced by the zset module's own).
pub fn pop_for_blocked(
    _ctx: &mut crate::command::Ctx<'_, '_>,
    _key: &[u8],
    _max: bool,
    _count: usize,
) -> Option<Vec<(Vec<u8>, f64)>> {
    None
}
