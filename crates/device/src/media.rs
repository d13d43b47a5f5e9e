//! The physical drive: mechanics on a virtual clock, sector storage, shingled physics, the
//! volatile write cache, and fault injection. No zone rules here — a host-managed drive puts
//! [`crate::zone::ZoneTable`] in front, a drive-managed drive a translation layer.

use crate::cache::WriteCache;
use crate::error::{DeviceError, MediaErrorCause, Result};
use crate::mechanics::Mechanics;
use crate::ranges::RangeSet;
use crate::shingle::Shingling;
use crate::stats::Stats;
use crate::store::Store;
use crate::units::Nanos;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
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

/// Where the media's writes can be cut by a power failure.
#[derive(Debug, Clone)]
pub struct FaultState {
    rng: SmallRng,
    /// Cut power during the media write with this ordinal (1-based, counted from arming).
    cut_at: Option<u64>,
    writes_since_armed: u64,
    injected: RangeSet,
    lost: RangeSet,
}

impl FaultState {
    fn new(seed: u64) -> Self {
        FaultState {
            rng: SmallRng::seed_from_u64(seed),
            cut_at: None,
            writes_since_armed: 0,
            injected: RangeSet::new(),
            lost: RangeSet::new(),
        }
    }
}

/// A request in a batch submitted at one queue depth.
#[derive(Debug, Clone)]
pub enum Request {
    /// Read `sectors` at `lba`.
    Read {
        /// First LBA.
        lba: u64,
        /// Sectors to read.
        sectors: u64,
    },
    /// Write `data` at `lba`.
    Write {
        /// First LBA.
        lba: u64,
        /// Whole sectors of data.
        data: Vec<u8>,
        /// Force unit access: durable on completion.
        fua: bool,
    },
    /// Flush the write cache.
    Flush,
}

/// Completion of a batched request.
#[derive(Debug, Clone)]
pub struct Completion {
    /// Timing.
    pub done: IoDone,
    /// Data of a read.
    pub data: Option<Vec<u8>>,
}

/// What [`Media::power_on`] reports.
#[derive(Debug, Clone, Default)]
pub struct PowerOnReport {
    /// Ranges whose acknowledged-but-volatile or in-flight contents did not reach the media.
    pub lost: RangeSet,
}

/// An emulated physical drive.
pub struct Media {
    mech: Mechanics,
    store: Box<dyn Store>,
    sector: u64,
    capacity: u64,
    shingle: Shingling,
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
}

