//! The volatile write cache's destage: runs written to the media in elevator order when the
//! cache fills, in the background while the heads are free, and all of it on FLUSH.

use super::{IoDone, Media};
use crate::cache::WriteCache;
use crate::error::{DeviceError, Result};
use crate::units::Nanos;

/// Destage writes are cut into pieces of at most this size.
const DESTAGE_MAX_BYTES: u64 = 4 << 20;

impl Media {
    /// Whether the write cache is enabled.
    pub fn write_cache_enabled(&self) -> bool {
        self.cache.is_some()
    }

    /// Sectors in the write cache not yet on the media.
    pub fn dirty_sectors(&self) -> u64 {
        self.cache.as_ref().map_or(0, |(c, _)| c.dirty_sectors())
    }

    /// Destages dirty runs in elevator order while `more` says so; returns the end time.
    pub(super) fn destage(
        &mut self,
        mut t: Nanos,
        more: impl Fn(&WriteCache) -> bool,
    ) -> Result<Nanos> {
        let max = (DESTAGE_MAX_BYTES / self.sector).max(1);
        loop {
            let Some((cache, _)) = &mut self.cache else {
                return Ok(t);
            };
            if cache.is_empty() || !more(cache) {
                return Ok(t);
            }
            let Some(run) = cache.take_run(self.last_write_end, max) else {
                return Ok(t);
            };
            let mut data = run.data;
            match self.write_run(t, run.lba, run.sectors, &mut data) {
                Ok(end) => {
                    t = end;
                    self.recycle(data);
                }
                Err(e) => {
                    // The run was taken out of the cache; on power loss it was recorded as lost.
                    return Err(e);
                }
            }
        }
    }

    /// Writes a run taken from the cache to the media, its buffers to the store.
    fn write_run(
        &mut self,
        start: Nanos,
        lba: u64,
        sectors: u64,
        data: &mut Option<Vec<Vec<u8>>>,
    ) -> Result<Nanos> {
        match data {
            Some(pieces) => self.media_write_owned(start, lba, sectors, pieces),
            None => self.media_write::<&[u8]>(start, lba, sectors, None),
        }
    }

    /// Gives a destaged run's buffers back to the cache for new extents.
    fn recycle(&mut self, pieces: Option<Vec<Vec<u8>>>) {
        if let (Some(pieces), Some((cache, _))) = (pieces, &mut self.cache) {
            for v in pieces {
                cache.recycle(v);
            }
        }
    }

    /// Destages the whole write cache; the data is durable when this returns.
    pub fn flush(&mut self) -> Result<IoDone> {
        if !self.powered {
            return Err(DeviceError::PowerLoss);
        }
        let arrival = self.arrive()?;
        // Complete no earlier than every media write it covers, a background destage still
        // under way included (the cache may already be empty).
        let t = self
            .destage(arrival + self.mech.overhead(), |_| true)?
            .max(self.media_free);
        self.store
            .sync()
            .map_err(|e| DeviceError::io("syncing the backing store", e))?;
        self.stats.flushes += 1;
        Ok(self.complete(arrival, t))
    }

    /// Background destage up to `until`: runs that can start by then (heads free, dirty data
    /// waiting) are written, as a drive does between and during host commands.
    pub(super) fn run_background(&mut self, until: Nanos) {
        if !self.powered {
            return;
        }
        let max = (DESTAGE_MAX_BYTES / self.sector).max(1);
        loop {
            // A destage run starts once the heads are free and there is dirty data; runs that
            // start by `until` are under way when the command arriving at `until` is served.
            let start = self.media_free.max(self.dirty_since);
            if start > until {
                return;
            }
            let Some((cache, _)) = &mut self.cache else {
                return;
            };
            let Some(run) = cache.take_run(self.last_write_end, max) else {
                return;
            };
            let mut data = run.data;
            match self.write_run(start, run.lba, run.sectors, &mut data) {
                Ok(end) => {
                    self.account_busy(start, end);
                    self.recycle(data);
                }
                // The cut was recorded (the run's data as lost); the next command fails.
                Err(_) => return,
            }
        }
    }
}
