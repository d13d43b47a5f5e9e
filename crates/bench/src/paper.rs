//! `tegula bench paper smrdb`: scaled-down reproductions of the evaluation of the SMRDB paper
//! (seed 000, Pitchumani et al., SYSTOR 2015, section 5, Figures 7-15) on the modelled disks.
//!
//! Every figure runs SMRDB on a fresh in-memory emulated drive and reports **modelled device
//! time** (the drive's virtual clock, which advances by the service time of every I/O of the
//! foreground and the background threads): throughput = work / device seconds. Background
//! compaction is drained at the end of every write phase and its I/O counted, so that an
//! engine cannot look fast by leaving work behind. The paper's LevelDB runs on a file system on
//! the same disk; a file system is not modelled here, so SMRDB-LOC (the LevelDB-style
//! organisation of section 3, on the same device) stands in for it, as the issue asks.
//!
//! | figure | experiment |
//! | --- | --- |
//! | 7 | raw sequential write bandwidth of the drive (1 MiB writes over the first bands) |
//! | 8 | sequential puts, sync every 1 / 10 / 100 / 1000 puts or never, and without the log, per value size |
//! | 9 | random puts (4 KiB values), SOC vs LOC; sequential read after them |
//! | 10 | compaction bytes read / written and compaction device time of figure 9's puts |
//! | 11 | L0 compaction-trigger sweep (slowdown = trigger + 4, stop = trigger + 8), SOC |
//! | 12 | random reads after a sequential and after a random load, SOC vs LOC |
//! | 13 | band-size sweep of random puts, SOC vs LOC |
//! | 14 | YCSB load, A, B, D with 4 KiB values, SOC vs LOC |
//! | 15 | throughput of figure 14's load phase over device time |
//!
//! Figures 7-10 run on every profile given (`hm-smr` and `cmr-7200` by default; the
//! conventional drive is banded by SMRDB as in the paper: zones of the band size, a few
//! conventional ones at the start, sequential-write-required the rest, no shingling); figures
//! 11-15 on the first. The output directory receives `paper-smrdb.md` (the tables),
//! `results.json` (every run, in the JSON schema of `tegula bench db`) and one SVG per figure.

use crate::dbbench::{self, DbBenchConfig};
use crate::engine::{EngineFactory, EngineKind, EngineOptions, KvEngine, Target};
use crate::plot::{bars, bucket_for, chart, rate_series, Series};
use crate::report::{write_json, BenchResult};
use crate::ycsb::{self, YcsbConfig};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;
use tegula_device::{
    profile, BlockDevice, Disk, DiskConfig, DriveKind, ZoneFilter, ZoneType, ZonedDevice,
};

/// How much work each figure does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scale {
    /// Seconds: 1 MiB bands, a few MiB per figure (the tests use it).
    Tiny,
    /// About half a minute: 4 MiB bands, 256 MiB of random puts (the default).
    Small,
    /// About three minutes: 16 MiB bands, 1 GiB of random puts, the paper's 100 KiB values too.
    Full,
}

/// `tegula bench paper`.
#[derive(Debug, Clone, Args)]
pub struct PaperArgs {
    /// The paper to reproduce (only `smrdb`, seed 000).
    #[arg(value_parser = ["smrdb"])]
    pub paper: String,
    /// Amount of work.
    #[arg(long, value_enum, default_value = "small")]
    pub scale: Scale,
    /// Output directory (markdown table, JSON, SVG plots).
    #[arg(long, value_name = "DIR", default_value = "paper-smrdb")]
    pub out: PathBuf,
    /// Drive profiles, comma-separated; figures 7-10 run on each, 11-15 on the first.
    #[arg(long, default_value = "hm-smr,cmr-7200")]
    pub profiles: String,
    /// Figures to run, comma-separated numbers 7-15 (default: all).
    #[arg(long)]
    pub figures: Option<String>,
    /// Band (zone) size, overriding the scale's (figure 13 still sweeps its own sizes).
    #[arg(long, value_parser = crate::cli::size_arg)]
    pub band: Option<u64>,
    /// Drive capacity, overriding the scale's.
    #[arg(long, value_parser = crate::cli::size_arg)]
    pub capacity: Option<u64>,
    /// An SMRDB option for every run, NAME=VALUE (a field of `tegula_smrdb::Options`); repeatable.
    #[arg(long = "smrdb_option", alias = "smrdb-option", value_name = "NAME=VALUE", value_parser = crate::engine::parse_engine_option)]
    pub smrdb_option: Vec<(String, serde_json::Value)>,
    /// Random seed.
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    /// Never show a progress bar.
    #[arg(long = "no_progress", alias = "no-progress")]
    pub no_progress: bool,
}

