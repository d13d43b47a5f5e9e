//! Plots in the paper's style, as SVG: latency per operation (scatter), latency against a
//! size, throughput against offset. Tests describe a [`Plot`]; [`write_all`] draws them.

use crate::error::{BoxError, ProbeError, Result};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// One dot per point (latency per operation).
    Dots,
    /// A line through the points.
    Line,
}

/// One named series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) points.
    pub points: Vec<(f64, f64)>,
    /// Dots or a line.
    pub style: Style,
}

/// One chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// File name inside the plot directory (`t01_drive_type.svg`).
    pub file: String,
    /// Caption.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// The data.
    pub series: Vec<Series>,
    /// Logarithmic y axis (latencies spanning sub-millisecond to seconds).
    pub log_y: bool,
}

impl Plot {
    /// A chart with no series yet.
    pub fn new(file: &str, title: &str, x_label: &str, y_label: &str) -> Self {
        Plot {
            file: file.to_string(),
            title: title.to_string(),
            x_label: x_label.to_string(),
            y_label: y_label.to_string(),
            series: Vec::new(),
            log_y: false,
        }
    }

    /// Adds a series of dots.
    pub fn dots(mut self, name: &str, points: Vec<(f64, f64)>) -> Self {
        self.series.push(Series {
            name: name.to_string(),
            points,
            style: Style::Dots,
        });
        self
    }

    /// Adds a line.
    pub fn line(mut self, name: &str, points: Vec<(f64, f64)>) -> Self {
        self.series.push(Series {
            name: name.to_string(),
            points,
            style: Style::Line,
        });
        self
    }

    /// Latency per operation: the values of `lat` against their index.
    pub fn per_op(self, name: &str, lat: &[f64]) -> Self {
        let pts = lat
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as f64, l))
            .collect();
        self.dots(name, pts)
    }

    /// Uses a logarithmic y axis.
    pub fn log(mut self) -> Self {
        self.log_y = true;
        self
    }
}

/// At most `max` points: the lowest and highest of each bucket, so spikes survive.
fn thin(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max || max < 4 {
        return points.to_vec();
    }
    let per = points.len().div_ceil(max / 2);
    let mut out = Vec::with_capacity(max + 2);
    for chunk in points.chunks(per) {
        let lo = chunk.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
        let hi = chunk.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(lo), Some(hi)) = (lo, hi) {
            if lo.0 <= hi.0 {
                out.push(lo);
                out.push(hi);
            } else {
                out.push(hi);
                out.push(lo);
            }
        }
    }
    out
}

fn err(path: &Path, e: impl Into<BoxError>) -> ProbeError {
    ProbeError::Output {
        path: path.display().to_string(),
        source: e.into(),
    }
}

/// Draws the axes, series (their points whose y `keep` accepts) and legend of `p` on a chart
/// with y axis `y`: linear or logarithmic, the one difference between the two kinds of chart.
fn chart<Y>(
    b: &mut ChartBuilder<'_, '_, SVGBackend<'_>>,
    p: &Plot,
    path: &Path,
    x: std::ops::Range<f64>,
    y: Y,
    keep: impl Fn(f64) -> bool,
) -> Result<()>
where
    Y: AsRangedCoord,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let colors = |i: usize| Palette99::pick(i).to_rgba();
    let mut c = b.build_cartesian_2d(x, y).map_err(|e| err(path, e))?;
    c.configure_mesh()
        .x_desc(&p.x_label)
        .y_desc(&p.y_label)
        .draw()
        .map_err(|e| err(path, e))?;
    for (i, s) in p.series.iter().enumerate() {
        let color = colors(i);
        let data: Vec<(f64, f64)> = thin(&s.points, 6000)
            .into_iter()
            .filter(|q| keep(q.1))
            .collect();
        match s.style {
            Style::Dots => c
                .draw_series(
                    data.into_iter()
                        .map(move |q| Circle::new(q, 2, color.filled())),
                )
                .map_err(|e| err(path, e))?,
            Style::Line => c
                .draw_series(LineSeries::new(data, color.stroke_width(2)))
                .map_err(|e| err(path, e))?,
        }
        .label(s.name.clone())
        .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
    }
    c.configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| err(path, e))?;
    Ok(())
}

/// Draws one chart into `path`.
pub fn draw(p: &Plot, path: &Path) -> Result<()> {
    let pts = || p.series.iter().flat_map(|s| s.points.iter());
    let finite = |v: f64| v.is_finite();
    let xmin = pts()
        .map(|q| q.0)
        .filter(|v| finite(*v))
        .fold(f64::INFINITY, f64::min);
    let xmax = pts()
        .map(|q| q.0)
        .filter(|v| finite(*v))
        .fold(f64::NEG_INFINITY, f64::max);
    let ymax = pts()
        .map(|q| q.1)
        .filter(|v| finite(*v))
        .fold(f64::NEG_INFINITY, f64::max);
    let ypos = pts()
        .map(|q| q.1)
        .filter(|v| finite(*v) && *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let (xmin, xmax) = if xmin.is_finite() && xmax > xmin {
        (xmin, xmax)
    } else {
        (0.0, 1.0)
    };
    let ymax = if ymax.is_finite() && ymax > 0.0 {
        ymax * 1.1
    } else {
        1.0
    };
    let root = SVGBackend::new(path, (1024, 576)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(path, e))?;
    let mut b = ChartBuilder::on(&root);
    b.caption(&p.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    if p.log_y {
        let ymin = if ypos.is_finite() { ypos / 1.5 } else { 0.01 };
        let y = (ymin..ymax.max(ymin * 10.0)).log_scale();
        chart(&mut b, p, path, xmin..xmax, y, |v| v > 0.0 && v.is_finite())?;
    } else {
        chart(&mut b, p, path, xmin..xmax, 0.0..ymax, f64::is_finite)?;
    }
    root.present().map_err(|e| err(path, e))?;
    Ok(())
}

/// Draws every plot into `dir` (created if its parent exists: a mistyped path does not
/// silently grow a directory tree); returns the files written.
pub fn write_all(plots: &[Plot], dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        if let Some(parent) = dir.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !parent.is_dir() {
                let why = std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!(
                        "the directory {} does not exist (create it first)",
                        parent.display()
                    ),
                );
                return Err(err(dir, why));
            }
        }
        std::fs::create_dir(dir).map_err(|e| err(dir, e))?;
    }
    let mut out = Vec::new();
    for p in plots {
        let path = dir.join(&p.file);
        draw(p, &path)?;
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_the_spikes() {
        let mut pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 25.0)).collect();
        pts[4321].1 = 325.0;
        let t = thin(&pts, 100);
        assert!(t.len() <= 102);
        assert!(t.iter().any(|p| p.1 == 325.0));
    }

    #[test]
    fn a_chart_is_written_as_svg() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = Plot::new("x.svg", "latency", "operation", "ms")
            .per_op("writes", &[25.0, 25.0, 325.0, 25.0])
            .log();
        let files = write_all(&[p], dir.path()).expect("draw");
        let text = std::fs::read_to_string(&files[0]).expect("read");
        assert!(text.starts_with("<svg"), "{}", &text[..40.min(text.len())]);
    }
}
