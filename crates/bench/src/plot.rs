//! The harness's one plotting module: SVG line charts ([`LineChart`]) and grouped bar charts
//! ([`bars`]) for every figure, plus the per-benchmark plots of `tegula bench db --plot`
//! (throughput over time, the SMRDB paper's Fig. 15, and compaction bytes over time), in the
//! look every tegula plot shares (`tegula-plot`).

use crate::error::{BoxError, Error, Result};
use crate::report::BenchResult;
use figure::{Axis, Entry, Fit, Frame, Mark, Occupied, Zero};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use tegula_plot as figure;

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
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) points.
    pub points: Vec<(f64, f64)>,
}

/// Series of at most this many points get markers when [`LineChart::markers`] is 0.
const FEW_POINTS: usize = 25;

/// A line chart: every figure of the harness that is not a bar chart. The defaults
/// ([`LineChart::new`]) draw 960 × 540 pixels, axes fitted to the data ([`figure::Axis`]: x
/// from 0 when the data starts near it, to its end; a linear y axis from 0 that clips far
/// outliers with a note), lines 2 pixels wide, markers on short series, and the legend where
/// there is no data.
#[derive(Debug, Clone)]
pub struct LineChart {
    /// Caption.
    pub title: String,
    /// x axis description, with its unit.
    pub x_label: String,
    /// y axis description, with its unit.
    pub y_label: String,
    /// Size in pixels.
    pub size: (u32, u32),
    /// Caption font size.
    pub caption_size: u32,
    /// Width of the y label area in pixels.
    pub y_label_area: u32,
    /// x range; `None`: fitted to the data.
    pub x_range: Option<(f64, f64)>,
    /// Logarithmic y axis over the positive values, labelled in 1-2-5 steps; values at or
    /// below 0 are drawn at the bottom.
    pub log_y: bool,
    /// The x axis's ticks, `(x, text)`: exactly these. Empty: numbers fitted to the data.
    pub x_ticks: Vec<(f64, String)>,
    /// Radius of a marker at every point; 0: markers only on series of at most 25 points.
    pub markers: u32,
    /// Line width in pixels.
    pub stroke: u32,
    /// Faint vertical lines `(series index, x)` in that series' colour (e.g. phase ends).
    pub rules: Vec<(usize, f64)>,
}