/// The sizes of one scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizes {
    /// Band (zone) size in bytes.
    pub band: u64,
    /// Emulated drive capacity in bytes.
    pub capacity: u64,
    /// Figure 7: bytes written sequentially.
    pub raw_bytes: u64,
    /// Figure 8: puts per run for each value size (100 B, 4 KiB, 100 KiB; 0 = skip).
    pub seq_puts: [(usize, u64); 3],
    /// Figures 9-13: random puts of 4 KiB values.
    pub rand_puts: u64,
    /// Figure 12: random reads.
    pub reads: u64,
    /// Figure 11: L0 compaction triggers.
    pub l0_triggers: Vec<usize>,
    /// Figure 13: band sizes.
    pub band_sizes: Vec<u64>,
    /// Figure 14: YCSB records and operations.
    pub ycsb_records: u64,
    /// Figure 14: YCSB run-phase operations.
    pub ycsb_ops: u64,
}

const MIB: u64 = 1 << 20;
const VALUE: usize = 4096;

impl Scale {
    /// The sizes of this scale.
    pub fn sizes(self) -> Sizes {
        match self {
            Scale::Tiny => Sizes {
                band: MIB,
                capacity: 256 * MIB,
                raw_bytes: 8 * MIB,
                seq_puts: [(100, 2000), (4096, 400), (102_400, 0)],
                rand_puts: 1536,
                reads: 200,
                l0_triggers: vec![2, 4],
                band_sizes: vec![MIB, 2 * MIB],
                ycsb_records: 768,
                ycsb_ops: 256,
            },
            Scale::Small => Sizes {
                band: 4 * MIB,
                capacity: 2048 * MIB,
                raw_bytes: 64 * MIB,
                seq_puts: [(100, 50_000), (4096, 4000), (102_400, 0)],
                rand_puts: 65_536,
                reads: 2000,
                l0_triggers: vec![4, 8, 12, 16],
                band_sizes: vec![2 * MIB, 4 * MIB, 8 * MIB, 16 * MIB],
                ycsb_records: 16_384,
                ycsb_ops: 4096,
            },
            Scale::Full => Sizes {
                band: 16 * MIB,
                capacity: 16384 * MIB,
                raw_bytes: 1024 * MIB,
                seq_puts: [(100, 500_000), (4096, 50_000), (102_400, 4000)],
                rand_puts: 262_144,
                reads: 20_000,
                l0_triggers: vec![4, 8, 12, 16, 20],
                band_sizes: vec![4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB, 64 * MIB],
                ycsb_records: 65_536,
                ycsb_ops: 200_000,
            },
        }
    }
}

/// The emulated drive of `profile_name` at `capacity` with bands of `band` bytes. A
/// conventional profile (`cmr-7200`) is banded by SMRDB as the paper does on its HDD: the
/// same media and mechanics, a few conventional zones at the start, the rest
/// sequential-write-required, no shingling.
pub fn drive(profile_name: &str, band: u64, capacity: u64) -> Result<DiskConfig> {
    let mut cfg = profile(profile_name)?;
    if cfg.kind == DriveKind::Cmr {
        cfg.kind = DriveKind::HmSmr;
        cfg.shingle.overlap_tracks = 1;
    }
    cfg.capacity = capacity;
    cfg.zones.zone_size = band;
    // SMRDB keeps only a superblock and the band manifest there: a handful of zones suffice.
    cfg.zones.conventional_zones = Some(4);
    cfg.validate()?;
    Ok(cfg)
}

/// Everything a run collects.
struct Out {
    md: String,
    results: Vec<BenchResult>,
    files: Vec<PathBuf>,
    dir: PathBuf,
    bar: Option<indicatif::ProgressBar>,
    seed: u64,
    /// Engine options of every run (the defaults plus `--smrdb_option`s).
    opts: EngineOptions,
}

impl Out {
    fn step(&self, msg: &str) {
        match &self.bar {
            Some(b) => {
                b.set_message(msg.to_string());
                b.inc(1);
            }
            None => eprintln!("paper smrdb: {msg}"),
        }
    }

    fn keep(&mut self, mut r: BenchResult, label: String) -> BenchResult {
        r.benchmark = label;
        self.results.push(r.clone());
        r
    }

    fn svg(&mut self, name: &str) -> PathBuf {
        let p = self.dir.join(name);
        self.files.push(p.clone());
        p
    }
}

/// One measured phase on an emulated drive, in device time.
fn measure(
    engine: &dyn KvEngine,
    bench: &str,
    cfg: &DbBenchConfig,
    drain: bool,
) -> Result<BenchResult> {
    let before = engine
        .device_counters()
        .context("the engine is not on an emulated drive")?;
    let mut r = dbbench::run_one(engine, bench, cfg)?;
    if drain {
        engine.wait_for_background()?;
    }
    finish_measure(engine, &mut r, before);
    Ok(r)
}

