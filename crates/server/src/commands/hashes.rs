//! Hash commands: HSET, HMSET, HSETNX, HGET, HMGET, HGETALL, HKEYS, HVALS, HDEL, HLEN,
//! HEXISTS, HINCRBY. A small hash lives inside its `'k'` record (one engine get reads it
//! whole, one put rewrites it); past [`keys::INLINE_MAX_FIELDS`] fields or
//! [`keys::INLINE_MAX_BYTES`] bytes it becomes a `'k'` record holding its field count plus
//! one `'f'` record per field, registered under `'b'` (see [`crate::keys`]): a field is then
//! read with one engine get, `HGETALL` is one range scan. Redis likewise keeps small hashes in
//! one listpack and converts them once they grow; neither converts back.

use super::{err, errors, int_arg, CmdError, CmdResult, Ctx};
use crate::keys::{self, InlineFields, Record, TYPE_HASH, TYPE_HASH_INLINE};
use crate::store::Pairs;

/// The hash record of `k`, `None` if absent, WRONGTYPE if `k` holds a string.
fn load_hash(ctx: &mut Ctx<'_>, k: &[u8]) -> Result<Option<Record>, CmdError> {
    match ctx.load(k)? {
        Some(r) if !r.is_hash() => err(errors::WRONGTYPE),
        r => Ok(r),
    }
}

/// The fields of an inline hash record, in field order.
fn inline_fields(rec: &Record) -> Result<InlineFields<'_>, CmdError> {
    keys::decode_inline(&rec.payload)
        .ok_or_else(|| CmdError::Reply("ERR the hash's record is damaged".into()))
}

/// The value of field `f` among sorted `fields`.
fn find<'a>(fields: &[(&'a [u8], &'a [u8])], f: &[u8]) -> Option<&'a [u8]> {
    fields
        .binary_search_by(|(x, _)| (*x).cmp(f))
        .ok()
        .map(|i| fields[i].1)
}

/// The value of field `f` of hash `k`, whose record is `head`.
fn get_field(
    ctx: &mut Ctx<'_>,
    k: &[u8],
    head: &Record,
    f: &[u8],
) -> Result<Option<Vec<u8>>, CmdError> {
    if head.kind == TYPE_HASH_INLINE {
        return Ok(find(&inline_fields(head)?, f).map(<[u8]>::to_vec));
    }
    Ok(ctx.store.get(&keys::field(k, f))?)
}

/// Sets fields (`pairs`: field, value, ...; with `only_new`, existing fields are kept);
/// returns how many were new.
fn set_fields(
    ctx: &mut Ctx<'_>,
    k: &[u8],
    pairs: &[&[u8]],
    only_new: bool,
) -> Result<i64, CmdError> {
    let head = load_hash(ctx, k)?;
    for fv in pairs.chunks_exact(2) {
        let fk_len = 5 + k.len() + fv[0].len();
        ctx.check_size(fk_len, fv[1].len())?;
    }
    match head {
        Some(h) if h.kind == TYPE_HASH => set_record_fields(ctx, k, &h, pairs, only_new),
        h => set_inline_fields(ctx, k, h.as_ref(), pairs, only_new),
    }
}

/// [`set_fields`] on a new or inline hash: the record is rewritten, or converted to field
/// records once it outgrows the inline limits.
fn set_inline_fields(
    ctx: &mut Ctx<'_>,
    k: &[u8],
    head: Option<&Record>,
    pairs: &[&[u8]],
    only_new: bool,
) -> Result<i64, CmdError> {
    let mut fields = match head {
        Some(h) => inline_fields(h)?,
        None => Vec::with_capacity(pairs.len() / 2),
    };
    let expire_at = head.and_then(|h| h.expire_at);
    let mut added = 0i64;
    let mut changed = false;
    for fv in pairs.chunks_exact(2) {
        let (f, v) = (fv[0], fv[1]);
        match fields.binary_search_by(|(x, _)| (*x).cmp(f)) {
            Ok(i) if !only_new => {
                fields[i].1 = v;
                changed = true;
            }
            Ok(_) => {}
            Err(i) => {
                fields.insert(i, (f, v));
                added += 1;
                changed = true;
            }
        }
    }
    if !changed {
        return Ok(0);
    }
    let len = keys::inline_len(&fields);
    if keys::fits_inline(fields.len(), len) {
        ctx.check_size(1 + k.len(), len + 10)?;
        let rec = Record::inline_hash(&fields, expire_at);
        ctx.store.put(keys::key(k), rec.encode())?;
        return Ok(added);
    }
    // Too large to stay inline: one record per field, registered.
    for (f, v) in &fields {
        ctx.store.put(keys::field(k, f), v.to_vec())?;
    }
    ctx.store.put(keys::registry(k), Vec::new())?;
    let rec = Record::hash(fields.len() as u64, expire_at);
    ctx.store.put(keys::key(k), rec.encode())?;
    Ok(added)
}

