//! The I/O paths: command checks, reads and writes through the volatile write cache to the
//! media, data-less transfers for metadata-only drives, discards and overhead-only commands.

use super::{IoDone, Media};
use crate::error::{DeviceError, MediaErrorCause, Result};
use crate::store::Store;
use crate::units::Nanos;

/// Owned writes at least this long are kept by the write cache as they are; shorter ones are
/// copied (and merged into a contiguous predecessor), so small writes do not each hold a
/// buffer of their own.
const OWNED_MIN_BYTES: usize = 64 << 10;

/// A write's data: borrowed from the caller, or a buffer the write cache may keep.
pub(super) enum Payload<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl Payload<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Payload::Borrowed(b) => b,
            Payload::Owned(v) => v,
        }
    }

    fn into_owned(self) -> Option<Vec<u8>> {
        match self {
            Payload::Borrowed(_) => None,
            Payload::Owned(v) => Some(v),
        }
    }
}

impl Media {
    /// Validates a host transfer of `len` bytes at `lba`; returns its length in sectors.
    pub(super) fn check(&self, lba: u64, len: usize) -> Result<u64> {
        if !self.powered {
            return Err(DeviceError::PowerLoss);
        }
        if len == 0 || !(len as u64).is_multiple_of(self.sector) {
            return Err(DeviceError::BadLength {
                len,
                sector_size: self.sector as u32,
            });
        }
        let n = len as u64 / self.sector;
        if lba.checked_add(n).is_none_or(|e| e > self.capacity) {
            return Err(DeviceError::OutOfRange {
                lba,
                sectors: n,
                capacity: self.capacity,
            });
        }
        Ok(n)
    }

    /// Validates a range given in sectors.
    pub fn check_range(&self, lba: u64, sectors: u64) -> Result<()> {
        if !self.powered {
            return Err(DeviceError::PowerLoss);
        }
        if lba.checked_add(sectors).is_none_or(|e| e > self.capacity) {
            return Err(DeviceError::OutOfRange {
                lba,
                sectors,
                capacity: self.capacity,
            });
        }
        Ok(())
    }

    /// The first sector of `ranges` that reads back as a media error, and why.
    fn media_error_in(&self, ranges: &[(u64, u64)]) -> Option<(u64, MediaErrorCause)> {
        let mut first: Option<(u64, MediaErrorCause)> = None;
        for &(a, b) in ranges {
            let cands = [
                (
                    self.shingle.first_destroyed(a, b - a),
                    if self.interlace.is_some() {
                        MediaErrorCause::InterlaceDamage
                    } else {
                        MediaErrorCause::ShingleDamage
                    },
                ),
                (
                    self.faults.injected.first_in(a, b),
                    MediaErrorCause::Injected,
                ),
            ];
            for (l, cause) in cands {
                if let Some(l) = l {
                    if first.is_none_or(|(f, _)| l < f) {
                        first = Some((l, cause));
                    }
                }
            }
            if first.is_some() {
                break;
            }
        }
        first
    }

