//! A plain file or block device banded like a host-managed SMR drive, with write pointers kept
//! by the host. This is how SMRDB ran on a conventional disk (seed 000 §5.1). Time is wall
//! time: each command's service time is what the real I/O took.
//!
//! The zone state is saved in two alternating slots after the file's last zone
//! ([`mod@format`], `docs/formats/host-banded.md`), so that a flush is one `fdatasync`: the record
//! is written first, listing the writes since the last save with their checksum, and the sync
//! makes both durable; opening takes a record whose listed writes do not match as a save that
//! never completed. Past 4 MiB of unsynced writes a save syncs the data before its record
//! instead. Devices made before this layout keep their slots in the sidecar `PATH.zones` and
//! sync it after the data (two syncs per flush; [`layout`]).
//!
//! Writes are `pwrite`s, flushes `fdatasync`s. Reads are `pread`s, or with
//! [`HostBandedOptions::mmap_reads`] copies out of a shared read-only mapping of the file (as
//! LevelDB reads its table files): no system call per read once a page is mapped, but a host
//! I/O error while reading then kills the process with `SIGBUS` instead of failing the read.
//! A failed `fdatasync` poisons the device (later writes and flushes fail until it is
//! reopened): after one, the kernel may have dropped the pages it could not write.

pub mod format;
pub mod layout;
mod unsynced;
mod zero_ahead;

use crate::api::{BlockDevice, DeviceInfo, WriteFlags, ZoneTarget, ZonedDevice};
use crate::error::{DeviceError, Result};
use crate::media::{Completion, IoDone, Request};
use crate::readmap::ReadMap;
use crate::units::Nanos;
use crate::zone::{Zone, ZoneAction, ZoneFilter, ZoneTable};
use layout::StateHome;
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use unsynced::Unsynced;
use zero_ahead::ZeroAhead;

/// Options of a host-banded device.
#[derive(Debug, Clone)]
pub struct HostBandedOptions {
    /// Sector size (default 4096).
    pub sector_size: u32,
    /// Zone (band) size in bytes (default 256 MiB).
    pub zone_size: u64,
    /// Conventional zones at the start (default 1).
    pub conventional_zones: u32,
    /// Bytes of zones for a new device (the file is extended to hold them and the state slots
    /// after them); default: as many zones as fit the file or device with its state slots. An
    /// existing device must be opened with the capacity it was created with, or none.
    pub capacity: Option<u64>,
    /// Read through a shared read-only mapping of the file instead of `pread` (default off;
    /// see the module's text for what it trades).
    pub mmap_reads: bool,
    /// In a regular file, write zeros 1 MiB ahead of small writes to a sequential zone, so
    /// that a synced small write lands in allocated blocks and its `fdatasync` commits no
    /// allocation (default on; see `hostfile/zero_ahead.rs`). Ignored for block devices.
    pub zero_ahead: bool,
    /// In a regular file, give a reset zone's blocks back to the file system (punch a hole,
    /// once the reset is saved), as a reset or TRIM frees a thin-provisioned drive's space:
    /// the file then holds about the zones in use, not every zone ever written (default on;
    /// ignored where the file system cannot punch holes, and for block devices).
    pub punch_on_reset: bool,
    /// Create the device when the path has no descriptor (`PATH.zones`) yet (default on). Off,
    /// such a path is refused and the file is left untouched: what a command that only uses
    /// an existing device wants, so that a mistyped path or a missing `.zones` never lays a
    /// new device's state slots over a file's contents.
    pub create: bool,
    /// Ask the kernel to start writing dirty pages back after every 8 MiB written
    /// (`sync_file_range`), so that a flush finds little left to write (default on). Off for
    /// a file whose unflushed writes may be thrown away unwritten ([`crate::ZoneFiles`]
    /// replaces a reset zone's file: its dirty pages are dropped, unless this started them).
    pub writeback_kick: bool,
}

