//! Lee's three-point seek curve (the DiskSim `curve` seek type).
//!
//! For a seek of `d ≥ 1` cylinders on a surface of `N` cylinders, with track-to-track time `c`,
//! data-sheet average `avg` and full-stroke `full`:
//! `seek(d) = c + a·sqrt(d−1) + b·(d−1)` with
//! `a = (−10c + 15·avg − 5·full) / (3·sqrt(N))` and `b = (7c − 15·avg + 8·full) / (3·N)`.
//! The average over uniformly random start and end cylinders then equals `avg`.

use crate::error::{DeviceError, Result};
use crate::units::Nanos;
use serde::{Deserialize, Serialize};

/// The three data-sheet points a seek curve is fitted to, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SeekPoints {
    /// Track-to-track seek time.
    pub t2t_ms: f64,
    /// Average seek time over random start and end cylinders.
    pub avg_ms: f64,
    /// Full-stroke seek time.
    pub full_ms: f64,
}

/// A fitted seek curve for a surface of a given number of cylinders.
#[derive(Debug, Clone)]
pub struct SeekCurve {
    c_ns: f64,
    a_ns: f64,
    b_ns: f64,
}

impl SeekCurve {
    /// Fits the curve; fails when the three points give a negative coefficient (then the curve
    /// would not be monotonic and a table of measured points is needed instead).
    pub fn fit(p: SeekPoints, cylinders: u64) -> Result<Self> {
        if cylinders < 2 {
            return Err(DeviceError::Config(format!(
                "a seek curve needs at least 2 cylinders, got {cylinders}"
            )));
        }
        let n = cylinders as f64;
        let (c, avg, full) = (p.t2t_ms, p.avg_ms, p.full_ms);
        if !(c > 0.0 && avg >= c && full >= avg) {
            return Err(DeviceError::Config(format!(
                "seek points must satisfy 0 < t2t ≤ avg ≤ full, got {c} / {avg} / {full} ms"
            )));
        }
        let a = (-10.0 * c + 15.0 * avg - 5.0 * full) / (3.0 * n.sqrt());
        let b = (7.0 * c - 15.0 * avg + 8.0 * full) / (3.0 * n);
        if a < 0.0 || b < 0.0 {
            return Err(DeviceError::Config(format!(
                "seek points {c} / {avg} / {full} ms give a non-monotonic three-point curve (a={a:.4}, b={b:.6})"
            )));
        }
        Ok(SeekCurve {
            c_ns: c * 1e6,
            a_ns: a * 1e6,
            b_ns: b * 1e6,
        })
    }

    /// Seek time for a distance of `d` cylinders (zero for zero).
    #[inline]
    pub fn seek(&self, d: u64) -> Nanos {
        if d == 0 {
            return 0;
        }
        let x = (d - 1) as f64;
        (self.c_ns + self.a_ns * x.sqrt() + self.b_ns * x) as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_hits_the_three_points() {
        let p = SeekPoints {
            t2t_ms: 0.23,
            avg_ms: 7.4,
            full_ms: 15.0,
        };
        let n = 320_800;
        let c = SeekCurve::fit(p, n).expect("fit");
        assert_eq!(c.seek(0), 0);
        assert!((c.seek(1) as f64 - 230_000.0).abs() < 2.0);
        // Full stroke of N-1 cylinders is close to the full point (the formula is exact at d = N+1).
        let full = c.seek(n) as f64 / 1e6;
        assert!((full - 15.0).abs() < 0.05, "full stroke {full}");
    }

    #[test]
    fn mean_over_random_pairs_is_the_data_sheet_average() {
        let p = SeekPoints {
            t2t_ms: 0.32,
            avg_ms: 8.2,
            full_ms: 16.0,
        };
        let n: u64 = 10_000;
        let c = SeekCurve::fit(p, n).expect("fit");
        // Exact mean over all ordered pairs of cylinders: P(d) = 2(n-d)/n² for d ≥ 1.
        let mut sum = 0.0;
        for d in 1..n {
            sum += c.seek(d) as f64 * 2.0 * (n - d) as f64 / (n as f64 * n as f64);
        }
        let mean_ms = sum / 1e6;
        assert!((mean_ms - 8.2).abs() / 8.2 < 0.01, "mean {mean_ms}");
    }

    #[test]
    fn bad_points_are_rejected() {
        assert!(SeekCurve::fit(
            SeekPoints {
                t2t_ms: 1.0,
                avg_ms: 0.5,
                full_ms: 2.0
            },
            100
        )
        .is_err());
        assert!(SeekCurve::fit(
            SeekPoints {
                t2t_ms: 0.1,
                avg_ms: 10.0,
                full_ms: 10.5
            },
            100
        )
        .is_err());
        assert!(SeekCurve::fit(
            SeekPoints {
                t2t_ms: 0.1,
                avg_ms: 1.0,
                full_ms: 2.0
            },
            1
        )
        .is_err());
    }
}
