//! A zoned device whose zones are files in one directory, as Linux's zonefs shows a zoned
//! drive: a flush can be scoped to some zones ([`ZonedDevice::flush_zones`]) and syncs only
//! their files, so one zone's flush never writes another zone's volatile data. On a single
//! banded file ([`HostBanded`]) every `fdatasync` also writes every other zone's dirty pages
//! (an engine's log band, say, whose contents are about to be thrown away); here they stay in
//! the page cache, and a reset drops them unwritten, as a file system drops the pages of a
//! deleted write-ahead log.
//!
//! Layout of the directory (spec: `docs/formats/zone-files.md`):
//!
//! | name | what |
//! | --- | --- |
//! | `zones` | the descriptor ([`mod@format`]): geometry, written once at creation, locked while open |
//! | `conventional` | the conventional zones, one plain file (`pread`, `pwrite`, `fdatasync`) |
//! | `zone-NNNNN`, `zone-NNNNN.zones` | sequential zone `NNNNN`: a host-banded file of one zone whose write pointer lives in its own state slots, so that its flush is one `fdatasync` and a crash keeps exactly what its last flush covered |
//!
//! A reset builds an empty zone file beside the old one (`zone-NNNNN.new`), renames it over
//! the old one and syncs the directory: the reset is durable on return, and the old file's
//! unsynced pages go with its inode. A crash before the rename leaves the old zone as it was
//! (the leftover is removed at the next open).

pub mod format;

use crate::api::{BlockDevice, DeviceInfo, WriteFlags, ZoneTarget, ZonedDevice};
use crate::error::{DeviceError, ImageProblem, Result};
use crate::hostfile::{HostBanded, HostBandedOptions};
use crate::media::{Completion, IoDone, Request};
use crate::units::Nanos;
use crate::zone::{Zone, ZoneAction, ZoneCondition, ZoneFilter, ZoneType};
use format::Descriptor;
use parking_lot::{Mutex, RwLock};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Options of a zone-files device.
#[derive(Debug, Clone)]
pub struct ZoneFilesOptions {
    /// Sector size of a new device (default 4096).
    pub sector_size: u32,
    /// Zone size of a new device in bytes (default 256 MiB).
    pub zone_size: u64,
    /// Conventional zones at the start of a new device (default 1).
    pub conventional_zones: u32,
    /// Bytes of zones for a new device (whole zones; required to create one). An existing
    /// device must be opened with the capacity it was created with, or none.
    pub capacity: Option<u64>,
    /// Create the device when the directory holds none (default on). The directory must then
    /// be missing or empty: nothing is ever laid over other files.
    pub create: bool,
    /// Read sequential zones through shared read-only mappings (default off; see
    /// [`HostBandedOptions::mmap_reads`]).
    pub mmap_reads: bool,
}

impl Default for ZoneFilesOptions {
    fn default() -> Self {
        ZoneFilesOptions {
            sector_size: 4096,
            zone_size: 256 << 20,
            conventional_zones: 1,
            capacity: None,
            create: true,
            mmap_reads: false,
        }
    }
}

/// A zoned device of one file per sequential zone (see the module's text).
pub struct ZoneFiles {
    dir: PathBuf,
    /// The descriptor, locked exclusively while the device is open.
    _lock: File,
    desc: Descriptor,
    info: DeviceInfo,
    conv: File,
    conv_dirty: AtomicBool,
    /// Sequential zone `conventional_zones + i` is `seq[i]`.
    seq: Vec<RwLock<HostBanded>>,
    /// Whether `seq[i]` was written since its last flush (set after the write returns).
    dirty: Vec<AtomicBool>,
    mmap_reads: bool,
    epoch: Instant,
    conv_syncs: AtomicU64,
    /// Why the device refuses writes (a failed sync, a reset that could not reopen its zone).
    failed: Mutex<Option<String>>,
}

impl std::fmt::Debug for ZoneFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZoneFiles")
            .field("dir", &self.dir)
            .field("desc", &self.desc)
            .finish_non_exhaustive()
    }
}

fn io_err(what: String, e: std::io::Error) -> DeviceError {
    DeviceError::io(what, e)
}

