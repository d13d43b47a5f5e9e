//! Which operations of a benchmark thread are timed. Reading the clock costs 25-90 ns on the
//! machines this runs on (`clock_gettime` through the vDSO), which is 5-20% of a `readseq` step
//! of RocksDB or SMRDB (0.3-0.6 µs): timing every operation would make the harness measure
//! itself. So an [`OpClock`] times every operation while operations are slow, and a random
//! sample of them once they are fast: one operation in `k` on average, `k` chosen from the
//! mean latency of the last [`EPOCH`] timed operations so that the clock reads cost at most
//! [`BUDGET`] of the operations' time. The sample's mean and percentiles estimate the whole
//! phase's; its maximum is the largest *timed* latency (see [`crate::BenchResult`]'s
//! `latency_samples`).
//!
//! Latency is measured as db_bench's `--histogram` measures it: the time since the thread's
//! previous operation completed. A sampled operation's start is read when the operation
//! before it completes, so it includes the harness's per-operation work in between (a key
//! formatted, a random draw) as every operation's latency did when each was timed.

use std::sync::OnceLock;
use std::time::Instant;

/// Timed operations per adjustment of the sampling interval.
pub const EPOCH: u32 = 32;

/// The share of an operation's time the clock reads may cost (0.5%).
pub const BUDGET: f64 = 0.005;

/// The longest mean interval between timed operations.
pub const MAX_INTERVAL: u32 = 128;

/// The cost of one `Instant::now()` in nanoseconds on this machine: the least of a few short
/// measurements (the least disturbed by other load), at least 1.
pub fn clock_read_ns() -> u64 {
    static COST: OnceLock<u64> = OnceLock::new();
    *COST.get_or_init(|| {
        let mut best = u64::MAX;
        for _ in 0..8 {
            let t = Instant::now();
            for _ in 0..256 {
                std::hint::black_box(Instant::now());
            }
            best = best.min(t.elapsed().as_nanos() as u64 / 256);
        }
        best.max(1)
    })
}

/// The mean interval between timed operations for operations of mean latency `mean_ns`, when
/// one clock read costs `clock_ns`: timing one operation in `k > 1` costs two reads (its start
/// and its end), so `k` is the least for which `2 * clock_ns / k <= BUDGET * mean_ns`; 1 (every
/// operation, one read each) when that is within budget already.
pub fn interval_for(mean_ns: u64, clock_ns: u64) -> u32 {
    let mean = mean_ns.max(1) as f64;
    if clock_ns as f64 <= BUDGET * mean {
        return 1;
    }
    let k = (2.0 * clock_ns as f64 / (BUDGET * mean)).ceil();
    (k as u32).clamp(2, MAX_INTERVAL)
}

/// One thread's choice of operations to time and the start of the next timed one.
#[derive(Debug, Clone)]
pub struct OpClock {
    /// Completions until the next timed operation completes (0: the one completing now).
    countdown: u32,
    /// Mean interval between timed operations.
    interval: u32,
    /// Start of the next timed operation (valid when `countdown` is 1 or 0).
    start: Instant,
    rng: u64,
    clock_ns: u64,
    epoch_ns: u64,
    epoch_n: u32,
}

impl OpClock {
    /// A clock that times the first operations (until it knows how long they take); `seed`
    /// varies the sample between threads.
    pub fn new(seed: u64) -> Self {
        OpClock {
            countdown: 1,
            interval: 1,
            start: Instant::now(),
            rng: seed | 1,
            clock_ns: clock_read_ns(),
            epoch_ns: 0,
            epoch_n: 0,
        }
    }

    /// An operation completed: its latency in nanoseconds if it was timed.
    #[inline]
    pub fn completed(&mut self) -> Option<u64> {
        self.countdown -= 1;
        if self.countdown > 1 {
            return None;
        }
        self.clock_point()
    }

    /// The next operation starts now (after untimed work between operations).
    pub fn restart(&mut self) {
        self.start = Instant::now();
    }

    /// Marks `now` as the time the last operation completed, when the caller timed it itself.
    pub fn completed_at(&mut self, now: Instant) {
        self.start = now;
    }

    /// The mean interval between timed operations chosen so far.
    pub fn interval(&self) -> u32 {
        self.interval
    }

    #[inline(never)]
    fn clock_point(&mut self) -> Option<u64> {
        let now = Instant::now();
        let mut timed = None;
        if self.countdown == 0 {
            let ns = now.saturating_duration_since(self.start).as_nanos();
            let ns = ns.min(u64::MAX as u128) as u64;
            timed = Some(ns);
            self.adapt(ns);
            self.countdown = self.next_countdown();
        }
        if self.countdown == 1 {
            // The next operation is timed: it starts now.
            self.start = now;
        }
        timed
    }

    /// Every [`EPOCH`] timed operations, the interval follows their mean latency.
    fn adapt(&mut self, ns: u64) {
        self.epoch_ns = self.epoch_ns.saturating_add(ns);
        self.epoch_n += 1;
        if self.epoch_n == EPOCH {
            self.interval = interval_for(self.epoch_ns / EPOCH as u64, self.clock_ns);
            self.epoch_ns = 0;
            self.epoch_n = 0;
        }
    }

    /// Uniform in `1..=2 * interval - 1` (mean `interval`), so that the sample does not beat
    /// with anything periodic in the workload.
    fn next_countdown(&mut self) -> u32 {
        if self.interval <= 1 {
            return 1;
        }
        // xorshift64
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        1 + (self.rng % (2 * self.interval as u64 - 1)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_operations_are_all_timed_and_fast_ones_sampled_within_budget() {
        assert_eq!(interval_for(100_000, 50), 1);
        assert_eq!(interval_for(10_000, 50), 1);
        // 500 ns operations with a 50 ns clock: 2 * 50 / k <= 2.5 ns, k >= 40.
        assert_eq!(interval_for(500, 50), 40);
        assert_eq!(interval_for(1, 50), MAX_INTERVAL);
        assert_eq!(interval_for(9_000, 50), 3);
    }

    #[test]
    fn a_clock_times_every_operation_until_it_knows_they_are_fast() {
        let mut c = OpClock::new(7);
        c.clock_ns = 50;
        let mut timed = 0;
        for _ in 0..EPOCH {
            if c.completed().is_some() {
                timed += 1;
            }
        }
        // Back-to-back calls take far less than the 10 µs that keep every operation timed.
        assert_eq!(timed, EPOCH);
        assert!(c.interval() > 1, "interval {}", c.interval());
        let (mut timed, n) = (0u64, 1_000_000u64);
        for _ in 0..n {
            if c.completed().is_some() {
                timed += 1;
            }
        }
        let k = n as f64 / timed as f64;
        let want = c.interval() as f64;
        assert!(
            (k - want).abs() < 0.1 * want,
            "one in {k} timed, interval {want}"
        );
    }

    #[test]
    fn a_timed_operation_includes_the_time_since_the_previous_completion() {
        let mut c = OpClock::new(1);
        c.restart();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let ns = c.completed().expect("the first operation is timed");
        assert!(ns >= 2_000_000, "{ns}");
        assert!(clock_read_ns() >= 1);
    }
}