fn finish_measure(engine: &dyn KvEngine, r: &mut BenchResult, before: crate::DeviceCounters) {
    if let Some(after) = engine.device_counters() {
        let ds = after.now_ns.saturating_sub(before.now_ns) as f64 / 1e9;
        r.device_seconds = Some(ds);
        r.device_ops_per_sec = (ds > 0.0).then(|| r.ops as f64 / ds);
        r.device_bytes_read = Some(after.bytes_read.saturating_sub(before.bytes_read));
        r.device_bytes_written = Some(after.bytes_written.saturating_sub(before.bytes_written));
    }
    r.write_amp = engine.write_amp();
    r.compaction_bytes = engine.compaction_bytes();
    r.engine_stats = engine.stats_json();
}

fn stat(r: &BenchResult, key: &str) -> f64 {
    r.engine_stats
        .as_ref()
        .and_then(|s| s.get(key))
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0)
}

fn dev_ops(r: &BenchResult) -> f64 {
    r.device_ops_per_sec.unwrap_or(0.0)
}

fn dev_mb(r: &BenchResult) -> f64 {
    match r.device_seconds {
        Some(d) if d > 0.0 => r.bytes as f64 / 1e6 / d,
        _ => 0.0,
    }
}

fn mib(b: f64) -> f64 {
    b / MIB as f64
}

fn factory(kind: EngineKind, cfg: &DiskConfig, opts: EngineOptions) -> Result<EngineFactory> {
    EngineFactory::new(kind, Target::Emulated(cfg.clone()), opts)
}

fn bench_cfg(num: u64, value_size: usize, seed: u64) -> DbBenchConfig {
    DbBenchConfig {
        benchmarks: vec![],
        num,
        value_size,
        seed,
        progress: false,
        ..DbBenchConfig::default()
    }
}

const ENGINES: [EngineKind; 2] = [EngineKind::Tegula, EngineKind::TegulaLoc];

fn label(kind: EngineKind) -> &'static str {
    match kind {
        EngineKind::Tegula => "SMRDB-SOC",
        EngineKind::TegulaLoc => "SMRDB-LOC",
        other => other.name(),
    }
}

/// Figure 7: raw sequential write bandwidth over the first sequential bands, in MB/s of
/// device time: `(one 1 MiB write at a time, 32 queued 1 MiB writes per batch)`. The second is
/// the media's sustained sequential rate there (what `fio` with a queue measures); the first
/// is what a writer that waits for each write gets.
pub fn raw_seq_write(cfg: &DiskConfig, bytes: u64) -> Result<(f64, f64)> {
    Ok((raw_pass(cfg, bytes, 1)?, raw_pass(cfg, bytes, 32)?))
}

fn raw_pass(cfg: &DiskConfig, bytes: u64, depth: usize) -> Result<f64> {
    let mut cfg = cfg.clone();
    cfg.store_data = false;
    let disk = Disk::in_memory(cfg).context("creating the drive")?;
    let zones = disk.report_zones(ZoneFilter::All);
    let ss = disk.info().sector_size as u64;
    let mut extents = Vec::new();
    let mut planned = 0u64;
    for z in zones
        .iter()
        .filter(|z| z.zone_type != ZoneType::Conventional)
    {
        let mut lba = z.start_lba;
        while lba < z.end_lba() && planned < bytes {
            let n = ((z.end_lba() - lba) * ss).min(MIB);
            extents.push((lba, n as usize));
            lba += n / ss;
            planned += n;
        }
        if planned >= bytes {
            break;
        }
    }
    let t0 = disk.now();
    for batch in extents.chunks(depth.max(1)) {
        let reqs = batch
            .iter()
            .map(|&(lba, n)| tegula_device::Request::Write {
                lba,
                data: vec![0x5a; n],
                fua: false,
            })
            .collect();
        for c in disk.submit(reqs) {
            c?;
        }
    }
    disk.flush()?;
    let secs = disk.now().saturating_sub(t0) as f64 / 1e9;
    if secs <= 0.0 {
        bail!("the drive reported no time for {planned} bytes");
    }
    Ok(planned as f64 / 1e6 / secs)
}

fn figures(list: &Option<String>) -> Result<Vec<u32>> {
    match list {
        None => Ok((7..=15).collect()),
        Some(s) => s
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| {
                let n: u32 = p.trim().parse().context("figure numbers are 7..15")?;
                if !(7..=15).contains(&n) {
                    bail!("no figure {n} (7..15)");
                }
                Ok(n)
            })
            .collect(),
    }
}