impl Default for HostBandedOptions {
    fn default() -> Self {
        HostBandedOptions {
            sector_size: 4096,
            zone_size: 256 << 20,
            conventional_zones: 1,
            capacity: None,
            mmap_reads: false,
            zero_ahead: true,
            punch_on_reset: true,
            create: true,
            writeback_kick: true,
        }
    }
}

struct Inner {
    zones: ZoneTable,
    seq: u64,
    /// Bytes written since the last writeback was started.
    unkicked: u64,
    /// Writes to sequential zones since the last save.
    unsynced: Unsynced,
    /// Why an earlier sync failed; set, the device refuses writes and flushes.
    failed: Option<String>,
    /// Zero-filling ahead of small writes (regular files only).
    zero_ahead: Option<ZeroAhead>,
}

/// How a reset zone's blocks are given back to the file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Punch {
    /// Not asked for, or not a regular file.
    Off,
    /// Punch holes.
    On,
    /// The file system refused one (`EOPNOTSUPP`): do not try again.
    Unsupported,
}

/// Bytes written after which the kernel is asked to start writing them back
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so that the next flush finds little left to
/// write: a flush then waits for the disk's cache flush, not for hundreds of megabytes of the
/// page cache (SMRDB flushes in its write path when a log band fills).
const WRITEBACK_KICK: u64 = 8 << 20;

/// A plain file or block device with SMR zone rules enforced by the host.
pub struct HostBanded {
    map: Option<ReadMap>,
    file: File,
    path: PathBuf,
    /// Where the zone state is saved.
    home: StateHome,
    /// Problems found with a state slot at open (worded for a person).
    warnings: Vec<String>,
    inner: Mutex<Inner>,
    info: DeviceInfo,
    epoch: Instant,
    /// `fdatasync`s issued since open (the file's and the sidecar's).
    syncs: AtomicU64,
    /// Giving reset zones' blocks back.
    punch: Mutex<Punch>,
    /// [`HostBandedOptions::writeback_kick`].
    writeback_kick: bool,
}

