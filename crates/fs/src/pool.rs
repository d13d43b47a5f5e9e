//! The sequential zones as a pool of ZEA allocators, shared between the file system (under
//! its lock) and the threads that write or read extents outside it (the writer of closed
//! files, the cleaner, readers): each zone's allocator sits behind its own lock, and its
//! write pointer is mirrored in an atomic so that placement never waits for a zone being
//! written. A cache of decoded extent metadata makes a small read cost one device read, and
//! a small cache of recently read extent data lets consecutive small reads neither read a
//! checksum chunk twice nor issue one command per page.
//!
//! Extents are written without a cache flush each (ZEA's [`Durability::Caller`]): a commit's
//! one flush, after its log record, makes them durable with the record that maps them
//! ([`Pool::written_mark`], [`Pool::flushed_through`]), so a close costs no flush and an
//! fsync one.

use crate::error::{FsError, Result};
use crate::state::Piece;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use tegula_device::ZonedDevice;
use tegula_zea::{Durability, ExtentMeta, Options, Placed, Zea};

const META_CACHE_MAX: usize = 16 * 1024;
/// Bytes of recently read extent data kept (verified against their chunk checksums).
const READ_CACHE_BYTES: usize = 8 << 20;
/// A read that continues the previous read of the same extent fetches at least this much.
const READ_AHEAD: u64 = 256 << 10;
/// Buffers kept for assembling extents (one per writer of a zone at a time: the writer
/// thread and the cleaner), and the smallest worth keeping.
const SPARE_BUFFERS: usize = 2;
const SPARE_MIN_CAPACITY: usize = 256 << 10;

/// One cached range of an extent's data, chunk-aligned at its start.
struct Cached {
    /// (zone, data LBA of the extent).
    key: (u32, u64),
    /// Byte offset of `data` in the extent's data.
    start: u64,
    data: Arc<Vec<u8>>,
}

/// Recently read extent data, oldest first. Extents never change until their zone is reset
/// or set back, so entries stay valid until [`Pool::reset`] or [`Pool::rewind`] drops them.
#[derive(Default)]
struct ReadCache {
    entries: VecDeque<Cached>,
    bytes: usize,
}

impl ReadCache {
    /// The entry of extent `key` holding byte `pos` or ending exactly there.
    fn find(&self, key: (u32, u64), pos: u64) -> Option<(u64, Arc<Vec<u8>>)> {
        self.entries
            .iter()
            .rev()
            .find(|c| c.key == key && c.start <= pos && pos <= c.start + c.data.len() as u64)
            .map(|c| (c.start, c.data.clone()))
    }

    fn insert(&mut self, key: (u32, u64), start: u64, data: Arc<Vec<u8>>) {
        self.bytes += data.len();
        self.entries.push_back(Cached { key, start, data });
        while self.bytes > READ_CACHE_BYTES && self.entries.len() > 1 {
            if let Some(c) = self.entries.pop_front() {
                self.bytes -= c.data.len();
            }
        }
    }

    /// Drops the entries of extents of `zone` at or after `from`.
    fn drop_zone(&mut self, zone: u32, from: u64) {
        self.entries.retain(|c| c.key.0 != zone || c.key.1 < from);
        self.bytes = self.entries.iter().map(|c| c.data.len()).sum();
    }
}

/// One sequential zone: its allocator and a copy of its write pointer that readers of the
/// pool's free space can take without the allocator's lock.
struct Slot {
    zea: RwLock<Zea>,
    start: u64,
    end: u64,
    wp: AtomicU64,
}

