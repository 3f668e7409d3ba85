//! The shape tree: every distinct sequence of field names, stored once.
//!
//! ```text
//!  Shape (one per node; `shapes[id]`)
//!   parent u32 │ count u16 │ refs u32 │ gen u32 │ name Box<[u8]> │ name_hash u64 │ transitions
//!   transitions: None │ One(child) │ Many(Vec<child>)   (≤ transitions_max children)
//!   table: lazily built name → owner map, only for shapes of more than WALK_MAX fields
//! ```
//! A shape of `count` fields is the child of the shape of its first `count - 1` fields, reached
//! by adding its `name`; the root has no fields. Field `i` of a shape is the `name` of its ancestor
//! with `count == i + 1` (the "owner" of that field).
//!
//! Field lookup: the (shape, field) cache first — a direct-mapped table of `CACHE_SLOTS` entries
//! holding (shape id, generation, field hash, owner), verified by comparing the owner's name, the
//! analogue of the inline caches that made Ruby's shapes fast. On a miss, shapes of up to
//! `WALK_MAX` fields walk their parent chain (hash compared before bytes); larger ones build a
//! table once.
//!
//! Reference counts: `refs = records at this shape + live children`. When it reaches zero the
//! shape leaves its parent's transitions, its id goes on a free list (generation bumped so stale
//! cache entries miss), and the parent's count drops in turn: after every record is gone the tree
//! is back to its root.
//!
//! Fallback ("too complex", after Ruby): a new transition is refused when the shape already has
//! `transitions_max` children (field names that are ids, timestamps, user input), when the shape
//! would exceed `fields_max` fields, when a name exceeds `name_bytes_max`, or when the tree holds
//! `shapes_max` shapes. The caller then stores that hash as a plain map; the tree stays bounded:
//! at most `shapes_max` shapes of at most `name_bytes_max` name bytes each.
//!
//! Invariants: `live == shapes with refs > 0 or id == ROOT`; a live non-root shape is in its
//! parent's transitions exactly once; `count(child) == count(parent) + 1`.

use foldhash::fast::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// Index of a shape in the tree.
pub type ShapeId = u32;
/// The shape with no fields.
pub const ROOT: ShapeId = 0;

/// Shapes of at most this many fields answer lookups by walking their parent chain.
const WALK_MAX: u16 = 8;
const CACHE_SLOTS: usize = 1024;

/// The hash cannot stay shaped: store it as a plain map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooComplex;

impl std::fmt::Display for TooComplex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names do not follow a shape")
    }
}

impl std::error::Error for TooComplex {}

/// Bounds that keep the tree small whatever the input.
#[derive(Clone, Debug)]
pub struct ShapeLimits {
    pub transitions_max: usize,
    pub fields_max: usize,
    pub shapes_max: usize,
    pub name_bytes_max: usize,
}

impl Default for ShapeLimits {
    fn default() -> ShapeLimits {
        ShapeLimits {
            transitions_max: 16,
            fields_max: 64,
            shapes_max: 1 << 16,
            name_bytes_max: 64,
        }
    }
}

/// Counters for INFO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShapeStats {
    pub shapes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub too_complex: u64,
    pub reclaimed: u64,
}

#[derive(Debug)]
enum Transitions {
    None,
    One(ShapeId),
    Many(Vec<ShapeId>),
}

#[derive(Debug)]
struct Shape {
    parent: ShapeId,
    count: u16,
    refs: u32,
    generation: u32,
    name_hash: u64,
    name: Box<[u8]>,
    transitions: Transitions,
    /// Field name → owner (the field's index is the owner's `count - 1`). Boxed so that the
    /// shapes without one (all but the few with more than WALK_MAX fields) pay 8 bytes, not 48.
    #[allow(clippy::box_collection)]
    table: Option<Box<HashMap<Box<[u8]>, ShapeId>>>,
}

#[derive(Clone, Copy, Debug, Default)]
struct CacheEntry {
    shape: ShapeId,
    generation: u32,
    owner: ShapeId,
    hash: u64,
}

/// The shape tree. One per shard, like the heap.
#[derive(Debug)]
pub struct ShapeTree {
    shapes: Vec<Shape>,
    free_ids: Vec<ShapeId>,
    live: usize,
    limits: ShapeLimits,
    hasher: RandomState,
    cache: Box<[CacheEntry]>,
    stats: ShapeStats,
}

impl Default for ShapeTree {
    fn default() -> ShapeTree {
        ShapeTree::new(ShapeLimits::default())
    }
}