impl LineChart {
    /// A chart with the default look.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            size: (960, 540),
            caption_size: 20,
            y_label_area: 80,
            x_range: None,
            log_y: false,
            x_ticks: Vec::new(),
            markers: 0,
            stroke: 2,
            rules: Vec::new(),
        }
    }

    /// Draws `series` into the SVG file `path`.
    pub fn draw(&self, path: &Path, series: &[Series]) -> Result<()> {
        self.draw_inner(path, series).map_err(|source| Error::Plot {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The x axis: the given ticks over the given or the data's range, else fitted.
    fn x_axis(&self, series: &[Series]) -> Axis {
        let xs: Vec<f64> = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        if self.x_ticks.is_empty() {
            return match self.x_range {
                Some((lo, hi)) => {
                    let fit = Fit {
                        zero: Zero::Never,
                        ..Fit::X
                    };
                    let mut a = Axis::linear(&[lo, hi], fit);
                    a.ticks.retain(|t| t.0 >= lo && t.0 <= hi);
                    Axis { lo, hi, ..a }
                }
                None => Axis::linear(&xs, Fit::X),
            };
        }
        let (lo, hi) = self.x_range.unwrap_or_else(|| {
            let t = self.x_ticks.iter().map(|t| t.0);
            let lo = t
                .clone()
                .chain(xs.iter().copied())
                .fold(f64::INFINITY, f64::min);
            let hi = t
                .chain(xs.iter().copied())
                .fold(f64::NEG_INFINITY, f64::max);
            let pad = ((hi - lo) * 0.05).max(0.5);
            (lo - pad, hi + pad)
        });
        Axis::labelled(lo, hi, self.x_ticks.clone())
    }

    /// The marker radius of `s` (0: none).
    fn marker_radius(&self, s: &Series) -> u32 {
        if self.markers > 0 {
            self.markers
        } else if s.points.len() <= FEW_POINTS {
            3
        } else {
            0
        }
    }

    fn draw_inner(&self, path: &Path, series: &[Series]) -> std::result::Result<(), BoxError> {
        let x = self.x_axis(series);
        let ys: Vec<f64> = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .collect();
        let y = if self.log_y {
            Axis::log(&ys, 10)
        } else {
            Axis::linear(&ys, Fit::Y)
        };
        let mut occupied = Occupied::new();
        let entries: Vec<Entry> = series
            .iter()
            .enumerate()
            .map(|(i, s)| {
                occupied.line(&x, &y, &s.points);
                let r = self.marker_radius(s);
                if r > 0 {
                    occupied.dots(&x, &y, &s.points, 0.006);
                }
                Entry {
                    name: s.name.clone(),
                    color: figure::color(i),
                    mark: Mark::Line((r > 0).then_some(i)),
                }
            })
            .collect();
        for &(i, rx) in &self.rules {
            if i < series.len() {
                occupied.line(&x, &y, &[(rx, y.lo), (rx, y.hi)]);
            }
        }
        let frame = Frame {
            title_size: self.caption_size,
            y_label_area: self.y_label_area,
            ..Frame::new(self.size, &self.title, &self.x_label, &self.y_label)
        };
        let root = SVGBackend::new(path, self.size).into_drawing_area();
        frame.draw(&root, &x, &y, &entries, &occupied, |c| {
            for ((s, e), i) in series.iter().zip(&entries).zip(0..) {
                let rules = self.rules.iter().filter(|r| r.0 == i);
                c.draw_series(rules.map(|&(_, rx)| {
                    PathElement::new(vec![(rx, y.lo), (rx, y.hi)], e.color.mix(0.35))
                }))?;
                c.draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    e.color.stroke_width(self.stroke),
                ))?;
                let r = self.marker_radius(s);
                if r > 0 {
                    figure::draw_marks(c, &s.points, i, r as i32, e.color)?;
                }
            }
            Ok(())
        })?;
        Ok(root.present()?)
    }
}

/// Draws `series` as lines into an SVG file with the default look of [`LineChart::new`].
pub fn chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<()> {
    LineChart::new(title, x_label, y_label).draw(path, series)
}

