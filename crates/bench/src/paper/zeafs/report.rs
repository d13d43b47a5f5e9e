//! Figure 4's tables (`figure4.md`), numbers (`figure4.json`) and plot (`figure4.svg`).

use super::run::Run;
use super::ZeafsOptions;
use crate::error::Result;
use crate::paper::PaperReport;
use crate::plot::{LineChart, Series};
use crate::report::{write_json_value, write_text};
use std::fmt::Write as _;

/// (mean, standard deviation, coefficient of variation, min, max).
pub(super) fn moments(xs: &[f64]) -> (f64, f64, f64, f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0, 0.0, 0.0, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, var.sqrt(), var.sqrt() / mean.max(1e-9), min, max)
}

/// Throughput over device time, one line per drive (log scale; the end of each benchmark as
/// a faint vertical line in the drive's colour).
fn plot(path: &std::path::Path, runs: &[Run], title: &str) -> Result<()> {
    let series: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            name: r.name.clone(),
            points: r
                .series
                .iter()
                .map(|i| {
                    (
                        (i.device_start_s + i.device_end_s) / 2.0,
                        i.ops_per_device_s,
                    )
                })
                .collect(),
        })
        .collect();
    LineChart {
        size: (900, 520),
        caption_size: 18,
        y_label_area: 70,
        log_y: true,
        markers: 2,
        stroke: 1,
        rules: runs
            .iter()
            .enumerate()
            .flat_map(|(k, r)| r.phase_span.iter().map(move |&(_, e)| (k, e)))
            .collect(),
        ..LineChart::new(
            title,
            "device time since the first db_bench started (s)",
            "throughput (ops per device s, log; 0 at the bottom)",
        )
    }
    .draw(path, &series)
}

