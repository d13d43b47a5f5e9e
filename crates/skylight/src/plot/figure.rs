//! How every tegula plot reads, shared by the prober's plots and tegula-bench's (which
//! includes this file by path: it uses only std and plotters).
//!
//! - Axis ranges and ticks come from the data ([`Axis::linear`], [`Axis::log`]): a linear axis
//!   whose few largest values lie far above the bulk stops just above its 99th percentile and
//!   draws the rest at the top edge (a [`Axis::note`] under the title says so); a log axis
//!   labels 1-2-5 steps in every decade the data covers.
//! - Tick labels read like a paper's: `500`, not `500.0`; `0.3`, never `0.30000000000000004`;
//!   `20k`, `1.5M` above ten thousand ([`format_ticks`]).
//! - The legend goes where there is no data ([`place_legend`]): the first empty corner of the
//!   plot area, else a row above it.
//! - Series differ in colour and in marker shape ([`PALETTE`], [`Mark`]), so a series drawn
//!   under another still shows.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;

/// The error of a drawing.
pub type DrawError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Series colours: dark enough to read on white, told apart in print (Tableau 10).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of series `i`, the same in every chart.
pub fn color(i: usize) -> RGBAColor {
    PALETTE[i % PALETTE.len()].to_rgba()
}

/// A step of 1, 2 or 5 times a power of ten: `mantissa × 10^exponent`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Step {
    mantissa: u32,
    exponent: i32,
}

impl Step {
    /// The smallest 1-2-5 step that cuts `span` into at most `max` intervals.
    fn for_span(span: f64, max: usize) -> Step {
        let raw = (span / max.max(1) as f64).abs().max(f64::MIN_POSITIVE);
        let mut exponent = raw.log10().floor() as i32;
        loop {
            for mantissa in [1, 2, 5] {
                let s = Step { mantissa, exponent };
                if s.value() >= raw * (1.0 - 1e-9) {
                    return s;
                }
            }
            exponent += 1;
        }
    }

    /// `k` steps, computed so that the result is the double nearest the decimal value.
    fn times(self, k: i64) -> f64 {
        let m = (k * i64::from(self.mantissa)) as f64;
        if self.exponent >= 0 {
            m * 10f64.powi(self.exponent)
        } else {
            m / 10f64.powi(-self.exponent)
        }
    }

    fn value(self) -> f64 {
        self.times(1)
    }
}

/// Labels for linear-axis ticks `step` apart: one number of decimals for the whole axis (as
/// few as the step needs: none for integers), and `k`, `M`, `G` once the largest tick reaches
/// ten thousand.
pub fn format_ticks(ticks: &[f64], step: f64) -> Vec<String> {
    let top = ticks.iter().fold(0.0f64, |m, t| m.max(t.abs()));
    let (div, suffix) = scale_suffix(top);
    let decimals = decimals_for(step / div);
    ticks
        .iter()
        .map(|&t| {
            let s = format!("{:.*}", decimals, t / div);
            let s = if s
                .trim_start_matches('-')
                .chars()
                .all(|c| c == '0' || c == '.')
            {
                "0".to_string()
            } else {
                s
            };
            if s == "0" {
                s
            } else {
                format!("{s}{suffix}")
            }
        })
        .collect()
}

/// One value as a short label: `0.05`, `300`, `2500`, `20k`, `1.5M` (at most four
/// significant digits).
pub fn format_value(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let (div, suffix) = scale_suffix(v.abs());
    let x: f64 = format!("{:.3e}", v / div).parse().unwrap_or(v / div);
    if x == 0.0 {
        "0".to_string()
    } else {
        format!("{x}{suffix}")
    }
}

fn scale_suffix(top: f64) -> (f64, &'static str) {
    if top >= 1e9 {
        (1e9, "G")
    } else if top >= 1e6 {
        (1e6, "M")
    } else if top >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    }
}

