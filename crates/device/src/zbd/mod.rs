//! A Linux zoned block device (a host-managed or host-aware SMR drive `/dev/sdX`, an NVMe ZNS
//! namespace `/dev/nvmeXnY`, a zoned `null_blk` `/dev/nullbN`, a dm device) behind
//! [`ZonedDevice`]: geometry and limits from sysfs ([`sysfs`]), zones from `BLKREPORTZONE`,
//! zone management by the zone ioctls ([`ioctl`]), data by `O_DIRECT` `pread`/`pwrite` at the
//! write pointer and `fdatasync` as the flush (`RWF_DSYNC` for a write with FUA). Time is wall
//! time since the device was opened.
//!
//! Every write is checked against the write pointers this handle keeps (it opens the device
//! exclusively, so nobody else moves them) before it reaches the kernel, with the same rules
//! and typed errors as the emulator ([`crate::zone::ZoneTable`]): an unaligned write, a write
//! past the zone capacity or to a full zone never reaches the device. What only the device
//! knows (its open and active resources, whether it serves reads past a write pointer) comes
//! back from the kernel as an errno and is mapped onto the same errors. After any failed
//! command the zone is reported again, so the kept state is the device's.
//!
//! Sectors: the device's LBAs are counted in sectors of [`ZbdOptions::sector_size`] (default the
//! larger of the logical block size and 4096 bytes, so that layers written for 4 KiB sectors
//! run unchanged on a 512-byte device); the kernel's interface counts 512-byte sectors.
//!
//! Locking: opened for writing, the device is claimed with `O_EXCL` (which a mounted file
//! system or another exclusive opener refuses) and an exclusive `flock`; opened read-only, a
//! shared `flock` keeps a tegula writer away while the handle lives.

pub mod aligned;
pub mod ioctl;
pub mod sysfs;

use crate::api::{BlockDevice, DeviceInfo, WriteFlags, ZoneTarget, ZonedDevice};
use crate::error::{DeviceError, Result};
use crate::media::{Completion, IoDone, Request};
use crate::units::Nanos;
use crate::zone::{Zone, ZoneAction, ZoneCondition, ZoneFilter, ZoneType};
use aligned::AlignedBuf;
use ioctl::{Mgmt, RawZone};
use parking_lot::Mutex;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
pub use sysfs::{zoned_model_of, QueueLimits, ZonedModel};

/// Bytes moved per system call through a bounce buffer (a caller's unaligned buffer).
const BOUNCE_BYTES: usize = 4 << 20;

/// How to open a zoned block device.
#[derive(Debug, Clone, Default)]
pub struct ZbdOptions {
    /// Open without write access: writes and zone management fail, a shared lock is taken
    /// (default false).
    pub read_only: bool,
    /// Bytes per LBA of the opened device: a multiple of the logical block size. Default: the
    /// logical block size or 4096, whichever is larger.
    pub sector_size: Option<u32>,
    /// How long to wait for another tegula process's lock (default:
    /// [`crate::lock::default_wait`]).
    pub lock_wait: Option<Duration>,
}

/// An opened Linux zoned block device.
pub struct Zbd {
    path: PathBuf,
    file: File,
    limits: QueueLimits,
    info: DeviceInfo,
    /// 512-byte kernel sectors per LBA.
    scale: u64,
    read_only: bool,
    epoch: Instant,
    zones: Mutex<Vec<Zone>>,
}

impl std::fmt::Debug for Zbd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zbd")
            .field("path", &self.path)
            .field("info", &self.info)
            .finish()
    }
}

/// Where the block device with `rdev` is mounted, from `/proc/self/mountinfo`.
fn mount_point_of(file: &File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let rdev = file.metadata().ok()?.rdev();
    let want = format!("{}:{}", libc::major(rdev), libc::minor(rdev));
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(2) == Some(&want.as_str()))
            .then(|| f.get(4).map(|m| m.to_string()))
            .flatten()
    })
}

