//! `tegula bench db`: db_bench's named benchmarks on one or several engines.

use super::args::EngineArgs;
use super::printer::Printer;
use anyhow::Result;
use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use tegula_bench::{BenchResult, DbBenchConfig, EngineSetup, Lineup};

/// `tegula bench db`.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// Engines and targets.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Comma-separated benchmarks: fillseq, fillrandom, overwrite, fillsync, readseq,
    /// readrandom, readmissing, seekrandom, deleterandom.
    #[arg(long, default_value_t = DbBenchConfig::default().benchmarks.join(","))]
    pub benchmarks: String,
    /// Number of keys.
    #[arg(long, default_value_t = DbBenchConfig::default().num)]
    pub num: u64,
    /// Reads for the read benchmarks (default: --num).
    #[arg(long)]
    pub reads: Option<u64>,
    /// Key size in bytes.
    #[arg(long = "key_size", alias = "key-size", default_value_t = DbBenchConfig::default().key_size)]
    pub key_size: usize,
    /// Value size in bytes (a unit may follow: `4KiB`).
    #[arg(long = "value_size", alias = "value-size", value_name = "BYTES", value_parser = super::args::parse_byte_count, default_value_t = DbBenchConfig::default().value_size)]
    pub value_size: usize,
    /// Sync every write.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub sync: bool,
    /// Sync every N-th write (0: never).
    #[arg(long = "sync_every", alias = "sync-every", default_value_t = DbBenchConfig::default().sync_every)]
    pub sync_every: u64,
    /// Keys read after each seek in seekrandom.
    #[arg(long = "seek_nexts", alias = "seek-nexts", default_value_t = DbBenchConfig::default().seek_nexts)]
    pub seek_nexts: usize,
    /// Puts per write batch.
    #[arg(long = "batch_size", alias = "batch-size", default_value_t = DbBenchConfig::default().batch_size)]
    pub batch_size: usize,
    /// Run on the existing database instead of starting fill benchmarks fresh.
    #[arg(long = "use_existing_db", alias = "use-existing-db", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub use_existing_db: bool,
    /// Flush the memtable at the end of each write benchmark (timed).
    #[arg(long = "flush", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub flush: bool,
    /// Wait at the end of each write benchmark (timed) until no flush or compaction is
    /// running or due, so that its rate pays for the compaction its writes made necessary.
    #[arg(long = "settle", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub settle: bool,
}

impl DbArgs {
    /// The library's settings of these flags.
    pub fn config(&self) -> DbBenchConfig {
        DbBenchConfig {
            benchmarks: self
                .benchmarks
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            num: self.num,
            reads: self.reads,
            key_size: self.key_size,
            value_size: self.value_size,
            threads: self.engine.threads,
            seed: self.engine.seed,
            sync: self.sync,
            sync_every: self.sync_every,
            seek_nexts: self.seek_nexts,
            batch_size: self.batch_size,
            use_existing_db: self.use_existing_db,
            flush_after_write: self.flush,
            settle_after_write: self.settle,
        }
    }
}

impl super::session::Workload for DbArgs {
    fn lineup(&self, setup: &EngineSetup) -> tegula_bench::Result<Lineup> {
        Lineup::for_db(setup, &self.config())
    }

    fn run(&self, lineup: &Lineup, printer: &Printer) -> tegula_bench::Result<Vec<BenchResult>> {
        lineup.run_db(&self.config(), printer)
    }

    fn header(&self) -> String {
        let cfg = self.config();
        format!(
            "Keys:       {} bytes each\nValues:     {} bytes each\nEntries:    {}\nThreads:    {}\nEngines:    {}\nWAL:        {}\nSync:       {}\nChecksums:  {}\nEnd of writes: {}",
            cfg.key_size,
            cfg.value_size,
            cfg.num,
            cfg.threads,
            self.engine.engine,
            if self.engine.disable_wal { "disabled" } else { "enabled" },
            match (cfg.sync, cfg.sync_every) {
                (true, _) => "every write".to_string(),
                (false, 0) => "never (db_bench's default; see each result's durability)".to_string(),
                (false, n) => format!("every {n} writes"),
            },
            if self.engine.verify_checksums {
                "verified on every block read from storage, by every engine"
            } else {
                "not verified on reads (--verify_checksums=0), by any engine"
            },
            match (cfg.flush_after_write, cfg.settle_after_write) {
                (false, false) => "as db_bench: background work left running is not timed",
                (true, false) => "memtable flushed (timed)",
                (false, true) => "settled: timed until no flush or compaction runs or is due",
                (true, true) => "memtable flushed, then settled (timed)",
            }
        )
    }

    fn keeps_database(&self) -> bool {
        self.use_existing_db
    }
}

/// Runs db_bench-style benchmarks on every engine of `args`, one engine after the other (each
/// in a process of its own when there are several), printing each result line as it comes
/// and the ratio tables when there are several engines: the side-by-side comparison. Returns
/// every result.
pub fn run(args: &DbArgs) -> Result<Vec<BenchResult>> {
    super::session::run(&args.engine, args)
}