impl HostBanded {
    /// Opens a banded device on `path`, creating it (and, with a capacity, the file) when it
    /// has no `PATH.zones` and [`HostBandedOptions::create`] allows.
    pub fn open(path: &Path, opts: HostBandedOptions) -> Result<Self> {
        let descriptor = layout::sidecar_path(path);
        if !opts.create && !descriptor.exists() {
            return Err(DeviceError::Image {
                path: path.display().to_string(),
                problem: format!(
                    "not a banded device: {} does not exist (a command that creates one, such \
                     as `tegula db create --banded ZONE_SIZE`, makes it); the file was not touched",
                    descriptor.display()
                )
                .into(),
            });
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(opts.capacity.is_some())
            .truncate(false)
            .open(path)
            .map_err(|e| DeviceError::io(format!("opening {}", path.display()), e))?;
        crate::lock::lock(&file, path, true, crate::lock::default_wait())?;
        let loaded = layout::load(path, &file, &opts)?;
        for w in &loaded.warnings {
            tracing::warn!("{}: {w}", path.display());
        }
        let zones = loaded.zones;
        let ss = u64::from(opts.sector_size);
        let regular = file
            .metadata()
            .map_err(|e| DeviceError::io(format!("stat {}", path.display()), e))?
            .is_file();
        let zero_ahead = (opts.zero_ahead && regular)
            .then(|| ZeroAhead::new(zones.zones().iter().map(|z| z.write_pointer_lba * ss)));
        let capacity = zones.zones().last().map_or(0, |z| z.end_lba());
        let info = DeviceInfo {
            model: format!("host-banded {}", path.display()),
            kind: "host-banded".into(),
            sector_size: opts.sector_size,
            capacity_sectors: capacity,
            zone_sectors: opts.zone_size / ss,
            zone_capacity_sectors: opts.zone_size / ss,
            zones: zones.len(),
            conventional_zones: opts.conventional_zones,
            max_open_zones: 0,
            max_active_zones: 0,
            unrestricted_reads: false,
            stores_data: true,
            wall_time: true,
        };
        let map = if opts.mmap_reads {
            Some(ReadMap::new(&file, capacity * ss, path)?)
        } else {
            None
        };
        let dev = HostBanded {
            map,
            file,
            path: path.to_path_buf(),
            home: loaded.home,
            warnings: loaded.warnings,
            inner: Mutex::new(Inner {
                zones,
                seq: loaded.seq,
                unkicked: 0,
                unsynced: Unsynced::default(),
                failed: None,
                zero_ahead,
            }),
            info,
            epoch: Instant::now(),
            syncs: AtomicU64::new(0),
            punch: Mutex::new(if opts.punch_on_reset && regular {
                Punch::On
            } else {
                Punch::Off
            }),
            writeback_kick: opts.writeback_kick,
        };
        {
            let mut g = dev.inner.lock();
            // The state just loaded, and the writes it lists, become durable before the next
            // save overwrites the other slot: a record is only ever written over one whose
            // successor is on disk.
            dev.sync_data(&mut g)?;
            dev.save(&mut g)?;
        }
        Ok(dev)
    }

    /// Asks the kernel to start writing the file's dirty pages back, without waiting for them
    /// (a hint: an error is ignored, the next flush writes them anyway).
    fn start_writeback(&self) {
        use std::os::unix::io::AsRawFd;
        // SAFETY: sync_file_range on a valid descriptor with integer arguments (offset 0 and
        // length 0: the whole file).
        unsafe {
            libc::sync_file_range(self.file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }

    /// `fdatasync`s issued since the device was opened, of the file and of a first-layout
    /// sidecar: what a flush costs in syncs (one on this layout after small writes).
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// Problems found with a state slot when the device was opened (the other, valid slot was
    /// used); also logged as warnings.
    pub fn open_warnings(&self) -> &[String] {
        &self.warnings
    }

    fn now_ns(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    /// Gives `[off, off + len)` of the file back to the file system, if punching is on;
    /// whether it did. A refusal turns punching off (it is an economy, not a promise).
    fn punch_hole(&self, off: u64, len: u64) -> bool {
        use std::os::unix::io::AsRawFd;
        let mut p = self.punch.lock();
        if *p != Punch::On {
            return false;
        }
        let (Ok(o), Ok(l)) = (i64::try_from(off), i64::try_from(len)) else {
            return false;
        };
        // SAFETY: fallocate on a valid descriptor with integer arguments.
        let r = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                o,
                l,
            )
        };
        if r == 0 {
            return true;
        }
        let e = std::io::Error::last_os_error();
        tracing::debug!(
            "punching a hole at byte {off} of {}: {e}",
            self.path.display()
        );
        if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
            *p = Punch::Unsupported;
        }
        false
    }

    /// `fdatasync`s the file; a failure poisons the device.
    fn sync_data(&self, g: &mut Inner) -> Result<()> {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.file.sync_data().map_err(|e| {
            g.failed = Some(e.to_string());
            DeviceError::io(format!("syncing {}", self.path.display()), e)
        })
    }

    /// Refuses work after a failed sync.
    fn check_usable(&self, g: &Inner) -> Result<()> {
        match &g.failed {
            None => Ok(()),
            Some(why) => Err(DeviceError::io(
                format!(
                    "{}: an earlier sync failed ({why}); what it covered may not be on disk, so \
                     the device refuses writes until it is reopened",
                    self.path.display()
                ),
                std::io::Error::other("device poisoned by a failed sync"),
            )),
        }
    }

    /// Makes everything written so far durable and saves the zone state: one `fdatasync` when
    /// the unsynced writes are tracked (the record lists them), else the data is synced first.
    fn save(&self, g: &mut Inner) -> Result<()> {
        self.check_usable(g)?;
        match &self.home {
            StateHome::Tail { slots } => {
                let listed = g.unsynced.tracked();
                if !listed {
                    self.sync_data(g)?;
                }
                g.seq += 1;
                let mut st = layout::state_of(&g.zones, g.seq);
                if listed {
                    st.unsynced = g.unsynced.runs().to_vec();
                }
                let written = slots.write(
                    &self.file,
                    "zone state",
                    g.seq,
                    &format::encode_state(&st),
                    false,
                );
                if let Err(e) = written {
                    g.failed = Some(e.to_string());
                    return Err(self.slot_err(e));
                }
                self.sync_data(g)?;
            }
            StateHome::Sidecar { file, slots } => {
                self.sync_data(g)?;
                g.seq += 1;
                let st = crate::image::ImageState {
                    seq: g.seq,
                    zones: layout::state_of(&g.zones, g.seq).zones,
                    ..Default::default()
                };
                self.syncs.fetch_add(1, Ordering::Relaxed);
                let written = slots.write(
                    file,
                    "zone state",
                    g.seq,
                    &crate::image::encode_state(&st),
                    true,
                );
                if let Err(e) = written {
                    g.failed = Some(e.to_string());
                    return Err(self.slot_err(e));
                }
            }
        }
        g.unsynced.clear();
        if let Some(z) = g.zero_ahead.as_mut() {
            z.synced_all();
        }
        Ok(())
    }

    fn slot_err(&self, e: crate::imagefile::ImageFileError) -> DeviceError {
        use crate::imagefile::ImageFileError;
        let problem = match e {
            ImageFileError::Io { doing, source } => crate::error::ImageProblem::Io {
                doing: doing.into(),
                source,
            },
            ImageFileError::Invalid(p) => p,
            ImageFileError::Device(d) => return d,
        };
        DeviceError::Image {
            path: self.path.display().to_string(),
            problem,
        }
    }

    /// The sectors of a `len`-byte transfer at `lba`, checked as every device checks them.
    fn transfer(&self, lba: u64, len: usize) -> Result<u64> {
        self.info.transfer_sectors(lba, len)
    }
}

impl BlockDevice for HostBanded {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        self.transfer(lba, buf.len())?;
        self.read_bytes(lba * u64::from(self.info.sector_size), buf)
    }

