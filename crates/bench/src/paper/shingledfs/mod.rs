//! The cleaning experiment of tegula fs (issue 14, ShingledFS §6 and §8.1), in device time.
//! A long-running workload that deletes and overwrites runs on an emulated host-managed
//! drive kept 70-90 % full, for each placement policy, cleaning choice and trigger; each run
//! reports the bytes the cleaner moved, the write amplification, the throughput over device
//! time, and the cleaning rate it needed against the estimate of `tegula fs stats`. The
//! results go to a JSON file, a markdown table and SVG plots (`tegula fs experiment`).
//!
//! Workloads ([`Workload`]): `tree` writes trees of files (sizes of a source tree: mostly
//! small, a few large), syncs each, and deletes the oldest tree once the drive is full
//! enough, like repeated untar and delete; `overwrite` rewrites random ranges of a fixed set
//! of 8 MiB files with an fsync every 16 writes (db_bench's overwrite without an LSM's
//! compactions). After each tree (every `tree_bytes` of overwrites) the host thinks for
//! `think` of device time.
//!
//! Triggers ([`Trigger`]), as the mount runs them: `foreground` cleans only inside a write
//! that finds no room; `thresholds` runs the high-priority cleaner before the next request
//! below 10 % usable free space and one low-priority step between requests below 30 %;
//! `idle` cleans during the host's think time once the drive has been idle for the idle
//! trigger's time (1 s), stopping when the next request arrives, with foreground cleaning
//! as the fallback; `all` combines them.
//!
//! The plan: every placement × cleaning policy under the `thresholds` trigger, then every
//! other trigger with the defaults (last-used placement, auto cleaning); options narrow each
//! list.

mod report;
mod sim;

use crate::error::{Error, Result};
use crate::observer::Observer;
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use tegula_device::{Nanos, SEC};
use tegula_fs::{CleanPolicy, Placement};

pub use report::markdown;

/// A workload of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Trees of files written, synced and deleted oldest first (untar and delete).
    Tree,
    /// Random overwrites of a fixed set of files (db_bench overwrite).
    Overwrite,
}

impl Workload {
    /// Every workload.
    pub const ALL: [Workload; 2] = [Workload::Tree, Workload::Overwrite];

    /// Name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Tree => "tree",
            Workload::Overwrite => "overwrite",
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A workload name that is not one of `tree`, `overwrite`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown workload {0:?} (tree, overwrite)")]
pub struct UnknownWorkload(pub String);

impl FromStr for Workload {
    type Err = UnknownWorkload;
    fn from_str(s: &str) -> Result<Self, UnknownWorkload> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| UnknownWorkload(s.into()))
    }
}

/// When cleaning runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    /// Only inside a write that finds no room.
    Foreground,
    /// The free-space thresholds (low and high priority) between requests.
    Thresholds,
    /// During the host's think time, after the idle trigger's time.
    Idle,
    /// Thresholds and idle.
    All,
}

impl Trigger {
    /// Every trigger.
    pub const ALL: [Trigger; 4] = [
        Trigger::Foreground,
        Trigger::Thresholds,
        Trigger::Idle,
        Trigger::All,
    ];

    /// Name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Foreground => "foreground",
            Trigger::Thresholds => "thresholds",
            Trigger::Idle => "idle",
            Trigger::All => "all",
        }
    }

    fn thresholds(self) -> bool {
        matches!(self, Trigger::Thresholds | Trigger::All)
    }

    fn idle(self) -> bool {
        matches!(self, Trigger::Idle | Trigger::All)
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A trigger name that is not one of `foreground`, `thresholds`, `idle`, `all`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown trigger {0:?} (foreground, thresholds, idle, all)")]
pub struct UnknownTrigger(pub String);

impl FromStr for Trigger {
    type Err = UnknownTrigger;
    fn from_str(s: &str) -> Result<Self, UnknownTrigger> {
        Trigger::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownTrigger(s.into()))
    }
}

