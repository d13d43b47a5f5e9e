//! Figure 2's tables (`zea-figure2.md`), numbers (`zea-figure2.json`) and plots
//! (`zea-figure2{a,b,c}.svg`).

use super::{Discovery, Figure2, Throughput, ZeaSizes, KIB, MIB};
use crate::error::Result;
use crate::paper::PaperReport;
use crate::plot::{LineChart, Series};
use crate::report::{write_json_value, write_text};
use std::fmt::Write as _;
use std::path::Path;

fn size_label(b: u64) -> String {
    if b >= MIB {
        format!("{} MiB", b / MIB)
    } else {
        format!("{} KiB", b / KIB)
    }
}

/// The markdown tables of (a), (b) and (c).
pub(super) fn markdown(fig: &Figure2) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "### (a) Start-up discovery of one 256 MiB zone (4 KiB extents)\n"
    );
    let _ = writeln!(md, "| back pointers | extents | open + forward iteration (device s) | backward iteration (device s) | skip-pass reads |");
    let _ = writeln!(md, "| ---: | ---: | ---: | ---: | ---: |");
    for p in &fig.discovery {
        let _ = writeln!(
            md,
            "| {} | {} | {:.3} | {:.3} | {} |",
            p.back_pointers, p.extents, p.forward_s, p.backward_s, p.skip_reads
        );
    }
    for (name, pts, what) in [
        (
            "(b) Writes",
            &fig.writes,
            "extents, each flushed before the next (ZEA: data + metadata block + flush; raw: data + flush)",
        ),
        (
            "(c) Sequential reads",
            &fig.reads,
            "extents read in write order (ZEA: `get`, data + metadata block in one command; raw: data)",
        ),
    ] {
        let n = pts.first().map_or(0, |p| p.extents);
        let _ = writeln!(md, "\n### {name}: {n} {what}\n");
        let _ = writeln!(md, "| extent | extents | ZEA MB/s | raw MB/s | ZEA overhead |");
        let _ = writeln!(md, "| ---: | ---: | ---: | ---: | ---: |");
        for p in pts.iter() {
            let _ = writeln!(
                md,
                "| {} | {} | {:.2} | {:.2} | {:+.2}% |",
                size_label(p.extent),
                p.extents,
                p.zea_mb_s,
                p.raw_mb_s,
                p.overhead_pct
            );
        }
    }
    md
}

/// Writes the tables, the JSON and the three plots into `out`.
pub(super) fn write(out: &Path, s: &ZeaSizes, fig: &Figure2) -> Result<PaperReport> {
    let md = markdown(fig);
    let md_path = out.join("zea-figure2.md");
    write_text(&md_path, &md)?;
    let json_path = out.join("zea-figure2.json");
    write_json_value(
        &json_path,
        &serde_json::json!({
            "discovery": fig.discovery,
            "writes": fig.writes,
            "reads": fig.reads,
        }),
    )?;
    let a = out.join("zea-figure2a.svg");
    plot_discovery(&a, &fig.discovery, &s.back_pointers)?;
    let b = out.join("zea-figure2b.svg");
    plot_throughput(
        &b,
        "(b) ZEA puts vs raw writes (hm-smr, durable per extent)",
        &fig.writes,
    )?;
    let c = out.join("zea-figure2c.svg");
    plot_throughput(
        &c,
        "(c) Sequential reads through ZEA vs raw (hm-smr)",
        &fig.reads,
    )?;
    Ok(PaperReport {
        markdown: md,
        tables: vec![md_path, json_path],
        plots: vec![a, b, c],
        results: Vec::new(),
    })
}

/// The look of Figure 2's charts.
fn figure2_chart(title: &str, x_label: &str, y_label: &str) -> LineChart {
    LineChart {
        size: (720, 450),
        caption_size: 18,
        y_label_area: 60,
        markers: 3,
        ..LineChart::new(title, x_label, y_label)
    }
}

fn plot_discovery(path: &Path, pts: &[Discovery], bps: &[u16]) -> Result<()> {
    let series: Vec<Series> = bps
        .iter()
        .map(|&bp| Series {
            name: format!("{bp} back pointers"),
            points: pts
                .iter()
                .filter(|p| p.back_pointers == bp)
                .map(|p| (p.extents as f64, p.forward_s))
                .collect(),
        })
        .collect();
    figure2_chart(
        "(a) ZEA start-up discovery of one zone (hm-smr, 4 KiB extents)",
        "extents in the zone (count)",
        "open + forward iteration (device s)",
    )
    .draw(path, &series)
}

fn plot_throughput(path: &Path, title: &str, pts: &[Throughput]) -> Result<()> {
    let xs: Vec<f64> = pts.iter().map(|p| (p.extent as f64).log2()).collect();
    let x0 = xs.first().copied().unwrap_or(12.0) - 0.3;
    let x1 = xs.last().copied().unwrap_or(21.0) + 0.3;
    let line = |f: fn(&Throughput) -> f64| -> Vec<(f64, f64)> {
        xs.iter().copied().zip(pts.iter().map(f)).collect()
    };
    let series = [
        Series {
            name: "ZEA".into(),
            points: line(|p| p.zea_mb_s),
        },
        Series {
            name: "raw".into(),
            points: line(|p| p.raw_mb_s),
        },
    ];
    LineChart {
        x_range: Some((x0, x1)),
        x_ticks: pts
            .iter()
            .map(|p| ((p.extent as f64).log2(), size_label(p.extent)))
            .collect(),
        ..figure2_chart(
            title,
            "extent size (log scale)",
            "throughput (MB per device s)",
        )
    }
    .draw(path, &series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_name_every_point() {
        let fig = Figure2 {
            discovery: vec![Discovery {
                back_pointers: 4,
                extents: 100,
                forward_s: 1.5,
                backward_s: 2.0,
                skip_reads: 26,
            }],
            writes: vec![Throughput {
                extent: 4096,
                extents: 16,
                zea_mb_s: 1.0,
                raw_mb_s: 2.0,
                overhead_pct: 100.0,
            }],
            reads: vec![],
        };
        let md = markdown(&fig);
        assert!(md.contains("| 4 | 100 | 1.500 | 2.000 | 26 |"), "{md}");
        assert!(
            md.contains("| 4 KiB | 16 | 1.00 | 2.00 | +100.00% |"),
            "{md}"
        );
        assert!(md.contains("### (c) Sequential reads: 0 extents"), "{md}");
    }
}
