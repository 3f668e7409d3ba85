//! List values (scaffold: the encodings land with the list type).

use crate::shard::{Shard, StoreError, Ttl};
use heap::Heap;
#[allow(unused_imports)]
use shape::ShapeTree;

/// The boxed encodings of a list.
#[derive(Debug)]
pub enum ListObj {}

impl ListObj {
    pub fn destroy(self, _heap: &mut Heap) {
        match self {}
    }

    pub fn memory_bytes(&self) -> usize {
        match *self {}
    }

    pub fn encoding_name(&self) -> &'static str {
        match *self {}
    }

    pub fn export(&self, _heap: &Heap) -> Vec<Vec<u8>> {
        match *self {}
    }
}

pub fn import(
    _shard: &mut Shard,
    _db: usize,
    _key: &[u8],
    _value: Vec<Vec<u8>>,
    _ttl: Ttl,
    _now_ms: u64,
) -> Result<(), StoreError> {
    Ok(())
}
