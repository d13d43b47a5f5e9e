//! What every SMRDB figure shares: the collected tables, results and plot files ([`Out`]),
//! and measuring one phase in device time on a fresh engine.

use crate::dbbench::{self, DbBenchConfig};
use crate::error::{Error, Result};
use crate::observer::{Observer, Quiet};
use crate::report::BenchResult;
use std::path::PathBuf;
use tegula_device::DiskConfig;
use tegula_kv::{DeviceCounters, EngineFactory, EngineKind, EngineOptions, KvEngine, Target};

use super::{MIB, VALUE};

/// Everything a run collects.
pub(super) struct Out<'a> {
    /// The markdown tables so far.
    pub md: String,
    /// Every measured result, labelled `figNN-…`.
    pub results: Vec<BenchResult>,
    /// Plot files written.
    pub files: Vec<PathBuf>,
    dir: PathBuf,
    obs: &'a dyn Observer,
    /// Random seed of every run.
    pub seed: u64,
    /// Engine options of every run (the defaults plus the SMRDB options asked for).
    pub opts: EngineOptions,
}

impl<'a> Out<'a> {
    /// An empty collection writing plots into `dir`.
    pub fn new(dir: PathBuf, obs: &'a dyn Observer, seed: u64, opts: EngineOptions) -> Self {
        Out {
            md: String::new(),
            results: Vec::new(),
            files: Vec::new(),
            dir,
            obs,
            seed,
            opts,
        }
    }

    /// Reports the next step.
    pub fn step(&self, msg: &str) {
        self.obs.step(msg);
    }

    /// Keeps `r` under the name `label`; returns it.
    pub fn keep(&mut self, mut r: BenchResult, label: String) -> BenchResult {
        r.benchmark = label;
        self.results.push(r.clone());
        r
    }

    /// The path of plot `name`, recorded as written.
    pub fn svg(&mut self, name: &str) -> PathBuf {
        let p = self.dir.join(name);
        self.files.push(p.clone());
        p
    }
}

/// One measured phase on an emulated drive, in device time; with `drain`, background
/// compaction is waited for and counted.
pub(super) fn measure(
    engine: &dyn KvEngine,
    bench: &str,
    cfg: &DbBenchConfig,
    drain: bool,
) -> Result<BenchResult> {
    let before = counters(engine)?;
    let mut r = dbbench::run_one(engine, bench, cfg, &Quiet)?;
    if drain {
        engine.wait_for_background()?;
    }
    finish_measure(engine, &mut r, &before);
    Ok(r)
}

/// The device counters of an engine on an emulated drive.
pub(super) fn counters(engine: &dyn KvEngine) -> Result<DeviceCounters> {
    engine
        .device_counters()
        .filter(|c| c.now_ns.is_some())
        .ok_or_else(|| Error::internal("the engine is not on an emulated drive"))
}

/// Fills in the device figures of `r` since `before`, and the engine's statistics.
pub(super) fn finish_measure(engine: &dyn KvEngine, r: &mut BenchResult, before: &DeviceCounters) {
    if let Some(after) = engine.device_counters() {
        let ds = after
            .now_ns
            .unwrap_or(0)
            .saturating_sub(before.now_ns.unwrap_or(0)) as f64
            / 1e9;
        r.device_seconds = Some(ds);
        r.device_ops_per_sec = (ds > 0.0).then(|| r.ops as f64 / ds);
        r.device_bytes_read = Some(after.bytes_read.saturating_sub(before.bytes_read));
        r.device_bytes_written = Some(after.bytes_written.saturating_sub(before.bytes_written));
    }
    r.write_amp = engine.write_amp();
    r.compaction_bytes = engine.compaction_bytes();
    r.engine_stats = engine.stats_json();
}

/// A number from the engine statistics of `r` (0 if absent).
pub(super) fn stat(r: &BenchResult, key: &str) -> f64 {
    r.engine_stats
        .as_ref()
        .and_then(|s| s.get(key))
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0)
}

/// Operations per device second.
pub(super) fn dev_ops(r: &BenchResult) -> f64 {
    r.device_ops_per_sec.unwrap_or(0.0)
}

/// Key and value MB per device second.
pub(super) fn dev_mb(r: &BenchResult) -> f64 {
    match r.device_seconds {
        Some(d) if d > 0.0 => r.bytes as f64 / 1e6 / d,
        _ => 0.0,
    }
}

/// Bytes in MiB.
pub(super) fn mib(b: f64) -> f64 {
    b / MIB as f64
}

/// A factory of `kind` on a fresh in-memory drive of `cfg`.
pub(super) fn factory(
    kind: EngineKind,
    cfg: &DiskConfig,
    opts: EngineOptions,
) -> Result<EngineFactory> {
    Ok(EngineFactory::new(
        kind,
        Target::Emulated(cfg.clone()),
        opts,
    )?)
}

/// db_bench settings of one measured phase.
pub(super) fn bench_cfg(num: u64, value_size: usize, seed: u64) -> DbBenchConfig {
    DbBenchConfig {
        benchmarks: vec![],
        num,
        value_size,
        seed,
        ..DbBenchConfig::default()
    }
}

/// The two organisations the figures compare.
pub(super) const ENGINES: [EngineKind; 2] = [EngineKind::Tegula, EngineKind::TegulaLoc];

/// The paper's name of an engine.
pub(super) fn label(kind: EngineKind) -> &'static str {
    match kind {
        EngineKind::Tegula => "SMRDB-SOC",
        EngineKind::TegulaLoc => "SMRDB-LOC",
        other => other.name(),
    }
}

/// A fresh engine of `kind` filled with `puts` random 4 KiB puts (drained); returns the
/// engine and the fill's result.
pub(super) fn random_fill(
    kind: EngineKind,
    cfg: &DiskConfig,
    opts: EngineOptions,
    puts: u64,
    seed: u64,
) -> Result<(Box<dyn KvEngine>, BenchResult)> {
    let f = factory(kind, cfg, opts)?;
    let engine = f.open(true)?;
    let r = measure(
        engine.as_ref(),
        "fillrandom",
        &bench_cfg(puts, VALUE, seed),
        true,
    )?;
    Ok((engine, r))
}

/// [`random_fill`], then a `readseq` over the `puts` keys; closes the engine and returns the
/// fill's and the scan's results.
pub(super) fn fill_then_readseq(
    kind: EngineKind,
    cfg: &DiskConfig,
    opts: EngineOptions,
    puts: u64,
    seed: u64,
) -> Result<(BenchResult, BenchResult)> {
    let (engine, fill) = random_fill(kind, cfg, opts, puts, seed)?;
    let mut c = bench_cfg(puts, VALUE, seed);
    c.reads = Some(puts);
    let rs = measure(engine.as_ref(), "readseq", &c, false)?;
    engine.close()?;
    Ok((fill, rs))
}
