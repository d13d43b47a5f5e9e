//! `DmDrive`: a drive-managed SMR drive — raw shingled media, a translation layer, an optional
//! volatile write cache — behind the block interface, in memory or in a drive image. Thread
//! safe: commands serialize on one mutex, as on one actuator.

use crate::config::{DmConfig, StlKind};
use crate::durable::Shape;
use crate::error::{Result, StlError};
use crate::fullassoc::FullyAssociative;
use crate::image::{DmImage, DriveState};
use crate::journal::Journal;
use crate::layer::{Layer, WriteReq};
use crate::layout::{plan, Layout};
use crate::metalog::{FileMeta, MetaLog};
use crate::setassoc::{flash_bytes, SetAssociative};
use crate::stats::StlStats;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use tegula_device::image::ImageState;
use tegula_device::media::{ClockMode, Completion, IoDone, Media, PowerOnReport, Request};
use tegula_device::store::{FileStore, MemStore, NullStore, Store};
use tegula_device::{BlockDevice, DeviceError, DeviceInfo, Nanos, Stats, WriteFlags};

type DevResult<T> = std::result::Result<T, DeviceError>;

struct Inner {
    media: Media,
    layer: Box<dyn Layer>,
    /// Volatile write cache: dirty sectors by logical LBA.
    vcache: Option<BTreeMap<u64, Box<[u8]>>>,
    vcache_max: u64,
    bypass_min: u64,
    last_io: Nanos,
    clock: ClockMode,
    epoch: Option<(Instant, Nanos)>,
    image: Option<DmImage>,
    read_only: bool,
    poisoned: Option<String>,
    destage_buf: Vec<u8>,
    last_save: Instant,
}

/// A drive-managed SMR drive.
pub struct DmDrive {
    inner: Mutex<Inner>,
    config: DmConfig,
    info: DeviceInfo,
}

impl std::fmt::Debug for DmDrive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmDrive").field("info", &self.info).finish()
    }
}

/// Where a new drive keeps its sectors and metadata.
enum Backing<'a> {
    Memory,
    Create(&'a Path),
}

impl DmDrive {
    /// Builds a drive in memory (sparse; metadata-only when `store_data` is false).
    pub fn new(config: DmConfig) -> Result<Self> {
        Self::build(config, Backing::Memory)
    }

    /// Creates a drive image at `path` (refuses to overwrite): the raw media's data region
    /// (sparse; absent when `store_data` is false), the drive state, and the translation
    /// layer's metadata log. See `docs/dm-smr-image-format.md`.
    pub fn create_image(path: &Path, config: DmConfig) -> Result<Self> {
        let d = Self::build(config, Backing::Create(path))?;
        d.save_state()?;
        Ok(d)
    }

    fn build(config: DmConfig, backing: Backing<'_>) -> Result<Self> {
        let p = plan(&config)?;
        let ss = p.layout.sector;
        let data_bytes = if config.store_data { p.total * ss } else { 0 };
        let flash = if config.store_data {
            flash_bytes(&config, &p.layout)
        } else {
            0
        };
        let shape = shape_of(&p.layout, p.total);
        let mut flash_store: Option<Box<dyn Store>> = None;
        let (store, log, image): (Box<dyn Store>, MetaLog, Option<DmImage>) = match backing {
            Backing::Memory => (
                if config.store_data {
                    Box::new(MemStore::new())
                } else {
                    Box::new(NullStore)
                },
                MetaLog::in_memory(),
                None,
            ),
            Backing::Create(path) => {
                let img = DmImage::create(path, &config, &p.layout, data_bytes, flash)?;
                let h = &img.header;
                if flash > 0 {
                    flash_store = Some(Box::new(FileStore::new(
                        img.handle()?,
                        h.flash_offset,
                        true,
                    )));
                }
                let store: Box<dyn Store> = if config.store_data {
                    Box::new(FileStore::new(img.handle()?, h.data_offset, true))
                } else {
                    Box::new(NullStore)
                };
                let meta = FileMeta::new(img.handle()?, h.meta_offset, h.meta_slot);
                let log = MetaLog::new(Box::new(meta), h.meta_slot, true);
                (store, log, Some(img))
            }
        };
        let (media, layout) = p.media(store)?;
        let layer = make_layer(&config, layout, log, shape, flash_store)?;
        Ok(Self::assemble(config, media, layer, image, false))
    }