/// [`set_fields`] on a hash stored as field records.
fn set_record_fields(
    ctx: &mut Ctx<'_>,
    k: &[u8],
    head: &Record,
    pairs: &[&[u8]],
    only_new: bool,
) -> Result<i64, CmdError> {
    let mut added = 0i64;
    for fv in pairs.chunks_exact(2) {
        let fk = keys::field(k, fv[0]);
        // A field named twice in this command exists the second time (the store reads
        // this round's writes).
        let exists = ctx.store.get(&fk)?.is_some();
        if !exists {
            added += 1;
        } else if only_new {
            continue;
        }
        ctx.store.put(fk, fv[1].to_vec())?;
    }
    if added > 0 {
        let rec = Record::hash(head.count() + added as u64, head.expire_at);
        ctx.store.put(keys::key(k), rec.encode())?;
    }
    Ok(added)
}

/// `HSET key field value [field value ...]`: how many fields were added.
pub fn hset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if !args.len().is_multiple_of(2) {
        return err("ERR wrong number of arguments for 'hset' command");
    }
    let n = set_fields(ctx, args[1], &args[2..], false)?;
    ctx.reply().int(n);
    Ok(())
}

/// `HMSET key field value [field value ...]`.
pub fn hmset(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if !args.len().is_multiple_of(2) {
        return err("ERR wrong number of arguments for 'hmset' command");
    }
    set_fields(ctx, args[1], &args[2..], false)?;
    ctx.reply().ok();
    Ok(())
}

/// `HSETNX key field value`.
pub fn hsetnx(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let n = set_fields(ctx, args[1], &args[2..4], true)?;
    ctx.reply().int(n);
    Ok(())
}

/// `HGET key field`.
pub fn hget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let v = match load_hash(ctx, args[1])? {
        None => None,
        Some(h) => get_field(ctx, args[1], &h, args[2])?,
    };
    ctx.reply().opt_bulk(v.as_deref());
    Ok(())
}

/// `HMGET key field...`: an inline hash is read whole with its record; a field-record hash
/// with a get per field. (One range scan of the hash instead is cheaper while the hash is in
/// the memtable but opens an iterator on every band overlapping the range once it is not,
/// where a get's Bloom filters skip all but about one band.)
pub fn hmget(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let head = load_hash(ctx, args[1])?;
    let fields = &args[2..];
    match &head {
        Some(h) if h.kind == TYPE_HASH_INLINE => {
            let all = inline_fields(h)?;
            // At most the record's bytes plus a header per field.
            ctx.out.reserve(h.payload.len() + 16 * (fields.len() + 1));
            let mut r = ctx.reply();
            r.array(fields.len());
            for f in fields {
                r.opt_bulk(find(&all, f));
            }
        }
        _ => {
            let mut vals = Vec::with_capacity(fields.len());
            for f in fields {
                vals.push(match head {
                    None => None,
                    Some(_) => ctx.store.get(&keys::field(args[1], f))?,
                });
            }
            let mut r = ctx.reply();
            r.array(vals.len());
            for v in &vals {
                r.opt_bulk(v.as_deref());
            }
        }
    }
    Ok(())
}