/// Runs the reproduction and writes `paper-smrdb.md`, `results.json` and the SVG plots into
/// `args.out`. Returns every measured result.
pub fn run(args: &PaperArgs) -> Result<Vec<BenchResult>> {
    if args.paper != "smrdb" {
        bail!("unknown paper {:?} (smrdb)", args.paper);
    }
    let mut sizes = args.scale.sizes();
    if let Some(b) = args.band {
        sizes.band = b;
    }
    if let Some(c) = args.capacity {
        sizes.capacity = c;
    }
    let profiles: Vec<String> = args
        .profiles
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let Some(first) = profiles.first().cloned() else {
        bail!("no profile given");
    };
    for p in &profiles {
        drive(p, sizes.band, sizes.capacity).with_context(|| format!("profile {p}"))?;
    }
    let figs = figures(&args.figures)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;

    let steps = count_steps(&figs, &sizes, profiles.len());
    let bar = (!args.no_progress && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(steps);
        let style = indicatif::ProgressStyle::with_template(
            "paper smrdb [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        b.set_style(style);
        b
    });
    let mut out = Out {
        md: String::new(),
        results: Vec::new(),
        files: Vec::new(),
        dir: args.out.clone(),
        bar,
        seed: args.seed,
        opts: EngineOptions {
            smrdb_options: args.smrdb_option.clone(),
            ..EngineOptions::default()
        },
    };
    let t0 = Instant::now();
    let _ = writeln!(
        out.md,
        "# SMRDB (seed 000), Figures 7-15, scale {:?}\n\n\
         Generated by `{}`. Throughputs are per **modelled \
         device second** on an in-memory emulated drive (background compaction drained and \
         counted). Bands of {} (figure 13 varies them), drive capacity {}, 16-byte keys. \
         SMRDB-LOC, the LevelDB-style organisation on the same drive, stands in for the \
         paper's LevelDB.\n",
        args.scale,
        command_line(args),
        tegula_device::format_size(sizes.band),
        tegula_device::format_size(sizes.capacity),
    );

    let mut raw = Vec::new();
    if figs.contains(&7) || figs.contains(&8) {
        for p in &profiles {
            out.step(&format!("fig 7 {p}"));
            raw.push((
                p.clone(),
                raw_seq_write(&drive(p, sizes.band, sizes.capacity)?, sizes.raw_bytes)?,
            ));
        }
        fig7(&mut out, &sizes, &raw)?;
    }
    if figs.contains(&8) {
        fig8(&mut out, &sizes, &profiles, &raw)?;
    }
    if figs.contains(&9) || figs.contains(&10) {
        fig9_10(&mut out, &sizes, &profiles)?;
    }
    if figs.contains(&11) {
        fig11(&mut out, &sizes, &first)?;
    }
    if figs.contains(&12) {
        fig12(&mut out, &sizes, &first)?;
    }
    if figs.contains(&13) {
        fig13(&mut out, &sizes, &first)?;
    }
    if figs.contains(&14) || figs.contains(&15) {
        fig14_15(&mut out, &sizes, &first)?;
    }
    if let Some(b) = &out.bar {
        b.finish_and_clear();
    }
    let _ = writeln!(
        out.md,
        "\nWall time of the whole reproduction: {:.1} s.",
        t0.elapsed().as_secs_f64()
    );
    let md = args.out.join("paper-smrdb.md");
    std::fs::write(&md, &out.md).with_context(|| format!("writing {}", md.display()))?;
    let json = args.out.join("results.json");
    write_json(&json, &out.results)?;
    print!("{}", out.md);
    eprintln!("wrote {} and {}", md.display(), json.display());
    for f in &out.files {
        eprintln!("plot: {}", f.display());
    }
    Ok(out.results)
}

/// The command that reproduces this run.
fn command_line(args: &PaperArgs) -> String {
    let mut c = format!(
        "tegula bench paper smrdb --scale {}",
        format!("{:?}", args.scale).to_lowercase()
    );
    if let Some(b) = args.band {
        let _ = write!(c, " --band {}", b);
    }
    if let Some(b) = args.capacity {
        let _ = write!(c, " --capacity {}", b);
    }
    if args.profiles != "hm-smr,cmr-7200" {
        let _ = write!(c, " --profiles {}", args.profiles);
    }
    if let Some(f) = &args.figures {
        let _ = write!(c, " --figures {f}");
    }
    for (k, v) in &args.smrdb_option {
        let _ = write!(c, " --smrdb_option {k}={v}");
    }
    if args.seed != 301 {
        let _ = write!(c, " --seed {}", args.seed);
    }
    c
}

fn count_steps(figs: &[u32], s: &Sizes, profiles: usize) -> u64 {
    let p = profiles as u64;
    let seq = s.seq_puts.iter().filter(|v| v.1 > 0).count() as u64;
    let mut n = 0;
    if figs.contains(&7) || figs.contains(&8) {
        n += p;
    }
    if figs.contains(&8) {
        n += p * seq * 5;
    }
    if figs.contains(&9) || figs.contains(&10) {
        n += p * 2;
    }
    if figs.contains(&11) {
        n += s.l0_triggers.len() as u64;
    }
    if figs.contains(&12) {
        n += 4;
    }
    if figs.contains(&13) {
        n += 2 * s.band_sizes.len() as u64;
    }
    if figs.contains(&14) || figs.contains(&15) {
        n += 2;
    }
    n
}

