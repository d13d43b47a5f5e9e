//! The engine's view of the device: sector-aligned reads of byte ranges inside a zone,
//! appends, and accounting of bytes and modelled device time per kind of I/O.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tegula_device::{DeviceError, IoDone, ZoneSpace, ZonedDevice};

/// What an I/O was for (statistics only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoKind {
    /// Log band writes.
    Log,
    /// Log tail slot writes (the conventional area; `crate::log::tail`).
    LogTail,
    /// Memtable flushes.
    Flush,
    /// Compaction reads and writes.
    Compaction,
    /// Superblock and manifest.
    Meta,
    /// User reads (GET, SCAN) and band opens.
    Read,
}

/// Counters per kind of I/O.
#[derive(Debug, Default)]
pub struct IoCounters {
    /// Bytes written to log bands.
    pub log_bytes: AtomicU64,
    /// Bytes written to the log tail slots.
    pub log_tail_bytes: AtomicU64,
    /// Bytes written by memtable flushes.
    pub flush_bytes: AtomicU64,
    /// Bytes read by compactions.
    pub compaction_read: AtomicU64,
    /// Bytes written by compactions.
    pub compaction_written: AtomicU64,
    /// Bytes written to the conventional area.
    pub meta_bytes: AtomicU64,
    /// Bytes read for user requests.
    pub user_read: AtomicU64,
    /// Modelled device time of compaction I/O.
    pub compaction_ns: AtomicU64,
    /// Modelled device time of flush I/O.
    pub flush_ns: AtomicU64,
    /// Modelled device time of log I/O (device flushes included).
    pub log_ns: AtomicU64,
}

/// The device, its geometry, and the counters.
pub struct Dev {
    /// The zoned device.
    pub dev: Arc<dyn ZonedDevice>,
    /// Sector size in bytes.
    pub ss: u64,
    /// Writable sectors of each zone (its capacity, below the zone size on ZNS): the room of
    /// a band or log band.
    pub zone_sectors: u64,
    /// Zone size in sectors: zone `z` starts at LBA `z × zone_stride`.
    pub zone_stride: u64,
    /// Whether the device limits its active zones: the engine then finishes each band's
    /// zone once the band is complete, so that finished bands hold no active resource.
    pub finish_bands: bool,
    /// Counters.
    pub counters: IoCounters,
}

impl std::fmt::Debug for Dev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dev")
            .field("ss", &self.ss)
            .field("zone_sectors", &self.zone_sectors)
            .field("zone_stride", &self.zone_stride)
            .finish()
    }
}

impl Dev {
    /// Wraps a device.
    pub fn new(dev: Arc<dyn ZonedDevice>) -> Self {
        let info = dev.info();
        Dev {
            ss: info.sector_size as u64,
            zone_sectors: info.zone_capacity_sectors,
            zone_stride: info.zone_sectors,
            finish_bands: info.max_active_zones > 0,
            dev,
            counters: IoCounters::default(),
        }
    }

    /// The media room of a thin-provisioned device (see [`ZoneSpace`]); `None` when every
    /// zone is backed by media of its full size.
    pub fn space(&self) -> Option<ZoneSpace> {
        self.dev.zone_space()
    }

    /// The engine's error for a device error of an I/O of `kind`. A thin-provisioned device
    /// refuses band data it has no media for with `NoSpace`: for a flush's or a compaction's
    /// bands that is the engine's `NoSpace` (the bands are abandoned and their zones reset,
    /// and nothing else changed). Anywhere else (log, manifest) it stays a device error,
    /// which stops writes: a log or manifest write that may have half happened cannot be
    /// taken back.
    fn err(kind: IoKind, e: DeviceError) -> Error {
        match (kind, e) {
            (IoKind::Flush | IoKind::Compaction, DeviceError::NoSpace(m)) => Error::NoSpace(m),
            (_, e) => Error::Device(e),
        }
    }

    /// Zone capacity in bytes.
    pub fn zone_bytes(&self) -> u64 {
        self.zone_sectors * self.ss
    }

