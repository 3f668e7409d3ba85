//! The GEO searches (`georadiusGeneric` in `geo.c`): GEORADIUS, GEORADIUSBYMEMBER and their
//! `_RO` forms, GEOSEARCH and GEOSEARCHSTORE, option by option and error by error in Redis's
//! order (the source key is looked up first, then the centre and radius, then the options).
//!
//! A search reads the boxes of `hash::areas_by_shape` — at most nine score ranges, each walked
//! from its first entry (`count_before`, a descent of the zset's tree) while the scores stay
//! below the range's end — and keeps the points inside the shape, in the order met:
//!
//! ```text
//!  boxes:  centre, N, S, E, W, NE, NW, SE, SW   (zeroed ones skipped, and one equal to the
//!                                                box read just before it: Redis's dedup)
//!  each:   [align52(hash), align52(hash + 1))    min included, max excluded
//!  ANY:    stop as soon as COUNT points are kept (checked after each entry and before each box)
//! ```
//!
//! Then the points are sorted by distance (ASC, DESC; COUNT without ANY implies ASC) with the
//! sort Redis uses for that case (`order.rs`), cut to COUNT, and replied or stored. Only the
//! kept points are copied out of the set (their members into one buffer), so a search over a
//! large set costs the ranges' entries, not the set.

// Distances are compared exactly, as Redis compares them.
#![allow(clippy::float_cmp)]

use super::hash::{self, Bits, Shape, ShapeKind};
use super::order;
use super::{is_word, parse_box, parse_long_lat, parse_radius, reply_coords, reply_distance};
use crate::command::Ctx;
use crate::commands::args::{NOT_INTEGER, parse_i64};
use crate::commands::keys::keymiss;
use crate::notify::class;
use store::{ZSet, ZSetView};

/// Which command is searching (Redis's `RADIUS_*` and `GEOSEARCH*` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// GEORADIUS (`store`: not the `_RO` form).
    Coords {
        store: bool,
    },
    /// GEORADIUSBYMEMBER.
    Member {
        store: bool,
    },
    Search,
    SearchStore,
}

impl Form {
    fn is_search(self) -> bool {
        matches!(self, Form::Search | Form::SearchStore)
    }

    /// Whether STORE and STOREDIST take a key (the GEORADIUS forms that write).
    fn stores_by_option(self) -> bool {
        matches!(
            self,
            Form::Coords { store: true } | Form::Member { store: true }
        )
    }
}

pub fn georadius(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    search(ctx, args, Form::Coords { store: true });
}

pub fn georadius_ro(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    search(ctx, args, Form::Coords { store: false });
}

pub fn georadiusbymember(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    search(ctx, args, Form::Member { store: true });
}

pub fn georadiusbymember_ro(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    search(ctx, args, Form::Member { store: false });
}

pub fn geosearch(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    search(ctx, args, Form::Search);
}

pub fn geosearchstore(ctx: &mut Ctx<'_, '_>, args: &[&[u8]]) {
    search(ctx, args, Form::SearchStore);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// What the options say (`georadiusGeneric`'s locals).
#[derive(Debug)]
struct Options<'a> {
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    sort: Sort,
    any: bool,
    /// 0: no COUNT.
    count: i64,
    store: Option<&'a [u8]>,
    storedist: bool,
    frommember: bool,
    fromloc: bool,
    byradius: bool,
    bybox: bool,
}

/// The search as the source key, centre and options left it.
struct Request<'a> {
    src: &'a [u8],
    exists: bool,
    form: Form,
    shape: Shape,
}

