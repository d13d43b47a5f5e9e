//! db_bench's named benchmarks, with its flag names and semantics where they exist.
//!
//! | benchmark | what it does | fresh database |
//! | --- | --- | --- |
//! | `fillseq` | `num` puts in ascending key order | yes |
//! | `fillrandom` | `num` puts of uniformly random keys in `[0, num)` | yes |
//! | `overwrite` | `num` puts of random keys into the existing database | no |
//! | `fillsync` | `num / 1000` random puts, each synced | yes |
//! | `readseq` | iterates `reads` pairs in key order | no |
//! | `readrandom` | `reads` gets of random keys in `[0, num)` (reports how many were found) | no |
//! | `readmissing` | `reads` gets of keys that do not exist (a `.` appended) | no |
//! | `seekrandom` | `reads` seeks to random keys, each followed by `seek_nexts` nexts | no |
//! | `deleterandom` | `num` deletes of random keys | no |
//!
//! With several threads the operations are split between them (db_bench gives each thread
//! `num` operations); `fillseq` gives each thread a contiguous key range.

use crate::error::{Error, Result};
use crate::keys::{format_key, ValueGen};
use crate::media::MediaCheck;
use crate::observer::Observer;
use crate::report::BenchResult;
use crate::runner::{report_result, run_phase, Phase, ThreadCtx};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;
use tegula_kv::SyncPolicy;
use tegula_kv::{BatchOp, EngineFactory, KvEngine};

/// Every benchmark name accepted by `--benchmarks`.
pub const BENCHMARKS: [&str; 9] = [
    "fillseq",
    "fillrandom",
    "overwrite",
    "fillsync",
    "readseq",
    "readrandom",
    "readmissing",
    "seekrandom",
    "deleterandom",
];

/// Settings of a db_bench run (db_bench's flags). [`DbBenchConfig::default`] is the one
/// source of the defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct DbBenchConfig {
    /// Benchmarks to run, in order (`--benchmarks`, default fillseq, fillrandom, readrandom).
    pub benchmarks: Vec<String>,
    /// Number of keys (`--num`, default 1,000,000).
    pub num: u64,
    /// Reads for the read benchmarks (`--reads`; default `None`: `num`).
    pub reads: Option<u64>,
    /// Key size in bytes (`--key_size`, default 16).
    pub key_size: usize,
    /// Value size in bytes (`--value_size`, default 100).
    pub value_size: usize,
    /// Worker threads (`--threads`, default 1; at least 1).
    pub threads: usize,
    /// Random seed (`--seed`, default 301).
    pub seed: u64,
    /// Sync every write (`--sync`, default off).
    pub sync: bool,
    /// Sync every N-th write (`--sync_every`; default 0 = never).
    pub sync_every: u64,
    /// Nexts after each seek in `seekrandom` (`--seek_nexts`, default 0).
    pub seek_nexts: usize,
    /// Puts per write batch (`--batch_size`, db_bench's `entries_per_batch`; default 1).
    pub batch_size: usize,
    /// Keep the existing database instead of starting fresh (`--use_existing_db`, default
    /// off).
    pub use_existing_db: bool,
    /// Flush the memtable at the end of each write benchmark, inside the timed part
    /// (`--flush`, default off).
    pub flush_after_write: bool,
    /// Wait at the end of each write benchmark, inside the timed part, until the engine has
    /// no flush or compaction running or due (`--settle`, default off): the rate then pays
    /// for the compaction the writes made necessary, which an engine that lets compaction
    /// debt trail would otherwise leave to the next benchmark ([`KvEngine::wait_for_background`]).
    pub settle_after_write: bool,
}