fn fig7(out: &mut Out, s: &Sizes, raw: &[(String, (f64, f64))]) -> Result<()> {
    let _ = writeln!(
        out.md,
        "## Figure 7: raw sequential write bandwidth\n\n\
         {} of 1 MiB writes from the first sequential band on, one at a time and 32 queued \
         (what `fio` measured in the paper). The queued figure is the media's sustained \
         sequential write bandwidth there: the limit figure 8's puts are measured against.\n\n\
         | drive | MB/s, 1 MiB writes one at a time | MB/s, 32 queued (media limit) |\n\
         | --- | ---: | ---: |",
        tegula_device::format_size(s.raw_bytes)
    );
    for (p, (one, queued)) in raw {
        let _ = writeln!(out.md, "| {p} | {one:.1} | {queued:.1} |");
    }
    let cats: Vec<String> = raw.iter().map(|r| r.0.clone()).collect();
    let p = out.svg("fig07-raw-seq-write.svg");
    bars(
        &p,
        "Figure 7: raw sequential write bandwidth",
        "MB/s (device time)",
        &cats,
        &[
            (
                "one at a time".to_string(),
                raw.iter().map(|r| r.1 .0).collect(),
            ),
            (
                "32 queued".to_string(),
                raw.iter().map(|r| r.1 .1).collect(),
            ),
        ],
    )
}

/// Figure 8's sync intervals (0: never); `None` is the run without the log.
const SYNCS: [Option<u64>; 6] = [Some(1), Some(10), Some(100), Some(1000), Some(0), None];

fn sync_name(s: Option<u64>) -> String {
    match s {
        Some(0) => "never".into(),
        Some(n) => n.to_string(),
        None => "no-log".into(),
    }
}

fn fig8(out: &mut Out, s: &Sizes, profiles: &[String], raw: &[(String, (f64, f64))]) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figure 8: sequential puts with a sync every N puts\n\n\
         `fillseq` with `--sync_every N` on SMRDB-SOC, and without the log (`--disable_wal`, \
         durable once flushed: the paper's \"logging disabled\"); MB/s of keys and values per \
         device second, the final flush included, and in brackets that figure as a share of \
         the media's sustained sequential write bandwidth (figure 7, queued). With the log \
         every byte is written twice, to a log band and to a data band.\n\n\
         | drive | value | puts | sync 1 | sync 10 | sync 100 | sync 1000 | never | no log |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let cats: Vec<String> = SYNCS.iter().map(|&x| sync_name(x)).collect();
    let mut series = Vec::new();
    for p in profiles {
        let cfg = drive(p, s.band, s.capacity)?;
        let raw_mb = raw.iter().find(|r| &r.0 == p).map_or(0.0, |r| r.1 .1);
        for &(value, puts) in s.seq_puts.iter().filter(|v| v.1 > 0) {
            let mut row = format!("| {p} | {value} B | {puts} |");
            let mut ys = Vec::new();
            for &sync in &SYNCS {
                out.step(&format!("fig 8 {p} {value} B sync {}", sync_name(sync)));
                let opts = EngineOptions {
                    disable_wal: sync.is_none(),
                    ..out.opts.clone()
                };
                let f = factory(EngineKind::Tegula, &cfg, opts)?;
                let engine = f.open(true)?;
                let mut c = bench_cfg(puts, value, out.seed);
                c.sync_every = sync.unwrap_or(0);
                // Every run ends with its data in bands: without the log nothing else holds it.
                c.flush_after_write = true;
                let r = measure(engine.as_ref(), "fillseq", &c, true)?;
                engine.close()?;
                let mb = dev_mb(&r);
                let share = if raw_mb > 0.0 {
                    100.0 * mb / raw_mb
                } else {
                    0.0
                };
                let _ = write!(row, " {mb:.2} ({share:.0}%) |");
                ys.push(mb);
                out.keep(r, format!("fig08-{p}-v{value}-sync-{}", sync_name(sync)));
            }
            let _ = writeln!(out.md, "{row}");
            series.push((format!("{p} {value} B"), ys));
        }
    }
    let p = out.svg("fig08-seq-put-sync.svg");
    bars(
        &p,
        "Figure 8: sequential puts, sync every N puts or no log (SMRDB-SOC)",
        "MB/s of keys+values (device time)",
        &cats,
        &series,
    )
}

