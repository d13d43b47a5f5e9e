//! A plain file or block device banded like a host-managed SMR drive, with write pointers kept
//! by the host in a checksummed sidecar file (`PATH.zones`: two alternating slots holding the
//! state record of the disk-image format, `docs/formats/disk-image.md`). This is how SMRDB ran
//! on a conventional disk (seed 000 §5.1). Time is wall time: each command's service time is
//! what the real I/O took.
//!
//! A flush `fdatasync`s the data, then writes the zone state into the older slot of the sidecar
//! in place and `fdatasync`s that: two data syncs and no file created, renamed or grown, so a
//! synced write costs about what a log append plus `fdatasync` costs another engine (the first
//! version replaced the whole sidecar by write-to-temporary, fsync and rename on every flush,
//! which tripled the cost of a synced write).
//!
//! Writes are `pwrite`s, flushes `fdatasync`s. Reads are `pread`s, or with
//! [`HostBandedOptions::mmap_reads`] copies out of a shared read-only mapping of the file (as
//! LevelDB reads its table files): no system call per read once a page is mapped, but a host
//! I/O error while reading then kills the process with `SIGBUS` instead of failing the read.

use crate::api::{BlockDevice, DeviceInfo, WriteFlags, ZoneTarget, ZonedDevice};
use crate::error::{DeviceError, Result};
use crate::image::{decode_state, encode_state, ImageState, STATE_FORMAT};
use crate::imagefile::SlotPair;
use crate::media::{Completion, IoDone, Request};
use crate::readmap::ReadMap;
use crate::units::Nanos;
use crate::zone::{Zone, ZoneAction, ZoneFilter, ZoneTable, ZoneType};
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of a host-banded device.
#[derive(Debug, Clone)]
pub struct HostBandedOptions {
    /// Sector size (default 4096).
    pub sector_size: u32,
    /// Zone (band) size in bytes (default 256 MiB).
    pub zone_size: u64,
    /// Conventional zones at the start (default 1).
    pub conventional_zones: u32,
    /// Capacity to use; default the file's or device's size.
    pub capacity: Option<u64>,
    /// Read through a shared read-only mapping of the file instead of `pread` (default off;
    /// see the module's text for what it trades).
    pub mmap_reads: bool,
}

impl Default for HostBandedOptions {
    fn default() -> Self {
        HostBandedOptions {
            sector_size: 4096,
            zone_size: 256 << 20,
            conventional_zones: 1,
            capacity: None,
            mmap_reads: false,
        }
    }
}

struct Inner {
    zones: ZoneTable,
    seq: u64,
    /// Bytes written since the last writeback was started.
    unkicked: u64,
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
    sidecar: PathBuf,
    /// The open sidecar, written in place.
    sidecar_file: File,
    /// Where its two slots are.
    slots: SlotPair<'static>,
    /// Problems found with the sidecar's older slot at open (worded for a person).
    warnings: Vec<String>,
    inner: Mutex<Inner>,
    info: DeviceInfo,
    epoch: Instant,
}

fn device_size(file: &File, path: &Path) -> Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut f = file
        .try_clone()
        .map_err(|e| DeviceError::io("cloning handle", e))?;
    f.seek(SeekFrom::End(0))
        .map_err(|e| DeviceError::io(format!("sizing {}", path.display()), e))
}

/// Where the sidecar of a device with `zones` zones keeps its two state slots: slot A at 0,
/// slot B after it, each room for the state record with a 16 KiB margin, rounded up to 4 KiB.
fn sidecar_slots(zones: usize) -> SlotPair<'static> {
    let size = (16384 + 10 * zones as u64).div_ceil(4096) * 4096;
    SlotPair {
        format: &STATE_FORMAT,
        offset: 0,
        size,
    }
}

fn sidecar_err(path: &Path, e: crate::imagefile::ImageFileError) -> DeviceError {
    use crate::imagefile::ImageFileError;
    match e {
        ImageFileError::Io { doing, source } => {
            DeviceError::io(format!("{doing} {}", path.display()), source)
        }
        other => DeviceError::Image {
            path: path.display().to_string(),
            problem: other.to_string(),
        },
    }
}

