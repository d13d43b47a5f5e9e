//! An emulated drive: [`Media`] behind the ZBC zone rules, in memory or backed by a disk
//! image. Thread safe: commands from several threads are serialized as on one actuator.

use crate::api::{BlockDevice, DeviceInfo, WriteFlags, ZoneTarget, ZonedDevice};
use crate::config::DiskConfig;
use crate::error::{DeviceError, Result};
use crate::image::{ImageFile, ImageState};
use crate::interlace::{Interlacing, TrackLayout};
use crate::media::{ClockMode, Completion, IoDone, Media, PowerOnReport, Request};
use crate::shingle::Shingling;
use crate::stats::Stats;
use crate::store::{FileStore, MemStore, NullStore, Store};
use crate::units::Nanos;
use crate::zone::{Zone, ZoneAction, ZoneCondition, ZoneFilter, ZoneTable};
use parking_lot::Mutex;
use std::path::Path;

struct Inner {
    media: Media,
    zones: ZoneTable,
    zone_bytes: Vec<u64>,
    image: Option<ImageFile>,
    poisoned: Option<String>,
    read_only: bool,
}

/// An emulated disk (any [`crate::DriveKind`]).
pub struct Disk {
    inner: Mutex<Inner>,
    config: DiskConfig,
    info: DeviceInfo,
    tracks: Option<TrackLayout>,
}

impl std::fmt::Debug for Disk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Disk").field("info", &self.info).finish()
    }
}

/// How to open an existing image.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Refuse writes and zone changes; never modify the image.
    pub read_only: bool,
    /// Read the image's data through a shared read-only mapping instead of `pread` (default
    /// off): no system call per read, but a host I/O error kills the process with `SIGBUS`.
    pub mmap_reads: bool,
}

impl Disk {
    fn build(config: DiskConfig, store: Box<dyn Store>, image: Option<ImageFile>) -> Result<Self> {
        config.validate()?;
        let mech = config.mechanics()?;
        let ss = config.sector_size as u64;
        let capacity = config.zone_count() as u64 * config.zone_sectors();
        let shingle = Shingling::new(config.band_layout(), config.shingle.overlap_tracks);
        let cache = config.cache.write_cache.then_some(config.cache.size);
        let tracks = config
            .interlace
            .as_ref()
            .map(|i| TrackLayout::new(mech.geometry().clone(), capacity, i.damage));
        let mut media = Media::new(mech, store, capacity, shingle, cache, config.seed)?;
        media.set_interlace(
            config
                .interlace
                .as_ref()
                .map(|i| Interlacing { damage: i.damage }),
        );
        let zones = ZoneTable::new(
            capacity,
            config.zone_sectors(),
            config.conventional_zones(),
            config.seq_zone_type(),
            config.zones.max_open,
            config.zones.unrestricted_reads,
        )
        .with_zone_capacity(config.zone_capacity_sectors())
        .with_max_active(config.zones.max_active);
        let info = DeviceInfo {
            model: format!("tegula {} ({})", config.profile, config.kind.name()),
            kind: config.kind.name().to_string(),
            sector_size: ss as u32,
            capacity_sectors: capacity,
            zone_sectors: config.zone_sectors(),
            zone_capacity_sectors: zones.zone_capacity(),
            zones: zones.len(),
            conventional_zones: config.conventional_zones(),
            max_open_zones: config.zones.max_open,
            max_active_zones: config.zones.max_active,
            unrestricted_reads: config.zones.unrestricted_reads,
            stores_data: config.store_data,
            wall_time: false,
        };
        let n = zones.len() as usize;
        Ok(Disk {
            inner: Mutex::new(Inner {
                media,
                zones,
                zone_bytes: vec![0; n],
                image,
                poisoned: None,
                read_only: false,
            }),
            config,
            info,
            tracks,
        })
    }

    /// A drive in memory (sparse; or metadata-only when `store_data` is false).
    pub fn in_memory(config: DiskConfig) -> Result<Self> {
        let store: Box<dyn Store> = if config.store_data {
            Box::new(MemStore::new())
        } else {
            Box::new(NullStore)
        };
        Self::build(config, store, None)
    }

    /// Creates a disk image at `path` (refuses to overwrite).
    pub fn create_image(path: &Path, config: DiskConfig) -> Result<Self> {
        config.validate()?;
        let disk = Self::in_memory_shape(&config)?;
        let state = disk.snapshot_state();
        let (img, data) = ImageFile::create(path, &config, &state)?;
        let store: Box<dyn Store> = if config.store_data {
            Box::new(FileStore::new(data, img.header.data_offset, true))
        } else {
            Box::new(NullStore)
        };
        Self::build(config, store, Some(img))
    }