    fn read_bytes(&self, offset: u64, buf: &mut [u8]) -> Result<IoDone> {
        let ss = u64::from(self.info.sector_size);
        let (lba, n) = crate::api::byte_span(offset, buf.len(), ss, self.info.capacity_sectors)?;
        self.inner.lock().zones.check_read(lba, n)?;
        let start = self.now_ns();
        match &self.map {
            Some(m) => m.read(offset, buf)?,
            None => self
                .file
                .read_exact_at(buf, offset)
                .map_err(|e| DeviceError::io(format!("reading byte {offset}"), e))?,
        }
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        let n = self.transfer(lba, data.len())?;
        let mut g = self.inner.lock();
        self.check_usable(&g)?;
        let zi = g.zones.zone_of(lba);
        let before = g.zones.zone(zi as u64)?.clone();
        g.zones.apply_write(lba, n)?;
        let start = self.now_ns();
        let res = self
            .file
            .write_all_at(data, lba * self.info.sector_size as u64);
        if let Err(e) = res {
            g.zones.set_state(
                zi,
                before.condition,
                before.write_pointer_lba,
                before.non_seq,
            );
            return Err(DeviceError::io(format!("writing LBA {lba}"), e));
        }
        if before.zone_type.is_sequential() {
            g.unsynced.wrote(zi, lba, n, data);
            let ss = u64::from(self.info.sector_size);
            let fill = g
                .zero_ahead
                .as_mut()
                .and_then(|z| z.after_write(zi, (lba + n) * ss, data.len(), before.end_lba() * ss));
            if let Some((from, to)) = fill {
                let zeros = vec![0u8; (to - from) as usize];
                if let Err(e) = self.file.write_all_at(&zeros, from) {
                    tracing::debug!("zero-filling ahead at byte {from}: {e}");
                    if let Some(z) = g.zero_ahead.as_mut() {
                        z.unwritten_from(zi, from);
                    }
                }
            }
        }
        if flags.fua {
            self.save(&mut g)?;
        }
        g.unkicked += data.len() as u64;
        let kick = self.writeback_kick && g.unkicked >= WRITEBACK_KICK;
        if kick {
            g.unkicked = 0;
        }
        drop(g);
        if kick {
            self.start_writeback();
        }
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }

