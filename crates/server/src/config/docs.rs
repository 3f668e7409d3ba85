//! The directive table of docs/config.md, generated from [`DIRECTIVES`] so the doc says what the
//! code does. The doc keeps hand-written prose around a block between two markers; a test fails
//! when the block differs from what the table generates, and rewrites it when run with
//! `DENSEKV_WRITE_DOCS=1`:
//!
//! ```text
//! DENSEKV_WRITE_DOCS=1 cargo test -p server --profile ci --lib config::docs
//! ```

use super::value::yes_no;
use super::{DIRECTIVES, Directive, Kind, NumType, flag, get, num, table::defaults};
use std::fmt::Write as _;

pub const BEGIN: &str = "<!-- BEGIN GENERATED: config::docs::markdown_table -->";
pub const END: &str = "<!-- END GENERATED -->";

fn kind_name(d: &Directive) -> String {
    match d.kind {
        Kind::Bool(_) => "yes/no".into(),
        Kind::Str(s) if s.binary => "string (binary)".into(),
        Kind::Str(_) => "string".into(),
        Kind::Enum(e) => {
            let names: Vec<&str> = e.names.iter().map(|(n, _)| *n).collect();
            let several = if d.has(flag::MULTI_ARG) {
                ", several"
            } else {
                ""
            };
            format!("one of {}{several}", names.join(" "))
        }
        Kind::Num(n) => {
            let unit = if n.flags & num::MEMORY != 0 && n.flags & num::PERCENT != 0 {
                "memory or %"
            } else if n.flags & num::MEMORY != 0 {
                "memory"
            } else if n.flags & num::OCTAL != 0 {
                "octal"
            } else {
                "integer"
            };
            let unsigned = matches!(n.ty, NumType::UInt | NumType::ULongLong | NumType::SizeT);
            let upper = if unsigned && n.upper == -1 {
                u64::MAX.to_string()
            } else if n.flags & num::OCTAL != 0 {
                format!("{:o}", n.upper)
            } else {
                n.upper.to_string()
            };
            format!("{unit} {}–{upper}", n.lower)
        }
        Kind::Special(_) => "special".into(),
    }
}

fn flags_text(d: &Directive) -> String {
    let names = [
        (flag::IMMUTABLE, "immutable"),
        (flag::PROTECTED, "protected"),
        (flag::SENSITIVE, "sensitive"),
        (flag::HIDDEN, "hidden"),
        (flag::MULTI_ARG, "multi-arg"),
    ];
    let set: Vec<&str> = names
        .iter()
        .filter(|(f, _)| d.has(*f))
        .map(|(_, n)| *n)
        .collect();
    set.join(", ")
}

/// The default as the doc shows it: machine-dependent ones in words.
fn default_text(d: &Directive) -> String {
    match d.name {
        "dir" => "the working directory".into(),
        "io-threads" => "half the cores, 1–8".into(),
        _ => {
            let value = String::from_utf8_lossy(&get(defaults(), d)).into_owned();
            if value.is_empty() {
                "\"\"".into()
            } else if matches!(d.kind, Kind::Bool(_)) {
                yes_no(value == "yes").into()
            } else {
                value
            }
        }
    }
}

fn note(d: &Directive) -> String {
    match d.status {
        super::Status::Refused(feature) => {
            format!("densekv has no {feature}: only the default value is accepted")
        }
        status => status.note().to_string(),
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The doc's table: every directive, alphabetically, with its status.
pub fn markdown_table() -> String {
    let mut rows: Vec<&Directive> = DIRECTIVES.iter().collect();
    rows.sort_by_key(|d| d.name);
    let mut out = String::from(
        "| directive | alias | type | default | flags | status | what densekv does |\n|---|---|---|---|---|---|---|\n",
    );
    for d in rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | `{}` | {} | {} | {} |",
            d.name,
            if super::densekv_only(d.name) {
                "(densekv's own)".to_string()
            } else {
                d.alias.map_or(String::new(), |a| format!("`{a}`"))
            },
            cell(&kind_name(d)),
            cell(&default_text(d)),
            flags_text(d),
            d.status.word(),
            cell(&note(d)),
        );
    }
    out
}

/// The whole doc with its generated block replaced (`None`: the markers are missing).
pub fn with_table(doc: &str) -> Option<String> {
    let start = doc.find(BEGIN)? + BEGIN.len();
    let end = doc[start..].find(END)? + start;
    Some(format!(
        "{}\n{}{}",
        &doc[..start],
        markdown_table(),
        &doc[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_config_md_lists_every_directive() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/config.md");
        let doc = std::fs::read_to_string(path).expect("docs/config.md");
        let fresh = with_table(&doc).expect("docs/config.md keeps the generated-table markers");
        if std::env::var_os("DENSEKV_WRITE_DOCS").is_some() {
            std::fs::write(path, &fresh).expect("write docs/config.md");
            return;
        }
        assert!(
            doc == fresh,
            "docs/config.md's directive table is stale: run `DENSEKV_WRITE_DOCS=1 cargo test -p server --profile ci --lib config::docs`"
        );
    }

    #[test]
    fn every_directive_has_a_reason_unless_it_works() {
        for d in DIRECTIVES {
            if !matches!(d.status, super::super::Status::Works(_)) {
                assert!(!d.status.note().is_empty(), "{} needs a note", d.name);
            }
        }
    }
}
