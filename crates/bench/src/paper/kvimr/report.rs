//! The experiment's numbers (`kvimr.json`: every row), tables (`kvimr.md`: load totals, the
//! paper's targets, the timeline, the sweep, YCSB) and plots
//! (`kvimr-{timeline,sweep,ycsb,counts}.svg`).

use super::{KvimrOptions, KvimrSizes, Results, Row, Scheme, MIB};
use crate::error::Result;
use crate::paper::PaperReport;
use crate::plot::{bars, LineChart, Series};
use crate::report::{write_json_value, write_text};
use std::fmt::Write as _;
use std::path::Path;

/// Load totals of one scheme.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    /// Operations over device seconds of the whole load.
    pub ops_per_sec: f64,
    /// Operations over device seconds of the steps at or above 70% usage.
    pub high_ops_per_sec: f64,
    /// Compactions.
    pub compactions: u64,
    /// Compaction device seconds.
    pub compaction_s: f64,
    /// Top-track rewrites.
    pub top_rewrites: u64,
    /// Read-modify-writes.
    pub rmw_ops: u64,
    /// Syncs.
    pub syncs: u64,
    /// Media write amplification at the end.
    pub media_write_amp: f64,
    /// The LSM's write amplification at the end.
    pub lsm_write_amp: f64,
    /// Device seconds of the load.
    pub device_s: f64,
    /// Data inserted at the end of the load, over the data tracks' capacity.
    pub inserted: f64,
    /// Fraction of the data tracks owned by live SSTables at the end of the load.
    pub live_usage: f64,
    /// Device seconds of persisting SSTables to tracks (read-modify-writes included) and of
    /// the syncs that put them on the media.
    pub persist_s: f64,
    /// Device seconds of read-modify-write beyond the bottom writes.
    pub rmw_s: f64,
    /// Busy seconds of the separate CMR drive (`--wal-on cmr`): logs and manifest.
    pub cmr_busy_s: f64,
}

/// Load totals of `scheme` (`None` if it has no load rows).
pub fn totals(rows: &[Row], scheme: Scheme) -> Option<Totals> {
    let load: Vec<&Row> = rows
        .iter()
        .filter(|r| r.phase == "load" && r.scheme == scheme.name())
        .collect();
    let last = *load.last()?;
    let ops: u64 = load.iter().map(|r| r.ops).sum();
    let secs: f64 = load.iter().map(|r| r.device_s).sum();
    let high: Vec<&&Row> = load.iter().filter(|r| r.usage >= 0.7 - 1e-9).collect();
    let hops: u64 = high.iter().map(|r| r.ops).sum();
    let hsecs: f64 = high.iter().map(|r| r.device_s).sum();
    let rate = |o: u64, s: f64| if s > 0.0 { o as f64 / s } else { 0.0 };
    Some(Totals {
        ops_per_sec: rate(ops, secs),
        high_ops_per_sec: rate(hops, hsecs),
        compactions: last.compactions_total,
        compaction_s: last.compaction_s_total,
        top_rewrites: last.top_rewrites_total,
        rmw_ops: last.rmw_ops_total,
        syncs: last.syncs_total,
        media_write_amp: last.media_write_amp,
        lsm_write_amp: last.lsm_write_amp,
        device_s: secs,
        inserted: last.usage,
        live_usage: last.live_usage,
        persist_s: load.iter().map(|r| r.persist_s + r.sync_s).sum(),
        rmw_s: load.iter().map(|r| r.rmw_s).sum(),
        cmr_busy_s: load.iter().map(|r| r.cmr_busy_s).sum(),
    })
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.2}x"))
}

