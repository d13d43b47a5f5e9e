//! The two interfaces every upper layer programs against: a block interface and a zoned
//! interface (T10 ZBC / T13 ZAC). Both are object safe and thread safe.

use crate::error::Result;
use crate::media::{Completion, IoDone, Request};
use crate::units::Nanos;
use crate::zone::{Zone, ZoneAction, ZoneFilter};
use serde::Serialize;

/// Static facts about a device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceInfo {
    /// Model string (profile and kind).
    pub model: String,
    /// Drive kind name (`cmr`, `hm-smr`, `ha-smr`, `smr-raw`, …).
    pub kind: String,
    /// Logical sector size in bytes.
    pub sector_size: u32,
    /// Capacity in sectors.
    pub capacity_sectors: u64,
    /// Zone size in sectors (0 for a device without zones).
    pub zone_sectors: u64,
    /// Writable sectors of each sequential zone (NVMe ZNS's zone capacity; equal to
    /// `zone_sectors` on SMR drives, 0 for a device without zones). Upper layers size their
    /// bands and extents by this, never by the zone size.
    pub zone_capacity_sectors: u64,
    /// Number of zones.
    pub zones: u32,
    /// Conventional zones at the start of the device.
    pub conventional_zones: u32,
    /// Open-zone limit (0 = none).
    pub max_open_zones: u32,
    /// Active-zone limit: zones open or closed at once (NVMe ZNS; 0 = none). A layer that
    /// leaves zones partly written must finish one before it starts another past this limit.
    pub max_active_zones: u32,
    /// Whether reads past write pointers return zeros instead of failing.
    pub unrestricted_reads: bool,
    /// Whether sector data is kept (false: metadata-only simulation).
    pub stores_data: bool,
    /// Whether the times the device reports are measured wall time (a real device, a file)
    /// rather than the modelled time of an emulated drive.
    pub wall_time: bool,
}

impl DeviceInfo {
    /// Capacity in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_sectors * self.sector_size as u64
    }

    /// The whole sectors of a `len`-byte transfer at `lba` on this device, checked as every
    /// device checks a read or write ([`transfer_sectors`]).
    pub fn transfer_sectors(&self, lba: u64, len: usize) -> Result<u64> {
        transfer_sectors(lba, len, u64::from(self.sector_size), self.capacity_sectors)
    }

    /// Checks that sectors `[lba, lba + sectors)` lie on this device (a discard's or a
    /// zeroing's range, given in sectors rather than bytes).
    pub fn check_sectors(&self, lba: u64, sectors: u64) -> Result<()> {
        if lba
            .checked_add(sectors)
            .is_none_or(|e| e > self.capacity_sectors)
        {
            return Err(crate::DeviceError::OutOfRange {
                lba,
                sectors,
                capacity: self.capacity_sectors,
            });
        }
        Ok(())
    }
}

/// Write options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteFlags {
    /// Force unit access: the data is durable when the write completes.
    pub fua: bool,
}

/// Which zones a zone action applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneTarget {
    /// One zone by index.
    One(u32),
    /// Every sequential zone to which the action applies (ZBC's ALL bit).
    All,
}

/// What the layer above tells a zoned device about a zone it is about to fill, so that a
/// device that places data itself (the KVIMR middleware's zoned adapter) can place it well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneHint {
    /// The zone will hold an SSTable (band) of this LSM level.
    Level(u8),
    /// The zone will hold a write-ahead log.
    Log,
}

/// The media room of a *thin-provisioned* zoned device: one that backs each zone only with
/// the media its data needs, when the data is written, and so offers more zones than its
/// media could fill at once (the KVIMR middleware's zoned adapter, whose zones are SSTable
/// slots on whole tracks). The layer above must count its free space in media, not in empty
/// zones: a write that finds no media fails with [`crate::DeviceError::NoSpace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneSpace {
    /// Sectors of media that data written to zones can still take (data already written but
    /// not yet placed is taken off).
    pub free_sectors: u64,
    /// Most sectors of media a zone costs beyond the sectors written to it (the device
    /// allocates in units larger than a sector: a zone's last unit is partly empty).
    pub zone_overhead_sectors: u64,
}

