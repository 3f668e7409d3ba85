//! The directives with their own parser, formatter and rewrite (Redis's `createSpecialConfig`),
//! and the `is_valid` checks of the generic ones. Each function mirrors its config.c
//! counterpart, named in its comment, with the same error texts.

use super::SetContext;
use super::rewrite::Rewrite;
use super::table::defaults;
use super::value::{format_memory, parse_memory, repr};
use crate::config::Config;

const WRONG_ARGS: &str = "wrong number of arguments";

/// C's `strtoll(s, &end, 10)`: leading blanks, a sign, digits, saturating on overflow. Returns
/// the value and whether the whole text was used (`*end == '\0'`; no digits leaves `end` at the
/// start, so only an empty text counts as used then).
pub fn strtoll(text: &[u8]) -> (i64, bool) {
    let rest = text.trim_ascii_start();
    let (negative, rest) = match rest.split_first() {
        Some((b'-', r)) => (true, r),
        Some((b'+', r)) => (false, r),
        _ => (false, rest),
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return (0, text.is_empty());
    }
    let mut value: i128 = 0;
    for &d in &rest[..digits] {
        value = (value * 10 + i128::from(d - b'0')).min(i128::from(i64::MAX) + 1);
    }
    let value = if negative { -value } else { value };
    let value = value.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    (value, digits == rest.len())
}

/// `strerror(errno)` of an I/O error, without Rust's " (os error N)".
pub fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn path_of(bytes: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(bytes))
}

// ---- dir (setConfigDirOption) ----

/// `dir`: changes the working directory at once, as Redis does, so relative paths (the log
/// file, the pid file, later the RDB) resolve there.
pub fn dir_set(c: &mut Config, args: &[Vec<u8>], _cx: SetContext) -> Result<bool, String> {
    let [dir] = args else {
        return Err(WRONG_ARGS.into());
    };
    std::env::set_current_dir(path_of(dir)).map_err(|e| strerror(&e))?;
    c.dir = String::from_utf8_lossy(dir).into_owned();
    Ok(true)
}

pub fn dir_get(_c: &Config) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    std::env::current_dir().map_or_else(|_| Vec::new(), |p| p.as_os_str().as_bytes().to_vec())
}

pub fn dir_rewrite(c: &Config, name: &str, rw: &mut Rewrite) {
    let cwd = dir_get(c);
    if cwd.is_empty() {
        rw.mark(name);
    } else {
        rw.line(name, format!("{name} {}", repr(&cwd)), true);
    }
}

// ---- save (setConfigSaveOption) ----

/// `save <seconds> <changes> …`: the file's first `save` line replaces the defaults and later
/// ones add to it; at run time each set replaces the list. `save ""` empties it.
pub fn save_set(c: &mut Config, args: &[Vec<u8>], cx: SetContext) -> Result<bool, String> {
    let mut args = args;
    if let [only] = args
        && only.is_empty()
    {
        c.save.clear();
        args = &[];
    }
    if !args.len().is_multiple_of(2) {
        return Err("Invalid save parameters".into());
    }
    for (j, arg) in args.iter().enumerate() {
        let (value, whole) = strtoll(arg);
        // Seconds (even positions) must be at least 1, changes at least 0.
        let least = i64::from(j % 2 == 0);
        if !whole || value < least {
            return Err("Invalid save parameters".into());
        }
    }
    if !cx.reading_file || !c.save_from_file {
        c.save.clear();
    }
    if cx.reading_file {
        c.save_from_file = true;
    }
    for pair in args.chunks(2) {
        // `changes` is a C int in Redis: larger values wrap as its cast does.
        c.save
            .push((strtoll(&pair[0]).0, i64::from(strtoll(&pair[1]).0 as i32)));
    }
    Ok(true)
}

pub fn save_get(c: &Config) -> Vec<u8> {
    let parts: Vec<String> = c.save.iter().map(|(s, n)| format!("{s} {n}")).collect();
    parts.join(" ").into_bytes()
}

