//! The end of a `db` or `ycsb` run: the ratio tables of a multi-engine run (wall, device, CPU,
//! peak RSS), whether the engines were equally durable, the plots and the final JSON file; a
//! result above the media limit fails the run, an interrupted run exits with 130 after all of
//! that.

use super::args::EngineArgs;
use super::printer::Printer;
use crate::interrupt;
use anyhow::{bail, Result};
use tegula_bench::report::{compare_table, durability_summary, write_json};
use tegula_bench::BenchResult;

/// Whether `e` says the run was stopped by a signal.
fn is_interrupted(e: &anyhow::Error) -> bool {
    e.downcast_ref::<tegula_bench::Error>()
        .is_some_and(tegula_bench::Error::is_interrupted)
        || e.downcast_ref::<interrupt::Interrupted>().is_some()
}

/// Ends a run: prints the ratio tables when several engines ran and the durability summary,
/// draws the plots and writes the JSON file of every benchmark that finished; returns every
/// result. Fails after all that if a result exceeded the media limit or the run was
/// interrupted.
pub fn finish(args: &EngineArgs, printer: &Printer, run: Result<()>) -> Result<Vec<BenchResult>> {
    let (all, json_error) = printer.finish();
    let interrupted = match run {
        Ok(()) => false,
        Err(e) if is_interrupted(&e) => true,
        Err(e) => return Err(e),
    };
    if let Some(e) = json_error {
        return Err(e.into());
    }
    let mut engines: Vec<&str> = Vec::new();
    for r in &all {
        if !engines.contains(&r.engine.as_str()) {
            engines.push(&r.engine);
        }
    }
    if engines.len() > 1 {
        println!();
        print!("{}", compare_table(&all));
    }
    if let Some(s) = durability_summary(&all).filter(|s| !s.is_empty()) {
        println!();
        println!("{s}");
    }
    if let Some(dir) = &args.plot {
        for f in tegula_bench::plot::plot_results(dir, &all)? {
            eprintln!("plot: {}", f.display());
        }
    }
    if let Some(p) = &args.json {
        write_json(p, &all)?;
    }
    let above: Vec<String> = all
        .iter()
        .filter(|r| r.media_check.as_ref().is_some_and(|m| !m.ok))
        .map(|r| format!("{} {}", r.engine, r.benchmark))
        .collect();
    if !above.is_empty() {
        bail!(
            "{} reported more user bytes per device second than the media can write where \
             they went (a drive-model or accounting bug; see the lines above)",
            above.join(", ")
        );
    }
    if interrupted {
        return Err(interrupt::Interrupted(format!(
            ": {} result{} kept",
            all.len(),
            if all.len() == 1 { "" } else { "s" }
        ))
        .into());
    }
    Ok(all)
}
