//! Server commands: INFO, DBSIZE, CONFIG, FLUSHDB/FLUSHALL, SAVE/BGSAVE (a durable flush),
//! LASTSAVE, TIME, SHUTDOWN.

use super::keyspace::{walk, KEYS_START};
use super::{err, is, CmdResult, Ctx};
use crate::glob;
use crate::stats::Stats;
use std::fmt::Write;
use std::sync::atomic::Ordering;

/// Counts live keys and keys with an expiry (a scan of the key space: O(keys)).
fn count_keys(ctx: &mut Ctx<'_>) -> Result<(u64, u64), super::CmdError> {
    let (mut n, mut e) = (0u64, 0u64);
    walk(ctx, KEYS_START, usize::MAX, &mut |_, rec| {
        n += 1;
        e += u64::from(rec.expire_at.is_some());
        true
    })?;
    Ok((n, e))
}

/// `DBSIZE`.
pub fn dbsize(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let (n, _) = count_keys(ctx)?;
    ctx.reply().int(n as i64);
    Ok(())
}

/// The resident set size of this process in bytes (0 if /proc is unreadable).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// CPU time (user + system) this process has used, in microseconds.
pub fn cpu_micros() -> (u64, u64) {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return (0, 0);
    };
    // Fields after the command name (which may hold blanks) start after the last ')'.
    let Some(rest) = s.rsplit_once(')').map(|(_, r)| r) else {
        return (0, 0);
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) * 10_000;
    (tick(11), tick(12))
}

/// `INFO [section ...]`: server, clients, memory, persistence, stats, cpu, keyspace and
/// tegula (the engine's statistics). `all`/`everything`/no argument give every section.
pub fn info(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let want = |name: &str| {
        args.len() == 1
            || args[1..]
                .iter()
                .any(|a| is(a, name) || is(a, "all") || is(a, "everything") || is(a, "default"))
    };
    let sh = ctx.shared;
    let st = &sh.stats;
    let g = Stats::get;
    let mut s = String::new();
    if want("server") {
        let _ = write!(
            s,
            "# Server\r\nredis_version:{}\r\ntegula_version:{}\r\nredis_mode:standalone\r\n\
             os:{} {}\r\narch_bits:64\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\n\
             tcp_port:{}\r\nuptime_in_seconds:{}\r\n\r\n",
            super::conn::REDIS_VERSION,
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH,
            std::process::id(),
            sh.addr.port(),
            sh.started.elapsed().as_secs()
        );
    }
    if want("clients") {
        let _ = write!(
            s,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n\r\n",
            g(&st.connected_clients),
            sh.opts.max_clients
        );
    }
    if want("memory") {
        let rss = rss_bytes();
        let _ = write!(
            s,
            "# Memory\r\nused_memory:{rss}\r\nused_memory_rss:{rss}\r\nmaxmemory:0\r\n\
             mem_clients_normal:{}\r\nmaxmemory_clients:{}\r\nscan_cursors:{}\r\n\
             scan_cursors_memory:{}\r\n\r\n",
            g(&st.client_memory),
            sh.opts.max_client_memory,
            ctx.cursors.len(),
            ctx.cursors.memory()
        );
    }
    if want("persistence") {
        let _ = write!(
            s,
            "# Persistence\r\naof_enabled:1\r\nappendfsync:{}\r\nrdb_last_save_time:{}\r\n\
             engine_commits:{}\r\nengine_syncs:{}\r\n\r\n",
            sh.opts.appendfsync.name(),
            *ctx.last_save,
            g(&st.commits),
            g(&st.syncs)
        );
    }
    if want("stats") {
        let _ = write!(
            s,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
             total_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\n\
             expired_keys:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\n\
             protocol_error_disconnections:{}\r\nclient_output_buffer_limit_disconnections:{}\r\n\
             timeout_disconnections:{}\r\nevicted_clients:{}\r\n\
             cross_protocol_disconnections:{}\r\nprotected_mode_rejections:{}\r\n\
             engine_rounds:{}\r\nengine_inline_rounds:{}\r\n\
             engine_errors:{}\r\ncomposite_keys:{}\r\n\r\n",
            g(&st.connections_received),
            g(&st.commands_processed),
            g(&st.net_input_bytes),
            g(&st.net_output_bytes),
            g(&st.rejected_connections),
            ctx.store.expired_keys,
            g(&st.keyspace_hits),
            g(&st.keyspace_misses),
            g(&st.protocol_errors),
            g(&st.output_limit_disconnections),
            g(&st.timeout_disconnections),
            g(&st.evicted_clients),
            g(&st.cross_protocol_disconnections),
            g(&st.protected_mode_rejections),
            g(&st.rounds),
            g(&st.inline_rounds),
            g(&st.engine_errors),
            ctx.store
                .composite_count()
                .map_or_else(|| "unknown".to_string(), |n| n.to_string())
        );
    }
    if want("cpu") {
        let (u, sy) = cpu_micros();
        let _ = write!(
            s,
            "# CPU\r\nused_cpu_user:{:.6}\r\nused_cpu_sys:{:.6}\r\n\r\n",
            u as f64 / 1e6,
            sy as f64 / 1e6
        );
    }
    if want("keyspace") {
        let (n, e) = count_keys(ctx)?;
        s.push_str("# Keyspace\r\n");
        if n > 0 {
            let _ = write!(s, "db0:keys={n},expires={e},avg_ttl=0\r\n");
        }
        s.push_str("\r\n");
    }
    if want("tegula") {
        s.push_str("# Tegula\r\n");
        for (k, v) in ctx.store.backend().stats() {
            let _ = write!(s, "{k}:{v}\r\n");
        }
        s.push_str("\r\n");
    }
    let trimmed = s.trim_end_matches("\r\n").to_string() + "\r\n";
    ctx.reply()
        .verbatim(if s.is_empty() { "" } else { &trimmed });
    Ok(())
}

