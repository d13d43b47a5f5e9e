//! Figure 11: delaying compaction (an L0 compaction-trigger sweep), SMRDB-SOC.

use super::context::{dev_mb, dev_ops, fill_then_readseq, mib, stat, Out};
use super::{drive, Sizes};
use crate::error::Result;
use crate::plot::{LineChart, Series};
use std::fmt::Write as _;
use tegula_kv::{EngineKind, EngineOptions};

/// Runs figure 11 on profile `p`.
pub(super) fn run(out: &mut Out<'_>, s: &Sizes, p: &str) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figure 11: delaying compaction (L0 trigger sweep), SMRDB-SOC on {p}\n\n\
         Figure 9's random puts with the L0 compaction trigger T, slowdown at T + 4 and stop at \
         T + 8 bands; then `readseq`.\n\n\
         | L0 trigger | put ops/s | compaction written MiB | write amp | readseq MB/s |\n\
         | ---: | ---: | ---: | ---: | ---: |"
    );
    let cfg = drive(p, s.band, s.capacity)?;
    let mut puts = Vec::new();
    let mut reads = Vec::new();
    for &t in &s.l0_triggers {
        out.step(&format!("fig 11 trigger {t}"));
        let opts = EngineOptions {
            l0_compaction_trigger: Some(t),
            l0_slowdown: Some(t + 4),
            l0_stop: Some(t + 8),
            ..out.opts.clone()
        };
        let (fill, rs) = fill_then_readseq(EngineKind::Tegula, &cfg, opts, s.rand_puts, out.seed)?;
        let _ = writeln!(
            out.md,
            "| {t} | {:.0} | {:.1} | {:.2} | {:.1} |",
            dev_ops(&fill),
            mib(stat(&fill, "compaction_bytes_written")),
            fill.write_amp.unwrap_or(0.0),
            dev_mb(&rs)
        );
        puts.push((t as f64, dev_ops(&fill)));
        reads.push((t as f64, dev_mb(&rs)));
        out.keep(fill, format!("fig11-trigger{t}-fillrandom"));
        out.keep(rs, format!("fig11-trigger{t}-readseq"));
    }
    // The swept triggers are the x ticks.
    let sweep = |title: &str, y_label: &str| LineChart {
        x_ticks: s
            .l0_triggers
            .iter()
            .map(|&t| (t as f64, t.to_string()))
            .collect(),
        ..LineChart::new(title, "L0 compaction trigger (bands in L0)", y_label)
    };
    let path = out.svg("fig11-l0-trigger.svg");
    sweep(
        "Figure 11: random puts against the L0 compaction trigger (SMRDB-SOC)",
        "put throughput (puts per device s)",
    )
    .draw(
        &path,
        &[Series {
            name: "random put".into(),
            points: puts,
        }],
    )?;
    let path = out.svg("fig11-readseq.svg");
    sweep(
        "Figure 11: sequential read after the puts against the L0 trigger (SMRDB-SOC)",
        "read throughput (MB per device s)",
    )
    .draw(
        &path,
        &[Series {
            name: "readseq".into(),
            points: reads,
        }],
    )
}
