//! Throughput-over-time plots (the SMRDB paper's Fig. 15) and compaction bytes over time, as
//! SVG, one chart per benchmark with one line per engine.

use crate::report::BenchResult;
use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Rates per bucket from cumulative `(time, count)` points: the count at each bucket edge is
/// interpolated linearly, so buckets need not line up with the samples.
pub fn rate_series(points: &[(f64, f64)], bucket: f64) -> Vec<(f64, f64)> {
    let Some(&(t_end, _)) = points.last() else {
        return Vec::new();
    };
    if bucket <= 0.0 || t_end <= 0.0 {
        return Vec::new();
    }
    let at = |t: f64| -> f64 {
        let i = points.partition_point(|p| p.0 < t);
        if i == 0 {
            return points[0].1;
        }
        if i >= points.len() {
            return points[points.len() - 1].1;
        }
        let (t0, c0) = points[i - 1];
        let (t1, c1) = points[i];
        if t1 <= t0 {
            c1
        } else {
            c0 + (c1 - c0) * (t - t0) / (t1 - t0)
        }
    };
    let mut out = Vec::new();
    let mut t = 0.0;
    while t < t_end {
        let e = (t + bucket).min(t_end);
        let w = e - t;
        if w > bucket * 0.25 {
            out.push(((t + e) / 2.0, (at(e) - at(t)) / w));
        }
        t += bucket;
    }
    out
}

/// A bucket width giving at least ~20 points: 1 s, or smaller for short runs.
pub fn bucket_for(duration: f64) -> f64 {
    if duration >= 20.0 {
        1.0
    } else {
        (duration / 20.0).max(0.1)
    }
}

fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One named line of a chart.
pub(crate) struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) points.
    pub points: Vec<(f64, f64)>,
}

/// Draws `series` as lines into an SVG file.
pub(crate) fn chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<()> {
    let xmax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let ymax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.1;
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("plot: {e}"))?;
    let mut c = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..xmax, 0.0..ymax)
        .map_err(|e| anyhow!("plot: {e}"))?;
    c.configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .draw()
        .map_err(|e| anyhow!("plot: {e}"))?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        c.draw_series(LineSeries::new(
            s.points.iter().copied(),
            color.stroke_width(2),
        ))
        .map_err(|e| anyhow!("plot: {e}"))?
        .label(s.name.clone())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    c.configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| anyhow!("plot: {e}"))?;
    root.present().map_err(|e| anyhow!("plot: {e}"))?;
    Ok(())
}

