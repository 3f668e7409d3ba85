//! `resp`: the protocol layer of densekv — Redis 7.0's request parsing and reply encoding, byte
//! for byte, with no I/O and no async. The server's network loop owns the sockets and buffers and
//! calls into this crate.
//!
//! ```text
//!   socket ──read──▶ query buffer ──Parser::parse──▶ Request::Command(args as &[u8])
//!                                                         │ command table (server crate)
//!   socket ◀─write── output Vec<u8> ◀──ReplyWriter::*─────┘
//! ```
//!
//! | module     | what                                                       | Redis 7.0 source              |
//! |------------|------------------------------------------------------------|-------------------------------|
//! | `parser`   | incremental zero-copy multibulk + inline request parser    | `processMultibulkBuffer`, `processInlineBuffer` |
//! | `inline`   | inline line tokeniser, blank trimming                      | `sdssplitargs`, `sdstrim`     |
//! | `number`   | strict integer syntax of `*N` / `$L`                       | `string2ll` (`util.c`)        |
//! | `error`    | the one error enum: protocol errors and their reply texts  | `addReplyError` calls         |
//! | `reply`    | RESP2/RESP3 reply writer, deferred lengths                 | `addReply*`                   |
//! | `peek`     | read-ahead: end and key of the next complete request       | —                             |
//! | `double`   | `%.17g` and INCRBYFLOAT's human format, allocation-free    | `addReplyDouble`, `ld2string` |
//! | `fuzz`     | [`fuzz_check`], the fuzz target's body, replayed in tests  | —                             |
//!
//! Dependencies point one way: `resp` depends on nothing in the workspace; `server` depends on
//! it. The design note is `docs/resp.md` (state machine, limits table, encoding table).

pub mod double;
mod error;
mod fuzz;
pub mod inline;
mod number;
mod parser;
pub mod peek;
pub mod reply;

pub use error::ProtocolError;
pub use fuzz::fuzz_check;
pub use number::string2ll;
pub use parser::{
    BIG_ARG_BYTES, Command, INLINE_MAX_BYTES, Limits, PROTO_MAX_BULK_LEN_DEFAULT, Parser, Request,
    RequestKind, UNAUTH_ARG_COUNT_MAX, UNAUTH_BULK_BYTES_MAX,
};
pub use reply::{Deferred, Protocol, ReplyWriter};