pub fn save_rewrite(c: &Config, name: &str, rw: &mut Rewrite) {
    if c.save.is_empty() {
        rw.line(name, "save \"\"".into(), true);
    }
    for (seconds, changes) in &c.save {
        rw.line(name, format!("save {seconds} {changes}"), true);
    }
    rw.mark(name);
}

// ---- client-output-buffer-limit (updateClientOutputBufferLimit) ----

/// The classes in Redis's order, with CONFIG GET's and CONFIG REWRITE's names.
const CLASSES: [(&str, &str); 3] = [
    ("normal", "normal"),
    ("slave", "replica"),
    ("pubsub", "pubsub"),
];

fn class_of(name: &[u8]) -> Option<usize> {
    match name.to_ascii_lowercase().as_slice() {
        b"normal" => Some(0),
        b"slave" | b"replica" => Some(1),
        b"pubsub" => Some(2),
        _ => None,
    }
}

fn limits(c: &Config) -> [(u64, u64, u64); 3] {
    [
        c.output_limit_normal,
        c.output_limit_replica,
        c.output_limit_pubsub,
    ]
}

/// `client-output-buffer-limit <class> <hard> <soft> <seconds> …`: all classes are checked
/// before any is set, so a bad one changes nothing.
pub fn obuf_set(c: &mut Config, args: &[Vec<u8>], _cx: SetContext) -> Result<bool, String> {
    if !args.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut values = limits(c);
    let mut seen = [false; 3];
    for quad in args.chunks(4) {
        let Some(class) = class_of(&quad[0]) else {
            return Err("Invalid client class specified in buffer limit configuration.".into());
        };
        let (secs, whole) = strtoll(&quad[3]);
        // Redis keeps the seconds in a C int.
        let secs = secs as i32;
        match (parse_memory(&quad[1]), parse_memory(&quad[2])) {
            (Some(hard), Some(soft)) if secs >= 0 && whole => {
                values[class] = (hard, soft, secs as u64);
                seen[class] = true;
            }
            _ => {
                return Err(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration."
                        .into(),
                );
            }
        }
    }
    let old = limits(c);
    let pick = |i: usize| if seen[i] { values[i] } else { old[i] };
    c.output_limit_normal = pick(0);
    c.output_limit_replica = pick(1);
    c.output_limit_pubsub = pick(2);
    Ok(true)
}

pub fn obuf_get(c: &Config) -> Vec<u8> {
    let parts: Vec<String> = limits(c)
        .iter()
        .zip(CLASSES)
        .map(|((hard, soft, secs), (name, _))| format!("{name} {hard} {soft} {secs}"))
        .collect();
    parts.join(" ").into_bytes()
}

pub fn obuf_rewrite(c: &Config, name: &str, rw: &mut Rewrite) {
    let defaults = limits(defaults());
    for ((value, default), (_, class)) in limits(c).iter().zip(defaults).zip(CLASSES) {
        let (hard, soft, secs) = *value;
        let line = format!(
            "{name} {class} {} {} {secs}",
            format_memory(hard as i64),
            format_memory(soft as i64)
        );
        rw.line(name, line, *value != default);
    }
}

// ---- oom-score-adj-values (setConfigOOMScoreAdjValuesOption) ----

pub fn oom_set(c: &mut Config, args: &[Vec<u8>], _cx: SetContext) -> Result<bool, String> {
    if args.len() != 3 {
        return Err(WRONG_ARGS.into());
    }
    let mut values = [0i32; 3];
    for (value, arg) in values.iter_mut().zip(args) {
        let (v, whole) = strtoll(arg);
        if !whole || !(-2000..=2000).contains(&v) {
            return Err(
                "Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into(),
            );
        }
        *value = v as i32;
    }
    if values[1] < values[0] || values[2] < values[1] {
        crate::log::warning(
            "The oom-score-adj-values configuration may not work for non-privileged processes! Please consult the documentation.",
        );
    }
    let changed = c.oom_score_adj_values != values;
    c.oom_score_adj_values = values;
    Ok(changed)
}