/// The markdown tables and the JSON of `runs`; `skipped` names the drives that did not run.
pub(super) fn tables(
    a: &ZeafsOptions,
    runs: &[Run],
    skipped: &[String],
) -> (String, serde_json::Value) {
    let mut md = String::new();
    let w = &mut md;
    let _ = writeln!(
        w,
        "db_bench `--benchmarks={} --num={} --value_size={}` `--threads=1`{} (one process). \
         Device time is \
         each drive's virtual clock from the start of the first db_bench to the end of the \
         unmount (ext4: `umount`, loop device flushed and detached). Throughput over time: \
         operations per device second in windows of {} device s from the start of the first \
         db_bench to the end of the last (the operations of db_bench's one-second reports \
         spread over the drive's clock samples).\n",
        a.benchmarks.join(","),
        a.num,
        a.value_size,
        if a.db_bench_args.is_empty() {
            String::new()
        } else {
            format!(" `{}`", a.db_bench_args.join(" "))
        },
        a.window
    );
    let _ = writeln!(
        w,
        "| configuration | device s | of which unmount | busy s | wall s | ops | ops / device s | \
         windows | per-window ops / device s: mean | std dev | CV | min | max |"
    );
    let _ = writeln!(
        w,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let mut json = Vec::new();
    for r in runs {
        let ops: u64 = r.phases.iter().map(|p| p.ops).sum();
        let ys: Vec<f64> = r.series.iter().map(|i| i.ops_per_device_s).collect();
        let (mean, sd, cv, min, max) = moments(&ys);
        let _ = writeln!(
            w,
            "| {} | {:.1} | {:.1} | {:.1} | {:.0} | {} | {:.0} | {} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} |",
            r.name,
            r.device_s,
            r.unmount_device_s,
            r.busy_s,
            r.wall_s,
            ops,
            ops as f64 / r.device_s.max(1e-9),
            ys.len(),
            mean,
            sd,
            cv,
            min,
            max
        );
        json.push(serde_json::json!({
            "name": r.name, "drive": r.drive, "device_s": r.device_s, "busy_s": r.busy_s,
            "unmount_device_s": r.unmount_device_s,
            "wall_s": r.wall_s, "ops": ops,
            "window_stats": {"mean": mean, "sd": sd, "cv": cv, "min": min, "max": max,
                               "n": ys.len()},
            "phases": r.phases.iter().zip(&r.phase_device_s).zip(&r.open_device_s)
                .map(|((p, d), o)| serde_json::json!({
                "benchmark": p.benchmark, "ops": p.ops, "device_s": d, "open_device_s": o,
                "db_bench": p.line, "reports": p.reports,
            })).collect::<Vec<_>>(),
            "window_s": a.window,
            "windows": r.series,
            "device_counters": r.counters, "notes": r.notes,
        }));
    }
    let _ = writeln!(
        w,
        "\nPer benchmark: device seconds before the benchmark started (the first: opening the \
         database; the others: from the end of the previous one) and from its start to its \
         result line; \
         the windows inside the benchmark; db_bench's wall-clock ops/sec for reference:\n"
    );
    let _ = writeln!(
        w,
        "| configuration | benchmark | before device s | device s | ops / device s | MiB read / written | windows | CV | min | max | db_bench wall ops/s |"
    );
    let _ = writeln!(
        w,
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for r in runs {
        for ((((p, d), o), span), io) in r
            .phases
            .iter()
            .zip(&r.phase_device_s)
            .zip(&r.open_device_s)
            .zip(&r.phase_span)
            .zip(&r.phase_io)
        {
            let ys: Vec<f64> = r
                .series
                .iter()
                .filter(|i| i.device_start_s >= span.0 - 1e-9 && i.device_end_s <= span.1 + 1e-9)
                .map(|i| i.ops_per_device_s)
                .collect();
            let (_, _, cv, min, max) = moments(&ys);
            let wall = p
                .line
                .split(" ops/sec")
                .next()
                .and_then(|s| s.split_whitespace().last())
                .unwrap_or("-");
            let (cv, min, max) = if ys.is_empty() {
                ("-".to_string(), "-".to_string(), "-".to_string())
            } else {
                (format!("{cv:.2}"), format!("{min:.0}"), format!("{max:.0}"))
            };
            let tput = if *d < 1e-3 {
                "no device time".to_string()
            } else {
                format!("{:.0}", p.ops as f64 / d)
            };
            let _ = writeln!(
                w,
                "| {} | {} | {:.2} | {:.2} | {tput} | {:.0} / {:.0} | {} | {cv} | {min} | {max} | {wall} |",
                r.name,
                p.benchmark,
                o,
                d,
                io.0,
                io.1,
                ys.len()
            );
        }
    }
    let _ = writeln!(w, "\nDrives:\n");
    for r in runs {
        let _ = writeln!(w, "* {}: {}", r.name, r.drive);
    }
    for r in runs {
        let counters = serde_json::to_string(&r.counters).unwrap_or_default();
        let _ = writeln!(
            w,
            "\n{}: device counters over the run: `{counters}`",
            r.name
        );
        for n in &r.notes {
            let _ = writeln!(w, "{}: {n}", r.name);
        }
        let _ = writeln!(w, "\n```");
        for p in &r.phases {
            let _ = writeln!(w, "{}", p.line);
        }
        let _ = writeln!(w, "```");
    }
    for s in skipped {
        let _ = writeln!(w, "\nSKIPPED {s}");
    }
    (md, serde_json::Value::Array(json))
}

/// Writes the tables, the JSON and (when a drive ran) the plot.
pub(super) fn write(a: &ZeafsOptions, runs: &[Run], skipped: &[String]) -> Result<PaperReport> {
    let (md, json) = tables(a, runs, skipped);
    let md_path = a.out.join("figure4.md");
    write_text(&md_path, &md)?;
    let json_path = a.out.join("figure4.json");
    write_json_value(&json_path, &json)?;
    let mut plots = Vec::new();
    if !runs.is_empty() {
        let path = a.plot.clone().unwrap_or_else(|| a.out.join("figure4.svg"));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::report::output_dir(dir)?;
        }
        let title = format!(
            "db_bench {} (num {}, value {} B): throughput over device time",
            a.benchmarks.join(","),
            a.num,
            a.value_size
        );
        plot(&path, runs, &title)?;
        plots.push(path);
    }
    Ok(PaperReport {
        markdown: md,
        tables: vec![md_path, json_path],
        plots,
        results: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_of_a_series() {
        let (mean, sd, cv, min, max) = moments(&[1.0, 3.0]);
        assert_eq!((mean, sd, min, max), (2.0, 1.0, 1.0, 3.0));
        assert!((cv - 0.5).abs() < 1e-12);
        assert_eq!(moments(&[]), (0.0, 0.0, 0.0, 0.0, 0.0));
    }
}