    fn flush(&self) -> Result<IoDone> {
        let start = self.now_ns();
        let mark = {
            let mut g = self.inner.lock();
            if g.unsynced.tracked() {
                self.save(&mut g)?;
                return Ok(IoDone {
                    start,
                    end: self.now_ns(),
                });
            }
            self.check_usable(&g)?;
            g.unsynced.mark()
        };
        // Much was written: sync it without holding up writers, then save what is left.
        self.syncs.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = self.file.sync_data() {
            self.inner.lock().failed = Some(e.to_string());
            return Err(DeviceError::io(
                format!("syncing {}", self.path.display()),
                e,
            ));
        }
        let mut g = self.inner.lock();
        g.unsynced.synced_to(mark);
        self.save(&mut g)?;
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }

    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.info.check_sectors(lba, sectors)?;
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

impl ZonedDevice for HostBanded {
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        self.inner.lock().zones.report(filter)
    }

    /// Writes are buffered `pwrite`s: in the page cache.
    fn host_page_cache(&self) -> bool {
        true
    }

    /// The file's bytes from the write pointer on, within one sequential zone: the write
    /// pointers are saved only at a flush, so after a crash of the process the file holds
    /// what it wrote past them.
    fn read_beyond_write_pointer(&self, lba: u64, buf: &mut [u8]) -> Result<Option<IoDone>> {
        let n = self.transfer(lba, buf.len())?;
        {
            let g = self.inner.lock();
            let zi = g.zones.zone_of(lba);
            let z = g.zones.zone(u64::from(zi))?;
            if !z.zone_type.is_sequential() || lba < z.write_pointer_lba || lba + n > z.end_lba() {
                return Err(DeviceError::ZoneBoundary {
                    zone: zi,
                    lba,
                    sectors: n,
                    zone_end: z.end_lba(),
                    write_pointer: z.write_pointer_lba,
                });
            }
        }
        let start = self.now_ns();
        self.file
            .read_exact_at(buf, lba * self.info.sector_size as u64)
            .map_err(|e| DeviceError::io(format!("reading LBA {lba}"), e))?;
        Ok(Some(IoDone {
            start,
            end: self.now_ns(),
        }))
    }

    fn zone(&self, index: u32) -> Result<Zone> {
        self.inner.lock().zones.zone(index as u64).cloned()
    }

    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> Result<IoDone> {
        let start = self.now_ns();
        let mut g = self.inner.lock();
        self.check_usable(&g)?;
        let ss = u64::from(self.info.sector_size);
        let targets: Vec<u32> = match target {
            ZoneTarget::One(i) => vec![i],
            ZoneTarget::All => g
                .zones
                .zones()
                .iter()
                .filter(|z| z.zone_type.is_sequential())
                .map(|z| z.index)
                .collect(),
        };
        for &i in &targets {
            g.zones.apply(action, i as u64)?;
            if action == ZoneAction::Reset {
                g.unsynced.reset(i, ss);
            }
        }
        self.save(&mut g)?;
        if action == ZoneAction::Reset {
            // After the save: a crash before it leaves the zone's data in place.
            for &i in &targets {
                let z = g.zones.zone(u64::from(i))?.clone();
                if self.punch_hole(z.start_lba * ss, z.len_lba * ss) {
                    if let Some(za) = g.zero_ahead.as_mut() {
                        za.unwritten_from(i, z.start_lba * ss);
                    }
                }
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
        let start = self.now_ns();
        let mut g = self.inner.lock();
        self.check_usable(&g)?;
        g.zones.rewind(index, lba)?;
        g.unsynced.rewound(index, lba);
        self.save(&mut g)?;
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }
}
