//! `tegula bench ycsb`: YCSB's core workloads on one or several engines.

use super::args::EngineArgs;
use super::printer::Printer;
use anyhow::Result;
use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use tegula_bench::ycsb::{Distribution, Phases};
use tegula_bench::{BenchResult, EngineSetup, Lineup, YcsbConfig};

/// `tegula bench ycsb`.
#[derive(Debug, Clone, Args)]
pub struct YcsbArgs {
    /// Engines and targets.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Core workload: a, b, c, d, e or f.
    #[arg(long, default_value_t = YcsbConfig::default().workload.name)]
    pub workload: char,
    /// Records to load.
    #[arg(long, default_value_t = YcsbConfig::default().recordcount)]
    pub recordcount: u64,
    /// Operations in the run phase.
    #[arg(long, default_value_t = YcsbConfig::default().operationcount)]
    pub operationcount: u64,
    /// Fields per record.
    #[arg(long, default_value_t = YcsbConfig::default().fieldcount)]
    pub fieldcount: usize,
    /// Bytes per field.
    #[arg(long, default_value_t = YcsbConfig::default().fieldlength)]
    pub fieldlength: usize,
    /// Longest scan (workload E).
    #[arg(long, default_value_t = YcsbConfig::default().maxscanlength)]
    pub maxscanlength: u64,
    /// Override the workload's request distribution: uniform, zipfian, latest.
    #[arg(long)]
    pub requestdistribution: Option<String>,
    /// Updates write all fields blindly instead of read-merge-write.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub writeallfields: bool,
    /// Phases: load, run or both.
    #[arg(long, default_value_t = YcsbConfig::default().phases.name().to_string())]
    pub phase: String,
    /// Time each phase that writes until no flush or compaction is running or due, so that
    /// a load pays for its compactions and the run after it starts on a settled database.
    #[arg(long = "settle", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new(), action = ArgAction::Set, value_name = "BOOL", hide_default_value = true, hide_possible_values = true)]
    pub settle: bool,
}

impl YcsbArgs {
    /// The library's settings of these flags.
    pub fn config(&self) -> Result<YcsbConfig> {
        let mut cfg = YcsbConfig::new(self.workload)?;
        cfg.recordcount = self.recordcount;
        cfg.operationcount = self.operationcount;
        cfg.fieldcount = self.fieldcount;
        cfg.fieldlength = self.fieldlength;
        cfg.maxscanlength = self.maxscanlength;
        cfg.writeallfields = self.writeallfields;
        cfg.threads = self.engine.threads;
        cfg.seed = self.engine.seed;
        cfg.phases = Phases::parse(&self.phase)?;
        cfg.settle = self.settle;
        if let Some(d) = &self.requestdistribution {
            cfg.workload.dist = Distribution::parse(d)?;
        }
        Ok(cfg)
    }
}

impl super::session::Workload for YcsbArgs {
    fn lineup(&self, setup: &EngineSetup) -> tegula_bench::Result<Lineup> {
        let cfg = self
            .config()
            .map_err(|e| tegula_bench::Error::invalid(e.to_string()))?;
        Lineup::for_ycsb(setup, &cfg)
    }

    fn run(&self, lineup: &Lineup, printer: &Printer) -> tegula_bench::Result<Vec<BenchResult>> {
        let cfg = self
            .config()
            .map_err(|e| tegula_bench::Error::invalid(e.to_string()))?;
        lineup.run_ycsb(&cfg, printer)
    }

    fn header(&self) -> String {
        match self.config() {
            Ok(cfg) => format!(
                "YCSB workload {}: {} records of {} x {} bytes, {} operations, {} threads, engines {}{}",
                cfg.workload.name,
                cfg.recordcount,
                cfg.fieldcount,
                cfg.fieldlength,
                cfg.operationcount,
                cfg.threads,
                self.engine.engine,
                if cfg.settle {
                    "; each phase that writes timed until no flush or compaction runs or is due"
                } else {
                    ""
                }
            ),
            Err(e) => format!("YCSB: {e}"),
        }
    }

    fn keeps_database(&self) -> bool {
        self.phase == "run"
    }
}

/// Runs a YCSB workload on every engine of `args`; like [`super::db::run`].
pub fn run(args: &YcsbArgs) -> Result<Vec<BenchResult>> {
    args.config()?;
    super::session::run(&args.engine, args)
}
