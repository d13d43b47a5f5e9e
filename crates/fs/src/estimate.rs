//! The cleaning cost estimate (ShingledFS §8.1): from the live and dead bytes on the drive
//! and the rate at which new data was written, how much space the workload's dead data
//! costs and how fast a cleaner must reclaim it to keep up.
//!
//! Following the paper: the space overhead is (live + dead) / live; the dead fraction
//! dead / (live + dead) of the drive's capacity is the dead data a full drive would hold;
//! at the observed write rate the drive fills to `fill` (the paper's 70 %) in
//! fill × capacity / rate; so the cleaner must reclaim capacity × dead fraction in that
//! time. The write rate is new data over the wall time between the first and the latest
//! write since mkfs (the counters are kept in the checkpoint).

use crate::fs::Fs;

/// The estimate; rates in bytes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GcEstimate {
    /// Live bytes.
    pub live: u64,
    /// Dead bytes (written and not live, in zones not yet cleaned).
    pub dead: u64,
    /// (live + dead) / live (1 when nothing is live).
    pub space_overhead: f64,
    /// dead / (live + dead).
    pub dead_fraction: f64,
    /// Bytes of new data written since mkfs.
    pub written: u64,
    /// Bytes the cleaner moved since mkfs.
    pub moved: u64,
    /// Bytes that died since mkfs.
    pub deleted: u64,
    /// (written + moved) / written.
    pub write_amplification: f64,
    /// Seconds between the first and the latest write.
    pub span_secs: f64,
    /// New data per second over that span (`None` without a span).
    pub write_rate: Option<f64>,
    /// The fill level assumed (0.7).
    pub fill: f64,
    /// Data capacity in bytes.
    pub capacity: u64,
    /// Seconds to fill `fill` of the capacity at `write_rate`.
    pub time_to_fill_secs: Option<f64>,
    /// Dead bytes a full drive would hold at this dead fraction.
    pub dead_at_capacity: f64,
    /// Bytes per second the cleaner must reclaim to keep up.
    pub clean_rate: Option<f64>,
}

impl GcEstimate {
    /// The same estimate at another write rate (bytes per second): what `tegula fs stats`
    /// would say had the workload written at `rate`. The cleaning experiment passes the rate
    /// in device time, as the emulated drive's clock is not the wall clock the counters
    /// record.
    pub fn at_write_rate(&self, rate: f64) -> GcEstimate {
        let write_rate = (rate > 0.0).then_some(rate);
        let time_to_fill_secs = write_rate.map(|r| self.fill * self.capacity as f64 / r);
        GcEstimate {
            write_rate,
            time_to_fill_secs,
            clean_rate: time_to_fill_secs
                .filter(|&t| t > 0.0)
                .map(|t| self.dead_at_capacity / t),
            ..*self
        }
    }
}

impl Fs {
    /// The cleaning cost estimate for a drive filled to `fill` (the paper uses 0.7).
    pub fn gc_estimate(&self, fill: f64) -> GcEstimate {
        let zs = self.zone_stats();
        let live: u64 = zs.iter().map(|z| z.live).sum();
        let dead: u64 = zs.iter().map(|z| z.dead).sum();
        let c = self.state.counters;
        let space_overhead = if live == 0 {
            1.0
        } else {
            (live + dead) as f64 / live as f64
        };
        let dead_fraction = if live + dead == 0 {
            0.0
        } else {
            dead as f64 / (live + dead) as f64
        };
        let span_secs = (c.last_write - c.first_write).max(0) as f64 / 1e9;
        let write_rate = (span_secs > 0.0).then(|| c.written as f64 / span_secs);
        let s = self.statfs();
        let capacity = s.blocks * s.block_size;
        let time_to_fill_secs = write_rate
            .filter(|&r| r > 0.0)
            .map(|r| fill * capacity as f64 / r);
        let dead_at_capacity = capacity as f64 * dead_fraction;
        GcEstimate {
            live,
            dead,
            space_overhead,
            dead_fraction,
            written: c.written,
            moved: c.moved,
            deleted: c.deleted,
            write_amplification: if c.written == 0 {
                1.0
            } else {
                (c.written + c.moved) as f64 / c.written as f64
            },
            span_secs,
            write_rate,
            fill,
            capacity,
            time_to_fill_secs,
            dead_at_capacity,
            clean_rate: time_to_fill_secs
                .filter(|&t| t > 0.0)
                .map(|t| dead_at_capacity / t),
        }
    }
}
