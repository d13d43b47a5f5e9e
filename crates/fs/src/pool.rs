//! The sequential zones as a pool of ZEA allocators, with a cache of decoded extent metadata
//! so that a small read costs one device read, and a small cache of recently read extent data
//! so that consecutive small reads neither read a checksum chunk twice nor issue one command
//! per page.

use crate::error::Result;
use crate::state::Piece;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use tegula_device::ZonedDevice;
use tegula_zea::{ExtentMeta, Options, Placed, Zea};

const META_CACHE_MAX: usize = 16 * 1024;
/// Bytes of recently read extent data kept (verified against their chunk checksums).
const READ_CACHE_BYTES: usize = 8 << 20;
/// A read that continues the previous read of the same extent fetches at least this much.
const READ_AHEAD: u64 = 256 << 10;

/// One cached range of an extent's data, chunk-aligned at its start.
struct Cached {
    /// (zone, data LBA of the extent).
    key: (u32, u64),
    /// Byte offset of `data` in the extent's data.
    start: u64,
    data: Arc<Vec<u8>>,
}

/// Recently read extent data, oldest first. Extents never change until their zone is reset,
/// so entries stay valid until [`Pool::reset`] drops the zone's entries.
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

    fn drop_zone(&mut self, zone: u32) {
        self.entries.retain(|c| c.key.0 != zone);
        self.bytes = self.entries.iter().map(|c| c.data.len()).sum();
    }
}

/// ZEA instances of every sequential zone.
pub struct Pool {
    zeas: Vec<Option<Zea>>,
    first_seq: u32,
    sector: u64,
    zone_sectors: u64,
    /// Decoded metadata by (zone, data LBA); behind a mutex so reads can share the pool.
    metas: Mutex<HashMap<(u32, u64), Arc<ExtentMeta>>>,
    /// Recently read extent data.
    data: Mutex<ReadCache>,
}

impl Pool {
    /// Opens (recovers) the allocator of every sequential zone.
    pub fn open(dev: Arc<dyn ZonedDevice>, first_seq: u32, back_pointers: u16) -> Result<Pool> {
        let info = dev.info();
        let opts = Options {
            back_pointers,
            ..Options::default()
        };
        let mut zeas = Vec::with_capacity(info.zones as usize);
        for z in 0..info.zones {
            if z < first_seq {
                zeas.push(None);
            } else {
                zeas.push(Some(Zea::open(dev.clone(), z, opts.clone())?));
            }
        }
        Ok(Pool {
            zeas,
            first_seq,
            sector: info.sector_size as u64,
            zone_sectors: info.zone_sectors,
            metas: Mutex::new(HashMap::new()),
            data: Mutex::new(ReadCache::default()),
        })
    }

    /// Indexes of the sequential zones.
    pub fn seq_zones(&self) -> std::ops::Range<u32> {
        self.first_seq..self.zeas.len() as u32
    }

    /// Bytes per zone.
    pub fn zone_bytes(&self) -> u64 {
        self.zone_sectors * self.sector
    }

    /// Sector size.
    pub fn sector(&self) -> u64 {
        self.sector
    }

    /// The allocator of `zone`, if it is sequential.
    pub fn zea(&self, zone: u32) -> Option<&Zea> {
        self.zeas.get(zone as usize).and_then(|z| z.as_ref())
    }

    fn zea_mut(&mut self, zone: u32) -> Result<&mut Zea> {
        self.zeas
            .get_mut(zone as usize)
            .and_then(|z| z.as_mut())
            .ok_or_else(|| crate::error::FsError::Io(format!("zone {zone} is not sequential")))
    }

    /// Bytes written in `zone` (data, metadata and torn leftovers).
    pub fn used_bytes(&self, zone: u32) -> u64 {
        self.zea(zone)
            .map_or(0, |z| (z.write_pointer() - z.start_lba()) * self.sector)
    }

    /// Whether `zone` is empty.
    pub fn is_empty(&self, zone: u32) -> bool {
        self.zea(zone)
            .is_some_and(|z| z.write_pointer() == z.start_lba())
    }

    /// The largest extent that fits in `zone`.
    pub fn max_put(&self, zone: u32) -> u64 {
        self.zea(zone).map_or(0, |z| z.max_put())
    }

    /// Appends an extent to `zone`; durable on return.
    pub fn put(&mut self, zone: u32, zba: u64, tag: u64, data: &[u8]) -> Result<Placed> {
        Ok(self.zea_mut(zone)?.put_tagged(zba, tag, data)?)
    }

    fn zea_ref(&self, zone: u32) -> Result<&Zea> {
        self.zea(zone)
            .ok_or_else(|| crate::error::FsError::Io(format!("zone {zone} is not sequential")))
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<(u32, u64), Arc<ExtentMeta>>> {
        // A panic while holding the lock cannot leave the map inconsistent (inserts and
        // clears are single calls), so a poisoned lock is still usable.
        self.metas.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The metadata of the extent a piece lives in (cached).
    pub fn meta(&self, p: &Piece) -> Result<Arc<ExtentMeta>> {
        if let Some(m) = self.cache().get(&(p.zone, p.ext_lba)) {
            return Ok(m.clone());
        }
        let m = Arc::new(self.zea_ref(p.zone)?.read_meta(p.ext_lba, p.ext_len)?);
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
    /// forward on the disk and never reads a sector twice), and at least [`READ_AHEAD`] bytes
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
            let z = self.zea_ref(p.zone)?;
            let data = match z.read_range(&m, a, b - a) {
                Ok(d) => d,
                // A bad chunk beyond what was asked for fails only the read that asks for it.
                Err(_) if b > need => z.read_range(&m, a, need - a)?,
                Err(e) => return Err(e.into()),
            };
            out.extend_from_slice(&data[(pos - a) as usize..(end - a) as usize]);
            self.data_cache().insert(key, a, Arc::new(data));
        }
        Ok(out)
    }

    /// Resets `zone`; its extents are gone.
    pub fn reset(&mut self, zone: u32) -> Result<()> {
        self.zea_mut(zone)?.reset()?;
        self.cache().retain(|(z, _), _| *z != zone);
        self.data_cache().drop_zone(zone);
        Ok(())
    }
}
