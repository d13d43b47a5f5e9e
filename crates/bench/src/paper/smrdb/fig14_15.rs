//! Figures 14 and 15: YCSB load, A, B and D with 4 KiB values, SOC vs LOC, and the load
//! phase's throughput over device time.

use super::context::{counters, dev_ops, factory, finish_measure, label, Out, ENGINES};
use super::{drive, Sizes, VALUE};
use crate::error::Result;
use crate::observer::Quiet;
use crate::plot::{bars, bucket_for, chart, rate_series, Series};
use crate::ycsb::{self, YcsbConfig};
use std::fmt::Write as _;

/// Runs figures 14 and 15 on profile `p`.
pub(super) fn run(out: &mut Out<'_>, s: &Sizes, p: &str) -> Result<()> {
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
            let before = counters(engine.as_ref())?;
            let mut r = if i == 0 {
                ycsb::load(engine.as_ref(), &c, &Quiet)?
            } else {
                ycsb::run_ops(engine.as_ref(), &c, &Quiet)?
            };
            engine.wait_for_background()?;
            finish_measure(engine.as_ref(), &mut r, &before);
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
        "Figure 14: YCSB load and workloads A, B, D with 4 KiB values, per engine",
        "throughput (ops per device s)",
        &["load".into(), "A".into(), "B".into(), "D".into()],
        &series,
    )?;
    let path = out.svg("fig15-ycsb-load-over-time.svg");
    chart(
        &path,
        "Figure 15: YCSB load phase, inserts over device time, per engine",
        "device time (s)",
        "insert throughput (inserts per device s)",
        &timelines,
    )?;
    let _ = writeln!(
        out.md,
        "\nFigure 15 (`fig15-ycsb-load-over-time.svg`) plots the load phase's inserts per device \
         second over device time."
    );
    Ok(())
}
