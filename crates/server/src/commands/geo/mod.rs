//! GEO commands (Redis's `geo.c`): points stored in sorted sets, each member's score the 52-bit
//! geohash of its position (`hash.rs`), so a GEO key is an ordinary zset (ZRANGE, ZREM and the
//! rest work on it, and TYPE says `zset`). Here GEOADD, GEODIST, GEOHASH, GEOPOS, the argument
//! helpers they share with the searches, and the table; `search.rs` holds GEORADIUS,
//! GEORADIUSBYMEMBER (and their `_RO` forms), GEOSEARCH and GEOSEARCHSTORE; `order.rs` the sorts
//! that decide the order of results at equal distances.
//!
//! Replies, as `geo.c` writes them: a distance is `addReplyDoubleDistance`, a bulk string with
//! four decimals (`fixedpoint_d2string`) in RESP2 and RESP3 alike; a coordinate is
//! `addReplyHumanLongDouble` (`%.17Lf` trimmed: a bulk string in RESP2, a RESP3 double); a hash
//! (WITHHASH) is the score as an integer; GEOHASH is an 11-character standard geohash.
//!
//! Keyspace events and the append-only file: GEOADD is ZADD underneath, as in Redis (`new`,
//! then `zadd`), and is written to the file as the ZADD it became (`zadd key [opts] score
//! member …`, what Redis 7.0 propagates after `replaceClientCommandVector`). The STORE forms
//! send `georadiusstore` or `geosearchstore` (after `new`), or `del` when the result is empty
//! and the destination existed, and are written as themselves (they replay to the same
//! result). Every read of a missing key sends `keymiss`.
//!
//! Locks: GEORADIUS and GEORADIUSBYMEMBER may name a STORE key anywhere among their options,
//! so they lock every shard (`Keys::All`, as SORT does); their `_RO` forms and GEOSEARCH lock
//! their key's shard, GEOSEARCHSTORE its two keys'.

pub mod hash;
pub mod order;
pub mod search;

use super::args::is;
use super::keys::keymiss;
use crate::command::{ALL, Ctx, DENYOOM, K1, K12, READONLY, Spec, WRITE, table};
use crate::number::parse_score;
use resp::ReplyWriter;
use search::{
    georadius, georadius_ro, georadiusbymember, georadiusbymember_ro, geosearch, geosearchstore,
};
use store::ZSet;

pub static COMMANDS: &[Spec] = table! {
    // name                 arity, flags,           keys, member, handler
    "geoadd",               -5,    WRITE | DENYOOM, K1,   0,      geoadd;
    "geodist",              -4,    READONLY,        K1,   0,      geodist;
    "geohash",              -2,    READONLY,        K1,   0,      geohash;
    "geopos",               -2,    READONLY,        K1,   0,      geopos;
    "georadius",            -6,    WRITE | DENYOOM, ALL,  0,      georadius;
    "georadius_ro",         -6,    READONLY,        K1,   0,      georadius_ro;
    "georadiusbymember",    -5,    WRITE | DENYOOM, ALL,  0,      georadiusbymember;
    "georadiusbymember_ro", -5,    READONLY,        K1,   0,      georadiusbymember_ro;
    "geosearch",            -7,    READONLY,        K1,   0,      geosearch;
    "geosearchstore",       -8,    WRITE | DENYOOM, K12,  0,      geosearchstore;
};

// ---------------------------------------------------------------------------------------------
// Arguments

/// `strcasecmp(arg, word)`: Redis compares option words as C strings, so an argument matches
/// up to its first NUL byte (`"km\0x"` is `km`).
fn is_word(arg: &[u8], word: &str) -> bool {
    let c_string = arg.split(|&b| b == 0).next().unwrap_or_default();
    c_string.eq_ignore_ascii_case(word.as_bytes())
}

/// `getDoubleFromObjectOrReply`: the argument as a double (`string2d`), or the error `msg`
/// (Redis's default "value is not a valid float") replied.
fn parse_double(ctx: &mut Ctx<'_, '_>, arg: &[u8], msg: Option<&str>) -> Option<f64> {
    let v = parse_score(arg);
    if v.is_none() {
        ctx.error(msg.unwrap_or("ERR value is not a valid float"));
    }
    v
}