    fn in_memory_shape(config: &DiskConfig) -> Result<Self> {
        Self::build(config.clone(), Box::new(NullStore), None)
    }

    /// Opens an existing disk image.
    pub fn open_image(path: &Path, opts: OpenOptions) -> Result<Self> {
        let (img, state, data) = ImageFile::open(path, !opts.read_only)?;
        let config = img.header.config.clone();
        let store: Box<dyn Store> = if config.store_data {
            let store = FileStore::new(data, img.header.data_offset, !opts.read_only);
            Box::new(if opts.mmap_reads {
                store.map_reads(path)?
            } else {
                store
            })
        } else {
            Box::new(NullStore)
        };
        let disk = Self::build(config, store, Some(img))?;
        {
            let mut g = disk.inner.lock();
            for (i, &(c, ns, wp)) in state.zones.iter().enumerate() {
                let z = g.zones.zone(i as u64)?.clone();
                if wp < z.start_lba || wp > z.end_lba() {
                    return Err(DeviceError::Image {
                        path: path.display().to_string(),
                        problem: format!("zone {i} write pointer {wp} lies outside the zone")
                            .into(),
                    });
                }
                if z.zone_type.is_sequential() == (c == ZoneCondition::NotWritePointer) {
                    return Err(DeviceError::Image {
                        path: path.display().to_string(),
                        problem: format!("zone {i} condition {c} does not fit its type").into(),
                    });
                }
                g.zones.set_state(i as u32, c, wp, ns);
            }
            g.media.set_now(state.now);
            g.media.shingling_mut().set_destroyed(state.destroyed);
            g.media.set_injected(state.injected);
            let mut stats = state.stats;
            g.zone_bytes = std::mem::take(&mut stats.zone_bytes_written);
            let nz = g.zones.len() as usize;
            g.zone_bytes.resize(nz, 0);
            g.media.restore_stats(stats);
            g.read_only = opts.read_only;
        }
        Ok(disk)
    }

    /// Problems found on open that did not stop it (a damaged state slot passed over), for the
    /// caller to show; empty for a healthy image or a drive in memory.
    pub fn open_warnings(&self) -> Vec<String> {
        let g = self.inner.lock();
        g.image
            .as_ref()
            .map_or_else(Vec::new, |i| i.warnings.clone())
    }

    /// Checks a disk image without modifying it: opens it read-only (header, state slots,
    /// zone states) and returns the problems that do not stop it from opening; an error when
    /// it cannot be opened.
    pub fn check_image(path: &Path) -> Result<Vec<String>> {
        let d = Self::open_image(
            path,
            OpenOptions {
                read_only: true,
                ..OpenOptions::default()
            },
        )?;
        Ok(d.open_warnings())
    }

    /// The resolved configuration.
    pub fn config(&self) -> &DiskConfig {
        &self.config
    }

    /// The track-level interface of an interlaced drive (kind `imr`): tracks, their LBA
    /// ranges, kinds and neighbours. `None` for every other kind.
    pub fn track_layout(&self) -> Option<&TrackLayout> {
        self.tracks.as_ref()
    }

    fn snapshot_state(&self) -> ImageState {
        let g = self.inner.lock();
        Self::state_of(&g)
    }

    fn state_of(g: &Inner) -> ImageState {
        let mut stats = g.media.stats();
        stats.zone_bytes_written = g.zone_bytes.clone();
        ImageState {
            seq: 0,
            now: g.media.now(),
            zones: g
                .zones
                .zones()
                .iter()
                .map(|z| (z.condition, z.non_seq, z.write_pointer_lba))
                .collect(),
            destroyed: g.media.shingling().destroyed().clone(),
            injected: g.media.injected_errors().clone(),
            stats,
        }
    }

    fn persist(g: &mut Inner) -> Result<()> {
        if g.read_only || !g.media.is_powered() {
            return Ok(());
        }
        let state = Self::state_of(g);
        if let Some(img) = &mut g.image {
            if let Err(e) = img.write_state(state) {
                g.poisoned = Some(e.to_string());
                return Err(e);
            }
        }
        Ok(())
    }

    fn writable(g: &Inner) -> Result<()> {
        if g.read_only {
            return Err(DeviceError::ReadOnlyHandle);
        }
        if let Some(p) = &g.poisoned {
            return Err(DeviceError::Poisoned(p.clone()));
        }
        Ok(())
    }