impl ShapeTree {
    pub fn new(limits: ShapeLimits) -> ShapeTree {
        let root = Shape {
            parent: ROOT,
            count: 0,
            refs: 0,
            generation: 0,
            name_hash: 0,
            name: Box::default(),
            transitions: Transitions::None,
            table: None,
        };
        ShapeTree {
            shapes: vec![root],
            free_ids: Vec::new(),
            live: 1,
            limits,
            hasher: RandomState::default(),
            // Generation u32::MAX never matches a live shape, so the empty cache misses.
            cache: vec![
                CacheEntry {
                    generation: u32::MAX,
                    ..CacheEntry::default()
                };
                CACHE_SLOTS
            ]
            .into_boxed_slice(),
            stats: ShapeStats::default(),
        }
    }

    /// Live shapes, the root included.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 1
    }

    pub fn stats(&self) -> ShapeStats {
        ShapeStats {
            shapes: self.live as u64,
            ..self.stats
        }
    }

    /// Checks every live shape's hold count: one per record that `records` says holds it, plus
    /// one per child shape (a child keeps its parent), so a hold leaked or released twice by the
    /// caller shows here. For the store's validator.
    pub fn check_holds(&self, records: impl Fn(ShapeId) -> u32) -> Result<(), String> {
        let free: std::collections::HashSet<ShapeId> = self.free_ids.iter().copied().collect();
        for (id, shape) in self.shapes.iter().enumerate().skip(1) {
            let id = id as ShapeId;
            if free.contains(&id) {
                continue;
            }
            let children = match &shape.transitions {
                Transitions::None => 0,
                Transitions::One(_) => 1,
                Transitions::Many(c) => c.len() as u32,
            };
            let want = records(id) + children;
            if shape.refs != want {
                return Err(format!(
                    "shape {id}: {} holds, {} records and {children} children",
                    shape.refs,
                    records(id)
                ));
            }
        }
        Ok(())
    }

    /// Number of fields of `shape`.
    #[inline]
    pub fn field_count(&self, shape: ShapeId) -> usize {
        self.shapes[shape as usize].count as usize
    }

    /// Field names of `shape`, in order.
    pub fn fields(&self, shape: ShapeId) -> Vec<&[u8]> {
        let mut names = Vec::with_capacity(self.field_count(shape));
        let mut id = shape;
        while id != ROOT {
            let s = &self.shapes[id as usize];
            names.push(&*s.name);
            id = s.parent;
        }
        names.reverse();
        names
    }

    /// Index of `field` in `shape`, if it has that field.
    #[inline]
    pub fn field_index(&mut self, shape: ShapeId, field: &[u8]) -> Option<usize> {
        let hash = self.hasher.hash_one(field);
        let slot =
            (hash ^ u64::from(shape).wrapping_mul(0x9E37_79B9_7F4A_7C15)) as usize % CACHE_SLOTS;
        let entry = self.cache[slot];
        let generation = self.shapes[shape as usize].generation;
        if entry.shape == shape
            && entry.generation == generation
            && entry.hash == hash
            && *self.shapes[entry.owner as usize].name == *field
        {
            self.stats.cache_hits += 1;
            return Some(self.shapes[entry.owner as usize].count as usize - 1);
        }
        self.stats.cache_misses += 1;
        let owner = self.find_owner(shape, field, hash)?;
        self.cache[slot] = CacheEntry {
            shape,
            generation,
            owner,
            hash,
        };
        Some(self.shapes[owner as usize].count as usize - 1)
    }

    /// The ancestor of `shape` (or `shape` itself) that introduced `field`.
    fn find_owner(&mut self, shape: ShapeId, field: &[u8], hash: u64) -> Option<ShapeId> {
        let count = self.shapes[shape as usize].count;
        if count <= WALK_MAX {
            let mut id = shape;
            while id != ROOT {
                let s = &self.shapes[id as usize];
                if s.name_hash == hash && *s.name == *field {
                    return Some(id);
                }
                id = s.parent;
            }
            return None;
        }
        if self.shapes[shape as usize].table.is_none() {
            let mut table = HashMap::with_capacity(count as usize);
            let mut id = shape;
            while id != ROOT {
                let s = &self.shapes[id as usize];
                table.insert(s.name.clone(), id);
                id = s.parent;
            }
            self.shapes[shape as usize].table = Some(Box::new(table));
        }
        let table = self.shapes[shape as usize].table.as_ref()?;
        table.get(field).copied()
    }

    /// The child of `shape` for `field`, created if allowed. The child is not retained.
    fn child(&mut self, shape: ShapeId, field: &[u8]) -> Result<ShapeId, TooComplex> {
        let hash = self.hasher.hash_one(field);
        let found = match &self.shapes[shape as usize].transitions {
            Transitions::None => None,
            Transitions::One(child) => Some(std::slice::from_ref(child)),
            Transitions::Many(children) => Some(children.as_slice()),
        }
        .and_then(|children| {
            children.iter().copied().find(|&c| {
                let s = &self.shapes[c as usize];
                s.name_hash == hash && *s.name == *field
            })
        });
        if let Some(child) = found {
            return Ok(child);
        }
        let parent = &self.shapes[shape as usize];
        let transitions = match &parent.transitions {
            Transitions::None => 0,
            Transitions::One(_) => 1,
            Transitions::Many(children) => children.len(),
        };
        if transitions >= self.limits.transitions_max
            || parent.count as usize >= self.limits.fields_max
            || field.len() > self.limits.name_bytes_max
            || self.live >= self.limits.shapes_max
        {
            self.stats.too_complex += 1;
            return Err(TooComplex);
        }
        let count = parent.count + 1;
        let shape_new = Shape {
            parent: shape,
            count,
            refs: 0,
            generation: 0,
            name_hash: hash,
            name: field.into(),
            transitions: Transitions::None,
            table: None,
        };
        let id = if let Some(id) = self.free_ids.pop() {
            let generation = self.shapes[id as usize].generation.wrapping_add(1) % u32::MAX;
            self.shapes[id as usize] = Shape {
                generation,
                ..shape_new
            };
            id
        } else {
            self.shapes.push(shape_new);
            (self.shapes.len() - 1) as ShapeId
        };
        self.live += 1;
        let parent = &mut self.shapes[shape as usize];
        parent.refs += 1;
        parent.transitions = match std::mem::replace(&mut parent.transitions, Transitions::None) {
            Transitions::None => Transitions::One(id),
            Transitions::One(first) => Transitions::Many(vec![first, id]),
            Transitions::Many(mut children) => {
                children.push(id);
                Transitions::Many(children)
            }
        };
        Ok(id)
    }

    /// Moves one record from `shape` to its child for `field` (retaining the child, releasing
    /// `shape`).
    pub fn add_field(&mut self, shape: ShapeId, field: &[u8]) -> Result<ShapeId, TooComplex> {
        let child = self.child(shape, field)?;
        self.shapes[child as usize].refs += 1;
        self.release(shape);
        Ok(child)
    }

    /// The shape with exactly `fields`, in this order, found or created, and retained once.
    pub fn shape_of<'f>(
        &mut self,
        fields: impl IntoIterator<Item = &'f [u8]>,
    ) -> Result<ShapeId, TooComplex> {
        let mut shape = ROOT;
        for field in fields {
            match self.child(shape, field) {
                Ok(child) => shape = child,
                Err(e) => {
                    self.prune(shape);
                    return Err(e);
                }
            }
        }
        self.retain(shape);
        Ok(shape)
    }

    /// One more record holds `shape`.
    pub fn retain(&mut self, shape: ShapeId) {
        if shape != ROOT {
            self.shapes[shape as usize].refs += 1;
        }
    }

    /// One record fewer holds `shape`; shapes nothing holds any more are reclaimed.
    pub fn release(&mut self, shape: ShapeId) {
        if shape == ROOT {
            return;
        }
        let s = &mut self.shapes[shape as usize];
        debug_assert!(s.refs > 0, "release of an unheld shape");
        s.refs -= 1;
        self.prune(shape);
    }

    /// Reclaims `shape` and then its ancestors while nothing holds them.
    fn prune(&mut self, mut shape: ShapeId) {
        // Bounded by the depth of the tree (≤ fields_max).
        while shape != ROOT && self.shapes[shape as usize].refs == 0 {
            let parent = self.shapes[shape as usize].parent;
            let p = &mut self.shapes[parent as usize];
            p.transitions = match std::mem::replace(&mut p.transitions, Transitions::None) {
                Transitions::One(_) | Transitions::None => Transitions::None,
                Transitions::Many(mut children) => {
                    children.retain(|&c| c != shape);
                    if children.len() == 1 {
                        Transitions::One(children[0])
                    } else {
                        Transitions::Many(children)
                    }
                }
            };
            p.refs -= 1;
            let s = &mut self.shapes[shape as usize];
            s.name = Box::default();
            s.table = None;
            s.transitions = Transitions::None;
            s.generation = s.generation.wrapping_add(1) % u32::MAX;
            self.free_ids.push(shape);
            self.live -= 1;
            self.stats.reclaimed += 1;
            shape = parent;
        }
    }

    /// Heap bytes the tree itself uses (shape nodes, names, transition lists, tables, cache).
    pub fn memory_bytes(&self) -> usize {
        let nodes = self.shapes.capacity() * std::mem::size_of::<Shape>();
        let extra: usize = self
            .shapes
            .iter()
            .map(|s| {
                let many = match &s.transitions {
                    Transitions::Many(children) => children.capacity() * 4,
                    _ => 0,
                };
                let table = s.table.as_ref().map_or(0, |t| {
                    t.capacity() * (std::mem::size_of::<(Box<[u8]>, ShapeId)>() + 1)
                        + t.keys().map(|k| k.len()).sum::<usize>()
                });
                s.name.len() + many + table
            })
            .sum();
        nodes + extra + self.free_ids.capacity() * 4 + self.cache.len() * 24
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_fields_in_same_order_share_a_shape() {
        let mut tree = ShapeTree::default();
        let a = tree.shape_of([&b"name"[..], b"email", b"age"]).unwrap();
        let b = tree.shape_of([&b"name"[..], b"email", b"age"]).unwrap();
        let c = tree.shape_of([&b"email"[..], b"name", b"age"]).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(tree.fields(a), vec![&b"name"[..], b"email", b"age"]);
        assert_eq!(tree.len(), 1 + 3 + 3);
    }

    #[test]
    fn field_index_walks_tables_and_caches() {
        let mut tree = ShapeTree::default();
        let names: Vec<Vec<u8>> = (0..40).map(|i| format!("field{i}").into_bytes()).collect();
        let shape = tree.shape_of(names.iter().map(Vec::as_slice)).unwrap();
        for round in 0..2 {
            for (i, name) in names.iter().enumerate() {
                assert_eq!(tree.field_index(shape, name), Some(i), "round {round}");
            }
            assert_eq!(tree.field_index(shape, b"missing"), None);
        }
        assert!(tree.stats().cache_hits >= 30, "{:?}", tree.stats());
        let small = tree.shape_of([&b"a"[..], b"b"]).unwrap();
        assert_eq!(tree.field_index(small, b"b"), Some(1));
        assert_eq!(tree.field_index(small, b"field0"), None);
    }

    #[test]
    fn reclaim_returns_to_root_and_reuses_ids_safely() {
        let mut tree = ShapeTree::default();
        let a = tree.shape_of([&b"x"[..], b"y"]).unwrap();
        assert_eq!(tree.field_index(a, b"y"), Some(1));
        tree.release(a);
        assert_eq!(tree.len(), 1);
        // The freed ids come back with new generations: the cached (a, "y") entry must miss.
        let b = tree.shape_of([&b"p"[..], b"q"]).unwrap();
        assert_eq!(tree.field_index(b, b"y"), None);
        assert_eq!(tree.field_index(b, b"q"), Some(1));
        tree.release(b);
        assert!(tree.is_empty());
    }

    #[test]
    fn too_many_transitions_fall_back_and_bound_the_tree() {
        let mut tree = ShapeTree::default();
        let mut shaped = Vec::new();
        let mut refused = 0;
        for i in 0..10_000 {
            let field = format!("id:{i}").into_bytes();
            match tree.shape_of([&b"kind"[..], &field]) {
                Ok(s) => shaped.push(s),
                Err(TooComplex) => refused += 1,
            }
        }
        assert_eq!(shaped.len(), 16);
        assert_eq!(refused, 10_000 - 16);
        assert_eq!(tree.len(), 1 + 1 + 16);
        for s in shaped {
            tree.release(s);
        }
        assert!(tree.is_empty());
    }

    #[test]
    fn limits_on_fields_names_and_shapes() {
        let mut tree = ShapeTree::new(ShapeLimits {
            fields_max: 3,
            shapes_max: 5,
            name_bytes_max: 4,
            ..ShapeLimits::default()
        });
        assert!(tree.shape_of([&b"a"[..], b"b", b"c"]).is_ok());
        assert_eq!(
            tree.shape_of([&b"a"[..], b"b", b"c", b"d"]),
            Err(TooComplex)
        );
        assert_eq!(tree.shape_of([&b"long-name"[..]]), Err(TooComplex));
        assert!(tree.shape_of([&b"z"[..]]).is_ok());
        assert_eq!(
            tree.shape_of([&b"y"[..]]),
            Err(TooComplex),
            "shapes_max reached"
        );
        assert_eq!(tree.len(), 5);
    }
}
