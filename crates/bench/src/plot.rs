//! The harness's one plotting module: SVG line charts ([`LineChart`]) and grouped bar charts
//! ([`bars`]) for every figure, plus the per-benchmark plots of `tegula bench db --plot`
//! (throughput over time, the SMRDB paper's Fig. 15, and compaction bytes over time).

use crate::error::{BoxError, Error, Result};
use crate::report::BenchResult;
use plotters::coord::types::RangedCoordf64;
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
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) points.
    pub points: Vec<(f64, f64)>,
}

/// Where a chart's legend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Legend {
    /// Right edge, middle (plotters' default).
    #[default]
    MiddleRight,
    /// Top left corner.
    UpperLeft,
    /// Top right corner.
    UpperRight,
}

impl Legend {
    fn position(self) -> SeriesLabelPosition {
        match self {
            Legend::MiddleRight => SeriesLabelPosition::MiddleRight,
            Legend::UpperLeft => SeriesLabelPosition::UpperLeft,
            Legend::UpperRight => SeriesLabelPosition::UpperRight,
        }
    }
}

/// A line chart: every figure of the harness that is not a bar chart. The defaults
/// ([`LineChart::new`]) draw 960 × 540 pixels, x from 0, a linear y axis from 0 to at least 1
/// with 10 % headroom, lines 2 pixels wide and no markers.
#[derive(Debug, Clone)]
pub struct LineChart {
    /// Caption.
    pub title: String,
    /// x axis description.
    pub x_label: String,
    /// y axis description.
    pub y_label: String,
    /// Size in pixels.
    pub size: (u32, u32),
    /// Caption font size.
    pub caption_size: u32,
    /// Width of the y label area in pixels.
    pub y_label_area: u32,
    /// x range; `None`: from 0 to the largest x times `x_headroom`.
    pub x_range: Option<(f64, f64)>,
    /// Factor on the largest x when `x_range` is `None`.
    pub x_headroom: f64,
    /// Factor on the largest y for the top of the y axis.
    pub y_headroom: f64,
    /// The smallest top of a linear y axis (before `y_headroom`), so that an empty or flat
    /// chart still has a range.
    pub min_top: f64,
    /// Logarithmic y axis from half the smallest positive y (but not below `log_min`);
    /// values at or below it are drawn at the bottom, and tick labels read 10k, 2M.
    pub log_y: bool,
    /// The lowest bottom of a logarithmic y axis.
    pub log_min: f64,
    /// Tick labels of the x axis, `(x, text)`; a tick shows the text nearest to it. Empty:
    /// numbers.
    pub x_ticks: Vec<(f64, String)>,
    /// Radius of a circle at every point (0: none).
    pub markers: u32,
    /// Line width in pixels.
    pub stroke: u32,
    /// Faint vertical lines `(series index, x)` in that series' colour (e.g. phase ends).
    pub rules: Vec<(usize, f64)>,
    /// Legend position.
    pub legend: Legend,
}

