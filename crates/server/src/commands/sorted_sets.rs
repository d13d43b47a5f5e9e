//! Sorted-set commands: ZADD (NX/XX/GT/LT/CH/INCR), ZINCRBY, ZREM, ZSCORE, ZMSCORE, ZCARD,
//! ZCOUNT, ZRANK, ZRANGE (by rank, or BYSCORE with LIMIT; WITHSCORES) and ZRANGEBYSCORE. A
//! sorted set is a `'k'` record holding its member count, a `'m'` record per member holding
//! its score, and a `'r'` index record per member whose engine key sorts by score and then
//! member (see [`crate::keys`]): `ZSCORE` is one get, `ZRANGEBYSCORE` one range scan from its
//! minimum. Ranks are counted by walking the index (Redis keeps a skip list with spans; here
//! `ZRANK` and `ZRANGE` by rank cost a scan of the members before them). Reverse ranges
//! (`REV`, `ZREVRANGE...`) and lexicographic ones (`BYLEX`) are not implemented.

use super::{err, errors, int_arg, is, CmdError, CmdResult, Ctx};
use crate::keys::{self, Record, TYPE_ZSET};

/// Index records fetched per engine scan while walking a sorted set.
const CHUNK: usize = 1024;

/// The sorted-set record of `k`, `None` if absent, WRONGTYPE if `k` holds something else.
fn load_zset(ctx: &mut Ctx<'_>, k: &[u8]) -> Result<Option<Record>, CmdError> {
    match ctx.load(k)? {
        Some(r) if r.kind != TYPE_ZSET => err(errors::WRONGTYPE),
        r => Ok(r),
    }
}

fn damaged<T>() -> Result<T, CmdError> {
    err("ERR the sorted set's records are damaged")
}

/// A score argument (`1.5`, `-3`, `inf`, `-inf`, `1e3`); NaN is refused, as Redis does.
fn parse_score(a: &[u8]) -> Result<f64, CmdError> {
    std::str::from_utf8(a)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| !s.is_nan())
        .ok_or_else(|| CmdError::Reply("ERR value is not a valid float".into()))
}

/// One end of a score range: `1.5` (inclusive), `(1.5` (exclusive), `-inf`, `+inf`.
fn parse_bound(a: &[u8]) -> Result<(f64, bool), CmdError> {
    let (text, exclusive) = match a.split_first() {
        Some((b'(', rest)) => (rest, true),
        _ => (a, false),
    };
    let s =
        parse_score(text).map_err(|_| CmdError::Reply("ERR min or max is not a float".into()))?;
    Ok((s, exclusive))
}

/// The engine-key range `[start, end)` of the index records of `k` with scores between `min`
/// and `max`; `None` if it is empty.
fn score_range(k: &[u8], min: (f64, bool), max: (f64, bool)) -> Option<(Vec<u8>, Vec<u8>)> {
    let at = |bits: u64| keys::score_entry(k, bits, &[]);
    let lo = keys::score_bits(min.0);
    let start = if min.1 {
        at(lo.checked_add(1)?)
    } else {
        at(lo)
    };
    let hi = keys::score_bits(max.0);
    let end = match (max.1, hi.checked_add(1)) {
        (true, _) => at(hi),
        (false, Some(next)) => at(next),
        (false, None) => keys::prefix_end(&keys::score_prefix(k))?,
    };
    (start < end).then_some((start, end))
}

/// The score of member `m` of sorted set `k`.
fn score_of(ctx: &Ctx<'_>, k: &[u8], m: &[u8]) -> Result<Option<f64>, CmdError> {
    match ctx.store.get(&keys::member(k, m))? {
        None => Ok(None),
        Some(v) => keys::decode_score(&v).map_or_else(damaged, |s| Ok(Some(s))),
    }
}

/// Gives member `m` of `k` the score `new` (replacing its index record if it had `old`).
fn set_score(ctx: &mut Ctx<'_>, k: &[u8], m: &[u8], old: Option<f64>, new: f64) -> CmdResult {
    let bits = keys::score_bits(new);
    if let Some(old) = old {
        ctx.store
            .delete(keys::score_entry(k, keys::score_bits(old), m))?;
    }
    ctx.store
        .put(keys::member(k, m), bits.to_be_bytes().to_vec())?;
    ctx.store.put(keys::score_entry(k, bits, m), Vec::new())?;
    Ok(())
}