/// Opens (creating it if there is no file) the sidecar at `path`: the open file, the newest
/// valid state it holds (none for a new sidecar) and warnings about a damaged older slot. A
/// sidecar of the first version (one record filling a shorter file) is read as slot A, extended
/// to two slots and its record copied into the slot its sequence selects, so that the next save
/// goes to the other one. A new or extended sidecar has both slots' bytes written (zeros where
/// blank), so that later saves overwrite allocated blocks in place.
#[allow(clippy::type_complexity)]
fn open_sidecar(
    path: &Path,
    slots: SlotPair<'static>,
) -> Result<(File, Option<ImageState>, Vec<String>)> {
    let rw = || {
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        o
    };
    let file = match rw().open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let f = rw()
                .create_new(true)
                .open(path)
                .map_err(|e| DeviceError::io(format!("creating {}", path.display()), e))?;
            fill_zeros(&f, 0, 2 * slots.size, path)?;
            sync_dir_of(path);
            return Ok((f, None, Vec::new()));
        }
        Err(e) => return Err(DeviceError::io(format!("opening {}", path.display()), e)),
    };
    let len = file
        .metadata()
        .map_err(|e| DeviceError::io(format!("stat {}", path.display()), e))?
        .len();
    let whole = 2 * slots.size;
    if len < whole {
        // The first version: one record, from offset 0.
        let mut b = vec![0u8; len as usize];
        file.read_exact_at(&mut b, 0)
            .map_err(|e| DeviceError::io(format!("reading {}", path.display()), e))?;
        let st = decode_state(&b).map_err(|p| DeviceError::Image {
            path: path.display().to_string(),
            problem: p,
        })?;
        if len > slots.size {
            return Err(DeviceError::Image {
                path: path.display().to_string(),
                problem: format!(
                    "{len} bytes: neither one record nor two {}-byte slots",
                    slots.size
                ),
            });
        }
        fill_zeros(&file, len, whole, path)?;
        if st.seq % 2 == 1 {
            slots
                .write(&file, "zone state", st.seq, &b, true)
                .map_err(|e| sidecar_err(path, e))?;
        }
        return Ok((file, Some(st), Vec::new()));
    }
    let pair = slots
        .read(&file, slots.size as usize, decode_state)
        .map_err(|e| sidecar_err(path, e))?;
    let choice =
        crate::slots::choose("zone state", pair, |s| s.seq).map_err(|p| DeviceError::Image {
            path: path.display().to_string(),
            problem: p,
        })?;
    Ok((file, Some(choice.state), choice.warnings))
}

/// Writes zeros over `[from, to)` of `file` and syncs it (data and size).
fn fill_zeros(file: &File, from: u64, to: u64, path: &Path) -> Result<()> {
    let zeros = vec![0u8; (to - from) as usize];
    file.write_all_at(&zeros, from)
        .and_then(|_| file.sync_all())
        .map_err(|e| DeviceError::io(format!("writing {}", path.display()), e))
}

/// Makes a new file's directory entry durable (best effort: an error is ignored, the file's
/// contents are synced either way).
fn sync_dir_of(path: &Path) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

impl HostBanded {
    /// Opens (or, with `create`, creates) a banded device on `path`.
    pub fn open(path: &Path, opts: HostBandedOptions) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(opts.capacity.is_some())
            .truncate(false)
            .open(path)
            .map_err(|e| DeviceError::io(format!("opening {}", path.display()), e))?;
        crate::lock::lock(&file, path, true, crate::lock::default_wait())?;
        let mut size = device_size(&file, path)?;
        if let Some(c) = opts.capacity {
            if size < c {
                file.set_len(c)
                    .map_err(|e| DeviceError::io(format!("sizing {}", path.display()), e))?;
                size = c;
            }
            size = size.min(c);
        }
        let ss = opts.sector_size as u64;
        if ss != 512 && ss != 4096 {
            return Err(DeviceError::Config(format!(
                "sector size must be 512 or 4096, got {ss}"
            )));
        }
        if opts.zone_size == 0 || !opts.zone_size.is_multiple_of(ss) {
            return Err(DeviceError::Config(
                "zone size must be a positive multiple of the sector size".into(),
            ));
        }
        let nzones = size / opts.zone_size;
        if nzones <= opts.conventional_zones as u64 {
            return Err(DeviceError::Config(format!(
                "{} holds {nzones} zones of {} bytes; need more than {} conventional ones",
                path.display(),
                opts.zone_size,
                opts.conventional_zones
            )));
        }
        let capacity = nzones * opts.zone_size / ss;
        let zone_sectors = opts.zone_size / ss;
        let mut zones = ZoneTable::new(
            capacity,
            zone_sectors,
            opts.conventional_zones,
            ZoneType::SeqWriteRequired,
            0,
            false,
        );
        let mut sidecar = path.as_os_str().to_owned();
        sidecar.push(".zones");
        let sidecar = PathBuf::from(sidecar);
        let slots = sidecar_slots(zones.len() as usize);
        let (sidecar_file, found, warnings) = open_sidecar(&sidecar, slots)?;
        let mut seq = 0;
        if let Some(st) = found {
            if st.zones.len() != zones.len() as usize {
                return Err(DeviceError::Image {
                    path: sidecar.display().to_string(),
                    problem: format!(
                        "{} zones recorded, the layout has {}",
                        st.zones.len(),
                        zones.len()
                    ),
                });
            }
            for (i, &(c, ns, wp)) in st.zones.iter().enumerate() {
                zones.set_state(i as u32, c, wp, ns);
            }
            seq = st.seq;
        }
        for w in &warnings {
            tracing::warn!("{}: {w}", sidecar.display());
        }
        let info = DeviceInfo {
            model: format!("host-banded {}", path.display()),
            kind: "host-banded".into(),
            sector_size: opts.sector_size,
            capacity_sectors: capacity,
            zone_sectors,
            zones: zones.len(),
            conventional_zones: opts.conventional_zones,
            max_open_zones: 0,
            unrestricted_reads: false,
            stores_data: true,
        };
        let map = if opts.mmap_reads {
            Some(ReadMap::new(&file, capacity * ss, path)?)
        } else {
            None
        };
        let dev = HostBanded {
            map,
            file,
            sidecar,
            sidecar_file,
            slots,
            warnings,
            inner: Mutex::new(Inner {
                zones,
                seq,
                unkicked: 0,
            }),
            info,
            epoch: Instant::now(),
        };
        dev.persist(&mut dev.inner.lock())?;
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