impl Default for DbBenchConfig {
    fn default() -> Self {
        DbBenchConfig {
            benchmarks: vec!["fillseq".into(), "fillrandom".into(), "readrandom".into()],
            num: 1_000_000,
            reads: None,
            key_size: 16,
            value_size: 100,
            threads: 1,
            seed: 301,
            sync: false,
            sync_every: 0,
            seek_nexts: 0,
            batch_size: 1,
            use_existing_db: false,
            flush_after_write: false,
            settle_after_write: false,
        }
    }
}

fn fresh(name: &str) -> bool {
    matches!(name, "fillseq" | "fillrandom" | "fillsync")
}

fn is_write(name: &str) -> bool {
    matches!(
        name,
        "fillseq" | "fillrandom" | "overwrite" | "fillsync" | "deleterandom"
    )
}

/// Checks the benchmark names and sizes before anything runs.
pub fn validate(cfg: &DbBenchConfig) -> Result<()> {
    for b in &cfg.benchmarks {
        if !BENCHMARKS.contains(&b.as_str()) {
            return Err(Error::invalid(format!(
                "unknown benchmark {b:?} (one of: {})",
                BENCHMARKS.join(", ")
            )));
        }
    }
    if cfg.num == 0 {
        return Err(Error::invalid("--num must be positive"));
    }
    if cfg.key_size == 0 {
        return Err(Error::invalid("--key_size must be positive"));
    }
    if cfg.threads == 0 {
        return Err(Error::invalid("--threads must be at least 1"));
    }
    Ok(())
}

/// The share of `total` operations that thread `t` of `threads` does, as a range.
fn share(total: u64, t: usize, threads: usize) -> std::ops::Range<u64> {
    let n = threads.max(1) as u64;
    let t = t as u64;
    (total * t / n)..(total * (t + 1) / n)
}

/// Runs the configured benchmarks on engines from `factory`, reporting progress and every
/// result to `obs` as soon as it is known.
pub fn run(
    factory: &EngineFactory,
    cfg: &DbBenchConfig,
    obs: &dyn Observer,
) -> Result<Vec<BenchResult>> {
    validate(cfg)?;
    let mut engine = factory.open(!cfg.use_existing_db)?;
    let mut pristine = true;
    let mut out = Vec::new();
    for (i, name) in cfg.benchmarks.iter().enumerate() {
        if obs.should_stop() {
            engine.close()?;
            return Err(Error::Interrupted);
        }
        // Each benchmark draws from its own random streams (db_bench seeds every benchmark's
        // threads anew), so that readrandom does not just revisit fillrandom's keys.
        let bench_cfg = DbBenchConfig {
            seed: cfg.seed.wrapping_add(i as u64 * 7919),
            ..cfg.clone()
        };
        if fresh(name) && !cfg.use_existing_db && !pristine {
            engine.close()?;
            engine = factory.open(true)?;
        }
        pristine = false;
        let r = run_one(engine.as_ref(), name, &bench_cfg, obs);
        if matches!(r, Err(Error::Interrupted)) {
            engine.close()?;
            return Err(Error::Interrupted);
        }
        let sync = SyncPolicy::of(cfg.sync || name == "fillsync", cfg.sync_every);
        report_result(factory, engine.as_ref(), sync, r?, obs, &mut out);
    }
    engine.close()?;
    Ok(out)
}