/// The paper's targets against the measured totals: (target, paper's value, measured, met).
pub fn targets(rows: &[Row]) -> Vec<(String, String, String, Option<bool>)> {
    let t = |s| totals(rows, s);
    let ops = |s| t(s).map(|x| x.ops_per_sec);
    let high = |s| t(s).map(|x| x.high_ops_per_sec);
    let mut out = Vec::new();
    let r = ratio(ops(Scheme::ThreePhase), ops(Scheme::Seq));
    out.push((
        "three-phase / seq, load throughput".into(),
        "1.53x (≥ 1.5x)".into(),
        fmt_ratio(r),
        r.map(|r| r >= 1.5),
    ));
    let r = ratio(ops(Scheme::KvimrM), ops(Scheme::ThreePhase));
    out.push((
        "kvimr-m / three-phase, load throughput".into(),
        "up to 1.55x".into(),
        fmt_ratio(r),
        r.map(|r| r >= 1.55),
    ));
    let r = ratio(high(Scheme::KvimrM), high(Scheme::ThreePhase));
    out.push((
        "kvimr-m / three-phase, steps at ≥ 70% usage".into(),
        "2.17x (≥ 2x)".into(),
        fmt_ratio(r),
        r.map(|r| r >= 2.0),
    ));
    let r = ratio(ops(Scheme::KvimrM), ops(Scheme::Cmr));
    out.push((
        "kvimr-m / cmr, load throughput".into(),
        "0.945 (5.5% below)".into(),
        r.map_or("-".into(), |r| {
            format!("{r:.3} ({:+.1}%)", (r - 1.0) * 100.0)
        }),
        r.map(|r| r >= 0.945),
    ));
    let counts: Vec<u64> = Scheme::ALL
        .iter()
        .filter_map(|&s| t(s).map(|x| x.compactions))
        .collect();
    let (lo, hi) = (
        counts.iter().copied().min().unwrap_or(0),
        counts.iter().copied().max().unwrap_or(0),
    );
    out.push((
        "compactions, max / min over schemes".into(),
        "about equal".into(),
        if lo > 0 {
            format!("{lo}..{hi} ({:.2})", hi as f64 / lo as f64)
        } else {
            "-".into()
        },
        (lo > 0).then(|| hi as f64 / lo as f64 <= 1.1),
    ));
    for (what, f) in [
        (
            "top rewrites",
            (|x: &Totals| x.top_rewrites as f64) as fn(&Totals) -> f64,
        ),
        ("syncs", |x: &Totals| x.syncs as f64),
    ] {
        let m = t(Scheme::KvimrM).map(|x| f(&x));
        let base = [Scheme::Seq, Scheme::ThreePhase]
            .iter()
            .filter_map(|&s| t(s).map(|x| f(&x)))
            .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.min(b))));
        let r = ratio(m, base);
        out.push((
            format!("kvimr-m {what} / fewest of seq and three-phase"),
            "far below".into(),
            r.map_or("-".into(), |r| format!("{r:.2}")),
            r.map(|r| r <= 0.5),
        ));
    }
    out
}

fn schemes_in(rows: &[Row]) -> Vec<Scheme> {
    Scheme::EVERY
        .into_iter()
        .filter(|s| rows.iter().any(|r| r.scheme == s.name()))
        .collect()
}

fn series(rows: &[Row], phase: &str, scheme: Scheme) -> Vec<(f64, f64)> {
    rows.iter()
        .filter(|r| r.phase == phase && r.scheme == scheme.name())
        .map(|r| (r.usage * 100.0, r.ops_per_sec))
        .collect()
}

