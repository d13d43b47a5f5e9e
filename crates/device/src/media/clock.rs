//! Time on the media: the virtual clock, paced mode (sleeping the modelled service time so
//! wall-clock tools see HDD latency), command arrival and completion, and busy-time accounting.

use super::Media;
use crate::error::{DeviceError, Result};
use crate::units::Nanos;
use std::time::{Duration, Instant};

/// Start and completion of one command in virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoDone {
    /// When the command reached the drive.
    pub start: Nanos,
    /// When it completed.
    pub end: Nanos,
}

impl IoDone {
    /// Modelled service time (queueing included for batched commands).
    pub fn service(&self) -> Nanos {
        self.end - self.start
    }
}

/// How virtual time relates to wall time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockMode {
    /// Pure virtual time: commands complete instantly in wall time.
    #[default]
    Virtual,
    /// Sleep the modelled service time so wall-clock tools see HDD latency; wall-clock gaps
    /// between commands become idle time.
    Paced,
}

impl Media {
    /// Current virtual time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Sets the virtual time (restoring an image).
    pub fn set_now(&mut self, t: Nanos) {
        self.now = t;
        self.busy_until = t;
        self.media_free = t;
        self.dirty_since = t;
        self.busy_mark = t;
        self.busy_ahead.clear();
    }

    /// Selects virtual or paced time.
    pub fn set_clock(&mut self, mode: ClockMode) {
        self.clock = mode;
        self.wall_epoch = match mode {
            ClockMode::Virtual => None,
            ClockMode::Paced => Some((Instant::now(), self.now)),
        };
    }

    /// Arrival time of a new command: in paced mode wall-clock gaps become idle time. The write
    /// cache destages in the background while the heads are free, overlapping the host's
    /// transfers as a real drive does; a power cut armed for such a destage fails the command.
    pub(super) fn arrive(&mut self) -> Result<Nanos> {
        if let (ClockMode::Paced, Some((wall, v0))) = (self.clock, self.wall_epoch) {
            let wall_now = v0 + wall.elapsed().as_nanos() as Nanos;
            if wall_now > self.now {
                self.run_background(wall_now);
                self.now = wall_now;
            }
        }
        let arrival = self.now.max(self.busy_until);
        self.run_background(arrival);
        if !self.powered {
            return Err(DeviceError::PowerLoss);
        }
        Ok(arrival)
    }

    /// Counts `[start, end)` as busy time, once where intervals overlap.
    pub(super) fn account_busy(&mut self, start: Nanos, end: Nanos) {
        let from = start.max(self.busy_mark);
        self.stats.busy_ns += end.saturating_sub(from);
        self.busy_mark = self.busy_mark.max(end);
        let now = self.now;
        self.busy_ahead.retain(|&(_, e)| e > now);
        if end > now && end > from {
            self.busy_ahead.push((from, end));
        }
    }

    /// Accounts a command that occupied the drive from `start` to `end`.
    pub(super) fn complete(&mut self, arrival: Nanos, end: Nanos) -> IoDone {
        self.account_busy(arrival, end);
        self.busy_until = self.busy_until.max(end);
        self.now = self.now.max(end);
        self.stats.idle_ns = self.now.saturating_sub(self.stats.busy_ns);
        if let (ClockMode::Paced, Some((wall, v0))) = (self.clock, self.wall_epoch) {
            let target = Duration::from_nanos(end.saturating_sub(v0));
            let el = wall.elapsed();
            if target > el {
                std::thread::sleep(target - el);
            }
        }
        IoDone {
            start: arrival,
            end,
        }
    }

    /// Lets the drive sit idle for `d`; background work (cache destage) runs meanwhile.
    pub fn idle(&mut self, d: Nanos) {
        let target = self.now + d;
        self.run_background(target);
        self.now = self.now.max(target);
        self.stats.idle_ns = self.now.saturating_sub(self.stats.busy_ns);
    }
}