/// Settings of the experiment. [`CleaningOptions::default`] is the one source of the
/// defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct CleaningOptions {
    /// Drive capacity in bytes (default 1 GiB): `hm-smr`'s mechanics, in memory.
    pub capacity: u64,
    /// Zone size in bytes (default 32 MiB); one conventional zone holds the metadata.
    pub zone: u64,
    /// Live data kept on the drive, as a fraction of its data capacity (default 0.8).
    pub fill: f64,
    /// New data written per run, in data capacities (default 3).
    pub volume: f64,
    /// Bytes of one tree, and of overwrites between two think times (default 48 MiB).
    pub tree_bytes: u64,
    /// The host's think time after each tree, in device nanoseconds (default 2 s).
    pub think: Nanos,
    /// Workloads (default both).
    pub workloads: Vec<Workload>,
    /// Placement policies compared under the thresholds trigger (default all four).
    pub placements: Vec<Placement>,
    /// Cleaning choices compared under the thresholds trigger (default all three).
    pub cleans: Vec<CleanPolicy>,
    /// Triggers compared with the default policies (default all four).
    pub triggers: Vec<Trigger>,
    /// Random seed of the workloads (default 7).
    pub seed: u64,
    /// Output directory of the JSON, the table and the plots (default `fs-cleaning`).
    pub out: PathBuf,
}

impl Default for CleaningOptions {
    fn default() -> Self {
        CleaningOptions {
            capacity: 1 << 30,
            zone: 32 << 20,
            fill: 0.8,
            volume: 3.0,
            tree_bytes: 48 << 20,
            think: 2 * SEC,
            workloads: Workload::ALL.to_vec(),
            placements: Placement::ALL.to_vec(),
            cleans: CleanPolicy::ALL.to_vec(),
            triggers: Trigger::ALL.to_vec(),
            seed: 7,
            out: PathBuf::from("fs-cleaning"),
        }
    }
}

impl CleaningOptions {
    fn validate(&self) -> Result<()> {
        if !(0.05..0.95).contains(&self.fill) {
            return Err(Error::invalid(format!(
                "fill {} is not a fraction between 0.05 and 0.95",
                self.fill
            )));
        }
        if !(self.volume > 0.0 && self.volume.is_finite()) {
            return Err(Error::invalid(format!(
                "volume {} is not a positive number of capacities",
                self.volume
            )));
        }
        if self.zone == 0 || self.capacity < 4 * self.zone {
            return Err(Error::invalid(format!(
                "capacity {} holds fewer than 4 zones of {}",
                self.capacity, self.zone
            )));
        }
        if self.tree_bytes < 64 << 10 {
            return Err(Error::invalid("tree size below 64 KiB"));
        }
        if self.workloads.is_empty()
            || self.placements.is_empty()
            || self.cleans.is_empty()
            || self.triggers.is_empty()
        {
            return Err(Error::invalid(
                "every list (workloads, placements, cleaning choices, triggers) needs an entry",
            ));
        }
        Ok(())
    }

    /// The runs, in order: every placement × cleaning choice under the thresholds trigger
    /// (if it is among the triggers), then every other trigger with last-used placement and
    /// auto cleaning (or the first of each list without them), for each workload.
    pub fn plan(&self) -> Vec<RunSpec> {
        let placement = if self.placements.contains(&Placement::LastUsed) {
            Placement::LastUsed
        } else {
            self.placements[0]
        };
        let clean = if self.cleans.contains(&CleanPolicy::Auto) {
            CleanPolicy::Auto
        } else {
            self.cleans[0]
        };
        let mut plan = Vec::new();
        for &workload in &self.workloads {
            if self.triggers.contains(&Trigger::Thresholds) {
                for &p in &self.placements {
                    for &c in &self.cleans {
                        plan.push(RunSpec {
                            workload,
                            placement: p,
                            clean: c,
                            trigger: Trigger::Thresholds,
                        });
                    }
                }
            }
            for &trigger in &self.triggers {
                if trigger != Trigger::Thresholds {
                    plan.push(RunSpec {
                        workload,
                        placement,
                        clean,
                        trigger,
                    });
                }
            }
        }
        plan
    }
}

/// What one run runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSpec {
    /// The workload.
    pub workload: Workload,
    /// The placement policy.
    pub placement: Placement,
    /// The cleaning choice.
    pub clean: CleanPolicy,
    /// When cleaning runs.
    pub trigger: Trigger,
}

impl fmt::Display for RunSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {}",
            self.workload, self.placement, self.clean, self.trigger
        )
    }
}