/// Opens `path` with `oo`; while the device is busy (`EBUSY`: another exclusive opener) and
/// another tegula process holds its lock, retries for up to `wait` (at least half a second, as
/// [`crate::lock::lock`] does); then fails naming the holder: the tegula process, or the
/// mount point of a kernel file system on it.
fn open_exclusive(oo: &std::fs::OpenOptions, path: &Path, wait: Duration) -> Result<File> {
    let start = Instant::now();
    loop {
        match oo.open(path) {
            Ok(f) => return Ok(f),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                let probe = File::open(path).ok();
                let tegula = probe.as_ref().and_then(crate::lock::holder);
                if tegula.is_some() && start.elapsed() < wait.max(Duration::from_millis(500)) {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                let holder = tegula
                    .or_else(|| {
                        probe
                            .as_ref()
                            .and_then(mount_point_of)
                            .map(|m| format!("the kernel: it is mounted at {m}"))
                    })
                    .unwrap_or_else(|| {
                        "another program that opened it exclusively (O_EXCL), or a device \
                         mapper target"
                            .into()
                    });
                return Err(DeviceError::Locked {
                    path: path.display().to_string(),
                    holder,
                });
            }
            Err(e) => return Err(DeviceError::io(format!("opening {}", path.display()), e)),
        }
    }
}

impl Zbd {
    /// Opens the zoned block device at `path`. Fails for anything that is not a host-managed
    /// or host-aware block device, and for a device another program holds exclusively.
    pub fn open(path: &Path, opts: ZbdOptions) -> Result<Zbd> {
        use std::os::unix::fs::FileTypeExt;
        let meta = std::fs::metadata(path)
            .map_err(|e| DeviceError::io(format!("stat {}", path.display()), e))?;
        if !meta.file_type().is_block_device() {
            return Err(DeviceError::Config(format!(
                "{} is not a block device",
                path.display()
            )));
        }
        let mut oo = std::fs::OpenOptions::new();
        oo.read(true).write(!opts.read_only);
        let mut flags = libc::O_DIRECT;
        if !opts.read_only {
            flags |= libc::O_EXCL;
        }
        oo.custom_flags(flags);
        let wait = opts.lock_wait.unwrap_or_else(crate::lock::default_wait);
        let file = open_exclusive(&oo, path, wait)?;
        let dir = sysfs::dir_of(&file, path)?;
        let limits = QueueLimits::read(&dir)?;
        if limits.zoned == ZonedModel::None {
            return Err(DeviceError::Config(format!(
                "{} is not a zoned block device (queue/zoned is \"none\")",
                path.display()
            )));
        }
        crate::lock::lock(&file, path, !opts.read_only, wait)?;
        let lbs = limits.logical_block_size.max(512);
        let ss = opts.sector_size.unwrap_or(lbs.max(4096));
        if ss < lbs || !ss.is_multiple_of(lbs) || !ss.is_multiple_of(512) {
            return Err(DeviceError::Config(format!(
                "sector size {ss} is not a multiple of {}'s logical block size {lbs}",
                path.display()
            )));
        }
        let scale = u64::from(ss / 512);
        let raw = ioctl::report_all(file.as_raw_fd(), 0, u64::MAX)
            .map_err(|e| DeviceError::io(format!("BLKREPORTZONE on {}", path.display()), e))?;
        let zones = zones_of(&raw, scale, path)?;
        let info = info_of(&limits, &zones, ss, path);
        Ok(Zbd {
            path: path.to_path_buf(),
            file,
            limits,
            info,
            scale,
            read_only: opts.read_only,
            epoch: Instant::now(),
            zones: Mutex::new(zones),
        })
    }

    /// The queue limits sysfs gave when the device was opened.
    pub fn limits(&self) -> &QueueLimits {
        &self.limits
    }

