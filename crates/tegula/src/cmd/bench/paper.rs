//! `tegula bench paper …`: the seed papers' figures, one subcommand per paper.

use super::args::Size;
use super::printer::Printer;
use anyhow::Result;
use clap::builder::{BoolishValueParser, PossibleValue, PossibleValuesParser};
use clap::{ArgAction, Args, Subcommand};
use std::path::PathBuf;
use tegula_bench::paper::kvimr::{self, KvimrOptions, KvimrScale, Parts, Scheme, WalOn};
use tegula_bench::paper::smrdb::{self, Scale, SmrdbOptions};
use tegula_bench::paper::stl::signatures::{self, SignatureOptions};
use tegula_bench::paper::stl::speed::{self, SpeedOptions};
use tegula_bench::paper::zea::{self, ZeaOptions, ZeaScale};
use tegula_bench::paper::zeafs::{self, ZeafsOptions};
use tegula_bench::paper::PaperReport;

/// `tegula bench paper` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum PaperCommand {
    /// SMRDB (seed 000), Figures 7-15: SMRDB-SOC against SMRDB-LOC in device time.
    Smrdb(SmrdbArgs),
    /// ZEA (seed 001), Figure 2: start-up discovery, and writes and reads through ZEA against
    /// raw I/O, in device time.
    Zea(ZeaArgs),
    /// ZEAFS (seed 001), Figure 4: RocksDB's db_bench on tegula fs (hm-smr) against ext4 on
    /// cmr-7200 and on drive-managed SMR over NBD, in device time. Needs db_bench and FUSE;
    /// the ext4 drives also root, nbdfuse, losetup, mkfs.ext4.
    Zeafs(ZeafsArgs),
    /// Drive-managed SMR (seed 004, Skylight): QD1 and QD31 write latency, map merges, idle
    /// cleaning and fragmented reads of configured drives, in modelled time.
    StlSignatures(StlSignaturesArgs),
    /// How many emulated 4 KiB random writes per wall second the journal STL sustains, in
    /// memory and on a drive image.
    StlSpeed(StlSpeedArgs),
    /// KVIMR (seed 002): SMRDB-LOC on interlaced media through the KVIMR middleware: Seq,
    /// three-phase, KVIMR-N, KVIMR-M and the CMR twin; random load, usage sweep, YCSB, in
    /// device time.
    Kvimr(KvimrArgs),
}

impl PaperCommand {
    /// Runs the reproduction and prints its tables, the files written and the plots.
    pub fn run(self) -> Result<PaperReport> {
        let report = match self {
            PaperCommand::Smrdb(a) => {
                smrdb::run(&a.options(), &Printer::new(!a.no_progress, None))?
            }
            PaperCommand::Zea(a) => zea::run(&a.options(), &Printer::new(!a.no_progress, None))?,
            PaperCommand::Zeafs(a) => {
                zeafs::run(&a.options(), &Printer::new(!a.no_progress, None))?
            }
            PaperCommand::StlSignatures(a) => {
                signatures::run(&a.options(), &Printer::new(!a.no_progress, None))?
            }
            PaperCommand::StlSpeed(a) => {
                speed::run(&a.options(), &Printer::new(!a.no_progress, None))?
            }
            PaperCommand::Kvimr(a) => {
                kvimr::run(&a.options()?, &Printer::new(!a.no_progress, None))?
            }
        };
        print!("{}", report.markdown);
        if !report.tables.is_empty() {
            let names: Vec<String> = report
                .tables
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            eprintln!("wrote {}", names.join(" and "));
        }
        for f in &report.plots {
            eprintln!("plot: {}", f.display());
        }
        Ok(report)
    }
}

fn scales() -> PossibleValuesParser {
    PossibleValuesParser::new([
        PossibleValue::new("tiny").help("Seconds: 1 MiB bands, a few MiB per figure (the tests use it)"),
        PossibleValue::new("small")
            .help("About half a minute: 4 MiB bands, 256 MiB of random puts"),
        PossibleValue::new("full").help(
            "About three minutes: 16 MiB bands, 1 GiB of random puts, the paper's 100 KiB values too",
        ),
    ])
}

