//! COMMAND and its subcommands (Redis's `commandCommand` family in src/server.c): COUNT, LIST
//! [FILTERBY MODULE | ACLCAT | PATTERN], INFO, DOCS, GETKEYS, GETKEYSANDFLAGS, HELP, in RESP2
//! and RESP3, byte for byte what redis-server 7.0.15 replies for the commands densekv has.
//!
//! The replies come from Redis's command metadata (`meta.rs`, generated from Redis's JSON) and
//! the table (which commands exist, which are containers and their subcommands); the keys of
//! GETKEYS from the key specs (`keyspec.rs`).
//!
//! Order: redis-server lists commands, and a container's subcommands, in the order of its
//! command dict, which a per-process random hash seed shuffles (two redis-servers disagree);
//! densekv uses its table order. Within one entry every field is in Redis's order.

mod keyspec;
pub mod meta;

use crate::command::COMMANDS as ALL;
use crate::command::{Ctx, LOADING, NOKEYS, STALE, Spec, arity_ok, resolve, table};
use keyspec::{KEY_FLAG_NAMES, KeyRef};
use meta::{Arg, BeginSearch, FindKeys, KeySpec, Meta};
use resp::ReplyWriter;

pub static COMMANDS: &[Spec] = table! {
    // name    arity, flags,           keys,   member, handler, subcommands
    "command", -1,    LOADING | STALE, NOKEYS, 0,      command, COMMAND_SUBCOMMANDS;
};

static COMMAND_SUBCOMMANDS: &[Spec] = table! {
    // name                    arity, flags,           keys,   member, handler
    "command|count",           2,     LOADING | STALE, NOKEYS, 0,      count;
    "command|list",            -2,    LOADING | STALE, NOKEYS, 0,      list;
    "command|info",            -2,    LOADING | STALE, NOKEYS, 0,      info;
    "command|docs",            -2,    LOADING | STALE, NOKEYS, 0,      docs;
    "command|getkeys",         -4,    LOADING | STALE, NOKEYS, 0,      getkeys;
    "command|getkeysandflags", -4,    LOADING | STALE, NOKEYS, 0,      getkeysandflags;
    "command|help",            2,     LOADING | STALE, NOKEYS, 0,      help;
};

/// The table indices of the top-level commands (containers stand for their subcommands).
fn top_level() -> impl Iterator<Item = usize> {
    ALL.iter()
        .enumerate()
        .filter(|(_, s)| !s.is_subcommand())
        .map(|(i, _)| i)
}

/// The table indices of the subcommands of the container at `index`.
fn subcommands_of(index: usize) -> std::ops::Range<usize> {
    index + 1..index + 1 + ALL[index].subcommands.len()
}

/// COMMAND: every command's COMMAND INFO entry.
pub fn command(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    info_all(&mut ctx.out);
}

fn info_all(out: &mut ReplyWriter<'_>) {
    let all: Vec<usize> = top_level().collect();
    out.array_len(all.len());
    for index in all {
        write_info(out, index);
    }
}

/// COMMAND COUNT: the top-level commands (a container counts once).
pub fn count(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    ctx.out.integer(top_level().count() as i64);
}

/// COMMAND INFO [name …]: the entries of the named commands (`config|get` names a subcommand),
/// null for a name that is none, or every command's.
pub fn info(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    if args.len() == 2 {
        return info_all(&mut ctx.out);
    }
    ctx.out.array_len(args.len() - 2);
    for name in &args[2..] {
        match crate::command::lookup_full_name(name) {
            Some((index, _)) => write_info(&mut ctx.out, index),
            None => ctx.out.null(),
        }
    }
}

/// COMMAND DOCS [name …]: a map from each named command (unknown names skipped), or every
/// command, to its documentation.
pub fn docs(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let indices: Vec<usize> = if args.len() == 2 {
        top_level().collect()
    } else {
        args[2..]
            .iter()
            .filter_map(|name| crate::command::lookup_full_name(name).map(|(i, _)| i))
            .collect()
    };
    ctx.out.map_len(indices.len());
    for index in indices {
        ctx.out.bulk(ALL[index].name.as_bytes());
        write_docs(&mut ctx.out, index);
    }
}

