//! `tegula bench …`: the command-line types (clap 4 derive) and their runner.
//!
//! ```text
//! tegula bench db --engine tegula,rocksdb,leveldb --benchmarks fillseq,fillrandom,readrandom \
//!     --num 1000000 --value_size 100 --json out.json --plot plots/
//! tegula bench ycsb --engine tegula --workload a --recordcount 100000 --operationcount 100000
//! ```
//!
//! Flags keep db_bench's and YCSB's names (`--value_size`, `--recordcount`); the dashed
//! spellings (`--value-size`) are accepted too. Several engines given to `--engine` run one
//! after the other in the same process and a ratio table closes the run.

use crate::dbbench::{self, DbBenchConfig};
use crate::engine::{EngineFactory, EngineKind, EngineOptions, Target};
use crate::report::{compare_table, write_json, BenchResult};
use crate::ycsb::{self, Distribution, Phases, YcsbConfig};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use tegula_device::{parse_size, profile};

/// `tegula bench` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum BenchCommand {
    /// db_bench-style named benchmarks (fillseq, fillrandom, readrandom, …).
    Db(DbArgs),
    /// YCSB core workloads A–F (load and run phases).
    Ycsb(YcsbArgs),
    /// Scaled-down reproductions of a paper's figures (`paper smrdb`: SMRDB, Figures 7-15).
    Paper(crate::paper::PaperArgs),
}

impl BenchCommand {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        run(self)
    }
}

/// Parses a size such as `16GiB` (clap value parser).
pub(crate) fn size_arg(s: &str) -> std::result::Result<u64, String> {
    parse_size(s)
}

/// Where and how the engines run; shared by `db` and `ycsb`.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// Engines, comma-separated: tegula (SMRDB-SOC), tegula-loc (SMRDB-LOC), rocksdb,
    /// leveldb, memory (the harness's BTreeMap reference).
    #[arg(long, default_value = "tegula")]
    pub engine: String,
    /// Disk image for tegula engines (created from --profile/--capacity if missing; recreated
    /// when a benchmark wants a fresh database).
    #[arg(long, value_name = "IMAGE")]
    pub disk: Option<PathBuf>,
    /// Drive profile of the emulated disk for tegula engines (in memory unless --disk).
    #[arg(long, value_name = "P")]
    pub profile: Option<String>,
    /// Capacity of the emulated disk.
    #[arg(long, value_name = "C", value_parser = size_arg)]
    pub capacity: Option<u64>,
    /// Database directory for rocksdb/leveldb (a temporary one if omitted; with both engines,
    /// each gets a subdirectory).
    #[arg(long, value_name = "DIR")]
    pub db: Option<PathBuf>,
    /// Write buffer / memtable size for rocksdb and leveldb (default: the band (zone) size of
    /// --profile, or of the --disk image if it exists; 256 MiB for hm-smr).
    #[arg(long = "write_buffer_size", alias = "write-buffer-size", value_parser = size_arg)]
    pub write_buffer_size: Option<u64>,
    /// Block cache size for every engine.
    #[arg(long = "cache_size", alias = "cache-size", value_parser = size_arg, default_value = "8MiB")]
    pub cache_size: u64,
    /// Bloom filter bits per key for every engine.
    #[arg(long = "bloom_bits", alias = "bloom-bits", default_value_t = 10)]
    pub bloom_bits: u32,
    /// Collect RocksDB statistics (costs a little time; gives write-amp and compaction bytes).
    #[arg(long)]
    pub statistics: bool,
    /// An SMRDB option for the tegula engines, NAME=VALUE (a field of `tegula_smrdb::Options`, e.g.
    /// `l1_overlap_trigger=8`); repeatable.
    #[arg(long = "smrdb_option", alias = "smrdb-option", value_name = "NAME=VALUE", value_parser = crate::engine::parse_engine_option)]
    pub smrdb_option: Vec<(String, serde_json::Value)>,
    /// Write without the write-ahead log (db_bench's flag): SMRDB's and RocksDB's writes are
    /// then durable only once flushed. LevelDB has no such option and refuses it; cannot be
    /// combined with synced writes (--sync, --sync_every, fillsync).
    #[arg(long = "disable_wal", alias = "disable-wal")]
    pub disable_wal: bool,
    /// Worker (client) threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Random seed.
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    /// Write results as a JSON array to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw throughput (and compaction) over time as SVG files into DIR.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Never show a progress bar.
    #[arg(long = "no_progress", alias = "no-progress")]
    pub no_progress: bool,
}