impl LineChart {
    /// A chart with the default look.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            size: (960, 540),
            caption_size: 22,
            y_label_area: 80,
            x_range: None,
            x_headroom: 1.0,
            y_headroom: 1.1,
            min_top: 1.0,
            log_y: false,
            log_min: 1.0,
            x_ticks: Vec::new(),
            markers: 0,
            stroke: 2,
            rules: Vec::new(),
            legend: Legend::default(),
        }
    }

    /// Draws `series` into the SVG file `path`.
    pub fn draw(&self, path: &Path, series: &[Series]) -> Result<()> {
        self.draw_inner(path, series).map_err(|source| Error::Plot {
            path: path.to_path_buf(),
            source,
        })
    }

    fn draw_inner(&self, path: &Path, series: &[Series]) -> std::result::Result<(), BoxError> {
        let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let ys = || series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
        let (x0, x1) = self
            .x_range
            .unwrap_or_else(|| (0.0, xs().fold(0.0f64, f64::max).max(1e-3) * self.x_headroom));
        let root = SVGBackend::new(path, self.size).into_drawing_area();
        root.fill(&WHITE)?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(&self.title, ("sans-serif", self.caption_size))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(self.y_label_area);
        let ticks = &self.x_ticks;
        let x_fmt = |x: &f64| -> String {
            if ticks.is_empty() {
                format!("{x}")
            } else {
                ticks
                    .iter()
                    .min_by(|a, b| (a.0 - x).abs().total_cmp(&(b.0 - x).abs()))
                    .map(|t| t.1.clone())
                    .unwrap_or_default()
            }
        };
        if self.log_y {
            let positive = || ys().filter(|y| *y > 0.0);
            let ymax = positive().fold(1.0f64, f64::max) * 2.0;
            let ymin = (positive().fold(f64::INFINITY, f64::min) / 2.0)
                .clamp(self.log_min.min(ymax / 10.0), ymax / 10.0);
            let mut c = builder.build_cartesian_2d(x0..x1, (ymin..ymax).log_scale())?;
            let mut mesh = c.configure_mesh();
            mesh.x_desc(&self.x_label)
                .y_desc(&self.y_label)
                .y_label_formatter(&|y| short_number(*y));
            if !ticks.is_empty() {
                mesh.x_labels(ticks.len()).x_label_formatter(&x_fmt);
            }
            mesh.draw()?;
            self.lines(&mut c, series, ymin, ymax)?;
            self.legend(&mut c)?;
        } else {
            let ymax = ys().fold(0.0f64, f64::max).max(self.min_top) * self.y_headroom;
            let mut c = builder.build_cartesian_2d(x0..x1, 0.0..ymax)?;
            let mut mesh = c.configure_mesh();
            mesh.x_desc(&self.x_label).y_desc(&self.y_label);
            if !ticks.is_empty() {
                mesh.x_labels(ticks.len()).x_label_formatter(&x_fmt);
            }
            mesh.draw()?;
            self.lines(&mut c, series, 0.0, ymax)?;
            self.legend(&mut c)?;
        }
        Ok(root.present()?)
    }

    /// Draws the lines, markers and rules; y values below `floor` are drawn at it.
    fn lines<'a, DB, Y>(
        &self,
        c: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
        series: &[Series],
        floor: f64,
        top: f64,
    ) -> std::result::Result<(), BoxError>
    where
        DB: DrawingBackend + 'a,
        DB::ErrorType: 'static,
        Y: Ranged<ValueType = f64>,
    {
        for (i, s) in series.iter().enumerate() {
            let color = color(i);
            let pts: Vec<(f64, f64)> = s.points.iter().map(|&(x, y)| (x, y.max(floor))).collect();
            c.draw_series(LineSeries::new(
                pts.iter().copied(),
                color.stroke_width(self.stroke),
            ))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            if self.markers > 0 {
                let r = self.markers;
                c.draw_series(pts.iter().map(|&p| Circle::new(p, r, color.filled())))?;
            }
            let rules = self.rules.iter().filter(|r| r.0 == i);
            c.draw_series(rules.map(|&(_, x)| {
                PathElement::new(vec![(x, floor), (x, top)], color.mix(0.35).stroke_width(1))
            }))?;
        }
        Ok(())
    }

    fn legend<'a, DB, Y>(
        &self,
        c: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    ) -> std::result::Result<(), BoxError>
    where
        DB: DrawingBackend + 'a,
        DB::ErrorType: 'static,
        Y: Ranged<ValueType = f64>,
    {
        c.configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .position(self.legend.position())
            .draw()?;
        Ok(())
    }
}

/// The colour of series `i`, the same in every chart.
fn color(i: usize) -> RGBAColor {
    Palette99::pick(i).to_rgba()
}

/// 1500 → `1.5k`, 2000000 → `2M`.
fn short_number(y: f64) -> String {
    if y >= 1e6 {
        format!("{}M", y / 1e6)
    } else if y >= 1e3 {
        format!("{}k", y / 1e3)
    } else {
        format!("{y}")
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
/// (`series[i].1[j]` is series `i`'s value in category `j`).
pub fn bars(
    path: &Path,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> Result<()> {
    bars_inner(path, title, y_label, categories, series).map_err(|source| Error::Plot {
        path: path.to_path_buf(),
        source,
    })
}

fn bars_inner(
    path: &Path,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> std::result::Result<(), BoxError> {
    let n = categories.len().max(1);
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.15;
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut c = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..n as f64, 0.0..ymax)?;
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
        .draw()?;
    let k = series.len().max(1) as f64;
    let width = 0.8 / k;
    for (si, (name, values)) in series.iter().enumerate() {
        let color = color(si);
        let rects = values.iter().enumerate().map(move |(ci, &v)| {
            let x0 = ci as f64 + 0.1 + si as f64 * width;
            let v = if v.is_finite() { v } else { 0.0 };
            Rectangle::new([(x0, 0.0), (x0 + width * 0.95, v)], color.filled())
        });
        c.draw_series(rects)?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
    }
    c.configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()?;
    Ok(root.present()?)
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