/// One run's results.
#[derive(Debug, Clone, Serialize)]
pub struct CleaningRun {
    /// The workload.
    pub workload: Workload,
    /// Placement policy name.
    pub placement: String,
    /// Cleaning choice name.
    pub clean: String,
    /// The trigger.
    pub trigger: Trigger,
    /// Bytes of new data written.
    pub user_bytes: u64,
    /// Bytes the cleaner moved.
    pub moved_bytes: u64,
    /// Bytes the cleaner freed (zone resets and write pointers set back).
    pub reclaimed_bytes: u64,
    /// (user + moved) / user.
    pub write_amplification: f64,
    /// Zones cleaned (whole zone or tail).
    pub cleanings: u64,
    /// Of them, tail cleanings.
    pub tail_cleanings: u64,
    /// Device seconds of the whole run (think time included).
    pub device_secs: f64,
    /// Device seconds the host spent thinking (the drive idle or idle-cleaning).
    pub think_secs: f64,
    /// New data per busy device second (think time excluded), MB/s.
    pub throughput_mb_s: f64,
    /// Writes and syncs refused for lack of space.
    pub enospc: u64,
    /// Live bytes at the end.
    pub live_bytes: u64,
    /// Dead bytes at the end (not yet cleaned).
    pub dead_bytes: u64,
    /// Bytes the cleaner freed per device second of the run (the cleaning rate the
    /// workload needed, measured).
    pub measured_clean_rate: f64,
    /// The cleaning rate `tegula fs stats` estimates (§8.1) from the end state, at the
    /// run's write rate in device time and fill `fill`, bytes per second.
    pub estimated_clean_rate: Option<f64>,
    /// The estimate's space overhead, (live + dead) / live.
    pub space_overhead: f64,
    /// (device seconds, cumulative user bytes) after each request.
    #[serde(skip)]
    pub series: Vec<(f64, f64)>,
}

/// What the experiment produced.
#[derive(Debug, Clone, Default)]
pub struct CleaningReport {
    /// Every run, in plan order.
    pub runs: Vec<CleaningRun>,
    /// The tables, as written to `fs-cleaning.md`.
    pub markdown: String,
    /// The JSON and markdown files written.
    pub tables: Vec<PathBuf>,
    /// The plots written.
    pub plots: Vec<PathBuf>,
}

/// Runs the experiment: every run of [`CleaningOptions::plan`], then the JSON
/// (`fs-cleaning.json`), the tables (`fs-cleaning.md`) and the plots (per workload: write
/// amplification and bytes moved per policy, throughput over device time per trigger) in
/// `out`. Progress goes to `observer` (a job of one step per run, a note per result).
pub fn run(opts: &CleaningOptions, observer: &dyn Observer) -> Result<CleaningReport> {
    opts.validate()?;
    crate::report::output_dir(&opts.out)?;
    let plan = opts.plan();
    observer.job_started("fs cleaning experiment", plan.len() as u64);
    let mut runs = Vec::with_capacity(plan.len());
    for spec in plan {
        observer.step(&spec.to_string());
        let r = sim::run_one(opts, spec)?;
        observer.note(&report::row(&r));
        runs.push(r);
    }
    observer.job_finished();
    report::write(opts, runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_crosses_policies_under_thresholds_then_compares_triggers() {
        let plan = CleaningOptions::default().plan();
        // Per workload: 4 placements × 3 cleaning choices, then 3 other triggers.
        assert_eq!(plan.len(), 2 * (4 * 3 + 3));
        assert!(plan[..12]
            .iter()
            .all(|s| s.workload == Workload::Tree && s.trigger == Trigger::Thresholds));
        let rest: Vec<Trigger> = plan[12..15].iter().map(|s| s.trigger).collect();
        assert_eq!(rest, [Trigger::Foreground, Trigger::Idle, Trigger::All]);
        assert!(plan[12..15]
            .iter()
            .all(|s| s.placement == Placement::LastUsed && s.clean == CleanPolicy::Auto));
        let o = CleaningOptions {
            placements: vec![Placement::BestFit],
            cleans: vec![CleanPolicy::Tail],
            triggers: vec![Trigger::Idle],
            workloads: vec![Workload::Overwrite],
            ..CleaningOptions::default()
        };
        let p = o.plan();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].to_string(), "overwrite best-fit tail idle");
    }

    #[test]
    fn bad_options_are_refused_before_anything_runs() {
        for o in [
            CleaningOptions {
                fill: 0.99,
                ..CleaningOptions::default()
            },
            CleaningOptions {
                zone: 512 << 20,
                ..CleaningOptions::default()
            },
            CleaningOptions {
                cleans: vec![],
                ..CleaningOptions::default()
            },
        ] {
            assert!(run(&o, &crate::observer::Quiet).is_err_and(|e| e.is_invalid_argument()));
        }
        assert_eq!("idle".parse::<Trigger>(), Ok(Trigger::Idle));
        assert!("nope".parse::<Workload>().is_err());
    }
}