/// `tegula bench db`.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// Engines and targets.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Comma-separated benchmarks: fillseq, fillrandom, overwrite, fillsync, readseq,
    /// readrandom, readmissing, seekrandom, deleterandom.
    #[arg(long, default_value = "fillseq,fillrandom,readrandom")]
    pub benchmarks: String,
    /// Number of keys.
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// Reads for the read benchmarks (default: --num).
    #[arg(long)]
    pub reads: Option<u64>,
    /// Key size in bytes.
    #[arg(long = "key_size", alias = "key-size", default_value_t = 16)]
    pub key_size: usize,
    /// Value size in bytes.
    #[arg(long = "value_size", alias = "value-size", default_value_t = 100)]
    pub value_size: usize,
    /// Sync every write.
    #[arg(long)]
    pub sync: bool,
    /// Sync every N-th write (0: never).
    #[arg(long = "sync_every", alias = "sync-every", default_value_t = 0)]
    pub sync_every: u64,
    /// Keys read after each seek in seekrandom.
    #[arg(long = "seek_nexts", alias = "seek-nexts", default_value_t = 0)]
    pub seek_nexts: usize,
    /// Puts per write batch.
    #[arg(long = "batch_size", alias = "batch-size", default_value_t = 1)]
    pub batch_size: usize,
    /// Run on the existing database instead of starting fill benchmarks fresh.
    #[arg(long = "use_existing_db", alias = "use-existing-db")]
    pub use_existing_db: bool,
    /// Flush the memtable at the end of each write benchmark (timed).
    #[arg(long = "flush")]
    pub flush: bool,
}

/// `tegula bench ycsb`.
#[derive(Debug, Clone, Args)]
pub struct YcsbArgs {
    /// Engines and targets.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Core workload: a, b, c, d, e or f.
    #[arg(long, default_value = "a")]
    pub workload: char,
    /// Records to load.
    #[arg(long, default_value_t = 100_000)]
    pub recordcount: u64,
    /// Operations in the run phase.
    #[arg(long, default_value_t = 100_000)]
    pub operationcount: u64,
    /// Fields per record.
    #[arg(long, default_value_t = 10)]
    pub fieldcount: usize,
    /// Bytes per field.
    #[arg(long, default_value_t = 100)]
    pub fieldlength: usize,
    /// Longest scan (workload E).
    #[arg(long, default_value_t = 100)]
    pub maxscanlength: u64,
    /// Override the workload's request distribution: uniform, zipfian, latest.
    #[arg(long)]
    pub requestdistribution: Option<String>,
    /// Updates write all fields blindly instead of read-merge-write.
    #[arg(long)]
    pub writeallfields: bool,
    /// Phases: load, run or both.
    #[arg(long, default_value = "both")]
    pub phase: String,
}

impl EngineArgs {
    /// The band size the tegula engines would use: the zone size of the --disk image if it
    /// exists, else of --profile (hm-smr by default).
    fn band_size(&self) -> Result<u64> {
        if let Some(p) = self.disk.as_ref().filter(|p| p.exists()) {
            let d = tegula_device::Disk::open_image(p, Default::default())
                .with_context(|| format!("opening disk image {}", p.display()))?;
            return Ok(d.config().zones.zone_size);
        }
        Ok(self.device_config()?.zones.zone_size)
    }

    fn options(&self) -> Result<EngineOptions> {
        Ok(EngineOptions {
            write_buffer_size: match self.write_buffer_size {
                Some(w) => w,
                None => self.band_size()?,
            },
            cache_size: self.cache_size,
            bloom_bits: self.bloom_bits,
            statistics: self.statistics,
            smrdb_options: self.smrdb_option.clone(),
            disable_wal: self.disable_wal,
            ..EngineOptions::default()
        })
    }

    fn device_config(&self) -> Result<tegula_device::DiskConfig> {
        let mut cfg = profile(self.profile.as_deref().unwrap_or("hm-smr"))?;
        cfg.capacity = self.capacity.unwrap_or(16 << 30);
        cfg.validate()?;
        Ok(cfg)
    }

