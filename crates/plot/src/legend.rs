//! Legends: what an entry shows and where the legend goes (where there is no data).

use crate::*;
use plotters::prelude::*;

/// How a series shows in the chart and in its legend entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Markers of shape `n` (see [`draw_marks`]).
    Dots(usize),
    /// A line, with markers of shape `n` when `Some(n)`.
    Line(Option<usize>),
    /// A filled bar.
    Bar,
}

/// One legend entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The text.
    pub name: String,
    /// The series' colour.
    pub color: RGBAColor,
    /// Its mark.
    pub mark: Mark,
}

/// Where the legend goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Place {
    /// Inside the plot area where its box covers no data: at the right or left edge, its
    /// top (with a margin) at `top`, a fraction of the plot area's height from the bottom
    /// (1: the upper corner).
    Inside {
        /// At the right edge (else the left).
        right: bool,
        /// Height of the box's top, 0..=1.
        top: f64,
    },
    /// In rows between the title and the plot area.
    Above,
}

/// What the data covers in the plot area, as rectangles in fractions of its width and height
/// (0, 0 at the lower left).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Occupied {
    rects: Vec<[f64; 4]>,
}

impl Occupied {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A dot (or marker) at each point, `r` (fraction of the plot area) around it.
    pub fn dots(&mut self, x: &Axis, y: &Axis, points: &[(f64, f64)], r: f64) {
        for &(a, b) in points {
            let (fx, fy) = (x.frac(a), y.frac(b));
            self.rects.push([fx - r, fy - r, fx + r, fy + r]);
        }
    }

    /// A line through `points`: sampled every 0.5 % along each segment.
    pub fn line(&mut self, x: &Axis, y: &Axis, points: &[(f64, f64)]) {
        const R: f64 = 0.004;
        let f: Vec<(f64, f64)> = points.iter().map(|p| (x.frac(p.0), y.frac(p.1))).collect();
        if let [(a, b)] = f[..] {
            self.rects.push([a - R, b - R, a + R, b + R]);
        }
        for w in f.windows(2) {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            let n = ((x1 - x0).hypot(y1 - y0) / 0.005).ceil().max(1.0) as usize;
            for i in 0..=n {
                let t = i as f64 / n as f64;
                let (a, b) = (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t);
                self.rects.push([a - R, b - R, a + R, b + R]);
            }
        }
    }

    /// A rectangle given in data units.
    pub fn rect(&mut self, x: &Axis, y: &Axis, (x0, y0): (f64, f64), (x1, y1): (f64, f64)) {
        let (a0, a1) = (x.frac(x0), x.frac(x1));
        let (b0, b1) = (y.frac(y0), y.frac(y1));
        self.rects
            .push([a0.min(a1), b0.min(b1), a0.max(a1), b0.max(b1)]);
    }

    /// Whether no data lies in `[x0, y0, x1, y1]`.
    pub fn free(&self, r: [f64; 4]) -> bool {
        !self
            .rects
            .iter()
            .any(|o| o[0] < r[2] && r[0] < o[2] && o[1] < r[3] && r[1] < o[3])
    }
}

/// Pixel size of a legend font's text.
pub(crate) const LEGEND_FONT: u32 = 13;
/// Pixels of one legend row.
pub(crate) const ROW: i32 = 20;
/// Pixels between the plot area's frame and an inside legend.
pub(crate) const INSET: i32 = 8;

/// Width in pixels of `text` at `size` pixels (sans-serif, a generous average).
pub(crate) fn text_width(text: &str, size: u32) -> i32 {
    (text.chars().count() as f64 * f64::from(size) * 0.6).ceil() as i32
}

/// Width and height in pixels of a boxed legend of `entries`.
pub(crate) fn legend_box(entries: &[Entry]) -> (i32, i32) {
    let w = entries
        .iter()
        .map(|e| text_width(&e.name, LEGEND_FONT))
        .max()
        .unwrap_or(0);
    (w + 48, ROW * entries.len() as i32 + 8)
}

/// Where the legend of `entries` goes on a plot area of `plot` pixels: the first place where
/// its box (with a margin) covers no data, of the upper right and upper left corners, the
/// lower right and lower left ones, then down the right edge and down the left one; else
/// above the plot area.
pub fn place_legend(entries: &[Entry], occupied: &Occupied, plot: (u32, u32)) -> Place {
    let (bw, bh) = legend_box(entries);
    let (pw, ph) = (f64::from(plot.0.max(1)), f64::from(plot.1.max(1)));
    let w = f64::from(bw + 2 * INSET) / pw;
    let h = f64::from(bh + 2 * INSET) / ph;
    if w >= 0.6 || h >= 0.8 {
        return Place::Above;
    }
    let corners = [(true, 1.0), (false, 1.0), (true, h), (false, h)];
    let steps = ((1.0 - h) / 0.04).floor() as usize;
    let down = |right: bool| (1..steps).map(move |i| (right, 1.0 - i as f64 * 0.04));
    for (right, top) in corners.into_iter().chain(down(true)).chain(down(false)) {
        let (x0, x1) = if right { (1.0 - w, 1.0) } else { (0.0, w) };
        if occupied.free([x0, top - h, x1, top]) {
            return Place::Inside { right, top };
        }
    }
    Place::Above
}

/// Rows of entries for a legend above a plot `width` pixels wide: as many per row as fit.
pub(crate) fn legend_rows(entries: &[Entry], width: i32) -> Vec<Vec<&Entry>> {
    let mut rows: Vec<Vec<&Entry>> = Vec::new();
    let mut used = 0;
    for e in entries {
        let w = entry_width(e);
        match rows.last_mut() {
            Some(row) if used + w <= width => row.push(e),
            _ => {
                rows.push(vec![e]);
                used = 0;
            }
        }
        used += w;
    }
    rows
}

pub(crate) fn entry_width(e: &Entry) -> i32 {
    text_width(&e.name, LEGEND_FONT) + 52
}