impl ZoneFiles {
    /// Opens the zone-files device in `dir`, creating it when the directory holds none and
    /// [`ZoneFilesOptions::create`] allows.
    pub fn open(dir: &Path, opts: ZoneFilesOptions) -> Result<Self> {
        let desc_path = dir.join("zones");
        let image_err = |problem: ImageProblem| DeviceError::Image {
            path: dir.display().to_string(),
            problem,
        };
        if !desc_path.exists() {
            if !opts.create {
                return Err(image_err(ImageProblem::Invalid(format!(
                    "not a zone-files device: {} does not exist; nothing was touched",
                    desc_path.display()
                ))));
            }
            Self::create(dir, &opts)?;
        }
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&desc_path)
            .map_err(|e| io_err(format!("opening {}", desc_path.display()), e))?;
        crate::lock::lock(&lock, &desc_path, true, crate::lock::default_wait())?;
        let bytes = std::fs::read(&desc_path)
            .map_err(|e| io_err(format!("reading {}", desc_path.display()), e))?;
        let desc = format::decode(&bytes).map_err(|source| {
            image_err(ImageProblem::Structure {
                what: "descriptor",
                source,
            })
        })?;
        let bytes_of_zones = u64::from(desc.zones) * desc.zone_size;
        if let Some(c) = opts.capacity {
            if c / desc.zone_size * desc.zone_size != bytes_of_zones {
                return Err(image_err(ImageProblem::Invalid(format!(
                    "created with {bytes_of_zones} bytes of zones, opened asking for {c}"
                ))));
            }
        }
        Self::remove_leftovers(dir)?;
        let conv_path = dir.join("conventional");
        let conv = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&conv_path)
            .map_err(|e| io_err(format!("opening {}", conv_path.display()), e))?;
        let conv_len = u64::from(desc.conventional_zones) * desc.zone_size;
        let have = conv
            .metadata()
            .map_err(|e| io_err(format!("stat {}", conv_path.display()), e))?
            .len();
        if have != conv_len {
            return Err(image_err(ImageProblem::Invalid(format!(
                "{} holds {have} bytes, not the {conv_len} of its conventional zones",
                conv_path.display()
            ))));
        }
        let mut seq = Vec::with_capacity((desc.zones - desc.conventional_zones) as usize);
        for z in desc.conventional_zones..desc.zones {
            let p = Self::zone_path(dir, z);
            let d = HostBanded::open(&p, Self::zone_opts(&desc, opts.mmap_reads, false))?;
            seq.push(RwLock::new(d));
        }
        let ss = u64::from(desc.sector_size);
        let info = DeviceInfo {
            model: format!("zone files {}", dir.display()),
            kind: "zone-files".into(),
            sector_size: desc.sector_size,
            capacity_sectors: bytes_of_zones / ss,
            zone_sectors: desc.zone_size / ss,
            zone_capacity_sectors: desc.zone_size / ss,
            zones: desc.zones,
            conventional_zones: desc.conventional_zones,
            max_open_zones: 0,
            max_active_zones: 0,
            unrestricted_reads: false,
            stores_data: true,
            wall_time: true,
        };
        let dirty = (0..seq.len()).map(|_| AtomicBool::new(false)).collect();
        Ok(ZoneFiles {
            dir: dir.to_path_buf(),
            _lock: lock,
            desc,
            info,
            conv,
            conv_dirty: AtomicBool::new(false),
            seq,
            dirty,
            mmap_reads: opts.mmap_reads,
            epoch: Instant::now(),
            conv_syncs: AtomicU64::new(0),
            failed: Mutex::new(None),
        })
    }

    /// Whether `dir` holds a zone-files device (its descriptor exists).
    pub fn is_device(dir: &Path) -> bool {
        dir.join("zones").is_file()
    }

    /// Lays out a new device in `dir` (missing or empty); the descriptor is written last, so
    /// a crash part way leaves no device (and a directory the next create refuses).
    fn create(dir: &Path, opts: &ZoneFilesOptions) -> Result<()> {
        let Some(capacity) = opts.capacity else {
            return Err(DeviceError::Config(format!(
                "{}: a new zone-files device needs a capacity",
                dir.display()
            )));
        };
        let zones = capacity / opts.zone_size.max(1);
        let desc = Descriptor {
            sector_size: opts.sector_size,
            zone_size: opts.zone_size,
            conventional_zones: opts.conventional_zones,
            zones: u32::try_from(zones).unwrap_or(u32::MAX),
        };
        format::check(&desc).map_err(|e| {
            DeviceError::Config(format!("{}: capacity {capacity}: {e}", dir.display()))
        })?;
        std::fs::create_dir_all(dir)
            .map_err(|e| io_err(format!("creating {}", dir.display()), e))?;
        let mut entries =
            std::fs::read_dir(dir).map_err(|e| io_err(format!("listing {}", dir.display()), e))?;
        if entries.next().is_some() {
            return Err(DeviceError::Image {
                path: dir.display().to_string(),
                problem: "the directory is not empty and holds no zone-files device (no \
                          `zones` descriptor; a creation that was cut short leaves one \
                          without it); nothing was touched"
                    .into(),
            });
        }
        let conv_path = dir.join("conventional");
        let conv = File::create(&conv_path)
            .map_err(|e| io_err(format!("creating {}", conv_path.display()), e))?;
        conv.set_len(u64::from(desc.conventional_zones) * desc.zone_size)
            .and_then(|()| conv.sync_all())
            .map_err(|e| io_err(format!("sizing {}", conv_path.display()), e))?;
        for z in desc.conventional_zones..desc.zones {
            let p = Self::zone_path(dir, z);
            HostBanded::open(&p, Self::zone_opts(&desc, false, true))?;
        }
        let tmp = dir.join("zones.new");
        std::fs::write(&tmp, format::encode(&desc))
            .and_then(|()| File::open(&tmp)?.sync_all())
            .and_then(|()| std::fs::rename(&tmp, dir.join("zones")))
            .map_err(|e| io_err(format!("writing {}", tmp.display()), e))?;
        sync_dir(dir)
    }

    fn zone_path(dir: &Path, zone: u32) -> PathBuf {
        dir.join(format!("zone-{zone:05}"))
    }

    /// The options of one zone's host-banded file.
    fn zone_opts(desc: &Descriptor, mmap_reads: bool, create: bool) -> HostBandedOptions {
        HostBandedOptions {
            sector_size: desc.sector_size,
            zone_size: desc.zone_size,
            conventional_zones: 0,
            capacity: create.then_some(desc.zone_size),
            mmap_reads,
            zero_ahead: true,
            // A reset replaces the file; the zone's own reset is never used.
            punch_on_reset: false,
            create,
            writeback_kick: false,
        }
    }

    /// Removes what a reset cut short left behind (`zone-NNNNN.new` and its sidecar).
    fn remove_leftovers(dir: &Path) -> Result<()> {
        let entries =
            std::fs::read_dir(dir).map_err(|e| io_err(format!("listing {}", dir.display()), e))?;
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("zone-") && (name.ends_with(".new") || name.ends_with(".new.zones"))
            {
                std::fs::remove_file(e.path())
                    .map_err(|err| io_err(format!("removing {}", e.path().display()), err))?;
            }
        }
        Ok(())
    }

    /// `fdatasync`s issued since open: of every zone's file and of the conventional file.
    pub fn syncs(&self) -> u64 {
        self.conv_syncs.load(Ordering::Relaxed)
            + self.seq.iter().map(|z| z.read().syncs()).sum::<u64>()
    }

    /// `fdatasync`s of sequential zone `zone`'s file since it was opened (a reset opens a
    /// new file: its count starts again).
    pub fn zone_syncs(&self, zone: u32) -> Result<u64> {
        Ok(self.seq_zone(zone)?.read().syncs())
    }

    fn now_ns(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    fn zone_sectors(&self) -> u64 {
        self.info.zone_sectors
    }

    fn ss(&self) -> u64 {
        u64::from(self.desc.sector_size)
    }

    fn seq_zone(&self, zone: u32) -> Result<&RwLock<HostBanded>> {
        zone.checked_sub(self.desc.conventional_zones)
            .and_then(|i| self.seq.get(i as usize))
            .ok_or(DeviceError::NoSuchZone {
                zone: u64::from(zone),
                zones: self.desc.zones,
            })
    }

    fn check_usable(&self) -> Result<()> {
        match &*self.failed.lock() {
            None => Ok(()),
            Some(why) => Err(DeviceError::io(
                format!(
                    "{}: {why}; the device refuses writes until it is reopened",
                    self.dir.display()
                ),
                std::io::Error::other("device poisoned"),
            )),
        }
    }

    fn poison(&self, why: String) {
        self.failed.lock().get_or_insert(why);
    }

    fn sync_conv(&self) -> Result<()> {
        if !self.conv_dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        self.conv_syncs.fetch_add(1, Ordering::Relaxed);
        self.conv.sync_data().map_err(|e| {
            self.conv_dirty.store(true, Ordering::Release);
            self.poison(format!("syncing the conventional zones failed ({e})"));
            io_err(format!("syncing {}/conventional", self.dir.display()), e)
        })
    }

    fn sync_zone(&self, zone: u32) -> Result<()> {
        if zone < self.desc.conventional_zones {
            return self.sync_conv();
        }
        let i = (zone - self.desc.conventional_zones) as usize;
        let z = self.seq_zone(zone)?;
        if !self.dirty[i].swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let start = u64::from(zone) * self.zone_sectors();
        z.read().flush().map(|_| ()).map_err(|e| {
            self.dirty[i].store(true, Ordering::Release);
            localize(e, zone, start)
        })
    }

    /// Replaces sequential zone `zone`'s file by an empty one (see the module's text).
    fn reset_file(&self, zone: u32) -> Result<()> {
        let lock = self.seq_zone(zone)?;
        let mut g = lock.write();
        if g.zone(0)?.condition == ZoneCondition::Empty {
            return Ok(());
        }
        let path = Self::zone_path(&self.dir, zone);
        let tmp = self.dir.join(format!("zone-{zone:05}.new"));
        let sidecar = self.dir.join(format!("zone-{zone:05}.new.zones"));
        for p in [&tmp, &sidecar] {
            match std::fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io_err(format!("removing {}", p.display()), e))
                }
                _ => {}
            }
        }
        drop(HostBanded::open(
            &tmp,
            Self::zone_opts(&self.desc, false, true),
        )?);
        std::fs::rename(&tmp, &path).map_err(|e| {
            io_err(
                format!("renaming {} over {}", tmp.display(), path.display()),
                e,
            )
        })?;
        // From here the old file is gone: a failure leaves a handle on it, so poison.
        let reopened = sync_dir(&self.dir).and_then(|()| {
            HostBanded::open(&path, Self::zone_opts(&self.desc, self.mmap_reads, false))
        });
        match reopened {
            Ok(d) => *g = d,
            Err(e) => {
                self.poison(format!("resetting zone {zone} failed part way ({e})"));
                return Err(e);
            }
        }
        let _ = std::fs::remove_file(&sidecar);
        self.dirty[(zone - self.desc.conventional_zones) as usize].store(false, Ordering::Release);
        Ok(())
    }

    /// Zone `zone` as the device shows it (LBAs and index of the whole device).
    fn zone_info(&self, zone: u32) -> Result<Zone> {
        let zs = self.zone_sectors();
        let start = u64::from(zone) * zs;
        if zone < self.desc.conventional_zones {
            return Ok(Zone {
                index: zone,
                zone_type: ZoneType::Conventional,
                condition: ZoneCondition::NotWritePointer,
                start_lba: start,
                len_lba: zs,
                capacity_lba: zs,
                write_pointer_lba: start + zs,
                non_seq: false,
            });
        }
        let mut z = self.seq_zone(zone)?.read().zone(0)?;
        z.index = zone;
        z.start_lba += start;
        z.write_pointer_lba += start;
        Ok(z)
    }

    fn refuse_conventional(&self, zone: u32, op: &'static str) -> DeviceError {
        DeviceError::InvalidZoneOp {
            zone,
            op,
            condition: "conventional".into(),
        }
    }
}

