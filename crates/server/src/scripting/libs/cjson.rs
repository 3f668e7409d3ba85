//! `cjson`: Lua CJSON 2.1.0 (`lua_cjson.c`, `strbuf.c`, `fpconv.c`) as Redis 7.0 builds it,
//! JSON encoding and decoding for Lua 5.1.
//!
//! Each module table (the global `cjson`, and every `cjson.new()`) has its own `Config`, shared
//! by its functions. Defaults, as in Redis:
//!
//! ```text
//!   encode_sparse_array   convert off, ratio 2, safe 10
//!   encode_max_depth      1000          decode_max_depth         1000
//!   encode_invalid_numbers off          decode_invalid_numbers   on
//!   encode_number_precision 14          encode_keep_buffer       on (no visible effect)
//! ```
//!
//! Encoding: strings are escaped byte by byte (`"` `\` `/`, control bytes and 0x7f; bytes above
//! 0x7f pass through untouched); numbers print as C's `%.14g` (or the configured precision);
//! `nil` and `cjson.null` are `null`. A table whose keys are all positive integers is an array
//! up to its largest key (holes are `null`) unless it is excessively sparse: largest key >
//! ratio × count and > safe, which is an error, or an object with `convert`. The largest key is
//! kept in a C `int`, so keys of 2^31 and more become `i32::MIN` (x86's conversion) and turn the
//! table into an object or shrink the array, exactly as in Redis. An empty table is `{}`.
//! Object keys come in `next` order.
//!
//! Decoding reads the string as a C string (a NUL byte ends the input) and numbers with
//! `strtod`, so with `decode_invalid_numbers` on (the default) hexadecimal, `inf`, `nan`,
//! leading zeros and `+1` are accepted as glibc reads them. `null` decodes to `cjson.null`, a
//! NULL light userdata. Error messages name the token found and its 1-based character position.
//!
//! Nesting is tracked on explicit stacks (no recursion), bounded by the configured depth and by
//! the Lua stack slots the C code would use (see `libs`).

use std::cell::Cell;
use std::io::Write as _;
use std::rc::Rc;

use mlua::{Lua, Table, Value};

use super::{Args, Fail, Nest, Outcome, Ret, function, number, stack_fits, trunc_i32, type_name};

/// One module table's settings (`json_config_t`). Enumerated settings keep the C code's option
/// index: 0 off, 1 on, 2 null.
#[derive(Clone, Copy, Debug)]
struct Config {
    sparse_convert: i32,
    sparse_ratio: i32,
    sparse_safe: i32,
    encode_max_depth: i32,
    encode_invalid_numbers: i32,
    encode_number_precision: i32,
    encode_keep_buffer: i32,
    decode_invalid_numbers: i32,
    decode_max_depth: i32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sparse_convert: 0,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            encode_invalid_numbers: 0,
            encode_number_precision: 14,
            encode_keep_buffer: 1,
            decode_invalid_numbers: 1,
            decode_max_depth: 1000,
        }
    }
}

/// A module table's configuration, shared by its functions. A function works on a copy and
/// stores it back even when it fails (a setting made before a later argument's error stays, as
/// in C); no borrow is held while Lua runs.
type Shared = Rc<Cell<Config>>;

/// A new `cjson` module table with its own configuration (`lua_cjson_new`).
pub(crate) fn module(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    let config: Shared = Rc::default();
    let with = |f: fn(&Lua, &Args, &mut Config) -> Outcome| {
        let config = Rc::clone(&config);
        function(lua, move |lua, args| {
            let mut settings = config.get();
            let outcome = f(lua, args, &mut settings);
            config.set(settings);
            outcome
        })
    };
    table.set("encode", with(encode)?)?;
    table.set("decode", with(decode)?)?;
    table.set("encode_sparse_array", with(encode_sparse_array)?)?;
    table.set("encode_max_depth", with(encode_max_depth)?)?;
    table.set("decode_max_depth", with(decode_max_depth)?)?;
    table.set("encode_number_precision", with(encode_number_precision)?)?;
    table.set("encode_keep_buffer", with(encode_keep_buffer)?)?;
    table.set("encode_invalid_numbers", with(encode_invalid_numbers)?)?;
    table.set("decode_invalid_numbers", with(decode_invalid_numbers)?)?;
    table.set(
        "new",
        function(lua, |lua, _| Ok(Ret::One(Value::Table(module(lua)?))))?,
    )?;
    table.set("null", Value::NULL)?;
    table.set("_NAME", "cjson")?;
    table.set("_VERSION", "2.1.0")?;
    Ok(table)
}

// ===== Configuration functions =====

/// `json_arg_init`: at most `count` arguments.
fn arg_init(args: &Args, count: usize) -> Result<(), Fail> {
    if args.count() > count {
        return Err(Fail::arg(count + 1, "found too many arguments"));
    }
    Ok(())
}

fn is_nil(args: &Args, n: usize) -> bool {
    matches!(args.get(n), None | Some(Value::Nil))
}

/// `json_integer_option`: the argument's low 32 bits, checked against `min..=max` (the check
/// always names argument 1, as in C).
fn integer_option(
    lua: &Lua,
    args: &Args,
    n: usize,
    setting: &mut i32,
    range: (i32, i32),
) -> Result<Value, Fail> {
    if !is_nil(args, n) {
        let value = args.check_integer(lua, n)? as i32;
        let (min, max) = range;
        if !(min..=max).contains(&value) {
            return Err(Fail::arg(
                1,
                format!("expected integer between {min} and {max}"),
            ));
        }
        *setting = value;
    }
    Ok(Value::Number(f64::from(*setting)))
}

