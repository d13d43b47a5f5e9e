//! Axes fitted to their data ([`Axis::linear`], [`Axis::log`]) and their plotters coordinate.

use crate::*;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use std::ops::Range;

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