/// Decimals needed to print multiples of `step` exactly (0 for a step of 1 or more).
fn decimals_for(step: f64) -> usize {
    let mut d = 0;
    while d < 9 {
        let scaled = step * 10f64.powi(d as i32);
        if (scaled - scaled.round()).abs() < 1e-6 * scaled.abs().max(1.0) {
            break;
        }
        d += 1;
    }
    d
}

/// The `p`-quantile (0..=1) of sorted values (nearest rank).
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = (p.clamp(0.0, 1.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i]
}

/// How a linear axis is fitted to its data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// When the axis starts at 0 rather than at the smallest value.
    pub zero: Zero,
    /// Stop just above the 99th percentile when the largest values lie far above it.
    pub clip_outliers: bool,
    /// At most this many labelled ticks.
    pub max_ticks: usize,
    /// End where the data ends (an x axis) rather than at the tick above it with room for
    /// the largest value (a y axis).
    pub to_data: bool,
}

impl Fit {
    /// A y axis: from 0, outliers clipped, up to 8 ticks.
    pub const Y: Fit = Fit {
        zero: Zero::Always,
        clip_outliers: true,
        max_ticks: 8,
        to_data: false,
    };
    /// An x axis: from 0 when the data starts near it, to where the data ends, every value
    /// shown, up to 10 ticks.
    pub const X: Fit = Fit {
        zero: Zero::Near,
        clip_outliers: false,
        max_ticks: 10,
        to_data: true,
    };
}

/// When a linear axis starts at 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zero {
    /// Whenever no value is negative (throughput, bars: a bar's length is its value).
    Always,
    /// When no value is negative and the smallest is at most half the largest (time).
    Near,
    /// Never: the axis starts at the smallest value.
    Never,
}

/// One axis: its range, labelled ticks, light grid lines, scale, and how many values lie
/// beyond it (drawn at its edge). It is also the plotters coordinate of the chart: values map
/// onto it linearly or logarithmically, and values beyond an end map onto that end.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Logarithmic.
    pub log: bool,
    /// Lower end, in data units.
    pub lo: f64,
    /// Upper end, in data units.
    pub hi: f64,
    /// Labelled ticks: value and label.
    pub ticks: Vec<(f64, String)>,
    /// Unlabelled light grid lines.
    pub minor: Vec<f64>,
    /// Values above `hi`, drawn at the upper end.
    pub above: usize,
    /// Values in all.
    pub count: usize,
    /// The largest value.
    pub max: f64,
}

impl Axis {
    /// A linear axis fitted to `values` (non-finite ones ignored).
    pub fn linear(values: &[f64], fit: Fit) -> Axis {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let (min, max) = match (v.first(), v.last()) {
            (Some(&a), Some(&b)) => (a, b),
            _ => (0.0, 1.0),
        };
        let bottom = match fit.zero {
            Zero::Always if min >= 0.0 => 0.0,
            Zero::Near if min >= 0.0 && (min <= 0.5 * max || min == max) => 0.0,
            _ => min,
        };
        let mut top = max;
        let mut clipped = false;
        if fit.clip_outliers && v.len() >= 20 {
            let q = quantile(&v, 0.99);
            if q > bottom && max - bottom > 2.0 * (q - bottom) {
                top = q + 0.15 * (q - bottom);
                clipped = true;
            }
        }
        if top <= bottom {
            top = if bottom == 0.0 {
                1.0
            } else {
                bottom + bottom.abs() * 0.1
            };
        }
        let mut step = Step::for_span(top - bottom, fit.max_ticks);
        let integers = !v.is_empty() && v.iter().all(|x| x.fract() == 0.0);
        if integers && step.exponent < 0 {
            step = Step {
                mantissa: 1,
                exponent: 0,
            };
        }
        let s = step.value();
        let mut k0 = (bottom / s + 1e-9).floor() as i64;
        let mut k1 = (top / s - 1e-9).ceil() as i64;
        // Room above the largest value drawn, so that it does not sit on the frame.
        if !fit.to_data && !clipped && step.times(k1) - top < 0.02 * step.times(k1 - k0) {
            k1 += 1;
        }
        if k1 <= k0 {
            k1 = k0 + 1;
        }
        let (mut lo, mut hi) = (step.times(k0), step.times(k1));
        if fit.to_data {
            // Ends at the data, unless a tick is within 3 % beyond.
            let near = 0.03 * (top - bottom);
            if bottom - lo > near {
                lo = bottom;
                k0 += 1;
            }
            if hi - top > near {
                hi = top;
                k1 -= 1;
            }
        }
        let values: Vec<f64> = (k0..=k1).map(|k| step.times(k)).collect();
        let labels = format_ticks(&values, s);
        Axis {
            log: false,
            lo,
            hi,
            ticks: values.into_iter().zip(labels).collect(),
            minor: Vec::new(),
            above: v.iter().filter(|&&x| x > hi).count(),
            count: v.len(),
            max,
        }
    }

