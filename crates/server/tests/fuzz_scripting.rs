//! The `script_eval` fuzz target on stable: replays every file of `fuzz/corpus/script_eval/`
//! through `server::scripting::fuzz::fuzz_check`, then seeded mutations of the seeds (bytes
//! flipped or replaced, Lua tokens inserted, files cut, spliced into one another), so CI checks
//! that no script text or argument crashes, hangs or wedges the server, without nightly or
//! libFuzzer.
//!
//! The seeds are defined here (`SEEDS`), each with the mode byte and numkeys byte that
//! `fuzz_check` decodes (see `crates/server/src/scripting/fuzz.rs`), so a reader sees what each
//! one covers. `DENSEKV_WRITE_CORPUS=1 cargo test -p server --test fuzz_scripting` writes them
//! to the corpus directory; the replay checks that every seed there matches its definition.
//! `DENSEKV_FUZZ_MUTATIONS=n` runs n mutations instead of `MUTATIONS`, `DENSEKV_SEED=n` other
//! ones; `DENSEKV_FUZZ_INPUT=path` replays that one file instead of the corpus (a libFuzzer
//! crash artifact, say).
//!
//! Three seeds are the bugs the first runs found, kept as regressions:
//!
//! * `98-unpack-huge-range`, `EVAL "return {pcall(unpack, {}, 0, 2147483647)}" 0` was a SIGSEGV
//!   (a signed overflow in Lua 5.1's `luaB_unpack`; `vendor/lua-src/PATCHES.md`, 3). Redis
//!   answers `too many results to unpack`, and so does densekv now.
//! * `99-pattern-recursion`, `string.find(string.rep('a', 50000), string.rep('a?', 50000))`
//!   overflowed a 2 MiB I/O thread stack (Lua's `match` recursion; PATCHES.md, 4, and the
//!   16 MiB `IO_THREAD_STACK`).
//! * `39-memory-limit`: after a script reached the VM's 1 GiB limit, every later script that
//!   allocated a few megabytes failed with `not enough memory` (the failed script's garbage
//!   was never collected); a VM that ends a run large is now collected in full.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use server::scripting::fuzz::fuzz_check;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

/// Mutations per run: about 30 s in `--profile ci` on a 2-core machine (most inputs take a
/// millisecond; mutants of the looping seeds take the watchdog's 60 ms, a library that loops
/// at load time FUNCTION LOAD's 500 ms).
const MUTATIONS: usize = 4000;

// The mode byte (see fuzz.rs): entry, then option bits.
const EVAL: u8 = 0;
const EVALSHA: u8 = 1;
const FUNCTION: u8 = 2;
const LIBRARY: u8 = 3;
const RO: u8 = 1 << 2;
const RESP3: u8 = 1 << 3;
const FLAGS_EMPTY: u8 = 1 << 4;
const FLAGS_NO_WRITES: u8 = 2 << 4;
const FLAGS_ALLOW_OOM: u8 = 3 << 4;
const TWICE: u8 = 1 << 6;
const MULTI: u8 = 1 << 7;

/// One seed: a name for its file, the mode byte, the numkeys byte, the text, the arguments.
struct Seed {
    name: &'static str,
    mode: u8,
    numkeys: u8,
    text: &'static str,
    args: &'static [&'static [u8]],
}

impl Seed {
    fn bytes(&self) -> Vec<u8> {
        let mut bytes = vec![self.mode, self.numkeys];
        bytes.extend_from_slice(self.text.as_bytes());
        for arg in self.args {
            bytes.push(0);
            bytes.extend_from_slice(arg);
        }
        bytes
    }
}

macro_rules! seeds {
    ($( $name:literal, $mode:expr, $numkeys:expr, $text:expr, [$($arg:expr),* $(,)?]; )*) => {
        &[$( Seed { name: $name, mode: $mode, numkeys: $numkeys, text: $text, args: &[$($arg),*] }, )*]
    };
}

