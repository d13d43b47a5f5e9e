//! Hash commands: HSET, HMSET, HSETNX, HGET, HMGET, HGETALL, HKEYS, HVALS, HDEL, HLEN,
//! HEXISTS, HINCRBY. A hash is a `'k'` record holding its field count plus one `'f'` record
//! per field (see [`crate::keys`]): a field is read with one engine get, `HGETALL` is one
//! range scan.

use super::{err, errors, int_arg, CmdError, CmdResult, Ctx};
use crate::keys::{self, Record, TYPE_HASH};
use crate::store::Pairs;

/// The hash record of `k`, `None` if absent, WRONGTYPE if `k` holds a string.
fn load_hash(ctx: &mut Ctx<'_>, k: &[u8]) -> Result<Option<Record>, CmdError> {
    match ctx.load(k)? {
        Some(r) if r.kind != TYPE_HASH => err(errors::WRONGTYPE),
        r => Ok(r),
    }
}

/// Sets fields; returns how many were new.
fn set_fields(
    ctx: &mut Ctx<'_>,
    k: &[u8],
    pairs: &[Vec<u8>],
    only_new: bool,
) -> Result<i64, CmdError> {
    let head = load_hash(ctx, k)?;
    let (count0, expire_at) = head
        .as_ref()
        .map_or((0, None), |h| (h.fields(), h.expire_at));
    for fv in pairs.chunks_exact(2) {
        let fk_len = 5 + k.len() + fv[0].len();
        ctx.check_size(fk_len, fv[1].len())?;
    }
    let mut added = 0i64;
    // A new hash has no fields in the engine: only a field named twice in this command exists.
    let mut new_fields = std::collections::HashSet::new();
    for fv in pairs.chunks_exact(2) {
        let fk = keys::field(k, &fv[0]);
        let exists = match head {
            Some(_) => ctx.store.get(&fk)?.is_some(),
            None => !new_fields.insert(fv[0].as_slice()),
        };
        if !exists {
            added += 1;
        } else if only_new {
            continue;
        }
        ctx.store.put(fk, fv[1].clone())?;
    }
    if head.is_none() || added > 0 {
        let rec = Record::hash(count0 + added as u64, expire_at);
        ctx.store.put(keys::key(k), rec.encode())?;
    }
    Ok(added)
}

/// `HSET key field value [field value ...]`: how many fields were added.
pub fn hset(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    if !args.len().is_multiple_of(2) {
        return err("ERR wrong number of arguments for 'hset' command");
    }
    let n = set_fields(ctx, &args[1], &args[2..], false)?;
    ctx.reply().int(n);
    Ok(())
}

/// `HMSET key field value [field value ...]`.
pub fn hmset(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    if !args.len().is_multiple_of(2) {
        return err("ERR wrong number of arguments for 'hmset' command");
    }
    set_fields(ctx, &args[1], &args[2..], false)?;
    ctx.reply().ok();
    Ok(())
}

/// `HSETNX key field value`.
pub fn hsetnx(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let n = set_fields(ctx, &args[1], &args[2..4], true)?;
    ctx.reply().int(n);
    Ok(())
}

/// `HGET key field`.
pub fn hget(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let v = match load_hash(ctx, &args[1])? {
        None => None,
        Some(_) => ctx.store.get(&keys::field(&args[1], &args[2]))?,
    };
    ctx.reply().opt_bulk(v.as_deref());
    Ok(())
}

/// `HMGET key field...`: a get per field. (One range scan of the hash instead is cheaper while
/// the hash is in the memtable but opens an iterator on every band overlapping the range once
/// it is not, where a get's Bloom filters skip all but about one band.)
pub fn hmget(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let head = load_hash(ctx, &args[1])?;
    let mut vals = Vec::with_capacity(args.len() - 2);
    for f in &args[2..] {
        vals.push(match head {
            None => None,
            Some(_) => ctx.store.get(&keys::field(&args[1], f))?,
        });
    }
    let mut r = ctx.reply();
    r.array(vals.len());
    for v in &vals {
        r.opt_bulk(v.as_deref());
    }
    Ok(())
}

/// Every (field, value) of hash `k` (empty when absent).
fn all_fields(ctx: &mut Ctx<'_>, k: &[u8]) -> Result<Pairs, CmdError> {
    if load_hash(ctx, k)?.is_none() {
        return Ok(Vec::new());
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
pub fn hgetall(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let all = all_fields(ctx, &args[1])?;
    let mut r = ctx.reply();
    r.map(all.len());
    for (f, v) in &all {
        r.bulk(f);
        r.bulk(v);
    }
    Ok(())
}

/// `HKEYS key`.
pub fn hkeys(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let all = all_fields(ctx, &args[1])?;
    let mut r = ctx.reply();
    r.array(all.len());
    for (f, _) in &all {
        r.bulk(f);
    }
    Ok(())
}

/// `HVALS key`.
pub fn hvals(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let all = all_fields(ctx, &args[1])?;
    let mut r = ctx.reply();
    r.array(all.len());
    for (_, v) in &all {
        r.bulk(v);
    }
    Ok(())
}

/// `HDEL key field...`: how many were removed; the hash goes when its last field does.
pub fn hdel(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let Some(head) = load_hash(ctx, &args[1])? else {
        ctx.reply().int(0);
        return Ok(());
    };
    let mut removed = 0u64;
    for f in &args[2..] {
        let fk = keys::field(&args[1], f);
        if ctx.store.get(&fk)?.is_some() {
            ctx.store.delete(fk)?;
            removed += 1;
        }
    }
    let left = head.fields().saturating_sub(removed);
    if removed > 0 {
        if left == 0 {
            ctx.store.delete(keys::key(&args[1]))?;
        } else {
            let rec = Record::hash(left, head.expire_at);
            ctx.store.put(keys::key(&args[1]), rec.encode())?;
        }
    }
    ctx.reply().int(removed as i64);
    Ok(())
}

/// `HLEN key`.
pub fn hlen(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let n = load_hash(ctx, &args[1])?.map_or(0, |h| h.fields());
    ctx.reply().int(n as i64);
    Ok(())
}

/// `HEXISTS key field`.
pub fn hexists(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let n = match load_hash(ctx, &args[1])? {
        None => 0,
        Some(_) => i64::from(ctx.store.get(&keys::field(&args[1], &args[2]))?.is_some()),
    };
    ctx.reply().int(n);
    Ok(())
}

/// `HINCRBY key field delta`.
pub fn hincrby(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let d = int_arg(&args[3])?;
    let head = load_hash(ctx, &args[1])?;
    let cur = match head {
        None => None,
        Some(_) => ctx.store.get(&keys::field(&args[1], &args[2]))?,
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
    let pair = [args[2].clone(), n.to_string().into_bytes()];
    set_fields(ctx, &args[1], &pair, false)?;
    ctx.reply().int(n);
    Ok(())
}
