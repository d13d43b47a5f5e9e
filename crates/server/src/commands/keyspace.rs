//! Key space commands: DEL/UNLINK, EXISTS, TYPE, KEYS, SCAN, EXPIRE/PEXPIRE, TTL/PTTL,
//! PERSIST. Every key has one `'k'` record, so listing keys is a range scan of `'k'`.

use super::cursors::Resume;
use super::{err, errors, int_arg, is, CmdResult, Ctx};
use crate::glob;
use crate::keys::{self, Record};

/// The engine-key range of every Redis key: `['k', 'l')`.
pub(crate) const KEYS_START: &[u8] = &[keys::KEY];
/// End of [`KEYS_START`]'s range.
pub(crate) const KEYS_END: &[u8] = &[keys::KEY + 1];

/// Pairs fetched per engine scan while walking the key space.
pub(crate) const SCAN_CHUNK: usize = 1024;

/// `DEL key...` / `UNLINK key...`: how many existed.
pub fn del(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut n = 0;
    for k in &args[1..] {
        if let Some(rec) = ctx.store.load(k, ctx.now)? {
            ctx.store.remove(k, &rec)?;
            n += 1;
        }
    }
    ctx.reply().int(n);
    Ok(())
}

/// `EXISTS key...`: how many exist (a key named twice counts twice).
pub fn exists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut n = 0;
    for k in &args[1..] {
        if ctx.load(k)?.is_some() {
            n += 1;
        }
    }
    ctx.reply().int(n);
    Ok(())
}

fn type_name(rec: &Record) -> &'static str {
    if rec.is_hash() {
        "hash"
    } else if rec.kind == keys::TYPE_ZSET {
        "zset"
    } else {
        "string"
    }
}

/// `TYPE key`.
pub fn type_(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let t = ctx
        .store
        .load(args[1], ctx.now)?
        .map_or("none", |r| type_name(&r));
    ctx.reply().simple(t);
    Ok(())
}

/// Walks the key space from engine key `from` (inclusive), calling `visit` with each live
/// key and its record, `chunk` pairs per engine scan, until `visit` returns false or `max`
/// pairs have been examined. Returns the engine key examined last (the walk goes on after
/// it), `None` when the walk reached the end.
pub(crate) fn walk(
    ctx: &mut Ctx<'_>,
    from: &[u8],
    max: usize,
    visit: &mut dyn FnMut(&[u8], &Record) -> bool,
) -> Result<Option<Vec<u8>>, super::CmdError> {
    let mut from = from.to_vec();
    let mut seen = 0;
    loop {
        let want = SCAN_CHUNK.min(max - seen);
        let part = ctx.store.scan(&from, Some(KEYS_END), want)?;
        let full = part.len() == want;
        for (ek, v) in &part {
            let Some(k) = keys::user_key(ek) else {
                continue;
            };
            let rec = Record::decode(v).unwrap_or_else(|| Record::string(v.clone(), None));
            if rec.expired(ctx.now) {
                continue;
            }
            if !visit(k, &rec) {
                return Ok(Some(ek.clone()));
            }
        }
        seen += part.len();
        let Some((last, _)) = part.last() else {
            return Ok(None);
        };
        if !full {
            return Ok(None);
        }
        if seen >= max {
            return Ok(Some(last.clone()));
        }
        from = last.clone();
        from.push(0);
    }
}

/// Engine keys examined per engine scan while a cursor's long key is looked for (few: a scan
/// returns each key's record, which holds a string's value).
const FIND_CHUNK: usize = 4;

/// The engine key an iteration resumes at, from a cursor's position: exact for a key kept
/// whole; for a long key, after the key among those sharing its prefix that has its length
/// and hash, or at the prefix when that key is gone (keys sharing the prefix may then come
/// twice, never none).
fn resume_at(ctx: &mut Ctx<'_>, resume: Resume<'_>) -> Result<Vec<u8>, super::CmdError> {
    let (prefix, len, hash) = match resume {
        Resume::From(k) => return Ok(k),
        Resume::Find { prefix, len, hash } => (prefix, len, hash),
    };
    let end = keys::prefix_end(prefix);
    let mut from = prefix.to_vec();
    loop {
        let part = ctx.store.scan(&from, end.as_deref(), FIND_CHUNK)?;
        for (ek, _) in &part {
            if ctx.cursors.is_key(ek, len, hash) {
                let mut next = ek.clone();
                next.push(0);
                return Ok(next);
            }
        }
        match part.last() {
            Some((last, _)) if part.len() == FIND_CHUNK => {
                from = last.clone();
                from.push(0);
            }
            _ => return Ok(prefix.to_vec()),
        }
    }
}

/// `KEYS pattern`.
pub fn keys(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let pat = args[1];
    let limit = ctx.shared.opts.max_output;
    let mut found: Vec<Vec<u8>> = Vec::new();
    let mut bytes = 0usize;
    let mut over = false;
    walk(ctx, KEYS_START, usize::MAX, &mut |k, _| {
        if glob::matches(pat, k, false) {
            bytes += k.len() + 16;
            found.push(k.to_vec());
            if bytes > limit {
                over = true;
                return false;
            }
        }
        true
    })?;
    if over {
        return err(format!(
            "ERR the reply exceeds the output buffer limit ({limit} bytes): use SCAN"
        ));
    }
    let mut r = ctx.reply();
    r.array(found.len());
    for k in &found {
        r.bulk(k);
    }
    Ok(())
}

