//! Throughput over device time: db_bench's operations against the drive's clock, in windows
//! of device time.

use super::db_bench::Phase;
use super::sampler::{device_at, Sample};
use serde::Serialize;

/// Throughput in one window of device time.
#[derive(Clone, Debug, Serialize)]
pub(super) struct Window {
    /// Device seconds from the start of the run to the window's start.
    pub device_start_s: f64,
    /// Device seconds from the start of the run to the window's end.
    pub device_end_s: f64,
    /// Operations done while the drive's clock crossed the window (interpolated).
    pub ops: f64,
    /// Operations per device second.
    pub ops_per_device_s: f64,
}

/// Operations done by wall time `t`: db_bench's one-second reports give the count at each
/// report; between reports (and from the last report to the end of the process) the count is
/// interpolated linearly; before a process's benchmark starts it is the previous total.
pub(super) fn ops_at(phases: &[Phase], t: f64) -> f64 {
    let mut done = 0.0;
    for p in phases {
        if t <= p.wall_origin {
            return done;
        }
        let mut pts = vec![(p.wall_origin, 0.0)];
        let mut cum = 0.0;
        for &(s, ops) in &p.reports {
            cum += ops;
            pts.push(((p.wall_origin + s).min(p.wall_end), cum.min(p.ops as f64)));
        }
        pts.push((p.wall_end, p.ops as f64));
        if t < p.wall_end {
            let i = pts.partition_point(|q| q.0 < t).clamp(1, pts.len() - 1);
            let (a, b) = (pts[i - 1], pts[i]);
            let f = if b.0 > a.0 {
                (t - a.0) / (b.0 - a.0)
            } else {
                1.0
            };
            return done + a.1 + (b.1 - a.1) * f.clamp(0.0, 1.0);
        }
        done += p.ops as f64;
    }
    done
}

/// Throughput over device time: windows of `width` device seconds from the start of the first
/// db_bench to the end of the last; each window's operations are the cumulative count
/// (`ops_at`, per 20 ms clock sample) interpolated at the window's edges. The gaps between
/// benchmarks (db_bench opening the database) are windows with few or no operations.
pub(super) fn windows(phases: &[Phase], samples: &[Sample], dev0: f64, width: f64) -> Vec<Window> {
    let Some(last) = phases.last() else {
        return Vec::new();
    };
    let pts: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.wall_s <= last.wall_end)
        .map(|s| ((s.device_ns as f64 - dev0) / 1e9, ops_at(phases, s.wall_s)))
        .chain(std::iter::once((
            (device_at(samples, last.wall_end) - dev0) / 1e9,
            ops_at(phases, last.wall_end),
        )))
        .collect();
    let end = pts.last().map_or(0.0, |p| p.0);
    // Operations done by device time `d`: the count at the first sample that reached `d`,
    // interpolated from the one before (the drive's clock only moves while it works).
    let at = |d: f64| -> f64 {
        let i = pts.partition_point(|p| p.0 < d);
        if i == 0 {
            return pts.first().map_or(0.0, |p| p.1);
        }
        if i >= pts.len() {
            return pts.last().map_or(0.0, |p| p.1);
        }
        let (a, b) = (pts[i - 1], pts[i]);
        if b.0 <= a.0 {
            b.1
        } else {
            a.1 + (b.1 - a.1) * (d - a.0) / (b.0 - a.0)
        }
    };
    let mut out = Vec::new();
    let mut t = 0.0;
    while t < end {
        let e = (t + width).min(end);
        if e - t >= width * 0.5 {
            let ops = at(e) - at(t);
            out.push(Window {
                device_start_s: t,
                device_end_s: e,
                ops,
                ops_per_device_s: ops / (e - t),
            });
        }
        t += width;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(ops: u64, origin: f64, end: f64, reports: Vec<(f64, f64)>) -> Phase {
        Phase {
            benchmark: "fillrandom".into(),
            line: String::new(),
            ops,
            wall_start: origin,
            wall_origin: origin,
            wall_end: end,
            reports,
        }
    }

    #[test]
    fn operations_follow_the_reports_and_windows_the_clock() {
        let p = vec![phase(300, 0.0, 3.0, vec![(1.0, 100.0), (2.0, 100.0)])];
        assert_eq!(ops_at(&p, 1.0), 100.0);
        assert_eq!(ops_at(&p, 2.5), 250.0);
        assert_eq!(ops_at(&p, 9.0), 300.0);
        // The drive's clock runs at 1 device s per wall s.
        let samples: Vec<Sample> = (0..=30)
            .map(|i| Sample {
                wall_s: i as f64 * 0.1,
                device_ns: i * 100_000_000,
                read: 0,
                written: 0,
            })
            .collect();
        let w = windows(&p, &samples, 0.0, 1.0);
        assert_eq!(w.len(), 3);
        let total: f64 = w.iter().map(|x| x.ops).sum();
        assert!((total - 300.0).abs() < 1e-6, "{w:?}");
        assert!((w[0].ops_per_device_s - 100.0).abs() < 1e-6, "{w:?}");
    }
}