fn search(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], form: Form) {
    let src = args[if form == Form::SearchStore { 2 } else { 1 }];
    // The source is looked up first: WRONGTYPE comes before any argument error.
    let Some(found) = ctx.read::<ZSet, _>(src, |_, _| ()) else {
        return;
    };
    let exists = found.is_some();
    if !exists {
        keymiss(ctx, src);
    }
    let mut req = Request {
        src,
        exists,
        form,
        shape: Shape {
            kind: ShapeKind::Radius(0.0),
            xy: [0.0, 0.0],
            conversion: 0.0,
        },
    };
    let Some(base) = centre(ctx, args, &mut req) else {
        return;
    };
    let Some(mut o) = parse_options(ctx, args, base, &mut req) else {
        return;
    };
    if form == Form::SearchStore {
        o.store = Some(args[1]);
    }
    if !options_agree(ctx, args, form, &o) {
        return;
    }
    if !exists {
        // No source: a destination is deleted (`del`, reply 0; an empty result sends no
        // event of its own, so none is named), else the empty array.
        return match o.store {
            Some(dst) => ctx.store_result(dst, 0, (class::ZSET, ""), |_, _| Ok(())),
            None => ctx.out.array_len(0),
        };
    }
    // COUNT alone asks for the nearest: ascending (not with ANY, which takes the first found).
    if o.count != 0 && o.sort == Sort::None && !o.any {
        o.sort = Sort::Asc;
    }
    run(ctx, &req, &o);
}

/// The centre and radius GEORADIUS and GEORADIUSBYMEMBER take before their options; returns the
/// index of the first option (Redis's `base_args`).
fn centre(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], req: &mut Request<'_>) -> Option<usize> {
    match req.form {
        Form::Coords { .. } => {
            req.shape.xy = parse_long_lat(ctx, &args[2..4])?;
            let (conversion, radius) = parse_radius(ctx, &args[4..6])?;
            req.shape.conversion = conversion;
            req.shape.kind = ShapeKind::Radius(radius);
            Some(6)
        }
        // No source: nothing to decode, but the options are still parsed (and their errors
        // replied) before the empty reply.
        Form::Member { .. } if !req.exists => Some(5),
        Form::Member { .. } => {
            req.shape.xy = member_position(ctx, req.src, args[2])?;
            let (conversion, radius) = parse_radius(ctx, &args[3..5])?;
            req.shape.conversion = conversion;
            req.shape.kind = ShapeKind::Radius(radius);
            Some(5)
        }
        Form::Search => Some(2),
        Form::SearchStore => Some(3),
    }
}

/// `longLatFromMember`: the position of `member` of the source, or the error replied.
fn member_position(ctx: &mut Ctx<'_, '_>, src: &[u8], member: &[u8]) -> Option<[f64; 2]> {
    let score = ctx.read::<ZSet, _>(src, |z, _| z.score(member))?;
    if let Some(s) = score.flatten() {
        return Some(hash::decode_score(s));
    }
    ctx.error("ERR could not decode requested zset member");
    None
}

/// Reads the options from `args[base..]`; `None` when an error was replied.
fn parse_options<'a>(
    ctx: &mut Ctx<'_, '_>,
    args: &[&'a [u8]],
    base: usize,
    req: &mut Request<'_>,
) -> Option<Options<'a>> {
    let mut o = Options {
        withdist: false,
        withhash: false,
        withcoord: false,
        sort: Sort::None,
        any: false,
        count: 0,
        store: None,
        storedist: false,
        frommember: false,
        fromloc: false,
        byradius: false,
        bybox: false,
    };
    let mut at = base;
    // Each turn consumes at least one argument.
    while at < args.len() {
        let left = args.len() - at - 1;
        at += 1 + if flag_option(args[at], &mut o) {
            0
        } else {
            valued_option(ctx, &args[at..], left, &mut o, req)?
        };
    }
    Some(o)
}

/// The options without a value; false when `arg` is none of them.
fn flag_option(arg: &[u8], o: &mut Options<'_>) -> bool {
    if is_word(arg, "withdist") {
        o.withdist = true;
    } else if is_word(arg, "withhash") {
        o.withhash = true;
    } else if is_word(arg, "withcoord") {
        o.withcoord = true;
    } else if is_word(arg, "any") {
        o.any = true;
    } else if is_word(arg, "asc") {
        o.sort = Sort::Asc;
    } else if is_word(arg, "desc") {
        o.sort = Sort::Desc;
    } else {
        return false;
    }
    true
}