    /// Reads `buf.len()` bytes at `lba`.
    pub fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let n = self.check(lba, buf.len())?;
        let arrival = self.arrive()?;
        let end = self.read_inner(arrival, lba, n, buf, false)?;
        self.stats.reads += 1;
        self.stats.bytes_read += buf.len() as u64;
        Ok(self.complete(arrival, end))
    }

    /// Serves a read that arrived at `arrival` from the cache and the media; returns its end.
    /// A `queued` command's overhead was paid by its batch.
    pub(super) fn read_inner(
        &mut self,
        arrival: Nanos,
        lba: u64,
        n: u64,
        buf: &mut [u8],
        queued: bool,
    ) -> Result<Nanos> {
        // Most reads touch no cached sector: then the whole range comes from the media and no
        // list of uncovered pieces needs to be built.
        let whole = [(lba, lba + n)];
        let cached = self
            .cache
            .as_ref()
            .map_or(0, |(c, _)| c.overlay(lba, None, n));
        let pieces;
        let uncovered: &[(u64, u64)] = match &self.cache {
            Some((c, _)) if cached > 0 => {
                pieces = c.uncovered(lba, lba + n);
                &pieces
            }
            _ => &whole,
        };
        if uncovered.is_empty() {
            if let Some((c, _)) = &self.cache {
                c.overlay(lba, Some(buf), n);
            }
            self.stats.cache_read_hits += 1;
            let start = if queued {
                arrival
            } else {
                arrival + self.mech.overhead()
            };
            return Ok(start + self.mech.bus_time(n));
        }
        // The heads may still be busy destaging the write cache in the background.
        let arrival = arrival.max(self.media_free);
        if let Some((at, cause)) = self.media_error_in(uncovered) {
            // The drive still spent the time trying.
            let end = if queued {
                self.mech.read_at(arrival, lba, n)
            } else {
                self.mech.read(arrival, lba, n)
            };
            self.media_free = end;
            self.complete(arrival, end);
            return Err(DeviceError::MediaError { lba: at, cause });
        }
        let end = if queued {
            self.mech.read_at(arrival, lba, n)
        } else {
            self.mech.read(arrival, lba, n)
        };
        self.media_free = end;
        self.stats.media_reads += 1;
        self.stats.media_bytes_read += n * self.sector;
        self.store
            .read(lba * self.sector, buf)
            .map_err(|e| DeviceError::io(format!("reading LBA {lba} from the backing store"), e))?;
        if let Some((c, _)) = &self.cache {
            if cached > 0 {
                c.overlay(lba, Some(buf), n);
            }
        }
        Ok(end)
    }

    /// Reads `sectors` at `lba` for their timing, statistics and media errors only, moving no
    /// data: for metadata-only drives, whose store would only return zeros, so that layers
    /// above (translation layers cleaning whole bands) need not allocate and fill buffers.
    pub fn read_no_data(&mut self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.check_range(lba, sectors)?;
        if sectors == 0 {
            return Err(DeviceError::BadLength {
                len: 0,
                sector_size: self.sector as u32,
            });
        }
        let arrival = self.arrive()?;
        let whole = [(lba, lba + sectors)];
        if let Some((at, cause)) = self.media_error_in(&whole) {
            let end = self.mech.read(arrival, lba, sectors);
            self.complete(arrival, end);
            return Err(DeviceError::MediaError { lba: at, cause });
        }
        let end = self.mech.read(arrival, lba, sectors);
        self.stats.media_reads += 1;
        self.stats.media_bytes_read += sectors * self.sector;
        self.stats.reads += 1;
        self.stats.bytes_read += sectors * self.sector;
        Ok(self.complete(arrival, end))
    }

    /// Writes `sectors` at `lba` for their timing, shingled damage, statistics and power-cut
    /// faults only, moving no data. Only for drives that keep no data (it fails otherwise, as
    /// the store would be left stale); a volatile write cache is bypassed (the write is
    /// durable on completion).
    pub fn write_no_data(&mut self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.check_range(lba, sectors)?;
        if sectors == 0 || self.store.keeps_data() {
            return Err(DeviceError::Config(
                "write_no_data needs a drive that keeps no data and a positive length".into(),
            ));
        }
        let arrival = self.arrive()?;
        if let Some((cache, _)) = &mut self.cache {
            cache.remove(lba, lba + sectors);
        }
        let start = arrival + self.mech.overhead();
        let end = self.media_write::<&[u8]>(start, lba, sectors, None)?;
        self.stats.writes += 1;
        self.stats.bytes_written += sectors * self.sector;
        Ok(self.complete(arrival, end))
    }

    /// Writes `sectors` at `lba`, durable on completion, of which only the first `data.len()`
    /// bytes (whole sectors) carry data: the rest is padding whose contents do not matter (a
    /// translation layer's entry padding and out-of-band area). Timing, shingled damage and
    /// faults cover all `sectors`; the store receives only `data`, so padding costs no host
    /// memory or disk space.
    pub fn write_padded(&mut self, lba: u64, sectors: u64, data: &[u8]) -> Result<IoDone> {
        self.check_range(lba, sectors)?;
        let ss = self.sector as usize;
        if sectors == 0
            || !data.len().is_multiple_of(ss)
            || data.len() as u64 > sectors * self.sector
        {
            return Err(DeviceError::BadLength {
                len: data.len(),
                sector_size: self.sector as u32,
            });
        }
        let arrival = self.arrive()?;
        if let Some((cache, _)) = &mut self.cache {
            cache.remove(lba, lba + sectors);
        }
        let start = arrival + self.mech.overhead();
        let end = self.media_write(start, lba, sectors, Some(&[data]))?;
        self.stats.writes += 1;
        self.stats.bytes_written += sectors * self.sector;
        Ok(self.complete(arrival, end))
    }

    /// Writes `data` at `lba`; with `fua` the data is on the media when this returns.
    pub fn write(&mut self, lba: u64, data: &[u8], fua: bool) -> Result<IoDone> {
        self.write_payload(lba, Payload::Borrowed(data), fua)
            .map(|(done, _)| done)
    }

    /// [`Media::write`] from a buffer the write cache may keep as its extent instead of
    /// copying it; returns a buffer for the caller's next write (the same one when it was not
    /// kept, else a spare of the cache's or an empty one).
    pub fn write_owned(&mut self, lba: u64, data: Vec<u8>, fua: bool) -> Result<(IoDone, Vec<u8>)> {
        self.write_payload(lba, Payload::Owned(data), fua)
            .map(|(done, back)| (done, back.unwrap_or_default()))
    }

    fn write_payload(
        &mut self,
        lba: u64,
        data: Payload<'_>,
        fua: bool,
    ) -> Result<(IoDone, Option<Vec<u8>>)> {
        let len = data.bytes().len();
        let n = self.check(lba, len)?;
        let arrival = self.arrive()?;
        let (end, back) = self.write_inner(arrival, lba, n, data, fua, false)?;
        self.stats.writes += 1;
        self.stats.bytes_written += len as u64;
        Ok((self.complete(arrival, end), back))
    }

    /// Serves a write that arrived at `arrival`: into the write cache (destaging first when it
    /// is full) or, with `fua` or no cache, through to the media; returns its end, and an
    /// owned payload's buffer for reuse (the cache's spare when it kept the payload).
    pub(super) fn write_inner(
        &mut self,
        arrival: Nanos,
        lba: u64,
        n: u64,
        data: Payload<'_>,
        fua: bool,
        queued: bool,
    ) -> Result<(Nanos, Option<Vec<u8>>)> {
        let start = if queued {
            arrival
        } else {
            arrival + self.mech.overhead()
        };
        let keep = self.store.keeps_data();
        match self
            .cache
            .as_ref()
            .map(|(c, cap)| (c.dirty_sectors(), *cap))
        {
            Some((dirty, cap)) if !fua => {
                let mut t = start;
                if dirty + n > cap {
                    t = self.destage(t, move |c| c.dirty_sectors() > cap / 2)?;
                }
                let end = t + self.mech.bus_time(n);
                let mut back = None;
                if let Some((cache, _)) = &mut self.cache {
                    if cache.is_empty() {
                        self.dirty_since = end;
                    }
                    match data {
                        Payload::Owned(v) if keep && v.len() >= OWNED_MIN_BYTES => {
                            back = Some(cache.insert_owned(lba, v));
                        }
                        data => {
                            cache.insert(lba, n, keep.then_some(data.bytes()));
                            back = data.into_owned();
                        }
                    }
                }
                Ok((end, back))
            }
            _ => {
                // Write-through: this data supersedes anything older still in the cache.
                if let Some((cache, _)) = &mut self.cache {
                    cache.remove(lba, lba + n);
                }
                match data {
                    Payload::Owned(v) => {
                        // The store may keep the buffer (see `media_write_owned`).
                        let mut pieces = vec![v];
                        let end = self.media_write_owned(start, lba, n, &mut pieces)?;
                        Ok((end, pieces.pop()))
                    }
                    Payload::Borrowed(b) => {
                        Ok((self.media_write(start, lba, n, Some(&[b]))?, None))
                    }
                }
            }
        }
    }

    /// Writes to the media now, subject to an armed power cut. `data` holds the write's bytes
    /// in pieces, in LBA order (together at most `n` sectors: see `write_padded`); `None`
    /// writes zeros (used only on drives that keep no data).
    pub(super) fn media_write<D: AsRef<[u8]>>(
        &mut self,
        start: Nanos,
        lba: u64,
        n: u64,
        data: Option<&[D]>,
    ) -> Result<Nanos> {
        let offset = lba * self.sector;
        self.media_write_with(start, lba, n, |store, mut left| {
            let mut at = offset;
            for d in data.into_iter().flatten() {
                let d = d.as_ref();
                let bytes = left.min(d.len());
                if bytes == 0 {
                    break;
                }
                store.write(at, &d[..bytes])?;
                left -= bytes;
                at += bytes as u64;
            }
            Ok(())
        })
    }

    /// [`Media::media_write`] of a destaged run's own buffers, which the store may keep
    /// instead of copying; `pieces` holds the buffers left for reuse afterwards.
    pub(super) fn media_write_owned(
        &mut self,
        start: Nanos,
        lba: u64,
        n: u64,
        pieces: &mut Vec<Vec<u8>>,
    ) -> Result<Nanos> {
        let offset = lba * self.sector;
        self.media_write_with(start, lba, n, |store, mut left| {
            let mut at = offset;
            for d in std::mem::take(pieces) {
                let bytes = left.min(d.len());
                if bytes == 0 {
                    pieces.push(d);
                } else if bytes == d.len() {
                    pieces.extend(store.write_owned(at, d)?);
                } else {
                    // Torn (or padded) here: only what was persisted is stored.
                    store.write(at, &d[..bytes])?;
                    pieces.push(d);
                }
                left -= bytes;
                at += bytes as u64;
            }
            Ok(())
        })
    }

    /// A media write whose persisted bytes (`persisted sectors × sector size`) `store` puts in
    /// the backing store (only on drives that keep data).
    fn media_write_with(
        &mut self,
        start: Nanos,
        lba: u64,
        n: u64,
        store: impl FnOnce(&mut dyn Store, usize) -> std::io::Result<()>,
    ) -> Result<Nanos> {
        let torn = self.faults.on_media_write(n);
        let persisted = torn.unwrap_or(n);
        let start = start.max(self.media_free);
        let mut end = start;
        if persisted > 0 {
            end = self.mech.write_at(start, lba, persisted);
            self.media_free = end;
            if self.store.keeps_data() {
                // The data may be shorter than the write (see `write_padded`); a torn write
                // stores only what was persisted.
                store(self.store.as_mut(), (persisted * self.sector) as usize).map_err(|e| {
                    DeviceError::io(format!("writing LBA {lba} to the backing store"), e)
                })?;
            }
            match &self.interlace {
                Some(il) => {
                    let t = il.on_write(
                        self.mech.geometry(),
                        self.capacity,
                        lba,
                        persisted,
                        self.shingle.destroyed_mut(),
                    );
                    self.stats.top_bytes_written += t.top * self.sector;
                    self.stats.bottom_bytes_written += t.bottom * self.sector;
                    self.stats.interlace_destroyed_sectors += t.destroyed;
                }
                None => self.shingle.on_write(self.mech.geometry(), lba, persisted),
            }
            self.faults.injected.remove(lba, lba + persisted);
            self.push_event(super::MediaEvent::Write {
                lba,
                sectors: persisted,
            });
            self.stats.media_writes += 1;
            self.stats.media_bytes_written += persisted * self.sector;
            self.last_write_end = lba + persisted;
        }
        if torn.is_some() {
            if persisted < n {
                self.faults.lost.insert(lba + persisted, lba + n);
            }
            self.cut_power(end);
            return Err(DeviceError::PowerLoss);
        }
        Ok(end)
    }

    /// Forgets `sectors` at `lba` (TRIM / zone reset): they read as zeros afterwards.
    pub fn discard(&mut self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.check_range(lba, sectors)?;
        let arrival = self.arrive()?;
        if let Some((c, _)) = &mut self.cache {
            c.remove(lba, lba + sectors);
        }
        self.store
            .discard(lba * self.sector, sectors * self.sector)
            .map_err(|e| DeviceError::io(format!("discarding LBA {lba}"), e))?;
        self.shingle.clear(lba, sectors);
        self.push_event(super::MediaEvent::Discard { lba, sectors });
        self.stats.discards += 1;
        let end = arrival + self.mech.overhead();
        Ok(self.complete(arrival, end))
    }

    /// A command that costs only its overhead (zone management, reads of unwritten sectors).
    pub fn command(&mut self) -> Result<IoDone> {
        if !self.powered {
            return Err(DeviceError::PowerLoss);
        }
        let arrival = self.arrive()?;
        let end = arrival + self.mech.overhead();
        Ok(self.complete(arrival, end))
    }
}