static SEEDS: &[Seed] = seeds! {
    "return-types", EVAL, 0,
        "return {1, 'two', 3.99, true, false, nil, {err='E1'}, {ok='fine'}, -0.5, {}}", [];
    "return-types-resp3", EVAL | RESP3 | TWICE, 0,
        "return {1, 'two', 3.99, true, false, {err='E1'}, {ok='fine'}, {1, {2, {3}}}}", [];
    "setresp3-returns", EVAL | RESP3, 0,
        "redis.setresp(3)\nreturn {{map={a=1, b={set={x=true}}}}, {double=3.5}, {big_number='-123456789012345678901234567890'}, {verbatim_string={format='txt', string='v'}}, {double=0/0}, {set={}}, {map={}}}", [];
    "setresp3-returns-resp2-caller", EVAL, 0,
        "redis.setresp(3)\nreturn {{map={a=1}}, {double=-1/0}, {big_number='12'}, {verbatim_string={format='txt', string='a\\r\\nb'}}}", [];
    "setresp3-calls", EVAL | RESP3, 1,
        "redis.setresp(3)\nredis.call('hset', KEYS[1], 'f', 'v')\nredis.call('zadd', 'z', 1.5, 'm')\nredis.call('sadd', 's', 'a', 'b')\nreturn {redis.call('hgetall', KEYS[1]), redis.call('zscore', 'z', 'm'), redis.call('smembers', 's'), redis.call('get', 'missing'), redis.call('lolwut', 'version', '5'), redis.call('info', 'keyspace')}", [b"h"];
    "setresp-bad", EVAL, 0,
        "local r = {}\nfor _, v in ipairs({1, 4, -1, 'x', 2.5}) do r[#r + 1] = tostring(select(2, pcall(redis.setresp, v))) end\nr[#r + 1] = tostring(select(2, pcall(redis.setresp)))\nreturn r", [];
    "call-good", EVAL, 1,
        "redis.call('set', KEYS[1], ARGV[1])\nredis.call('rpush', 'l', ARGV[1], 1, 2.5)\nreturn {redis.call('get', KEYS[1]), redis.call('lrange', 'l', 0, -1), redis.call('incr', 'n'), redis.call('ttl', KEYS[1])}", [b"k", b"v"];
    "call-unknown-command", EVAL, 0,
        "return redis.call('nosuchcommand', 1, 2)", [];
    "call-wrong-arity", EVAL, 0, "return redis.call('get')", [];
    "call-bad-arguments", EVAL, 0,
        "local r = {}\nfor _, f in ipairs({function() return redis.call() end, function() return redis.call('get', {}) end, function() return redis.call('get', nil) end, function() return redis.call(true) end, function() return redis.pcall() end}) do r[#r + 1] = tostring(select(2, pcall(f))) end\nreturn r", [];
    "pcall-errors", EVAL, 0,
        "redis.call('set', 'k', 'v')\nlocal a = redis.pcall('lpush', 'k', 'x')\nlocal b = redis.pcall('incr', 'k')\nlocal c = redis.pcall('nosuch')\nreturn {a, b, c, type(a), a.err}", [];
    "call-error-uncaught", EVAL | MULTI, 0,
        "redis.call('set', 'k', 'v')\nreturn redis.call('lpush', 'k', 'x')", [];
    "call-not-allowed", EVAL, 0,
        "local r = {}\nfor _, c in ipairs({{'eval', 'return 1', '0'}, {'multi'}, {'config', 'set', 'maxmemory', '1'}, {'shutdown'}, {'debug', 'sleep', '0'}, {'script', 'flush'}, {'function', 'flush'}, {'subscribe', 'c'}, {'client', 'pause', '10000'}, {'save'}}) do r[#r + 1] = redis.pcall(unpack(c)) end\nreturn r", [];
    "call-blocking", EVAL, 2,
        "return {redis.call('blpop', KEYS[1], 0), redis.call('brpoplpush', KEYS[1], KEYS[2], 0), redis.call('bzpopmin', KEYS[1], 0), redis.call('blmpop', 0, 1, KEYS[1], 'left')}", [b"l1", b"l2"];
    "call-number-arguments", EVAL | TWICE, 0,
        "redis.call('set', 'a', 1/0)\nredis.call('set', 'b', 0/0)\nredis.call('set', 'c', 2^63)\nredis.call('set', 'd', -0.1)\nlocal r = redis.pcall('incrbyfloat', 'e', 1e308)\nlocal s = redis.pcall('incrbyfloat', 'e', 1e308)\nreturn {redis.call('mget', 'a', 'b', 'c', 'd'), r, s}", [];
    "error-reply", EVAL, 0,
        "return redis.error_reply('MY code\\r\\nsecond line')", [];
    "status-reply", EVAL | RESP3, 0,
        "return redis.status_reply('fine\\nline\\r')", [];
    "reply-helpers-bad", EVAL, 0,
        "return {pcall(redis.error_reply), pcall(redis.error_reply, 1), pcall(redis.status_reply, {}), redis.error_reply(''), redis.status_reply('')}", [];
    "return-error-tables", EVAL, 0,
        "local r = {{err = {}}, {ok = 5}, {err = 'x\\r\\ny'}, {err = ''}, {ok = {}}, {err = 'CODE'}}\nreturn r", [];
    "raise-error-table", EVAL, 0, "error({err = 'CUSTOM raised'})", [];
    "raise-odd-errors", EVAL | TWICE, 0,
        "local r = {}\nfor _, e in ipairs({{}, 42, true, setmetatable({}, {__tostring = function() return 'meta' end}), {err = 5}, {err = {}}}) do r[#r + 1] = tostring(select(2, pcall(error, e))) end\nerror(nil)", [];
    "pcall-error-table", EVAL, 0,
        "local ok, e = pcall(error, {err = 'X inner'})\nlocal ok2, e2 = pcall(redis.call, 'nosuch')\nreturn {tostring(ok), type(e), e and e.err, tostring(ok2), type(e2)}", [];
    "error-in-error-handler", EVAL, 0,
        "return xpcall(function() error('a') end, function(e) error('b') end)", [];
    "cjson", EVAL, 0,
        "local v = cjson.decode(ARGV[1])\nreturn {cjson.encode(v), cjson.encode({1, 2, {a = cjson.null}}), cjson.encode('\\0\\r\\n\\127'), cjson.encode(1e308), cjson.encode(-0)}",
        [b"{\"a\":[1,2,{\"b\":null}],\"c\":1e400,\"d\":\"\\u00e9\\ud83d\\ude00\",\"e\":-0}"];
    "cjson-bad-input", EVAL, 0,
        "local r = {}\nfor _, s in ipairs({'[[[[', '{\"a\":}', '\"\\\\u12\"', '1e', 'nul', '', '[1,]', string.rep('[', 3000) .. string.rep(']', 3000), '{\"a\":1', '\"\\\\ud800\"', ARGV[1]}) do r[#r + 1] = tostring(select(2, pcall(cjson.decode, s))) end\nreturn r",
        [b"\xff\xfe\"\x01"];
    "cjson-encode-bad", EVAL, 0,
        "local deep = {}\nfor i = 1, 3000 do deep = {deep} end\nlocal cyc = {}\ncyc[1] = cyc\nlocal r = {}\nfor _, v in ipairs({deep, cyc, {[1] = 1, [100000] = 2}, {[true] = 1}, 1/0, 0/0, function() end}) do r[#r + 1] = tostring(select(2, pcall(cjson.encode, v))) end\nr[#r + 1] = tostring(select(2, pcall(cjson.encode_max_depth, -1)))\nr[#r + 1] = tostring(select(2, pcall(cjson.encode_number_precision, 99)))\nr[#r + 1] = tostring(select(2, pcall(cjson.encode_keep_buffer, 'x')))\nreturn r", [];
    "cmsgpack", EVAL, 0,
        "local p = cmsgpack.pack({1, 2, {a = 1, b = {true, false}}}, 'x', 1.5, -2^40, string.rep('s', 70000))\nlocal n = select('#', cmsgpack.unpack(p))\nreturn {n, #p, cmsgpack.unpack_one(p), cmsgpack.unpack_limit(p, 2, 0)}", [];
    "cmsgpack-bad-input", EVAL, 0,
        "local r = {}\nfor _, s in ipairs(ARGV) do r[#r + 1] = tostring(select(2, pcall(cmsgpack.unpack, s))) end\nr[#r + 1] = tostring(select(2, pcall(cmsgpack.unpack_limit, ARGV[1], -1, 99)))\nr[#r + 1] = tostring(select(2, pcall(cmsgpack.pack)))\nreturn r",
        [b"\xdd\xff\xff\xff\xff", b"\xdb\xff\xff\xff\xff", b"\xc1", b"\x92\x01", b"\xde\x00\x02\xa1k", b"\xcb\x7f\xf0", b"\xd9"];
    "cmsgpack-deep", EVAL, 0,
        "local deep = {}\nfor i = 1, 2000 do deep = {deep} end\nlocal p = cmsgpack.pack(deep)\nreturn {#p, pcall(cmsgpack.unpack, string.rep('\\145', 100000))}", [];
    "struct", EVAL, 0,
        "local p = struct.pack('>i4 <h Bc0 s d', -7, 300, 3, 'abc', 'zero', 2.5)\nreturn {#p, struct.unpack('>i4 <h Bc0 s d', p), struct.size('>i4 <h b')}", [];
    "struct-bad-input", EVAL, 0,
        "local r = {}\nfor _, f in ipairs({function() return struct.unpack('i99', 'abc') end, function() return struct.pack('c0', 'x') end, function() return struct.size('!17') end, function() return struct.unpack('c2000000000', 'x') end, function() return struct.unpack('>i4', 'ab', 100) end, function() return struct.pack('s', {}) end, function() return struct.unpack('i', 'abcd', -5) end, function() return struct.size('s') end, function() return struct.pack(('i'):rep(1000), 1) end}) do r[#r + 1] = tostring(select(2, pcall(f))) end\nreturn r", [];
    "bit", EVAL, 0,
        "return {bit.tobit(2^32 + 5), bit.tohex(-1, -100), bit.tohex(255, 2), bit.lshift(1, 100), bit.arshift(-256, 4), bit.rol(1, -1), bit.bswap(0x12345678), bit.band(), bit.bor(1, 2, 4, 8), tostring(select(2, pcall(bit.tobit, 'x'))), tostring(select(2, pcall(bit.tohex, {})))}", [];
    "deep-recursion", EVAL, 0,
        "local function f(n) return 1 + f(n + 1) end\nreturn f(1)", [];
    "deep-pcall-recursion", EVAL, 0,
        "local function f(n) return pcall(f, n + 1) end\nreturn {f(1)}", [];
    "deep-metamethod-recursion", EVAL, 0,
        "local t = setmetatable({}, {__index = function(t, k) return t[k .. 'x'] end})\nreturn t.a", [];
    "deep-concat-and-compare", EVAL, 0,
        "local m = setmetatable({}, {__concat = function(a, b) return a .. b end, __lt = function(a, b) return a < b end})\nreturn {pcall(function() return m .. 'x' end), pcall(function() return m < m end)}", [];
    "return-deep-table", EVAL | RESP3, 0,
        "local t = {}\nfor i = 1, 3000 do t = {t, i} end\nreturn t", [];
    "return-wide-table", EVAL, 0,
        "local t = {}\nfor i = 1, 100000 do t[i] = i end\nreturn t", [];
    "string-rep-huge", EVAL, 0,
        "local r = {pcall(string.rep, 'x', 2^31), pcall(string.rep, 'x', -1), pcall(string.rep, '', 2^40)}\nlocal s = string.rep('ab', 2^20)\nreturn {#s, r[1], r[3]}", [];
    "memory-limit", EVAL, 0,
        "local s = string.rep('x', 2^20)\nlocal t = {}\nfor i = 1, 2000 do t[i] = s .. i end\nreturn #t", [];
    "infinite-loop", EVAL, 0, "while true do end", [];
    "infinite-loop-pcall", EVAL, 0,
        "while true do pcall(function() while true do end end) end", [];
    "infinite-loop-coroutine", EVAL, 0,
        "local co = coroutine.wrap(function() while true do coroutine.yield(1) end end)\nwhile true do co() end", [];
    "infinite-loop-readonly", EVAL | RO | FLAGS_NO_WRITES, 1,
        "local n = 0\nwhile true do n = n + #redis.call('get', KEYS[1]) end", [b"k"];
    "write-then-loop", EVAL | TWICE, 1,
        "redis.call('set', KEYS[1], 'written')\nwhile true do end", [b"k"];
    "function-loop", FUNCTION, 0, "local n = 0\nwhile true do n = n + 1 end", [];
    "function-write-then-loop", FUNCTION | MULTI, 1,
        "redis.call('incr', KEYS[1])\nwhile true do end", [b"counter"];
    "library-load-loop", LIBRARY, 0, "while true do end", [];
    "readonly-tables", EVAL, 0,
        "local r = {}\nfor _, f in ipairs({function() x = 1 end, function() redis.call = nil end, function() string.len = nil end, function() rawset(_G, 'y', 1) end, function() setmetatable(_G, nil) end, function() getmetatable('').__index = nil end, function() table.insert(cjson, 1) end, function() math.pi = 3 end, function() _G.KEYS = {} end, function() KEYS[1] = 'x' end}) do r[#r + 1] = tostring(select(2, pcall(f))) end\nreturn r", [b"k"];
    "globals", EVAL | TWICE, 0,
        "local r = {}\nfor _, name in ipairs({'undefined_global', 'os', 'io', 'require', 'loadfile', 'dofile', 'print', 'debug', 'newproxy', 'getfenv', 'module', 'package'}) do r[#r + 1] = tostring(select(2, pcall(function() return _G[name] end))) end\nreturn r", [];
    "undefined-global", FUNCTION, 0, "return undefined_global", [];
    "coroutines", EVAL, 0,
        "local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) error({err = 'IN co ' .. b}) end)\nlocal r = {coroutine.resume(co, 1)}\nlocal s = {coroutine.resume(co, 5)}\nreturn {r[2], tostring(s[1]), type(s[2]), coroutine.status(co), pcall(coroutine.resume, co)}", [];
    "yield-at-top-level", EVAL, 0, "coroutine.yield(1)", [];
    "yield-from-call", EVAL, 0,
        "return {pcall(coroutine.yield, 1), coroutine.running()}", [];
    "string-format", EVAL, 0,
        "local r = {string.format('%d %s %q %5.2f %x %c %g', 3.7, 'x', '\\0\\r\\n\"', 1/3, 255, 65, 1e300), string.format('%.99f', 1e308), string.format('%99d', -1), string.format('%q', string.rep('\\0', 10))}\nfor _, f in ipairs({'%', '%10000d', '%z', '%d', '%s %s', '%-+ #0123d'}) do r[#r + 1] = tostring(select(2, pcall(string.format, f, 1))) end\nr[#r + 1] = tostring(select(2, pcall(string.format, '%s', {})))\nreturn r", [];
    "string-patterns", EVAL, 0,
        "local r = {string.find('abc', 'b', -100), string.gsub('hello world', '(o)', '[%1]'), string.match('key:123', '(%a+):(%d+)'), string.rep('x', 3, ',')}\nfor _, p in ipairs({'%', '[a', '(()', '%b', '%f', '(%1)', string.rep('(', 40) .. 'x' .. string.rep(')', 40)}) do r[#r + 1] = tostring(select(2, pcall(string.find, 'xxx', p))) end\nreturn r", [];
    "string-misc", EVAL, 0,
        "return {pcall(string.char, 256), string.byte('abc', -100, 100), ('x'):rep(3), string.sub('abc', 2^53, -2^53), tostring(tonumber('0x')), tostring(tonumber('zz', 36)), pcall(tonumber, '1', 1), tostring(2^63), tostring(-0.0), string.upper(string.rep('\\255', 10))}", [];
    "table-functions", EVAL, 0,
        "local r = {pcall(unpack, {}, 1, 1e8), pcall(table.concat, {1, {}, 3}), pcall(table.sort, {3, 1, 2}, function(a, b) return true end), table.concat({}, 'x', 1, 0), select('#', unpack({1, 2, nil, 4}, 1, 4)), pcall(table.insert, {}, 1, 2, 3), table.getn({1, 2}), pcall(select, -1)}\nreturn r", [];
    "math", EVAL | TWICE, 0,
        "math.randomseed(ARGV[1])\nreturn {math.random(), math.random(10), pcall(math.random, 5, 1), pcall(math.random, 1, 2, 3), math.floor(-0.5), math.huge, math.fmod(1, 0), math.max(1, 0/0)}", [b"42"];
    "loadstring", EVAL, 0,
        "local f = loadstring('return 1 + ...')\nlocal r = {f(1), pcall(loadstring, 'return (')}\nlocal ok, dumped = pcall(string.dump, function() return 1 end)\nif ok then r[#r + 1] = tostring(select(2, pcall(loadstring, dumped))) end\nreturn r", [];
    "loadstring-bytecode-mutated", EVAL, 0,
        "local ok, d = pcall(string.dump, function(a) return a + 1 end)\nif not ok then return d end\nlocal r = {}\nfor i = 1, #d do local m = d:sub(1, i - 1) .. string.char((d:byte(i) + 37) % 256) .. d:sub(i + 1) local f = loadstring(m) if f then r[#r + 1] = tostring(select(2, pcall(f, 1))) end end\nreturn #r", [];
    "redis-helpers", EVAL, 0,
        "redis.log(redis.LOG_WARNING, 'fuzz seed', 1, {})\nreturn {redis.sha1hex(''), redis.sha1hex(ARGV[1]), pcall(redis.sha1hex), pcall(redis.log, 99, 'x'), pcall(redis.log), redis.REDIS_VERSION, redis.REDIS_VERSION_NUM, pcall(redis.set_repl, 99), redis.set_repl(redis.REPL_NONE), redis.replicate_commands(), redis.breakpoint(), redis.debug('x'), redis.acl_check_cmd('get', 'x'), pcall(redis.acl_check_cmd, 'nosuch'), pcall(redis.acl_check_cmd)}", [b"\xff\x00"];
    "keys-and-args", EVAL, 3,
        "return {KEYS, ARGV, #KEYS, #ARGV, KEYS[4], ARGV[0]}", [b"k1", b"k2", b"k3", b"a1", b"", b"a3"];
    "numkeys-negative", EVAL, 0xff, "return 1", [b"a"];
    "numkeys-not-a-number", EVAL, 0xfe, "return 1", [];
    "numkeys-overflow", EVAL, 0xfd, "return 1", [];
    "numkeys-too-many", EVAL, 9, "return 1", [b"a"];
    "evalsha", EVALSHA | TWICE, 1, "return redis.call('incr', KEYS[1])", [b"n"];
    "evalsha-ro-write", EVALSHA | RO, 1, "return redis.call('set', KEYS[1], 'x')", [b"k"];
    "eval-ro-write", EVAL | RO, 0, "return redis.call('del', 'k')", [];
    "no-writes-flag-write", EVAL | FLAGS_NO_WRITES, 0, "return redis.call('set', 'k', 'v')", [];
    "allow-oom-flags", EVAL | FLAGS_ALLOW_OOM | RESP3, 0, "return redis.call('set', 'k', 'v')", [];
    "shebang-in-text", EVAL, 0, "#!lua flags=bogus,no-writes\nreturn 1", [];
    "shebang-other-engine", EVALSHA, 0, "#!python\nreturn 1", [];
    "shebang-empty-flags", EVAL | FLAGS_EMPTY, 0, "return redis.call('set', 'k', 'v')", [];
    "syntax-errors", EVAL, 0, "return (]] [[ unterminated", [];
    "binary-garbage", EVAL, 0, "\x1bLua\u{1}\u{2}\u{7f}return", [];
    "long-strings-and-comments", EVAL, 0,
        "--[==[ comment ]==]\nreturn [[a\nb]] .. [==[]]]==] .. '\\65\\066\\0677' .. \"\\z\"", [];
    "function-body", FUNCTION | RESP3, 1,
        "return {KEYS[1], ARGV[1], #KEYS, redis.setresp(3), redis.call('get', KEYS[1])}", [b"k", b"a"];
    "function-ro-write", FUNCTION | RO | FLAGS_NO_WRITES, 0, "return redis.call('set', 'k', 'v')", [];
    "function-allow-oom", FUNCTION | FLAGS_ALLOW_OOM | TWICE, 0, "return redis.call('set', 'k', 'v')", [];
    "function-empty-flags", FUNCTION | FLAGS_EMPTY, 0, "return 'x'", [];
    "function-breaks-out", FUNCTION, 0,
        "return 1 end) redis.register_function('g', function() return 2 end) local z = (function()", [];
    "library-register-forms", LIBRARY, 1,
        "redis.register_function('f', function(keys, args) return {keys[1], args[1]} end)\nredis.register_function{function_name = 'g', callback = function() return 1 end, flags = {'no-writes', 'allow-stale'}, description = 'd'}", [b"k", b"a"];
    "library-register-bad", LIBRARY, 0,
        "local r = {}\nfor _, a in ipairs({{'f', 1}, {{function_name = 'f'}}, {{callback = function() end}}, {'bad name!', function() end}, {{function_name = 'h', callback = function() end, flags = {'bogus'}}}, {{function_name = 'h', callback = function() end, extra = 1}}}) do r[#r + 1] = pcall(redis.register_function, unpack(a)) end\nredis.register_function('f', function() return r end)", [];
    "library-duplicate-function", LIBRARY, 0,
        "redis.register_function('f', function() return 1 end)\nredis.register_function('f', function() return 2 end)", [];
    "library-calls-at-load", LIBRARY, 0,
        "redis.call('set', 'k', 'v')\nredis.register_function('f', function() return 1 end)", [];
    "library-no-functions", LIBRARY, 0, "local x = 1", [];
    "library-globals-at-load", LIBRARY, 0,
        "local ok, e = pcall(function() return string.len end)\nredis.log(redis.LOG_NOTICE, tostring(e))\nredis.register_function('f', function() return {tostring(ok), redis.REDIS_VERSION, pcall(redis.register_function, 'g', function() end)} end)", [];
    "multi-eval-twice", EVAL | MULTI | TWICE | RESP3, 1,
        "return redis.call('incrby', KEYS[1], 2)", [b"n"];
    "multi-fcall-ro", FUNCTION | MULTI | RO | FLAGS_NO_WRITES, 0, "return redis.call('ping')", [];
    "select-and-swapdb", EVAL, 0,
        "redis.call('select', 5)\nredis.call('set', 'k', 'db5')\nredis.call('swapdb', 0, 5)\nredis.call('flushdb')\nreturn redis.call('dbsize')", [];
    "restore-garbage", EVAL, 1,
        "return {redis.pcall('restore', KEYS[1], 0, ARGV[1]), redis.pcall('restore', KEYS[1], 0, redis.call('dump', 'missing') or 'x')}", [b"k", b"\x00\x03abc\x0a\x00\xff\xff\xff\xff\xff\xff\xff\xff"];
    "sort-and-scan", EVAL | RESP3, 0,
        "redis.call('rpush', 'l', 3, 1, 2)\nreturn {redis.call('sort', 'l'), redis.call('scan', 0), redis.call('keys', '*'), redis.pcall('sort', 'l', 'by', 'nosort', 'get', '#', 'store', 'x')}", [];
    "bit-tohex-extremes", EVAL, 0,
        "return {bit.tohex(65, -2147483648), bit.tohex(65, 2147483647), bit.tohex(1, 0), bit.tohex(-1, 8), bit.tohex(2^53)}", [];
    "struct-size-overflow", EVAL, 0,
        "return {pcall(struct.pack, '>I2147483648', 1), pcall(struct.unpack, 'c18446744073709551615', 'x'), pcall(struct.pack, 'i17', 1), pcall(struct.pack, '!2147483648i', 1), pcall(struct.unpack, '>i4', ('x'):rep(4), 2^31)}", [];
    "cmsgpack-many-values", EVAL, 0,
        "local t = {}\nfor i = 1, 7990 do t[i] = i end\nreturn {pcall(cmsgpack.pack, unpack(t)), #cmsgpack.pack(t), #cmsgpack.unpack('\\220\\255\\255' .. string.rep('\\1', 65535)), select('#', cmsgpack.unpack(string.rep('\\1', 7990)))}", [];
    "many-results", EVAL, 0,
        "local t = {}\nfor i = 1, 7000 do t[i] = i end\nredis.call('rpush', 'L', unpack(t))\nreturn {#redis.call('lrange', 'L', 0, -1), pcall(unpack, {}, 1, 7999), pcall(redis.call, 'rpush', 'L', unpack(t, 1, 7990))}", [];
    "unpack-huge-range", EVAL, 0, "return {pcall(unpack, {}, 0, 2147483647)}", [];
    "pattern-recursion", EVAL, 0,
        "return string.find(string.rep('a', 50000), string.rep('a?', 50000))", [];
};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/script_eval")
}