    /// Statistics, with per-zone bytes written.
    pub fn stats(&self) -> Stats {
        let g = self.inner.lock();
        let mut s = g.media.stats();
        s.zone_bytes_written = g.zone_bytes.clone();
        s
    }

    /// Flushes the cache and persists the device state; the image is complete afterwards.
    pub fn close(self) -> Result<()> {
        let mut g = self.inner.lock();
        if g.read_only || g.poisoned.is_some() || !g.media.is_powered() {
            return Ok(());
        }
        g.media.flush()?;
        Self::persist(&mut g)
    }

    /// Selects virtual or paced time.
    pub fn set_clock(&self, mode: ClockMode) {
        self.inner.lock().media.set_clock(mode);
    }

    /// Runs `f` on the media with the lock held (tests, translation layers, tools).
    pub fn with_media<R>(&self, f: impl FnOnce(&mut Media) -> R) -> R {
        f(&mut self.inner.lock().media)
    }

    /// Arms a power cut during the `after`-th media write from now; see [`Media::arm_power_cut`].
    pub fn arm_power_cut(&self, after: u64, seed: u64) {
        self.inner.lock().media.arm_power_cut(after, seed);
    }

    /// Cuts power now.
    pub fn power_cut(&self) {
        self.inner.lock().media.power_cut();
    }

    /// Restores power: open zones close and write pointers roll back to what reached the media.
    pub fn power_on(&self) -> PowerOnReport {
        let mut g = self.inner.lock();
        let r = g.media.power_on();
        g.zones.power_on(&r.lost);
        r
    }

    /// Makes sectors read back as media errors until rewritten.
    pub fn inject_media_error(&self, lba: u64, sectors: u64) -> Result<()> {
        let mut g = self.inner.lock();
        g.media.check_range(lba, sectors)?;
        g.media.inject_media_error(lba, sectors);
        Ok(())
    }

    /// Forces a zone read-only or offline (a failing head or region).
    pub fn set_zone_condition(&self, zone: u32, condition: ZoneCondition) -> Result<()> {
        if !matches!(condition, ZoneCondition::ReadOnly | ZoneCondition::Offline) {
            return Err(DeviceError::Config(
                "only read-only or offline can be forced".into(),
            ));
        }
        let mut g = self.inner.lock();
        let z = g.zones.zone(zone as u64)?.clone();
        g.zones
            .set_state(zone, condition, z.write_pointer_lba, z.non_seq);
        Self::persist(&mut g)
    }

    /// Sets a zone's write pointer to `lba` within the zone (the T13 banded "set write pointer"
    /// extension the ShingledFS emulator offers; data past the new pointer becomes unreadable).
    pub fn set_write_pointer(&self, zone: u32, lba: u64) -> Result<()> {
        let mut g = self.inner.lock();
        Self::writable(&g)?;
        let z = g.zones.zone(zone as u64)?.clone();
        if !z.zone_type.is_sequential() {
            return Err(DeviceError::InvalidZoneOp {
                zone,
                op: "set write pointer",
                condition: "conventional".into(),
            });
        }
        if lba < z.start_lba || lba > z.end_lba() {
            return Err(DeviceError::OutOfRange {
                lba,
                sectors: 0,
                capacity: z.end_lba(),
            });
        }
        let cond = if lba == z.start_lba {
            ZoneCondition::Empty
        } else if lba == z.end_lba() {
            ZoneCondition::Full
        } else {
            ZoneCondition::Closed
        };
        g.zones.set_state(zone, cond, lba, z.non_seq);
        Self::persist(&mut g)
    }

    fn read_locked(g: &mut Inner, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let ss = g.media.sector_size() as u64;
        if buf.is_empty() || !(buf.len() as u64).is_multiple_of(ss) {
            return Err(DeviceError::BadLength {
                len: buf.len(),
                sector_size: ss as u32,
            });
        }
        let n = buf.len() as u64 / ss;
        g.media.check_range(lba, n)?;
        let unwritten = g.zones.check_read(lba, n)?;
        if unwritten.is_empty() {
            return g.media.read(lba, buf);
        }
        // Sectors past a write pointer are zeros and cost no media time.
        let mut first: Option<IoDone> = None;
        let mut last = IoDone::default();
        let mut pos = lba;
        let end = lba + n;
        let mut holes = unwritten.into_iter().peekable();
        while pos < end {
            let (seg_end, hole) = match holes.peek() {
                Some(&(a, b)) if a == pos => {
                    holes.next();
                    (b, true)
                }
                Some(&(a, _)) => (a, false),
                None => (end, false),
            };
            let slice = &mut buf[((pos - lba) * ss) as usize..((seg_end - lba) * ss) as usize];
            let d = if hole {
                slice.fill(0);
                g.media.command()?
            } else {
                g.media.read(pos, slice)?
            };
            first.get_or_insert(d);
            last = d;
            pos = seg_end;
        }
        Ok(IoDone {
            start: first.map_or(last.start, |f| f.start),
            end: last.end,
        })
    }

