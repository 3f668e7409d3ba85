//! What a keyspace entry holds: the meta tag of its payload, the encoding behind it, and the type
//! a client sees (TYPE). This file is the one table of them; every other file asks it.
//!
//! ```text
//!  meta byte (stored by the map, owned by the shard):  epoch:1 │ access level:2 │ has_ttl:1 │ tag:4
//!                                    (epoch: which side of a running snapshot, `snapshot.rs`)
//!
//!  tag  payload in the entry                      encoding                  type
//!   0   string bytes, ≤ 44                        StrEmbstr   "embstr"      string
//!   1   string bytes                              StrRaw      "raw"         string
//!   2   zigzag LEB128 varint of an i64            StrInt      "int"         string
//!   3   shape id + values (crate `shape`)         HashRecord  "listpack"    hash
//!   4   sorted 2/4/8-byte integers (set_inline)   SetIntset   "intset"      set
//!   5   hinted members ≤ 64 B (set_inline)        SetSmall    "hashtable"   set
//!   6   (score, member) entries (zset_packed)     ZSetPacked  "listpack"    zset
//!   7   count, level, entries (list_packed)       ListPacked  "quicklist"   list
//!  8–14 free: room for seven more inline encodings
//!  15   handle: 8-byte address of a Box<Object>   the object's own: 9 today, list, hash×4,
//!                                                 set×3, zset index; an `Object` variant and
//!                                                 an `Encoding` value per new kind
//! ```
//! The four meta bits name inline encodings only; every boxed encoding shares tag 15 and is told
//! apart by its object, one pointer away, so boxed kinds (streams, and whatever a later encoding
//! needs) are not bounded by the meta byte. `Encoding` is a byte with room for
//! `ENCODING_SLOTS` = 32 kinds, which is what the per-database counts (INFO's
//! `densekv_keys_<name>`) are sized by.

/// The meta tags (the low 4 bits of an entry's meta byte).
pub(crate) mod tag {
    pub const STR_EMBSTR: u8 = 0;
    pub const STR_RAW: u8 = 1;
    pub const STR_INT: u8 = 2;
    pub const HASH_RECORD: u8 = 3;
    pub const SET_INTSET: u8 = 4;
    pub const SET_SMALL: u8 = 5;
    pub const ZSET_PACKED: u8 = 6;
    pub const LIST_PACKED: u8 = 7;
    /// The payload is a handle that owns a boxed `Object`.
    pub const BOXED: u8 = 15;
}

/// Four bits of meta hold every tag.
const _: () = assert!(tag::BOXED < 16 && tag::LIST_PACKED < tag::BOXED);

/// Longest string kept as `embstr` (Redis's `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`).
pub const EMBSTR_MAX_BYTES: usize = 44;

/// How many encodings the per-database counts have room for.
pub const ENCODING_SLOTS: usize = 32;

/// The type of a value, as TYPE reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    String,
    Hash,
    List,
    Set,
    ZSet,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::ZSet => "zset",
        }
    }
}

/// Every encoding densekv stores a value in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Encoding {
    StrEmbstr,
    StrRaw,
    StrInt,
    HashRecord,
    HashSmall,
    HashFlat,
    HashInts,
    HashPages,
    List,
    SetIntset,
    SetSmall,
    SetFlat,
    SetInts,
    SetPages,
    ZSetPacked,
    ZSetIndex,
    ListPacked,
}

impl Encoding {
    /// Every encoding, in the order INFO lists their counts.
    pub const ALL: [Encoding; 17] = [
        Encoding::StrEmbstr,
        Encoding::StrRaw,
        Encoding::StrInt,
        Encoding::HashRecord,
        Encoding::HashSmall,
        Encoding::HashPages,
        Encoding::HashInts,
        Encoding::List,
        Encoding::SetIntset,
        Encoding::SetSmall,
        Encoding::SetPages,
        Encoding::SetInts,
        Encoding::ZSetPacked,
        Encoding::ZSetIndex,
        Encoding::HashFlat,
        Encoding::SetFlat,
        Encoding::ListPacked,
    ];