fn seed_file_name(index: usize, seed: &Seed) -> String {
    format!("{index:02}-{}", seed.name)
}

/// Every corpus file (seeds and whatever a fuzzer added), in name order.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus directory {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("readable directory entry").path();
            let name = path.file_name().expect("a file name").to_string_lossy();
            (
                name.into_owned(),
                std::fs::read(&path).expect("readable corpus file"),
            )
        })
        .collect();
    files.sort();
    files
}

/// Names the input being checked when the check panics (the panic message shows the command,
/// not which corpus file or mutant sent it).
struct NameOnPanic<'a>(&'a str);

impl Drop for NameOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("while checking {}", self.0);
        }
    }
}

#[test]
fn replay_fuzz_corpus() {
    let dir = corpus_dir();
    if std::env::var_os("DENSEKV_WRITE_CORPUS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (index, seed) in SEEDS.iter().enumerate() {
            std::fs::write(dir.join(seed_file_name(index, seed)), seed.bytes()).unwrap();
        }
    }
    if let Some(path) = std::env::var_os("DENSEKV_FUZZ_INPUT") {
        let bytes = std::fs::read(&path).expect("readable input file");
        return fuzz_check(&bytes);
    }
    let files = corpus();
    for (index, seed) in SEEDS.iter().enumerate() {
        let name = seed_file_name(index, seed);
        let found = files.iter().find(|(file, _)| *file == name);
        assert_eq!(
            found.map(|(_, bytes)| bytes),
            Some(&seed.bytes()),
            "corpus file {name} differs from its seed: rerun with DENSEKV_WRITE_CORPUS=1"
        );
    }
    let started = Instant::now();
    let mut failed = Vec::new();
    for (name, bytes) in &files {
        let one = Instant::now();
        if std::panic::catch_unwind(|| fuzz_check(bytes)).is_err() {
            // Straight to stderr: a later file may crash the process, and captured output with it.
            let _ = writeln!(std::io::stderr(), "corpus file {name} failed");
            failed.push(name.as_str());
        }
        if one.elapsed().as_millis() > 300 {
            eprintln!("{name}: {} ms", one.elapsed().as_millis());
        }
    }
    eprintln!(
        "{} corpus files in {} ms",
        files.len(),
        started.elapsed().as_millis()
    );
    assert!(failed.is_empty(), "corpus files failed: {failed:?}");
    assert!(files.len() >= 30, "only {} corpus files found", files.len());
}

