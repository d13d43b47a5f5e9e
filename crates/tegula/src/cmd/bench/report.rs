//! The end of a `db` or `ycsb` run: the ratio table of a multi-engine run, the plots and the
//! final JSON file.

use super::args::EngineArgs;
use super::printer::Printer;
use anyhow::Result;
use tegula_bench::report::{compare_table, write_json};
use tegula_bench::BenchResult;

/// Ends a run: on success prints the ratio table when several engines ran, draws the plots
/// and writes the JSON file; returns every result.
pub fn finish(
    args: &EngineArgs,
    printer: &Printer,
    run: tegula_bench::Result<Vec<BenchResult>>,
) -> Result<Vec<BenchResult>> {
    let (all, json_error) = printer.finish();
    run?;
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
    if let Some(dir) = &args.plot {
        for f in tegula_bench::plot::plot_results(dir, &all)? {
            eprintln!("plot: {}", f.display());
        }
    }
    if let Some(p) = &args.json {
        write_json(p, &all)?;
    }
    Ok(all)
}