/// The options with values (and GEOSEARCHSTORE's bare STOREDIST) at `args[0]`, `left` arguments
/// after it: returns how many values it consumed, `None` when an error was replied.
fn valued_option<'a>(
    ctx: &mut Ctx<'_, '_>,
    args: &[&'a [u8]],
    left: usize,
    o: &mut Options<'a>,
    req: &mut Request<'_>,
) -> Option<usize> {
    let arg = args[0];
    let form = req.form;
    let search = form.is_search();
    if is_word(arg, "count") && left >= 1 {
        let Some(count) = parse_i64(args[1]) else {
            ctx.error(NOT_INTEGER);
            return None;
        };
        if count <= 0 {
            ctx.error("ERR COUNT must be > 0");
            return None;
        }
        o.count = count;
        Some(1)
    } else if (is_word(arg, "store") || is_word(arg, "storedist"))
        && left >= 1
        && form.stores_by_option()
    {
        o.store = Some(args[1]);
        o.storedist = is_word(arg, "storedist");
        Some(1)
    } else if is_word(arg, "storedist") && form == Form::SearchStore {
        o.storedist = true;
        Some(0)
    } else if search {
        from_or_by(ctx, args, left, o, req)
    } else {
        ctx.syntax_error();
        None
    }
}

/// GEOSEARCH's FROMMEMBER, FROMLONLAT, BYRADIUS and BYBOX.
fn from_or_by(
    ctx: &mut Ctx<'_, '_>,
    args: &[&[u8]],
    left: usize,
    o: &mut Options<'_>,
    req: &mut Request<'_>,
) -> Option<usize> {
    let arg = args[0];
    if is_word(arg, "frommember") && left >= 1 && !o.fromloc {
        // Without a source there is nothing to decode; the reply is empty anyway.
        if req.exists {
            req.shape.xy = member_position(ctx, req.src, args[1])?;
        }
        o.frommember = true;
        Some(1)
    } else if is_word(arg, "fromlonlat") && left >= 2 && !o.frommember {
        req.shape.xy = parse_long_lat(ctx, &args[1..3])?;
        o.fromloc = true;
        Some(2)
    } else if is_word(arg, "byradius") && left >= 2 && !o.bybox {
        let (conversion, radius) = parse_radius(ctx, &args[1..3])?;
        req.shape.conversion = conversion;
        req.shape.kind = ShapeKind::Radius(radius);
        o.byradius = true;
        Some(2)
    } else if is_word(arg, "bybox") && left >= 3 && !o.byradius {
        let (conversion, width, height) = parse_box(ctx, &args[1..4])?;
        req.shape.conversion = conversion;
        req.shape.kind = ShapeKind::Box { width, height };
        o.bybox = true;
        Some(3)
    } else {
        ctx.syntax_error();
        None
    }
}

/// The checks after the options, in Redis's order; false when an error was replied.
fn options_agree(ctx: &mut Ctx<'_, '_>, args: &[&[u8]], form: Form, o: &Options<'_>) -> bool {
    let name = String::from_utf8_lossy(args[0]);
    let error = if o.store.is_some() && (o.withdist || o.withhash || o.withcoord) {
        format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if form == Form::SearchStore {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )
    } else if form.is_search() && !(o.frommember || o.fromloc) {
        format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}")
    } else if form.is_search() && !(o.byradius || o.bybox) {
        format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}")
    } else if o.any && o.count == 0 {
        "ERR the ANY argument requires COUNT argument".to_owned()
    } else {
        return true;
    };
    ctx.error(&error);
    false
}

/// One point found: where it is, how far (metres), its score, and its member in `Found::members`.
#[derive(Clone, Copy, Debug)]
struct Point {
    xy: [f64; 2],
    dist: f64,
    score: f64,
    member_at: usize,
    member_len: usize,
}

/// The points a search kept, in the order found (`geoArray`).
#[derive(Debug, Default)]
struct Found {
    points: Vec<Point>,
    members: Vec<u8>,
}

impl Found {
    /// `ga->used && limit && ga->used >= limit`: ANY has what it asked for.
    fn full(&self, limit: usize) -> bool {
        !self.points.is_empty() && limit != 0 && self.points.len() >= limit
    }

    fn member(&self, p: &Point) -> &[u8] {
        &self.members[p.member_at..p.member_at + p.member_len]
    }
}

/// `membersOfAllNeighbors`: the points inside the shape from each box's score range.
fn collect(z: ZSetView<'_>, boxes: &[Bits; 9], shape: &Shape, limit: usize) -> Found {
    let mut found = Found::default();
    let mut last_processed = 0;
    for (i, b) in boxes.iter().enumerate() {
        if b.is_zero() {
            continue;
        }
        // Redis compares with the last box it read, and not at all while that is the centre.
        if last_processed != 0 && *b == boxes[last_processed] {
            continue;
        }
        if found.full(limit) {
            break;
        }
        let (min, max) = b.score_range();
        collect_range(z, (min, max), shape, limit, &mut found);
        last_processed = i;
    }
    found
}

