//! The drive's I/O paths: command checks, reads and writes through the volatile cache and
//! the translation layer, FLUSH, and discard.

use super::{DevResult, Inner};
use crate::layer::WriteReq;
use tegula_device::media::IoDone;
use tegula_device::DeviceError;

impl Inner {
    /// Validates a host transfer of `len` bytes at `lba` on a drive of `cap` sectors; returns
    /// its length in sectors.
    pub(super) fn check(&self, cap: u64, lba: u64, len: usize) -> DevResult<u64> {
        if !self.media.is_powered() {
            return Err(DeviceError::PowerLoss);
        }
        tegula_device::api::transfer_sectors(lba, len, self.ss(), cap)
    }

    /// Reads through the layer (or, when the volatile cache holds every sector, costs one
    /// command), with the cache's newer sectors laid over the result.
    pub(super) fn read(&mut self, cap: u64, lba: u64, buf: &mut [u8]) -> DevResult<IoDone> {
        let n = self.check(cap, lba, buf.len())?;
        let start = self.arrive();
        let covered = self
            .vcache
            .as_ref()
            .is_some_and(|c| c.overlay(lba, None, n) == n);
        if covered {
            self.media.command()?;
        } else {
            self.layer.read(&mut self.media, lba, buf)?;
        }
        if let Some(c) = &self.vcache {
            c.overlay(lba, Some(buf), n);
        }
        Ok(self.finish(start))
    }

    /// Writes into the volatile cache (destaging half of it when full) or, with `fua` or no
    /// cache, through the layer, superseding older cached sectors.
    pub(super) fn write(
        &mut self,
        cap: u64,
        lba: u64,
        data: &[u8],
        fua: bool,
    ) -> DevResult<IoDone> {
        self.writable()?;
        let n = self.check(cap, lba, data.len())?;
        let start = self.arrive();
        match &mut self.vcache {
            Some(c) if !fua => {
                c.insert(lba, n, self.store_data.then_some(data));
                let dirty = c.dirty_sectors();
                self.media.command()?;
                if dirty > self.vcache_max {
                    let keep = self.vcache_max / 2;
                    self.destage(keep)?;
                }
            }
            _ => {
                if let Some(c) = &mut self.vcache {
                    c.remove(lba, lba + n);
                }
                self.layer
                    .write(&mut self.media, &[WriteReq { lba, data }])?;
                if fua {
                    self.sync_fua()?;
                }
            }
        }
        Ok(self.finish(start))
    }

    /// FLUSH: destage the volatile cache; for an image, sync the data and the metadata log to
    /// the host and persist the drive state.
    pub(super) fn flush(&mut self) -> DevResult<IoDone> {
        if !self.media.is_powered() {
            return Err(DeviceError::PowerLoss);
        }
        let start = self.arrive();
        if self.read_only {
            self.media.command()?;
            return Ok(self.finish(start));
        }
        self.writable()?;
        self.destage(0)?;
        self.media.flush()?;
        self.layer.log().log_media(&mut self.media)?;
        if self.image.is_some() {
            self.layer.log().sync()?;
            self.save_state()?;
        }
        Ok(self.finish(start))
    }

    /// A FUA write of an image reached the metadata log (and the data region) with `pwrite`;
    /// `fdatasync` makes it survive a crash of the host too, as FUA promises.
    pub(super) fn sync_fua(&mut self) -> DevResult<()> {
        if self.image.is_some() {
            self.layer.log().sync()?;
        }
        Ok(())
    }

    /// Discards `sectors` at `lba`: drops them from the volatile cache and lets the layer
    /// forget cached copies. Only a failure of the layer counts against the drive.
    pub(super) fn discard(&mut self, cap: u64, lba: u64, sectors: u64) -> DevResult<IoDone> {
        self.writable()?;
        let ss = self.ss() as usize;
        self.check(cap, lba, (sectors as usize).max(1) * ss)?;
        let start = self.arrive();
        if let Some(c) = &mut self.vcache {
            c.remove(lba, lba + sectors);
        }
        if let Err(e) = self.layer.discard(&mut self.media, lba, sectors) {
            let e: DeviceError = e.into();
            self.after_error(&e);
            return Err(e);
        }
        self.media.command()?;
        Ok(self.finish(start))
    }
}
