//! String commands: GET, SET (EX/PX/EXAT/PXAT/KEEPTTL, NX/XX, GET), SETNX, SETEX, PSETEX,
//! GETSET, GETDEL, MGET, MSET, INCR/DECR/INCRBY/DECRBY, APPEND, STRLEN. A string is one
//! `'k'` record (see [`crate::keys`]); writing a string over a key stored as several records (a
//! field-record hash, a sorted set) deletes them. Any other key is overwritten without being
//! read (`SET`, `MSET`, `SETEX`, `PSETEX`): the store knows every key stored that way.

use super::{err, errors, int_arg, is, CmdResult, Ctx};
use crate::keys::{self, Record, TYPE_STRING};

/// The string value of a record, or WRONGTYPE.
fn string_of(rec: &Record) -> Result<&[u8], super::CmdError> {
    if rec.kind != TYPE_STRING {
        return err(errors::WRONGTYPE);
    }
    Ok(&rec.payload)
}

/// Stores string `v` under `k`, replacing `old` (the records of a composite key are deleted).
pub(crate) fn store_string(
    ctx: &mut Ctx<'_>,
    k: &[u8],
    old: Option<&Record>,
    v: &[u8],
    expire_at: Option<u64>,
) -> CmdResult {
    let ek = keys::key(k);
    ctx.check_size(ek.len(), v.len())?;
    if let Some(old) = old.filter(|o| o.has_records()) {
        ctx.store.remove(k, old)?;
    }
    let val = keys::encode_value(TYPE_STRING, expire_at, v);
    ctx.store.put(ek, val)?;
    Ok(())
}

/// Stores string `v` under `k` whatever it held, reading the key first only when it may be a
/// composite key (whose other records must go with it).
fn overwrite_string(ctx: &mut Ctx<'_>, k: &[u8], v: &[u8], expire_at: Option<u64>) -> CmdResult {
    if ctx.store.may_be_composite(k) {
        let old = ctx.store.load(k, ctx.now)?;
        return store_string(ctx, k, old.as_ref(), v, expire_at);
    }
    store_string(ctx, k, None, v, expire_at)
}

/// `GET key`.
pub fn get(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match ctx.load(args[1])? {
        None => ctx.reply().null(),
        Some(rec) => {
            let v = string_of(&rec)?;
            ctx.reply().bulk(v);
        }
    }
    Ok(())
}

/// An expiry time from a relative or absolute argument, in Unix milliseconds.
fn expiry(
    ctx: &Ctx<'_>,
    unit_ms: i64,
    absolute: bool,
    a: &[u8],
    cmd: &str,
) -> Result<u64, super::CmdError> {
    let n = int_arg(a)?;
    let ms = n.checked_mul(unit_ms).filter(|&m| m > 0);
    let Some(ms) = ms else {
        return err(format!("ERR invalid expire time in '{cmd}' command"));
    };
    if absolute {
        Ok(ms as u64)
    } else {
        Ok(ctx.now.saturating_add(ms as u64))
    }
}

/// `SET key value [NX | XX] [GET] [EX s | PX ms | EXAT t | PXAT t | KEEPTTL]`.
pub fn set(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut expire_at = None;
    let mut i = 3;
    while i < args.len() {
        let a = &args[i];
        let next = args.get(i + 1);
        let timed = [
            ("ex", 1000, false),
            ("px", 1, false),
            ("exat", 1000, true),
            ("pxat", 1, true),
        ]
        .into_iter()
        .find(|(kw, _, _)| is(a, kw));
        if let Some((_, unit, abs)) = timed {
            let Some(v) = next else {
                return err(errors::SYNTAX);
            };
            if expire_at.is_some() || keepttl {
                return err(errors::SYNTAX);
            }
            expire_at = Some(expiry(ctx, unit, abs, v, "set")?);
            i += 2;
            continue;
        }
        if is(a, "nx") && !xx {
            nx = true;
        } else if is(a, "xx") && !nx {
            xx = true;
        } else if is(a, "get") {
            get = true;
        } else if is(a, "keepttl") && expire_at.is_none() {
            keepttl = true;
        } else {
            return err(errors::SYNTAX);
        }
        i += 1;
    }
    if !(nx || xx || get || keepttl) {
        overwrite_string(ctx, args[1], args[2], expire_at)?;
        ctx.reply().ok();
        return Ok(());
    }
    let old = ctx.load(args[1])?;
    if get {
        if let Some(o) = &old {
            string_of(o)?;
        }
    }
    let proceed = !(nx && old.is_some() || xx && old.is_none());
    if proceed {
        if keepttl {
            expire_at = old.as_ref().and_then(|o| o.expire_at);
        }
        store_string(ctx, args[1], old.as_ref(), args[2], expire_at)?;
    }
    if get {
        let prev = old.map(|o| o.payload);
        ctx.reply().opt_bulk(prev.as_deref());
    } else if proceed {
        ctx.reply().ok();
    } else {
        ctx.reply().null();
    }
    Ok(())
}