/// Every (field, value) of hash `k` (empty when absent).
fn all_fields(ctx: &mut Ctx<'_>, k: &[u8]) -> Result<Pairs, CmdError> {
    let Some(head) = load_hash(ctx, k)? else {
        return Ok(Vec::new());
    };
    if head.kind == TYPE_HASH_INLINE {
        // At most INLINE_MAX_BYTES: within any output limit.
        let all = inline_fields(&head)?;
        return Ok(all.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect());
    }
    let skip = keys::field_prefix(k).len();
    let limit = ctx.shared.opts.max_output;
    let mut out = Vec::new();
    let mut bytes = 0;
    for (fk, v) in ctx.store.fields(k, usize::MAX)? {
        bytes += fk.len() + v.len();
        if bytes > limit {
            return err(format!(
                "ERR the reply exceeds the output buffer limit ({limit} bytes)"
            ));
        }
        out.push((fk[skip..].to_vec(), v));
    }
    Ok(out)
}

/// `HGETALL key`: a map (RESP3) or a flat array (RESP2).
pub fn hgetall(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let all = all_fields(ctx, args[1])?;
    let mut r = ctx.reply();
    r.map(all.len());
    for (f, v) in &all {
        r.bulk(f);
        r.bulk(v);
    }
    Ok(())
}

/// `HKEYS key`.
pub fn hkeys(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let all = all_fields(ctx, args[1])?;
    let mut r = ctx.reply();
    r.array(all.len());
    for (f, _) in &all {
        r.bulk(f);
    }
    Ok(())
}

/// `HVALS key`.
pub fn hvals(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let all = all_fields(ctx, args[1])?;
    let mut r = ctx.reply();
    r.array(all.len());
    for (_, v) in &all {
        r.bulk(v);
    }
    Ok(())
}

/// `HDEL key field...`: how many were removed; the hash goes when its last field does.
pub fn hdel(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let Some(head) = load_hash(ctx, args[1])? else {
        ctx.reply().int(0);
        return Ok(());
    };
    if head.kind == TYPE_HASH_INLINE {
        let mut all = inline_fields(&head)?;
        let before = all.len();
        for f in &args[2..] {
            if let Ok(i) = all.binary_search_by(|(x, _)| (*x).cmp(f)) {
                all.remove(i);
            }
        }
        let removed = before - all.len();
        if all.is_empty() {
            ctx.store.delete(keys::key(args[1]))?;
        } else if removed > 0 {
            let rec = Record::inline_hash(&all, head.expire_at);
            ctx.store.put(keys::key(args[1]), rec.encode())?;
        }
        ctx.reply().int(removed as i64);
        return Ok(());
    }
    let mut removed = 0u64;
    for f in &args[2..] {
        let fk = keys::field(args[1], f);
        if ctx.store.get(&fk)?.is_some() {
            ctx.store.delete(fk)?;
            removed += 1;
        }
    }
    let left = head.count().saturating_sub(removed);
    if removed > 0 {
        if left == 0 {
            ctx.store.delete(keys::key(args[1]))?;
            ctx.store.delete(keys::registry(args[1]))?;
        } else {
            let rec = Record::hash(left, head.expire_at);
            ctx.store.put(keys::key(args[1]), rec.encode())?;
        }
    }
    ctx.reply().int(removed as i64);
    Ok(())
}

/// `HLEN key`.
pub fn hlen(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let n = match load_hash(ctx, args[1])? {
        None => 0,
        Some(h) if h.kind == TYPE_HASH_INLINE => inline_fields(&h)?.len() as u64,
        Some(h) => h.count(),
    };
    ctx.reply().int(n as i64);
    Ok(())
}

/// `HEXISTS key field`.
pub fn hexists(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let n = match load_hash(ctx, args[1])? {
        None => 0,
        Some(h) => i64::from(get_field(ctx, args[1], &h, args[2])?.is_some()),
    };
    ctx.reply().int(n);
    Ok(())
}

/// `HINCRBY key field delta`.
pub fn hincrby(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let d = int_arg(args[3])?;
    let cur = match load_hash(ctx, args[1])? {
        None => None,
        Some(h) => get_field(ctx, args[1], &h, args[2])?,
    };
    let n = match &cur {
        None => 0,
        Some(v) => std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| CmdError::Reply("ERR hash value is not an integer".into()))?,
    };
    let Some(n) = n.checked_add(d) else {
        return err("ERR increment or decrement would overflow");
    };
    let v = n.to_string();
    set_fields(ctx, args[1], &[args[2], v.as_bytes()], false)?;
    ctx.reply().int(n);
    Ok(())
}