/// The filter of COMMAND LIST FILTERBY.
enum Filter<'a> {
    None,
    /// No command of densekv's comes from a module.
    Module,
    AclCategory(&'a [u8]),
    Pattern(store::glob::Glob),
}

impl Filter<'_> {
    fn keeps(&self, meta: &Meta) -> bool {
        match self {
            Filter::None => true,
            Filter::Module => false,
            Filter::AclCategory(cat) => meta
                .acl_categories
                .iter()
                .any(|c| c.as_bytes()[1..].eq_ignore_ascii_case(cat)),
            Filter::Pattern(glob) => glob.matches(meta.name.as_bytes()),
        }
    }
}

/// COMMAND LIST [FILTERBY MODULE m | ACLCAT c | PATTERN p]: full names, each container followed
/// by its subcommands.
pub fn list(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let mut filter = Filter::None;
    let mut i = 2;
    while i < args.len() {
        if !(super::is(args[i], "filterby") && args.len() - 1 - i == 2) {
            return ctx.syntax_error();
        }
        let arg = args[i + 2];
        filter = if super::is(args[i + 1], "module") {
            Filter::Module
        } else if super::is(args[i + 1], "aclcat") {
            // Redis compares the category as a C string, up to a NUL byte.
            Filter::AclCategory(&arg[..arg.iter().position(|&b| b == 0).unwrap_or(arg.len())])
        } else if super::is(args[i + 1], "pattern") {
            // Redis matches without case; the names are lower case, so a lower-cased pattern
            // matched with case is the same test.
            Filter::Pattern(store::glob::Glob::new(&arg.to_ascii_lowercase()))
        } else {
            return ctx.syntax_error();
        };
        i += 3;
    }
    let names: Vec<&str> = (0..ALL.len())
        .filter(|&index| filter.keeps(meta::of(index)))
        .map(|index| ALL[index].name)
        .collect();
    ctx.out.array_len(names.len());
    for name in names {
        ctx.out.bulk(name.as_bytes());
    }
}

/// COMMAND GETKEYS command arg …: the key arguments.
pub fn getkeys(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    getkeys_reply(ctx, &args[2..], false);
}

/// COMMAND GETKEYSANDFLAGS command arg …: each key argument with its key-spec flags.
pub fn getkeysandflags(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    getkeys_reply(ctx, &args[2..], true);
}

/// Redis's `getKeysSubcommandImpl`, in its order of checks: the command exists, it has keys at
/// all, the arity fits, its key specs (or key finder) find keys.
fn getkeys_reply(ctx: &mut Ctx<'_, '_>, cmd: &[&[u8]], with_flags: bool) {
    let crate::command::Found::Command(index, spec) = resolve(cmd) else {
        return ctx.error("ERR Invalid command specified");
    };
    let meta = meta::of(index);
    if !keyspec::has_keys(meta) {
        return ctx.error("ERR The command has no key arguments");
    }
    if !arity_ok(spec.arity, cmd.len()) {
        return ctx.error("ERR Invalid number of arguments specified for command");
    }
    let keys = keyspec::get_keys(meta, cmd);
    if keys.is_empty() {
        if spec.flags & crate::command::NO_MANDATORY_KEYS != 0 {
            return ctx.out.array_len(0);
        }
        return ctx.error("ERR Invalid arguments specified for command");
    }
    ctx.out.array_len(keys.len());
    for KeyRef { pos, flags } in keys {
        if with_flags {
            ctx.out.array_len(2);
            ctx.out.bulk(cmd[pos]);
            key_flags(&mut ctx.out, flags);
        } else {
            ctx.out.bulk(cmd[pos]);
        }
    }
}