/// `json_enum_option` with `bool_true` = 1: a boolean, or one of `options` by name. Returns a
/// boolean for settings 0 and 1, the option's name otherwise.
fn enum_option(
    lua: &Lua,
    args: &Args,
    n: usize,
    setting: &mut i32,
    options: &[&str],
) -> Result<Value, Fail> {
    if let Some(Value::Boolean(b)) = args.get(n) {
        *setting = i32::from(*b);
    } else if !is_nil(args, n) {
        let name = args.check_string(lua, n)?;
        let name = name.as_bytes();
        // `luaL_checkoption` compares C strings: the name ends at its first NUL.
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        let Some(index) = options.iter().position(|o| o.as_bytes() == name) else {
            let mut message = b"invalid option '".to_vec();
            message.extend_from_slice(name);
            message.push(b'\'');
            return Err(Fail::arg(n, message));
        };
        *setting = index as i32;
    }
    if *setting <= 1 {
        return Ok(Value::Boolean(*setting == 1));
    }
    Ok(Value::String(lua.create_string(
        options.get(*setting as usize).copied().unwrap_or_default(),
    )?))
}

const ON_OFF: [&str; 2] = ["off", "on"];

fn encode_sparse_array(lua: &Lua, args: &Args, config: &mut Config) -> Outcome {
    arg_init(args, 3)?;
    let values = [
        enum_option(lua, args, 1, &mut config.sparse_convert, &ON_OFF)?,
        integer_option(lua, args, 2, &mut config.sparse_ratio, (0, i32::MAX))?,
        integer_option(lua, args, 3, &mut config.sparse_safe, (0, i32::MAX))?,
    ];
    let table = lua.create_sequence_from(values)?;
    Ok(Ret::List(table, 3))
}

fn encode_max_depth(lua: &Lua, args: &Args, config: &mut Config) -> Outcome {
    arg_init(args, 1)?;
    let range = (1, i32::MAX);
    integer_option(lua, args, 1, &mut config.encode_max_depth, range).map(Ret::One)
}

fn decode_max_depth(lua: &Lua, args: &Args, config: &mut Config) -> Outcome {
    arg_init(args, 1)?;
    let range = (1, i32::MAX);
    integer_option(lua, args, 1, &mut config.decode_max_depth, range).map(Ret::One)
}

fn encode_number_precision(lua: &Lua, args: &Args, config: &mut Config) -> Outcome {
    arg_init(args, 1)?;
    let setting = &mut config.encode_number_precision;
    integer_option(lua, args, 1, setting, (1, 14)).map(Ret::One)
}

fn encode_keep_buffer(lua: &Lua, args: &Args, config: &mut Config) -> Outcome {
    arg_init(args, 1)?;
    enum_option(lua, args, 1, &mut config.encode_keep_buffer, &ON_OFF).map(Ret::One)
}

fn encode_invalid_numbers(lua: &Lua, args: &Args, config: &mut Config) -> Outcome {
    arg_init(args, 1)?;
    let options = ["off", "on", "null"];
    enum_option(lua, args, 1, &mut config.encode_invalid_numbers, &options).map(Ret::One)
}

fn decode_invalid_numbers(lua: &Lua, args: &Args, config: &mut Config) -> Outcome {
    arg_init(args, 1)?;
    enum_option(lua, args, 1, &mut config.decode_invalid_numbers, &ON_OFF).map(Ret::One)
}

// ===== Encoding =====

/// `json_encode_exception`.
fn exception(type_name: &str, reason: &str) -> Fail {
    Fail::error(format!("Cannot serialise {type_name}: {reason}"))
}

/// `cjson.encode(value)`.
fn encode(lua: &Lua, args: &Args, config: &mut Config) -> Outcome {
    if args.count() != 1 {
        return Err(Fail::arg(1, "expected 1 argument"));
    }
    let mut encoder = Encoder {
        config: *config,
        out: Vec::new(),
        frames: Vec::new(),
        open: Nest::default(),
        depth: 0,
        slots: 1,
    };
    encoder.run(lua, args.get(1).unwrap_or(&Value::Nil))?;
    Ok(Ret::One(Value::String(lua.create_string(encoder.out)?)))
}

