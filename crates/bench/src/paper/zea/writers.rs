//! The two writers Figure 2 compares on the same drive model: raw writes at the write pointer
//! and ZEA puts, each moving to the next zone when one is full.

use crate::error::{Error, Result};
use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk, ZonedDevice};
use tegula_zea::{Options, Zea};

/// A fresh in-memory `hm-smr` drive of `capacity` bytes with one conventional zone.
pub(super) fn disk(capacity: u64, store_data: bool) -> Result<Arc<Disk>> {
    let mut cfg = profile("hm-smr").map_err(|e| Error::invalid(e.to_string()))?;
    cfg.capacity = capacity;
    cfg.store_data = store_data;
    cfg.zones.conventional_zones = Some(1);
    Ok(Arc::new(Disk::in_memory(cfg).map_err(|e| {
        Error::device("creating the hm-smr drive", e)
    })?))
}

/// Maps a ZEA error of `what`.
pub(super) fn zea_err(what: &'static str) -> impl Fn(tegula_zea::ZeaError) -> Error {
    move |e| Error::engine(format!("zea {what}"), e)
}

/// Raw sequential writer over the sequential zones of a disk (splits at zone ends).
pub(super) struct Raw {
    dev: Arc<dyn ZonedDevice>,
    zone: u32,
    wp: u64,
    end: u64,
}

impl Raw {
    /// A writer starting at the first sequential zone (zone 1).
    pub fn new(dev: Arc<dyn ZonedDevice>) -> Result<Raw> {
        let z = dev
            .zone(1)
            .map_err(|e| Error::device("reporting zone 1", e))?;
        Ok(Raw {
            dev,
            zone: 1,
            wp: z.start_lba,
            end: z.end_lba(),
        })
    }

    /// Writes `data` at the next LBAs; returns the LBA it started at.
    pub fn write(&mut self, data: &[u8]) -> Result<u64> {
        let ss = 4096usize;
        let mut at = 0usize;
        let first = self.wp;
        while at < data.len() {
            if self.wp == self.end {
                self.zone += 1;
                let z = self
                    .dev
                    .zone(self.zone)
                    .map_err(|e| Error::device(format!("reporting zone {}", self.zone), e))?;
                self.wp = z.start_lba;
                self.end = z.end_lba();
            }
            let n = (data.len() - at).min(((self.end - self.wp) as usize) * ss);
            self.dev
                .write(self.wp, &data[at..at + n])
                .map_err(|e| Error::device("raw write", e))?;
            self.wp += (n / ss) as u64;
            at += n;
        }
        Ok(first)
    }
}

/// ZEA writer that moves on to the next zone when one is full.
pub(super) struct ZeaSeq {
    dev: Arc<dyn ZonedDevice>,
    zea: Zea,
}

impl ZeaSeq {
    /// A writer starting at zone 1.
    pub fn new(dev: Arc<dyn ZonedDevice>) -> Result<ZeaSeq> {
        let zea = Zea::open(dev.clone(), 1, Options::default()).map_err(zea_err("open"))?;
        Ok(ZeaSeq { dev, zea })
    }

    /// Puts extent `zba`; returns (zone, LBA of the data).
    pub fn put(&mut self, zba: u64, data: &[u8]) -> Result<(u32, u64)> {
        if self.zea.max_put() < data.len() as u64 {
            let next = self.zea.zone() + 1;
            self.zea =
                Zea::open(self.dev.clone(), next, Options::default()).map_err(zea_err("open"))?;
        }
        let p = self.zea.put(zba, data).map_err(zea_err("put"))?;
        Ok((self.zea.zone(), p.lba))
    }
}