/// ZEA instances of every sequential zone.
pub struct Pool {
    slots: Vec<Option<Slot>>,
    dev: Arc<dyn ZonedDevice>,
    /// Extents written so far (a counter, bumped once each write completed).
    written: AtomicU64,
    /// The value of `written` that the last completed device flush covers.
    flushed: AtomicU64,
    opts: Options,
    first_seq: u32,
    sector: u64,
    zone_sectors: u64,
    /// The device's active-zone limit (0: none).
    max_active: u32,
    /// Decoded metadata by (zone, data LBA).
    metas: Mutex<HashMap<(u32, u64), Arc<ExtentMeta>>>,
    /// Recently read extent data.
    data: Mutex<ReadCache>,
    /// Buffers to assemble extents in, given back by the device after earlier puts.
    bufs: Mutex<Vec<Vec<u8>>>,
}

fn not_seq(zone: u32) -> FsError {
    FsError::Io(format!("zone {zone} is not sequential"))
}

impl Pool {
    /// Opens (recovers) the allocator of every sequential zone.
    pub fn open(dev: Arc<dyn ZonedDevice>, first_seq: u32, back_pointers: u16) -> Result<Pool> {
        let info = dev.info();
        let opts = Options {
            back_pointers,
            durability: Durability::Caller,
            ..Options::default()
        };
        let mut slots = Vec::with_capacity(info.zones as usize);
        for z in 0..info.zones {
            if z < first_seq {
                slots.push(None);
            } else {
                let zea = Zea::open(dev.clone(), z, opts.clone())?;
                slots.push(Some(Slot {
                    start: zea.start_lba(),
                    end: zea.end_lba(),
                    wp: AtomicU64::new(zea.write_pointer()),
                    zea: RwLock::new(zea),
                }));
            }
        }
        Ok(Pool {
            slots,
            dev,
            written: AtomicU64::new(0),
            flushed: AtomicU64::new(0),
            opts,
            first_seq,
            sector: info.sector_size as u64,
            zone_sectors: info.zone_capacity_sectors,
            max_active: info.max_active_zones,
            metas: Mutex::new(HashMap::new()),
            data: Mutex::new(ReadCache::default()),
            bufs: Mutex::new(Vec::new()),
        })
    }

    /// Indexes of the sequential zones.
    pub fn seq_zones(&self) -> std::ops::Range<u32> {
        self.first_seq..self.slots.len() as u32
    }

    /// Bytes a zone holds (its capacity).
    pub fn zone_bytes(&self) -> u64 {
        self.zone_sectors * self.sector
    }

    /// Sector size.
    pub fn sector(&self) -> u64 {
        self.sector
    }

    fn slot(&self, zone: u32) -> Result<&Slot> {
        self.slots
            .get(zone as usize)
            .and_then(|s| s.as_ref())
            .ok_or_else(|| not_seq(zone))
    }