/// `fsync`s a directory, so that a rename or a new file in it is durable.
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(format!("syncing directory {}", dir.display()), e))
}

/// Restates an error of zone file `zone` (whose LBA 0 is the device's `start`) in the
/// device's zone index and LBAs.
fn localize(e: DeviceError, zone: u32, start: u64) -> DeviceError {
    use DeviceError as E;
    match e {
        E::UnalignedWrite {
            write_pointer, lba, ..
        } => E::UnalignedWrite {
            zone,
            write_pointer: write_pointer + start,
            lba: lba + start,
        },
        E::ZoneBoundary {
            lba,
            sectors,
            zone_end,
            write_pointer,
            ..
        } => E::ZoneBoundary {
            zone,
            lba: lba + start,
            sectors,
            zone_end: zone_end + start,
            write_pointer: write_pointer + start,
        },
        E::ZoneFull {
            write_pointer, lba, ..
        } => E::ZoneFull {
            zone,
            write_pointer: write_pointer + start,
            lba: lba + start,
        },
        E::ReadPastWritePointer {
            write_pointer,
            lba,
            sectors,
            ..
        } => E::ReadPastWritePointer {
            zone,
            write_pointer: write_pointer + start,
            lba: lba + start,
            sectors,
        },
        E::ZoneReadOnly { .. } => E::ZoneReadOnly { zone },
        E::ZoneOffline { .. } => E::ZoneOffline { zone },
        E::TooManyOpenZones { open, max_open, .. } => E::TooManyOpenZones {
            zone,
            open,
            max_open,
        },
        E::InvalidZoneOp { op, condition, .. } => E::InvalidZoneOp {
            zone,
            op,
            condition,
        },
        E::MediaError { lba, cause } => E::MediaError {
            lba: lba + start,
            cause,
        },
        other => other,
    }
}