pub fn oom_get(c: &Config) -> Vec<u8> {
    let [a, b, d] = c.oom_score_adj_values;
    format!("{a} {b} {d}").into_bytes()
}

pub fn oom_rewrite(c: &Config, name: &str, rw: &mut Rewrite) {
    let force = c.oom_score_adj_values != defaults().oom_score_adj_values;
    let line = format!("{name} {}", String::from_utf8_lossy(&oom_get(c)));
    rw.line(name, line, force);
}

// ---- notify-keyspace-events (keyspaceEventsStringToFlags) ----

use crate::notify::class::{
    ALL as NOTIFY_ALL, CLASS_FLAGS, KEY_MISS as NOTIFY_KEY_MISS, KEYEVENT as NOTIFY_KEYEVENT,
    KEYSPACE as NOTIFY_KEYSPACE,
};

pub fn notify_flags(text: &[u8]) -> Option<i32> {
    let mut flags = 0;
    for &ch in text {
        flags |= match ch {
            b'A' => NOTIFY_ALL,
            b'K' => NOTIFY_KEYSPACE,
            b'E' => NOTIFY_KEYEVENT,
            b'm' => NOTIFY_KEY_MISS,
            _ => CLASS_FLAGS.iter().find(|(c, _)| *c == ch)?.1,
        };
    }
    Some(flags)
}

pub fn notify_string(flags: i32) -> String {
    let mut out = String::new();
    if flags & NOTIFY_ALL == NOTIFY_ALL {
        out.push('A');
    } else {
        for (ch, bit) in CLASS_FLAGS {
            if flags & bit != 0 {
                out.push(ch as char);
            }
        }
    }
    for (ch, bit) in [
        ('K', NOTIFY_KEYSPACE),
        ('E', NOTIFY_KEYEVENT),
        ('m', NOTIFY_KEY_MISS),
    ] {
        if flags & bit != 0 {
            out.push(ch);
        }
    }
    out
}

pub fn notify_set(c: &mut Config, args: &[Vec<u8>], _cx: SetContext) -> Result<bool, String> {
    let [classes] = args else {
        return Err(WRONG_ARGS.into());
    };
    c.notify_keyspace_events =
        notify_flags(classes).ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
    Ok(true)
}

pub fn notify_get(c: &Config) -> Vec<u8> {
    notify_string(c.notify_keyspace_events).into_bytes()
}

pub fn notify_rewrite(c: &Config, name: &str, rw: &mut Rewrite) {
    let flags = notify_string(c.notify_keyspace_events);
    let line = format!("{name} {}", repr(flags.as_bytes()));
    rw.line(name, line, c.notify_keyspace_events != 0);
}

// ---- bind (setConfigBindOption) ----

pub fn bind_set(c: &mut Config, args: &[Vec<u8>], _cx: SetContext) -> Result<bool, String> {
    if args.len() > 16 {
        return Err("Too many bind addresses specified.".into());
    }
    let args = if matches!(args, [only] if only.is_empty()) {
        &[][..]
    } else {
        args
    };
    c.bind = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    Ok(true)
}

pub fn bind_get(c: &Config) -> Vec<u8> {
    c.bind.join(" ").into_bytes()
}

pub fn bind_rewrite(c: &Config, name: &str, rw: &mut Rewrite) {
    if c.bind == defaults().bind {
        rw.mark(name);
        return;
    }
    let addresses = if c.bind.is_empty() {
        "\"\"".to_string()
    } else {
        c.bind.join(" ")
    };
    rw.line(name, format!("{name} {addresses}"), true);
}

// ---- replicaof (setConfigReplicaOfOption) ----

pub fn replicaof_set(c: &mut Config, args: &[Vec<u8>], _cx: SetContext) -> Result<bool, String> {
    let [host, port] = args else {
        return Err(WRONG_ARGS.into());
    };
    c.replicaof = None;
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        return Ok(true);
    }
    // `strtol` into an int: Redis checks the range and that the whole text was a number.
    let (port, whole) = strtoll(port);
    if !whole || !(0..=65535).contains(&port) {
        return Err("Invalid master port".into());
    }
    c.replicaof = Some((String::from_utf8_lossy(host).into_owned(), port));
    Ok(true)
}