/// `SETNX key value`.
pub fn setnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if ctx.load(args[1])?.is_some() {
        ctx.reply().int(0);
        return Ok(());
    }
    store_string(ctx, args[1], None, args[2], None)?;
    ctx.reply().int(1);
    Ok(())
}

fn setex_unit(ctx: &mut Ctx<'_>, args: &[&[u8]], unit: i64, cmd: &str) -> CmdResult {
    let at = expiry(ctx, unit, false, args[2], cmd)?;
    overwrite_string(ctx, args[1], args[3], Some(at))?;
    ctx.reply().ok();
    Ok(())
}

/// `SETEX key seconds value`.
pub fn setex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    setex_unit(ctx, args, 1000, "setex")
}

/// `PSETEX key milliseconds value`.
pub fn psetex(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    setex_unit(ctx, args, 1, "psetex")
}

/// `GETSET key value`.
pub fn getset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let old = ctx.load(args[1])?;
    if let Some(o) = &old {
        string_of(o)?;
    }
    store_string(ctx, args[1], old.as_ref(), args[2], None)?;
    ctx.reply()
        .opt_bulk(old.as_ref().map(|o| o.payload.as_slice()));
    Ok(())
}

/// `GETDEL key`.
pub fn getdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let Some(old) = ctx.load(args[1])? else {
        ctx.reply().null();
        return Ok(());
    };
    string_of(&old)?;
    ctx.store.remove(args[1], &old)?;
    ctx.reply().bulk(&old.payload);
    Ok(())
}

/// `MGET key...`: a null for a missing key or one that is not a string.
pub fn mget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut vals = Vec::with_capacity(args.len() - 1);
    for k in &args[1..] {
        vals.push(ctx.load(k)?.filter(|r| r.kind == TYPE_STRING));
    }
    let mut r = ctx.reply();
    r.array(vals.len());
    for v in &vals {
        r.opt_bulk(v.as_ref().map(|r| r.payload.as_slice()));
    }
    Ok(())
}

/// `MSET key value [key value ...]`.
pub fn mset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return err("ERR wrong number of arguments for 'mset' command");
    }
    for kv in args[1..].chunks_exact(2) {
        ctx.check_size(kv[0].len() + 1, kv[1].len())?;
    }
    for kv in args[1..].chunks_exact(2) {
        overwrite_string(ctx, kv[0], kv[1], None)?;
    }
    ctx.reply().ok();
    Ok(())
}

fn incr_by(ctx: &mut Ctx<'_>, k: &[u8], delta: i64) -> CmdResult {
    let old = ctx.load(k)?;
    let (cur, expire_at) = match &old {
        None => (0, None),
        Some(rec) => {
            let s = string_of(rec)?;
            let n = std::str::from_utf8(s)
                .ok()
                .filter(|t| !t.is_empty() && t.len() <= 20 && !t.starts_with('+'))
                .and_then(|t| t.parse::<i64>().ok())
                .ok_or_else(|| super::CmdError::Reply(errors::NOT_INT.into()))?;
            (n, rec.expire_at)
        }
    };
    let Some(n) = cur.checked_add(delta) else {
        return err("ERR increment or decrement would overflow");
    };
    store_string(ctx, k, old.as_ref(), n.to_string().as_bytes(), expire_at)?;
    ctx.reply().int(n);
    Ok(())
}

/// `INCR key`.
pub fn incr(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], 1)
}

/// `DECR key`.
pub fn decr(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    incr_by(ctx, args[1], -1)
}

/// `INCRBY key delta`.
pub fn incrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let d = int_arg(args[2])?;
    incr_by(ctx, args[1], d)
}

/// `DECRBY key delta`.
pub fn decrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let d = int_arg(args[2])?;
    let Some(d) = d.checked_neg() else {
        return err("ERR decrement would overflow");
    };
    incr_by(ctx, args[1], d)
}

/// `APPEND key value`: the new length.
pub fn append(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let old = ctx.load(args[1])?;
    let (mut v, expire_at) = match &old {
        None => (Vec::new(), None),
        Some(rec) => (string_of(rec)?.to_vec(), rec.expire_at),
    };
    v.extend_from_slice(args[2]);
    store_string(ctx, args[1], old.as_ref(), &v, expire_at)?;
    ctx.reply().int(v.len() as i64);
    Ok(())
}

/// `STRLEN key`.
pub fn strlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let n = match ctx.load(args[1])? {
        None => 0,
        Some(rec) => string_of(&rec)?.len(),
    };
    ctx.reply().int(n as i64);
    Ok(())
}