/// Writes the record of `k` with `count` members (deleting it and its registry record when
/// none are left; registering it when `head` is `None`, a new set).
fn set_count(ctx: &mut Ctx<'_>, k: &[u8], head: Option<&Record>, count: u64) -> CmdResult {
    if count == 0 {
        ctx.store.delete(keys::key(k))?;
        ctx.store.delete(keys::registry(k))?;
        return Ok(());
    }
    if head.is_none() {
        ctx.store.put(keys::registry(k), Vec::new())?;
    }
    let rec = Record::zset(count, head.and_then(|h| h.expire_at));
    ctx.store.put(keys::key(k), rec.encode())?;
    Ok(())
}

/// ZADD's options.
#[derive(Debug, Default, Clone, Copy)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What [`add`] did.
struct Added {
    /// Members added.
    added: u64,
    /// Members whose score changed.
    changed: u64,
    /// The last member's score after the command (`None`: not added or updated).
    last: Option<f64>,
}

/// Adds or updates `(score, member)` pairs of sorted set `k` under `flags`.
fn add(
    ctx: &mut Ctx<'_>,
    k: &[u8],
    pairs: &[(f64, &[u8])],
    flags: AddFlags,
) -> Result<Added, CmdError> {
    let head = load_zset(ctx, k)?;
    // The index record is the longer of a member's two records: tag, length, key, score.
    let index_key_len = 1 + 4 + k.len() + 8;
    for (_, m) in pairs {
        ctx.check_size(index_key_len + m.len(), 8)?;
    }
    let mut done = Added {
        added: 0,
        changed: 0,
        last: None,
    };
    if head.is_none() && flags.xx {
        return Ok(done);
    }
    for &(score, m) in pairs {
        done.last = None;
        let old = match &head {
            None => None,
            // A member named twice in this command exists the second time (the store reads
            // this round's writes).
            Some(_) => score_of(ctx, k, m)?,
        };
        match old {
            Some(old) => {
                if flags.nx {
                    continue;
                }
                let new = if flags.incr { old + score } else { score };
                if new.is_nan() {
                    return err("ERR resulting score is not a number (NaN)");
                }
                if (flags.gt && new <= old) || (flags.lt && new >= old) {
                    continue;
                }
                if new != old {
                    set_score(ctx, k, m, Some(old), new)?;
                    done.changed += 1;
                }
                done.last = Some(new);
            }
            None => {
                if flags.xx {
                    continue;
                }
                set_score(ctx, k, m, None, score)?;
                done.added += 1;
                done.last = Some(score);
            }
        }
    }
    if done.added > 0 {
        let count = head.as_ref().map_or(0, Record::count) + done.added;
        set_count(ctx, k, head.as_ref(), count)?;
    }
    Ok(done)
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`: how many members
/// were added (with CH: added or changed); with INCR, the member's new score (null if a flag
/// stopped it).
pub fn zadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut f = AddFlags::default();
    let mut i = 2;
    while i < args.len() {
        let a = args[i];
        let flag = match () {
            _ if is(a, "nx") => &mut f.nx,
            _ if is(a, "xx") => &mut f.xx,
            _ if is(a, "gt") => &mut f.gt,
            _ if is(a, "lt") => &mut f.lt,
            _ if is(a, "ch") => &mut f.ch,
            _ if is(a, "incr") => &mut f.incr,
            _ => break,
        };
        *flag = true;
        i += 1;
    }
    let rest = &args[i..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return err(errors::SYNTAX);
    }
    if f.nx && f.xx {
        return err("ERR XX and NX options at the same time are not compatible");
    }
    if (f.gt && f.lt) || (f.nx && (f.gt || f.lt)) {
        return err("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if f.incr && rest.len() > 2 {
        return err("ERR INCR option supports a single increment-element pair");
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for sm in rest.chunks_exact(2) {
        pairs.push((parse_score(sm[0])?, sm[1]));
    }
    let done = add(ctx, args[1], &pairs, f)?;
    let mut r = ctx.reply();
    if f.incr {
        match done.last {
            Some(s) => r.double(s),
            None => r.null(),
        }
    } else {
        let n = done.added + if f.ch { done.changed } else { 0 };
        r.int(n as i64);
    }
    Ok(())
}

/// `ZINCRBY key increment member`: the member's new score.
pub fn zincrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let by = parse_score(args[2])?;
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    let done = add(ctx, args[1], &[(by, args[3])], flags)?;
    match done.last {
        Some(s) => ctx.reply().double(s),
        None => ctx.reply().null(),
    }
    Ok(())
}

/// `ZREM key member...`: how many were removed; the set goes with its last member.
pub fn zrem(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let k = args[1];
    let Some(head) = load_zset(ctx, k)? else {
        ctx.reply().int(0);
        return Ok(());
    };
    let mut removed = 0u64;
    for m in &args[2..] {
        if let Some(old) = score_of(ctx, k, m)? {
            ctx.store.delete(keys::member(k, m))?;
            ctx.store
                .delete(keys::score_entry(k, keys::score_bits(old), m))?;
            removed += 1;
        }
    }
    if removed > 0 {
        set_count(ctx, k, Some(&head), head.count().saturating_sub(removed))?;
    }
    ctx.reply().int(removed as i64);
    Ok(())
}

/// `ZSCORE key member`.
pub fn zscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let s = match load_zset(ctx, args[1])? {
        None => None,
        Some(_) => score_of(ctx, args[1], args[2])?,
    };
    match s {
        Some(s) => ctx.reply().double(s),
        None => ctx.reply().null(),
    }
    Ok(())
}

/// `ZMSCORE key member...`.
pub fn zmscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let head = load_zset(ctx, args[1])?;
    let mut scores = Vec::with_capacity(args.len() - 2);
    for m in &args[2..] {
        scores.push(match head {
            None => None,
            Some(_) => score_of(ctx, args[1], m)?,
        });
    }
    let mut r = ctx.reply();
    r.array(scores.len());
    for s in scores {
        match s {
            Some(s) => r.double(s),
            None => r.null(),
        }
    }
    Ok(())
}

/// `ZCARD key`.
pub fn zcard(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let n = load_zset(ctx, args[1])?.map_or(0, |h| h.count());
    ctx.reply().int(n as i64);
    Ok(())
}

/// What [`walk`] calls with each member's score bits and member; false stops the walk.
type Visit<'a> = dyn FnMut(u64, &[u8]) -> Result<bool, CmdError> + 'a;

/// Walks the index records of `k` in `[start, end)` in order, calling `visit` with each
/// member's score bits and member until it returns false; `want` is how many it will take at
/// most (the first engine scan asks for no more).
fn walk(
    ctx: &Ctx<'_>,
    k: &[u8],
    (start, end): (&[u8], &[u8]),
    want: Option<usize>,
    visit: &mut Visit<'_>,
) -> CmdResult {
    let skip = keys::score_prefix(k).len();
    let mut from = start.to_vec();
    let mut chunk = want.map_or(CHUNK, |w| w.clamp(1, CHUNK));
    loop {
        let part = ctx.store.scan(&from, Some(end), chunk)?;
        for (ek, _) in &part {
            let Some((bits, m)) = keys::split_score_entry(ek, skip) else {
                return damaged();
            };
            if !visit(bits, m)? {
                return Ok(());
            }
        }
        if part.len() < chunk {
            return Ok(());
        }
        chunk = CHUNK;
        let Some((last, _)) = part.last() else {
            return Ok(());
        };
        from = last.clone();
        from.push(0);
    }
}

/// `ZCOUNT key min max`.
pub fn zcount(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (min, max) = (parse_bound(args[2])?, parse_bound(args[3])?);
    let mut n = 0i64;
    if load_zset(ctx, args[1])?.is_some() {
        if let Some((start, end)) = score_range(args[1], min, max) {
            walk(ctx, args[1], (&start, &end), None, &mut |_, _| {
                n += 1;
                Ok(true)
            })?;
        }
    }
    ctx.reply().int(n);
    Ok(())
}

/// `ZRANK key member`: how many members sort before it.
pub fn zrank(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let k = args[1];
    let score = match load_zset(ctx, k)? {
        None => None,
        Some(_) => score_of(ctx, k, args[2])?,
    };
    let Some(score) = score else {
        ctx.reply().null();
        return Ok(());
    };
    let start = keys::score_prefix(k);
    let end = keys::score_entry(k, keys::score_bits(score), args[2]);
    let mut n = 0i64;
    walk(ctx, k, (&start, &end), None, &mut |_, _| {
        n += 1;
        Ok(true)
    })?;
    ctx.reply().int(n);
    Ok(())
}

/// What a range returns: members in order, with their score bits.
type Members = Vec<(Vec<u8>, u64)>;

/// Members of `k` in `[start, end)`, skipping `offset` and taking at most `count` (`None`:
/// all), refused past the output limit.
fn collect(
    ctx: &Ctx<'_>,
    k: &[u8],
    start: &[u8],
    end: &[u8],
    offset: usize,
    count: Option<usize>,
) -> Result<Members, CmdError> {
    let limit = ctx.shared.opts.max_output;
    let mut out = Vec::new();
    let (mut skipped, mut bytes) = (0usize, 0usize);
    if count == Some(0) {
        return Ok(out);
    }
    let want = count.map(|c| c.saturating_add(offset));
    walk(ctx, k, (start, end), want, &mut |bits, m| {
        if skipped < offset {
            skipped += 1;
            return Ok(true);
        }
        bytes += m.len() + 48;
        if bytes > limit {
            return err(format!(
                "ERR the reply exceeds the output buffer limit ({limit} bytes): use LIMIT"
            ));
        }
        out.push((m.to_vec(), bits));
        Ok(count.is_none_or(|c| out.len() < c))
    })?;
    Ok(out)
}

/// Replies with `members`, each followed by its score if `with_scores` (RESP3: as pairs).
fn reply_members(ctx: &mut Ctx<'_>, members: &Members, with_scores: bool) -> CmdResult {
    let resp3 = ctx.conn.proto == crate::resp::Proto::Resp3;
    let mut scores = Vec::with_capacity(if with_scores { members.len() } else { 0 });
    if with_scores {
        for (_, bits) in members {
            scores.push(keys::score_from_bits(*bits).map_or_else(damaged, Ok)?);
        }
    }
    let mut r = ctx.reply();
    match (with_scores, resp3) {
        (false, _) => r.array(members.len()),
        (true, false) => r.array(2 * members.len()),
        (true, true) => r.array(members.len()),
    }
    for (i, (m, _)) in members.iter().enumerate() {
        if !with_scores {
            r.bulk(m);
            continue;
        }
        if resp3 {
            r.array(2);
        }
        r.bulk(m);
        r.double(scores[i]);
    }
    Ok(())
}

/// The options after a range's bounds: WITHSCORES, LIMIT offset count, BYSCORE (`by_score`:
/// whether the command allows it; ZRANGEBYSCORE implies it).
struct RangeOpts {
    with_scores: bool,
    by_score: bool,
    /// Offset and count (`None`: no limit).
    limit: Option<(i64, i64)>,
}

fn range_opts(args: &[&[u8]], allow_by: bool) -> Result<RangeOpts, CmdError> {
    let mut o = RangeOpts {
        with_scores: false,
        by_score: !allow_by,
        limit: None,
    };
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if is(a, "withscores") {
            o.with_scores = true;
        } else if is(a, "limit") {
            let (Some(off), Some(n)) = (args.get(i + 1), args.get(i + 2)) else {
                return err(errors::SYNTAX);
            };
            o.limit = Some((int_arg(off)?, int_arg(n)?));
            i += 2;
        } else if allow_by && is(a, "byscore") {
            o.by_score = true;
        } else if allow_by && (is(a, "rev") || is(a, "bylex")) {
            return err("ERR REV and BYLEX are not supported by this server");
        } else {
            return err(errors::SYNTAX);
        }
        i += 1;
    }
    if o.limit.is_some() && !o.by_score {
        return err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    Ok(o)
}

/// A range by score: `args` = key, min, max.
fn by_score(ctx: &mut Ctx<'_>, args: &[&[u8]], o: &RangeOpts) -> CmdResult {
    let (min, max) = (parse_bound(args[1])?, parse_bound(args[2])?);
    let (offset, count) = match o.limit {
        None => (0, None),
        Some((off, _)) if off < 0 => return reply_members(ctx, &Vec::new(), o.with_scores),
        Some((off, n)) => (off as usize, usize::try_from(n).ok()),
    };
    let members = match (load_zset(ctx, args[0])?, score_range(args[0], min, max)) {
        (Some(_), Some((start, end))) => collect(ctx, args[0], &start, &end, offset, count)?,
        _ => Vec::new(),
    };
    reply_members(ctx, &members, o.with_scores)
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`.
pub fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let o = range_opts(&args[4..], false)?;
    by_score(ctx, &args[1..4], &o)
}

/// `ZRANGE key start stop [BYSCORE] [LIMIT offset count] [WITHSCORES]`: by rank (negative
/// ranks count from the end) or, with BYSCORE, by score.
pub fn zrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let o = range_opts(&args[4..], true)?;
    if o.by_score {
        return by_score(ctx, &args[1..4], &o);
    }
    let (start, stop) = (int_arg(args[2])?, int_arg(args[3])?);
    let k = args[1];
    let card = load_zset(ctx, k)?.map_or(0, |h| h.count()) as i64;
    let start = if start < 0 {
        (start + card).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + card
    } else {
        stop.min(card - 1)
    };
    let members = if start > stop || start >= card {
        Vec::new()
    } else {
        let prefix = keys::score_prefix(k);
        let Some(end) = keys::prefix_end(&prefix) else {
            return damaged();
        };
        let count = (stop - start + 1) as usize;
        collect(ctx, k, &prefix, &end, start as usize, Some(count))?
    };
    reply_members(ctx, &members, o.with_scores)
}