    // A panic while holding a zone's lock leaves the allocator as it was before the call or
    // after it (its state changes after the device call returns), so a poisoned lock is
    // still usable.
    fn read_zea(&self, zone: u32) -> Result<RwLockReadGuard<'_, Zea>> {
        Ok(self
            .slot(zone)?
            .zea
            .read()
            .unwrap_or_else(|e| e.into_inner()))
    }

    fn write_zea(&self, zone: u32) -> Result<RwLockWriteGuard<'_, Zea>> {
        Ok(self
            .slot(zone)?
            .zea
            .write()
            .unwrap_or_else(|e| e.into_inner()))
    }

    /// First LBA of a sequential zone.
    pub fn start_lba(&self, zone: u32) -> Option<u64> {
        self.slot(zone).ok().map(|s| s.start)
    }

    /// Write pointer of a sequential zone.
    pub fn write_pointer(&self, zone: u32) -> Option<u64> {
        self.slot(zone).ok().map(|s| s.wp.load(Ordering::Acquire))
    }

    /// Bytes written in `zone` (data, metadata and torn leftovers).
    pub fn used_bytes(&self, zone: u32) -> u64 {
        self.slot(zone).map_or(0, |s| {
            (s.wp.load(Ordering::Acquire) - s.start) * self.sector
        })
    }

    /// Whether `zone` is empty.
    pub fn is_empty(&self, zone: u32) -> bool {
        self.slot(zone)
            .is_ok_and(|s| s.wp.load(Ordering::Acquire) == s.start)
    }

    /// The largest extent that fits in `zone` (one sector goes to its metadata block).
    pub fn max_put(&self, zone: u32) -> u64 {
        self.slot(zone).map_or(0, |s| {
            (s.end - s.wp.load(Ordering::Acquire)).saturating_sub(1) * self.sector
        })
    }

    /// Sectors an extent of `len` bytes occupies with its metadata block.
    pub fn extent_sectors(&self, len: u64) -> u64 {
        len.div_ceil(self.sector) + 1
    }

    /// Appends an extent to `zone` at its write pointer; durable at the next
    /// [`Pool::flush_data`].
    pub fn put(&self, zone: u32, zba: u64, tag: u64, data: &[u8]) -> Result<Placed> {
        let buf = self.take_buffer();
        let mut z = self.write_zea(zone)?;
        let (placed, back) = z.put_via(zba, tag, data, buf)?;
        self.give_buffer(back);
        // Counted once the write completed: a flush that took its mark earlier does not
        // cover it, and the next one will.
        self.written.fetch_add(1, Ordering::AcqRel);
        if self.max_active > 0 && z.free_sectors() > 0 && z.max_put() == 0 {
            // Too little room for another extent: finish the zone, so that it holds no
            // active resource of a device that limits them.
            z.finish()?;
        }
        self.slot(zone)?
            .wp
            .store(z.write_pointer(), Ordering::Release);
        Ok(placed)
    }

    /// A buffer to assemble an extent in: a spare one when there is one.
    fn take_buffer(&self) -> Vec<u8> {
        self.bufs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default()
    }

    /// Keeps a buffer the device gave back for the next extent (a few large ones at most).
    fn give_buffer(&self, v: Vec<u8>) {
        if v.capacity() < SPARE_MIN_CAPACITY {
            return;
        }
        let mut bufs = self.bufs.lock().unwrap_or_else(|e| e.into_inner());
        if bufs.len() < SPARE_BUFFERS {
            bufs.push(v);
        }
    }

    /// The device's active-zone limit (0: none).
    pub fn max_active(&self) -> u32 {
        self.max_active
    }

    /// Whether `zone` holds an active resource: written, and not full.
    pub fn is_active(&self, zone: u32) -> bool {
        self.slot(zone).is_ok_and(|s| {
            let wp = s.wp.load(Ordering::Acquire);
            wp > s.start && wp < s.end
        })
    }

    /// A mark of the extents written so far: a device flush that starts after it is taken
    /// makes them durable ([`Pool::flushed_through`]).
    pub fn written_mark(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Notes that a device flush which started after `mark` was taken has completed (the
    /// metadata log's flush after a commit record covers the extents written before it).
    pub fn flushed_through(&self, mark: u64) {
        self.flushed.fetch_max(mark, Ordering::AcqRel);
    }

    /// Makes every extent written so far durable (one device flush, none if nothing was
    /// written since the last).
    pub fn flush_data(&self) -> Result<()> {
        let mark = self.written_mark();
        if mark > self.flushed.load(Ordering::Acquire) {
            self.dev.flush()?;
            self.flushed_through(mark);
        }
        Ok(())
    }

    /// Torn sectors ZEA found at the zone's tail when it was opened.
    pub fn torn_sectors(&self, zone: u32) -> u64 {
        self.read_zea(zone).map_or(0, |z| z.recovery().torn_sectors)
    }

    fn cache(&self) -> MutexGuard<'_, HashMap<(u32, u64), Arc<ExtentMeta>>> {
        // Inserts and clears are single calls, so a poisoned lock is still usable.
        self.metas.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The metadata of the extent a piece lives in (cached).
    pub fn meta(&self, p: &Piece) -> Result<Arc<ExtentMeta>> {
        if let Some(m) = self.cache().get(&(p.zone, p.ext_lba)) {
            return Ok(m.clone());
        }
        let m = Arc::new(self.read_zea(p.zone)?.read_meta(p.ext_lba, p.ext_len)?);
        let mut c = self.cache();
        if c.len() >= META_CACHE_MAX {
            c.clear();
        }
        c.insert((p.zone, p.ext_lba), m.clone());
        Ok(m)
    }

    fn data_cache(&self) -> MutexGuard<'_, ReadCache> {
        // As for `cache`: every change is a single call, so a poisoned lock is still usable.
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads `n` bytes at `off` within a piece, checking the covering chunks' checksums.
    /// Bytes read recently come from the read cache; the rest is read from the device in
    /// whole chunks, starting after what the cache held (so that a run of small reads moves
    /// forward on the disk and never reads a sector twice), and at least the read-ahead (256 KiB)
    /// when the read continues a cached range of the same extent.
    pub fn read(&self, p: &Piece, off: u64, n: u64) -> Result<Vec<u8>> {
        let key = (p.zone, p.ext_lba);
        let x = p.ext_off + off;
        let end = x + n;
        let mut out = Vec::with_capacity(n as usize);
        let mut pos = x;
        let cached = self.data_cache().find(key, x);
        if let Some((start, data)) = &cached {
            let e = (start + data.len() as u64).min(end);
            out.extend_from_slice(&data[(pos - start) as usize..(e - start) as usize]);
            pos = e;
        }
        if pos < end {
            let m = self.meta(p)?;
            let cb = (m.chunk_bytes as u64).max(1);
            let a = pos / cb * cb;
            let need = (end.div_ceil(cb) * cb).min(m.data_len).max(end);
            let b = if cached.is_some() {
                ((a + READ_AHEAD).div_ceil(cb) * cb)
                    .min(m.data_len)
                    .max(need)
            } else {
                need
            };
            let z = self.read_zea(p.zone)?;
            let data = match z.read_range(&m, a, b - a) {
                Ok(d) => d,
                // A bad chunk beyond what was asked for fails only the read that asks for it.
                Err(_) if b > need => z.read_range(&m, a, need - a)?,
                Err(e) => return Err(e.into()),
            };
            drop(z);
            out.extend_from_slice(&data[(pos - a) as usize..(end - a) as usize]);
            self.data_cache().insert(key, a, Arc::new(data));
        }
        Ok(out)
    }

    /// Resets `zone`; its extents are gone.
    pub fn reset(&self, zone: u32) -> Result<()> {
        let mut z = self.write_zea(zone)?;
        z.reset()?;
        self.slot(zone)?.wp.store(z.start_lba(), Ordering::Release);
        self.cache().retain(|(zz, _), _| *zz != zone);
        self.data_cache().drop_zone(zone, 0);
        Ok(())
    }

    /// Whether the device can set a write pointer back (tail cleaning needs it).
    pub fn can_rewind(&self) -> bool {
        self.dev.can_rewind()
    }

    /// Sets `zone`'s write pointer back to `lba` (the end of an extent's metadata block, or
    /// the zone start) and reopens its allocator there; the extents after it are gone.
    pub fn rewind(&self, zone: u32, lba: u64) -> Result<()> {
        let mut z = self.write_zea(zone)?;
        self.dev.rewind_write_pointer(zone, lba)?;
        *z = Zea::open(self.dev.clone(), zone, self.opts.clone())?;
        if z.write_pointer() != lba {
            return Err(FsError::Io(format!(
                "zone {zone}: write pointer {} after setting it back to {lba}",
                z.write_pointer()
            )));
        }
        self.slot(zone)?.wp.store(lba, Ordering::Release);
        self.cache().retain(|(zz, l), _| *zz != zone || *l < lba);
        self.data_cache().drop_zone(zone, lba);
        Ok(())
    }
}