/// `tegula bench paper smrdb`.
#[derive(Debug, Clone, Args)]
pub struct SmrdbArgs {
    /// Amount of work.
    #[arg(long, value_parser = scales(), default_value = Scale::default().name())]
    pub scale: String,
    /// Output directory (markdown table, JSON, SVG plots).
    #[arg(long, value_name = "DIR", default_value_os_t = SmrdbOptions::default().out)]
    pub out: PathBuf,
    /// Drive profiles, comma-separated; figures 7-10 run on each, 11-15 on the first.
    #[arg(long, default_value_t = SmrdbOptions::default().profiles.join(","))]
    pub profiles: String,
    /// Figures to run, comma-separated numbers 7-15 (default: all).
    #[arg(long)]
    pub figures: Option<FigureList>,
    /// Band (zone) size, overriding the scale's (figure 13 still sweeps its own sizes).
    #[arg(long)]
    pub band: Option<Size>,
    /// Drive capacity, overriding the scale's.
    #[arg(long)]
    pub capacity: Option<Size>,
    /// An SMRDB option for every run, NAME=VALUE (a field of `tegula_smrdb::Options`); repeatable.
    #[arg(long = "smrdb_option", alias = "smrdb-option", value_name = "NAME=VALUE", value_parser = super::args::parse_engine_option)]
    pub smrdb_option: Vec<(String, serde_json::Value)>,
    /// Random seed.
    #[arg(long, default_value_t = SmrdbOptions::default().seed)]
    pub seed: u64,
    /// Never show a progress bar.
    #[arg(long = "no_progress", alias = "no-progress", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub no_progress: bool,
}

/// `--figures 7,8,9`: figure numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FigureList(pub Vec<u32>);

impl std::str::FromStr for FigureList {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        smrdb::parse_figures(s)
            .map(FigureList)
            .map_err(|e| e.to_string())
    }
}

impl SmrdbArgs {
    /// The library's options of these flags.
    pub fn options(&self) -> SmrdbOptions {
        SmrdbOptions {
            // The value parser admits only the scales' names.
            scale: Scale::parse(&self.scale).unwrap_or_default(),
            out: self.out.clone(),
            profiles: self
                .profiles
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            figures: self.figures.as_ref().map(|f| f.0.clone()),
            band: self.band.map(|s| s.0),
            capacity: self.capacity.map(|s| s.0),
            smrdb_options: self.smrdb_option.clone(),
            seed: self.seed,
        }
    }
}

fn zea_scales() -> PossibleValuesParser {
    PossibleValuesParser::new([
        PossibleValue::new("tiny")
            .help("A second or two: a few hundred extents (the tests use it)"),
        PossibleValue::new("small").help("A smoke run: up to 4,000 extents, 128 writes per size"),
        PossibleValue::new("full")
            .help("The published figure: up to 32,000 extents, 1,024 writes per size"),
    ])
}

/// `tegula bench paper zea`.
#[derive(Debug, Clone, Args)]
pub struct ZeaArgs {
    /// Amount of work.
    #[arg(long, value_parser = zea_scales(), default_value = ZeaScale::default().name())]
    pub scale: String,
    /// Output directory (zea-figure2.md, zea-figure2.json, zea-figure2{a,b,c}.svg).
    #[arg(long, value_name = "DIR", default_value_os_t = ZeaOptions::default().out)]
    pub out: PathBuf,
    /// Never show a progress bar.
    #[arg(long = "no_progress", alias = "no-progress", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub no_progress: bool,
}

impl ZeaArgs {
    /// The library's options of these flags.
    pub fn options(&self) -> ZeaOptions {
        ZeaOptions {
            // The value parser admits only the scales' names.
            scale: ZeaScale::parse(&self.scale).unwrap_or_default(),
            out: self.out.clone(),
        }
    }
}

/// `tegula bench paper stl-signatures`.
#[derive(Debug, Clone, Args)]
pub struct StlSignaturesArgs {
    /// Drives: built-in profile names (see `tegula disk profiles`) or TOML files, one table row
    /// each.
    #[arg(value_name = "CONFIG", default_values_os_t = SignatureOptions::default().configs)]
    pub configs: Vec<PathBuf>,
    /// Output directory (stl-signatures.md, stl-signatures.json, stl-signatures-qd1.svg).
    #[arg(long, value_name = "DIR", default_value_os_t = SignatureOptions::default().out)]
    pub out: PathBuf,
    /// Never show a progress bar.
    #[arg(long = "no_progress", alias = "no-progress", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub no_progress: bool,
}

impl StlSignaturesArgs {
    /// The library's options of these flags.
    pub fn options(&self) -> SignatureOptions {
        SignatureOptions {
            configs: self.configs.clone(),
            out: self.out.clone(),
        }
    }
}

