//! When to clean (ShingledFS §6.3): an idle trigger (no request for a while) and free-space
//! thresholds with priorities. Usable free space is what can be written without cleaning:
//! the room left at the tails of the zones, not counting the zone kept empty for the
//! cleaner. Below `low_free` of the capacity a low-priority cleaner runs and yields to
//! requests; below `high_free` a high-priority one runs and writers wait for it. The mount's
//! background cleaner (`crate::fuse`) and the cleaning experiment both decide with
//! [`Fs::urgency`].

use crate::fs::Fs;
use tegula_device::{Nanos, SEC};

/// Thresholds of the cleaning triggers. `Default` is the one source of defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Triggers {
    /// Clean when no request arrived for this long (default 1 s; 0 turns the idle trigger
    /// off). On an emulated drive this is device time: the mount lets the drive's clock run
    /// through wall-clock idle periods.
    pub idle_after: Nanos,
    /// Below this fraction of usable free space a low-priority cleaner runs (default 0.30).
    pub low_free: f64,
    /// Below this fraction a high-priority cleaner runs and writers wait (default 0.10).
    pub high_free: f64,
    /// Bytes a cleaning step moves before it lets requests in (default 1 MiB).
    pub step_bytes: u64,
}

impl Default for Triggers {
    fn default() -> Self {
        Triggers {
            idle_after: SEC,
            low_free: 0.30,
            high_free: 0.10,
            step_bytes: 1 << 20,
        }
    }
}

/// How urgently the file system wants cleaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Urgency {
    /// No trigger fired.
    None,
    /// The idle trigger: clean until a request arrives.
    Idle,
    /// Usable free space below the low threshold: clean, yielding to requests.
    Low,
    /// Below the high threshold: clean before writing more.
    High,
}

impl Urgency {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Urgency::None => "none",
            Urgency::Idle => "idle",
            Urgency::Low => "low",
            Urgency::High => "high",
        }
    }
}

impl Fs {
    /// Bytes that can be written without cleaning (room at the zones' tails), less the
    /// zone kept empty for the cleaner.
    pub fn usable_free(&self) -> u64 {
        let cands = self.candidates();
        let total: u64 = cands.iter().map(|c| c.room).sum();
        let reserve = cands
            .iter()
            .filter(|c| c.empty)
            .map(|c| c.room)
            .max()
            .unwrap_or(0);
        total.saturating_sub(reserve)
    }

    /// [`Fs::usable_free`] as a fraction of the data capacity.
    pub fn usable_free_fraction(&self) -> f64 {
        let cap = self.statfs().blocks * self.pool.sector();
        if cap == 0 {
            return 0.0;
        }
        self.usable_free() as f64 / cap as f64
    }

    /// Which trigger fires after `idle_for` without requests. A threshold fires only when a
    /// zone is worth cleaning, so a drive full of live data does not spin the cleaner.
    pub fn urgency(&self, t: &Triggers, idle_for: Nanos) -> Urgency {
        let frac = self.usable_free_fraction();
        let want = if frac < t.high_free {
            Urgency::High
        } else if frac < t.low_free {
            Urgency::Low
        } else if t.idle_after > 0 && idle_for >= t.idle_after {
            Urgency::Idle
        } else {
            return Urgency::None;
        };
        if self.job.is_some() || self.clean_victim().is_some() {
            want
        } else {
            Urgency::None
        }
    }
}
