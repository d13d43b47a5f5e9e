//! YCSB's request generators, ported from its `site.ycsb.generator` package: the Zipfian
//! generator of Gray et al. ("Quickly generating billion-record synthetic databases"), the
//! scrambled Zipfian that spreads the popular items over the key space with an FNV hash, the
//! skewed-latest generator that favours recently inserted items, and the acknowledged insert
//! counter those read from.

use rand::Rng;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// YCSB's default Zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// Item count of the scrambled Zipfian generator's underlying Zipfian (YCSB's `ITEM_COUNT`).
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;

/// zeta(10^10, 0.99), precomputed as YCSB does (`ScrambledZipfianGenerator.ZETAN`).
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the eight bytes of `val`, low byte first, made
/// non-negative as Java's `Math.abs` would (on a signed 64-bit value).
pub fn fnvhash64(val: u64) -> u64 {
    let mut v = val;
    let mut h = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        h ^= v & 0xff;
        v >>= 8;
        h = h.wrapping_mul(FNV_PRIME_64);
    }
    // Java's Math.abs(Long.MIN_VALUE) is Long.MIN_VALUE; keep the bits in that one case.
    (h as i64).wrapping_abs() as u64
}

/// zeta(n, theta) = sum over i in 1..=n of 1 / i^theta, continued from `initial` at `st`.
fn zeta_from(st: u64, n: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in st..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// YCSB's `ZipfianGenerator`: item `base + i` has popularity proportional to 1/(i+1)^theta.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    base: u64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    countforzeta: u64,
}

impl Zipfian {
    /// Items `min..=max` with the default constant.
    pub fn new(min: u64, max: u64) -> Self {
        Self::with_constant(min, max, ZIPFIAN_CONSTANT)
    }

    /// Items `min..=max` with Zipfian constant `theta` (computes zeta(n), O(n)).
    pub fn with_constant(min: u64, max: u64, theta: f64) -> Self {
        let items = max - min + 1;
        Self::with_zetan(min, max, theta, zeta_from(0, items, theta, 0.0))
    }

    /// Items `min..=max` with a precomputed zeta(n, theta).
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Self {
        let items = max - min + 1;
        let zeta2theta = zeta_from(0, 2, theta, 0.0);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan);
        Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            countforzeta: items,
        }
    }

    /// Number of items.
    pub fn items(&self) -> u64 {
        self.items
    }

    fn sample(&self, u: f64, itemcount: u64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }

    /// The next item.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.sample(rng.gen::<f64>(), self.countforzeta)
    }

    /// The next item out of the first `itemcount` (YCSB's `nextLong(itemcount)`): the zeta
    /// constant is extended incrementally when the count grows. As in YCSB, `eta` keeps using
    /// the construction-time item count.
    pub fn next_of<R: Rng + ?Sized>(&mut self, rng: &mut R, itemcount: u64) -> u64 {
        if itemcount > self.countforzeta {
            self.zetan = zeta_from(self.countforzeta, itemcount, self.theta, self.zetan);
            self.countforzeta = itemcount;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        self.sample(rng.gen::<f64>(), itemcount)
    }
}

/// YCSB's `ScrambledZipfianGenerator`: Zipfian popularity, but the popular items are scattered
/// over `min..=max` by hashing a draw from a fixed 10^10-item Zipfian.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    min: u64,
    itemcount: u64,
    gen: Zipfian,
}

impl ScrambledZipfian {
    /// Items `min..=max` with the default constant (uses YCSB's precomputed zeta).
    pub fn new(min: u64, max: u64) -> Self {
        ScrambledZipfian {
            min,
            itemcount: max - min + 1,
            gen: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
        }
    }

    /// The next item.
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.min + fnvhash64(self.gen.next(rng)) % self.itemcount
    }
}

/// YCSB's `AcknowledgedCounterGenerator`: hands out insert numbers and reports as
/// `last_value` the highest number below which every insert has been acknowledged, so readers
/// never ask for a record that is not written yet.
#[derive(Debug)]
pub struct AckCounter {
    next: AtomicU64,
    state: Mutex<AckState>,
}

#[derive(Debug)]
struct AckState {
    limit: u64,
    pending: BTreeSet<u64>,
}

impl AckCounter {
    /// A counter whose first value is `start` (so `last_value` starts at `start - 1`).
    pub fn new(start: u64) -> Self {
        AckCounter {
            next: AtomicU64::new(start),
            state: Mutex::new(AckState {
                limit: start.wrapping_sub(1),
                pending: BTreeSet::new(),
            }),
        }
    }

    /// The next insert number.
    pub fn next_value(&self) -> u64 {
        self.next.fetch_add(1, Ordering::SeqCst)
    }

    /// Marks insert `v` as done.
    pub fn acknowledge(&self, v: u64) {
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        s.pending.insert(v);
        loop {
            let want = s.limit.wrapping_add(1);
            if s.pending.remove(&want) {
                s.limit = want;
            } else {
                break;
            }
        }
    }

    /// Highest number with every number up to it acknowledged.
    pub fn last_value(&self) -> u64 {
        self.state.lock().map(|s| s.limit).unwrap_or(0)
    }
}

/// YCSB's `SkewedLatestGenerator`: Zipfian over the distance from the latest acknowledged
/// insert, so the newest records are the most popular.
#[derive(Debug)]
pub struct SkewedLatest {
    zipf: Mutex<Zipfian>,
}