    /// The device's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether every sequential zone is empty (a blank device: nothing to lose).
    pub fn is_blank(&self) -> bool {
        self.report_zones(ZoneFilter::All)
            .iter()
            .all(|z| !z.zone_type.is_sequential() || z.condition == ZoneCondition::Empty)
    }

    fn now_ns(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    fn done_since(&self, start: Nanos) -> IoDone {
        IoDone {
            start,
            end: self.now_ns().max(start),
        }
    }

    fn zone_index(&self, lba: u64) -> usize {
        (lba / self.info.zone_sectors.max(1)) as usize
    }

    /// Reports zone `i` again from the kernel into the kept table (after a failed command).
    fn refresh(&self, zones: &mut [Zone], i: usize) {
        let Some(z) = zones.get(i) else { return };
        let sector = z.start_lba * self.scale;
        match ioctl::report(self.file.as_raw_fd(), sector, 1) {
            Ok(raw) => {
                if let Some(Ok(mut fresh)) = raw
                    .first()
                    .map(|r| zone_of(r, i as u32, self.scale, &self.path))
                {
                    fresh.index = i as u32;
                    zones[i] = fresh;
                }
            }
            Err(e) => tracing::warn!("BLKREPORTZONE of zone {i} on {}: {e}", self.path.display()),
        }
    }

    /// The zone rules a write must pass before it reaches the device.
    fn check_write(&self, zones: &[Zone], lba: u64, n: u64) -> Result<()> {
        let zi = self.zone_index(lba);
        let Some(zone) = zones.get(zi) else {
            return Err(DeviceError::OutOfRange {
                lba,
                sectors: n,
                capacity: self.info.capacity_sectors,
            });
        };
        let end = lba + n;
        let idx = zi as u32;
        match zone.condition {
            ZoneCondition::Offline => return Err(DeviceError::ZoneOffline { zone: idx }),
            ZoneCondition::ReadOnly => return Err(DeviceError::ZoneReadOnly { zone: idx }),
            _ => {}
        }
        if !zone.zone_type.is_sequential() {
            for next in zones.iter().skip(zi + 1).take_while(|z| z.start_lba < end) {
                if next.zone_type.is_sequential() {
                    return Err(DeviceError::ZoneBoundary {
                        zone: idx,
                        lba,
                        sectors: n,
                        zone_end: next.start_lba,
                        write_pointer: zone.write_pointer_lba,
                    });
                }
                match next.condition {
                    ZoneCondition::Offline => {
                        return Err(DeviceError::ZoneOffline { zone: next.index })
                    }
                    ZoneCondition::ReadOnly => {
                        return Err(DeviceError::ZoneReadOnly { zone: next.index })
                    }
                    _ => {}
                }
            }
            return Ok(());
        }
        let wp = zone.write_pointer_lba;
        if zone.condition == ZoneCondition::Full {
            return Err(DeviceError::ZoneFull {
                zone: idx,
                write_pointer: wp,
                lba,
            });
        }
        if end > zone.capacity_end_lba() {
            return Err(DeviceError::ZoneBoundary {
                zone: idx,
                lba,
                sectors: n,
                zone_end: zone.capacity_end_lba(),
                write_pointer: wp,
            });
        }
        if zone.zone_type == ZoneType::SeqWriteRequired && lba != wp {
            return Err(DeviceError::UnalignedWrite {
                zone: idx,
                write_pointer: wp,
                lba,
            });
        }
        Ok(())
    }

    /// Moves the kept write pointer after a write of `[lba, lba + n)` succeeded.
    fn advance(zones: &mut [Zone], zi: usize, lba: u64, n: u64) {
        let Some(z) = zones.get_mut(zi) else { return };
        if !z.zone_type.is_sequential() {
            return;
        }
        let end = lba + n;
        if lba != z.write_pointer_lba {
            z.non_seq = true;
        }
        z.write_pointer_lba = z.write_pointer_lba.max(end);
        if !z.condition.is_open() {
            z.condition = ZoneCondition::ImplicitOpen;
        }
        if z.write_pointer_lba >= z.capacity_end_lba() {
            z.condition = ZoneCondition::Full;
            z.write_pointer_lba = z.end_lba();
        }
    }

    /// The typed error for an errno the kernel returned for a write or zone command on zone
    /// `zi` (after its state was reported again).
    fn map_errno(&self, zones: &[Zone], zi: usize, what: &str, e: std::io::Error) -> DeviceError {
        let zone = zi as u32;
        match e.raw_os_error() {
            Some(libc::ETOOMANYREFS) => DeviceError::TooManyOpenZones {
                zone,
                open: zones.iter().filter(|z| z.condition.is_open()).count() as u32,
                max_open: self.info.max_open_zones,
            },
            Some(libc::EOVERFLOW) => DeviceError::TooManyActiveZones {
                zone,
                active: zones.iter().filter(|z| z.is_active()).count() as u32,
                max_active: self.info.max_active_zones,
            },
            _ => DeviceError::io(format!("{what} on {}", self.path.display()), e),
        }
    }

    fn pwrite_all(&self, lba: u64, data: &[u8], fua: bool) -> std::io::Result<()> {
        let ss = u64::from(self.info.sector_size);
        let mut off = lba * ss;
        if aligned::is_aligned(data) {
            return self.pwrite_direct(data, off, fua);
        }
        let mut bounce = AlignedBuf::new(data.len().min(BOUNCE_BYTES));
        for chunk in data.chunks(BOUNCE_BYTES) {
            let b = &mut bounce.as_mut_slice()[..chunk.len()];
            b.copy_from_slice(chunk);
            self.pwrite_direct(b, off, fua)?;
            off += chunk.len() as u64;
        }
        Ok(())
    }

    fn pwrite_direct(&self, mut data: &[u8], mut off: u64, fua: bool) -> std::io::Result<()> {
        while !data.is_empty() {
            let n = if fua {
                let iov = libc::iovec {
                    iov_base: data.as_ptr() as *mut libc::c_void,
                    iov_len: data.len(),
                };
                // SAFETY: one iovec over `data`, which lives for the call; the kernel only
                // reads it.
                let r = unsafe {
                    libc::pwritev2(
                        self.file.as_raw_fd(),
                        &iov,
                        1,
                        off as libc::off_t,
                        libc::RWF_DSYNC,
                    )
                };
                if r < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                r as usize
            } else {
                self.file.write_at(data, off)?
            };
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    "the device took no bytes",
                ));
            }
            data = &data[n..];
            off += n as u64;
        }
        Ok(())
    }

    fn pread_all(&self, lba: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let ss = u64::from(self.info.sector_size);
        let mut off = lba * ss;
        if aligned::is_aligned(buf) {
            return self.file.read_exact_at(buf, off);
        }
        let mut bounce = AlignedBuf::new(buf.len().min(BOUNCE_BYTES));
        for chunk in buf.chunks_mut(BOUNCE_BYTES) {
            let b = &mut bounce.as_mut_slice()[..chunk.len()];
            self.file.read_exact_at(b, off)?;
            chunk.copy_from_slice(b);
            off += chunk.len() as u64;
        }
        Ok(())
    }

    /// Applies `action` to zone `i`, or does nothing where the emulator's rules make it a
    /// no-op (so that both answer alike).
    fn act_on(&self, zones: &mut [Zone], action: ZoneAction, i: usize) -> Result<()> {
        let Some(z) = zones.get(i).cloned() else {
            return Err(DeviceError::NoSuchZone {
                zone: i as u64,
                zones: self.info.zones,
            });
        };
        let idx = i as u32;
        if !z.zone_type.is_sequential() {
            return Err(DeviceError::InvalidZoneOp {
                zone: idx,
                op: action.name(),
                condition: "conventional".into(),
            });
        }
        match z.condition {
            ZoneCondition::Offline => return Err(DeviceError::ZoneOffline { zone: idx }),
            ZoneCondition::ReadOnly => return Err(DeviceError::ZoneReadOnly { zone: idx }),
            _ => {}
        }
        let noop = match action {
            ZoneAction::Reset => false,
            ZoneAction::Open => matches!(
                z.condition,
                ZoneCondition::ExplicitOpen | ZoneCondition::Full
            ),
            ZoneAction::Close => !z.condition.is_open(),
            ZoneAction::Finish => z.condition == ZoneCondition::Full,
        };
        if noop {
            return Ok(());
        }
        let op = match action {
            ZoneAction::Reset => Mgmt::Reset,
            ZoneAction::Open => Mgmt::Open,
            ZoneAction::Close => Mgmt::Close,
            ZoneAction::Finish => Mgmt::Finish,
        };
        let res = ioctl::manage(
            self.file.as_raw_fd(),
            op,
            z.start_lba * self.scale,
            z.len_lba * self.scale,
        );
        self.refresh(zones, i);
        res.map_err(|e| self.map_errno(zones, i, &format!("{} of zone {i}", action.name()), e))
    }
}

