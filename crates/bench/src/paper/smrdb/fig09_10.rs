//! Figures 9 and 10: random puts, SOC vs LOC, a sequential read after them, and the
//! compaction behind them.

use super::context::{dev_mb, dev_ops, fill_then_readseq, label, mib, stat, Out, ENGINES};
use super::{drive, Sizes, VALUE};
use crate::error::Result;
use crate::plot::bars;
use std::fmt::Write as _;

/// Runs figures 9 and 10 on every profile.
pub(super) fn run(out: &mut Out<'_>, s: &Sizes, profiles: &[String]) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figures 9 and 10: random puts, SOC vs LOC, and the compaction behind them\n\n\
         `fillrandom` of {} puts of 16 B keys and 4 KiB values ({:.0} MiB), no sync, then \
         `readseq` over the whole database. Compaction figures are SMRDB's own statistics \
         (bytes read and written by compactions, modelled device time of compaction I/O); \
         write amplification is (flush + compaction bytes) / user bytes.\n\n\
         | drive | engine | put ops/s | put MB/s | device s | compaction read MiB | compaction written MiB | compaction device s | write amp | readseq MB/s |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        s.rand_puts,
        mib((s.rand_puts * (VALUE as u64 + 16)) as f64)
    );
    let mut put_series = Vec::new();
    let mut comp_series = Vec::new();
    let mut ratio_rows = Vec::new();
    for p in profiles {
        let cfg = drive(p, s.band, s.capacity)?;
        let mut per = Vec::new();
        for kind in ENGINES {
            out.step(&format!("fig 9 {p} {}", label(kind)));
            let (fill, rs) =
                fill_then_readseq(kind, &cfg, out.opts.clone(), s.rand_puts, out.seed)?;
            let _ = writeln!(
                out.md,
                "| {p} | {} | {:.0} | {:.2} | {:.2} | {:.1} | {:.1} | {:.2} | {:.2} | {:.1} |",
                label(kind),
                dev_ops(&fill),
                dev_mb(&fill),
                fill.device_seconds.unwrap_or(0.0),
                mib(stat(&fill, "compaction_bytes_read")),
                mib(stat(&fill, "compaction_bytes_written")),
                stat(&fill, "compaction_time_ns") / 1e9,
                fill.write_amp.unwrap_or(0.0),
                dev_mb(&rs),
            );
            per.push((
                dev_ops(&fill),
                stat(&fill, "compaction_bytes_read") + stat(&fill, "compaction_bytes_written"),
                fill.device_seconds.unwrap_or(0.0),
            ));
            let fill = out.keep(fill, format!("fig09-{p}-{}-fillrandom", kind.name()));
            out.keep(rs.clone(), format!("fig09-{p}-{}-readseq", kind.name()));
            put_series.push((format!("{p} {}", label(kind)), dev_ops(&fill), dev_mb(&rs)));
            comp_series.push((
                format!("{p} {}", label(kind)),
                mib(stat(&fill, "compaction_bytes_read")),
                mib(stat(&fill, "compaction_bytes_written")),
                stat(&fill, "compaction_time_ns") / 1e9,
            ));
        }
        if let [soc, loc] = per[..] {
            ratio_rows.push(format!(
                "| {p} | {:.2}x | {:.2}x |",
                if soc.2 > 0.0 { loc.2 / soc.2 } else { 0.0 },
                if soc.1 > 0.0 {
                    loc.1 / soc.1
                } else {
                    f64::INFINITY
                },
            ));
        }
    }
    let _ = writeln!(
        out.md,
        "\nSOC against LOC (the issue's target: SOC ≥ 1.5x faster with fewer compaction bytes):\n\n\
         | drive | LOC device time / SOC device time | LOC compaction bytes / SOC compaction bytes |\n\
         | --- | ---: | ---: |"
    );
    for r in ratio_rows {
        let _ = writeln!(out.md, "{r}");
    }
    let p = out.svg("fig09-random-put.svg");
    bars(
        &p,
        "Figure 9: random puts (4 KiB values), per drive and engine",
        "put throughput (puts per device s)",
        &["random put".to_string()],
        &put_series
            .iter()
            .map(|x| (x.0.clone(), vec![x.1]))
            .collect::<Vec<_>>(),
    )?;
    let p = out.svg("fig09-readseq-after-random-put.svg");
    bars(
        &p,
        "Figure 9: sequential read after the random puts, per drive and engine",
        "read throughput (MB per device s)",
        &["readseq".to_string()],
        &put_series
            .iter()
            .map(|x| (x.0.clone(), vec![x.2]))
            .collect::<Vec<_>>(),
    )?;
    let p = out.svg("fig10-compaction-bytes.svg");
    bars(
        &p,
        "Figure 10: data read and written by compaction, per drive and engine",
        "compaction I/O (MiB)",
        &["read".to_string(), "written".to_string()],
        &comp_series
            .iter()
            .map(|x| (x.0.clone(), vec![x.1, x.2]))
            .collect::<Vec<_>>(),
    )?;
    let p = out.svg("fig10-compaction-time.svg");
    bars(
        &p,
        "Figure 10: device time spent in compaction, per drive and engine",
        "compaction time (device s)",
        &["compaction".to_string()],
        &comp_series
            .iter()
            .map(|x| (x.0.clone(), vec![x.3]))
            .collect::<Vec<_>>(),
    )?;
    Ok(())
}