/// An object key as it was when the object was entered: strings and numbers are kept as data
/// rather than as Lua values, so a wide object does not pin a reference per key.
#[derive(Debug)]
enum Key {
    Number(f64),
    String(Vec<u8>),
    Invalid(&'static str),
}

/// A table being written; the table itself is in the encoder's `Nest`.
enum Frame {
    Array { len: usize, next: usize },
    Object { keys: Vec<Key>, next: usize },
}

/// What the next step of writing the deepest table is.
enum Step {
    Value(Value),
    Close(u8, usize),
}

struct Encoder {
    config: Config,
    out: Vec<u8>,
    frames: Vec<Frame>,
    open: Nest,
    /// Tables entered (`current_depth`).
    depth: i32,
    /// Lua stack slots the C encoder would hold: the argument, one per array entered (the
    /// element) and two per object (key and value).
    slots: usize,
}

impl Encoder {
    fn run(&mut self, lua: &Lua, root: &Value) -> Result<(), Fail> {
        self.value(lua, root)?;
        loop {
            let (Some(frame), Some(table)) = (self.frames.last_mut(), self.open.table()) else {
                return Ok(());
            };
            let step = match frame {
                Frame::Array { len, next } if *next > *len => Step::Close(b']', 1),
                Frame::Array { next, .. } => {
                    if *next > 1 {
                        self.out.push(b',');
                    }
                    *next += 1;
                    Step::Value(table.raw_get(*next - 1)?)
                }
                Frame::Object { keys, next } if *next == keys.len() => Step::Close(b'}', 2),
                Frame::Object { keys, next } => {
                    if *next > 0 {
                        self.out.push(b',');
                    }
                    *next += 1;
                    let key = std::mem::replace(&mut keys[*next - 1], Key::Number(0.0));
                    let key = write_key(lua, &mut self.out, &self.config, key)?;
                    Step::Value(table.raw_get(key)?)
                }
            };
            match step {
                Step::Value(value) => self.value(lua, &value)?,
                Step::Close(bracket, slots) => {
                    self.out.push(bracket);
                    self.frames.pop();
                    self.open.pop()?;
                    self.depth -= 1;
                    self.slots -= slots;
                }
            }
        }
    }

    /// `json_append_data`: writes a value, or enters a table.
    fn value(&mut self, lua: &Lua, value: &Value) -> Result<(), Fail> {
        match value {
            Value::String(s) => write_string(&mut self.out, &s.as_bytes()),
            Value::Integer(_) | Value::Number(_) => {
                write_number(&mut self.out, &self.config, number(value).unwrap_or(0.0))?;
            }
            Value::Boolean(true) => self.out.extend_from_slice(b"true"),
            Value::Boolean(false) => self.out.extend_from_slice(b"false"),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => self.out.extend_from_slice(b"null"),
            Value::Table(table) => self.enter(lua, table)?,
            other => return Err(exception(type_name(other), "type not supported")),
        }
        Ok(())
    }

