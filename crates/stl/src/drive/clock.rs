//! The drive's time: virtual or paced (sleeping the modelled service time), command arrival
//! and completion, and idle time, in which the volatile cache destages and the layer cleans.

use super::{DmDrive, Inner};
use std::time::{Duration, Instant};
use tegula_device::media::{ClockMode, IoDone};
use tegula_device::Nanos;

impl DmDrive {
    /// Selects virtual time or paced time (sleeps the modelled service time; wall-clock gaps
    /// become idle time in which background cleaning runs).
    pub fn set_clock(&self, mode: ClockMode) {
        let mut g = self.inner.lock();
        g.clock = mode;
        g.epoch = match mode {
            ClockMode::Virtual => None,
            ClockMode::Paced => Some((Instant::now(), g.media.now())),
        };
    }
}

impl Inner {
    /// A command arrives: in paced mode the wall-clock gap since the last one is idle time.
    pub(super) fn arrive(&mut self) -> Nanos {
        if let (ClockMode::Paced, Some((wall, v0))) = (self.clock, self.epoch) {
            let wall_now = v0 + wall.elapsed().as_nanos() as Nanos;
            if wall_now > self.media.now() {
                self.idle_until(wall_now);
            }
        }
        self.media.now()
    }

    /// A command completes: the drive state is saved now and then, and in paced mode the
    /// caller sleeps until the modelled end.
    pub(super) fn finish(&mut self, start: Nanos) -> IoDone {
        self.maybe_save_state();
        let end = self.media.now();
        self.last_io = end;
        if let (ClockMode::Paced, Some((wall, v0))) = (self.clock, self.epoch) {
            let target = Duration::from_nanos(end.saturating_sub(v0));
            let el = wall.elapsed();
            if target > el {
                std::thread::sleep(target - el);
            }
        }
        IoDone { start, end }
    }

    /// Idles until `target`: the volatile cache destages and the layer cleans in the
    /// background (unless the drive is read-only, poisoned or without power).
    pub(super) fn idle_until(&mut self, target: Nanos) {
        if !self.media.is_powered() || self.read_only || self.poisoned.is_some() {
            if self.media.is_powered() && self.media.now() < target {
                let d = target - self.media.now();
                self.media.idle(d);
            }
            return;
        }
        if self.vcache.as_ref().is_some_and(|c| !c.is_empty()) {
            if let Err(e) = self.destage(0) {
                self.after_error(&e.into());
            }
            self.last_io = self.media.now();
        }
        let last = self.last_io;
        if let Err(e) = self.layer.background(&mut self.media, last, target) {
            self.after_error(&e.into());
        }
        if self.media.now() < target {
            let d = target - self.media.now();
            self.media.idle(d);
        }
    }
}
