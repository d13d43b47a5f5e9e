//! `tegula fs experiment`: the cleaning experiment of tegula fs in device time
//! ([`tegula_bench::paper::shingledfs`]): parses the options, shows progress and prints the table.

use crate::cmd::bench::args::Size;
use crate::cmd::bench::printer::Printer;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use tegula_bench::paper::shingledfs::{self, CleaningOptions, Trigger, Workload};
use tegula_device::SEC;
use tegula_fs::{CleanPolicy, Placement};

/// `tegula fs experiment` arguments (defaults: [`CleaningOptions::default`]).
#[derive(Debug, Clone, Args)]
pub struct ExperimentArgs {
    /// Drive capacity (hm-smr mechanics, in memory).
    #[arg(long, default_value = "1GiB")]
    capacity: Size,
    /// Zone size.
    #[arg(long, default_value = "32MiB")]
    zone: Size,
    /// Live data kept on the drive, as a fraction of its data capacity.
    #[arg(long, default_value_t = 0.8)]
    fill: f64,
    /// New data written per run, in data capacities.
    #[arg(long, default_value_t = 3.0)]
    volume: f64,
    /// Size of one tree of the tree workload, and overwrites between two think times.
    #[arg(long, default_value = "48MiB")]
    tree: Size,
    /// The host's think time after each tree, in device seconds.
    #[arg(long, default_value_t = 2.0)]
    think: f64,
    /// Workloads: tree, overwrite.
    #[arg(long, value_delimiter = ',', default_value = "tree,overwrite")]
    workloads: Vec<Workload>,
    /// Placement policies compared: last-used, first-fit, best-fit, age-fit.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "last-used,first-fit,best-fit,age-fit"
    )]
    placements: Vec<Placement>,
    /// Cleaning choices compared: whole, tail, auto.
    #[arg(long, value_delimiter = ',', default_value = "whole,tail,auto")]
    cleans: Vec<CleanPolicy>,
    /// Triggers compared: foreground, thresholds, idle, all.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "foreground,thresholds,idle,all"
    )]
    triggers: Vec<Trigger>,
    /// Random seed of the workloads.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Directory for the JSON, the table and the plots.
    #[arg(long, default_value = "fs-cleaning")]
    out: PathBuf,
    /// Draw no progress bar.
    #[arg(long)]
    no_progress: bool,
}

impl ExperimentArgs {
    fn options(&self) -> Result<CleaningOptions> {
        if !(self.think >= 0.0 && self.think.is_finite()) {
            anyhow::bail!("--think {} is not a number of seconds", self.think);
        }
        Ok(CleaningOptions {
            capacity: self.capacity.0,
            zone: self.zone.0,
            fill: self.fill,
            volume: self.volume,
            tree_bytes: self.tree.0,
            think: (self.think * SEC as f64) as u64,
            workloads: self.workloads.clone(),
            placements: self.placements.clone(),
            cleans: self.cleans.clone(),
            triggers: self.triggers.clone(),
            seed: self.seed,
            out: self.out.clone(),
        })
    }
}

/// Runs `tegula fs experiment`: a result line per run on stderr as it finishes, then the
/// table and the files written on stdout.
pub fn run(a: ExperimentArgs) -> Result<()> {
    let opts = a.options()?;
    let report = shingledfs::run(&opts, &Printer::new(!a.no_progress, None))?;
    print!("{}", report.markdown);
    for p in report.tables.iter().chain(&report.plots) {
        println!("wrote {}", p.display());
    }
    Ok(())
}