    fn enter(&mut self, lua: &Lua, table: &Table) -> Result<(), Fail> {
        self.depth += 1;
        if self.depth > self.config.encode_max_depth || !stack_fits(self.slots, 3) {
            return Err(Fail::error(format!(
                "Cannot serialise, excessive nesting ({})",
                self.depth
            )));
        }
        let (len, keys) = scan(table, &self.config)?;
        self.open.push(lua, table.clone())?;
        if len > 0 {
            self.out.push(b'[');
            self.frames.push(Frame::Array {
                len: len as usize,
                next: 1,
            });
            self.slots += 1;
        } else {
            self.out.push(b'{');
            self.frames.push(Frame::Object { keys, next: 0 });
            self.slots += 2;
        }
        Ok(())
    }
}

/// `lua_array_length` and the keys for `json_append_object`, in one pass: the array length
/// (> 0), or 0 or -1 for an object, with the object's keys.
// `floor(k) == k` is the C code's exact integer test.
#[allow(clippy::float_cmp)]
fn scan(table: &Table, config: &Config) -> Result<(i32, Vec<Key>), Fail> {
    let mut max: i32 = 0;
    let mut items: i32 = 0;
    let mut array = true;
    let mut keys = Vec::new();
    for pair in table.pairs::<Value, Value>() {
        let (key, _) = pair?;
        let key = match key {
            Value::String(s) => Key::String(s.as_bytes().to_vec()),
            Value::Integer(_) | Value::Number(_) => Key::Number(number(&key).unwrap_or(0.0)),
            other => Key::Invalid(type_name(&other)),
        };
        match key {
            Key::Number(k) if k != 0.0 && k.floor() == k && k >= 1.0 => {
                if k > f64::from(max) {
                    max = trunc_i32(k);
                }
                items = items.wrapping_add(1);
            }
            _ => array = false,
        }
        keys.push(key);
    }
    if !array {
        return Ok((-1, keys));
    }
    let ratio = config.sparse_ratio;
    if ratio > 0 && max > items.wrapping_mul(ratio) && max > config.sparse_safe {
        if config.sparse_convert == 0 {
            return Err(exception("table", "excessively sparse array"));
        }
        return Ok((-1, keys));
    }
    Ok((max, keys))
}

/// Writes an object key and its colon; returns the key as a Lua value to look the value up.
fn write_key(lua: &Lua, out: &mut Vec<u8>, config: &Config, key: Key) -> Result<Value, Fail> {
    match key {
        Key::Number(n) => {
            out.push(b'"');
            write_number(out, config, n)?;
            out.extend_from_slice(b"\":");
            Ok(Value::Number(n))
        }
        Key::String(bytes) => {
            write_string(out, &bytes);
            out.push(b':');
            Ok(Value::String(lua.create_string(bytes)?))
        }
        Key::Invalid(type_name) => {
            Err(exception(type_name, "table key must be a number or string"))
        }
    }
}

/// `json_append_string`.
fn write_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => {
                let _ = write!(out, "\\u{b:04x}");
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// `json_append_number`.
fn write_number(out: &mut Vec<u8>, config: &Config, n: f64) -> Result<(), Fail> {
    let invalid = n.is_nan() || n.is_infinite();
    match config.encode_invalid_numbers {
        0 if invalid => return Err(exception("number", "must not be NaN or Inf")),
        1 if n.is_nan() => {
            out.extend_from_slice(b"nan");
            return Ok(());
        }
        2 if invalid => {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        _ => {}
    }
    format_g(out, n, config.encode_number_precision as usize);
    Ok(())
}

/// C's `printf("%.<precision>g", x)` as glibc prints it: `precision` significant digits,
/// exponent form below 1e-4 or from 10^precision, trailing zeros dropped, `inf`, `nan`, `-nan`.
pub(crate) fn format_g(out: &mut Vec<u8>, x: f64, precision: usize) {
    let negative = x.is_sign_negative();
    if x.is_nan() || x.is_infinite() {
        let sign: &[u8] = if negative { b"-" } else { b"" };
        out.extend_from_slice(sign);
        out.extend_from_slice(if x.is_nan() { b"nan" } else { b"inf" });
        return;
    }
    if x == 0.0 {
        out.extend_from_slice(if negative { b"-0" } else { b"0" });
        return;
    }
    let precision = precision.max(1);
    // Rust rounds exactly, ties to even, as glibc does.
    let scientific = format!("{:.*e}", precision - 1, x);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        out.extend_from_slice(trim_fraction(mantissa).as_bytes());
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exponent.unsigned_abs());
    } else {
        let decimals = (precision as i32 - 1 - exponent) as usize;
        let fixed = format!("{x:.decimals$}");
        out.extend_from_slice(trim_fraction(&fixed).as_bytes());
    }
}

/// Drops trailing zeros after a decimal point, and the point if nothing is left after it.
fn trim_fraction(digits: &str) -> &str {
    if digits.contains('.') {
        digits.trim_end_matches('0').trim_end_matches('.')
    } else {
        digits
    }
}

// ===== Decoding =====

/// `cjson.decode(text)`.
fn decode(lua: &Lua, args: &Args, config: &mut Config) -> Outcome {
    if args.count() != 1 {
        return Err(Fail::arg(1, "expected 1 argument"));
    }
    let text = args.check_string(lua, 1)?;
    let text = text.as_bytes();
    if text.len() >= 2 && (text[0] == 0 || text[1] == 0) {
        return Err(Fail::error("JSON parser does not support UTF-16 or UTF-32"));
    }
    let mut parser = Parser {
        data: &text,
        at: 0,
        string: Vec::new(),
        invalid_numbers: config.decode_invalid_numbers != 0,
        max_depth: config.decode_max_depth,
        open: Nest::default(),
        levels: Vec::new(),
        slots: 1,
    };
    let value = parser.document(lua)?;
    Ok(Ret::One(value))
}

/// A JSON token (`json_token_type_t`); a string's bytes are in `Parser::string`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    ObjectBegin,
    ObjectEnd,
    ArrayBegin,
    ArrayEnd,
    String,
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

/// A token and the 0-based position where it starts (or where its error is).
#[derive(Clone, Copy, Debug)]
struct Token {
    kind: Kind,
    index: usize,
}

impl Kind {
    /// `json_token_type_name`, or the error's description.
    fn name(self) -> &'static str {
        match self {
            Kind::ObjectBegin => "T_OBJ_BEGIN",
            Kind::ObjectEnd => "T_OBJ_END",
            Kind::ArrayBegin => "T_ARR_BEGIN",
            Kind::ArrayEnd => "T_ARR_END",
            Kind::String => "T_STRING",
            Kind::Number(_) => "T_NUMBER",
            Kind::Boolean(_) => "T_BOOLEAN",
            Kind::Null => "T_NULL",
            Kind::Colon => "T_COLON",
            Kind::Comma => "T_COMMA",
            Kind::End => "T_END",
            Kind::Error(message) => message,
        }
    }
}

/// A container being filled while decoding; the table (and an object's key) are in a `Nest`.
#[derive(Clone, Copy, Debug)]
enum Level {
    Array { next: usize },
    Object,
}

struct Parser<'a> {
    data: &'a [u8],
    at: usize,
    /// The last string token's bytes.
    string: Vec<u8>,
    invalid_numbers: bool,
    max_depth: i32,
    /// The containers being filled, outermost first.
    open: Nest,
    levels: Vec<Level>,
    /// The C decoder's stack: the argument, then table and key per object, table per array.
    slots: usize,
}

/// After a container begins: it was empty (`{}`, `[]`), or its first value starts at a token.
enum Begun {
    Empty(Value),
    First(Token),
}

/// After a value is stored: the document is complete, or the next value starts at a token.
enum Stored {
    Done(Value),
    Next(Token),
}

/// `json_throw_parse_error`.
fn parse_error(expected: &str, token: Token) -> Fail {
    Fail::error(format!(
        "Expected {expected} but found {} at character {}",
        token.kind.name(),
        token.index + 1
    ))
}

