//! Plots in the paper's style, as SVG: latency per operation (scatter), latency against a
//! size, throughput against offset. Tests describe a [`Plot`]; [`write_all`] draws them.

use crate::error::{BoxError, ProbeError, Result};
use figure::{Axis, Entry, Fit, Frame, Mark, Occupied};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use tegula_plot as figure;

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
    /// The x values are indices ([`Plot::per_op`]): the axis title says `number`.
    pub x_index: bool,
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
            x_index: false,
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
    pub fn per_op(mut self, name: &str, lat: &[f64]) -> Self {
        self.x_index = true;
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

/// Marker radius of a dot series, in pixels.
const DOT: i32 = 2;

/// The x axis title: an index axis ([`Plot::per_op`]) counts, and says so
/// (`operation number`) unless its label gives a unit.
fn x_title(p: &Plot) -> String {
    if p.x_index && !p.x_label.contains('(') {
        format!("{} number", p.x_label)
    } else {
        p.x_label.clone()
    }
}

/// Draws one chart into `path`: axes fitted to the data (a log y axis labelled in 1-2-5
/// steps, or a linear one that clips far outliers with a note), series in distinct colours and
/// marker shapes, the legend where there is no data.
pub fn draw(p: &Plot, path: &Path) -> Result<()> {
    let data: Vec<Vec<(f64, f64)>> = p
        .series
        .iter()
        .map(|s| {
            thin(&s.points, 6000)
                .into_iter()
                .filter(|q| q.0.is_finite() && q.1.is_finite())
                .collect()
        })
        .collect();
    let xs: Vec<f64> = data.iter().flatten().map(|q| q.0).collect();
    let ys: Vec<f64> = data.iter().flatten().map(|q| q.1).collect();
    let x = Axis::linear(&xs, Fit::X);
    let y = if p.log_y {
        Axis::log(&ys, 12)
    } else {
        Axis::linear(&ys, Fit::Y)
    };
    let mut occupied = Occupied::new();
    let mut entries = Vec::new();
    for (i, (s, pts)) in p.series.iter().zip(&data).enumerate() {
        let mark = match s.style {
            Style::Dots => {
                occupied.dots(&x, &y, pts, 0.004);
                Mark::Dots(i)
            }
            Style::Line => {
                occupied.line(&x, &y, pts);
                Mark::Line(None)
            }
        };
        entries.push(Entry {
            name: s.name.clone(),
            color: figure::color(i),
            mark,
        });
    }
    let frame = Frame::new((1024, 576), &p.title, &x_title(p), &p.y_label);
    let root = SVGBackend::new(path, frame.size).into_drawing_area();
    frame
        .draw(&root, &x, &y, &entries, &occupied, |c| {
            for (e, pts) in entries.iter().zip(&data) {
                match e.mark {
                    Mark::Line(_) => {
                        c.draw_series(LineSeries::new(
                            pts.iter().copied(),
                            e.color.stroke_width(2),
                        ))?;
                    }
                    Mark::Dots(shape) => figure::draw_marks(c, pts, shape, DOT, e.color)?,
                    Mark::Bar => {}
                }
            }
            Ok(())
        })
        .map_err(|e| err(path, e))?;
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

    #[test]
    fn latency_per_operation_is_labelled_where_the_points_are() {
        // TEST 1's shape: nearly every write 25-30 ms, a few 330 ms spikes.
        let lat: Vec<f64> = (0..960)
            .map(|i| {
                if i % 240 == 30 {
                    330.0
                } else {
                    25.0 + (i % 6) as f64
                }
            })
            .collect();
        let p = Plot::new("t.svg", "TEST 1", "operation", "latency (ms)")
            .per_op("writes", &lat)
            .log();
        let dir = tempfile::tempdir().expect("tempdir");
        let files = write_all(&[p], dir.path()).expect("draw");
        let texts = figure::svg_texts(&std::fs::read_to_string(&files[0]).expect("read"));
        for want in ["20", "30", "50", "100", "200", "operation number", "500"] {
            assert!(
                texts.iter().any(|t| t == want),
                "{want} missing from {texts:?}"
            );
        }
        assert!(
            !texts.iter().any(|t| t.ends_with(".0")),
            "float labels in {texts:?}"
        );
    }
}