    fn assemble(
        config: DmConfig,
        media: Media,
        layer: Box<dyn Layer>,
        image: Option<DmImage>,
        read_only: bool,
    ) -> Self {
        let ss = media.sector_size() as u64;
        let capacity = config.capacity / ss;
        let info = DeviceInfo {
            model: format!("tegula dm-smr {} ({:?} STL)", config.media, config.stl),
            kind: "dm-smr".into(),
            sector_size: ss as u32,
            capacity_sectors: capacity,
            zone_sectors: 0,
            zones: 0,
            conventional_zones: 0,
            max_open_zones: 0,
            unrestricted_reads: true,
            stores_data: config.store_data,
        };
        DmDrive {
            inner: Mutex::new(Inner {
                media,
                layer,
                vcache: config.volatile_cache.then(BTreeMap::new),
                vcache_max: (config.volatile_cache_size / ss).max(1),
                bypass_min: (config.bypass_min / ss).max(1),
                last_io: 0,
                clock: ClockMode::Virtual,
                epoch: None,
                image,
                read_only,
                poisoned: None,
                destage_buf: Vec::new(),
                last_save: Instant::now(),
            }),
            config,
            info,
        }
    }

    /// Opens a drive image: restores the media state, rebuilds the translation layer from
    /// its metadata log (finishing an interrupted band rewrite unless `read_only`).
    pub fn open_image(path: &Path, read_only: bool) -> Result<Self> {
        let (img, state) = DmImage::open(path, !read_only)?;
        let config = img.header.config.clone();
        let p = plan(&config)?;
        let ss = p.layout.sector;
        let data_bytes = if config.store_data { p.total * ss } else { 0 };
        let flash = if config.store_data {
            flash_bytes(&config, &p.layout)
        } else {
            0
        };
        img.check_data(data_bytes, flash)?;
        let h = img.header.clone();
        let flash_store: Option<Box<dyn Store>> = if flash > 0 {
            Some(Box::new(FileStore::new(
                img.handle()?,
                h.flash_offset,
                !read_only,
            )))
        } else {
            None
        };
        let store: Box<dyn Store> = if config.store_data {
            Box::new(FileStore::new(img.handle()?, h.data_offset, !read_only))
        } else {
            Box::new(NullStore)
        };
        let shape = shape_of(&p.layout, p.total);
        let meta = FileMeta::new(img.handle()?, h.meta_offset, h.meta_slot);
        let log = MetaLog::new(Box::new(meta), h.meta_slot, false);
        let (mut media, layout) = p.media(store)?;
        let bad = |problem: String| StlError::Image {
            path: path.display().to_string(),
            problem,
        };
        let total = media.capacity();
        for (a, b) in state
            .media
            .destroyed
            .iter()
            .chain(state.media.injected.iter())
        {
            if b > total {
                return Err(bad(format!(
                    "damaged range {a}..{b} lies outside the media ({total} sectors)"
                )));
            }
        }
        media.set_now(state.media.now);
        media.shingling_mut().set_destroyed(state.media.destroyed);
        media.set_injected(state.media.injected);
        media.restore_stats(state.media.stats);
        let mut layer = make_layer(&config, layout, log, shape, flash_store)?;
        layer
            .recover(&mut media, !read_only)
            .map_err(|e| bad(format!("recovering the translation layer: {e}")))?;
        let replayed = layer.stats().replayed_records;
        let mut s = state.stl.clone();
        s.replayed_records = replayed;
        layer.restore_stats(&s);
        let last = media.now();
        let d = Self::assemble(config, media, layer, Some(img), read_only);
        d.inner.lock().last_io = last;
        Ok(d)
    }

    /// Flushes the volatile cache, syncs the data and metadata, and persists the drive state;
    /// the image is complete afterwards. A no-op for in-memory drives.
    pub fn close(self) -> Result<()> {
        let mut g = self.inner.lock();
        if g.read_only || g.poisoned.is_some() || !g.media.is_powered() {
            return Ok(());
        }
        g.flush()?;
        Ok(())
    }

    /// Persists the drive state (clock, damaged sectors, statistics) to the image now.
    pub fn save_state(&self) -> Result<()> {
        self.inner.lock().save_state()
    }