/// The kernel's zones as tegula zones of `scale` kernel sectors per LBA.
fn zones_of(raw: &[RawZone], scale: u64, path: &Path) -> Result<Vec<Zone>> {
    if raw.is_empty() {
        return Err(DeviceError::Config(format!(
            "{} reports no zones",
            path.display()
        )));
    }
    raw.iter()
        .enumerate()
        .map(|(i, r)| zone_of(r, i as u32, scale, path))
        .collect()
}

/// One kernel zone of the device at `path` as a tegula zone (LBAs of `scale` kernel sectors).
fn zone_of(r: &RawZone, index: u32, scale: u64, path: &Path) -> Result<Zone> {
    let bad = |why: String| DeviceError::Config(format!("{}: zone {index}: {why}", path.display()));
    let zone_type = r
        .typed()
        .ok_or_else(|| bad(format!("unknown zone type {}", r.zone_type)))?;
    let condition = r
        .condition()
        .ok_or_else(|| bad(format!("unknown zone condition {:#x}", r.cond)))?;
    if !r.start.is_multiple_of(scale) || !r.len.is_multiple_of(scale) || r.len == 0 {
        return Err(bad(format!(
            "start {} and length {} (512-byte sectors) are not whole sectors of {} bytes",
            r.start,
            r.len,
            scale * 512
        )));
    }
    let start = r.start / scale;
    let len = r.len / scale;
    let capacity = (r.capacity.min(r.len) / scale).max(1);
    let wp = if !zone_type.is_sequential() || condition == ZoneCondition::Full {
        start + len
    } else {
        // A pointer another program left between two sectors of this size counts down.
        (r.wp / scale).clamp(start, start + len)
    };
    Ok(Zone {
        index,
        zone_type,
        condition,
        start_lba: start,
        len_lba: len,
        capacity_lba: if zone_type.is_sequential() {
            capacity
        } else {
            len
        },
        write_pointer_lba: wp,
        non_seq: r.non_seq,
    })
}