/// `tegula bench paper stl-speed`.
#[derive(Debug, Clone, Args)]
pub struct StlSpeedArgs {
    /// QD1 random 4 KiB writes per backing.
    #[arg(long, default_value_t = SpeedOptions::default().writes)]
    pub writes: u64,
    /// Drive configuration.
    #[arg(long, value_name = "CONFIG", default_value_os_t = SpeedOptions::default().config)]
    pub config: PathBuf,
    /// Output directory (stl-speed.md, stl-speed.json).
    #[arg(long, value_name = "DIR", default_value_os_t = SpeedOptions::default().out)]
    pub out: PathBuf,
    /// Never show a progress bar.
    #[arg(long = "no_progress", alias = "no-progress", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub no_progress: bool,
}

impl StlSpeedArgs {
    /// The library's options of these flags.
    pub fn options(&self) -> SpeedOptions {
        SpeedOptions {
            writes: self.writes,
            config: self.config.clone(),
            out: self.out.clone(),
        }
    }
}

fn kvimr_scales() -> PossibleValuesParser {
    PossibleValuesParser::new([
        PossibleValue::new("tiny")
            .help("Seconds: a 192 MiB drive, 2 MiB SSTables, levels ×4 (the tests use it)"),
        PossibleValue::new("small")
            .help("Minutes in a release build: a 3 GiB drive, 16 MiB SSTables"),
        PossibleValue::new("full").help("Longer: a 6 GiB drive, 32 MiB SSTables"),
        PossibleValue::new("paper").help(
            "The paper's ratios: an 8 GiB drive, 64 MiB SSTables (32 tracks of 2 MiB), load to 75%",
        ),
    ])
}

/// `tegula bench paper kvimr`.
#[derive(Debug, Clone, Args)]
pub struct KvimrArgs {
    /// Amount of work.
    #[arg(long, value_parser = kvimr_scales(), default_value = KvimrScale::default().name())]
    pub scale: String,
    /// Output directory (kvimr.json, kvimr.md, kvimr-{timeline,sweep,ycsb,counts}.svg).
    #[arg(long, value_name = "DIR", default_value_os_t = KvimrOptions::default().out)]
    pub out: PathBuf,
    /// Schemes, comma-separated: seq, three-phase, kvimr-n, kvimr-m, cmr.
    #[arg(long, default_value = "seq,three-phase,kvimr-n,kvimr-m,cmr")]
    pub schemes: String,
    /// Parts, comma-separated: load, sweep, ycsb (ycsb runs after the load).
    #[arg(long, default_value = "load,sweep,ycsb")]
    pub parts: String,
    /// Where SMRDB's log and manifest live: imr (on the IMR drive with the SSTables) or cmr
    /// (on a separate modelled CMR drive, SSTables only on IMR: the paper's setup).
    #[arg(long = "wal-on", alias = "wal_on", value_name = "imr|cmr", default_value = KvimrOptions::default().wal_on.name())]
    pub wal_on: String,
    /// SSTable (zone) size, overriding the scale's (the paper's 64MiB).
    #[arg(long = "sst-size", alias = "sst_size", value_name = "BYTES")]
    pub sst_size: Option<Size>,
    /// Value size in bytes, overriding the scale's 1000 (the paper's 1 KB).
    #[arg(long = "value-bytes", alias = "value_bytes", value_name = "BYTES")]
    pub value_bytes: Option<usize>,
    /// Drive capacity, overriding the scale's.
    #[arg(long)]
    pub capacity: Option<Size>,
    /// An override of the imr-paper drive's configuration (and its CMR twin's), KEY=VALUE as
    /// `tegula disk create --set` takes it (e.g. timing.seek_read.avg_ms=8.5); repeatable.
    #[arg(long = "drive-set", alias = "drive_set", value_name = "KEY=VALUE", value_parser = key_value)]
    pub drive_set: Vec<(String, String)>,
    /// An SMRDB option for every scheme, NAME=VALUE (a field of `tegula_smrdb::Options`, e.g.
    /// compaction_read_ahead_bytes=8388608); repeatable.
    #[arg(long = "smrdb-option", alias = "smrdb_option", value_name = "NAME=VALUE", value_parser = super::args::parse_engine_option)]
    pub smrdb_option: Vec<(String, serde_json::Value)>,
    /// Random seed.
    #[arg(long, default_value_t = KvimrOptions::default().seed)]
    pub seed: u64,
    /// Never show a progress bar.
    #[arg(long = "no_progress", alias = "no-progress", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub no_progress: bool,
}