    /// Whether the drive lives in an image file.
    pub fn is_image(&self) -> bool {
        self.inner.lock().image.is_some()
    }

    /// Builds a drive from a TOML configuration.
    pub fn from_toml(text: &str) -> Result<Self> {
        Self::new(DmConfig::from_toml(text)?)
    }

    /// The configuration.
    pub fn config(&self) -> &DmConfig {
        &self.config
    }

    /// Translation-layer statistics.
    pub fn stl_stats(&self) -> StlStats {
        let g = self.inner.lock();
        let mut s = g.layer.stats();
        s.volatile_dirty_bytes =
            g.vcache.as_ref().map_or(0, |c| c.len() as u64) * self.info.sector_size as u64;
        s
    }

    /// Statistics of the raw media (seeks, media bytes, busy time).
    pub fn media_stats(&self) -> Stats {
        self.inner.lock().media.stats()
    }

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

    /// Runs `f` on the raw media (tests and tools: inspect destroyed sectors, positions).
    pub fn with_media<R>(&self, f: impl FnOnce(&mut Media) -> R) -> R {
        f(&mut self.inner.lock().media)
    }

    /// Arms a power cut during the `after`-th media write from now (cleaning and metadata
    /// writes count too); see [`Media::arm_power_cut`].
    pub fn arm_power_cut(&self, after: u64, seed: u64) {
        self.inner.lock().media.arm_power_cut(after, seed);
    }

    /// Cuts power now: the volatile cache is lost.
    pub fn power_cut(&self) {
        let mut g = self.inner.lock();
        g.media.power_cut();
        if let Some(c) = &mut g.vcache {
            c.clear();
        }
    }

    /// Whether the drive has power.
    pub fn is_powered(&self) -> bool {
        self.inner.lock().media.is_powered()
    }

    /// Restores power and recovers the translation layer from its metadata log.
    pub fn power_on(&self) -> Result<PowerOnReport> {
        let mut g = self.inner.lock();
        let g = &mut *g;
        let r = g.media.power_on();
        if let Some(c) = &mut g.vcache {
            c.clear();
        }
        let redo = !g.read_only;
        g.layer.recover(&mut g.media, redo)?;
        g.last_io = g.media.now();
        g.save_state()?;
        Ok(r)
    }
}

fn shape_of(layout: &Layout, total: u64) -> Shape {
    Shape {
        capacity: layout.capacity(),
        pos_limit: total,
        phys_bands: layout.bands.len(),
        logical_bands: layout.data.len(),
        cache_bands: 0,
        zones: 0,
    }
}

fn make_layer(
    cfg: &DmConfig,
    layout: Layout,
    log: MetaLog,
    shape: Shape,
    flash: Option<Box<dyn Store>>,
) -> Result<Box<dyn Layer>> {
    Ok(match cfg.stl {
        StlKind::Journal => Box::new(Journal::new(cfg, layout, log, shape)?),
        StlKind::SetAssociative => Box::new(SetAssociative::new(cfg, layout, log, shape, flash)?),
        StlKind::FullyAssociative => Box::new(FullyAssociative::new(cfg, layout, log, shape)?),
    })
}

impl Inner {
    fn ss(&self) -> u64 {
        self.media.sector_size() as u64
    }

    /// Writes the drive state to the image and syncs it (the media's damage survives even a
    /// power cut the host process does not outlive).
    fn save_state(&mut self) -> Result<()> {
        self.save_state_with(true)
    }

    /// At most once a second of wall time, writes the drive state without syncing, so that a
    /// server killed between FLUSHes leaves counters and clock nearly current.
    fn maybe_save_state(&mut self) {
        if self.image.is_some() && self.last_save.elapsed() >= Duration::from_secs(1) {
            let _ = self.save_state_with(false);
        }
    }

    fn save_state_with(&mut self, sync: bool) -> Result<()> {
        self.last_save = Instant::now();
        if self.read_only {
            return Ok(());
        }
        let Some(img) = &mut self.image else {
            return Ok(());
        };
        let state = DriveState {
            seq: 0,
            media: ImageState {
                seq: 0,
                now: self.media.now(),
                zones: Vec::new(),
                destroyed: self.media.shingling().destroyed().clone(),
                injected: self.media.injected_errors().clone(),
                stats: self.media.stats(),
            },
            stl: self.layer.stats(),
        };
        if let Err(e) = img.write_state(state, sync) {
            self.poisoned = Some(e.to_string());
            return Err(e);
        }
        Ok(())
    }