/// Draws a grouped bar chart into an SVG file: one group per category, one bar per series
/// (`series[i].1[j]` is series `i`'s value in category `j`).
pub(crate) fn bars(
    path: &Path,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<()> {
    let n = categories.len().max(1);
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.15;
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("plot: {e}"))?;
    let mut c = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..n as f64, 0.0..ymax)
        .map_err(|e| anyhow!("plot: {e}"))?;
    let cats = categories.to_vec();
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(2 * n + 1)
        .x_label_formatter(&|x: &f64| {
            let i = x.floor();
            if (x - i - 0.5).abs() < 1e-6 {
                cats.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(y_label)
        .draw()
        .map_err(|e| anyhow!("plot: {e}"))?;
    let k = series.len().max(1) as f64;
    let width = 0.8 / k;
    for (si, (name, values)) in series.iter().enumerate() {
        let color = Palette99::pick(si).to_rgba();
        let rects = values.iter().enumerate().map(move |(ci, &v)| {
            let x0 = ci as f64 + 0.1 + si as f64 * width;
            let v = if v.is_finite() { v } else { 0.0 };
            Rectangle::new([(x0, 0.0), (x0 + width * 0.95, v)], color.filled())
        });
        c.draw_series(rects)
            .map_err(|e| anyhow!("plot: {e}"))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
    }
    c.configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| anyhow!("plot: {e}"))?;
    root.present().map_err(|e| anyhow!("plot: {e}"))?;
    Ok(())
}

/// Draws, for each benchmark in `results`: throughput over wall time, throughput over modelled
/// device time (if any engine ran on an emulated device), and cumulative compaction bytes (if
/// any engine reports them). Returns the files written.
pub fn plot_results(dir: &Path, results: &[BenchResult]) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut benches: Vec<&str> = Vec::new();
    for r in results {
        if !benches.contains(&r.benchmark.as_str()) {
            benches.push(&r.benchmark);
        }
    }
    let mut files = Vec::new();
    for b in benches {
        let runs: Vec<&BenchResult> = results.iter().filter(|r| r.benchmark == b).collect();
        let wall_max = runs.iter().map(|r| r.wall_seconds).fold(0.0, f64::max);
        let bucket = bucket_for(wall_max);
        let wall: Vec<Series> = runs
            .iter()
            .map(|r| Series {
                name: r.engine.clone(),
                points: rate_series(
                    &r.timeline
                        .iter()
                        .map(|s| (s.wall_s, s.ops as f64))
                        .collect::<Vec<_>>(),
                    bucket,
                ),
            })
            .collect();
        let p = dir.join(format!("{}-throughput.svg", safe(b)));
        chart(
            &p,
            &format!("{b}: throughput over time"),
            "wall seconds",
            &format!("ops/s ({bucket:.1} s buckets)"),
            &wall,
        )?;
        files.push(p);

        let dev: Vec<Series> = runs
            .iter()
            .filter_map(|r| {
                let pts: Option<Vec<(f64, f64)>> = r
                    .timeline
                    .iter()
                    .map(|s| s.device_s.map(|d| (d, s.ops as f64)))
                    .collect();
                let pts = pts?;
                let dmax = pts.last().map_or(0.0, |p| p.0);
                // A benchmark served from memory takes no device time: nothing to draw.
                if dmax <= 0.0 {
                    return None;
                }
                Some(Series {
                    name: r.engine.clone(),
                    points: rate_series(&pts, bucket_for(dmax)),
                })
            })
            .collect();
        if !dev.is_empty() {
            let p = dir.join(format!("{}-device-throughput.svg", safe(b)));
            chart(
                &p,
                &format!("{b}: throughput over modelled device time"),
                "device seconds",
                "ops per device second",
                &dev,
            )?;
            files.push(p);
        }

        let comp: Vec<Series> = runs
            .iter()
            .filter_map(|r| {
                let first = r.timeline.first()?.compaction_bytes?;
                let pts: Option<Vec<(f64, f64)>> = r
                    .timeline
                    .iter()
                    .map(|s| {
                        s.compaction_bytes
                            .map(|c| (s.wall_s, c.saturating_sub(first) as f64 / 1_048_576.0))
                    })
                    .collect();
                let pts = pts?;
                // Nothing to show for a run without compaction.
                pts.iter().any(|p| p.1 > 0.0).then(|| Series {
                    name: r.engine.clone(),
                    points: pts,
                })
            })
            .collect();
        if !comp.is_empty() {
            let p = dir.join(format!("{}-compaction.svg", safe(b)));
            chart(
                &p,
                &format!("{b}: compaction bytes written"),
                "wall seconds",
                "MiB written by compaction",
                &comp,
            )?;
            files.push(p);
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{sample_result, Sample};

    #[test]
    fn rates_follow_the_cumulative_counts() {
        let pts = vec![(0.0, 0.0), (1.0, 100.0), (2.0, 300.0)];
        let r = rate_series(&pts, 1.0);
        assert_eq!(r.len(), 2);
        assert!((r[0].1 - 100.0).abs() < 1e-9 && (r[1].1 - 200.0).abs() < 1e-9);
        let r = rate_series(&pts, 0.5);
        assert_eq!(r.len(), 4);
        assert!((r[3].1 - 200.0).abs() < 1e-9);
        assert!(rate_series(&[], 1.0).is_empty());
    }

    #[test]
    fn plots_are_written_as_svg() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut r = sample_result("tegula", "fillseq", 10.0);
        r.timeline = (0..=10)
            .map(|i| Sample {
                wall_s: i as f64 * 0.1,
                ops: i * 100,
                device_s: Some(i as f64 * 0.2),
                compaction_bytes: Some(i * 1000),
            })
            .collect();
        let files = plot_results(dir.path(), &[r]).expect("plot");
        assert_eq!(files.len(), 3);
        for f in files {
            let s = std::fs::read_to_string(&f).expect("read");
            assert!(
                s.starts_with("<svg") || s.contains("<svg"),
                "{}",
                f.display()
            );
        }
    }
}