/// `extractLongLatOrReply`: longitude then latitude from `args[0..2]`, within the WGS84 limits.
fn parse_long_lat(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Option<[f64; 2]> {
    let lon = parse_double(ctx, args[0], None)?;
    let lat = parse_double(ctx, args[1], None)?;
    if !(hash::LONG_MIN..=hash::LONG_MAX).contains(&lon)
        || !(hash::LAT_MIN..=hash::LAT_MAX).contains(&lat)
    {
        ctx.error(&format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        ));
        return None;
    }
    Some([lon, lat])
}

/// `extractUnitOrReply`: metres per unit.
fn parse_unit(ctx: &mut Ctx<'_, '_>, arg: &[u8]) -> Option<f64> {
    let conversion = if is_word(arg, "m") {
        1.0
    } else if is_word(arg, "km") {
        1000.0
    } else if is_word(arg, "ft") {
        0.3048
    } else if is_word(arg, "mi") {
        1609.34
    } else {
        ctx.error("ERR unsupported unit provided. please use M, KM, FT, MI");
        return None;
    };
    Some(conversion)
}

/// `extractDistanceOrReply`: (metres per unit, radius) from `radius unit`.
fn parse_radius(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Option<(f64, f64)> {
    let radius = parse_double(ctx, args[0], Some("ERR need numeric radius"))?;
    if radius < 0.0 {
        ctx.error("ERR radius cannot be negative");
        return None;
    }
    Some((parse_unit(ctx, args[1])?, radius))
}

/// `extractBoxOrReply`: (metres per unit, width, height) from `width height unit`.
fn parse_box(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) -> Option<(f64, f64, f64)> {
    let width = parse_double(ctx, args[0], Some("ERR need numeric width"))?;
    let height = parse_double(ctx, args[1], Some("ERR need numeric height"))?;
    if height < 0.0 || width < 0.0 {
        ctx.error("ERR height or width cannot be negative");
        return None;
    }
    Some((parse_unit(ctx, args[2])?, width, height))
}

// ---------------------------------------------------------------------------------------------
// Replies

/// `fixedpoint_d2string(d, 4)`: `d` rounded to four decimals by `llrint(d * 10000)` (ties to
/// even; out of range or NaN is `i64::MIN` on x86-64, printed as its magnitude 2^63).
pub fn distance_text(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".to_owned();
    }
    let scaled = (d * 10_000.0).round_ties_even();
    let svalue = if scaled.is_nan()
        || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&scaled)
    {
        i64::MIN
    } else {
        scaled as i64
    };
    let sign = if svalue < 0 { "-" } else { "" };
    let value = svalue.unsigned_abs();
    format!("{sign}{}.{:04}", value / 10_000, value % 10_000)
}

/// `addReplyDoubleDistance`.
pub fn reply_distance(out: &mut ReplyWriter<'_>, d: f64) {
    out.bulk(distance_text(d).as_bytes());
}

/// GEOPOS's and WITHCOORD's pair: `addReplyHumanLongDouble` of each coordinate.
pub fn reply_coords(out: &mut ReplyWriter<'_>, [lon, lat]: [f64; 2]) {
    out.array_len(2);
    out.human_double(lon);
    out.human_double(lat);
}

// ---------------------------------------------------------------------------------------------
// GEOADD, GEODIST, GEOHASH, GEOPOS