impl ZoneSpace {
    /// How many zones of `zone_sectors` filled to the end the free media still holds.
    pub fn full_zones(&self, zone_sectors: u64) -> u64 {
        self.free_sectors / (zone_sectors + self.zone_overhead_sectors).max(1)
    }
}

/// A block device: read, write, flush, discard at an LBA, with modelled completion times.
pub trait BlockDevice: Send + Sync {
    /// Device facts.
    fn info(&self) -> DeviceInfo;
    /// Reads whole sectors at `lba` into `buf`.
    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone>;
    /// Writes whole sectors at `lba`.
    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone>;
    /// Writes whole sectors at `lba` (not durable until a flush when the write cache is on).
    fn write(&self, lba: u64, data: &[u8]) -> Result<IoDone> {
        self.write_with(lba, data, WriteFlags::default())
    }
    /// [`BlockDevice::write_with`] from a buffer the device may keep instead of copying it (a
    /// drive's write cache holds it as the cached data); returns a buffer for the caller's
    /// next write: the same one unless the device kept it. Servers that receive writes into
    /// buffers of their own use this to save a copy of every byte.
    fn write_owned(&self, lba: u64, data: Vec<u8>, flags: WriteFlags) -> Result<(IoDone, Vec<u8>)> {
        let done = self.write_with(lba, &data, flags)?;
        Ok((done, data))
    }
    /// Reads `buf.len()` bytes at byte `offset` of the device, which need not be whole
    /// sectors, with [`BlockDevice::read`]'s checks on the sectors they lie in. Devices that
    /// keep their data in host files copy just those bytes (a 4 KiB block that spans two
    /// sectors costs one 4 KiB copy, not 8 KiB); the default reads the sectors and copies.
    fn read_bytes(&self, offset: u64, buf: &mut [u8]) -> Result<IoDone> {
        let info = self.info();
        let ss = u64::from(info.sector_size);
        let (lba, sectors) = byte_span(offset, buf.len(), ss, info.capacity_sectors)?;
        let mut whole = vec![0u8; (sectors * ss) as usize];
        let done = self.read(lba, &mut whole)?;
        let skip = (offset - lba * ss) as usize;
        buf.copy_from_slice(&whole[skip..skip + buf.len()]);
        Ok(done)
    }
    /// Makes every completed write durable.
    fn flush(&self) -> Result<IoDone>;
    /// Tells the device that sectors are no longer needed.
    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone>;
    /// Submits several requests at once (queue depth = their number); each gets its own
    /// completion time.
    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion>>;
    /// Current virtual time of the device.
    fn now(&self) -> Nanos;
    /// Lets the device idle for `d` (background work such as cleaning runs meanwhile).
    fn idle(&self, d: Nanos);
}