/// Destage writes are cut into pieces of at most this size.
const DESTAGE_MAX_BYTES: u64 = 4 << 20;

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

    /// Injected media-error ranges.
    pub fn injected_errors(&self) -> &RangeSet {
        &self.faults.injected
    }

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

    /// Whether the write cache is enabled.
    pub fn write_cache_enabled(&self) -> bool {
        self.cache.is_some()
    }

    /// Sectors in the write cache not yet on the media.
    pub fn dirty_sectors(&self) -> u64 {
        self.cache.as_ref().map_or(0, |(c, _)| c.dirty_sectors())
    }

    fn check(&self, lba: u64, len: usize) -> Result<u64> {
        if !self.powered {
            return Err(DeviceError::PowerLoss);
        }
        if len == 0 || !(len as u64).is_multiple_of(self.sector) {
            return Err(DeviceError::BadLength {
                len,
                sector_size: self.sector as u32,
            });
        }
        let n = len as u64 / self.sector;
        if lba.checked_add(n).is_none_or(|e| e > self.capacity) {
            return Err(DeviceError::OutOfRange {
                lba,
                sectors: n,
                capacity: self.capacity,
            });
        }
        Ok(n)
    }

    /// Validates a range given in sectors.
    pub fn check_range(&self, lba: u64, sectors: u64) -> Result<()> {
        if !self.powered {
            return Err(DeviceError::PowerLoss);
        }
        if lba.checked_add(sectors).is_none_or(|e| e > self.capacity) {
            return Err(DeviceError::OutOfRange {
                lba,
                sectors,
                capacity: self.capacity,
            });
        }
        Ok(())
    }

    /// Arrival time of a new command: in paced mode wall-clock gaps become idle time. The write
    /// cache destages in the background while the heads are free, overlapping the host's
    /// transfers as a real drive does; a power cut armed for such a destage fails the command.
    fn arrive(&mut self) -> Result<Nanos> {
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
    fn account_busy(&mut self, start: Nanos, end: Nanos) {
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
    fn complete(&mut self, arrival: Nanos, end: Nanos) -> IoDone {
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

    fn media_error_in(&self, ranges: &[(u64, u64)]) -> Option<(u64, MediaErrorCause)> {
        let mut first: Option<(u64, MediaErrorCause)> = None;
        for &(a, b) in ranges {
            let cands = [
                (
                    self.shingle.first_destroyed(a, b - a),
                    MediaErrorCause::ShingleDamage,
                ),
                (
                    self.faults.injected.first_in(a, b),
                    MediaErrorCause::Injected,
                ),
            ];
            for (l, cause) in cands {
                if let Some(l) = l {
                    if first.is_none_or(|(f, _)| l < f) {
                        first = Some((l, cause));
                    }
                }
            }
            if first.is_some() {
                break;
            }
        }
        first
    }

    /// Reads `buf.len()` bytes at `lba`.
    pub fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let n = self.check(lba, buf.len())?;
        let arrival = self.arrive()?;
        let end = self.read_inner(arrival, lba, n, buf, false)?;
        self.stats.reads += 1;
        self.stats.bytes_read += buf.len() as u64;
        Ok(self.complete(arrival, end))
    }

    fn read_inner(
        &mut self,
        arrival: Nanos,
        lba: u64,
        n: u64,
        buf: &mut [u8],
        queued: bool,
    ) -> Result<Nanos> {
        // Most reads touch no cached sector: then the whole range comes from the media and no
        // list of uncovered pieces needs to be built.
        let whole = [(lba, lba + n)];
        let cached = self
            .cache
            .as_ref()
            .map_or(0, |(c, _)| c.overlay(lba, None, n));
        let pieces;
        let uncovered: &[(u64, u64)] = match &self.cache {
            Some((c, _)) if cached > 0 => {
                pieces = c.uncovered(lba, lba + n);
                &pieces
            }
            _ => &whole,
        };
        if uncovered.is_empty() {
            if let Some((c, _)) = &self.cache {
                c.overlay(lba, Some(buf), n);
            }
            self.stats.cache_read_hits += 1;
            let start = if queued {
                arrival
            } else {
                arrival + self.mech.overhead()
            };
            return Ok(start + self.mech.bus_time(n));
        }
        // The heads may still be busy destaging the write cache in the background.
        let arrival = arrival.max(self.media_free);
        if let Some((at, cause)) = self.media_error_in(uncovered) {
            // The drive still spent the time trying.
            let end = if queued {
                self.mech.read_at(arrival, lba, n)
            } else {
                self.mech.read(arrival, lba, n)
            };
            self.media_free = end;
            self.complete(arrival, end);
            return Err(DeviceError::MediaError { lba: at, cause });
        }
        let end = if queued {
            self.mech.read_at(arrival, lba, n)
        } else {
            self.mech.read(arrival, lba, n)
        };
        self.media_free = end;
        self.stats.media_reads += 1;
        self.stats.media_bytes_read += n * self.sector;
        self.store
            .read(lba * self.sector, buf)
            .map_err(|e| DeviceError::io(format!("reading LBA {lba} from the backing store"), e))?;
        if let Some((c, _)) = &self.cache {
            if cached > 0 {
                c.overlay(lba, Some(buf), n);
            }
        }
        Ok(end)
    }

    /// Reads `sectors` at `lba` for their timing, statistics and media errors only, moving no
    /// data: for metadata-only drives, whose store would only return zeros, so that layers
    /// above (translation layers cleaning whole bands) need not allocate and fill buffers.
    pub fn read_no_data(&mut self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.check_range(lba, sectors)?;
        if sectors == 0 {
            return Err(DeviceError::BadLength {
                len: 0,
                sector_size: self.sector as u32,
            });
        }
        let arrival = self.arrive()?;
        let whole = [(lba, lba + sectors)];
        if let Some((at, cause)) = self.media_error_in(&whole) {
            let end = self.mech.read(arrival, lba, sectors);
            self.complete(arrival, end);
            return Err(DeviceError::MediaError { lba: at, cause });
        }
        let end = self.mech.read(arrival, lba, sectors);
        self.stats.media_reads += 1;
        self.stats.media_bytes_read += sectors * self.sector;
        self.stats.reads += 1;
        self.stats.bytes_read += sectors * self.sector;
        Ok(self.complete(arrival, end))
    }

    /// Writes `sectors` at `lba` for their timing, shingled damage, statistics and power-cut
    /// faults only, moving no data. Only for drives that keep no data (it fails otherwise, as
    /// the store would be left stale); a volatile write cache is bypassed (the write is
    /// durable on completion).
    pub fn write_no_data(&mut self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.check_range(lba, sectors)?;
        if sectors == 0 || self.store.keeps_data() {
            return Err(DeviceError::Config(
                "write_no_data needs a drive that keeps no data and a positive length".into(),
            ));
        }
        let arrival = self.arrive()?;
        if let Some((cache, _)) = &mut self.cache {
            cache.remove(lba, lba + sectors);
        }
        let start = arrival + self.mech.overhead();
        let end = self.media_write(start, lba, sectors, None)?;
        self.stats.writes += 1;
        self.stats.bytes_written += sectors * self.sector;
        Ok(self.complete(arrival, end))
    }

    /// Writes `sectors` at `lba`, durable on completion, of which only the first `data.len()`
    /// bytes (whole sectors) carry data: the rest is padding whose contents do not matter (a
    /// translation layer's entry padding and out-of-band area). Timing, shingled damage and
    /// faults cover all `sectors`; the store receives only `data`, so padding costs no host
    /// memory or disk space.
    pub fn write_padded(&mut self, lba: u64, sectors: u64, data: &[u8]) -> Result<IoDone> {
        self.check_range(lba, sectors)?;
        let ss = self.sector as usize;
        if sectors == 0
            || !data.len().is_multiple_of(ss)
            || data.len() as u64 > sectors * self.sector
        {
            return Err(DeviceError::BadLength {
                len: data.len(),
                sector_size: self.sector as u32,
            });
        }
        let arrival = self.arrive()?;
        if let Some((cache, _)) = &mut self.cache {
            cache.remove(lba, lba + sectors);
        }
        let start = arrival + self.mech.overhead();
        let end = self.media_write(start, lba, sectors, Some(data))?;
        self.stats.writes += 1;
        self.stats.bytes_written += sectors * self.sector;
        Ok(self.complete(arrival, end))
    }

    /// Writes `data` at `lba`; with `fua` the data is on the media when this returns.
    pub fn write(&mut self, lba: u64, data: &[u8], fua: bool) -> Result<IoDone> {
        let n = self.check(lba, data.len())?;
        let arrival = self.arrive()?;
        let end = self.write_inner(arrival, lba, n, data, fua, false)?;
        self.stats.writes += 1;
        self.stats.bytes_written += data.len() as u64;
        Ok(self.complete(arrival, end))
    }

    fn write_inner(
        &mut self,
        arrival: Nanos,
        lba: u64,
        n: u64,
        data: &[u8],
        fua: bool,
        queued: bool,
    ) -> Result<Nanos> {
        let start = if queued {
            arrival
        } else {
            arrival + self.mech.overhead()
        };
        let keep = self.store.keeps_data();
        match self
            .cache
            .as_ref()
            .map(|(c, cap)| (c.dirty_sectors(), *cap))
        {
            Some((dirty, cap)) if !fua => {
                let mut t = start;
                if dirty + n > cap {
                    t = self.destage(t, move |c| c.dirty_sectors() > cap / 2)?;
                }
                let end = t + self.mech.bus_time(n);
                if let Some((cache, _)) = &mut self.cache {
                    if cache.is_empty() {
                        self.dirty_since = end;
                    }
                    cache.insert(lba, n, keep.then_some(data));
                }
                Ok(end)
            }
            _ => {
                // Write-through: this data supersedes anything older still in the cache.
                if let Some((cache, _)) = &mut self.cache {
                    cache.remove(lba, lba + n);
                }
                self.media_write(start, lba, n, Some(data))
            }
        }
    }

    /// Writes to the media now, subject to an armed power cut. `data` of `None` writes zeros
    /// (used only on drives that keep no data).
    fn media_write(
        &mut self,
        start: Nanos,
        lba: u64,
        n: u64,
        data: Option<&[u8]>,
    ) -> Result<Nanos> {
        let mut persisted = n;
        let mut cut = false;
        if let Some(at) = self.faults.cut_at {
            self.faults.writes_since_armed += 1;
            if self.faults.writes_since_armed >= at {
                persisted = self.faults.rng.gen_range(0..=n);
                cut = true;
            }
        }
        let start = start.max(self.media_free);
        let mut end = start;
        if persisted > 0 {
            end = self.mech.write_at(start, lba, persisted);
            self.media_free = end;
            if let Some(d) = data {
                if self.store.keeps_data() {
                    // `d` may be shorter than the write (see `write_padded`).
                    let bytes = ((persisted * self.sector) as usize).min(d.len());
                    self.store
                        .write(lba * self.sector, &d[..bytes])
                        .map_err(|e| {
                            DeviceError::io(format!("writing LBA {lba} to the backing store"), e)
                        })?;
                }
            }
            self.shingle.on_write(self.mech.geometry(), lba, persisted);
            self.faults.injected.remove(lba, lba + persisted);
            self.stats.media_writes += 1;
            self.stats.media_bytes_written += persisted * self.sector;
            self.last_write_end = lba + persisted;
        }
        if cut {
            if persisted < n {
                self.faults.lost.insert(lba + persisted, lba + n);
            }
            self.cut_power(end);
            return Err(DeviceError::PowerLoss);
        }
        Ok(end)
    }

    /// Destages dirty runs in elevator order while `more` says so; returns the end time.
    fn destage(&mut self, mut t: Nanos, more: impl Fn(&WriteCache) -> bool) -> Result<Nanos> {
        let max = (DESTAGE_MAX_BYTES / self.sector).max(1);
        loop {
            let Some((cache, _)) = &mut self.cache else {
                return Ok(t);
            };
            if cache.is_empty() || !more(cache) {
                return Ok(t);
            }
            let Some((lba, n, data)) = cache.take_run(self.last_write_end, max) else {
                return Ok(t);
            };
            match self.media_write(t, lba, n, data.as_deref()) {
                Ok(end) => t = end,
                Err(e) => {
                    // The run was taken out of the cache; on power loss it was recorded as lost.
                    return Err(e);
                }
            }
        }
    }

    /// Destages the whole write cache; the data is durable when this returns.
    pub fn flush(&mut self) -> Result<IoDone> {
        if !self.powered {
            return Err(DeviceError::PowerLoss);
        }
        let arrival = self.arrive()?;
        // Complete no earlier than every media write it covers, a background destage still
        // under way included (the cache may already be empty).
        let t = self
            .destage(arrival + self.mech.overhead(), |_| true)?
            .max(self.media_free);
        self.store
            .sync()
            .map_err(|e| DeviceError::io("syncing the backing store", e))?;
        self.stats.flushes += 1;
        Ok(self.complete(arrival, t))
    }

    /// Forgets `sectors` at `lba` (TRIM / zone reset): they read as zeros afterwards.
    pub fn discard(&mut self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.check_range(lba, sectors)?;
        let arrival = self.arrive()?;
        if let Some((c, _)) = &mut self.cache {
            c.remove(lba, lba + sectors);
        }
        self.store
            .discard(lba * self.sector, sectors * self.sector)
            .map_err(|e| DeviceError::io(format!("discarding LBA {lba}"), e))?;
        self.shingle.clear(lba, sectors);
        self.stats.discards += 1;
        let end = arrival + self.mech.overhead();
        Ok(self.complete(arrival, end))
    }

    /// A command that costs only its overhead (zone management, reads of unwritten sectors).
    pub fn command(&mut self) -> Result<IoDone> {
        if !self.powered {
            return Err(DeviceError::PowerLoss);
        }
        let arrival = self.arrive()?;
        let end = arrival + self.mech.overhead();
        Ok(self.complete(arrival, end))
    }

    /// Lets the drive sit idle for `d`; background work (cache destage) runs meanwhile.
    pub fn idle(&mut self, d: Nanos) {
        let target = self.now + d;
        self.run_background(target);
        self.now = self.now.max(target);
        self.stats.idle_ns = self.now.saturating_sub(self.stats.busy_ns);
    }

    fn run_background(&mut self, until: Nanos) {
        if !self.powered {
            return;
        }
        let max = (DESTAGE_MAX_BYTES / self.sector).max(1);
        loop {
            // A destage run starts once the heads are free and there is dirty data; runs that
            // start by `until` are under way when the command arriving at `until` is served.
            let start = self.media_free.max(self.dirty_since);
            if start > until {
                return;
            }
            let Some((cache, _)) = &mut self.cache else {
                return;
            };
            let Some((lba, n, data)) = cache.take_run(self.last_write_end, max) else {
                return;
            };
            match self.media_write(start, lba, n, data.as_deref()) {
                Ok(end) => self.account_busy(start, end),
                // The cut was recorded (the run's data as lost); the next command fails.
                Err(_) => return,
            }
        }
    }

    /// Submits a batch at once (queue depth = batch size). Commands are served in order; each
    /// command's processing overlaps the previous transfer, so a sequential batch streams.
    pub fn submit(&mut self, reqs: Vec<Request>) -> Vec<Result<Completion>> {
        let mut out = Vec::with_capacity(reqs.len());
        let Ok(arrival) = self.arrive() else {
            return reqs.iter().map(|_| Err(DeviceError::PowerLoss)).collect();
        };
        let ready = arrival + self.mech.overhead();
        let mut prev = arrival;
        for (i, r) in reqs.into_iter().enumerate() {
            let start = if i == 0 { ready } else { prev.max(ready) };
            // While the host transfers queued commands, the heads destage cached writes (as
            // between single commands), so a queued stream is no slower than one at a time.
            if i > 0 {
                self.run_background(start);
            }
            if !self.powered {
                out.push(Err(DeviceError::PowerLoss));
                continue;
            }
            let res = match r {
                Request::Read { lba, sectors } => {
                    let len = (sectors * self.sector) as usize;
                    match self.check(lba, len) {
                        Err(e) => Err(e),
                        Ok(n) => {
                            let mut buf = vec![0u8; len];
                            self.read_inner(start, lba, n, &mut buf, true).map(|end| {
                                self.stats.reads += 1;
                                self.stats.bytes_read += len as u64;
                                (end, Some(buf))
                            })
                        }
                    }
                }
                Request::Write { lba, data, fua } => match self.check(lba, data.len()) {
                    Err(e) => Err(e),
                    Ok(n) => self
                        .write_inner(start, lba, n, &data, fua, true)
                        .map(|end| {
                            self.stats.writes += 1;
                            self.stats.bytes_written += data.len() as u64;
                            (end, None)
                        }),
                },
                Request::Flush => self
                    .destage(start, |_| true)
                    .and_then(|end| {
                        self.store
                            .sync()
                            .map_err(|e| DeviceError::io("syncing the backing store", e))?;
                        Ok(end)
                    })
                    .map(|end| {
                        self.stats.flushes += 1;
                        // As a single flush: no earlier than the media writes it covers.
                        (end.max(self.media_free), None)
                    }),
            };
            out.push(res.map(|(end, data)| {
                prev = end;
                Completion {
                    done: IoDone {
                        start: arrival,
                        end,
                    },
                    data,
                }
            }));
        }
        self.complete(arrival, prev);
        out
    }

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

    fn cut_power(&mut self, at: Nanos) {
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
    }

    /// Restores injected media errors (loading an image).
    pub fn set_injected(&mut self, r: RangeSet) {
        self.faults.injected = r;
    }
}