/// The markdown tables.
pub fn markdown(opts: &KvimrOptions, s: &KvimrSizes, res: &Results) -> String {
    let rows = &res.rows;
    let schemes = schemes_in(rows);
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## KVIMR (seed 002) on `imr-paper`, scale {}: a {} MiB drive, {} MiB SSTables, {}-byte values, log and manifest on {}, SMRDB-LOC (level 1 = {} SSTables, ×{} per level), modelled device time\n",
        opts.scale.name(),
        s.capacity / MIB,
        s.zone_bytes / MIB,
        s.value_bytes,
        match s.wal_on {
            super::WalOn::Imr => "the IMR drive (`--wal-on imr`)",
            super::WalOn::Cmr => "a separate CMR drive (`--wal-on cmr`, the paper's setup)",
        },
        s.level1_bands,
        s.level_multiplier
    );
    if !s.drive_set.is_empty() || !s.smrdb_options.is_empty() {
        let mut o = String::from("Overrides:");
        for (k, v) in &s.drive_set {
            let _ = write!(o, " `--drive-set {k}={v}`");
        }
        for (k, v) in &s.smrdb_options {
            let _ = write!(o, " `--smrdb-option {k}={v}`");
        }
        let _ = writeln!(md, "{o}\n");
    }
    let _ = writeln!(
        md,
        "### Random load to {:.0}% of the data tracks\n",
        s.load_usage * 100.0
    );
    let _ = writeln!(md, "| scheme | inserted | live tracks | ops/s | at ≥ 70% | device s | compactions | compaction s | top rewrites | RMWs | syncs | media WA | LSM WA |");
    let _ = writeln!(
        md,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for &sc in &schemes {
        if let Some(t) = totals(rows, sc) {
            let _ = writeln!(
                md,
                "| {} | {:.1}% | {:.1}% | {:.0} | {:.0} | {:.1} | {} | {:.1} | {} | {} | {} | {:.2} | {:.2} |",
                sc.name(),
                t.inserted * 100.0,
                t.live_usage * 100.0,
                t.ops_per_sec,
                t.high_ops_per_sec,
                t.device_s,
                t.compactions,
                t.compaction_s,
                t.top_rewrites,
                t.rmw_ops,
                t.syncs,
                t.media_write_amp,
                t.lsm_write_amp
            );
        }
    }
    let _ = writeln!(
        md,
        "\n### Where the load's device time goes\n\nPersisting SSTables: their track writes with the read-modify-writes and ordering syncs they needed, and the middleware's syncs that put them on the media (with the write cache on, a write without RMW mostly fills the cache; the flush pays for it) and write its map. RMW: the backups, staging writes, restores and their syncs beyond the bottom writes. Compaction includes its reads and the persists of its outputs.\n"
    );
    let _ = writeln!(
        md,
        "| scheme | device s | compaction s | persisting SSTables s | of which RMW s | RMW share of persisting | CMR drive busy s (log, manifest) |"
    );
    let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for &sc in &schemes {
        if let Some(t) = totals(rows, sc) {
            // On the drive-managed drive the RMWs are the drive's, over every write the host
            // makes (logs and the store's metadata too), not a part of persisting SSTables.
            let share = if sc == Scheme::DmImr {
                "- (the drive's RMWs, of every host write)".to_string()
            } else if t.persist_s > 0.0 {
                format!("{:.1}%", t.rmw_s / t.persist_s * 100.0)
            } else {
                "0.0%".to_string()
            };
            let _ = writeln!(
                md,
                "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {:.1} |",
                sc.name(),
                t.device_s,
                t.compaction_s,
                t.persist_s,
                t.rmw_s,
                share,
                t.cmr_busy_s
            );
        }
    }
    let _ = writeln!(md, "\n### The paper's targets\n");
    let _ = writeln!(md, "| target | paper | tegula | met |");
    let _ = writeln!(md, "| --- | --- | --- | --- |");
    for (what, paper, got, met) in targets(rows) {
        let m = match met {
            Some(true) => "yes",
            Some(false) => "no",
            None => "-",
        };
        let _ = writeln!(md, "| {what} | {paper} | {got} | {m} |");
    }
    for (phase, title) in [
        ("load", "Load timeline: ops/s per usage step"),
        ("sweep", "Usage sweep: overwrites at steady usage, ops/s"),
    ] {
        let xs: Vec<f64> = {
            let mut v: Vec<f64> = rows
                .iter()
                .filter(|r| r.phase == phase)
                .map(|r| r.usage)
                .collect();
            v.sort_by(f64::total_cmp);
            v.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
            v
        };
        if xs.is_empty() {
            continue;
        }
        let _ = writeln!(md, "\n### {title}\n");
        let head: Vec<&str> = schemes.iter().map(|s| s.name()).collect();
        let _ = writeln!(md, "| usage | {} |", head.join(" | "));
        let _ = writeln!(md, "| ---: |{}", " ---: |".repeat(head.len()));
        for x in xs {
            let cells: Vec<String> = schemes
                .iter()
                .map(|sc| {
                    rows.iter()
                        .find(|r| {
                            r.phase == phase && r.scheme == sc.name() && (r.usage - x).abs() < 1e-9
                        })
                        .map_or("-".into(), |r| {
                            format!(
                                "{:.0} ({} RMW, {} top rw)",
                                r.ops_per_sec, r.rmw_ops, r.top_rewrites
                            )
                        })
                })
                .collect();
            let _ = writeln!(md, "| {:.0}% | {} |", x * 100.0, cells.join(" | "));
        }
    }
    // The paper's ratios, step by step.
    let at = |phase: &str, sc: Scheme, x: f64| {
        rows.iter()
            .find(|r| r.phase == phase && r.scheme == sc.name() && (r.usage - x).abs() < 1e-9)
            .map(|r| r.ops_per_sec)
    };
    let pairs = [
        ("three-phase / seq", Scheme::ThreePhase, Scheme::Seq),
        ("kvimr-m / three-phase", Scheme::KvimrM, Scheme::ThreePhase),
        ("kvimr-m / cmr", Scheme::KvimrM, Scheme::Cmr),
        ("kvimr-m / kvimr-n", Scheme::KvimrM, Scheme::KvimrN),
    ];
    for (phase, title) in [("load", "Load"), ("sweep", "Sweep")] {
        let mut xs: Vec<f64> = rows
            .iter()
            .filter(|r| r.phase == phase)
            .map(|r| r.usage)
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
        let have = |a: Scheme, b: Scheme| schemes.contains(&a) && schemes.contains(&b);
        let cols: Vec<_> = pairs.iter().filter(|p| have(p.1, p.2)).collect();
        if xs.is_empty() || cols.is_empty() {
            continue;
        }
        let _ = writeln!(md, "\n### {title}: the paper's ratios per step\n");
        let head: Vec<&str> = cols.iter().map(|p| p.0).collect();
        let _ = writeln!(md, "| usage | {} |", head.join(" | "));
        let _ = writeln!(md, "| ---: |{}", " ---: |".repeat(head.len()));
        for x in xs {
            let cells: Vec<String> = cols
                .iter()
                .map(|p| fmt_ratio(ratio(at(phase, p.1, x), at(phase, p.2, x))))
                .collect();
            let _ = writeln!(md, "| {:.0}% | {} |", x * 100.0, cells.join(" | "));
        }
    }
    let letters = ['a', 'b', 'c', 'f', 'd', 'e'];
    if rows.iter().any(|r| r.phase.starts_with("ycsb-")) {
        let _ = writeln!(
            md,
            "\n### YCSB run phases after the load, ops/s ({} operations each)\n",
            s.ycsb_ops
        );
        let head: Vec<&str> = schemes.iter().map(|s| s.name()).collect();
        let _ = writeln!(md, "| workload | {} |", head.join(" | "));
        let _ = writeln!(md, "| --- |{}", " ---: |".repeat(head.len()));
        for l in letters {
            let phase = format!("ycsb-{l}");
            let cells: Vec<String> = schemes
                .iter()
                .map(|sc| {
                    rows.iter()
                        .find(|r| r.phase == phase && r.scheme == sc.name())
                        .map_or("-".into(), |r| format!("{:.0}", r.ops_per_sec))
                })
                .collect();
            let _ = writeln!(md, "| {} | {} |", l.to_ascii_uppercase(), cells.join(" | "));
        }
    }
    for n in &res.notes {
        let _ = writeln!(md, "\nNote: {n}");
    }
    md
}