/// Runs one named benchmark on an open engine, reporting its progress to `obs`.
pub fn run_one(
    engine: &dyn KvEngine,
    name: &str,
    cfg: &DbBenchConfig,
    obs: &dyn Observer,
) -> Result<BenchResult> {
    let reads = cfg.reads.unwrap_or(cfg.num);
    let ops = match name {
        "fillsync" => (cfg.num / 1000).max(1),
        "readseq" | "readrandom" | "readmissing" | "seekrandom" => reads,
        _ => cfg.num,
    };
    let phase = Phase {
        engine,
        name: name.to_string(),
        threads: cfg.threads.max(1),
        expected_ops: ops,
        kinds: vec![],
        observer: obs,
        counts_found: matches!(name, "readrandom" | "readmissing" | "seekrandom"),
        key_size: cfg.key_size,
        value_size: cfg.value_size,
    };
    let threads = phase.threads;
    let dev_before = engine.device_counters();
    let mut r = run_phase(&phase, |t, ctx| {
        let seed = cfg
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(t as u64 + 1);
        let mut rng = SmallRng::seed_from_u64(seed);
        let range = share(ops, t, threads);
        match name {
            "fillseq" | "fillrandom" | "overwrite" | "fillsync" => {
                let sync_all = cfg.sync || name == "fillsync";
                do_write(
                    engine,
                    ctx,
                    cfg,
                    range,
                    name == "fillseq",
                    sync_all,
                    &mut rng,
                    seed,
                )
            }
            "deleterandom" => {
                let mut key = Vec::new();
                ctx.restart_clock();
                for _ in range {
                    format_key(rng.gen_range(0..cfg.num), cfg.key_size, &mut key);
                    if cfg.sync {
                        engine.write_batch(&[BatchOp::Delete(key.clone())], true)?;
                    } else {
                        engine.delete(&key)?;
                    }
                    ctx.done(0, key.len() as u64)?;
                }
                Ok(())
            }
            "readrandom" | "readmissing" => {
                let mut key = Vec::new();
                ctx.restart_clock();
                for _ in range {
                    format_key(rng.gen_range(0..cfg.num), cfg.key_size, &mut key);
                    if name == "readmissing" {
                        key.push(b'.');
                    }
                    // As db_bench: the value is looked at where the engine has it; its
                    // length counts.
                    let mut len = 0;
                    let hit = engine.get_with(&key, &mut |v| len = v.len())?;
                    ctx.done(0, (key.len() + len) as u64)?;
                    ctx.lookup(hit);
                }
                Ok(())
            }
            "seekrandom" => {
                let mut key = Vec::new();
                ctx.restart_clock();
                for _ in range {
                    format_key(rng.gen_range(0..cfg.num), cfg.key_size, &mut key);
                    let mut bytes = 0u64;
                    let mut hit = false;
                    engine.scan(&key, 1 + cfg.seek_nexts, &mut |k, v| {
                        if bytes == 0 && k == key.as_slice() {
                            hit = true;
                        }
                        bytes += (k.len() + v.len()) as u64;
                        true
                    })?;
                    ctx.done(0, bytes)?;
                    ctx.lookup(hit);
                }
                Ok(())
            }
            "readseq" => do_readseq(engine, ctx, cfg, range),
            other => Err(Error::invalid(format!("unknown benchmark {other:?}"))),
        }
    })?;
    if (cfg.flush_after_write || cfg.settle_after_write) && is_write(name) {
        let s = Instant::now();
        if cfg.flush_after_write {
            engine.flush()?;
        }
        if cfg.settle_after_write {
            engine.wait_for_background()?;
        }
        r.add_wall_seconds(s.elapsed().as_secs_f64());
        // The flush's and the settling's device work belong to the benchmark too.
        if let (Some(a), Some(b)) = (&dev_before, engine.device_counters()) {
            if let (Some(t0), Some(t1)) = (a.now_ns, b.now_ns) {
                let ds = t1.saturating_sub(t0) as f64 / 1e9;
                r.device_seconds = Some(ds);
                r.device_ops_per_sec = (ds > 0.0).then(|| r.ops as f64 / ds);
            }
            r.device_bytes_read = Some(b.bytes_read.saturating_sub(a.bytes_read));
            r.device_bytes_written = Some(b.bytes_written.saturating_sub(a.bytes_written));
        }
        r.write_amp = engine.write_amp();
        r.compaction_bytes = engine.compaction_bytes();
    }
    if is_write(name) {
        if let Some(ds) = r.device_seconds {
            // Durable at the end: every write synced, or the final flush timed in.
            let durable = cfg.flush_after_write
                || name == "fillsync"
                || SyncPolicy::of(cfg.sync, cfg.sync_every) == SyncPolicy::Every;
            r.device_time_durable = Some(durable);
            if durable {
                r.media_check = dev_before
                    .as_ref()
                    .and_then(|a| engine.media_limit(a))
                    .map(|limit| MediaCheck::new(r.bytes, ds, limit));
            }
        }
    }
    Ok(r)
}

