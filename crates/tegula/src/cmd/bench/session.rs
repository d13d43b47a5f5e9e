//! One `db` or `ycsb` run from its flags to its last line: the `--disk` check, the run
//! directory, the header naming where each engine keeps its data, the engines (one process
//! each when there are several, [`super::children`]), and the end ([`super::report`]).

use super::args::EngineArgs;
use super::printer::Printer;
use super::{children, disk_check, report};
use crate::interrupt;
use anyhow::{Context, Result};
use tegula_bench::{BenchResult, EngineSetup, Lineup, RunDir, Target};

/// What a subcommand supplies: how to check and prepare its lineup, and how to run it.
pub trait Workload {
    /// Checks the settings and prepares the engines of `setup`.
    fn lineup(&self, setup: &EngineSetup) -> tegula_bench::Result<Lineup>;
    /// Runs the lineup, reporting to `printer`.
    fn run(&self, lineup: &Lineup, printer: &Printer) -> tegula_bench::Result<Vec<BenchResult>>;
    /// The first lines printed (what runs, with which sizes).
    fn header(&self) -> String;
    /// Whether the run keeps the existing database instead of starting fresh.
    fn keeps_database(&self) -> bool;
}

/// Runs `work` on the engines of `args`.
pub fn run(args: &EngineArgs, work: &dyn Workload) -> Result<Vec<BenchResult>> {
    let mut setup = args.setup()?;
    if let Some(index) = args.child_engine {
        return run_child(args, &setup, index, work);
    }
    disk_check::refuse_destroying(&setup, work.keeps_database(), args.force)?;
    interrupt::install()?;
    let several = setup.engines.len() > 1;
    // The children must agree on the run directory: a temporary one is made here.
    let tmp = if several && setup.db.is_none() {
        let d = RunDir::new(None)?;
        setup.db = Some(d.path().to_path_buf());
        Some(d)
    } else {
        None
    };
    let lineup = work.lineup(&setup)?;
    println!("{}", work.header());
    print!("{}", storage_lines(&lineup));
    let printer = Printer::new(!args.no_progress, args.json.clone());
    let run = if several {
        let names: Vec<&str> = setup.engines.iter().map(|k| k.name()).collect();
        drop(lineup);
        children::run_all(&names, tmp.as_ref().map(|d| d.path()), &printer)
    } else {
        work.run(&lineup, &printer)
            .map(|_| ())
            .map_err(anyhow::Error::from)
    };
    report::finish(args, &printer, run)
}

/// A child process: engine `index` of the lineup alone, its results to `--child_json`.
fn run_child(
    args: &EngineArgs,
    setup: &EngineSetup,
    index: usize,
    work: &dyn Workload,
) -> Result<Vec<BenchResult>> {
    interrupt::install()?;
    let json = args
        .child_json
        .clone()
        .context("--child_engine needs --child_json")?;
    let lineup = work.lineup(setup)?.only(index)?;
    let printer = Printer::child(!args.no_progress, json);
    let run = work.run(&lineup, &printer);
    let (all, json_error) = printer.finish();
    match run {
        Err(e) if e.is_interrupted() => Err(interrupt::Interrupted(String::new()).into()),
        Err(e) => Err(e.into()),
        Ok(_) => match json_error {
            Some(e) => Err(e.into()),
            None => Ok(all),
        },
    }
}

/// One line per engine: where it keeps its data.
fn storage_lines(lineup: &Lineup) -> String {
    let mut s = String::new();
    for (i, f) in lineup.factories().iter().enumerate() {
        let what = match f.target() {
            Target::Memory => "in this process's memory (a BTreeMap)".to_string(),
            Target::Emulated(_) => {
                "on an emulated drive in memory (--in-memory: no file I/O, a sync costs \
                 nothing; not comparable in wall time with engines that write files)"
                    .to_string()
            }
            Target::Image(p, _) => format!("on an emulated drive, disk image {}", p.display()),
            Target::Zoned(p) => format!(
                "on the zoned block device {} (O_DIRECT at the write pointers, fdatasync; no \
                 drive model)",
                p.display()
            ),
            Target::Banded {
                path,
                zone_size,
                zone_files: true,
                ..
            } => format!(
                "on zone files {}/ (one file per {} zone, pwrite/fdatasync of a zone's file, \
                 reads through mappings; no drive model)",
                path.display(),
                tegula_device::format_size(*zone_size)
            ),
            Target::Banded {
                path, zone_size, ..
            } => format!(
                "on a banded file {} ({} zones, pwrite/fdatasync, reads through a mapping; no \
                 drive model)",
                path.display(),
                tegula_device::format_size(*zone_size)
            ),
            Target::Dir(Some(p)) => format!("in {}", p.display()),
            Target::Dir(None) => "in a temporary directory".to_string(),
        };
        let label = if i == 0 { "Storage:" } else { "" };
        s.push_str(&format!("{label:<12}{} {what}\n", f.kind().name()));
    }
    s
}