    /// A logarithmic axis over the positive values of `values` (others are drawn at its lower
    /// end), labelled at 1-2-5 steps (every 1-9 in a decade or less, every decade over wide
    /// ranges) with at most about `max_ticks` labels.
    pub fn log(values: &[f64], max_ticks: usize) -> Axis {
        let pos = || values.iter().copied().filter(|x| x.is_finite() && *x > 0.0);
        let min = pos().fold(f64::INFINITY, f64::min);
        let max = pos().fold(0.0f64, f64::max);
        let (mut lo, mut hi) = if min.is_finite() && max > 0.0 {
            (min / 1.25, max * 1.25)
        } else {
            (0.1, 10.0)
        };
        let decades = (hi / lo).log10();
        let sets: [&[u32]; 4] = [&[1, 2, 3, 4, 5, 6, 7, 8, 9], &[1, 2, 5], &[1, 3], &[1]];
        let mut labelled: &[u32] = &[1];
        for set in sets {
            if decades * set.len() as f64 <= max_ticks as f64 + 1.0 {
                labelled = set;
                break;
            }
        }
        let every = if labelled.len() == 1 {
            (decades / max_ticks.max(1) as f64).ceil().max(1.0) as i32
        } else {
            1
        };
        let mark = |e: i32, m: u32| {
            if e >= 0 {
                f64::from(m) * 10f64.powi(e)
            } else {
                f64::from(m) / 10f64.powi(-e)
            }
        };
        let in_range = |lo: f64, hi: f64| {
            let mut ticks = Vec::new();
            let mut minor = Vec::new();
            for e in (lo.log10().floor() as i32)..=(hi.log10().ceil() as i32) {
                for m in 1..=9 {
                    let t = mark(e, m);
                    if t < lo * (1.0 - 1e-9) || t > hi * (1.0 + 1e-9) {
                        continue;
                    }
                    if labelled.contains(&m) && e.rem_euclid(every) == 0 {
                        ticks.push(t);
                    } else if m == 1 || decades <= 6.0 {
                        minor.push(t);
                    }
                }
            }
            (ticks, minor)
        };
        let labels = |from: f64, to: f64| in_range(from, to).0;
        let count = labels(lo, hi).len();
        if count < 2 {
            // Too narrow a range for two labels: widen it to the labels around the data.
            let below = labels(lo / 1000.0, lo);
            let above = labels(hi, hi * 1000.0);
            if count == 0 {
                if let (Some(&b), Some(&a)) = (below.last(), above.first()) {
                    lo = b;
                    hi = a;
                }
            } else if let Some(&b) = below.last() {
                lo = b;
            }
        }
        // Labels close beyond the ends: extend to them, so that every end is labelled nearby.
        if let Some(&b) = labels(lo / 1.6, lo).last() {
            lo = b;
        }
        if let Some(&a) = labels(hi, hi * 1.6).first() {
            hi = a;
        }
        let (ticks, minor) = in_range(lo, hi);
        Axis {
            log: true,
            lo,
            hi,
            ticks: ticks.into_iter().map(|t| (t, format_value(t))).collect(),
            minor,
            above: 0,
            count: values.len(),
            max,
        }
    }