/// The key positions of `args` for the command at table index `index` as Redis's
/// `getKeysFromCommand` finds them (what client tracking remembers): the command's own key
/// finder when it has one, else its legacy first/last/step range — not the key specs GETKEYS
/// reads. A range the arguments do not reach gives no keys (Redis: for a variadic command).
pub fn keys_of(index: usize, args: &[&[u8]]) -> Vec<usize> {
    let meta = meta::of(index);
    if let Some(name) = meta.get_keys_function.as_deref() {
        return keyspec::proc_keys(name, args)
            .into_iter()
            .map(|k| k.pos)
            .collect();
    }
    let [first, last, step] = meta.key_range;
    if first <= 0 {
        return Vec::new();
    }
    let argc = args.len() as i64;
    let last = if last < 0 { argc + last } else { last };
    let mut keys = Vec::new();
    let mut at = first;
    while at <= last {
        if at >= argc {
            return Vec::new();
        }
        keys.push(at as usize);
        at += step.max(1);
    }
    keys
}

fn key_flags(out: &mut ReplyWriter<'_>, flags: u16) {
    out.set_len(flags.count_ones() as usize);
    for (i, name) in KEY_FLAG_NAMES.iter().enumerate() {
        if flags & 1 << i != 0 {
            out.simple(name.as_bytes());
        }
    }
}

pub fn help(ctx: &mut Ctx<'_, '_>, _args: &[&[u8]]) {
    const LINES: [&str; 21] = [
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all Redis commands.",
        "COUNT",
        "    Return the total number of commands in this Redis server.",
        "LIST",
        "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full Redis command.",
        "HELP",
        "    Prints this help.",
    ];
    ctx.out.array_len(LINES.len());
    for line in LINES {
        ctx.out.simple(line.as_bytes());
    }
}

/// A set of status replies (COMMAND INFO's flags, categories).
fn statuses(out: &mut ReplyWriter<'_>, items: &[String]) {
    out.set_len(items.len());
    for item in items {
        out.simple(item.as_bytes());
    }
}

/// One COMMAND INFO entry (`addReplyCommandInfo`): name, arity, flags, first key, last key,
/// step, ACL categories, tips, key specs, subcommands.
fn write_info(out: &mut ReplyWriter<'_>, index: usize) {
    let meta = meta::of(index);
    out.array_len(10);
    out.bulk(meta.name.as_bytes());
    out.integer(i64::from(meta.arity));
    statuses(out, &meta.flags);
    for value in meta.key_range {
        out.integer(value);
    }
    statuses(out, &meta.acl_categories);
    out.set_len(meta.tips.len());
    for tip in &meta.tips {
        out.bulk(tip.as_bytes());
    }
    out.set_len(meta.key_specs.len());
    for spec in &meta.key_specs {
        write_key_spec(out, spec);
    }
    if ALL[index].subcommands.is_empty() {
        out.set_len(0);
    } else {
        out.array_len(ALL[index].subcommands.len());
        for sub in subcommands_of(index) {
            write_info(out, sub);
        }
    }
}

/// A key spec of COMMAND INFO (`addReplyCommandKeySpecs`).
fn write_key_spec(out: &mut ReplyWriter<'_>, spec: &KeySpec) {
    out.map_len(3 + usize::from(spec.notes.is_some()));
    if let Some(notes) = &spec.notes {
        out.bulk(b"notes");
        out.bulk(notes.as_bytes());
    }
    out.bulk(b"flags");
    statuses(out, &spec.flags);
    out.bulk(b"begin_search");
    out.map_len(2);
    out.bulk(b"type");
    match &spec.begin_search {
        BeginSearch::Index { pos } => {
            out.bulk(b"index");
            integers(out, &[("index", *pos)]);
        }
        BeginSearch::Keyword { keyword, startfrom } => {
            out.bulk(b"keyword");
            out.bulk(b"spec");
            out.map_len(2);
            out.bulk(b"keyword");
            out.bulk(keyword.as_bytes());
            out.bulk(b"startfrom");
            out.integer(*startfrom);
        }
        BeginSearch::Unknown(()) => unknown(out),
    }
    out.bulk(b"find_keys");
    out.map_len(2);
    out.bulk(b"type");
    match &spec.find_keys {
        FindKeys::Range {
            lastkey,
            step,
            limit,
        } => {
            out.bulk(b"range");
            integers(
                out,
                &[("lastkey", *lastkey), ("keystep", *step), ("limit", *limit)],
            );
        }
        FindKeys::Keynum {
            keynumidx,
            firstkey,
            step,
        } => {
            out.bulk(b"keynum");
            integers(
                out,
                &[
                    ("keynumidx", *keynumidx),
                    ("firstkey", *firstkey),
                    ("keystep", *step),
                ],
            );
        }
        FindKeys::Unknown(()) => unknown(out),
    }
}