/// A fresh engine of `kind` filled with `s.rand_puts` random 4 KiB puts (drained); returns the
/// engine and the fill's result.
fn random_fill(
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

fn fig9_10(out: &mut Out, s: &Sizes, profiles: &[String]) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figures 9 and 10: random puts, SOC vs LOC, and the compaction behind them\n\n\
         `fillrandom` of {} puts of 16 B keys and 4 KiB values ({:.0} MiB), no sync, then \
         `readseq` over the whole database. Compaction figures are SMRDB's own statistics \
         (bytes read and written by compactions, modelled device time of compaction I/O); \
         write amplification is (flush + compaction bytes) / user bytes.\n\n\
         | drive | engine | put ops/s | put MB/s | device s | compaction read MiB | compaction written MiB | compaction device s | write amp | readseq MB/s |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        s.rand_puts,
        mib((s.rand_puts * (VALUE as u64 + 16)) as f64)
    );
    let mut put_series = Vec::new();
    let mut comp_series = Vec::new();
    let mut ratio_rows = Vec::new();
    for p in profiles {
        let cfg = drive(p, s.band, s.capacity)?;
        let mut per = Vec::new();
        for kind in ENGINES {
            out.step(&format!("fig 9 {p} {}", label(kind)));
            let (engine, fill) = random_fill(kind, &cfg, out.opts.clone(), s.rand_puts, out.seed)?;
            let mut c = bench_cfg(s.rand_puts, VALUE, out.seed);
            c.reads = Some(s.rand_puts);
            let rs = measure(engine.as_ref(), "readseq", &c, false)?;
            engine.close()?;
            let _ = writeln!(
                out.md,
                "| {p} | {} | {:.0} | {:.2} | {:.2} | {:.1} | {:.1} | {:.2} | {:.2} | {:.1} |",
                label(kind),
                dev_ops(&fill),
                dev_mb(&fill),
                fill.device_seconds.unwrap_or(0.0),
                mib(stat(&fill, "compaction_bytes_read")),
                mib(stat(&fill, "compaction_bytes_written")),
                stat(&fill, "compaction_time_ns") / 1e9,
                fill.write_amp.unwrap_or(0.0),
                dev_mb(&rs),
            );
            per.push((
                dev_ops(&fill),
                stat(&fill, "compaction_bytes_read") + stat(&fill, "compaction_bytes_written"),
                fill.device_seconds.unwrap_or(0.0),
            ));
            let fill = out.keep(fill, format!("fig09-{p}-{}-fillrandom", kind.name()));
            out.keep(rs.clone(), format!("fig09-{p}-{}-readseq", kind.name()));
            put_series.push((format!("{p} {}", label(kind)), dev_ops(&fill), dev_mb(&rs)));
            comp_series.push((
                format!("{p} {}", label(kind)),
                mib(stat(&fill, "compaction_bytes_read")),
                mib(stat(&fill, "compaction_bytes_written")),
                stat(&fill, "compaction_time_ns") / 1e9,
            ));
        }
        if let [soc, loc] = per[..] {
            ratio_rows.push(format!(
                "| {p} | {:.2}x | {:.2}x |",
                if soc.2 > 0.0 { loc.2 / soc.2 } else { 0.0 },
                if soc.1 > 0.0 {
                    loc.1 / soc.1
                } else {
                    f64::INFINITY
                },
            ));
        }
    }
    let _ = writeln!(
        out.md,
        "\nSOC against LOC (the issue's target: SOC ≥ 1.5x faster with fewer compaction bytes):\n\n\
         | drive | LOC device time / SOC device time | LOC compaction bytes / SOC compaction bytes |\n\
         | --- | ---: | ---: |"
    );
    for r in ratio_rows {
        let _ = writeln!(out.md, "{r}");
    }
    let p = out.svg("fig09-random-put.svg");
    bars(
        &p,
        "Figure 9: random puts (4 KiB values)",
        "puts per device second",
        &["random put".to_string()],
        &put_series
            .iter()
            .map(|x| (x.0.clone(), vec![x.1]))
            .collect::<Vec<_>>(),
    )?;
    let p = out.svg("fig09-readseq-after-random-put.svg");
    bars(
        &p,
        "Figure 9: sequential read after the random puts",
        "MB/s (device time)",
        &["readseq".to_string()],
        &put_series
            .iter()
            .map(|x| (x.0.clone(), vec![x.2]))
            .collect::<Vec<_>>(),
    )?;
    let p = out.svg("fig10-compaction-bytes.svg");
    bars(
        &p,
        "Figure 10: compaction data read and written",
        "MiB",
        &["read".to_string(), "written".to_string()],
        &comp_series
            .iter()
            .map(|x| (x.0.clone(), vec![x.1, x.2]))
            .collect::<Vec<_>>(),
    )?;
    let p = out.svg("fig10-compaction-time.svg");
    bars(
        &p,
        "Figure 10: compaction device time",
        "device seconds",
        &["compaction".to_string()],
        &comp_series
            .iter()
            .map(|x| (x.0.clone(), vec![x.3]))
            .collect::<Vec<_>>(),
    )?;
    Ok(())
}