    /// The encoding of an inline payload with meta tag `t` (not `tag::BOXED`).
    #[inline]
    pub(crate) fn of_inline(t: u8) -> Encoding {
        match t {
            tag::STR_EMBSTR => Encoding::StrEmbstr,
            tag::STR_RAW => Encoding::StrRaw,
            tag::STR_INT => Encoding::StrInt,
            tag::HASH_RECORD => Encoding::HashRecord,
            tag::SET_INTSET => Encoding::SetIntset,
            tag::SET_SMALL => Encoding::SetSmall,
            tag::ZSET_PACKED => Encoding::ZSetPacked,
            tag::LIST_PACKED => Encoding::ListPacked,
            _ => unreachable!("meta tag {t} is not an inline encoding"),
        }
    }

    /// The meta tag of an inline encoding; `None` for a boxed one.
    #[cfg(test)]
    fn inline_tag(self) -> Option<u8> {
        Some(match self {
            Encoding::StrEmbstr => tag::STR_EMBSTR,
            Encoding::StrRaw => tag::STR_RAW,
            Encoding::StrInt => tag::STR_INT,
            Encoding::HashRecord => tag::HASH_RECORD,
            Encoding::SetIntset => tag::SET_INTSET,
            Encoding::SetSmall => tag::SET_SMALL,
            Encoding::ZSetPacked => tag::ZSET_PACKED,
            Encoding::ListPacked => tag::LIST_PACKED,
            _ => return None,
        })
    }

    /// The index of this encoding's count (`< ENCODING_SLOTS`).
    #[inline]
    pub fn slot(self) -> usize {
        self as usize
    }

    pub fn kind(self) -> Kind {
        match self {
            Encoding::StrEmbstr | Encoding::StrRaw | Encoding::StrInt => Kind::String,
            Encoding::HashRecord
            | Encoding::HashSmall
            | Encoding::HashFlat
            | Encoding::HashInts
            | Encoding::HashPages => Kind::Hash,
            Encoding::List | Encoding::ListPacked => Kind::List,
            Encoding::SetIntset
            | Encoding::SetSmall
            | Encoding::SetFlat
            | Encoding::SetInts
            | Encoding::SetPages => Kind::Set,
            Encoding::ZSetPacked | Encoding::ZSetIndex => Kind::ZSet,
        }
    }

    /// The name of this encoding in INFO's statistics (`densekv_keys_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::StrEmbstr => "string_embstr",
            Encoding::StrRaw => "string_raw",
            Encoding::StrInt => "string_int",
            Encoding::HashRecord => "hash_record",
            Encoding::HashSmall => "hash_small",
            Encoding::HashFlat => "hash_flat",
            Encoding::HashInts => "hash_ints",
            Encoding::HashPages => "hash_pages",
            Encoding::List => "list",
            Encoding::SetIntset => "set_intset",
            Encoding::SetSmall => "set_small",
            Encoding::SetFlat => "set_flat",
            Encoding::SetInts => "set_ints",
            Encoding::SetPages => "set_pages",
            Encoding::ZSetPacked => "zset_packed",
            Encoding::ZSetIndex => "zset_index",
            Encoding::ListPacked => "list_packed",
        }
    }
}

const _: () = assert!(Encoding::ALL.len() <= ENCODING_SLOTS);
const _: () = assert!((Encoding::ListPacked as usize) < ENCODING_SLOTS);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_tags_and_encodings_agree() {
        let mut slots = [false; ENCODING_SLOTS];
        for e in Encoding::ALL {
            assert!(!slots[e.slot()], "{e:?} shares a slot");
            slots[e.slot()] = true;
            if let Some(t) = e.inline_tag() {
                assert_eq!(Encoding::of_inline(t), e);
                assert!(t < tag::BOXED);
            }
        }
        assert_eq!(Encoding::StrInt.kind(), Kind::String);
        assert_eq!(Encoding::SetFlat.kind().name(), "set");
    }
}