pub fn replicaof_get(c: &Config) -> Vec<u8> {
    c.replicaof.as_ref().map_or_else(Vec::new, |(host, port)| {
        format!("{host} {port}").into_bytes()
    })
}

pub fn replicaof_rewrite(c: &Config, name: &str, rw: &mut Rewrite) {
    match &c.replicaof {
        Some((host, port)) if !c.cluster_enabled => {
            rw.line(name, format!("{name} {host} {port}"), true);
        }
        _ => rw.mark(name),
    }
}

// ---- latency-tracking-info-percentiles ----

/// Redis's `string2d`: all of the text is a number, no leading blank, no NaN, no overflow to
/// infinity or underflow to zero.
fn string2d(text: &[u8]) -> Option<f64> {
    if text.is_empty() || crate::number::is_space(text[0]) {
        return None;
    }
    let v = crate::number::strtod_whole(text)?;
    let overflow = v.is_infinite() && !crate::number::is_inf_literal(text);
    let mantissa = text
        .split(|&b| matches!(b, b'e' | b'E' | b'p' | b'P'))
        .next()
        .unwrap_or_default();
    let underflow = v == 0.0 && mantissa.iter().any(|b| (b'1'..=b'9').contains(b));
    (!v.is_nan() && !overflow && !underflow).then_some(v)
}

pub fn percentiles_set(c: &mut Config, args: &[Vec<u8>], _cx: SetContext) -> Result<bool, String> {
    c.latency_tracking_info_percentiles.clear();
    let args = if matches!(args, [only] if only.is_empty()) {
        &[][..]
    } else {
        args
    };
    let mut values = Vec::with_capacity(args.len());
    for arg in args {
        let Some(p) = string2d(arg) else {
            return Err("Invalid latency-tracking-info-percentiles parameters".into());
        };
        if !(0.0..=100.0).contains(&p) {
            return Err(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                    .into(),
            );
        }
        values.push(p);
    }
    c.latency_tracking_info_percentiles = values;
    Ok(true)
}

/// `%f` with the trailing zeros (and a trailing point) removed, as Redis's `trimDoubleString`.
fn trimmed_f(v: f64) -> String {
    let text = format!("{v:.6}");
    if !text.contains('.') {
        return text;
    }
    let text = text.trim_end_matches('0');
    text.strip_suffix('.').unwrap_or(text).to_string()
}

pub fn percentiles_get(c: &Config) -> Vec<u8> {
    let parts: Vec<String> = c
        .latency_tracking_info_percentiles
        .iter()
        .map(|&p| trimmed_f(p))
        .collect();
    parts.join(" ").into_bytes()
}

pub fn percentiles_rewrite(c: &Config, name: &str, rw: &mut Rewrite) {
    let mut line = name.to_string();
    if c.latency_tracking_info_percentiles.is_empty() {
        line.push_str(" \"\"");
    }
    for &p in &c.latency_tracking_info_percentiles {
        line.push(' ');
        line.push_str(&trimmed_f(p));
    }
    rw.line(name, line, true);
}

// ---- the is_valid functions of the generic directives ----

fn is_base_name(v: &[u8]) -> bool {
    !v.contains(&b'/') && !v.contains(&b'\\')
}

pub fn valid_db_filename(v: &[u8]) -> Result<(), &'static str> {
    if !is_base_name(v) {
        return Err("dbfilename can't be a path, just a filename");
    }
    Ok(())
}

pub fn valid_aof_filename(v: &[u8]) -> Result<(), &'static str> {
    if v.is_empty() {
        return Err("appendfilename can't be empty");
    }
    if !is_base_name(v) {
        return Err("appendfilename can't be a path, just a filename");
    }
    Ok(())
}