/// A zoned block device with T10 ZBC / T13 ZAC semantics.
pub trait ZonedDevice: BlockDevice {
    /// REPORT ZONES with a condition filter.
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone>;
    /// One zone's current state.
    fn zone(&self, index: u32) -> Result<Zone>;
    /// RESET WRITE POINTER / OPEN / CLOSE / FINISH on one zone or all.
    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> Result<IoDone>;
    /// Resets one zone.
    fn reset_zone(&self, index: u32) -> Result<IoDone> {
        self.zone_action(ZoneAction::Reset, ZoneTarget::One(index))
    }
    /// Opens one zone explicitly.
    fn open_zone(&self, index: u32) -> Result<IoDone> {
        self.zone_action(ZoneAction::Open, ZoneTarget::One(index))
    }
    /// Closes one zone.
    fn close_zone(&self, index: u32) -> Result<IoDone> {
        self.zone_action(ZoneAction::Close, ZoneTarget::One(index))
    }
    /// Finishes one zone.
    fn finish_zone(&self, index: u32) -> Result<IoDone> {
        self.zone_action(ZoneAction::Finish, ZoneTarget::One(index))
    }
    /// Sets a sequential zone's write pointer back to `lba`, an explicit extension beyond ZBC
    /// and ZAC: the "set write pointer" operation of the T13 banded-device proposal that the
    /// ShingledFS emulator offers (`edi_managebands`, seed 003 §4.3.2), used for tail
    /// cleaning. Only backwards (`lba` between the zone start and its write pointer); the
    /// sectors from `lba` to the old write pointer are discarded (they read as unwritten
    /// and the next write starts at `lba`). The host promises that they hold no live data:
    /// writing at `lba` re-shingles the tracks after it, so a real drive could not keep them
    /// either. Durable on return, like a reset. Devices without the extension refuse it.
    fn rewind_write_pointer(&self, index: u32, lba: u64) -> Result<IoDone> {
        let _ = (index, lba);
        Err(crate::error::DeviceError::Unsupported(
            "setting a write pointer back",
        ))
    }
    /// Whether [`ZonedDevice::rewind_write_pointer`] works on this device (an emulated SMR
    /// drive, a banded file, zone files); false for real zoned devices and ZNS, which have no
    /// such command. Default false.
    fn can_rewind(&self) -> bool {
        false
    }
    /// Tells the device what the empty zone `index` is about to hold (call before its first
    /// write). Devices that do not place data ignore it (the default).
    fn hint_zone(&self, index: u32, hint: ZoneHint) {
        let _ = (index, hint);
    }
    /// The media room of a thin-provisioned device ([`ZoneSpace`]); `None` (the default) for
    /// a device whose every zone is backed by media of its full size, where the empty zones
    /// are the free space.
    fn zone_space(&self) -> Option<ZoneSpace> {
        None
    }
    /// Makes durable every write to, and every zone action on, the zones `zones` that
    /// completed before the call, in the order given (a zone is durable before the next is
    /// flushed); writes to other zones may stay volatile. The default flushes the whole device
    /// ([`BlockDevice::flush`]); a device whose zones are separate files
    /// ([`crate::ZoneFiles`]) syncs only theirs, so that one zone's flush does not write
    /// another's volatile data (a log band about to be reset, say).
    fn flush_zones(&self, zones: &[u32]) -> Result<IoDone> {
        let _ = zones;
        self.flush()
    }
    /// Whether a write becomes durable only through a flush (or FUA, or zone action) that
    /// covers its zone, and a zone's durable contents always end where such a flush of it
    /// ended: no write ever reaches stable storage on its own ahead of earlier ones. A host
    /// can then leave a zone unflushed while writing the next (an engine's full log band)
    /// without risking that a crash keeps the later zone's writes and loses the earlier's.
    /// Default false: a drive's volatile cache may destage writes in any order.
    fn durable_only_when_flushed(&self) -> bool {
        false
    }
    /// Whether writes go to the host's page cache (a regular file or a block device opened
    /// without `O_DIRECT`): a write is then handed over at the cost of a memory copy and
    /// survives a crash of the process. False (the default) for the emulator, whose state
    /// lives in the process, and for raw zoned devices, where each write is a command to the
    /// drive. SMRDB writes its log through by default where this holds.
    fn host_page_cache(&self) -> bool {
        false
    }
    /// Reads sectors at or past the write pointer of one sequential zone, where a process that
    /// crashed may have written beyond the pointer the device saved: a device whose write
    /// pointers the host keeps and saves only at a flush (a banded file, zone files) still
    /// holds, after a crash of the process (not of the machine), what the process wrote past
    /// them, in the file. The caller must tell written data from stale bytes itself (SMRDB
    /// follows a chain of checksummed log chunks to the end its log tail slot names).
    /// `Ok(None)` (the default) on devices whose write pointer always covers what was
    /// written: drives, real zoned devices and the emulator.
    fn read_beyond_write_pointer(&self, lba: u64, buf: &mut [u8]) -> Result<Option<IoDone>> {
        let _ = (lba, buf);
        Ok(None)
    }
    /// Appends at a zone's write pointer; returns the LBA written and the timing.
    fn append(&self, index: u32, data: &[u8]) -> Result<(u64, IoDone)> {
        let z = self.zone(index)?;
        let done = self.write(z.write_pointer_lba, data)?;
        Ok((z.write_pointer_lba, done))
    }
}

