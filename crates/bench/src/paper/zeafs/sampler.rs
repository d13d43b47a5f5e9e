//! Samples a drive's clock every 20 ms while db_bench runs, and reads device time at a wall
//! time from the samples.

use super::probe::Probe;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tegula_device::Nanos;

/// One sample of a drive's clock.
#[derive(Clone, Copy)]
pub(super) struct Sample {
    /// Wall seconds since the run started.
    pub wall_s: f64,
    /// The drive's clock.
    pub device_ns: Nanos,
    /// Bytes the host had read.
    pub read: u64,
    /// Bytes the host had written.
    pub written: u64,
}

/// Samples a drive's clock every 20 ms until stopped.
pub(super) struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Sample>>,
}

impl Sampler {
    /// Starts sampling `probe`, wall time counted from `t0`.
    pub fn start(probe: Probe, t0: Instant) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut out = Vec::new();
            loop {
                let c = probe();
                out.push(Sample {
                    wall_s: t0.elapsed().as_secs_f64(),
                    device_ns: c.now,
                    read: c.read,
                    written: c.written,
                });
                if s.load(Ordering::Relaxed) {
                    return out;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Sampler { stop, handle }
    }

    /// Stops sampling (after one last sample) and returns the samples.
    pub fn finish(self) -> Result<Vec<Sample>> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .map_err(|_| Error::internal("the clock sampler panicked"))
    }
}

/// Device clock at wall time `t`, interpolated between samples.
pub(super) fn device_at(samples: &[Sample], t: f64) -> f64 {
    let i = samples.partition_point(|s| s.wall_s < t);
    if i == 0 {
        return samples.first().map_or(0.0, |s| s.device_ns as f64);
    }
    if i >= samples.len() {
        return samples.last().map_or(0.0, |s| s.device_ns as f64);
    }
    let (a, b) = (samples[i - 1], samples[i]);
    if b.wall_s <= a.wall_s {
        return b.device_ns as f64;
    }
    a.device_ns as f64
        + (b.device_ns as f64 - a.device_ns as f64) * (t - a.wall_s) / (b.wall_s - a.wall_s)
}

/// The first sample taken at or after wall time `t` (the last one if none).
pub(super) fn sample_after(samples: &[Sample], t: f64) -> Sample {
    let i = samples.partition_point(|s| s.wall_s < t);
    samples
        .get(i)
        .or(samples.last())
        .copied()
        .unwrap_or(Sample {
            wall_s: t,
            device_ns: 0,
            read: 0,
            written: 0,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(wall_s: f64, device_ns: Nanos) -> Sample {
        Sample {
            wall_s,
            device_ns,
            read: 0,
            written: 0,
        }
    }

    #[test]
    fn device_time_is_interpolated_between_samples() {
        let v = [s(0.0, 0), s(1.0, 1000), s(2.0, 3000)];
        assert_eq!(device_at(&v, 0.5), 500.0);
        assert_eq!(device_at(&v, 1.5), 2000.0);
        assert_eq!(device_at(&v, 9.0), 3000.0);
        assert_eq!(device_at(&[], 1.0), 0.0);
        assert_eq!(sample_after(&v, 1.2).device_ns, 3000);
    }
}