pub fn valid_aof_dirname(v: &[u8]) -> Result<(), &'static str> {
    if v.is_empty() {
        return Err("appenddirname can't be empty");
    }
    if !is_base_name(v) {
        return Err("appenddirname can't be a path, just a dirname");
    }
    Ok(())
}

/// `isValidShutdownOnSigFlags`: SAVE (1) and NOSAVE (2) exclude each other.
pub fn valid_shutdown_flags(v: i32) -> Result<(), &'static str> {
    if v & 1 != 0 && v & 2 != 0 {
        return Err("shutdown options SAVE and NOSAVE can't be used simultaneously");
    }
    Ok(())
}

pub fn valid_hostname(v: &[u8]) -> Result<(), &'static str> {
    if v.len() >= 256 {
        return Err("Hostnames must be less than 256 characters");
    }
    if !v
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    {
        return Err("Hostnames may only contain alphanumeric characters, hyphens or dots");
    }
    Ok(())
}

/// `isValidProcTitleTemplate`: every `{variable}` is known and the title, expanded with an
/// empty `{title}`, is not blank. Only `{title}`, `{server-mode}` (never cluster or sentinel
/// here) and `{unixsocket}` (densekv has none) expand to nothing.
pub fn valid_proc_title(v: &[u8]) -> Result<(), &'static str> {
    const INVALID: &str = "template format is invalid or contains unknown variables";
    let mut expanded = Vec::new();
    let mut rest = v;
    while let Some(open) = rest.iter().position(|&b| b == b'{') {
        expanded.extend_from_slice(&rest[..open]);
        let after = &rest[open + 1..];
        match after.first() {
            None => return Err(INVALID),
            Some(b'{') => {
                expanded.push(b'{');
                rest = &after[1..];
                continue;
            }
            Some(_) => {}
        }
        let close = after.iter().position(|&b| b == b'}').ok_or(INVALID)?;
        match &after[..close] {
            b"title" | b"server-mode" | b"unixsocket" => {}
            b"listen-addr" | b"config-file" | b"port" | b"tls-port" => expanded.push(b'x'),
            _ => return Err(INVALID),
        }
        rest = &after[close + 1..];
    }
    expanded.extend_from_slice(rest);
    if expanded.iter().all(|&b| b == b' ') {
        return Err(INVALID);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtoll_as_c() {
        assert_eq!(strtoll(b"12"), (12, true));
        assert_eq!(strtoll(b" -3"), (-3, true));
        assert_eq!(strtoll(b""), (0, true));
        assert_eq!(strtoll(b"x"), (0, false));
        assert_eq!(strtoll(b"5x"), (5, false));
        assert_eq!(strtoll(b"99999999999999999999"), (i64::MAX, true));
    }

    #[test]
    fn keyspace_event_classes_round_trip() {
        assert_eq!(
            notify_flags(b"KEA").map(notify_string).as_deref(),
            Some("AKE")
        );
        assert_eq!(
            notify_flags(b"Elg").map(notify_string).as_deref(),
            Some("glE")
        );
        assert_eq!(notify_flags(b"").map(notify_string).as_deref(), Some(""));
        // `n` is outside `A`, and `A` hides it: Redis prints what it stores this way.
        assert_eq!(
            notify_flags(b"Anm").map(notify_string).as_deref(),
            Some("Am")
        );
        assert_eq!(notify_flags(b"q"), None);
    }

    #[test]
    fn percentiles_format_like_trim_double_string() {
        assert_eq!(trimmed_f(50.0), "50");
        assert_eq!(trimmed_f(99.9), "99.9");
        assert_eq!(trimmed_f(0.0), "0");
    }

    #[test]
    fn proc_title_templates() {
        assert!(valid_proc_title(b"{title} {listen-addr} {server-mode}").is_ok());
        assert!(valid_proc_title(b"{server-mode}").is_err());
        assert!(valid_proc_title(b"{x}").is_err());
        assert!(valid_proc_title(b"a{").is_err());
        assert!(valid_proc_title(b"{{").is_ok());
    }
}