impl SkewedLatest {
    /// A generator over the records of `basis` (O(n) in its current count to set up).
    pub fn new(basis: &AckCounter) -> Self {
        let last = basis.last_value().max(1);
        SkewedLatest {
            zipf: Mutex::new(Zipfian::new(0, last - 1)),
        }
    }

    /// The next record number (at most `basis.last_value()`).
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R, basis: &AckCounter) -> u64 {
        let max = basis.last_value();
        let off = match self.zipf.lock() {
            Ok(mut z) => z.next_of(rng, max.max(1)),
            Err(_) => 0,
        };
        max.saturating_sub(off)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn fnv_matches_ycsb_reference_values() {
        // Values of YCSB's Java fnvhash64 (signed arithmetic, Math.abs), recomputed
        // independently in Python.
        assert_eq!(fnvhash64(0), 0x5738_07cd_d7e5_c63b);
        assert_eq!(fnvhash64(1), 0x7632_ced6_e2d5_105c);
        assert_eq!(fnvhash64(12345), 0x18e1_4e7a_1d12_33b4);
        assert_eq!(fnvhash64(1 << 40), 0x5fe1_82cd_dccd_c4e6);
    }

    #[test]
    fn scrambled_zeta_constant_is_zeta_of_ten_billion() {
        // Check the precomputed constant's leading part against a direct partial sum plus the
        // integral tail estimate: both must agree to a few parts in a thousand.
        let head = zeta_from(0, 1_000_000, ZIPFIAN_CONSTANT, 0.0);
        let s = 1.0 - ZIPFIAN_CONSTANT;
        let tail = ((1e10f64).powf(s) - (1e6f64).powf(s)) / s;
        let est = head + tail;
        assert!(
            (est - SCRAMBLED_ZETAN).abs() / SCRAMBLED_ZETAN < 3e-3,
            "{est}"
        );
    }

    #[test]
    fn zipfian_favours_small_items_with_the_expected_shape() {
        let n = 1000u64;
        let z = Zipfian::new(0, n - 1);
        let mut rng = SmallRng::seed_from_u64(7);
        let draws = 200_000;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!(v < n);
            counts[v as usize] += 1;
        }
        // P(0) = 1/zeta(n); P(1) = 2^-theta / zeta(n).
        let zn = zeta_from(0, n, ZIPFIAN_CONSTANT, 0.0);
        let p0 = counts[0] as f64 / draws as f64;
        assert!((p0 - 1.0 / zn).abs() < 0.01, "p0 {p0} vs {}", 1.0 / zn);
        let p1 = counts[1] as f64 / draws as f64;
        let want1 = 0.5f64.powf(ZIPFIAN_CONSTANT) / zn;
        assert!((p1 - want1).abs() < 0.01, "p1 {p1} vs {want1}");
        // Monotone on average: the first decile gets far more than the last.
        let first: u64 = counts[..100].iter().sum();
        let last: u64 = counts[900..].iter().sum();
        assert!(first > 10 * last, "first {first} last {last}");
    }

    #[test]
    fn scrambled_zipfian_covers_the_key_space_and_stays_skewed() {
        let n = 10_000u64;
        let z = ScrambledZipfian::new(0, n - 1);
        let mut rng = SmallRng::seed_from_u64(11);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..500_000 {
            let v = z.next(&mut rng);
            assert!(v < n);
            counts[v as usize] += 1;
        }
        let covered = counts.iter().filter(|&&c| c > 0).count();
        assert!(covered as f64 > 0.6 * n as f64, "covered {covered}");
        // Every tenth of the key space gets traffic (the hot items are scattered).
        for d in 0..10 {
            let s: u64 = counts[d * 1000..(d + 1) * 1000].iter().sum();
            assert!(s > 10_000, "decile {d} got {s}");
        }
        // Still skewed: the hottest item gets far more than the average.
        let max = counts.iter().copied().max().unwrap_or(0);
        assert!(max as f64 > 50.0 * 500_000.0 / n as f64, "max {max}");
    }

    #[test]
    fn ack_counter_reports_the_contiguous_prefix() {
        let c = AckCounter::new(100);
        assert_eq!(c.last_value(), 99);
        let a = c.next_value();
        let b = c.next_value();
        assert_eq!((a, b), (100, 101));
        c.acknowledge(b);
        assert_eq!(c.last_value(), 99);
        c.acknowledge(a);
        assert_eq!(c.last_value(), 101);
    }

    #[test]
    fn latest_favours_recent_keys_and_follows_inserts() {
        let c = AckCounter::new(10_000);
        let g = SkewedLatest::new(&c);
        let mut rng = SmallRng::seed_from_u64(3);
        let draws = 100_000;
        let mut recent = 0;
        for _ in 0..draws {
            let v = g.next(&mut rng, &c);
            assert!(v <= 9_999);
            if v >= 9_900 {
                recent += 1;
            }
        }
        // The newest 1% of the records get the bulk of the reads.
        assert!(recent as f64 > 0.5 * draws as f64, "recent {recent}");
        for _ in 0..500 {
            let v = c.next_value();
            c.acknowledge(v);
        }
        let mut newest = 0;
        for _ in 0..10_000 {
            let v = g.next(&mut rng, &c);
            assert!(v <= 10_499);
            if v >= 10_000 {
                newest += 1;
            }
        }
        assert!(newest > 5_000, "newest {newest}");
    }
}