/// Pieces of Lua a mutation inserts: the tokens that turn a script into a different valid
/// one more often than random bytes do.
const TOKENS: &[&[u8]] = &[
    b" end ",
    b"return ",
    b"redis.call(",
    b"redis.pcall(",
    b"nil",
    b"..",
    b"2^53",
    b"{",
    b"}",
    b"(",
    b")",
    b"function() ",
    b"-1",
    b"1e309",
    b"0/0",
    b"#",
    b"KEYS[1]",
    b"ARGV",
    b"pcall(",
    b"error(",
    b"coroutine.yield(",
    b"'",
    b"\"",
    b"[[",
    b"\\",
    b"\n",
    b"local x = ",
    b"=",
    b"cjson.decode(",
    b"cmsgpack.unpack(",
    b"struct.unpack(",
    b"redis.setresp(3) ",
    b"{err=",
    b"string.rep('x', 99999)",
    b"for i = 1, 3 do ",
    b"\0",
];

/// One mutant of `bytes`: one to four edits, `other` (another seed) supplying splices.
fn mutate(rng: &mut SmallRng, bytes: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let at = rng.gen_range(0..=out.len());
        match rng.gen_range(0..6) {
            0 if at < out.len() => out[at] ^= 1 << rng.gen_range(0..8),
            1 if at < out.len() => out[at] = rng.r#gen(),
            2 => out.truncate(at.max(2)),
            3 => {
                let token = TOKENS[rng.gen_range(0..TOKENS.len())];
                out.splice(at..at, token.iter().copied());
            }
            4 if !other.is_empty() => {
                let from = rng.gen_range(0..other.len());
                let to = (from + rng.gen_range(1..64)).min(other.len());
                out.splice(at..at, other[from..to].iter().copied());
            }
            _ => {
                let to = (at + rng.gen_range(1..32)).min(out.len());
                let copy = out[at..to].to_vec();
                out.splice(at..at, copy);
            }
        }
    }
    out
}