/// The parameters `CONFIG GET` answers, with their values.
fn config_params(ctx: &Ctx<'_>) -> Vec<(&'static str, String)> {
    let o = &ctx.shared.opts;
    vec![
        ("appendonly", "yes".into()),
        ("appendfsync", o.appendfsync.name().into()),
        ("save", String::new()),
        ("databases", "1".into()),
        ("maxclients", o.max_clients.to_string()),
        (
            "timeout",
            o.idle_timeout.map_or(0, |d| d.as_secs()).to_string(),
        ),
        ("proto-max-bulk-len", o.max_bulk.to_string()),
        ("client-query-buffer-limit", o.max_request.to_string()),
        (
            "client-output-buffer-limit",
            format!("normal {} 0 0 replica 0 0 0 pubsub 0 0 0", o.max_output),
        ),
        ("port", ctx.shared.addr.port().to_string()),
        ("bind", ctx.shared.addr.ip().to_string()),
        (
            "requirepass",
            o.requirepass
                .as_ref()
                .map_or_else(String::new, |p| p.expose().to_string()),
        ),
        (
            "protected-mode",
            if o.protected_mode { "yes" } else { "no" }.into(),
        ),
        ("maxmemory-clients", o.max_client_memory.to_string()),
        ("maxmemory", "0".into()),
        ("io-threads", "1".into()),
    ]
}

/// `CONFIG GET pattern...`, `CONFIG RESETSTAT`; `CONFIG SET` is refused (options are given
/// on the command line).
pub fn config(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "get") {
        if args.len() < 3 {
            return err("ERR wrong number of arguments for 'config|get' command");
        }
        let params = config_params(ctx);
        let hits: Vec<_> = params
            .iter()
            .filter(|(name, _)| {
                args[2..]
                    .iter()
                    .any(|p| glob::matches(p, name.as_bytes(), true))
            })
            .collect();
        let mut r = ctx.reply();
        r.map(hits.len());
        for (k, v) in hits {
            r.bulk(k.as_bytes());
            r.bulk(v.as_bytes());
        }
    } else if is(sub, "resetstat") {
        ctx.reply().ok();
    } else if is(sub, "set") {
        return err(
            "ERR CONFIG SET is not supported: tegula takes its options on the command line",
        );
    } else {
        return err(format!(
            "ERR unknown subcommand '{}'. Try CONFIG HELP.",
            super::printable(sub)
        ));
    }
    Ok(())
}

/// `FLUSHDB [ASYNC|SYNC]` / `FLUSHALL`: deletes every key (a scan of the whole data set, so
/// O(records); the deletes go out in engine batches).
pub fn flushdb(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if let Some(a) = args.get(1) {
        if !is(a, "async") && !is(a, "sync") || args.len() > 2 {
            return err(super::errors::SYNTAX);
        }
    }
    // Everything but the server's own namespace (0x00...).
    let mut from = vec![1u8];
    loop {
        let part = ctx.store.scan(&from, None, 4096)?;
        let Some((last, _)) = part.last() else { break };
        from = last.clone();
        from.push(0);
        for (k, _) in part {
            ctx.store.delete(k)?;
        }
    }
    ctx.reply().ok();
    Ok(())
}

fn durable_save(ctx: &mut Ctx<'_>) -> CmdResult {
    ctx.store.save()?;
    Stats::add(&ctx.shared.stats.syncs, 1);
    *ctx.last_save = ctx.now / 1000;
    Ok(())
}

/// `SAVE`: everything written so far is flushed to the engine's persistent structures and
/// synced before the reply.
pub fn save(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    durable_save(ctx)?;
    ctx.reply().ok();
    Ok(())
}

/// `BGSAVE [SCHEDULE]`: as `SAVE` (the flush is done before the reply; Redis forks instead).
pub fn bgsave(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    durable_save(ctx)?;
    ctx.reply().simple("Background saving started");
    Ok(())
}

/// `LASTSAVE`.
pub fn lastsave(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let t = *ctx.last_save as i64;
    ctx.reply().int(t);
    Ok(())
}

/// `TIME`.
pub fn time(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut r = ctx.reply();
    r.array(2);
    r.bulk(d.as_secs().to_string().as_bytes());
    r.bulk(d.subsec_micros().to_string().as_bytes());
    Ok(())
}

/// `SHUTDOWN [NOSAVE|SAVE]`: the server stops as on SIGTERM (everything acknowledged is made
/// durable; NOSAVE is not honoured: nothing acknowledged is ever dropped). No reply, as Redis.
pub fn shutdown(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    ctx.shared.shutdown.store(true, Ordering::Release);
    ctx.conn.close = true;
    Ok(())
}