    /// The factories of every engine named, in order.
    pub fn factories(&self) -> Result<Vec<EngineFactory>> {
        let kinds = EngineKind::parse_list(&self.engine)?;
        let dir_engines = kinds
            .iter()
            .filter(|k| matches!(k, EngineKind::Rocksdb | EngineKind::Leveldb))
            .count();
        if kinds.iter().filter(|k| k.on_device()).count() > 1 && self.disk.is_some() {
            bail!("tegula and tegula-loc cannot share one --disk image; run them one at a time");
        }
        let opts = self.options()?;
        kinds
            .iter()
            .map(|&k| {
                let target = match k {
                    EngineKind::Memory => Target::Memory,
                    EngineKind::Tegula | EngineKind::TegulaLoc => match &self.disk {
                        Some(p) => Target::Image(
                            p.clone(),
                            if p.exists() {
                                None
                            } else {
                                Some(self.device_config()?)
                            },
                        ),
                        None => Target::Emulated(self.device_config()?),
                    },
                    EngineKind::Rocksdb | EngineKind::Leveldb => {
                        Target::Dir(self.db.as_ref().map(|d| {
                            if dir_engines > 1 {
                                d.join(k.name())
                            } else {
                                d.clone()
                            }
                        }))
                    }
                };
                EngineFactory::new(k, target, opts.clone())
            })
            .collect()
    }

    fn progress(&self) -> bool {
        !self.no_progress
    }
}

/// Prints each result as it comes and keeps the JSON file up to date.
struct Sink<'a> {
    json: Option<&'a PathBuf>,
    all: Vec<BenchResult>,
    error: Option<anyhow::Error>,
}

impl Sink<'_> {
    fn push(&mut self, r: &BenchResult) {
        println!("{}", r.line());
        self.all.push(r.clone());
        if let Some(p) = self.json {
            if let Err(e) = write_json(p, &self.all) {
                self.error.get_or_insert(e);
            }
        }
    }
}

fn finish(args: &EngineArgs, sink: Sink<'_>) -> Result<Vec<BenchResult>> {
    if let Some(e) = sink.error {
        return Err(e);
    }
    let engines: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for r in &sink.all {
            if !v.contains(&r.engine.as_str()) {
                v.push(&r.engine);
            }
        }
        v
    };
    if engines.len() > 1 {
        println!();
        print!("{}", compare_table(&sink.all));
    }
    if let Some(dir) = &args.plot {
        let files = crate::plot::plot_results(dir, &sink.all)?;
        for f in files {
            eprintln!("plot: {}", f.display());
        }
    }
    if let Some(p) = &args.json {
        write_json(p, &sink.all)?;
    }
    Ok(sink.all)
}

/// Runs db_bench-style benchmarks on every engine of `args`, one engine after the other in
/// this process, and prints the ratio table when there are several: the side-by-side
/// comparison. Returns every result.
pub fn compare(args: &DbArgs) -> Result<Vec<BenchResult>> {
    let cfg = DbBenchConfig {
        benchmarks: args
            .benchmarks
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        num: args.num,
        reads: args.reads,
        key_size: args.key_size,
        value_size: args.value_size,
        threads: args.engine.threads,
        seed: args.engine.seed,
        sync: args.sync,
        sync_every: args.sync_every,
        seek_nexts: args.seek_nexts,
        batch_size: args.batch_size,
        use_existing_db: args.use_existing_db,
        flush_after_write: args.flush,
        progress: args.engine.progress(),
    };
    dbbench::validate(&cfg)?;
    if args.engine.disable_wal
        && (cfg.sync || cfg.sync_every > 0 || cfg.benchmarks.iter().any(|b| b == "fillsync"))
    {
        bail!("--disable_wal cannot be combined with synced writes (--sync, --sync_every, fillsync): a synced write needs the log");
    }
    let factories = args.engine.factories()?;
    println!(
        "Keys:       {} bytes each\nValues:     {} bytes each\nEntries:    {}\nThreads:    {}\nEngines:    {}\nWAL:        {}",
        cfg.key_size,
        cfg.value_size,
        cfg.num,
        cfg.threads,
        args.engine.engine,
        if args.engine.disable_wal { "disabled" } else { "enabled" }
    );
    let mut sink = Sink {
        json: args.engine.json.as_ref(),
        all: Vec::new(),
        error: None,
    };
    for f in &factories {
        println!(
            "------------------------------------------------ {}",
            f.kind().name()
        );
        dbbench::run(f, &cfg, &mut |r| sink.push(r))
            .with_context(|| format!("engine {}", f.kind().name()))?;
    }
    finish(&args.engine, sink)
}

