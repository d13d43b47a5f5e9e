//! The physical drive: mechanics on a virtual clock, sector storage, shingled physics, the
//! volatile write cache, and fault injection. No zone rules here — a host-managed drive puts
//! [`crate::zone::ZoneTable`] in front, a drive-managed drive a translation layer.
//!
//! One [`Media`] type, its methods grouped by job in private modules: `clock` (virtual and
//! paced time, busy accounting), `io` (reads, writes, discards through the cache to the
//! media), `destage` (the volatile write cache's background and FLUSH destage), `queue`
//! (queued submit), `fault` (power cuts and media errors) and `events` (the damage journal).

mod clock;
mod destage;
mod events;
mod fault;
mod io;
mod queue;

pub use clock::{ClockMode, IoDone};
pub use events::MediaEvent;
pub use fault::{FaultState, PowerOnReport};
pub use queue::{Completion, Request};

use crate::cache::WriteCache;
use crate::error::{DeviceError, Result};
use crate::interlace::Interlacing;
use crate::mechanics::Mechanics;
use crate::shingle::Shingling;
use crate::stats::Stats;
use crate::store::Store;
use crate::units::Nanos;
use std::time::Instant;

/// An emulated physical drive.
pub struct Media {
    mech: Mechanics,
    store: Box<dyn Store>,
    sector: u64,
    capacity: u64,
    shingle: Shingling,
    /// Interlaced physics (drive kind `imr`); its damage lives in `shingle`'s destroyed set.
    interlace: Option<Interlacing>,
    cache: Option<(WriteCache, u64)>,
    faults: FaultState,
    stats: Stats,
    now: Nanos,
    busy_until: Nanos,
    /// When the heads finish the latest media operation (host command or background destage).
    media_free: Nanos,
    /// When the oldest data still dirty in the write cache arrived: destage cannot start earlier.
    dirty_since: Nanos,
    /// End of the busy time accounted so far, so that overlapping intervals count once.
    busy_mark: Nanos,
    /// Accounted busy intervals that end after `now` (background destage under way): they are
    /// not reported until the clock reaches them, so busy time never exceeds elapsed time.
    busy_ahead: Vec<(Nanos, Nanos)>,
    clock: ClockMode,
    wall_epoch: Option<(Instant, Nanos)>,
    powered: bool,
    last_write_end: u64,
    /// Damage events waiting to be taken (`None`: not recorded).
    events: Option<Vec<MediaEvent>>,
}

impl Media {
    /// A drive of `capacity` sectors (at most the geometry's) with an optional write cache of
    /// `cache_bytes`, faults seeded by `seed`.
    pub fn new(
        mech: Mechanics,
        store: Box<dyn Store>,
        capacity: u64,
        shingle: Shingling,
        cache_bytes: Option<u64>,
        seed: u64,
    ) -> Result<Self> {
        let geo_total = mech.geometry().total_sectors();
        if capacity > geo_total {
            return Err(DeviceError::Config(format!(
                "capacity of {capacity} sectors exceeds the geometry's {geo_total}"
            )));
        }
        let ss = mech.geometry().sector_size();
        let cache = cache_bytes
            .filter(|&b| b > 0)
            .map(|b| (WriteCache::new(ss), (b / ss as u64).max(1)));
        Ok(Media {
            mech,
            store,
            sector: ss as u64,
            capacity,
            shingle,
            interlace: None,
            cache,
            faults: FaultState::new(seed),
            stats: Stats::default(),
            now: 0,
            busy_until: 0,
            media_free: 0,
            dirty_since: 0,
            busy_mark: 0,
            busy_ahead: Vec::new(),
            clock: ClockMode::Virtual,
            wall_epoch: None,
            powered: true,
            last_write_end: 0,
            events: None,
        })
    }

    /// Cumulative statistics, mechanical counters included. Busy time counts only what lies
    /// before the virtual clock: a background destage still under way is counted as the clock
    /// reaches it.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats.clone();
        let ahead: Nanos = self
            .busy_ahead
            .iter()
            .map(|&(a, b)| b.saturating_sub(a.max(self.now)))
            .sum();
        s.busy_ns = s.busy_ns.saturating_sub(ahead);
        s.idle_ns = self.now.saturating_sub(s.busy_ns);
        s.mech = self.mech.stats.clone();
        s
    }

    /// Restores statistics (loading an image).
    pub fn restore_stats(&mut self, s: Stats) {
        self.mech.stats = s.mech.clone();
        self.stats = s;
    }

    /// Counts a zone management command.
    pub fn count_zone_op(&mut self) {
        self.stats.zone_ops += 1;
    }

    /// The mechanics (geometry, seek curves).
    pub fn mechanics(&self) -> &Mechanics {
        &self.mech
    }

    /// Sector size in bytes.
    pub fn sector_size(&self) -> u32 {
        self.sector as u32
    }

    /// Exposed capacity in sectors.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Whether sector data is kept.
    pub fn keeps_data(&self) -> bool {
        self.store.keeps_data()
    }

    /// The shingled physics state.
    pub fn shingling(&self) -> &Shingling {
        &self.shingle
    }

    /// Mutable shingled state (loading images).
    pub fn shingling_mut(&mut self) -> &mut Shingling {
        &mut self.shingle
    }

    /// Makes the media interlaced (drive kind `imr`): bottom-track writes destroy the
    /// neighbouring top tracks' overlapping span unless `damage` is off (the CMR twin).
    pub fn set_interlace(&mut self, interlace: Option<Interlacing>) {
        self.interlace = interlace;
    }

    /// The interlaced physics, if the media is interlaced.
    pub fn interlacing(&self) -> Option<&Interlacing> {
        self.interlace.as_ref()
    }
}
