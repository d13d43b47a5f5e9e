//! `DmDrive`: a drive-managed SMR drive — raw shingled media, a translation layer, an optional
//! volatile write cache — behind the block interface. Thread safe: commands serialize on one
//! mutex, as on one actuator.

use crate::config::{DmConfig, StlKind};
use crate::error::Result;
use crate::fullassoc::FullyAssociative;
use crate::journal::Journal;
use crate::layer::{Layer, WriteReq};
use crate::layout::{build, Layout};
use crate::setassoc::SetAssociative;
use crate::stats::StlStats;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tegula_device::media::{ClockMode, Completion, IoDone, Media, PowerOnReport, Request};
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

impl DmDrive {
    /// Builds a drive in memory (sparse; metadata-only when `store_data` is false).
    pub fn new(config: DmConfig) -> Result<Self> {
        let (media, layout) = build(&config)?;
        let ss = layout.sector;
        let capacity = layout.capacity();
        let layer = make_layer(&config, layout)?;
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
        Ok(DmDrive {
            inner: Mutex::new(Inner {
                media,
                layer,
                vcache: config.volatile_cache.then(BTreeMap::new),
                vcache_max: (config.volatile_cache_size / ss).max(1),
                bypass_min: (config.bypass_min / ss).max(1),
                last_io: 0,
                clock: ClockMode::Virtual,
                epoch: None,
            }),
            config,
            info,
        })
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

    /// Restores power and recovers the translation layer from what reached the media.
    pub fn power_on(&self) -> Result<PowerOnReport> {
        let mut g = self.inner.lock();
        let g = &mut *g;
        let r = g.media.power_on();
        if let Some(c) = &mut g.vcache {
            c.clear();
        }
        g.layer.recover(&mut g.media)?;
        g.last_io = g.media.now();
        Ok(r)
    }
}

fn make_layer(cfg: &DmConfig, layout: Layout) -> Result<Box<dyn Layer>> {
    Ok(match cfg.stl {
        StlKind::Journal => Box::new(Journal::new(cfg, layout)?),
        StlKind::SetAssociative => Box::new(SetAssociative::new(cfg, layout)?),
        StlKind::FullyAssociative => Box::new(FullyAssociative::new(cfg, layout)?),
    })
}

impl Inner {
    fn ss(&self) -> u64 {
        self.media.sector_size() as u64
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
        if !self.media.is_powered() {
            return;
        }
        if self.vcache.as_ref().is_some_and(|c| !c.is_empty()) {
            let _ = self.destage(0);
            self.last_io = self.media.now();
        }
        let last = self.last_io;
        let _ = self.layer.background(&mut self.media, last, target);
        if self.media.now() < target {
            let d = target - self.media.now();
            self.media.idle(d);
        }
    }

    /// Destages the volatile cache until at most `keep` sectors stay dirty: long runs bypass
    /// the persistent cache, the rest is packed into the layer as one batch.
    fn destage(&mut self, keep: u64) -> Result<()> {
        let Some(cache) = self.vcache.take() else {
            return Ok(());
        };
        let mut cache = cache;
        let mut runs: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut taken = 0u64;
        let total = cache.len() as u64;
        while total - taken > keep {
            let Some((&lba, _)) = cache.iter().next() else {
                break;
            };
            let mut data = Vec::new();
            let mut cur = lba;
            while let Some(s) = cache.remove(&cur) {
                data.extend_from_slice(&s);
                cur += 1;
                taken += 1;
            }
            runs.push((lba, data));
        }
        self.vcache = Some(cache);
        let ss = self.ss();
        let mut small: Vec<WriteReq<'_>> = Vec::new();
        for (lba, data) in &runs {
            if data.len() as u64 / ss >= self.bypass_min {
                self.layer
                    .bypass(&mut self.media, WriteReq { lba: *lba, data })?;
            } else {
                small.push(WriteReq { lba: *lba, data });
            }
        }
        for chunk in small.chunks(32) {
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

    fn flush(&mut self) -> DevResult<IoDone> {
        if !self.media.is_powered() {
            return Err(DeviceError::PowerLoss);
        }
        let start = self.arrive();
        self.destage(0)?;
        self.media.command()?;
        Ok(self.finish(start))
    }
}

impl BlockDevice for DmDrive {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> DevResult<IoDone> {
        self.inner.lock().read(self.info.capacity_sectors, lba, buf)
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> DevResult<IoDone> {
        self.inner
            .lock()
            .write(self.info.capacity_sectors, lba, data, flags.fua)
    }

    fn flush(&self) -> DevResult<IoDone> {
        self.inner.lock().flush()
    }

    fn discard(&self, lba: u64, sectors: u64) -> DevResult<IoDone> {
        let mut g = self.inner.lock();
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
        g2.layer.discard(&mut g2.media, lba, sectors)?;
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