    fn writable(&self) -> DevResult<()> {
        if self.read_only {
            return Err(DeviceError::ReadOnlyHandle);
        }
        if let Some(p) = &self.poisoned {
            return Err(DeviceError::Poisoned(p.clone()));
        }
        Ok(())
    }

    /// After a failed command: a power cut persists the media's damage; a metadata failure
    /// poisons the drive.
    fn after_error(&mut self, e: &DeviceError) {
        match e {
            DeviceError::PowerLoss => {
                if let Some(c) = &mut self.vcache {
                    c.clear();
                }
                let _ = self.save_state();
            }
            DeviceError::Poisoned(m) if self.poisoned.is_none() => {
                self.poisoned = Some(m.clone());
            }
            _ => {}
        }
    }

    fn check(&self, cap: u64, lba: u64, len: usize) -> DevResult<u64> {
        if !self.media.is_powered() {
            return Err(DeviceError::PowerLoss);
        }
        let ss = self.ss();
        if len == 0 || !(len as u64).is_multiple_of(ss) {
            return Err(DeviceError::BadLength {
                len,
                sector_size: ss as u32,
            });
        }
        let n = len as u64 / ss;
        if lba.checked_add(n).is_none_or(|e| e > cap) {
            return Err(DeviceError::OutOfRange {
                lba,
                sectors: n,
                capacity: cap,
            });
        }
        Ok(n)
    }

    /// A command arrives: in paced mode the wall-clock gap since the last one is idle time.
    fn arrive(&mut self) -> Nanos {
        if let (ClockMode::Paced, Some((wall, v0))) = (self.clock, self.epoch) {
            let wall_now = v0 + wall.elapsed().as_nanos() as Nanos;
            if wall_now > self.media.now() {
                self.idle_until(wall_now);
            }
        }
        self.media.now()
    }