/// `geoGetPointsInRange`: the entries with `min <= score < max` inside the shape.
fn collect_range(
    z: ZSetView<'_>,
    (min, max): (f64, f64),
    shape: &Shape,
    limit: usize,
    found: &mut Found,
) {
    let first = z.count_before(|s, _| s >= min);
    for (score, member) in z.iter(first, false) {
        if score >= max {
            break;
        }
        let xy = hash::decode_score(score);
        if let Some(dist) = hash::within(shape, xy) {
            found.points.push(Point {
                xy,
                dist,
                score,
                member_at: found.members.len(),
                member_len: member.len(),
            });
            found.members.extend_from_slice(member);
        }
        if found.full(limit) {
            break;
        }
    }
}

/// `sort_gp_asc` / `sort_gp_desc`.
fn by_distance(desc: bool) -> impl Fn(&Point, &Point) -> i32 {
    move |a, b| {
        let c = if a.dist > b.dist {
            1
        } else if a.dist == b.dist {
            0
        } else {
            -1
        };
        if desc { -c } else { c }
    }
}

/// Searches the existing source, sorts, and replies or stores.
fn run(ctx: &mut Ctx<'_, '_>, req: &Request<'_>, o: &Options<'_>) {
    let shape = req.shape;
    let boxes = hash::areas_by_shape(&shape);
    let limit = if o.any { o.count as usize } else { 0 };
    let Some(Some(mut found)) =
        ctx.read::<ZSet, _>(req.src, |z, _| collect(z, &boxes, &shape, limit))
    else {
        // Looked up at the start of the command: it is there and a zset.
        return ctx.out.array_len(0);
    };
    if found.points.is_empty() && o.store.is_none() {
        return ctx.out.array_len(0);
    }
    let total = found.points.len();
    let count = o.count as usize;
    let returned = if count == 0 || total < count {
        total
    } else {
        count
    };
    if o.sort != Sort::None {
        let cmp = by_distance(o.sort == Sort::Desc);
        if returned == total {
            order::merge_sort(&mut found.points, &mut Vec::new(), &cmp);
        } else {
            order::partial_sort(&mut found.points, 0, returned - 1, &cmp);
        }
    }
    found.points.truncate(returned);
    match o.store {
        Some(dst) => store(ctx, dst, req, o, &found),
        None => reply(ctx, &shape, o, &found),
    }
}

/// The search's reply: members, each with its distance, hash and coordinates when asked.
fn reply(ctx: &mut Ctx<'_, '_>, shape: &Shape, o: &Options<'_>, found: &Found) {
    let extras = usize::from(o.withdist) + usize::from(o.withhash) + usize::from(o.withcoord);
    let out = &mut ctx.out;
    out.array_len(found.points.len());
    for p in &found.points {
        if extras > 0 {
            out.array_len(extras + 1);
        }
        out.bulk(found.member(p));
        if o.withdist {
            reply_distance(out, p.dist / shape.conversion);
        }
        if o.withhash {
            out.integer(hash::truncate_i64(p.score));
        }
        if o.withcoord {
            reply_coords(out, p.xy);
        }
    }
}

/// STORE, STOREDIST and GEOSEARCHSTORE: the results become the zset at `dst` (scores: the
/// geohash, or the distance in the request's unit), or `dst` is deleted when there are none.
fn store(ctx: &mut Ctx<'_, '_>, dst: &[u8], req: &Request<'_>, o: &Options<'_>, found: &Found) {
    let event = if req.form.is_search() {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    let score = |p: &Point| {
        if o.storedist {
            p.dist / req.shape.conversion
        } else {
            p.score
        }
    };
    let count = found.points.len();
    let longest = found.points.iter().map(|p| p.member_len).max().unwrap_or(0);
    ctx.store_result(dst, count, (class::ZSET, event), |shard, db| {
        let mut b = shard.zset_builder(count, longest)?;
        for p in &found.points {
            b.insert(found.member(p), score(p))?;
        }
        b.finish(db, dst, None)
    });
}