    /// First LBA of a zone.
    pub fn zone_lba(&self, zone: u32) -> u64 {
        zone as u64 * self.zone_stride
    }

    fn account(&self, kind: IoKind, bytes: u64, done: IoDone, write: bool) {
        let c = &self.counters;
        let t = done.service();
        match (kind, write) {
            (IoKind::Log, _) => {
                if write {
                    c.log_bytes.fetch_add(bytes, Ordering::Relaxed);
                }
                c.log_ns.fetch_add(t, Ordering::Relaxed);
            }
            (IoKind::LogTail, _) => {
                if write {
                    c.log_tail_bytes.fetch_add(bytes, Ordering::Relaxed);
                }
                c.log_ns.fetch_add(t, Ordering::Relaxed);
            }
            (IoKind::Flush, _) => {
                if write {
                    c.flush_bytes.fetch_add(bytes, Ordering::Relaxed);
                }
                c.flush_ns.fetch_add(t, Ordering::Relaxed);
            }
            (IoKind::Compaction, true) => {
                c.compaction_written.fetch_add(bytes, Ordering::Relaxed);
                c.compaction_ns.fetch_add(t, Ordering::Relaxed);
            }
            (IoKind::Compaction, false) => {
                c.compaction_read.fetch_add(bytes, Ordering::Relaxed);
                c.compaction_ns.fetch_add(t, Ordering::Relaxed);
            }
            (IoKind::Meta, true) => {
                c.meta_bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            (IoKind::Read, false) | (IoKind::Meta, false) => {
                c.user_read.fetch_add(bytes, Ordering::Relaxed);
            }
            (IoKind::Read, true) => {}
        }
    }

    /// Reads `len` bytes at byte offset `off` of `zone`.
    pub fn read_at(&self, zone: u32, off: u64, len: usize, kind: IoKind) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_into(zone, off, &mut buf, kind)?;
        Ok(buf)
    }

    /// The sectors `first..end` of `zone` that hold `len` bytes at byte offset `off`, or a
    /// corruption error when they run past the zone end (a damaged extent).
    fn sectors_of(&self, zone: u32, off: u64, len: usize) -> Result<(u64, u64)> {
        let first = off / self.ss;
        let end = off.saturating_add(len as u64).div_ceil(self.ss);
        if end > self.zone_sectors {
            return Err(Error::corruption(
                zone,
                off,
                format!("read of {len} bytes runs past the zone end"),
            ));
        }
        Ok((first, end))
    }

