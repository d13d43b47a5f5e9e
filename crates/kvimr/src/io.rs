//! Device I/O of the store: writes and reads of track extents and of the safe space, flushes
//! (counted as syncs), map copies, and reads of a file's bytes from its tracks.

use crate::error::{Error, Result};
use crate::map::{FileEntry, Map, Place};
use crate::stats::Stats;
use crate::store::Inner;

impl Inner {
    /// Writes `data` (whole sectors) at `lba`.
    pub fn dev_write(&mut self, lba: u64, data: &[u8]) -> Result<()> {
        self.dev.write(lba, data)?;
        self.media_dirty = true;
        Ok(())
    }

    /// Flushes the device's write cache (one sync).
    pub fn flush(&mut self) -> Result<()> {
        self.flush_uncounted()?;
        self.stats.syncs += 1;
        Ok(())
    }

    /// Flushes the device's write cache; the caller has counted the sync.
    fn flush_uncounted(&mut self) -> Result<()> {
        self.dev.flush()?;
        self.media_dirty = false;
        self.dirty_bottoms.clear();
        Ok(())
    }

    /// The store's counters over its life: those the map it opened recorded, plus this
    /// open's.
    pub fn lifetime(&self) -> Stats {
        let mut t = self.base.clone();
        t.add(&self.stats);
        t
    }

    /// Writes whole sectors at sector `off` of the safe space.
    pub fn safe_write(&mut self, off: u64, data: &[u8]) -> Result<()> {
        let ss = self.layout.ss;
        let mut at = 0usize;
        for (lba, n) in self.layout.safe_extents(off, data.len() as u64 / ss) {
            let len = (n * ss) as usize;
            self.dev_write(lba, &data[at..at + len])?;
            at += len;
        }
        Ok(())
    }

    /// Reads whole sectors at sector `off` of the safe space.
    pub fn safe_read(&mut self, off: u64, buf: &mut [u8]) -> Result<()> {
        let ss = self.layout.ss;
        let mut at = 0usize;
        for (lba, n) in self.layout.safe_extents(off, buf.len() as u64 / ss) {
            let len = (n * ss) as usize;
            self.dev.read(lba, &mut buf[at..at + len])?;
            at += len;
        }
        Ok(())
    }

    /// Reads bytes at byte offset `off` of the safe space (any alignment).
    pub fn safe_read_bytes(&mut self, off: u64, buf: &mut [u8]) -> Result<()> {
        let ss = self.layout.ss;
        if buf.is_empty() {
            return Ok(());
        }
        let first = off / ss;
        let end = (off + buf.len() as u64).div_ceil(ss);
        if first * ss == off && end * ss == off + buf.len() as u64 {
            return self.safe_read(first, buf);
        }
        let mut tmp = vec![0u8; ((end - first) * ss) as usize];
        self.safe_read(first, &mut tmp)?;
        let skip = (off - first * ss) as usize;
        buf.copy_from_slice(&tmp[skip..skip + buf.len()]);
        Ok(())
    }

    /// Discards `n` sectors at `off` of the safe space (they read as zeros).
    pub fn safe_discard(&mut self, off: u64, n: u64) -> Result<()> {
        for (lba, k) in self.layout.safe_extents(off, n) {
            self.dev.discard(lba, k)?;
        }
        Ok(())
    }

    /// Reads bytes `[off, off + buf.len())` of a file stored on `tracks`.
    pub fn read_tracks(&mut self, tracks: &[u32], off: u64, buf: &mut [u8]) -> Result<()> {
        let ss = self.layout.ss;
        let end = off + buf.len() as u64;
        let first = off / ss;
        let last = end.div_ceil(ss);
        if first * ss == off && last * ss == end {
            return self.read_sectors(tracks, first, last, buf);
        }
        let mut tmp = vec![0u8; ((last - first) * ss) as usize];
        self.read_sectors(tracks, first, last, &mut tmp)?;
        let skip = (off - first * ss) as usize;
        let n = buf.len();
        buf.copy_from_slice(&tmp[skip..skip + n]);
        Ok(())
    }

    /// Reads file sectors `[first, last)` of a file stored on `tracks` into `out`.
    fn read_sectors(
        &mut self,
        tracks: &[u32],
        first: u64,
        last: u64,
        out: &mut [u8],
    ) -> Result<()> {
        let ss = self.layout.ss;
        let mut cum = 0u64;
        for &t in tracks {
            let tr = *self.layout.track(t);
            let (a, b) = (cum, cum + tr.sectors as u64);
            cum = b;
            let (s, e) = (a.max(first), b.min(last));
            if s >= e {
                continue;
            }
            let at = ((s - first) * ss) as usize;
            let len = ((e - s) * ss) as usize;
            self.dev.read(tr.lba + (s - a), &mut out[at..at + len])?;
        }
        if cum < last {
            return Err(Error::corrupt(
                "map",
                format!("file tracks hold {cum} sectors, a read needs {last}"),
            ));
        }
        Ok(())
    }

    /// The map as the durable state should record it.
    fn map_copy(&self, seq: u64) -> Map {
        let ss = self.layout.ss;
        let files = self
            .files
            .values()
            .map(|f| {
                let mut tracks = Vec::new();
                if matches!(f.place, Place::Data { .. }) {
                    let need = f.durable.div_ceil(ss);
                    let mut cap = 0u64;
                    for &t in &f.tracks {
                        if cap >= need {
                            break;
                        }
                        tracks.push(t);
                        cap += self.layout.track(t).sectors as u64;
                    }
                }
                FileEntry {
                    id: f.id,
                    name: f.name,
                    place: f.place,
                    len: f.durable,
                    sealed: f.sealed && f.durable == f.len,
                    tracks,
                }
            })
            .collect();
        Map {
            seq,
            epoch: self.epoch,
            applied_rmw: self.applied_rmw,
            next_file: self.next_file,
            files,
            totals: Some(self.lifetime()),
        }
    }

    /// Writes the next map copy to the older slot and flushes; then the tracks and slots of
    /// files deleted before it are free.
    pub fn write_map(&mut self) -> Result<()> {
        if self.media_dirty {
            // Everything the map refers to must be on the media before the map is.
            self.flush()?;
        }
        let seq = self.map_seq + 1;
        let ss = self.layout.ss;
        let r = self.layout.regions;
        // The counters the copy records include the copy itself and the flush after it (its
        // length does not depend on the counters' values).
        let padded = (self.map_copy(seq).encode().len() as u64).div_ceil(ss) * ss;
        if padded / ss > r.map_sectors {
            return Err(Error::NoSpace(format!(
                "map of {padded} bytes exceeds its slot of {} sectors",
                r.map_sectors
            )));
        }
        self.stats.map_writes += 1;
        self.stats.map_bytes += padded;
        self.stats.syncs += 1;
        let mut b = self.map_copy(seq).encode();
        b.resize(padded as usize, 0);
        self.safe_write(r.map[(seq % 2) as usize], &b)?;
        self.flush_uncounted()?;
        self.map_seq = seq;
        self.map_dirty = false;
        self.saved = self.stats.clone();
        self.free_pending();
        Ok(())
    }
}