/// `SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]`. Cursor numbers name a position kept
/// by the server (see [`super::Cursors`]); 0 starts and ends an iteration. Every key present
/// for the whole iteration is returned (keys are visited in order): once, except that keys
/// sharing their first 256 bytes with a long key deleted mid-iteration may come twice.
pub fn scan(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let cursor = std::str::from_utf8(args[1])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| super::CmdError::Reply("ERR invalid cursor".into()))?;
    let (mut pat, mut count, mut ty) = (None, 10usize, None);
    let mut i = 2;
    while i < args.len() {
        let Some(v) = args.get(i + 1) else {
            return err(errors::SYNTAX);
        };
        if is(args[i], "match") {
            pat = Some(*v);
        } else if is(args[i], "count") {
            count = match int_arg(v)? {
                n if n >= 1 => n as usize,
                _ => return err(errors::SYNTAX),
            };
        } else if is(args[i], "type") {
            ty = Some(v.to_ascii_lowercase());
        } else {
            return err(errors::SYNTAX);
        }
        i += 2;
    }
    let from = if cursor == 0 {
        KEYS_START.to_vec()
    } else {
        match ctx.cursors.get(cursor) {
            Some(pos) => resume_at(ctx, pos.resume())?,
            None => return err("ERR invalid cursor"),
        }
    };
    let mut found = Vec::new();
    let next = walk(ctx, &from, count.min(1 << 20), &mut |k, rec| {
        let m = pat.as_ref().is_none_or(|p| glob::matches(p, k, false));
        let t = ty
            .as_ref()
            .is_none_or(|t| t.as_slice() == type_name(rec).as_bytes());
        if m && t {
            found.push(k.to_vec());
        }
        true
    })?;
    let next_id = match next {
        Some(after) => ctx.cursors.insert(&after),
        None => 0,
    };
    let mut r = ctx.reply();
    r.array(2);
    r.bulk(next_id.to_string().as_bytes());
    r.array(found.len());
    for k in &found {
        r.bulk(k);
    }
    Ok(())
}

fn set_expiry(ctx: &mut Ctx<'_>, args: &[&[u8]], unit: i64) -> CmdResult {
    let n = int_arg(args[2])?;
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for a in &args[3..] {
        if is(a, "nx") {
            nx = true;
        } else if is(a, "xx") {
            xx = true;
        } else if is(a, "gt") {
            gt = true;
        } else if is(a, "lt") {
            lt = true;
        } else {
            return err(format!("ERR Unsupported option {}", super::printable(a)));
        }
    }
    if nx && (xx || gt || lt) || gt && lt {
        return err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    let Some(rec) = ctx.store.load(args[1], ctx.now)? else {
        ctx.reply().int(0);
        return Ok(());
    };
    let at = n
        .checked_mul(unit)
        .map(|ms| ctx.now as i64 + ms)
        .ok_or_else(|| {
            super::CmdError::Reply("ERR invalid expire time in 'expire' command".into())
        })?;
    let cur = rec.expire_at;
    let ok = match cur {
        None => !xx && !gt,
        Some(c) => !nx && (!gt || at > c as i64) && (!lt || at < c as i64),
    };
    if !ok {
        ctx.reply().int(0);
        return Ok(());
    }
    if at <= ctx.now as i64 {
        ctx.store.remove(args[1], &rec)?;
    } else {
        let new = Record {
            expire_at: Some(at as u64),
            ..rec
        };
        ctx.store.put(keys::key(args[1]), new.encode())?;
    }
    ctx.reply().int(1);
    Ok(())
}

/// `EXPIRE key seconds [NX|XX|GT|LT]`.
pub fn expire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    set_expiry(ctx, args, 1000)
}

/// `PEXPIRE key milliseconds [NX|XX|GT|LT]`.
pub fn pexpire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    set_expiry(ctx, args, 1)
}

fn ttl_in(ctx: &mut Ctx<'_>, args: &[&[u8]], unit: u64) -> CmdResult {
    let t = match ctx.store.load(args[1], ctx.now)? {
        None => -2,
        Some(Record {
            expire_at: None, ..
        }) => -1,
        Some(Record {
            expire_at: Some(at),
            ..
        }) => (at.saturating_sub(ctx.now) + unit / 2) as i64 / unit as i64,
    };
    ctx.reply().int(t);
    Ok(())
}

/// `TTL key`: seconds left, -1 without expiry, -2 without the key.
pub fn ttl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ttl_in(ctx, args, 1000)
}

/// `PTTL key`: milliseconds left, -1 without expiry, -2 without the key.
pub fn pttl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ttl_in(ctx, args, 1)
}

/// `PERSIST key`: removes the expiry.
pub fn persist(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let n = match ctx.store.load(args[1], ctx.now)? {
        Some(rec) if rec.expire_at.is_some() => {
            let new = Record {
                expire_at: None,
                ..rec
            };
            ctx.store.put(keys::key(args[1]), new.encode())?;
            1
        }
        _ => 0,
    };
    ctx.reply().int(n);
    Ok(())
}