    fn write_locked(g: &mut Inner, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        Self::write_checked(g, lba, data.len(), |m| m.write(lba, data, flags.fua))
    }

    /// A write through the zone rules: checks `len` bytes at `lba`, advances the zone's write
    /// pointer, runs `write` on the media, and puts the pointer back if the write fails.
    fn write_checked<T>(
        g: &mut Inner,
        lba: u64,
        len: usize,
        write: impl FnOnce(&mut Media) -> Result<T>,
    ) -> Result<T> {
        Self::writable(g)?;
        let ss = g.media.sector_size() as u64;
        if len == 0 || !(len as u64).is_multiple_of(ss) {
            return Err(DeviceError::BadLength {
                len,
                sector_size: ss as u32,
            });
        }
        let n = len as u64 / ss;
        g.media.check_range(lba, n)?;
        let zi = g.zones.zone_of(lba);
        let before = g.zones.zone(zi as u64)?.clone();
        g.zones.apply_write(lba, n)?;
        match write(&mut g.media) {
            Ok(d) => {
                let mut pos = lba;
                while pos < lba + n {
                    let z = g.zones.zone_of(pos) as usize;
                    let zend = (z as u64 + 1) * g.zones.zone_sectors();
                    let k = zend.min(lba + n) - pos;
                    g.zone_bytes[z] += k * ss;
                    pos += k;
                }
                Ok(d)
            }
            Err(e) => {
                // The write was not acknowledged: the zone keeps its old write pointer.
                g.zones.set_state(
                    zi,
                    before.condition,
                    before.write_pointer_lba,
                    before.non_seq,
                );
                Err(e)
            }
        }
    }
}

impl BlockDevice for Disk {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let mut g = self.inner.lock();
        Self::read_locked(&mut g, lba, buf)
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        let mut g = self.inner.lock();
        Self::write_locked(&mut g, lba, data, flags)
    }

    fn write_owned(&self, lba: u64, data: Vec<u8>, flags: WriteFlags) -> Result<(IoDone, Vec<u8>)> {
        let mut g = self.inner.lock();
        Self::write_checked(&mut g, lba, data.len(), |m| {
            m.write_owned(lba, data, flags.fua)
        })
    }

    fn flush(&self) -> Result<IoDone> {
        let mut g = self.inner.lock();
        if let Some(p) = &g.poisoned {
            return Err(DeviceError::Poisoned(p.clone()));
        }
        let d = g.media.flush()?;
        Self::persist(&mut g)?;
        Ok(d)
    }

    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone> {
        let mut g = self.inner.lock();
        Self::writable(&g)?;
        g.media.check_range(lba, sectors)?;
        // Only conventional ranges can be discarded; sequential zones use reset.
        let first = g.zones.zone_of(lba) as u64;
        let last = g.zones.zone_of(lba + sectors.max(1) - 1) as u64;
        for z in first..=last {
            if g.zones.zone(z)?.zone_type.is_sequential() {
                return Err(DeviceError::InvalidZoneOp {
                    zone: z as u32,
                    op: "discard",
                    condition: "a sequential zone (reset it instead)".into(),
                });
            }
        }
        g.media.discard(lba, sectors)
    }

    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion>> {
        let mut g = self.inner.lock();
        let g = &mut *g;
        // Zone rules are applied in submission order, then the media serves the batch.
        let mut checked = Vec::with_capacity(reqs.len());
        // Per accepted write: its zone's state before the write, and the bytes it adds.
        let mut befores: Vec<Option<(Zone, u64)>> = Vec::with_capacity(reqs.len());
        let mut errors: Vec<Option<DeviceError>> = Vec::with_capacity(reqs.len());
        for r in reqs {
            let mut before = None;
            let res = match &r {
                Request::Read { lba, sectors } => g
                    .media
                    .check_range(*lba, *sectors)
                    .and_then(|_| g.zones.check_read(*lba, *sectors))
                    .and_then(|u| {
                        if u.is_empty() {
                            Ok(())
                        } else {
                            Err(DeviceError::Unsupported(
                                "batched read past a write pointer",
                            ))
                        }
                    }),
                Request::Write { lba, data, .. } => {
                    let ss = g.media.sector_size() as u64;
                    Self::writable(g)
                        .and_then(|_| {
                            if data.is_empty() || !(data.len() as u64).is_multiple_of(ss) {
                                Err(DeviceError::BadLength {
                                    len: data.len(),
                                    sector_size: ss as u32,
                                })
                            } else {
                                Ok(data.len() as u64 / ss)
                            }
                        })
                        .and_then(|n| g.media.check_range(*lba, n).map(|_| n))
                        .and_then(|n| {
                            let z = g.zones.zone(g.zones.zone_of(*lba) as u64)?.clone();
                            g.zones.apply_write(*lba, n)?;
                            before = Some((z, n * ss));
                            Ok(())
                        })
                }
                Request::Flush => Ok(()),
            };
            match res {
                Ok(()) => {
                    checked.push(r);
                    befores.push(before);
                    errors.push(None);
                }
                Err(e) => errors.push(Some(e)),
            }
        }
        let mut results = g.media.submit(checked);
        // A write that failed (a power cut stops the rest of the batch) was not acknowledged:
        // its zone goes back to the state before the first failed write to it, as for a single
        // write, so no write pointer covers sectors that never reached the media.
        let mut restored: Vec<u32> = Vec::new();
        for (res, before) in results.iter().zip(&befores) {
            let Some((z, bytes)) = before else { continue };
            if res.is_ok() {
                g.zone_bytes[z.index as usize] += bytes;
            } else if !restored.contains(&z.index) {
                restored.push(z.index);
                g.zones
                    .set_state(z.index, z.condition, z.write_pointer_lba, z.non_seq);
            }
        }
        results.resize_with(befores.len(), || Err(DeviceError::PowerLoss));
        let mut done = results.into_iter();
        let out: Vec<Result<Completion>> = errors
            .into_iter()
            .map(|e| match e {
                Some(e) => Err(e),
                None => done.next().unwrap_or(Err(DeviceError::PowerLoss)),
            })
            .collect();
        if out.iter().any(|r| r.is_ok()) && g.image.is_some() && !g.media.write_cache_enabled() {
            let _ = Self::persist(g);
        }
        out
    }

    fn now(&self) -> Nanos {
        self.inner.lock().media.now()
    }

    fn idle(&self, d: Nanos) {
        self.inner.lock().media.idle(d)
    }
}

