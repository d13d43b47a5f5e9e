//! Figure 8: sequential puts with a sync every N puts, and without the log.

use super::context::{bench_cfg, dev_mb, factory, measure, Out};
use super::{drive, Sizes};
use crate::error::Result;
use crate::plot::bars_x;
use std::fmt::Write as _;
use tegula_kv::{EngineKind, EngineOptions};

/// Figure 8's sync intervals (0: never); `None` is the run without the log.
pub(super) const SYNCS: [Option<u64>; 6] =
    [Some(1), Some(10), Some(100), Some(1000), Some(0), None];

fn sync_name(s: Option<u64>) -> String {
    match s {
        Some(0) => "never".into(),
        Some(n) => n.to_string(),
        None => "no-log".into(),
    }
}

/// Runs figure 8 on every profile; `raw` holds figure 7's media limits.
pub(super) fn run(
    out: &mut Out<'_>,
    s: &Sizes,
    profiles: &[String],
    raw: &[(String, (f64, f64))],
) -> Result<()> {
    let _ = writeln!(
        out.md,
        "\n## Figure 8: sequential puts with a sync every N puts\n\n\
         `fillseq` with `--sync_every N` on SMRDB-SOC, and without the log (`--disable_wal`, \
         durable once flushed: the paper's \"logging disabled\"); MB/s of keys and values per \
         device second, the final flush included, and in brackets that figure as a share of \
         the media's sustained sequential write bandwidth (figure 7, queued). With the log \
         every byte is written twice, to a log band and to a data band.\n\n\
         | drive | value | puts | sync 1 | sync 10 | sync 100 | sync 1000 | never | no log |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let cats: Vec<String> = SYNCS.iter().map(|&x| sync_name(x)).collect();
    let mut series = Vec::new();
    for p in profiles {
        let cfg = drive(p, s.band, s.capacity)?;
        let raw_mb = raw.iter().find(|r| &r.0 == p).map_or(0.0, |r| r.1 .1);
        for &(value, puts) in s.seq_puts.iter().filter(|v| v.1 > 0) {
            let mut row = format!("| {p} | {value} B | {puts} |");
            let mut ys = Vec::new();
            for &sync in &SYNCS {
                out.step(&format!("fig 8 {p} {value} B sync {}", sync_name(sync)));
                let opts = EngineOptions {
                    disable_wal: sync.is_none(),
                    ..out.opts.clone()
                };
                let f = factory(EngineKind::Tegula, &cfg, opts)?;
                let engine = f.open(true)?;
                let mut c = bench_cfg(puts, value, out.seed);
                c.sync_every = sync.unwrap_or(0);
                // Every run ends with its data in bands: without the log nothing else holds it.
                c.flush_after_write = true;
                let r = measure(engine.as_ref(), "fillseq", &c, true)?;
                engine.close()?;
                let mb = dev_mb(&r);
                let share = if raw_mb > 0.0 {
                    100.0 * mb / raw_mb
                } else {
                    0.0
                };
                let _ = write!(row, " {mb:.2} ({share:.0}%) |");
                ys.push(mb);
                out.keep(r, format!("fig08-{p}-v{value}-sync-{}", sync_name(sync)));
            }
            let _ = writeln!(out.md, "{row}");
            series.push((format!("{p} {value} B"), ys));
        }
    }
    let p = out.svg("fig08-seq-put-sync.svg");
    bars_x(
        &p,
        "Figure 8: sequential puts, sync every N puts or no log (SMRDB-SOC)",
        "puts per sync (never: no sync until the end; no-log: without the log)",
        "keys + values written (MB per device s)",
        &cats,
        &series,
    )
}