impl BlockDevice for ZoneFiles {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        self.info.transfer_sectors(lba, buf.len())?;
        self.read_bytes(lba * self.ss(), buf)
    }

    fn read_bytes(&self, offset: u64, buf: &mut [u8]) -> Result<IoDone> {
        let ss = self.ss();
        crate::api::byte_span(offset, buf.len(), ss, self.info.capacity_sectors)?;
        let start = self.now_ns();
        let zone_bytes = self.zone_sectors() * ss;
        let (mut at, end) = (offset, offset + buf.len() as u64);
        while at < end {
            let zone = (at / zone_bytes) as u32;
            let zone_start = u64::from(zone) * zone_bytes;
            let take = end.min(zone_start + zone_bytes) - at;
            let from = (at - offset) as usize;
            let part = &mut buf[from..from + take as usize];
            if zone < self.desc.conventional_zones {
                self.conv
                    .read_exact_at(part, at)
                    .map_err(|e| io_err(format!("reading byte {at}"), e))?;
            } else {
                self.seq_zone(zone)?
                    .read()
                    .read_bytes(at - zone_start, part)
                    .map_err(|e| localize(e, zone, zone_start / ss))?;
            }
            at += take;
        }
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        let ss = self.ss();
        let n = self.info.transfer_sectors(lba, data.len())?;
        self.check_usable()?;
        let start = self.now_ns();
        let zs = self.zone_sectors();
        let zone = (lba / zs) as u32;
        let zone_start = u64::from(zone) * zs;
        if zone < self.desc.conventional_zones {
            let conv_end = u64::from(self.desc.conventional_zones) * zs;
            if lba + n > conv_end {
                return Err(DeviceError::ZoneBoundary {
                    zone: self.desc.conventional_zones - 1,
                    lba,
                    sectors: n,
                    zone_end: conv_end,
                    write_pointer: conv_end,
                });
            }
            self.conv
                .write_all_at(data, lba * ss)
                .map_err(|e| io_err(format!("writing LBA {lba}"), e))?;
            self.conv_dirty.store(true, Ordering::Release);
            if flags.fua {
                self.sync_conv()?;
            }
        } else {
            let z = self.seq_zone(zone)?;
            let g = z.read();
            if lba + n > zone_start + zs {
                return Err(DeviceError::ZoneBoundary {
                    zone,
                    lba,
                    sectors: n,
                    zone_end: zone_start + zs,
                    write_pointer: g.zone(0)?.write_pointer_lba + zone_start,
                });
            }
            g.write_with(lba - zone_start, data, flags)
                .map_err(|e| localize(e, zone, zone_start))?;
            let i = (zone - self.desc.conventional_zones) as usize;
            // After the write: a flush that found the flag clear began before it completed.
            self.dirty[i].store(true, Ordering::Release);
        }
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }

    fn flush(&self) -> Result<IoDone> {
        let start = self.now_ns();
        self.check_usable()?;
        self.sync_conv()?;
        for zone in self.desc.conventional_zones..self.desc.zones {
            self.sync_zone(zone)?;
        }
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }

    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone> {
        if lba
            .checked_add(sectors)
            .is_none_or(|e| e > self.info.capacity_sectors)
        {
            return Err(DeviceError::OutOfRange {
                lba,
                sectors,
                capacity: self.info.capacity_sectors,
            });
        }
        let t = self.now_ns();
        Ok(IoDone { start: t, end: t })
    }

    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion>> {
        crate::api::submit_serially(self, reqs)
    }

    fn now(&self) -> Nanos {
        self.now_ns()
    }

    fn idle(&self, d: Nanos) {
        std::thread::sleep(std::time::Duration::from_nanos(d));
    }
}