impl ZonedDevice for Disk {
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        self.inner.lock().zones.report(filter)
    }

    fn zone(&self, index: u32) -> Result<Zone> {
        self.inner.lock().zones.zone(index as u64).cloned()
    }

    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> Result<IoDone> {
        let mut g = self.inner.lock();
        Self::writable(&g)?;
        let targets: Vec<u32> = match target {
            ZoneTarget::One(i) => {
                g.zones.zone(i as u64)?;
                vec![i]
            }
            ZoneTarget::All => g
                .zones
                .zones()
                .iter()
                .filter(|z| action.applies_to_all(z))
                .map(|z| z.index)
                .collect(),
        };
        let d = g.media.command()?;
        for i in targets {
            g.zones.apply(action, i as u64)?;
            if action == ZoneAction::Reset {
                let z = g.zones.zone(i as u64)?.clone();
                g.media.discard(z.start_lba, z.len_lba)?;
            }
        }
        g.media.count_zone_op();
        Self::persist(&mut g)?;
        Ok(d)
    }

    fn can_rewind(&self) -> bool {
        self.config.zones.set_write_pointer
    }

    fn rewind_write_pointer(&self, index: u32, lba: u64) -> Result<IoDone> {
        if !self.config.zones.set_write_pointer {
            return Err(DeviceError::Unsupported("setting a write pointer back"));
        }
        let mut g = self.inner.lock();
        Self::writable(&g)?;
        let old = g.zones.zone(index as u64)?.write_pointer_lba;
        // Check before touching the media: the table refuses forward moves and bad zones.
        let mut table = g.zones.clone();
        table.rewind(index, lba)?;
        let d = if old > lba {
            g.media.discard(lba, old - lba)?
        } else {
            g.media.command()?
        };
        g.zones = table;
        g.media.count_zone_op();
        Self::persist(&mut g)?;
        Ok(d)
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        let g = self.inner.get_mut();
        if g.image.is_some() && !g.read_only && g.poisoned.is_none() && g.media.is_powered() {
            if let Err(e) = g.media.flush().and_then(|_| Self::persist(g)) {
                tracing::warn!("closing disk image: {e}");
            }
        }
    }
}