    /// Reads `buf.len()` bytes at byte offset `off` of `zone` into `buf`: exactly those bytes
    /// where the device keeps its data in host files, the sectors holding them elsewhere
    /// ([`tegula_device::BlockDevice::read_bytes`]); the sectors count as read.
    fn read_into(&self, zone: u32, off: u64, buf: &mut [u8], kind: IoKind) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let (first, end) = self.sectors_of(zone, off, buf.len())?;
        let done = self
            .dev
            .read_bytes(self.zone_lba(zone) * self.ss + off, buf)
            .map_err(Error::Device)?;
        self.account(kind, (end - first) * self.ss, done, false);
        Ok(())
    }

    /// Reads `len` bytes at byte offset `off` of `zone` into the start of `buf`, reusing its
    /// allocation (a read-ahead window refilled again and again is neither reallocated nor
    /// zeroed: `buf` only grows); returns the byte offset in the zone of `buf[0]` (`off`)
    /// and how many bytes of `buf` were read (`len`).
    pub fn read_window(
        &self,
        zone: u32,
        off: u64,
        len: usize,
        kind: IoKind,
        buf: &mut Vec<u8>,
    ) -> Result<(u64, usize)> {
        if buf.len() < len {
            buf.resize(len, 0);
        }
        self.read_into(zone, off, &mut buf[..len], kind)?;
        Ok((off, len))
    }

    /// Reads `len` bytes at byte offset `off` of `zone` into a buffer this thread reuses, and
    /// hands them to `f` (a block read that keeps a copy of part of them allocates and zeroes
    /// no buffer of its own).
    pub fn with_span<T>(
        &self,
        zone: u32,
        off: u64,
        len: usize,
        kind: IoKind,
        f: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        thread_local! {
            static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
        }
        // Taken out of the thread-local while in use, so that a nested call gets its own.
        let mut buf = SCRATCH.with(|c| c.take());
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let r = self
            .read_into(zone, off, &mut buf[..len], kind)
            .and_then(|()| f(&buf[..len]));
        if buf.capacity() <= 4 << 20 {
            SCRATCH.with(|c| c.set(buf));
        }
        r
    }

    /// Reads `sectors` sectors of `zone` from `sector`, at or past its write pointer, where a
    /// crashed process may have written beyond the pointer the device saved
    /// ([`ZonedDevice::read_beyond_write_pointer`]); `None` on devices that keep nothing there.
    pub fn read_beyond(&self, zone: u32, sector: u64, sectors: u64) -> Result<Option<Vec<u8>>> {
        let mut buf = vec![0u8; (sectors * self.ss) as usize];
        match self
            .dev
            .read_beyond_write_pointer(self.zone_lba(zone) + sector, &mut buf)
            .map_err(Error::Device)?
        {
            None => Ok(None),
            Some(done) => {
                self.account(IoKind::Log, 0, done, false);
                Ok(Some(buf))
            }
        }
    }

    /// Reads `sectors` whole sectors at an absolute LBA (the conventional area).
    pub fn read_lba(&self, lba: u64, sectors: u64) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; (sectors * self.ss) as usize];
        let done = self.dev.read(lba, &mut buf).map_err(Error::Device)?;
        self.account(IoKind::Meta, buf.len() as u64, done, false);
        Ok(buf)
    }

    /// Writes whole sectors at an absolute LBA of the conventional area.
    pub fn write_lba(&self, lba: u64, data: &[u8], kind: IoKind) -> Result<()> {
        let done = self.dev.write(lba, data).map_err(|e| Self::err(kind, e))?;
        self.account(kind, data.len() as u64, done, true);
        Ok(())
    }

    /// Writes whole sectors at sector `sector` of `zone`.
    pub fn write_at(&self, zone: u32, sector: u64, data: &[u8], kind: IoKind) -> Result<()> {
        let done = self
            .dev
            .write(self.zone_lba(zone) + sector, data)
            .map_err(|e| Self::err(kind, e))?;
        self.account(kind, data.len() as u64, done, true);
        Ok(())
    }

    /// Flushes the device cache.
    pub fn flush(&self, kind: IoKind) -> Result<()> {
        let done = self.dev.flush().map_err(|e| Self::err(kind, e))?;
        self.account(kind, 0, done, false);
        Ok(())
    }

    /// Makes the writes to `zones` durable, in that order (a device that cannot scope a
    /// flush flushes everything: [`ZonedDevice::flush_zones`]).
    pub fn flush_zones(&self, kind: IoKind, zones: &[u32]) -> Result<()> {
        let done = self
            .dev
            .flush_zones(zones)
            .map_err(|e| Self::err(kind, e))?;
        self.account(kind, 0, done, false);
        Ok(())
    }

    /// Finishes the zone of a complete band of `sectors` sectors on a device that limits its
    /// active zones (a band's zone is written once: finished, it holds no active resource); a
    /// no-op elsewhere, and for a band that filled its zone.
    pub fn finish_band(&self, zone: u32, sectors: u64) -> Result<()> {
        if self.finish_bands && sectors < self.zone_sectors {
            self.dev.finish_zone(zone).map_err(Error::Device)?;
        }
        Ok(())
    }

    /// Resets a zone.
    pub fn reset(&self, zone: u32) -> Result<()> {
        self.dev.reset_zone(zone).map_err(Error::Device)?;
        Ok(())
    }

    /// Pads `buf` with zeros to a whole number of sectors.
    pub fn pad(&self, buf: &mut Vec<u8>) {
        let n = (buf.len() as u64).div_ceil(self.ss).max(1) * self.ss;
        buf.resize(n as usize, 0);
    }
}