/// `unknown` and an empty `spec` map.
fn unknown(out: &mut ReplyWriter<'_>) {
    out.bulk(b"unknown");
    out.bulk(b"spec");
    out.map_len(0);
}

/// `spec` and a map of named integers.
fn integers(out: &mut ReplyWriter<'_>, fields: &[(&str, i64)]) {
    out.bulk(b"spec");
    out.map_len(fields.len());
    for (name, value) in fields {
        out.bulk(name.as_bytes());
        out.integer(*value);
    }
}

/// A bulk-string field of a map, when present.
fn field(out: &mut ReplyWriter<'_>, name: &str, value: Option<&String>) {
    if let Some(value) = value {
        out.bulk(name.as_bytes());
        out.bulk(value.as_bytes());
    }
}

/// One COMMAND DOCS entry (`addReplyCommandDocs`).
fn write_docs(out: &mut ReplyWriter<'_>, index: usize) {
    let meta = meta::of(index);
    let subcommands = subcommands_of(index);
    let len = 3
        + usize::from(meta.complexity.is_some())
        + usize::from(!meta.doc_flags.is_empty())
        + usize::from(meta.deprecated_since.is_some())
        + usize::from(meta.replaced_by.is_some())
        + usize::from(!meta.history.is_empty())
        + usize::from(!meta.arguments.is_empty())
        + usize::from(!subcommands.is_empty());
    out.map_len(len);
    field(out, "summary", Some(&meta.summary));
    field(out, "since", Some(&meta.since));
    field(out, "group", Some(&meta.group));
    field(out, "complexity", meta.complexity.as_ref());
    if !meta.doc_flags.is_empty() {
        out.bulk(b"doc_flags");
        statuses(out, &meta.doc_flags);
    }
    field(out, "deprecated_since", meta.deprecated_since.as_ref());
    field(out, "replaced_by", meta.replaced_by.as_ref());
    if !meta.history.is_empty() {
        out.bulk(b"history");
        out.set_len(meta.history.len());
        for (version, change) in &meta.history {
            out.array_len(2);
            out.bulk(version.as_bytes());
            out.bulk(change.as_bytes());
        }
    }
    if !meta.arguments.is_empty() {
        out.bulk(b"arguments");
        write_args(out, &meta.arguments);
    }
    if !subcommands.is_empty() {
        out.bulk(b"subcommands");
        out.map_len(subcommands.len());
        for sub in subcommands {
            out.bulk(ALL[sub].name.as_bytes());
            write_docs(out, sub);
        }
    }
}

/// COMMAND DOCS's arguments (`addReplyCommandArgList`), recursively.
fn write_args(out: &mut ReplyWriter<'_>, args: &[Arg]) {
    out.array_len(args.len());
    for arg in args {
        let len = 2
            + usize::from(arg.key_spec_index.is_some())
            + usize::from(arg.token.is_some())
            + usize::from(arg.summary.is_some())
            + usize::from(arg.since.is_some())
            + usize::from(arg.deprecated_since.is_some())
            + usize::from(!arg.flags.is_empty())
            + usize::from(arg.arguments.is_some());
        out.map_len(len);
        field(out, "name", Some(&arg.name));
        field(out, "type", Some(&arg.kind));
        if let Some(index) = arg.key_spec_index {
            out.bulk(b"key_spec_index");
            out.integer(index);
        }
        field(out, "token", arg.token.as_ref());
        field(out, "summary", arg.summary.as_ref());
        field(out, "since", arg.since.as_ref());
        field(out, "deprecated_since", arg.deprecated_since.as_ref());
        if !arg.flags.is_empty() {
            out.bulk(b"flags");
            statuses(out, &arg.flags);
        }
        if let Some(members) = &arg.arguments {
            out.bulk(b"arguments");
            write_args(out, members);
        }
    }
}
