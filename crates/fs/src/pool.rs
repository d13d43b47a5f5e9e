//! The sequential zones as a pool of ZEA allocators, with a cache of decoded extent metadata
//! so that a small read costs one device read.

use crate::error::Result;
use crate::state::Piece;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tegula_device::ZonedDevice;
use zea::{ExtentMeta, Options, Placed, Zea};

const META_CACHE_MAX: usize = 16 * 1024;

/// ZEA instances of every sequential zone.
pub struct Pool {
    zeas: Vec<Option<Zea>>,
    first_seq: u32,
    sector: u64,
    zone_sectors: u64,
    /// Decoded metadata by (zone, data LBA); behind a mutex so reads can share the pool.
    metas: Mutex<HashMap<(u32, u64), Arc<ExtentMeta>>>,
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

    /// Reads `n` bytes at `off` within a piece, checking the covering chunks' checksums.
    pub fn read(&self, p: &Piece, off: u64, n: u64) -> Result<Vec<u8>> {
        let m = self.meta(p)?;
        Ok(self.zea_ref(p.zone)?.read_range(&m, p.ext_off + off, n)?)
    }

    /// Resets `zone`; its extents are gone.
    pub fn reset(&mut self, zone: u32) -> Result<()> {
        self.zea_mut(zone)?.reset()?;
        self.cache().retain(|(z, _), _| *z != zone);
        Ok(())
    }
}