impl KvimrArgs {
    /// The library's options of these flags.
    pub fn options(&self) -> Result<KvimrOptions> {
        let schemes = list(&self.schemes)
            .iter()
            .map(|s| Scheme::parse(s))
            .collect::<Result<Vec<_>, _>>()?;
        let parts = list(&self.parts);
        for p in &parts {
            if !["load", "sweep", "ycsb"].contains(&p.as_str()) {
                anyhow::bail!("--parts: unknown part {p:?} (load, sweep, ycsb)");
            }
        }
        Ok(KvimrOptions {
            // The value parser admits only the scales' names.
            scale: KvimrScale::parse(&self.scale).unwrap_or_default(),
            out: self.out.clone(),
            schemes,
            parts: Parts {
                load: parts.iter().any(|p| p == "load"),
                sweep: parts.iter().any(|p| p == "sweep"),
                ycsb: parts.iter().any(|p| p == "ycsb"),
            },
            seed: self.seed,
            wal_on: WalOn::parse(&self.wal_on)?,
            sst_bytes: self.sst_size.map(|s| s.0),
            value_bytes: self.value_bytes,
            capacity: self.capacity.map(|s| s.0),
            drive_set: self.drive_set.clone(),
            smrdb_options: self.smrdb_option.clone(),
        })
    }
}

/// Parses `KEY=VALUE` (clap value parser).
fn key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE"))
}

/// `tegula bench paper zeafs`.
#[derive(Debug, Clone, Args)]
pub struct ZeafsArgs {
    /// db_bench's --num.
    #[arg(long, default_value_t = ZeafsOptions::default().num)]
    pub num: u64,
    /// db_bench's --value_size.
    #[arg(long = "value-size", alias = "value_size", default_value_t = ZeafsOptions::default().value_size)]
    pub value_size: u64,
    /// db_bench's benchmarks, comma-separated, run in one process.
    #[arg(long, default_value_t = ZeafsOptions::default().benchmarks.join(","))]
    pub benchmarks: String,
    /// Drives, comma-separated: tegula (tegula fs on hm-smr), cmr (ext4 on cmr-7200), dm
    /// (ext4 on drive-managed SMR).
    #[arg(long, default_value_t = ZeafsOptions::default().drives.join(","))]
    pub drives: String,
    /// Only the tegula drive (the same as --drives tegula).
    #[arg(long = "skip-ext4", alias = "skip_ext4", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub skip_ext4: bool,
    /// Output directory (figure4.md, figure4.json, figure4.svg).
    #[arg(long, value_name = "DIR", default_value_os_t = ZeafsOptions::default().out)]
    pub out: PathBuf,
    /// The plot (default: figure4.svg in --out).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Capacity of each drive.
    #[arg(long, default_value_t = Size(ZeafsOptions::default().capacity))]
    pub capacity: Size,
    /// Configuration of the drive-managed drive, scaled to --capacity.
    #[arg(long = "dm-config", alias = "dm_config", value_name = "PROFILE|FILE.toml", default_value_os_t = ZeafsOptions::default().dm_config)]
    pub dm_config: PathBuf,
    /// An override of the drive-managed configuration, KEY=VALUE; repeatable.
    #[arg(long = "dm-set", alias = "dm_set", value_name = "KEY=VALUE", value_parser = key_value)]
    pub dm_set: Vec<(String, String)>,
    /// Dirty page-cache limit of the ext4 loop devices (0: none).
    #[arg(long = "dirty-limit", alias = "dirty_limit", default_value_t = Size(ZeafsOptions::default().dirty_limit))]
    pub dirty_limit: Size,
    /// Device seconds each ext4 drive idles after mkfs, before db_bench.
    #[arg(long = "idle-before", alias = "idle_before", value_name = "SECONDS", default_value_t = ZeafsOptions::default().idle_before)]
    pub idle_before: f64,
    /// Width of the throughput windows in device seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = ZeafsOptions::default().window)]
    pub window: f64,
    /// A further db_bench argument (e.g. --db-bench-arg=--compression_type=none); repeatable.
    #[arg(
        long = "db-bench-arg",
        alias = "db_bench_arg",
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    pub db_bench_arg: Vec<String>,
    /// Never show a progress bar.
    #[arg(long = "no_progress", alias = "no-progress", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub no_progress: bool,
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

impl ZeafsArgs {
    /// The library's options of these flags.
    pub fn options(&self) -> ZeafsOptions {
        let mut drives = list(&self.drives);
        if self.skip_ext4 {
            drives.retain(|d| d == "tegula");
        }
        ZeafsOptions {
            num: self.num,
            value_size: self.value_size,
            benchmarks: list(&self.benchmarks),
            drives,
            out: self.out.clone(),
            plot: self.plot.clone(),
            capacity: self.capacity.0,
            dm_config: self.dm_config.clone(),
            dm_set: self.dm_set.clone(),
            dirty_limit: self.dirty_limit.0,
            idle_before: self.idle_before,
            window: self.window,
            db_bench_args: self.db_bench_arg.clone(),
        }
    }
}