    /// An axis from `lo` to `hi` labelled as given (categories, sizes on a log₂ scale).
    pub fn labelled(lo: f64, hi: f64, ticks: Vec<(f64, String)>) -> Axis {
        Axis {
            log: false,
            lo,
            hi,
            ticks,
            minor: Vec::new(),
            above: 0,
            count: 0,
            max: hi,
        }
    }

    /// Where `v` lies along the axis, 0 at `lo` and 1 at `hi` (values beyond an end at it).
    pub fn frac(&self, v: f64) -> f64 {
        let f = if self.log {
            if v <= 0.0 || v.is_nan() {
                0.0
            } else {
                (v / self.lo).log10() / (self.hi / self.lo).log10()
            }
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        if f.is_nan() {
            0.0
        } else {
            f.clamp(0.0, 1.0)
        }
    }

    /// The label of the tick at `v` (empty between ticks).
    pub fn label(&self, v: f64) -> String {
        let tol = if self.log {
            v.abs() * 1e-6
        } else {
            (self.hi - self.lo).abs() * 1e-6
        };
        self.ticks
            .iter()
            .find(|t| (t.0 - v).abs() <= tol)
            .map(|t| t.1.clone())
            .unwrap_or_default()
    }

    /// What a reader should know about values drawn at the edge, if any:
    /// `3 of 260 values above 1.5k (up to 92k) drawn at the top edge`.
    pub fn note(&self) -> Option<String> {
        (self.above > 0).then(|| {
            format!(
                "{} of {} values above {} (up to {}) drawn at the top edge",
                self.above,
                self.count,
                format_value(self.hi),
                format_value(self.max)
            )
        })
    }
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        limit.0 + ((limit.1 - limit.0) as f64 * self.frac(*value)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minor.clone()
        } else {
            self.ticks.iter().map(|t| t.0).collect()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

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
const LEGEND_FONT: u32 = 13;
/// Pixels of one legend row.
const ROW: i32 = 20;
/// Pixels between the plot area's frame and an inside legend.
const INSET: i32 = 8;

/// Width in pixels of `text` at `size` pixels (sans-serif, a generous average).
fn text_width(text: &str, size: u32) -> i32 {
    (text.chars().count() as f64 * f64::from(size) * 0.6).ceil() as i32
}

/// Width and height in pixels of a boxed legend of `entries`.
fn legend_box(entries: &[Entry]) -> (i32, i32) {
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
fn legend_rows(entries: &[Entry], width: i32) -> Vec<Vec<&Entry>> {
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

fn entry_width(e: &Entry) -> i32 {
    text_width(&e.name, LEGEND_FONT) + 52
}

/// The outline of marker shape `shape` (filled circle, filled triangle, open circle, cross,
/// open square, and again) of radius about `r` pixels, as pixel offsets, and whether it is
/// filled. Later series' open shapes leave the marks of earlier ones under them visible.
fn marker_shape(shape: usize, r: i32) -> (Vec<(i32, i32)>, bool) {
    let ring = |r: f64| -> Vec<(i32, i32)> {
        (0..=12)
            .map(|i| {
                let a = f64::from(i) * std::f64::consts::PI / 6.0;
                ((r * a.cos()).round() as i32, (r * a.sin()).round() as i32)
            })
            .collect()
    };
    let (rf, q) = (f64::from(r), r + 1);
    match shape % 5 {
        0 => (ring(rf), true),
        1 => (
            vec![(0, -q - 1), (q, q - 1), (-q, q - 1), (0, -q - 1)],
            true,
        ),
        2 => (ring(rf + 1.5), false),
        3 => (vec![(-q, -q), (q, q), (0, 0), (-q, q), (q, -q)], false),
        _ => (vec![(-q, -q), (q, -q), (q, q), (-q, q), (-q, -q)], false),
    }
}

/// A marker at `at` (see [`marker_shape`]): one element type for every shape, in a chart's
/// coordinates or in pixels.
type Marker<C, DB> =
    plotters::element::ComposedElement<C, DB, Polygon<(i32, i32)>, PathElement<(i32, i32)>>;

fn marker<C, DB: DrawingBackend>(shape: usize, at: C, r: i32, c: RGBAColor) -> Marker<C, DB> {
    let (outline, filled) = marker_shape(shape, r);
    let fill = if filled { c } else { c.mix(0.0) };
    EmptyElement::at(at)
        + Polygon::new(outline.clone(), fill.filled())
        + PathElement::new(outline, c.stroke_width(1))
}

/// The chart type every tegula plot draws on.
pub type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<Axis, Axis>>;

/// Draws markers of shape `shape` (as in [`Mark::Dots`]) of radius `r` pixels at `points`.
pub fn draw_marks<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    points: &[(f64, f64)],
    shape: usize,
    r: i32,
    c: RGBAColor,
) -> Result<(), DrawError>
where
    DB::ErrorType: 'static,
{
    chart.draw_series(points.iter().map(|&p| marker(shape, p, r, c)))?;
    Ok(())
}

/// The frame of a figure: size, title and axis titles.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Size in pixels.
    pub size: (u32, u32),
    /// Title.
    pub title: String,
    /// Title font size in pixels.
    pub title_size: u32,
    /// x axis title, with its unit.
    pub x_label: String,
    /// y axis title, with its unit.
    pub y_label: String,
    /// Width of the y tick label area in pixels.
    pub y_label_area: u32,
    /// Vertical grid lines (off for bar charts).
    pub x_grid: bool,
}

const MARGIN: u32 = 14;
const X_LABEL_AREA: u32 = 48;
const NOTE_FONT: u32 = 13;

impl Frame {
    /// A frame of `size` pixels.
    pub fn new(size: (u32, u32), title: &str, x_label: &str, y_label: &str) -> Self {
        Frame {
            size,
            title: title.to_string(),
            title_size: 20,
            x_label: x_label.to_string(),
            y_label: y_label.to_string(),
            y_label_area: 80,
            x_grid: true,
        }
    }

    /// The plot area's size in pixels, without a legend or note above it.
    fn plot_area(&self) -> (u32, u32) {
        let top = self.title_size + 12;
        (
            self.size.0.saturating_sub(2 * MARGIN + self.y_label_area),
            self.size.1.saturating_sub(2 * MARGIN + X_LABEL_AREA + top),
        )
    }

    /// Draws the figure on `root`: title, a note on clipped values, the axes `x` and `y`,
    /// what `body` draws, and the legend of `entries` where `occupied` shows no data.
    pub fn draw<DB, F>(
        &self,
        root: &DrawingArea<DB, Shift>,
        x: &Axis,
        y: &Axis,
        entries: &[Entry],
        occupied: &Occupied,
        body: F,
    ) -> Result<(), DrawError>
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static,
        F: FnOnce(&mut Chart<'_, DB>) -> Result<(), DrawError>,
    {
        root.fill(&WHITE)?;
        let mut area = root.titled(&self.title, ("sans-serif", self.title_size))?;
        let notes: Vec<String> = [x.note(), y.note()].into_iter().flatten().collect();
        for n in &notes {
            let style = ("sans-serif", NOTE_FONT)
                .into_font()
                .style(FontStyle::Italic)
                .color(&RGBColor(90, 90, 90));
            area = area.titled(n, style)?;
        }
        let (pw, ph) = self.plot_area();
        let ph = ph.saturating_sub(notes.len() as u32 * (NOTE_FONT + 8));
        let place = if entries.is_empty() {
            Place::Above
        } else {
            place_legend(entries, occupied, (pw, ph))
        };
        if place == Place::Above && !entries.is_empty() {
            let (x0, _) = area.get_pixel_range();
            let width = pw as i32;
            let rows = legend_rows(entries, width);
            let h = ROW * rows.len() as i32 + 6;
            let (top, rest) = area.split_vertically(h);
            let (xr, yr) = top.get_pixel_range();
            let left_of_plot = x0.start + (MARGIN + self.y_label_area) as i32;
            for (i, row) in rows.iter().enumerate() {
                let used: i32 = row.iter().map(|e| entry_width(e)).sum();
                let mut px = left_of_plot + (width - used).max(0) / 2;
                let py = yr.start + ROW * i as i32 + ROW / 2 + 2;
                for e in row {
                    legend_entry(root, e, (px.min(xr.end), py))?;
                    px += entry_width(e);
                }
            }
            area = rest;
        }
        let mut chart = ChartBuilder::on(&area)
            .margin(MARGIN)
            .margin_right(2 * MARGIN)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(self.y_label_area)
            .build_cartesian_2d(x.clone(), y.clone())?;
        let x_fmt = |v: &f64| x.label(*v);
        let y_fmt = |v: &f64| y.label(*v);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .axis_desc_style(("sans-serif", 15))
            .label_style(("sans-serif", 13))
            .bold_line_style(RGBColor(200, 200, 200).stroke_width(1))
            .light_line_style(RGBColor(236, 236, 236).stroke_width(1));
        if !self.x_grid {
            mesh.disable_x_mesh();
        }
        mesh.draw()?;
        body(&mut chart)?;
        if let Place::Inside { right, top } = place {
            let (xr, yr) = chart.plotting_area().get_pixel_range();
            let (bw, bh) = legend_box(entries);
            let x0 = if right {
                xr.end - INSET - bw
            } else {
                xr.start + INSET
            };
            let below_top = ((1.0 - top) * f64::from(yr.end - yr.start)).round() as i32;
            let y0 = (yr.start + below_top + INSET).min(yr.end - INSET - bh);
            root.draw(&Rectangle::new(
                [(x0, y0), (x0 + bw, y0 + bh)],
                WHITE.mix(0.9).filled(),
            ))?;
            root.draw(&Rectangle::new(
                [(x0, y0), (x0 + bw, y0 + bh)],
                RGBColor(120, 120, 120).stroke_width(1),
            ))?;
            for (i, e) in entries.iter().enumerate() {
                legend_entry(root, e, (x0 + 8, y0 + 4 + ROW * i as i32 + ROW / 2))?;
            }
        }
        Ok(())
    }
}

/// Draws one legend entry: its mark from pixel `(x, y)` on, then its text.
fn legend_entry<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    e: &Entry,
    (x, y): (i32, i32),
) -> Result<(), DrawError>
where
    DB::ErrorType: 'static,
{
    let c = e.color;
    match e.mark {
        Mark::Bar => {
            root.draw(&Rectangle::new(
                [(x + 2, y - 6), (x + 22, y + 6)],
                c.filled(),
            ))?;
        }
        Mark::Line(m) => {
            root.draw(&PathElement::new(
                vec![(x, y), (x + 24, y)],
                c.stroke_width(2),
            ))?;
            if let Some(m) = m {
                root.draw(&marker(m, (x + 12, y), 3, c))?;
            }
        }
        Mark::Dots(m) => root.draw(&marker(m, (x + 12, y), 3, c))?,
    }
    let style = ("sans-serif", LEGEND_FONT)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    root.draw(&Text::new(e.name.clone(), (x + 32, y), style))?;
    Ok(())
}

/// The text of every `<text>` element of an SVG file these plots drew (for tests).
#[cfg(test)]
pub fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(a: &Axis) -> Vec<&str> {
        a.ticks.iter().map(|t| t.1.as_str()).collect()
    }

    #[test]
    fn integer_ticks_have_no_decimals() {
        let a = Axis::linear(&[0.0, 130.0, 480.0, 960.0], Fit::X);
        assert_eq!(
            labels(&a),
            ["0", "100", "200", "300", "400", "500", "600", "700", "800", "900"]
        );
        assert_eq!(a.hi, 960.0);
        assert!(labels(&a).contains(&"500"));
        // An x axis ends where the data does; a y axis at the tick above, with room.
        let x = Axis::linear(&[0.0, 3070.0], Fit::X);
        assert_eq!((x.lo, x.hi), (0.0, 3070.0));
        assert_eq!(labels(&x).last(), Some(&"3000"));
        let y = Axis::linear(&[0.0, 3070.0], Fit::Y);
        assert_eq!((y.lo, y.hi), (0.0, 3500.0));
        // A y axis starts at 0 however far above the data lies; an x axis only when near.
        assert_eq!(Axis::linear(&[2480.0, 3840.0], Fit::Y).lo, 0.0);
        assert_eq!(Axis::linear(&[2480.0, 3840.0], Fit::X).lo, 2480.0);
        assert_eq!(Axis::linear(&[0.05, 0.05], Fit::X).lo, 0.0);
        assert_eq!(
            format_ticks(&[0.0, 500.0, 1000.0], 500.0),
            ["0", "500", "1000"]
        );
    }

    #[test]
    fn fractional_ticks_are_exact_decimals() {
        assert_eq!(
            format_ticks(&[0.1, 0.2, 0.30000000000000004], 0.1),
            ["0.1", "0.2", "0.3"]
        );
        let a = Axis::linear(&[0.0, 0.3], Fit::Y);
        for (v, l) in &a.ticks {
            assert!(l.len() <= 4, "{v} -> {l}");
        }
        assert!(labels(&a).contains(&"0.30"), "{:?}", labels(&a));
        assert_eq!(format_value(0.30000000000000004), "0.3");
        assert_eq!(format_value(0.05), "0.05");
        assert_eq!(format_value(300.0), "300");
    }

    #[test]
    fn large_ticks_are_abbreviated() {
        assert_eq!(
            format_ticks(&[0.0, 50_000.0, 100_000.0], 50_000.0),
            ["0", "50k", "100k"]
        );
        assert_eq!(
            format_ticks(&[0.0, 500_000.0, 1_000_000.0, 1_500_000.0], 500_000.0),
            ["0", "0.5M", "1.0M", "1.5M"]
        );
        assert_eq!(format_value(20_000.0), "20k");
        assert_eq!(format_value(2_500.0), "2500");
    }

    #[test]
    fn a_linear_axis_with_outliers_covers_the_bulk() {
        // 990 values between 20 and 40, ten spikes at 5000.
        let mut v: Vec<f64> = (0..990).map(|i| 20.0 + (i % 21) as f64).collect();
        v.extend([5000.0; 10]);
        let a = Axis::linear(&v, Fit::Y);
        assert!(a.hi < 100.0, "top {}", a.hi);
        assert!(a.hi >= 40.0);
        assert_eq!(a.above, 10);
        let note = a.note().expect("a note on the clipped values");
        assert!(
            note.contains("10 of 1000") && note.contains("5000"),
            "{note}"
        );
        // The bulk spans most of the axis.
        assert!(a.frac(40.0) > 0.6, "{}", a.frac(40.0));
        // Without outliers, everything shows and there is no note.
        let b = Axis::linear(&v[..990], Fit::Y);
        assert!(b.hi >= 40.0 && b.note().is_none());
        // Few points are never clipped.
        let c = Axis::linear(&[1.0, 2.0, 100.0], Fit::Y);
        assert!(c.hi >= 100.0 && c.above == 0);
    }

    #[test]
    fn a_log_axis_labels_where_the_data_is() {
        // Latencies: most between 20 and 30 ms, some at 0.3 ms and 330 ms.
        let mut v: Vec<f64> = (0..1000).map(|i| 20.0 + (i % 10) as f64).collect();
        v.extend([0.3, 330.0]);
        let a = Axis::log(&v, 12);
        let ls = labels(&a);
        assert!(ls.contains(&"20") && ls.contains(&"50"), "{ls:?}");
        assert!(ls.contains(&"0.5") && ls.contains(&"200"), "{ls:?}");
        assert!(a.lo <= 0.3 && a.hi >= 330.0);
        // A narrow range still gets two labels around the data.
        let b = Axis::log(&[23.0, 24.0, 25.0], 12);
        assert!(b.ticks.len() >= 2, "{:?}", b.ticks);
        assert!(b.lo <= 23.0 && b.hi >= 25.0);
        // Wide ranges are labelled per decade, not crowded.
        let c = Axis::log(&[0.001, 1e6], 12);
        assert!(c.ticks.len() <= 13, "{:?}", c.ticks);
        assert!(labels(&c).contains(&"10k"), "{:?}", labels(&c));
        assert!(labels(&c).contains(&"1000"), "{:?}", labels(&c));
    }

    #[test]
    fn sweeps_get_integer_ticks_from_the_data() {
        let a = Axis::linear(&[4.0, 8.0, 12.0, 16.0], Fit::X);
        assert!(a.ticks.iter().all(|t| !t.1.contains('.')), "{:?}", a.ticks);
        let b = Axis::linear(&[2.0, 3.0, 4.0], Fit::X);
        assert!(b.ticks.iter().all(|t| t.0.fract() == 0.0), "{:?}", b.ticks);
    }

    fn entry(name: &str) -> Entry {
        Entry {
            name: name.into(),
            color: color(0),
            mark: Mark::Dots(0),
        }
    }

    #[test]
    fn the_legend_avoids_the_data() {
        let x = Axis::labelled(0.0, 100.0, Vec::new());
        let y = Axis::labelled(0.0, 100.0, Vec::new());
        let entries = [entry("first 1.00 GiB"), entry("first 4.00 MiB")];
        // Data along the top: the legend goes to a lower corner.
        let mut top = Occupied::new();
        let pts: Vec<(f64, f64)> = (0..=100).map(|i| (i as f64, 95.0)).collect();
        top.line(&x, &y, &pts);
        let place = place_legend(&entries, &top, (900, 450));
        assert!(
            matches!(place, Place::Inside { right: true, top } if top < 0.2),
            "{place:?}"
        );
        // A rising line leaves the upper left free.
        let mut rising = Occupied::new();
        let pts: Vec<(f64, f64)> = (0..=100).map(|i| (i as f64, i as f64)).collect();
        rising.line(&x, &y, &pts);
        let place = place_legend(&entries, &rising, (900, 450));
        assert_eq!(
            place,
            Place::Inside {
                right: false,
                top: 1.0
            }
        );
        // Lines along the top and the bottom: the middle of the right edge.
        let mut both = top.clone();
        let pts: Vec<(f64, f64)> = (0..=100).map(|i| (i as f64, 5.0)).collect();
        both.line(&x, &y, &pts);
        let place = place_legend(&entries, &both, (900, 450));
        assert!(
            matches!(place, Place::Inside { right: true, top } if top > 0.3 && top < 0.95),
            "{place:?}"
        );
        // Data everywhere: above the plot.
        let mut full = Occupied::new();
        let pts: Vec<(f64, f64)> = (0..=100)
            .flat_map(|i| (0..=20).map(move |j| (i as f64, j as f64 * 5.0)))
            .collect();
        full.dots(&x, &y, &pts, 0.01);
        assert_eq!(place_legend(&entries, &full, (900, 450)), Place::Above);
    }

    #[test]
    fn the_axis_maps_values_beyond_its_ends_onto_them() {
        let a = Axis::linear(&[0.0, 10.0], Fit::Y);
        assert_eq!(a.frac(-5.0), 0.0);
        assert_eq!(a.frac(1e9), 1.0);
        let l = Axis::log(&[1.0, 100.0], 12);
        assert_eq!(l.frac(0.0), 0.0);
        assert!((l.frac(10.0) - 0.5).abs() < 0.05);
    }
}