fn info_of(limits: &QueueLimits, zones: &[Zone], ss: u32, path: &Path) -> DeviceInfo {
    let capacity = zones.last().map_or(0, |z| z.end_lba());
    let zone_sectors = zones.first().map_or(0, |z| z.len_lba);
    let zone_capacity = zones
        .iter()
        .filter(|z| z.zone_type.is_sequential())
        .map(|z| z.capacity_lba)
        .min()
        .unwrap_or(zone_sectors);
    let conventional = zones
        .iter()
        .take_while(|z| z.zone_type == ZoneType::Conventional)
        .count() as u32;
    DeviceInfo {
        model: format!("{} at {}", limits.model, path.display()),
        kind: format!("linux-{}", limits.zoned.name()),
        sector_size: ss,
        capacity_sectors: capacity,
        zone_sectors,
        zone_capacity_sectors: zone_capacity,
        zones: zones.len() as u32,
        conventional_zones: conventional,
        max_open_zones: limits.max_open_zones,
        max_active_zones: limits.max_active_zones,
        unrestricted_reads: true,
        stores_data: true,
        wall_time: true,
    }
}

impl BlockDevice for Zbd {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let n = self.info.transfer_sectors(lba, buf.len())?;
        let start = self.now_ns();
        if let Err(e) = self.pread_all(lba, buf) {
            // A device that refuses reads past a write pointer answers with an error: name it.
            let zones = self.zones.lock();
            let end = lba + n;
            let past = zones
                .iter()
                .skip(self.zone_index(lba))
                .take_while(|z| z.start_lba < end)
                .find(|z| {
                    z.zone_type.is_sequential() && end.min(z.end_lba()) > z.write_pointer_lba
                });
            if let (Some(z), Some(libc::EIO)) = (past, e.raw_os_error()) {
                return Err(DeviceError::ReadPastWritePointer {
                    zone: z.index,
                    write_pointer: z.write_pointer_lba,
                    lba,
                    sectors: n,
                });
            }
            return Err(DeviceError::io(
                format!("reading LBA {lba} of {}", self.path.display()),
                e,
            ));
        }
        Ok(self.done_since(start))
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        if self.read_only {
            return Err(DeviceError::ReadOnlyHandle);
        }
        let n = self.info.transfer_sectors(lba, data.len())?;
        let start = self.now_ns();
        let mut zones = self.zones.lock();
        self.check_write(&zones, lba, n)?;
        let zi = self.zone_index(lba);
        match self.pwrite_all(lba, data, flags.fua) {
            Ok(()) => {
                Self::advance(&mut zones, zi, lba, n);
                Ok(self.done_since(start))
            }
            Err(e) => {
                self.refresh(&mut zones, zi);
                Err(self.map_errno(&zones, zi, &format!("writing LBA {lba}"), e))
            }
        }
    }

    fn flush(&self) -> Result<IoDone> {
        let start = self.now_ns();
        if !self.read_only {
            self.file
                .sync_data()
                .map_err(|e| DeviceError::io(format!("flushing {}", self.path.display()), e))?;
        }
        Ok(self.done_since(start))
    }

    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone> {
        // Advisory: sequential zones are freed by a reset; conventional sectors stay as written.
        self.info.check_sectors(lba, sectors)?;
        let now = self.now_ns();
        Ok(IoDone {
            start: now,
            end: now,
        })
    }

    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion>> {
        crate::api::submit_serially(self, reqs)
    }

    fn now(&self) -> Nanos {
        self.now_ns()
    }

    fn idle(&self, d: Nanos) {
        std::thread::sleep(Duration::from_nanos(d));
    }
}