    fn finish(&mut self, start: Nanos) -> IoDone {
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

    fn idle_until(&mut self, target: Nanos) {
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

    /// Destages the volatile cache until at most `keep` sectors stay dirty: long runs bypass
    /// the persistent cache, the rest is packed into the layer as one batch. While the cache
    /// only needs room (`keep > 0`), the partial last band of a long run stays cached, since a
    /// streaming writer is about to complete it: destaging it now would rewrite that band twice.
    fn destage(&mut self, keep: u64) -> Result<()> {
        let Some(cache) = self.vcache.take() else {
            return Ok(());
        };
        let mut cache = cache;
        let mut runs: Vec<(u64, u64)> = Vec::new();
        // Start of each chosen run → its end (a second pass takes only what follows).
        let mut chosen: BTreeMap<u64, u64> = BTreeMap::new();
        let mut taken = 0u64;
        let total = cache.len() as u64;
        let mut from = 0u64;
        let mut trim = keep > 0;
        while total - taken > keep {
            let Some((&lba, _)) = cache.range(from..).next() else {
                if trim {
                    // Not enough whole bands: take the tails too.
                    trim = false;
                    from = 0;
                    continue;
                }
                break;
            };
            let mut end = lba;
            while cache.contains_key(&end) {
                end += 1;
            }
            from = end;
            let start = chosen.get(&lba).copied().unwrap_or(lba);
            if trim && end - lba >= self.bypass_min {
                let (band_lo, _) = self.layer.band_range(end - 1);
                if band_lo > lba && band_lo < end {
                    end = band_lo;
                } else if band_lo <= lba {
                    continue;
                }
            }
            if start >= end {
                continue;
            }
            chosen.insert(lba, end);
            taken += end - start;
            runs.push((start, end));
        }
        let ss = self.ss();
        let mut small: Vec<(u64, Vec<u8>)> = Vec::new();
        // Long runs go band by band through one reused buffer (no fresh allocation, and no
        // page faults, per destage).
        let mut buf = std::mem::take(&mut self.destage_buf);
        let mut res = Ok(());
        for &(lba, end) in &runs {
            if end - lba < self.bypass_min {
                let mut data = Vec::with_capacity(((end - lba) * ss) as usize);
                for l in lba..end {
                    if let Some(s) = cache.remove(&l) {
                        data.extend_from_slice(&s);
                    }
                }
                small.push((lba, data));
                continue;
            }
            let mut cur = lba;
            while cur < end && res.is_ok() {
                let (_, hi) = self.layer.band_range(cur);
                let b = hi.min(end);
                buf.clear();
                for l in cur..b {
                    if let Some(s) = cache.remove(&l) {
                        buf.extend_from_slice(&s);
                    }
                }
                res = self.layer.bypass(
                    &mut self.media,
                    WriteReq {
                        lba: cur,
                        data: &buf,
                    },
                );
                cur = b;
            }
        }
        self.destage_buf = buf;
        self.vcache = Some(cache);
        res?;
        let reqs: Vec<WriteReq<'_>> = small
            .iter()
            .map(|(lba, data)| WriteReq { lba: *lba, data })
            .collect();
        for chunk in reqs.chunks(32) {
            self.layer.write(&mut self.media, chunk)?;
        }
        Ok(())
    }

    fn read(&mut self, cap: u64, lba: u64, buf: &mut [u8]) -> DevResult<IoDone> {
        let n = self.check(cap, lba, buf.len())?;
        let start = self.arrive();
        let ss = self.ss() as usize;
        let covered = self
            .vcache
            .as_ref()
            .is_some_and(|c| (lba..lba + n).all(|l| c.contains_key(&l)));
        if covered {
            self.media.command()?;
        } else {
            self.layer.read(&mut self.media, lba, buf)?;
        }
        if let Some(c) = &self.vcache {
            for (&l, s) in c.range(lba..lba + n) {
                let o = (l - lba) as usize * ss;
                buf[o..o + ss].copy_from_slice(s);
            }
        }
        Ok(self.finish(start))
    }

    fn write(&mut self, cap: u64, lba: u64, data: &[u8], fua: bool) -> DevResult<IoDone> {
        self.writable()?;
        let n = self.check(cap, lba, data.len())?;
        let start = self.arrive();
        let ss = self.ss() as usize;
        match &mut self.vcache {
            Some(c) if !fua => {
                for i in 0..n {
                    let o = i as usize * ss;
                    c.insert(lba + i, data[o..o + ss].into());
                }
                let dirty = c.len() as u64;
                self.media.command()?;
                if dirty > self.vcache_max {
                    let keep = self.vcache_max / 2;
                    self.destage(keep)?;
                }
            }
            _ => {
                if let Some(c) = &mut self.vcache {
                    let keys: Vec<u64> = c.range(lba..lba + n).map(|(&k, _)| k).collect();
                    for k in keys {
                        c.remove(&k);
                    }
                }
                self.layer
                    .write(&mut self.media, &[WriteReq { lba, data }])?;
            }
        }
        Ok(self.finish(start))
    }

    /// FLUSH: destage the volatile cache; for an image, sync the data and the metadata log to
    /// the host and persist the drive state.
    fn flush(&mut self) -> DevResult<IoDone> {
        if !self.media.is_powered() {
            return Err(DeviceError::PowerLoss);
        }
        let start = self.arrive();
        if self.read_only {
            self.media.command()?;
            return Ok(self.finish(start));
        }
        self.writable()?;
        self.destage(0)?;
        self.media.flush()?;
        if self.image.is_some() {
            self.layer.sync()?;
            self.save_state()?;
        }
        Ok(self.finish(start))
    }
}

impl BlockDevice for DmDrive {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> DevResult<IoDone> {
        let mut g = self.inner.lock();
        let r = g.read(self.info.capacity_sectors, lba, buf);
        if let Err(e) = &r {
            g.after_error(e);
        }
        r
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> DevResult<IoDone> {
        let mut g = self.inner.lock();
        let r = g.write(self.info.capacity_sectors, lba, data, flags.fua);
        if let Err(e) = &r {
            g.after_error(e);
        }
        r
    }

    fn flush(&self) -> DevResult<IoDone> {
        let mut g = self.inner.lock();
        let r = g.flush();
        if let Err(e) = &r {
            g.after_error(e);
        }
        r
    }

    fn discard(&self, lba: u64, sectors: u64) -> DevResult<IoDone> {
        let mut g = self.inner.lock();
        g.writable()?;
        let ss = g.ss() as usize;
        g.check(
            self.info.capacity_sectors,
            lba,
            (sectors as usize).max(1) * ss,
        )?;
        let start = g.arrive();
        if let Some(c) = &mut g.vcache {
            let keys: Vec<u64> = c.range(lba..lba + sectors).map(|(&k, _)| k).collect();
            for k in keys {
                c.remove(&k);
            }
        }
        let g2 = &mut *g;
        if let Err(e) = g2.layer.discard(&mut g2.media, lba, sectors) {
            let e: DeviceError = e.into();
            g2.after_error(&e);
            return Err(e);
        }
        g2.media.command()?;
        Ok(g.finish(start))
    }

    fn submit(&self, reqs: Vec<Request>) -> Vec<DevResult<Completion>> {
        let mut g = self.inner.lock();
        let cap = self.info.capacity_sectors;
        let mut out: Vec<DevResult<Completion>> = Vec::with_capacity(reqs.len());
        let start = g.arrive();
        let mut i = 0;
        while i < reqs.len() {
            match &reqs[i] {
                Request::Write { lba, data, fua } if g.vcache.is_some() => {
                    out.push(g.write(cap, *lba, data, *fua).map(|d| Completion {
                        done: IoDone { start, end: d.end },
                        data: None,
                    }));
                    i += 1;
                }
                Request::Write { .. } if g.writable().is_err() => {
                    out.push(g.writable().map(|_| Completion {
                        done: IoDone { start, end: start },
                        data: None,
                    }));
                    i += 1;
                }
                Request::Write { .. } => {
                    // Consecutive writes form one batch: the layer may pack them together.
                    let mut j = i;
                    while j < reqs.len() && matches!(reqs[j], Request::Write { .. }) {
                        j += 1;
                    }
                    let mut res: Vec<Option<DevResult<Completion>>> =
                        (i..j).map(|_| None).collect();
                    let mut batch = Vec::new();
                    let mut idx = Vec::new();
                    for (k, r) in reqs[i..j].iter().enumerate() {
                        if let Request::Write { lba, data, .. } = r {
                            match g.check(cap, *lba, data.len()) {
                                Ok(_) => {
                                    batch.push(WriteReq { lba: *lba, data });
                                    idx.push(k);
                                }
                                Err(e) => res[k] = Some(Err(e)),
                            }
                        }
                    }
                    if !batch.is_empty() {
                        let g2 = &mut *g;
                        match g2.layer.write(&mut g2.media, &batch) {
                            Ok(ends) => {
                                for (k, end) in idx.iter().zip(ends) {
                                    res[*k] = Some(Ok(Completion {
                                        done: IoDone { start, end },
                                        data: None,
                                    }));
                                }
                            }
                            Err(e) => {
                                let e: DeviceError = e.into();
                                g2.after_error(&e);
                                for k in &idx {
                                    res[*k] = Some(Err(clone_err(&e)));
                                }
                            }
                        }
                    }
                    out.extend(
                        res.into_iter()
                            .map(|r| r.unwrap_or(Err(DeviceError::PowerLoss))),
                    );
                    i = j;
                }
                Request::Read { lba, sectors } => {
                    let mut buf = vec![0u8; (*sectors * g.ss()) as usize];
                    let r = g.read(cap, *lba, &mut buf).map(|d| Completion {
                        done: IoDone { start, end: d.end },
                        data: Some(buf),
                    });
                    out.push(r);
                    i += 1;
                }
                Request::Flush => {
                    out.push(g.flush().map(|d| Completion {
                        done: IoDone { start, end: d.end },
                        data: None,
                    }));
                    i += 1;
                }
            }
        }
        g.finish(start);
        out
    }

    fn now(&self) -> Nanos {
        self.inner.lock().media.now()
    }

    fn idle(&self, d: Nanos) {
        let mut g = self.inner.lock();
        let target = g.media.now() + d;
        g.idle_until(target);
    }
}

fn clone_err(e: &DeviceError) -> DeviceError {
    match e {
        DeviceError::PowerLoss => DeviceError::PowerLoss,
        DeviceError::MediaError { lba, cause } => DeviceError::MediaError {
            lba: *lba,
            cause: *cause,
        },
        other => DeviceError::Config(other.to_string()),
    }
}