/// GEOADD key [NX|XX] [CH] longitude latitude member …: checks every point, then runs ZADD with
/// the points' scores (`zadd key [opts] score member …`), which is also what the append-only
/// file gets, as Redis propagates the rewritten command.
pub fn geoadd(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let mut zadd: Vec<Vec<u8>> = vec![b"zadd".to_vec(), args[1].to_vec()];
    let (mut nx, mut xx) = (false, false);
    let mut at = 2;
    while let Some(opt) = args.get(at) {
        let word = if is_word(opt, "nx") {
            nx = true;
            "nx"
        } else if is_word(opt, "xx") {
            xx = true;
            "xx"
        } else if is_word(opt, "ch") {
            "ch"
        } else {
            break;
        };
        // ZADD reads its options whole: an option Redis took up to a NUL byte goes as the word.
        zadd.push(if is(opt, word) { opt } else { word.as_bytes() }.to_vec());
        at += 1;
    }
    if !(args.len() - at).is_multiple_of(3) || (xx && nx) {
        return ctx.syntax_error();
    }
    for point in args[at..].chunks(3) {
        let Some([lon, lat]) = parse_long_lat(ctx, point) else {
            return;
        };
        zadd.push(hash::score_of(lon, lat).to_string().into_bytes());
        zadd.push(point[2].to_vec());
    }
    let zadd: Vec<&[u8]> = zadd.iter().map(Vec::as_slice).collect();
    let dirty = ctx.effects.dirty.get();
    super::zset::zadd(ctx, &zadd);
    if ctx.effects.dirty.get() != dirty {
        ctx.propagate_as(&zadd);
    }
}

/// GEODIST key member1 member2 [unit]: the unit is checked before the key is looked up.
pub fn geodist(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let to_meter = match args.len() {
        5 => match parse_unit(ctx, args[4]) {
            Some(c) => c,
            None => return,
        },
        n if n > 5 => return ctx.syntax_error(),
        _ => 1.0,
    };
    let (a, b) = (args[2], args[3]);
    let found = ctx.read::<ZSet, _>(args[1], |z, out| match (z.score(a), z.score(b)) {
        (Some(s1), Some(s2)) => {
            let [x1, y1] = hash::decode_score(s1);
            let [x2, y2] = hash::decode_score(s2);
            reply_distance(out, hash::distance(x1, y1, x2, y2) / to_meter);
        }
        _ => out.null(),
    });
    if found == Some(None) {
        keymiss(ctx, args[1]);
        ctx.out.null();
    }
}

/// GEOHASH key member …: an 11-character geohash per member, null for a missing one.
pub fn geohash(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let members = &args[2..];
    let found = ctx.read::<ZSet, _>(args[1], |z, out| {
        out.array_len(members.len());
        for m in members {
            match z.score(m) {
                Some(s) => out.bulk(&hash::standard_geohash(s)),
                None => out.null(),
            }
        }
    });
    if found == Some(None) {
        keymiss(ctx, args[1]);
        ctx.out.array_len(members.len());
        for _ in members {
            ctx.out.null();
        }
    }
}

/// GEOPOS key member …: a (longitude, latitude) pair per member, a null array for a missing one.
pub fn geopos(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    let members = &args[2..];
    let found = ctx.read::<ZSet, _>(args[1], |z, out| {
        out.array_len(members.len());
        for m in members {
            match z.score(m) {
                Some(s) => reply_coords(out, hash::decode_score(s)),
                None => out.null_array(),
            }
        }
    });
    if found == Some(None) {
        keymiss(ctx, args[1]);
        ctx.out.array_len(members.len());
        for _ in members {
            ctx.out.null_array();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_print_like_fixedpoint_d2string() {
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(distance_text(-0.0), "0.0000");
        assert_eq!(distance_text(166_274.151_6), "166274.1516");
        assert_eq!(distance_text(0.000_06), "0.0001");
        assert_eq!(distance_text(0.000_04), "0.0000");
        assert_eq!(distance_text(0.01), "0.0100");
        assert_eq!(distance_text(12.5), "12.5000");
        assert_eq!(distance_text(f64::NAN), "-922337203685477.5808");
        assert_eq!(distance_text(-1.25), "-1.2500");
    }

    #[test]
    fn option_words_compare_as_c_strings() {
        assert!(is_word(b"KM", "km"));
        assert!(is_word(b"km\0junk", "km"));
        assert!(!is_word(b"kmx", "km"));
        assert!(!is_word(b"", "m"));
    }
}