impl ZonedDevice for Zbd {
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        let mut zones = self.zones.lock();
        match ioctl::report_all(self.file.as_raw_fd(), 0, u64::MAX)
            .map_err(|e| DeviceError::io("reading the zone report", e))
            .and_then(|raw| zones_of(&raw, self.scale, &self.path))
        {
            Ok(fresh) if fresh.len() == zones.len() => *zones = fresh,
            Ok(fresh) => tracing::warn!(
                "{} now reports {} zones, not {}; keeping the zones it had",
                self.path.display(),
                fresh.len(),
                zones.len()
            ),
            Err(e) => tracing::warn!("BLKREPORTZONE on {}: {e}", self.path.display()),
        }
        zones
            .iter()
            .filter(|z| filter.matches(z))
            .cloned()
            .collect()
    }

    fn zone(&self, index: u32) -> Result<Zone> {
        self.zones
            .lock()
            .get(index as usize)
            .cloned()
            .ok_or(DeviceError::NoSuchZone {
                zone: u64::from(index),
                zones: self.info.zones,
            })
    }

    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> Result<IoDone> {
        if self.read_only {
            return Err(DeviceError::ReadOnlyHandle);
        }
        let start = self.now_ns();
        let mut zones = self.zones.lock();
        match target {
            ZoneTarget::One(i) => self.act_on(&mut zones, action, i as usize)?,
            ZoneTarget::All => {
                // As the emulator's ALL: each sequential zone the action fits, no error for
                // the others.
                for i in 0..zones.len() {
                    let fits = action.applies_to_all(&zones[i]);
                    if fits {
                        self.act_on(&mut zones, action, i)?;
                    }
                }
            }
        }
        Ok(self.done_since(start))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn raw(start: u64, len: u64, wp: u64, cap: u64, t: u8, cond: u8) -> RawZone {
        RawZone {
            start,
            len,
            wp,
            capacity: cap,
            zone_type: t,
            cond,
            non_seq: false,
        }
    }

    #[test]
    fn kernel_zones_become_tegula_zones_of_the_chosen_sector_size() {
        // 64 MiB zones, 48 MiB capacity, 512-byte kernel sectors, 4 KiB tegula sectors.
        let zs = 131072;
        let rs = [
            raw(0, zs, zs, zs, 1, 0),
            raw(zs, zs, zs + 16, 98304, 2, 2),
            raw(2 * zs, zs, 3 * zs, 98304, 2, 0xE),
        ];
        let z = zones_of(&rs, 8, Path::new("/dev/x")).unwrap();
        assert_eq!(z[0].zone_type, ZoneType::Conventional);
        assert_eq!(z[0].capacity_lba, zs / 8);
        assert_eq!(z[1].start_lba, zs / 8);
        assert_eq!(z[1].capacity_lba, 98304 / 8);
        assert_eq!(z[1].write_pointer_lba, zs / 8 + 2);
        assert_eq!(z[1].written_sectors(), 2);
        assert_eq!(z[2].condition, ZoneCondition::Full);
        assert_eq!(z[2].write_pointer_lba, z[2].end_lba());
        assert_eq!(z[2].written_sectors(), 98304 / 8);
        let limits = QueueLimits {
            zoned: ZonedModel::HostManaged,
            zone_bytes: zs * 512,
            nr_zones: 3,
            max_open_zones: 14,
            max_active_zones: 14,
            logical_block_size: 512,
            physical_block_size: 512,
            zone_append_max_bytes: 0,
            model: "QEMU NVMe".into(),
        };
        let info = info_of(&limits, &z, 4096, Path::new("/dev/x"));
        assert_eq!(info.conventional_zones, 1);
        assert_eq!(info.zone_capacity_sectors, 98304 / 8);
        assert_eq!(info.capacity_sectors, 3 * zs / 8);
        assert_eq!((info.max_open_zones, info.max_active_zones), (14, 14));
    }

    #[test]
    fn zones_that_are_not_whole_sectors_or_of_unknown_kinds_are_refused() {
        let zs = 131072;
        assert!(zones_of(&[raw(4, zs, 4, zs, 2, 1)], 8, Path::new("/d")).is_err());
        assert!(zones_of(&[raw(0, zs, 0, zs, 7, 1)], 8, Path::new("/d")).is_err());
        assert!(zones_of(&[raw(0, zs, 0, zs, 2, 9)], 8, Path::new("/d")).is_err());
        assert!(zones_of(&[], 8, Path::new("/d")).is_err());
        // A write pointer between two 4 KiB sectors counts down.
        let z = zones_of(&[raw(0, zs, 9, zs, 2, 2)], 8, Path::new("/d")).unwrap();
        assert_eq!(z[0].write_pointer_lba, 1);
    }

    #[test]
    fn opening_a_regular_file_is_refused_as_not_a_block_device() {
        let t = tempfile::NamedTempFile::new().unwrap();
        let e = Zbd::open(t.path(), ZbdOptions::default()).unwrap_err();
        assert!(e.to_string().contains("not a block device"), "{e}");
    }
}