/// Seeds whose mutants would mostly cost half a second each (FUNCTION LOAD's own timeout, a
/// gigabyte of allocations): replayed, not mutated.
const SLOW_TO_MUTATE: &[&str] = &["library-load-loop", "memory-limit"];

#[test]
fn seeded_mutations_never_crash_or_wedge_the_server() {
    let seeds: Vec<Vec<u8>> = corpus()
        .into_iter()
        .filter(|(name, _)| !SLOW_TO_MUTATE.iter().any(|skip| name.ends_with(skip)))
        .map(|(_, bytes)| bytes)
        .collect();
    assert!(!seeds.is_empty());
    let count = std::env::var("DENSEKV_FUZZ_MUTATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(MUTATIONS);
    let rng_seed = std::env::var("DENSEKV_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0x5c41_97e0);
    let mut rng = SmallRng::seed_from_u64(rng_seed);
    let started = Instant::now();
    for _ in 0..count {
        let seed = &seeds[rng.gen_range(0..seeds.len())];
        let other = &seeds[rng.gen_range(0..seeds.len())];
        let mutant = mutate(&mut rng, seed, other);
        let name = format!("mutant {}", String::from_utf8_lossy(&mutant).escape_debug());
        let _named = NameOnPanic(&name);
        fuzz_check(&mutant);
    }
    eprintln!("{count} mutations in {} ms", started.elapsed().as_millis());
}
