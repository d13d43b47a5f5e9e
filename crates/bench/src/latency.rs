//! A latency histogram cheap enough to record every operation into: log-linear buckets (128
//! per power of two of nanoseconds, so a bucket's width is at most 1/128 of its values), an
//! exact count, sum and maximum. Recording costs a handful of instructions and one counter
//! increment; the buckets of a power of two are allocated when the first latency falls into
//! it, so that a histogram costs little to make (a phase makes several per thread). At the
//! end of a phase the percentiles come from the buckets ([`LatencyHist::quantile`]), or the
//! buckets become an HDR histogram ([`LatencyHist::to_hdr`]).

use crate::error::{Error, Result};
use hdrhistogram::Histogram;

/// Sub-buckets per power of two, as a number of bits.
const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
/// Rows of [`SUB`] buckets: values below [`SUB`] exactly, then one row per power of two up to
/// 2^64.
const ROWS: usize = 64 - SUB_BITS as usize + 1;
/// Buckets in all.
#[cfg(test)]
const BUCKETS: usize = ROWS * SUB;

/// Counts of latencies in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyHist {
    rows: Vec<Option<Box<[u64; SUB]>>>,
    len: u64,
    sum: u128,
    max: u64,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist {
            rows: vec![None; ROWS],
            len: 0,
            sum: 0,
            max: 0,
        }
    }
}

/// The bucket of `ns`.
#[inline]
fn index(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros(); // >= SUB_BITS
    let shift = e - SUB_BITS;
    ((shift as usize + 1) << SUB_BITS) + ((ns >> shift) as usize & (SUB - 1))
}

/// The smallest value of bucket `i` and the bucket's width.
fn bucket(i: usize) -> (u64, u64) {
    if i < SUB {
        return (i as u64, 1);
    }
    let shift = (i >> SUB_BITS) as u32 - 1;
    let sub = (i & (SUB - 1)) as u64;
    ((SUB as u64 + sub) << shift, 1u64 << shift)
}

impl LatencyHist {
    /// Counts one latency of `ns` nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let i = index(ns);
        match &mut self.rows[i >> SUB_BITS] {
            Some(row) => row[i & (SUB - 1)] += 1,
            None => self.first_in_row(i),
        }
        self.len += 1;
        self.sum += ns as u128;
        if ns > self.max {
            self.max = ns;
        }
    }

    #[cold]
    fn first_in_row(&mut self, i: usize) {
        let mut row = Box::new([0u64; SUB]);
        row[i & (SUB - 1)] = 1;
        self.rows[i >> SUB_BITS] = Some(row);
    }

    /// Every non-empty bucket in order: (index, count).
    fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.rows.iter().enumerate().flat_map(|(r, row)| {
            row.iter().flat_map(move |row| {
                row.iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(move |(j, &n)| ((r << SUB_BITS) + j, n))
            })
        })
    }

    /// The latency at quantile `q` (0 to 1) in nanoseconds: the middle of the bucket holding
    /// the `ceil(q * len)`-th smallest latency (the first for `q = 0`), or the exact maximum
    /// when that is in the last bucket; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.len == 0 {
            return 0;
        }
        let want = ((q.clamp(0.0, 1.0) * self.len as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.buckets() {
            seen += n;
            if seen >= want {
                if seen == self.len {
                    // The last bucket: it holds the maximum, which is exact.
                    return self.max;
                }
                let (lo, width) = bucket(i);
                return (lo + width / 2).min(self.max);
            }
        }
        self.max
    }

    /// Latencies counted.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The exact mean in nanoseconds (0 when empty).
    pub fn mean_ns(&self) -> f64 {
        if self.len == 0 {
            0.0
        } else {
            self.sum as f64 / self.len as f64
        }
    }

    /// The exact maximum in nanoseconds.
    pub fn max_ns(&self) -> u64 {
        self.max
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &LatencyHist) {
        for (a, b) in self.rows.iter_mut().zip(other.rows.iter()) {
            match (a, b) {
                (_, None) => {}
                (a @ None, Some(b)) => *a = Some(b.clone()),
                (Some(a), Some(b)) => {
                    for (x, y) in a.iter_mut().zip(b.iter()) {
                        *x += y;
                    }
                }
            }
        }
        self.len += other.len;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }

    /// The counts as an HDR histogram (1 ns to 1 hour, 3 significant digits), each bucket
    /// recorded at its middle, for percentiles.
    pub fn to_hdr(&self) -> Result<Histogram<u64>> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
            .map_err(|e| Error::internal(format!("creating a latency histogram: {e}")))?;
        for (i, n) in self.buckets() {
            let (lo, width) = bucket(i);
            h.saturating_record_n((lo + width / 2).max(1), n);
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order_and_narrowly() {
        let mut prev = 0;
        for ns in [
            0u64,
            1,
            127,
            128,
            129,
            255,
            256,
            1000,
            12_345,
            1 << 40,
            u64::MAX,
        ] {
            let i = index(ns);
            assert!(i < BUCKETS, "{ns}");
            assert!(i >= prev, "{ns}");
            prev = i;
            let (lo, width) = bucket(i);
            assert!(lo <= ns && ns - lo < width, "{ns}: bucket {lo} + {width}");
            assert!(width <= 1.max(ns / SUB as u64), "{ns}: width {width}");
        }
    }

    #[test]
    fn percentiles_mean_and_max_survive_the_conversion() {
        let mut h = LatencyHist::default();
        for ns in 1..=10_000u64 {
            h.record(ns * 100);
        }
        let mut other = LatencyHist::default();
        other.record(5_000_000);
        h.add(&other);
        assert_eq!(h.len(), 10_001);
        assert_eq!(h.max_ns(), 5_000_000);
        let hdr = h.to_hdr().expect("hdr");
        assert_eq!(hdr.len(), 10_001);
        let p50 = hdr.value_at_quantile(0.5) as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.01, "p50 {p50}");
        let mean = h.mean_ns();
        assert!((mean - (5_000.5 * 100.0 * 10_000.0 + 5e6) / 10_001.0).abs() < 1.0);
        // The buckets' own quantiles agree with the HDR histogram's to its precision.
        for q in [0.0, 0.5, 0.99, 0.999, 1.0] {
            let a = h.quantile(q) as f64;
            let b = hdr.value_at_quantile(q) as f64;
            assert!((a - b).abs() <= b * 0.002 + 1.0, "q {q}: {a} vs {b}");
        }
        assert_eq!(h.quantile(1.0), 5_000_000);
        assert_eq!(LatencyHist::default().quantile(0.5), 0);
    }
}