impl<T: BlockDevice + ?Sized> BlockDevice for std::sync::Arc<T> {
    fn info(&self) -> DeviceInfo {
        (**self).info()
    }
    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        (**self).read(lba, buf)
    }
    fn read_bytes(&self, offset: u64, buf: &mut [u8]) -> Result<IoDone> {
        (**self).read_bytes(offset, buf)
    }
    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        (**self).write_with(lba, data, flags)
    }
    fn write_owned(&self, lba: u64, data: Vec<u8>, flags: WriteFlags) -> Result<(IoDone, Vec<u8>)> {
        (**self).write_owned(lba, data, flags)
    }
    fn flush(&self) -> Result<IoDone> {
        (**self).flush()
    }
    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone> {
        (**self).discard(lba, sectors)
    }
    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion>> {
        (**self).submit(reqs)
    }
    fn now(&self) -> Nanos {
        (**self).now()
    }
    fn idle(&self, d: Nanos) {
        (**self).idle(d)
    }
}

impl<T: ZonedDevice + ?Sized> ZonedDevice for std::sync::Arc<T> {
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        (**self).report_zones(filter)
    }
    fn zone(&self, index: u32) -> Result<Zone> {
        (**self).zone(index)
    }
    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> Result<IoDone> {
        (**self).zone_action(action, target)
    }
    fn rewind_write_pointer(&self, index: u32, lba: u64) -> Result<IoDone> {
        (**self).rewind_write_pointer(index, lba)
    }
    fn can_rewind(&self) -> bool {
        (**self).can_rewind()
    }
    fn hint_zone(&self, index: u32, hint: ZoneHint) {
        (**self).hint_zone(index, hint)
    }
    fn zone_space(&self) -> Option<ZoneSpace> {
        (**self).zone_space()
    }
    fn flush_zones(&self, zones: &[u32]) -> Result<IoDone> {
        (**self).flush_zones(zones)
    }
    fn durable_only_when_flushed(&self) -> bool {
        (**self).durable_only_when_flushed()
    }
    fn read_beyond_write_pointer(&self, lba: u64, buf: &mut [u8]) -> Result<Option<IoDone>> {
        (**self).read_beyond_write_pointer(lba, buf)
    }
    fn host_page_cache(&self) -> bool {
        (**self).host_page_cache()
    }
}

/// Serves `reqs` one after another through `dev`'s `read`, `write_with` and `flush`: the
/// `submit` of a device that has no queue of its own (each request completes before the next).
pub fn submit_serially<D: BlockDevice + ?Sized>(
    dev: &D,
    reqs: Vec<Request>,
) -> Vec<Result<Completion>> {
    let ss = u64::from(dev.info().sector_size);
    reqs.into_iter()
        .map(|r| match r {
            Request::Read { lba, sectors } => {
                let mut data = vec![0u8; (sectors * ss) as usize];
                dev.read(lba, &mut data).map(|done| Completion {
                    done,
                    data: Some(data),
                })
            }
            Request::Write { lba, data, fua } => dev
                .write_with(lba, &data, WriteFlags { fua })
                .map(|done| Completion { done, data: None }),
            Request::Flush => dev.flush().map(|done| Completion { done, data: None }),
        })
        .collect()
}

/// The sectors `(first LBA, count)` that hold `len` bytes at byte `offset` of a device of
/// `capacity` sectors of `ss` bytes ([`BlockDevice::read_bytes`]'s checks).
pub fn byte_span(offset: u64, len: usize, ss: u64, capacity: u64) -> Result<(u64, u64)> {
    let ss = ss.max(1);
    let lba = offset / ss;
    let Some(end) = offset.checked_add(len as u64).filter(|_| len > 0) else {
        return Err(crate::DeviceError::BadLength {
            len,
            sector_size: ss as u32,
        });
    };
    let sectors = end.div_ceil(ss) - lba;
    if lba + sectors > capacity {
        return Err(crate::DeviceError::OutOfRange {
            lba,
            sectors,
            capacity,
        });
    }
    Ok((lba, sectors))
}

/// The whole sectors of a `len`-byte transfer at `lba` on a device of `capacity` sectors of
/// `ss` bytes: the command check every device makes (some whole sectors, all on the device).
pub fn transfer_sectors(lba: u64, len: usize, ss: u64, capacity: u64) -> Result<u64> {
    if len == 0 || !(len as u64).is_multiple_of(ss) {
        return Err(crate::DeviceError::BadLength {
            len,
            sector_size: ss as u32,
        });
    }
    let n = len as u64 / ss;
    if lba.checked_add(n).is_none_or(|e| e > capacity) {
        return Err(crate::DeviceError::OutOfRange {
            lba,
            sectors: n,
            capacity,
        });
    }
    Ok(n)
}