#[allow(clippy::too_many_arguments)]
fn do_write(
    engine: &dyn KvEngine,
    ctx: &mut ThreadCtx<'_>,
    cfg: &DbBenchConfig,
    range: std::ops::Range<u64>,
    sequential: bool,
    sync_all: bool,
    rng: &mut SmallRng,
    seed: u64,
) -> Result<()> {
    let mut values = ValueGen::new(seed, cfg.value_size);
    let mut key = Vec::new();
    let batch = cfg.batch_size.max(1) as u64;
    let mut written = 0u64;
    let mut i = range.start;
    ctx.restart_clock();
    while i < range.end {
        let n = batch.min(range.end - i);
        written += n;
        let sync = sync_all || (cfg.sync_every > 0 && written % cfg.sync_every < n);
        let mut next_key = |j: u64, key: &mut Vec<u8>| {
            let k = if sequential {
                j
            } else {
                rng.gen_range(0..cfg.num)
            };
            format_key(k, cfg.key_size, key);
        };
        if n == 1 && !sync {
            next_key(i, &mut key);
            let v = values.next(cfg.value_size);
            engine.put(&key, v)?;
            ctx.done(0, (key.len() + v.len()) as u64)?;
        } else {
            let mut ops = Vec::with_capacity(n as usize);
            for j in i..i + n {
                next_key(j, &mut key);
                ops.push(BatchOp::Put(
                    key.clone(),
                    values.next(cfg.value_size).to_vec(),
                ));
            }
            let bytes: u64 = ops
                .iter()
                .map(|o| match o {
                    BatchOp::Put(k, v) => (k.len() + v.len()) as u64,
                    BatchOp::Delete(k) => k.len() as u64,
                })
                .sum();
            let s = Instant::now();
            engine.write_batch(&ops, sync)?;
            // One latency sample per batch, but every put counts as an operation.
            let ns = s.elapsed().as_nanos() as u64;
            for _ in 0..n {
                ctx.record_ns(0, ns / n, bytes / n)?;
            }
            ctx.restart_clock();
        }
        i += n;
    }
    Ok(())
}

fn do_readseq(
    engine: &dyn KvEngine,
    ctx: &mut ThreadCtx<'_>,
    cfg: &DbBenchConfig,
    range: std::ops::Range<u64>,
) -> Result<()> {
    // Each thread iterates its share starting at the matching fraction of the key space.
    let mut start = Vec::new();
    if range.start > 0 {
        let frac = range.start as f64 / cfg.reads.unwrap_or(cfg.num).max(1) as f64;
        format_key((frac * cfg.num as f64) as u64, cfg.key_size, &mut start);
    }
    let want = (range.end - range.start) as usize;
    let mut stopped = None;
    ctx.restart_clock();
    engine.scan(
        &start,
        want,
        &mut |k, v| match ctx.done(0, (k.len() + v.len()) as u64) {
            Ok(()) => true,
            Err(e) => {
                stopped = Some(e);
                false
            }
        },
    )?;
    stopped.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_the_total_without_overlap() {
        let mut next = 0;
        for t in 0..3 {
            let r = share(10, t, 3);
            assert_eq!(r.start, next);
            next = r.end;
        }
        assert_eq!(next, 10);
    }

    #[test]
    fn unknown_benchmarks_are_refused_up_front() {
        let cfg = DbBenchConfig {
            benchmarks: vec!["fillseq".into(), "fillbogus".into()],
            ..Default::default()
        };
        assert!(validate(&cfg).is_err());
    }
}