fn fig11(out: &mut Out, s: &Sizes, p: &str) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figure 11: delaying compaction (L0 trigger sweep), SMRDB-SOC on {p}\n\n\
         Figure 9's random puts with the L0 compaction trigger T, slowdown at T + 4 and stop at \
         T + 8 bands; then `readseq`.\n\n\
         | L0 trigger | put ops/s | compaction written MiB | write amp | readseq MB/s |\n\
         | ---: | ---: | ---: | ---: | ---: |"
    );
    let cfg = drive(p, s.band, s.capacity)?;
    let mut puts = Vec::new();
    let mut reads = Vec::new();
    for &t in &s.l0_triggers {
        out.step(&format!("fig 11 trigger {t}"));
        let opts = EngineOptions {
            l0_compaction_trigger: Some(t),
            l0_slowdown: Some(t + 4),
            l0_stop: Some(t + 8),
            ..out.opts.clone()
        };
        let (engine, fill) = random_fill(EngineKind::Tegula, &cfg, opts, s.rand_puts, out.seed)?;
        let mut c = bench_cfg(s.rand_puts, VALUE, out.seed);
        c.reads = Some(s.rand_puts);
        let rs = measure(engine.as_ref(), "readseq", &c, false)?;
        engine.close()?;
        let _ = writeln!(
            out.md,
            "| {t} | {:.0} | {:.1} | {:.2} | {:.1} |",
            dev_ops(&fill),
            mib(stat(&fill, "compaction_bytes_written")),
            fill.write_amp.unwrap_or(0.0),
            dev_mb(&rs)
        );
        puts.push((t as f64, dev_ops(&fill)));
        reads.push((t as f64, dev_mb(&rs)));
        out.keep(fill, format!("fig11-trigger{t}-fillrandom"));
        out.keep(rs, format!("fig11-trigger{t}-readseq"));
    }
    let path = out.svg("fig11-l0-trigger.svg");
    chart(
        &path,
        "Figure 11: random puts vs L0 compaction trigger (SMRDB-SOC)",
        "L0 bands that trigger a compaction",
        "puts per device second",
        &[Series {
            name: "random put".into(),
            points: puts,
        }],
    )?;
    let path = out.svg("fig11-readseq.svg");
    chart(
        &path,
        "Figure 11: sequential read after the puts vs L0 trigger",
        "L0 bands that trigger a compaction",
        "MB/s (device time)",
        &[Series {
            name: "readseq".into(),
            points: reads,
        }],
    )
}

fn fig12(out: &mut Out, s: &Sizes, p: &str) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figure 12: random reads after sequential and random loads, on {p}\n\n\
         {} puts of 4 KiB values (`fillseq` or `fillrandom`, drained), then {} `readrandom` \
         gets; mean device time per get (blocks served by the 8 MiB cache cost none) and bands \
         probed per get.\n\n\
         | load | engine | ms per get (device) | gets/s (device) | bands probed per get | found |\n\
         | --- | --- | ---: | ---: | ---: | ---: |",
        s.rand_puts, s.reads
    );
    let cfg = drive(p, s.band, s.capacity)?;
    let mut series: Vec<(String, Vec<f64>)> = Vec::new();
    for kind in ENGINES {
        let mut ys = Vec::new();
        for load in ["fillseq", "fillrandom"] {
            out.step(&format!("fig 12 {} {load}", label(kind)));
            let f = factory(kind, &cfg, out.opts.clone())?;
            let engine = f.open(true)?;
            let fill = measure(
                engine.as_ref(),
                load,
                &bench_cfg(s.rand_puts, VALUE, out.seed),
                true,
            )?;
            let mut c = bench_cfg(s.rand_puts, VALUE, out.seed.wrapping_add(17));
            c.reads = Some(s.reads);
            let r = measure(engine.as_ref(), "readrandom", &c, false)?;
            engine.close()?;
            let ms = r.device_seconds.unwrap_or(0.0) * 1e3 / r.ops.max(1) as f64;
            let _ = writeln!(
                out.md,
                "| {load} | {} | {ms:.2} | {:.0} | {:.2} | {} |",
                label(kind),
                dev_ops(&r),
                stat(&r, "avg_bands_probed_per_get"),
                r.found.unwrap_or(0)
            );
            ys.push(ms);
            out.keep(fill, format!("fig12-{}-{load}", kind.name()));
            out.keep(r, format!("fig12-{}-readrandom-after-{load}", kind.name()));
        }
        series.push((label(kind).to_string(), ys));
    }
    let path = out.svg("fig12-random-read.svg");
    bars(
        &path,
        "Figure 12: random read latency after sequential / random load",
        "ms per get (device time)",
        &["after sequential load".into(), "after random load".into()],
        &series,
    )
}

