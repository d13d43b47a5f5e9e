//! Figure 12: random reads after a sequential and after a random load, SOC vs LOC.

use super::context::{bench_cfg, dev_ops, factory, label, measure, stat, Out, ENGINES};
use super::{drive, Sizes, VALUE};
use crate::error::Result;
use crate::plot::bars;
use std::fmt::Write as _;

/// Runs figure 12 on profile `p`.
pub(super) fn run(out: &mut Out<'_>, s: &Sizes, p: &str) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figure 12: random reads after sequential and random loads, on {p}\n\n\
         {} puts of 4 KiB values (`fillseq` or `fillrandom`, drained), then {} `readrandom` \
         gets; mean device time per get (blocks served by the 8 MiB cache cost none) and bands \
         probed per get.\n\n\
         | load | engine | ms per get (device) | gets/s (device) | bands probed per get | found |\n\
         | --- | --- | ---: | ---: | ---: | ---: |",
        s.rand_puts, s.reads
    );
    let cfg = drive(p, s.band, s.capacity)?;
    let mut series: Vec<(String, Vec<f64>)> = Vec::new();
    for kind in ENGINES {
        let mut ys = Vec::new();
        for load in ["fillseq", "fillrandom"] {
            out.step(&format!("fig 12 {} {load}", label(kind)));
            let f = factory(kind, &cfg, out.opts.clone())?;
            let engine = f.open(true)?;
            let fill = measure(
                engine.as_ref(),
                load,
                &bench_cfg(s.rand_puts, VALUE, out.seed),
                true,
            )?;
            let mut c = bench_cfg(s.rand_puts, VALUE, out.seed.wrapping_add(17));
            c.reads = Some(s.reads);
            let r = measure(engine.as_ref(), "readrandom", &c, false)?;
            engine.close()?;
            let ms = r.device_seconds.unwrap_or(0.0) * 1e3 / r.ops.max(1) as f64;
            let _ = writeln!(
                out.md,
                "| {load} | {} | {ms:.2} | {:.0} | {:.2} | {} |",
                label(kind),
                dev_ops(&r),
                stat(&r, "avg_bands_probed_per_get"),
                r.found.unwrap_or(0)
            );
            ys.push(ms);
            out.keep(fill, format!("fig12-{}-{load}", kind.name()));
            out.keep(r, format!("fig12-{}-readrandom-after-{load}", kind.name()));
        }
        series.push((label(kind).to_string(), ys));
    }
    let path = out.svg("fig12-random-read.svg");
    bars(
        &path,
        "Figure 12: random read latency after a sequential or random load, per engine",
        "mean latency per get (device ms)",
        &["after sequential load".into(), "after random load".into()],
        &series,
    )
}
