//! Small statistics over latency samples (milliseconds): order statistics, spread, outliers,
//! and the detection of a sustained latency collapse.

/// Median of `v` (0 for an empty slice).
pub fn median(v: &[f64]) -> f64 {
    quantile(v, 0.5)
}

/// The `q`-quantile of `v` by linear interpolation (0 for an empty slice).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return 0.0;
    }
    s.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
}

/// Arithmetic mean (0 for an empty slice).
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Population standard deviation.
pub fn sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt()
}

/// A robust coefficient of variation: the interquartile range over the median. Fixed
/// latencies give ~0; random seeks and rotations give ~0.5 or more.
pub fn spread(v: &[f64]) -> f64 {
    let m = median(v);
    if m <= 0.0 {
        return f64::INFINITY;
    }
    (quantile(v, 0.75) - quantile(v, 0.25)) / m
}

/// Indices of samples above `factor` times the median and above `floor` (isolated slow
/// operations such as map merges).
pub fn outliers(v: &[f64], factor: f64, floor: f64) -> Vec<usize> {
    let m = median(v);
    (0..v.len())
        .filter(|&i| v[i] > m * factor && v[i] > floor)
        .collect()
}

/// Indices of operations slower than a fixed latency allows: above the median by more than
/// eight interquartile ranges, 50% and 5 ms (a map merge, even of a small map, on a drive
/// whose writes otherwise take the same time).
pub fn slow_ops(v: &[f64]) -> Vec<usize> {
    let m = median(v);
    let iqr = quantile(v, 0.75) - quantile(v, 0.25);
    let thr = m + (8.0 * iqr).max(0.5 * m).max(5.0);
    (0..v.len()).filter(|&i| v[i] > thr).collect()
}

/// Whether `a` and `b` agree within a relative tolerance `tol` of the larger.
pub fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs())
}

/// Detects a sustained collapse of throughput in a stream of latencies: the first index from
/// which at least `need` of `window` consecutive operations are slower than `threshold`.
/// Isolated slow operations (map merges) do not count.
pub struct Collapse {
    threshold: f64,
    window: usize,
    need: usize,
    recent: std::collections::VecDeque<(usize, bool)>,
}

impl Collapse {
    /// A detector: slow means above `threshold` ms; a collapse is `need` slow among `window`.
    pub fn new(threshold: f64, window: usize, need: usize) -> Self {
        Collapse {
            threshold,
            window: window.max(1),
            need: need.clamp(1, window.max(1)),
            recent: std::collections::VecDeque::new(),
        }
    }

    /// Feeds operation `i` with latency `ms`; returns the index where the collapse began once
    /// it is established.
    pub fn push(&mut self, i: usize, ms: f64) -> Option<usize> {
        self.recent.push_back((i, ms > self.threshold));
        if self.recent.len() > self.window {
            self.recent.pop_front();
        }
        let slow = self.recent.iter().filter(|x| x.1).count();
        if slow >= self.need {
            return self.recent.iter().find(|x| x.1).map(|x| x.0);
        }
        None
    }
}

/// The period of a periodic event among `idx` (sorted indices, possibly with strays): the
/// spacing that puts the most events on one arithmetic progression (ties: the shorter), with
/// how many events lie on it.
pub fn period(idx: &[usize]) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for (a, &x) in idx.iter().enumerate() {
        for &y in &idx[a + 1..] {
            let p = y - x;
            if p < 2 {
                continue;
            }
            let on = idx.iter().filter(|&&z| z >= x && (z - x) % p == 0).count();
            best = match best {
                Some((bp, bn)) if bn > on || (bn == on && bp <= p) => Some((bp, bn)),
                _ => Some((p, on)),
            };
        }
    }
    best
}

/// A periodic slow operation that passed the checks of [`periodic_slow`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Periodic {
    /// The spacing, in operations.
    pub period: usize,
    /// Index of the first beat.
    pub first: usize,
    /// Number of beats (every one present from the first to the end of the run).
    pub beats: usize,
    /// The fastest beat's latency, ms.
    pub latency_ms: f64,
    /// The noise floor: the 99th percentile of every other operation, ms.
    pub floor_ms: f64,
    /// Median latency of every other operation, ms.
    pub median_ms: f64,
    /// Operations off the beat as slow as the fastest beat.
    pub intruders: usize,
    /// Expected number of progressions this long among that many equally slow operations by
    /// chance.
    pub chance: f64,
}