fn fig13(out: &mut Out, s: &Sizes, p: &str) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figure 13: band size, on {p}\n\n\
         Figure 9's random puts with the band (zone) size varied.\n\n\
         | band | engine | put ops/s | compaction written MiB | write amp |\n\
         | ---: | --- | ---: | ---: | ---: |"
    );
    let mut series = Vec::new();
    for kind in ENGINES {
        let mut pts = Vec::new();
        for &band in &s.band_sizes {
            out.step(&format!("fig 13 {} band {}", label(kind), band / MIB));
            let cfg = drive(p, band, s.capacity)?;
            let (engine, fill) = random_fill(kind, &cfg, out.opts.clone(), s.rand_puts, out.seed)?;
            engine.close()?;
            let _ = writeln!(
                out.md,
                "| {} | {} | {:.0} | {:.1} | {:.2} |",
                tegula_device::format_size(band),
                label(kind),
                dev_ops(&fill),
                mib(stat(&fill, "compaction_bytes_written")),
                fill.write_amp.unwrap_or(0.0)
            );
            pts.push(((band / MIB) as f64, dev_ops(&fill)));
            out.keep(fill, format!("fig13-{}-band{}MiB", kind.name(), band / MIB));
        }
        series.push(Series {
            name: label(kind).into(),
            points: pts,
        });
    }
    let path = out.svg("fig13-band-size.svg");
    chart(
        &path,
        "Figure 13: random puts vs band size",
        "band size (MiB)",
        "puts per device second",
        &series,
    )
}

fn fig14_15(out: &mut Out, s: &Sizes, p: &str) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figures 14 and 15: YCSB load, A, B and D with 4 KiB values, on {p}\n\n\
         {} records of one 4 KiB field, then {} operations of each workload on the loaded \
         database (A: 50% read / 50% update, zipfian; B: 95/5, zipfian; D: 95% read latest / \
         5% insert), in this order on one database. Operations per device second.\n\n\
         | engine | load | A | B | D |\n| --- | ---: | ---: | ---: | ---: |",
        s.ycsb_records, s.ycsb_ops
    );
    let cfg = drive(p, s.band, s.capacity)?;
    let mut series = Vec::new();
    let mut timelines = Vec::new();
    for kind in ENGINES {
        out.step(&format!("fig 14 {}", label(kind)));
        let f = factory(kind, &cfg, out.opts.clone())?;
        let engine = f.open(true)?;
        let mut row = format!("| {} |", label(kind));
        let mut ys = Vec::new();
        for (i, w) in ['a', 'a', 'b', 'd'].into_iter().enumerate() {
            let mut c = YcsbConfig::new(w)?;
            c.recordcount = s.ycsb_records;
            c.operationcount = s.ycsb_ops;
            c.fieldcount = 1;
            c.fieldlength = VALUE;
            c.seed = out.seed.wrapping_add(i as u64);
            c.progress = false;
            let before = engine
                .device_counters()
                .context("the engine is not on an emulated drive")?;
            let mut r = if i == 0 {
                ycsb::load(engine.as_ref(), &c)?
            } else {
                ycsb::run_ops(engine.as_ref(), &c)?
            };
            engine.wait_for_background()?;
            finish_measure(engine.as_ref(), &mut r, before);
            let _ = write!(row, " {:.0} |", dev_ops(&r));
            ys.push(dev_ops(&r));
            if i == 0 {
                let pts: Option<Vec<(f64, f64)>> = r
                    .timeline
                    .iter()
                    .map(|x| x.device_s.map(|d| (d, x.ops as f64)))
                    .collect();
                if let Some(pts) = pts {
                    let dmax = pts.last().map_or(0.0, |x| x.0);
                    timelines.push(Series {
                        name: label(kind).into(),
                        points: rate_series(&pts, bucket_for(dmax)),
                    });
                }
            }
            let name = if i == 0 {
                "load".to_string()
            } else {
                w.to_string()
            };
            out.keep(r, format!("fig14-{}-ycsb-{name}", kind.name()));
        }
        engine.close()?;
        let _ = writeln!(out.md, "{row}");
        series.push((label(kind).to_string(), ys));
    }
    let path = out.svg("fig14-ycsb.svg");
    bars(
        &path,
        "Figure 14: YCSB with 4 KiB values",
        "operations per device second",
        &["load".into(), "A".into(), "B".into(), "D".into()],
        &series,
    )?;
    let path = out.svg("fig15-ycsb-load-over-time.svg");
    chart(
        &path,
        "Figure 15: YCSB load phase over time",
        "device seconds",
        "inserts per device second",
        &timelines,
    )?;
    let _ = writeln!(
        out.md,
        "\nFigure 15 (`fig15-ycsb-load-over-time.svg`) plots the load phase's inserts per device \
         second over device time."
    );
    Ok(())
}
