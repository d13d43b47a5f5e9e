//! Fault injection: power cuts (armed for the n-th media write, which is torn at a random
//! sector boundary, or immediate) and injected media errors, deterministic from a seed.

use super::Media;
use crate::ranges::RangeSet;
use crate::units::Nanos;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Where the media's writes can be cut by a power failure.
#[derive(Debug, Clone)]
pub struct FaultState {
    rng: SmallRng,
    /// Cut power during the media write with this ordinal (1-based, counted from arming).
    cut_at: Option<u64>,
    writes_since_armed: u64,
    /// Ranges that read back as media errors until rewritten.
    pub(super) injected: RangeSet,
    /// Ranges lost to the last power cut, reported by [`Media::power_on`].
    pub(super) lost: RangeSet,
}

impl FaultState {
    /// No fault armed; the cut points of later armings are drawn from `seed`.
    pub(super) fn new(seed: u64) -> Self {
        FaultState {
            rng: SmallRng::seed_from_u64(seed),
            cut_at: None,
            writes_since_armed: 0,
            injected: RangeSet::new(),
            lost: RangeSet::new(),
        }
    }

    /// Counts a media write of `n` sectors; when it is the armed one, returns how many of its
    /// sectors persist before power fails (a random prefix, possibly none or all).
    pub(super) fn on_media_write(&mut self, n: u64) -> Option<u64> {
        let at = self.cut_at?;
        self.writes_since_armed += 1;
        (self.writes_since_armed >= at).then(|| self.rng.gen_range(0..=n))
    }
}

/// What [`Media::power_on`] reports.
#[derive(Debug, Clone, Default)]
pub struct PowerOnReport {
    /// Ranges whose acknowledged-but-volatile or in-flight contents did not reach the media.
    pub lost: RangeSet,
}

impl Media {
    /// Arms a power cut during the `after`-th media write from now (1 = the next one). The cut
    /// write persists a random prefix of whole sectors (possibly none or all of it).
    pub fn arm_power_cut(&mut self, after: u64, seed: u64) {
        self.faults.rng = SmallRng::seed_from_u64(seed);
        self.faults.cut_at = Some(after.max(1));
        self.faults.writes_since_armed = 0;
    }

    /// Disarms a pending power cut.
    pub fn disarm_power_cut(&mut self) {
        self.faults.cut_at = None;
    }

    /// Media writes counted since the last arming (to size a random cut point).
    pub fn media_writes_since_armed(&self) -> u64 {
        self.faults.writes_since_armed
    }

    /// Cuts power now: the write cache is lost and every command fails until [`Self::power_on`].
    pub fn power_cut(&mut self) {
        let t = self.now;
        self.cut_power(t);
    }

    /// Cuts power at `at`: the write cache's contents are recorded as lost, and busy time
    /// accounted past the cut is taken back.
    pub(super) fn cut_power(&mut self, at: Nanos) {
        if let Some((c, _)) = &mut self.cache {
            for (a, b) in c.ranges().collect::<Vec<_>>() {
                self.faults.lost.insert(a, b);
            }
            c.clear();
        }
        self.faults.cut_at = None;
        self.powered = false;
        self.now = self.now.max(at);
        // Busy time accounted past the cut never happened.
        let now = self.now;
        let ahead: Nanos = self
            .busy_ahead
            .drain(..)
            .map(|(a, b)| b.saturating_sub(a.max(now)))
            .sum();
        self.stats.busy_ns = self.stats.busy_ns.saturating_sub(ahead);
        self.busy_mark = self.busy_mark.min(now);
        self.busy_until = self.now;
        self.media_free = self.now;
        self.dirty_since = self.now;
        self.mech.cancel_read_ahead();
    }

    /// Whether the drive has power.
    pub fn is_powered(&self) -> bool {
        self.powered
    }

    /// Restores power; reports what was lost.
    pub fn power_on(&mut self) -> PowerOnReport {
        self.powered = true;
        PowerOnReport {
            lost: std::mem::take(&mut self.faults.lost),
        }
    }

    /// Makes `[lba, lba + sectors)` read back as media errors until rewritten.
    pub fn inject_media_error(&mut self, lba: u64, sectors: u64) {
        self.faults.injected.insert(lba, lba + sectors);
        self.push_event(super::MediaEvent::Inject { lba, sectors });
    }

    /// Injected media-error ranges.
    pub fn injected_errors(&self) -> &RangeSet {
        &self.faults.injected
    }

    /// Restores injected media errors (loading an image).
    pub fn set_injected(&mut self, r: RangeSet) {
        self.faults.injected = r;
    }
}
