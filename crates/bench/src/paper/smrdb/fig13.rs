//! Figure 13: the band-size sweep of random puts, SOC vs LOC.

use super::context::{dev_ops, label, mib, random_fill, stat, Out, ENGINES};
use super::{drive, Sizes, MIB};
use crate::error::Result;
use crate::plot::{LineChart, Series};
use std::fmt::Write as _;

/// Runs figure 13 on profile `p`.
pub(super) fn run(out: &mut Out<'_>, s: &Sizes, p: &str) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figure 13: band size, on {p}\n\n\
         Figure 9's random puts with the band (zone) size varied.\n\n\
         | band | engine | put ops/s | compaction written MiB | write amp |\n\
         | ---: | --- | ---: | ---: | ---: |"
    );
    let mut series = Vec::new();
    for kind in ENGINES {
        let mut pts = Vec::new();
        for &band in &s.band_sizes {
            out.step(&format!("fig 13 {} band {}", label(kind), band / MIB));
            let cfg = drive(p, band, s.capacity)?;
            let (engine, fill) = random_fill(kind, &cfg, out.opts.clone(), s.rand_puts, out.seed)?;
            engine.close()?;
            let _ = writeln!(
                out.md,
                "| {} | {} | {:.0} | {:.1} | {:.2} |",
                tegula_device::format_size(band),
                label(kind),
                dev_ops(&fill),
                mib(stat(&fill, "compaction_bytes_written")),
                fill.write_amp.unwrap_or(0.0)
            );
            // Band sizes double: x is log2 of the size in MiB.
            pts.push((((band / MIB) as f64).log2(), dev_ops(&fill)));
            out.keep(fill, format!("fig13-{}-band{}MiB", kind.name(), band / MIB));
        }
        series.push(Series {
            name: label(kind).into(),
            points: pts,
        });
    }
    let path = out.svg("fig13-band-size.svg");
    LineChart {
        x_ticks: s
            .band_sizes
            .iter()
            .map(|&b| (((b / MIB) as f64).log2(), (b / MIB).to_string()))
            .collect(),
        ..LineChart::new(
            "Figure 13: random puts against band size, per engine",
            "band size (MiB, log scale)",
            "put throughput (puts per device s)",
        )
    }
    .draw(&path, &series)
}