/// Runs a YCSB workload on every engine of `args`; like [`compare`].
pub fn compare_ycsb(args: &YcsbArgs) -> Result<Vec<BenchResult>> {
    let mut cfg = YcsbConfig::new(args.workload)?;
    cfg.recordcount = args.recordcount;
    cfg.operationcount = args.operationcount;
    cfg.fieldcount = args.fieldcount;
    cfg.fieldlength = args.fieldlength;
    cfg.maxscanlength = args.maxscanlength;
    cfg.writeallfields = args.writeallfields;
    cfg.threads = args.engine.threads;
    cfg.seed = args.engine.seed;
    cfg.progress = args.engine.progress();
    cfg.phases = match args.phase.as_str() {
        "load" => Phases::Load,
        "run" => Phases::Run,
        "both" => Phases::Both,
        o => bail!("unknown phase {o:?} (load, run, both)"),
    };
    if let Some(d) = &args.requestdistribution {
        cfg.workload.dist = Distribution::parse(d)?;
    }
    let factories = args.engine.factories()?;
    println!(
        "YCSB workload {}: {} records of {} x {} bytes, {} operations, {} threads, engines {}",
        cfg.workload.name,
        cfg.recordcount,
        cfg.fieldcount,
        cfg.fieldlength,
        cfg.operationcount,
        cfg.threads,
        args.engine.engine
    );
    let mut sink = Sink {
        json: args.engine.json.as_ref(),
        all: Vec::new(),
        error: None,
    };
    for f in &factories {
        println!(
            "------------------------------------------------ {}",
            f.kind().name()
        );
        ycsb::run(f, &cfg, &mut |r| sink.push(r))
            .with_context(|| format!("engine {}", f.kind().name()))?;
    }
    finish(&args.engine, sink)
}

/// Runs a `tegula bench` subcommand.
pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Db(a) => compare(&a).map(|_| ()),
        BenchCommand::Ycsb(a) => compare_ycsb(&a).map(|_| ()),
        BenchCommand::Paper(a) => crate::paper::run(&a).map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: BenchCommand,
    }

    #[test]
    fn db_bench_flag_names_parse() {
        let c = Cli::try_parse_from([
            "bench",
            "db",
            "--engine",
            "rocksdb,leveldb",
            "--benchmarks",
            "fillseq,readrandom",
            "--num",
            "1000",
            "--value_size",
            "4096",
            "--key-size",
            "20",
            "--sync_every",
            "10",
            "--json",
            "out.json",
            "--capacity",
            "16GiB",
        ])
        .expect("parse");
        let BenchCommand::Db(a) = c.cmd else {
            panic!("not db")
        };
        assert_eq!(a.num, 1000);
        assert_eq!(a.value_size, 4096);
        assert_eq!(a.key_size, 20);
        assert_eq!(a.sync_every, 10);
        assert_eq!(a.engine.capacity, Some(16 << 30));
        assert_eq!(a.engine.cache_size, 8 << 20);
    }

    #[test]
    fn disable_wal_parses_and_refuses_synced_writes() {
        let c = Cli::try_parse_from([
            "bench",
            "db",
            "--engine",
            "memory",
            "--disable_wal",
            "--sync_every",
            "10",
            "--no_progress",
        ])
        .expect("parse");
        let BenchCommand::Db(a) = c.cmd else {
            panic!("not db")
        };
        assert!(a.engine.disable_wal);
        let e = compare(&a).expect_err("sync needs the log");
        assert!(e.to_string().contains("--disable_wal"), "{e}");
        let c = Cli::try_parse_from(["bench", "ycsb", "--engine", "leveldb", "--disable-wal"])
            .expect("parse");
        let BenchCommand::Ycsb(a) = c.cmd else {
            panic!("not ycsb")
        };
        let e = a.engine.factories().expect_err("leveldb has no disableWAL");
        assert!(e.to_string().contains("LevelDB"), "{e}");
    }

    #[test]
    fn ycsb_flags_parse() {
        let c = Cli::try_parse_from([
            "bench",
            "ycsb",
            "--engine",
            "memory",
            "--workload",
            "e",
            "--recordcount",
            "10",
            "--operationcount",
            "20",
        ])
        .expect("parse");
        let BenchCommand::Ycsb(a) = c.cmd else {
            panic!("not ycsb")
        };
        assert_eq!(a.workload, 'e');
        assert_eq!(a.recordcount, 10);
    }

    #[test]
    fn engines_missing_from_the_build_are_refused_with_a_reason() {
        let c = Cli::try_parse_from(["bench", "db", "--engine", "nosuch"]).expect("parse");
        let BenchCommand::Db(a) = c.cmd else {
            panic!("not db")
        };
        assert!(a.engine.factories().is_err());
        if !cfg!(feature = "compare") {
            let c = Cli::try_parse_from(["bench", "db", "--engine", "rocksdb"]).expect("parse");
            let BenchCommand::Db(a) = c.cmd else {
                panic!("not db")
            };
            let e = a.engine.factories().expect_err("no compare feature");
            assert!(e.to_string().contains("compare"), "{e}");
        }
    }
}