/// Writes the JSON, the tables and the plots.
pub fn write(
    out: &Path,
    opts: &KvimrOptions,
    s: &KvimrSizes,
    res: &Results,
) -> Result<PaperReport> {
    let json = out.join("kvimr.json");
    write_json_value(&json, &res.rows)?;
    let md_text = markdown(opts, s, res);
    let md = out.join("kvimr.md");
    write_text(&md, &md_text)?;
    let rows = &res.rows;
    let schemes = schemes_in(rows);
    let mut plots = Vec::new();
    for (phase, file, title) in [
        (
            "load",
            "kvimr-timeline.svg",
            "KVIMR: random load, throughput per usage step, per scheme",
        ),
        (
            "sweep",
            "kvimr-sweep.svg",
            "KVIMR: overwrites at steady space usage, per scheme",
        ),
    ] {
        let ser: Vec<Series> = schemes
            .iter()
            .map(|&sc| Series {
                name: sc.name().into(),
                points: series(rows, phase, sc),
            })
            .filter(|x| !x.points.is_empty())
            .collect();
        if ser.is_empty() {
            continue;
        }
        let p = out.join(file);
        LineChart::new(
            title,
            "data inserted (% of the data tracks)",
            "throughput (ops per device s)",
        )
        .draw(&p, &ser)?;
        plots.push(p);
    }
    if rows.iter().any(|r| r.phase.starts_with("ycsb-")) {
        let cats: Vec<String> = ['a', 'b', 'c', 'f', 'd', 'e']
            .iter()
            .map(|l| format!("YCSB {}", l.to_ascii_uppercase()))
            .collect();
        let ser: Vec<(String, Vec<f64>)> = schemes
            .iter()
            .map(|sc| {
                let v = ['a', 'b', 'c', 'f', 'd', 'e']
                    .iter()
                    .map(|l| {
                        rows.iter()
                            .find(|r| r.phase == format!("ycsb-{l}") && r.scheme == sc.name())
                            .map_or(0.0, |r| r.ops_per_sec)
                    })
                    .collect();
                (sc.name().to_string(), v)
            })
            .collect();
        let p = out.join("kvimr-ycsb.svg");
        bars(
            &p,
            "KVIMR: YCSB workloads after the load, per scheme",
            "throughput (ops per device s)",
            &cats,
            &ser,
        )?;
        plots.push(p);
    }
    let tot: Vec<(Scheme, Totals)> = schemes
        .iter()
        .filter_map(|&sc| totals(rows, sc).map(|t| (sc, t)))
        .collect();
    if !tot.is_empty() {
        let cats: Vec<String> = tot.iter().map(|(s, _)| s.name().to_string()).collect();
        let ser = vec![
            (
                "top rewrites".to_string(),
                tot.iter().map(|t| t.1.top_rewrites as f64).collect(),
            ),
            (
                "RMWs".to_string(),
                tot.iter().map(|t| t.1.rmw_ops as f64).collect(),
            ),
            (
                "syncs".to_string(),
                tot.iter().map(|t| t.1.syncs as f64).collect(),
            ),
            (
                "compactions".to_string(),
                tot.iter().map(|t| t.1.compactions as f64).collect(),
            ),
        ];
        let p = out.join("kvimr-counts.svg");
        bars(
            &p,
            "KVIMR: top-track rewrites, RMWs, syncs and compactions during the load, per scheme",
            "events during the load (count)",
            &cats,
            &ser,
        )?;
        plots.push(p);
    }
    Ok(PaperReport {
        markdown: md_text,
        tables: vec![md, json],
        plots,
        results: Vec::new(),
    })
}