impl ZonedDevice for ZoneFiles {
    /// Every zone is a file written through the page cache.
    fn host_page_cache(&self) -> bool {
        true
    }

    /// Each sequential zone is a banded file of its own, whose write pointer is saved only
    /// when the zone is flushed: see [`HostBanded`]'s.
    fn read_beyond_write_pointer(&self, lba: u64, buf: &mut [u8]) -> Result<Option<IoDone>> {
        let zs = self.zone_sectors();
        let zone = (lba / zs) as u32;
        let zone_start = u64::from(zone) * zs;
        self.seq_zone(zone)?
            .read()
            .read_beyond_write_pointer(lba - zone_start, buf)
            .map_err(|e| localize(e, zone, zone_start))
    }

    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        (0..self.desc.zones)
            .filter_map(|z| self.zone_info(z).ok())
            .filter(|z| filter.matches(z))
            .collect()
    }

    fn zone(&self, index: u32) -> Result<Zone> {
        self.zone_info(index)
    }

    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> Result<IoDone> {
        let start = self.now_ns();
        self.check_usable()?;
        let targets: Vec<u32> = match target {
            ZoneTarget::One(i) => {
                if i >= self.desc.zones {
                    return Err(DeviceError::NoSuchZone {
                        zone: u64::from(i),
                        zones: self.desc.zones,
                    });
                }
                if i < self.desc.conventional_zones {
                    return Err(self.refuse_conventional(i, action.name()));
                }
                vec![i]
            }
            ZoneTarget::All => (self.desc.conventional_zones..self.desc.zones).collect(),
        };
        for zone in targets {
            if action == ZoneAction::Reset {
                self.reset_file(zone)?;
            } else {
                let zone_start = u64::from(zone) * self.zone_sectors();
                self.seq_zone(zone)?
                    .read()
                    .zone_action(action, ZoneTarget::One(0))
                    .map_err(|e| localize(e, zone, zone_start))?;
            }
        }
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }

    fn can_rewind(&self) -> bool {
        true
    }

    fn rewind_write_pointer(&self, index: u32, lba: u64) -> Result<IoDone> {
        self.check_usable()?;
        if index < self.desc.conventional_zones {
            return Err(self.refuse_conventional(index, "set the write pointer back"));
        }
        let zone_start = u64::from(index) * self.zone_sectors();
        self.seq_zone(index)?
            .read()
            .rewind_write_pointer(0, lba.saturating_sub(zone_start))
            .map_err(|e| localize(e, index, zone_start))
    }

    /// Each zone's write pointer lives in its file's saved state: what no flush, FUA write or
    /// zone action of that zone covered is gone after a crash, whatever the page cache wrote.
    fn durable_only_when_flushed(&self) -> bool {
        true
    }

    fn flush_zones(&self, zones: &[u32]) -> Result<IoDone> {
        let start = self.now_ns();
        self.check_usable()?;
        for &z in zones {
            if z >= self.desc.zones {
                return Err(DeviceError::NoSuchZone {
                    zone: u64::from(z),
                    zones: self.desc.zones,
                });
            }
            self.sync_zone(z)?;
        }
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }
}

#[cfg(test)]
mod tests;