impl Parser<'_> {
    /// The byte at `i`; the input ends with a NUL, as a C string does.
    fn byte(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    /// Decodes the whole input: one value, then only whitespace.
    fn document(&mut self, lua: &Lua) -> Result<Value, Fail> {
        let mut token = self.next_token();
        loop {
            let value = match token.kind {
                Kind::String => Value::String(lua.create_string(&self.string)?),
                Kind::Number(n) => Value::Number(n),
                Kind::Boolean(b) => Value::Boolean(b),
                Kind::Null => Value::NULL,
                Kind::ObjectBegin | Kind::ArrayBegin => {
                    match self.begin(lua, token.kind == Kind::ObjectBegin)? {
                        Begun::Empty(value) => value,
                        Begun::First(first) => {
                            token = first;
                            continue;
                        }
                    }
                }
                _ => return Err(parse_error("value", token)),
            };
            match self.store(lua, value)? {
                Stored::Done(value) => return Ok(value),
                Stored::Next(next) => token = next,
            }
        }
    }

    /// `json_parse_object_context`/`json_parse_array_context` up to the first value: checks
    /// the depth (`json_decode_descend`) and opens the container unless it is empty.
    fn begin(&mut self, lua: &Lua, object: bool) -> Result<Begun, Fail> {
        let depth = self.levels.len() as i32 + 1;
        if depth > self.max_depth || !stack_fits(self.slots, if object { 3 } else { 2 }) {
            return Err(Fail::error(format!(
                "Found too many nested data structures ({depth}) at character {}",
                self.at
            )));
        }
        let table = lua.create_table()?;
        let first = self.next_token();
        if first.kind
            == (if object {
                Kind::ObjectEnd
            } else {
                Kind::ArrayEnd
            })
        {
            return Ok(Begun::Empty(Value::Table(table)));
        }
        self.open.push(lua, table)?;
        if !object {
            self.levels.push(Level::Array { next: 1 });
            self.slots += 1;
            return Ok(Begun::First(first));
        }
        self.levels.push(Level::Object);
        self.slots += 2;
        let key = self.object_key(lua, first)?;
        self.open.set_key(Value::String(key));
        Ok(Begun::First(self.next_token()))
    }

    /// Stores a value in its container, closing every container that ends after it; at the
    /// top, checks that nothing but whitespace follows.
    fn store(&mut self, lua: &Lua, mut value: Value) -> Result<Stored, Fail> {
        loop {
            if self.levels.is_empty() {
                let end = self.next_token();
                if end.kind != Kind::End {
                    return Err(parse_error("the end", end));
                }
                return Ok(Stored::Done(value));
            }
            let (Some(level), Some(table)) = (self.levels.last_mut(), self.open.table()) else {
                return Ok(Stored::Done(value));
            };
            let (closing, expected) = match level {
                Level::Array { next } => {
                    table.raw_set(*next, value)?;
                    *next += 1;
                    (Kind::ArrayEnd, "comma or array end")
                }
                Level::Object => {
                    table.raw_set(self.open.key(), value)?;
                    (Kind::ObjectEnd, "comma or object end")
                }
            };
            let after = self.next_token();
            if after.kind == closing {
                self.slots -= if closing == Kind::ObjectEnd { 2 } else { 1 };
                self.levels.pop();
                value = self.open.pop()?.map_or(Value::Nil, Value::Table);
                continue;
            }
            if after.kind != Kind::Comma {
                return Err(parse_error(expected, after));
            }
            let mut token = self.next_token();
            if let Some(Level::Object) = self.levels.last() {
                let key = self.object_key(lua, token)?;
                self.open.set_key(Value::String(key));
                token = self.next_token();
            }
            return Ok(Stored::Next(token));
        }
    }

    /// An object key and the colon after it.
    fn object_key(&mut self, lua: &Lua, token: Token) -> Result<mlua::LuaString, Fail> {
        if token.kind != Kind::String {
            return Err(parse_error("object key string", token));
        }
        let key = lua.create_string(&self.string)?;
        let colon = self.next_token();
        if colon.kind != Kind::Colon {
            return Err(parse_error("colon", colon));
        }
        Ok(key)
    }

    /// `json_next_token`.
    fn next_token(&mut self) -> Token {
        while matches!(self.byte(self.at), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        let index = self.at;
        let ch = self.byte(index);
        let single = match ch {
            0 => {
                return Token {
                    kind: Kind::End,
                    index,
                };
            }
            b'{' => Some(Kind::ObjectBegin),
            b'}' => Some(Kind::ObjectEnd),
            b'[' => Some(Kind::ArrayBegin),
            b']' => Some(Kind::ArrayEnd),
            b',' => Some(Kind::Comma),
            b':' => Some(Kind::Colon),
            _ => None,
        };
        if let Some(kind) = single {
            self.at += 1;
            return Token { kind, index };
        }
        match ch {
            b'"' => self.string_token(),
            b'-' | b'0'..=b'9' => {
                if !self.invalid_numbers && self.is_invalid_number() {
                    return self.error("invalid number");
                }
                self.number_token()
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => self.word_token(),
            _ => self.error("invalid token"),
        }
    }

    /// `true`, `false`, `null`, or (with invalid numbers on) `inf`, `nan`, `+1`.
    fn word_token(&mut self) -> Token {
        let index = self.at;
        let rest = &self.data[index..];
        let words: [(&[u8], Kind); 3] = [
            (b"true", Kind::Boolean(true)),
            (b"false", Kind::Boolean(false)),
            (b"null", Kind::Null),
        ];
        for (word, kind) in words {
            if rest.starts_with(word) {
                self.at += word.len();
                return Token { kind, index };
            }
        }
        if self.invalid_numbers && self.is_invalid_number() {
            return self.number_token();
        }
        self.error("invalid token")
    }

    /// `json_set_token_error`: an error token at the current position.
    fn error(&self, message: &'static str) -> Token {
        Token {
            kind: Kind::Error(message),
            index: self.at,
        }
    }

    /// `json_is_invalid_number`: what `strtod` reads but strict JSON does not allow.
    fn is_invalid_number(&self) -> bool {
        let mut p = self.at;
        match self.byte(p) {
            b'+' => return true,
            b'-' => p += 1,
            _ => {}
        }
        let ch = self.byte(p);
        if ch == b'0' {
            let next = self.byte(p + 1);
            return next | 0x20 == b'x' || next.is_ascii_digit();
        }
        // `char` is signed: bytes from 0x80 compare below '9' too.
        if (ch as i8) <= b'9' as i8 {
            return false;
        }
        let word = [p, p + 1, p + 2].map(|i| self.byte(i).to_ascii_lowercase());
        &word == b"inf" || &word == b"nan"
    }

    fn number_token(&mut self) -> Token {
        let index = self.at;
        match strtod(&self.data[index..]) {
            Some((n, used)) => {
                self.at += used;
                Token {
                    kind: Kind::Number(n),
                    index,
                }
            }
            None => self.error("invalid number"),
        }
    }

    /// `json_next_string_token`: the string's bytes go to `self.string`.
    fn string_token(&mut self) -> Token {
        let index = self.at;
        self.at += 1;
        self.string.clear();
        loop {
            let ch = self.byte(self.at);
            match ch {
                b'"' => break,
                0 => return self.error("unexpected end of string"),
                b'\\' => {
                    let escaped = match self.byte(self.at + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 0x08,
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => 0x0c,
                        b'r' => b'\r',
                        b'u' => {
                            if self.unicode_escape() {
                                continue;
                            }
                            return self.error("invalid unicode escape code");
                        }
                        _ => return self.error("invalid escape code"),
                    };
                    self.string.push(escaped);
                    self.at += 2;
                }
                _ => {
                    self.string.push(ch);
                    self.at += 1;
                }
            }
        }
        self.at += 1;
        Token {
            kind: Kind::String,
            index,
        }
    }

    /// Four hex digits at `i`.
    fn hex4(&self, i: usize) -> Option<u32> {
        (i..i + 4).try_fold(0, |n, j| {
            char::from(self.byte(j)).to_digit(16).map(|d| n << 4 | d)
        })
    }

    /// `json_append_unicode_escape` at a `\u`: appends the code point as UTF-8, joining a
    /// surrogate pair; `false` for a bad escape or a lone surrogate.
    fn unicode_escape(&mut self) -> bool {
        let Some(mut code) = self.hex4(self.at + 2) else {
            return false;
        };
        let mut len = 6;
        if code & 0xf800 == 0xd800 {
            if code & 0x400 != 0
                || self.byte(self.at + 6) != b'\\'
                || self.byte(self.at + 7) != b'u'
            {
                return false;
            }
            let Some(low) = self.hex4(self.at + 8) else {
                return false;
            };
            if low & 0xfc00 != 0xdc00 {
                return false;
            }
            code = (((code & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            len = 12;
        }
        let mut utf8 = [0u8; 4];
        // Surrogates were joined or refused above, so this is a scalar value.
        let Some(c) = char::from_u32(code) else {
            return false;
        };
        self.string
            .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
        self.at += len;
        true
    }
}

/// glibc's `strtod` on the start of `s` (which ends at its end or a NUL): the value and the
/// bytes used, or `None` when no number starts there. Reads decimal and hexadecimal floats,
/// `inf`/`infinity` and `nan`/`nan(chars)` in any case, with an optional sign.
pub(crate) fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let lower = |from: usize, word: &[u8]| {
        (0..word.len()).all(|j| at(from + j).to_ascii_lowercase() == word[j])
    };
    let negative = at(0) == b'-';
    let start = usize::from(matches!(at(0), b'+' | b'-'));
    let signed = |x: f64| if negative { -x } else { x };
    if lower(start, b"inf") {
        let end = if lower(start, b"infinity") {
            start + 8
        } else {
            start + 3
        };
        return Some((signed(f64::INFINITY), end));
    }
    if lower(start, b"nan") {
        let (nan, end) = nan_with_payload(s, start + 3);
        return Some((signed(nan), end));
    }
    if at(start) == b'0'
        && at(start + 1) | 0x20 == b'x'
        && let Some((x, end)) = hex_float(s, start + 2)
    {
        return Some((signed(x), end));
    }
    let digits_from = |mut i: usize| {
        while at(i).is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut end = digits_from(start);
    let mut digits = end - start;
    if at(end) == b'.' {
        let after = digits_from(end + 1);
        digits += after - end - 1;
        end = after;
    }
    if digits == 0 {
        return None;
    }
    if at(end) | 0x20 == b'e' {
        let sign = usize::from(matches!(at(end + 1), b'+' | b'-'));
        let exponent_end = digits_from(end + 1 + sign);
        if exponent_end > end + 1 + sign {
            end = exponent_end;
        }
    }
    let text = std::str::from_utf8(&s[start..end]).ok()?;
    text.parse::<f64>().ok().map(|x| (signed(x), end))
}

/// The NaN of `nan` or `nan(chars)` (starting at `from`, after "nan"): glibc puts a number in
/// the parentheses (read as C reads `0x`, `0` and decimal numbers) into the mantissa's low 51
/// bits.
fn nan_with_payload(s: &[u8], from: usize) -> (f64, usize) {
    let quiet = f64::NAN.to_bits();
    if s.get(from) != Some(&b'(') {
        return (f64::NAN, from);
    }
    let chars_end = (from + 1..=s.len())
        .find(|&i| {
            !s.get(i)
                .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
        })
        .unwrap_or(s.len());
    if s.get(chars_end) != Some(&b')') {
        return (f64::NAN, from);
    }
    let chars = &s[from + 1..chars_end];
    let (digits, radix) = match chars {
        [b'0', x, rest @ ..] if x | 0x20 == b'x' => (rest, 16),
        [b'0', rest @ ..] => (rest, 8),
        _ => (chars, 10),
    };
    let parsed = digits.iter().try_fold(0u64, |n, &b| {
        let digit = char::from(b).to_digit(radix)?;
        Some(
            n.saturating_mul(u64::from(radix))
                .saturating_add(u64::from(digit)),
        )
    });
    let payload = parsed.unwrap_or(0) & ((1 << 51) - 1);
    (f64::from_bits(quiet | payload), chars_end + 1)
}

/// A hexadecimal float's digits and binary exponent starting at `from` (after "0x"), rounded
/// to nearest even; `None` without a hex digit (strtod then reads just the "0").
fn hex_float(s: &[u8], from: usize) -> Option<(f64, usize)> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut mantissa: u64 = 0;
    let mut exponent: i64 = 0;
    let mut sticky = false;
    let mut digits = 0;
    let mut i = from;
    let mut fraction = false;
    loop {
        let ch = at(i);
        if ch == b'.' && !fraction {
            fraction = true;
            i += 1;
            continue;
        }
        let Some(d) = char::from(ch).to_digit(16) else {
            break;
        };
        digits += 1;
        if mantissa >> 60 == 0 {
            mantissa = mantissa << 4 | u64::from(d);
            exponent -= if fraction { 4 } else { 0 };
        } else {
            sticky |= d != 0;
            exponent += if fraction { 0 } else { 4 };
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if at(i) | 0x20 == b'p' {
        let sign = usize::from(matches!(at(i + 1), b'+' | b'-'));
        let mut j = i + 1 + sign;
        let mut p: i64 = 0;
        while at(j).is_ascii_digit() {
            p = (p * 10 + i64::from(at(j) - b'0')).min(1 << 40);
            j += 1;
        }
        if j > i + 1 + sign {
            exponent += if at(i + 1) == b'-' { -p } else { p };
            i = j;
        }
    }
    Some((scale(mantissa, exponent, sticky), i))
}

/// `mantissa × 2^exponent` (plus a sliver when `sticky`), rounded to the nearest double, ties
/// to even, through subnormals to 0 and up to infinity.
fn scale(mantissa: u64, exponent: i64, sticky: bool) -> f64 {
    if mantissa == 0 {
        return 0.0;
    }
    let top = exponent + 63 - i64::from(mantissa.leading_zeros());
    if top > 1023 {
        return f64::INFINITY;
    }
    // The exponent of the result's lowest mantissa bit.
    let low = if top >= -1022 { top - 52 } else { -1074 };
    let shift = low - exponent;
    let q = if shift <= 0 {
        mantissa << -shift
    } else if shift >= 128 {
        0
    } else {
        let m = u128::from(mantissa);
        let q = m >> shift;
        let rest = m & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        let up = rest > half || (rest == half && (sticky || q & 1 == 1));
        (q + u128::from(up)) as u64
    };
    let (q, low) = if q == 1 << 53 {
        (q >> 1, low + 1)
    } else {
        (q, low)
    };
    if q < 1 << 52 {
        return f64::from_bits(q);
    }
    let biased = low + 52 + 1023;
    if biased >= 2047 {
        return f64::INFINITY;
    }
    f64::from_bits(((biased as u64) << 52) | (q & ((1 << 52) - 1)))
}

#[cfg(test)]
mod tests {
    use std::ffi::{CStr, CString};

    use mlua::{LuaOptions, StdLib};

    use super::*;

    fn eval_bytes(code: &str) -> Vec<u8> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::default(),
        )
        .unwrap();
        super::super::register(&lua).unwrap();
        let result = lua
            .load(code)
            .set_name("@t")
            .eval::<mlua::LuaString>()
            .unwrap();
        result.as_bytes().to_vec()
    }

    fn eval(code: &str) -> String {
        String::from_utf8(eval_bytes(code)).unwrap()
    }

    fn c_format(x: f64, precision: usize) -> String {
        let format = CString::new(format!("%.{precision}g")).unwrap();
        let mut buf = [0 as libc::c_char; 64];
        // SAFETY: the buffer is 64 bytes, enough for any %g of a double, and the format takes
        // exactly one double.
        unsafe { libc::snprintf(buf.as_mut_ptr(), buf.len(), format.as_ptr(), x) };
        // SAFETY: snprintf wrote a NUL-terminated string into the buffer.
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    fn c_strtod(s: &[u8]) -> (f64, usize) {
        let text = CString::new(s).unwrap();
        let mut end = std::ptr::null_mut();
        // SAFETY: `text` is NUL-terminated and outlives the call; `end` receives a pointer
        // into it.
        let x = unsafe { libc::strtod(text.as_ptr(), &raw mut end) };
        (x, end as usize - text.as_ptr() as usize)
    }

    #[test]
    fn format_g_matches_printf() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut values = vec![
            0.5,
            1.5,
            2.5,
            0.125,
            1e15,
            123_456_789_012_345.0,
            1e-5,
            1e-4,
        ];
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let x = f64::from_bits(seed);
            values.push(if x.is_finite() { x } else { seed as f64 });
            values.push((seed % 100_000) as f64 / 64.0);
        }
        for x in values {
            for precision in [1, 2, 6, 14] {
                let mut out = Vec::new();
                format_g(&mut out, x, precision);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    c_format(x, precision),
                    "{x:e}"
                );
            }
        }
    }

    #[test]
    fn strtod_matches_glibc() {
        let cases: &[&[u8]] = &[
            b"0x1p3",
            b"0x1.8p1x",
            b"0x",
            b"0x.8",
            b"0x.",
            b"0x1p",
            b"-0x1P-1074",
            b"0x1p-1075",
            b"0x1.00000000000008p0",
            b"0x1.000000000000080001p0",
            b"0x1.fffffffffffff8p1023",
            b"0xffffffffffffffffffff",
            b"1e",
            b"1e+",
            b"1.",
            b".5",
            b"-",
            b"+.e1",
            b"1e400",
            b"infinit",
            b"Infinity",
            b"-nan",
            b"nan(0x5)",
            b"nan(",
            b"12abc",
            b"0x1p99999",
            b"00012",
            b"4.9e-324",
            b"2.4703282292062328e-324",
            b"0x0.0000000000001p-1022",
        ];
        for &case in cases {
            let (x, used) = c_strtod(case);
            match strtod(case) {
                Some((y, n)) => {
                    assert_eq!((y.to_bits(), n), (x.to_bits(), used), "{case:?}");
                }
                None => assert_eq!(used, 0, "{case:?}"),
            }
        }
    }

    #[test]
    fn encodes() {
        let cases: [(&str, &[u8]); 8] = [
            ("{1, nil, 3}", b"[1,null,3]"),
            ("{[2^40] = 1}", b"{\"1099511627776\":1}"),
            (
                "'a/\"\\\\\\1\\127\\200'",
                b"\"a\\/\\\"\\\\\\u0001\\u007f\xc8\"",
            ),
            ("{}", b"{}"),
            ("0.1", b"0.1"),
            ("-0.0", b"-0"),
            ("1e300", b"1e+300"),
            ("cjson.null", b"null"),
        ];
        for (value, expected) in cases {
            let code = format!("return cjson.encode({value})");
            assert_eq!(eval_bytes(&code), expected, "{value}");
        }
    }

    #[test]
    fn errors() {
        let cases = [
            (
                "cjson.encode({[20] = 1})",
                "Cannot serialise table: excessively sparse array",
            ),
            (
                "cjson.encode(1/0)",
                "Cannot serialise number: must not be NaN or Inf",
            ),
            (
                "cjson.encode({[true] = 1})",
                "Cannot serialise boolean: table key must be a number or string",
            ),
            (
                "cjson.decode('[1,2')",
                "Expected comma or array end but found T_END at character 5",
            ),
            (
                "cjson.decode('{\"a\" 1}')",
                "Expected colon but found T_NUMBER at character 6",
            ),
            (
                "cjson.decode('\"\\\\x\"')",
                "Expected value but found invalid escape code at character 2",
            ),
            (
                "cjson.decode('\"\\\\ud800\"')",
                "Expected value but found invalid unicode escape code at character 2",
            ),
            (
                "cjson.decode('\\0\\0')",
                "JSON parser does not support UTF-16 or UTF-32",
            ),
            (
                "cjson.encode_max_depth(0)",
                "bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
            ),
            (
                "cjson.encode_keep_buffer('maybe')",
                "bad argument #1 to 'encode_keep_buffer' (invalid option 'maybe')",
            ),
        ];
        for (call, expected) in cases {
            let code = format!("return select(2, pcall(function() local x = {call} end))");
            assert_eq!(eval(&code), format!("t:1: {expected}"), "{call}");
        }
        let deep = "local c = cjson.new() c.decode_max_depth(2) \
                    return select(2, pcall(c.decode, '[[[1]]]'))";
        assert_eq!(
            eval(deep),
            "Found too many nested data structures (3) at character 3"
        );
    }

    #[test]
    fn decodes() {
        let code = "local t = cjson.decode(' {\"a\": [1, 2.5, \"\\\\u00e9\\\\ud83d\\\\ude00\", null, \
                    true], \"b\": 0x10} ') \
                    return table.concat({t.a[1], t.a[2], t.a[3], tostring(t.a[4] == cjson.null), \
                    tostring(t.a[5]), t.b}, ',')";
        assert_eq!(eval(code), "1,2.5,\u{e9}\u{1f600},true,true,16");
        assert_eq!(
            eval("return tostring(cjson.decode('[1]\\0garbage')[1])"),
            "1"
        );
        assert_eq!(
            eval(
                "local a, b, c = cjson.encode_sparse_array(true, 3) return tostring(a)..','..b..','..c"
            ),
            "true,3,10"
        );
        assert_eq!(
            eval("return tostring(cjson.encode_invalid_numbers('null'))"),
            "null"
        );
    }
}