/// Why [`periodic_slow`] found no periodic slow operation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NotPeriodic {
    /// Too few slow operations to form a progression.
    #[error("{slow} slow operation(s) in {ops}, {needed} needed")]
    TooFew {
        /// Slow operations found.
        slow: usize,
        /// Operations in all.
        ops: usize,
        /// Beats needed.
        needed: usize,
    },
    /// No period has every beat present.
    #[error("no period with every beat present")]
    NoPeriod,
    /// A period was found, but its beats are not well above the noise floor.
    #[error(
        "every {period}th operation is slow ({latency_ms:.0} ms at least) but not well above the noise floor (99th percentile of the others {floor_ms:.0} ms, median {median_ms:.0} ms)"
    )]
    InNoise {
        /// The period.
        period: usize,
        /// The fastest beat's latency.
        latency_ms: f64,
        /// The 99th percentile of the other operations.
        floor_ms: f64,
        /// The median of the other operations.
        median_ms: f64,
    },
    /// A period was found, but other operations are as slow: it may be chance.
    #[error(
        "every {period}th operation is slow ({beats} beats) but {intruders} other operation(s) are as slow: a progression that long arises by chance (expected {chance:.2})"
    )]
    Chance {
        /// The period.
        period: usize,
        /// Its beats.
        beats: usize,
        /// Other operations as slow as the fastest beat.
        intruders: usize,
        /// Expected count of such progressions by chance.
        chance: f64,
    },
}

/// Largest chance of a spurious progression [`periodic_slow`] accepts.
pub const MAX_CHANCE: f64 = 0.01;