    /// Problems found with the sidecar's older slot when the device was opened (the newer,
    /// valid slot was used); also logged as warnings.
    pub fn open_warnings(&self) -> &[String] {
        &self.warnings
    }

    fn now_ns(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    fn persist(&self, g: &mut Inner) -> Result<()> {
        g.seq += 1;
        let st = ImageState {
            seq: g.seq,
            zones: g
                .zones
                .zones()
                .iter()
                .map(|z| (z.condition, z.non_seq, z.write_pointer_lba))
                .collect(),
            ..Default::default()
        };
        self.slots
            .write(
                &self.sidecar_file,
                "zone state",
                g.seq,
                &encode_state(&st),
                true,
            )
            .map_err(|e| sidecar_err(&self.sidecar, e))
    }

    /// The sectors of a `len`-byte transfer at `lba`, checked as every device checks them.
    fn transfer(&self, lba: u64, len: usize) -> Result<u64> {
        let ss = u64::from(self.info.sector_size);
        crate::api::transfer_sectors(lba, len, ss, self.info.capacity_sectors)
    }

    fn check_range(&self, lba: u64, n: u64) -> Result<()> {
        if lba
            .checked_add(n)
            .is_none_or(|e| e > self.info.capacity_sectors)
        {
            return Err(DeviceError::OutOfRange {
                lba,
                sectors: n,
                capacity: self.info.capacity_sectors,
            });
        }
        Ok(())
    }
}

impl BlockDevice for HostBanded {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let n = self.transfer(lba, buf.len())?;
        self.inner.lock().zones.check_read(lba, n)?;
        let start = self.now_ns();
        let off = lba * self.info.sector_size as u64;
        match &self.map {
            Some(m) => m.read(off, buf)?,
            None => self
                .file
                .read_exact_at(buf, off)
                .map_err(|e| DeviceError::io(format!("reading LBA {lba}"), e))?,
        }
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        let n = self.transfer(lba, data.len())?;
        let mut g = self.inner.lock();
        let zi = g.zones.zone_of(lba);
        let before = g.zones.zone(zi as u64)?.clone();
        g.zones.apply_write(lba, n)?;
        let start = self.now_ns();
        let res = self
            .file
            .write_all_at(data, lba * self.info.sector_size as u64)
            .and_then(|_| {
                if flags.fua {
                    self.file.sync_data()
                } else {
                    Ok(())
                }
            });
        if let Err(e) = res {
            g.zones.set_state(
                zi,
                before.condition,
                before.write_pointer_lba,
                before.non_seq,
            );
            return Err(DeviceError::io(format!("writing LBA {lba}"), e));
        }
        if flags.fua {
            self.persist(&mut g)?;
        }
        g.unkicked += data.len() as u64;
        let kick = g.unkicked >= WRITEBACK_KICK;
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
        self.file
            .sync_data()
            .map_err(|e| DeviceError::io("syncing", e))?;
        self.persist(&mut self.inner.lock())?;
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }

    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.check_range(lba, sectors)?;
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

    fn zone(&self, index: u32) -> Result<Zone> {
        self.inner.lock().zones.zone(index as u64).cloned()
    }

    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> Result<IoDone> {
        let start = self.now_ns();
        let mut g = self.inner.lock();
        match target {
            ZoneTarget::One(i) => g.zones.apply(action, i as u64)?,
            ZoneTarget::All => {
                let seq: Vec<u32> = g
                    .zones
                    .zones()
                    .iter()
                    .filter(|z| z.zone_type.is_sequential())
                    .map(|z| z.index)
                    .collect();
                for i in seq {
                    g.zones.apply(action, i as u64)?;
                }
            }
        }
        self.persist(&mut g)?;
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }

    fn rewind_write_pointer(&self, index: u32, lba: u64) -> Result<IoDone> {
        let start = self.now_ns();
        let mut g = self.inner.lock();
        g.zones.rewind(index, lba)?;
        self.persist(&mut g)?;
        Ok(IoDone {
            start,
            end: self.now_ns(),
        })
    }
}