/// Draws a grouped bar chart into an SVG file: one group per category, one bar per series
/// (`series[i].1[j]` is series `i`'s value in category `j`), a y axis from 0 fitted to the
/// values, the legend where there are no bars. The categories name themselves (no x axis
/// title); [`bars_x`] gives one.
pub fn bars(
    path: &Path,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<()> {
    bars_x(path, title, "", y_label, categories, series)
}

/// [`bars`] with an x axis title saying what the categories are.
pub fn bars_x(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<()> {
    let draw = || -> std::result::Result<(), BoxError> {
        let n = categories.len().max(1);
        let x = Axis::labelled(
            0.0,
            n as f64,
            categories
                .iter()
                .enumerate()
                .map(|(i, c)| (i as f64 + 0.5, c.clone()))
                .collect(),
        );
        let values: Vec<f64> = series.iter().flat_map(|s| s.1.iter().copied()).collect();
        let y = Axis::linear(
            &values,
            Fit {
                clip_outliers: false,
                ..Fit::Y
            },
        );
        let k = series.len();
        let mut occupied = Occupied::new();
        let mut entries = Vec::new();
        for (si, (name, vals)) in series.iter().enumerate() {
            for (ci, &v) in vals.iter().enumerate() {
                let (a, b) = bar_rect(ci, si, k, v);
                occupied.rect(&x, &y, a, b);
            }
            entries.push(Entry {
                name: name.clone(),
                color: figure::color(si),
                mark: Mark::Bar,
            });
        }
        let frame = Frame {
            x_grid: false,
            ..Frame::new((960, 540), title, x_label, y_label)
        };
        let root = SVGBackend::new(path, frame.size).into_drawing_area();
        frame.draw(&root, &x, &y, &entries, &occupied, |c| {
            for (si, ((_, vals), e)) in series.iter().zip(&entries).enumerate() {
                c.draw_series(vals.iter().enumerate().map(|(ci, &v)| {
                    let (a, b) = bar_rect(ci, si, k, v);
                    Rectangle::new([a, b], e.color.filled())
                }))?;
            }
            Ok(())
        })?;
        Ok(root.present()?)
    };
    draw().map_err(|source| Error::Plot {
        path: path.to_path_buf(),
        source,
    })
}

/// The rectangle of series `si`'s bar in category `ci`, of `k` series: `((x0, 0), (x1, v))`.
fn bar_rect(ci: usize, si: usize, k: usize, v: f64) -> ((f64, f64), (f64, f64)) {
    let width = 0.8 / k.max(1) as f64;
    let x0 = ci as f64 + 0.1 + si as f64 * width;
    let v = if v.is_finite() { v } else { 0.0 };
    ((x0, 0.0), (x0 + width * 0.92, v))
}

/// Draws, for each benchmark in `results`: throughput over wall time, throughput over modelled
/// device time (if any engine ran on an emulated device), and cumulative compaction bytes (if
/// any engine reports them). Returns the files written.
pub fn plot_results(dir: &Path, results: &[BenchResult]) -> Result<Vec<PathBuf>> {
    crate::report::output_dir(dir)?;
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
            &format!("{b}: throughput over wall time, per engine"),
            "wall time (s)",
            &format!(
                "throughput (ops/s, {} s buckets)",
                figure::format_value(bucket)
            ),
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
                &format!("{b}: throughput over modelled device time, per engine"),
                "device time (s)",
                "throughput (ops per device second)",
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
                &format!("{b}: bytes written by compaction since the start, per engine"),
                "wall time (s)",
                "written by compaction (MiB)",
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

    fn svg_texts(path: &Path) -> Vec<String> {
        figure::svg_texts(&std::fs::read_to_string(path).expect("read"))
    }

    #[test]
    fn a_spike_is_clipped_with_a_note_and_the_bulk_is_labelled() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("t.svg");
        // YCSB's run phase: a burst at the start, then ~300 ops/s.
        let mut pts: Vec<(f64, f64)> = (0..300)
            .map(|i| (i as f64, 300.0 + (i % 7) as f64))
            .collect();
        pts[0].1 = 90_000.0;
        pts[1].1 = 20_000.0;
        chart(
            &p,
            "t",
            "device time (s)",
            "throughput (ops/s)",
            &[Series {
                name: "a".into(),
                points: pts,
            }],
        )
        .expect("draw");
        let texts = svg_texts(&p);
        assert!(
            texts
                .iter()
                .any(|t| t.contains("2 of 300 values above") && t.contains("90k")),
            "{texts:?}"
        );
        assert!(texts.iter().any(|t| t == "300"), "{texts:?}");
        assert!(!texts.iter().any(|t| t == "80k"), "{texts:?}");
    }

    #[test]
    fn bar_charts_label_integers_as_integers() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("b.svg");
        let cats = vec!["load".to_string(), "A".to_string()];
        let series = vec![
            ("SOC".to_string(), vec![7092.3, 301.2]),
            ("LOC".to_string(), vec![6150.0, 305.9]),
        ];
        bars_x(&p, "t", "workload", "throughput (ops/s)", &cats, &series).expect("draw");
        let texts = svg_texts(&p);
        for want in [
            "0", "2000", "4000", "6000", "load", "A", "workload", "SOC", "LOC",
        ] {
            assert!(texts.iter().any(|t| t == want), "{want} missing: {texts:?}");
        }
        assert!(!texts.iter().any(|t| t.ends_with(".0")), "{texts:?}");
    }

    #[test]
    fn bars_are_laid_out_inside_their_category() {
        for k in 1..6 {
            for si in 0..k {
                let ((x0, y0), (x1, y1)) = bar_rect(2, si, k, 5.0);
                assert!(x0 >= 2.0 && x1 <= 3.0 && x0 < x1, "{k} {si}: {x0}..{x1}");
                assert_eq!((y0, y1), (0.0, 5.0));
            }
        }
        assert_eq!(bar_rect(0, 0, 1, f64::NAN).1 .1, 0.0);
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