/// Finds an operation that is slow every `period`-th time in `lat` (a map merge) and checks
/// that it is one, not host noise: (1) the period is consistent, every beat present from the
/// first (which lies within the first period, or after unmeasured places only) to the end of the run, at least `min_beats`
/// of them (an operation not measured, NaN, is neither a beat nor a missing one); (2) the beats' latency is well separated from the noise floor of the same run
/// (the fastest beat exceeds the median by at least three times what the 99th percentile of
/// every other operation does); (3) the progression is not chance: among the operations at
/// least as slow as the fastest beat, a progression that long would arise by chance with an
/// expected count under [`MAX_CHANCE`]. `Err` says why nothing qualified.
pub fn periodic_slow(lat: &[f64], min_beats: usize) -> Result<Periodic, NotPeriodic> {
    let n = lat.len();
    let slow = slow_ops(lat);
    if slow.len() < min_beats.max(2) {
        return Err(NotPeriodic::TooFew {
            slow: slow.len(),
            ops: n,
            needed: min_beats.max(2),
        });
    }
    let known = lat.iter().filter(|l| l.is_finite()).count().max(1);
    let is_slow = {
        let mut v = vec![false; n];
        for &i in &slow {
            v[i] = true;
        }
        v
    };
    let mut why = NotPeriodic::NoPeriod;
    let mut best: Option<Periodic> = None;
    for (a, &x) in slow.iter().enumerate() {
        for &y in &slow[a + 1..] {
            let p = y - x;
            // The first beat lies within the first period, or every place before it in the
            // progression was not measured.
            if p < 2 || (x >= p && (x % p..x).step_by(p).any(|i| lat[i].is_finite())) {
                continue;
            }
            // Unknown operations (NaN: not measured) neither make nor break a beat.
            let beats: Vec<usize> = (x..n).step_by(p).filter(|&i| lat[i].is_finite()).collect();
            if beats.len() < min_beats || !beats.iter().all(|&i| is_slow[i]) {
                continue;
            }
            if best.is_some_and(|b| b.beats >= beats.len()) {
                continue;
            }
            let on: Vec<f64> = beats.iter().map(|&i| lat[i]).collect();
            let l = on.iter().copied().fold(f64::INFINITY, f64::min);
            let others: Vec<f64> = (0..n)
                .filter(|i| *i < x || !(i - x).is_multiple_of(p))
                .map(|i| lat[i])
                .filter(|l| l.is_finite())
                .collect();
            let med = median(&others);
            let floor = quantile(&others, 0.99);
            let intruders = others.iter().filter(|&&o| o >= l).count();
            let d = (beats.len() + intruders) as f64 / known as f64;
            let k = beats.len() as f64;
            let chance = (known as f64) * (known as f64) / k * d.powf(k);
            if l - med < 3.0 * (floor - med).max(0.0) || l <= floor {
                why = NotPeriodic::InNoise {
                    period: p,
                    latency_ms: l,
                    floor_ms: floor,
                    median_ms: med,
                };
                continue;
            }
            if chance >= MAX_CHANCE {
                why = NotPeriodic::Chance {
                    period: p,
                    beats: beats.len(),
                    intruders,
                    chance,
                };
                continue;
            }
            best = Some(Periodic {
                period: p,
                first: x,
                beats: beats.len(),
                latency_ms: l,
                floor_ms: floor,
                median_ms: med,
                intruders,
                chance,
            });
        }
    }
    // Every other beat of a period can clear the noise rule where the period itself does not
    // (its slowest beats are higher): a progression whose divisor's beats are all slow is that
    // divisor's.
    if let Some(b) = best.as_mut() {
        for k in (2..=b.period / 2).rev() {
            if b.period % k != 0 || b.period / k < 2 {
                continue;
            }
            let d = b.period / k;
            let first = b.first % d;
            let beats: Vec<usize> = (first..n)
                .step_by(d)
                .filter(|&i| lat[i].is_finite())
                .collect();
            if beats.len() > b.beats && beats.iter().all(|&i| is_slow[i]) {
                b.latency_ms = beats.iter().map(|&i| lat[i]).fold(f64::INFINITY, f64::min);
                b.period = d;
                b.first = first;
                b.beats = beats.len();
                break;
            }
        }
    }
    best.ok_or(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_is_not_taken_for_its_double() {
        // Merges every 213th write, alternately 106 and 97 ms, over writes of 59-62 ms with one
        // of 74 every 61st: the odd beats alone clear the noise rule, the whole period
        // must be reported.
        let mut v: Vec<f64> = (0..1520)
            .map(|i| {
                if i % 61 == 0 {
                    74.0
                } else {
                    59.0 + (i % 4) as f64
                }
            })
            .collect();
        for (j, i) in (211..1520).step_by(213).enumerate() {
            v[i] = if j % 2 == 0 { 106.0 } else { 97.0 };
        }
        let p = periodic_slow(&v, 3).unwrap();
        assert_eq!((p.period, p.first), (213, 211));
    }

    #[test]
    fn a_period_survives_unmeasured_stretches() {
        // A merge every 50th write; writes 120-179 were not measured (the drive cleaned
        // under them), one of them a beat.
        let mut v: Vec<f64> = (0..400).map(|i| 1.0 + (i % 7) as f64 * 0.01).collect();
        for i in (10..400).step_by(50) {
            v[i] = 40.0;
        }
        v[120..180].fill(f64::NAN);
        let p = periodic_slow(&v, 3).unwrap();
        assert_eq!((p.period, p.first, p.beats), (50, 10, 7));
        // A first beat after unmeasured places only (the first period was not measured).
        let mut w = v.clone();
        w[..40].fill(f64::NAN);
        assert_eq!(
            periodic_slow(&w, 3).map(|p| (p.period, p.first)).ok(),
            Some((50, 60))
        );
        // A missing beat among measured writes still breaks the period.
        v[310] = 1.0;
        assert_ne!(periodic_slow(&v, 3).map(|p| p.period).ok(), Some(50));
    }

    #[test]
    fn order_statistics_and_spread() {
        let v = [1.0, 2.0, 3.0, 4.0, 100.0];
        assert_eq!(median(&v), 3.0);
        assert_eq!(quantile(&v, 0.25), 2.0);
        assert!(spread(&[10.0; 20]) < 1e-9);
        assert!(spread(&[1.0, 5.0, 9.0, 3.0, 7.0]) > 0.5);
        assert_eq!(outliers(&[1.0, 1.0, 1.0, 10.0, 1.0], 5.0, 2.0), vec![3]);
        assert!(close(100.0, 104.0, 0.05));
        assert!(!close(100.0, 110.0, 0.05));
    }

    #[test]
    fn a_collapse_is_sustained_slowness_not_one_slow_operation() {
        let mut c = Collapse::new(100.0, 8, 5);
        let mut lat = vec![10.0; 50];
        lat[20] = 300.0; // a map merge
        for l in &mut lat[30..50] {
            *l = 500.0;
        }
        let onset = lat.iter().enumerate().find_map(|(i, &l)| c.push(i, l));
        assert_eq!(onset, Some(30));
    }

    #[test]
    fn period_of_regular_events() {
        assert_eq!(period(&[239, 479, 719, 959]), Some((240, 4)));
        // A stray slow write (wall-clock noise) does not set the period.
        assert_eq!(period(&[31, 271, 413, 511]), Some((240, 3)));
        assert_eq!(period(&[5]), None);
    }

    #[test]
    fn a_map_merge_is_periodic_and_above_the_noise() {
        // Merges of 200 ms every 240th write over writes of 30 ms.
        let mut lat = vec![30.0; 1100];
        for i in (100..1100).step_by(240) {
            lat[i] = 200.0;
        }
        let p = periodic_slow(&lat, 4).expect("merge");
        assert_eq!((p.period, p.first, p.beats), (240, 100, 5));
        // Host pauses of 60 ms at a spacing of 24 for a while: not a period of the run.
        let mut noisy = vec![30.0; 300];
        for i in [127, 140, 164, 188, 212, 236, 260, 284] {
            noisy[i] = 60.0;
        }
        assert!(periodic_slow(&noisy, 4).is_err());
        // The merges among frequent host pauses as slow as they are: not trusted.
        let mut rng = 12345u64;
        for (i, l) in lat.iter_mut().enumerate() {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if (rng >> 33).is_multiple_of(10) && (i < 100 || !(i - 100).is_multiple_of(240)) {
                *l = 250.0;
            }
        }
        assert!(periodic_slow(&lat, 4).is_err());
    }
}
