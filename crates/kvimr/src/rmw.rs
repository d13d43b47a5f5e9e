//! Persisting a file's buffered data: track allocation, then the writes, protected by
//! read-modify-write where a bottom-track write would destroy valid top-track data.
//!
//! * **Naive** (track by track, in the file's order): before each bottom track with valid
//!   neighbouring tops, back the tops up to the staging area, sync, write the bottom, sync,
//!   restore the tops, sync. A file on alternating tracks thus rewrites its own top tracks.
//! * **Merged** (KVIMR): one backup of every valid top next to any of the file's bottom
//!   tracks, sync, every bottom, sync, then the restores and the file's own top tracks in one
//!   pass, sync. A backup larger than the staging area is split into several merged RMWs.
//!
//! Without a backup, bottoms are still written before the file's own tops, with a sync
//! between when a top neighbours one of them, so that the write cache cannot reorder them.
//! On the CMR twin nothing is damaged and the data is written in file order.
//!
//! Crash safety: a backup is durable (synced) before any bottom is written, and its record's
//! sequence number is above the map's `applied_rmw` until a later map write; recovery restores
//! every such record. The tops backed up are those valid in the durable map or written after
//! it; nothing else writes them until the next map write, so restoring them again is always
//! right.

use crate::error::{Error, Result};
use crate::staging::{Backup, StagingRecord};
use crate::store::Inner;

/// One contiguous write of a file's data to one track.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece {
    /// The track.
    pub track: u32,
    /// First LBA written.
    pub lba: u64,
    /// Sectors.
    pub sectors: u64,
    /// Sector offset of the piece in the track (its valid prefix afterwards ends at
    /// `first + sectors`).
    pub first: u64,
    /// Byte offset of its data in the write buffer.
    pub at: usize,
}

impl Inner {
    /// Writes file `id`'s buffered data to its tracks (allocating more as needed).
    pub fn persist(&mut self, id: u64) -> Result<()> {
        let ss = self.layout.ss;
        let f = self.file(id)?;
        if f.len <= f.buf_start || !matches!(f.place, crate::map::Place::Data { .. }) {
            return Ok(());
        }
        let first_sector = f.buf_start / ss;
        let end_sector = f.len.div_ceil(ss);
        self.ensure_tracks(id, end_sector)?;
        let t0 = self.dev.now();
        let f = self.file(id)?;
        let level = f.level();
        let mut pieces = Vec::new();
        let mut cum = 0u64;
        for &t in &f.tracks {
            let tr = self.layout.track(t);
            let (a, b) = (cum, cum + tr.sectors as u64);
            cum = b;
            let (s, e) = (a.max(first_sector), b.min(end_sector));
            if s < e {
                pieces.push(Piece {
                    track: t,
                    lba: tr.lba + (s - a),
                    sectors: e - s,
                    first: s - a,
                    at: ((s - first_sector) * ss) as usize,
                });
            }
        }
        // The buffer itself is written (padded to whole sectors), not a copy of it; on
        // failure it is put back as it was.
        let f = self.file_mut(id)?;
        let kept = f.buf.len();
        let mut data = std::mem::take(&mut f.buf);
        data.resize(((end_sector - first_sector) * ss) as usize, 0);
        let r = self.execute(&pieces, &data, level);
        data.truncate(kept);
        let f = self.file_mut(id)?;
        if let Err(e) = r {
            f.buf = data;
            return Err(e);
        }
        // Keep only the partial last sector (rewritten whole by the next persist), in a
        // buffer of its own size: a persisted file holds no zone-sized allocation.
        let new_start = f.len / ss * ss;
        let drop = (new_start - f.buf_start) as usize;
        f.buf = data[drop..].to_vec();
        f.buf_start = new_start;
        self.stats.persist_ns += self.dev.now() - t0;
        Ok(())
    }

    /// Gives file `id` tracks for at least `sectors` sectors.
    fn ensure_tracks(&mut self, id: u64, sectors: u64) -> Result<()> {
        loop {
            let f = self.file(id)?;
            let have: u64 = f
                .tracks
                .iter()
                .map(|&t| self.layout.track(t).sectors as u64)
                .sum();
            if have >= sectors {
                return Ok(());
            }
            let req = crate::alloc::Request {
                level: f.level(),
                prev: f.tracks.last().copied(),
                sectors: sectors - have,
            };
            let view = crate::alloc::View {
                layout: &self.layout,
                state: &self.state,
            };
            let got = self.alloc.pick(&view, &req);
            let cap: u64 = got
                .iter()
                .map(|&t| self.layout.track(t).sectors as u64)
                .sum();
            if cap < req.sectors && self.state.any_pending() {
                // Tracks of deleted files become free once a map records the deletion.
                self.write_map()?;
                continue;
            }
            if got.is_empty() {
                return Err(Error::NoSpace(format!(
                    "no free data track for file {id} ({} sectors short)",
                    req.sectors
                )));
            }
            for &t in &got {
                self.state.take(&self.layout, t, id);
            }
            self.file_mut(id)?.tracks.extend(got);
        }
    }

    /// Writes to top track `t` must not overtake a write to a neighbouring bottom still in
    /// the write cache: flush first if there is one (an ordering sync).
    fn order_before_top(&mut self, t: u32) -> Result<()> {
        if !self.layout.damages || self.opts.unsafe_skip_bottom_sync {
            return Ok(());
        }
        if self
            .layout
            .track(t)
            .neighbours()
            .any(|n| self.dirty_bottoms.contains(&n))
        {
            self.flush()?;
            self.stats.rmw_syncs += 1;
        }
        Ok(())
    }

    fn write_piece(&mut self, p: &Piece, data: &[u8], level: Option<u8>) -> Result<()> {
        let ss = self.layout.ss;
        let bytes = &data[p.at..p.at + (p.sectors * ss) as usize];
        let bottom = self.layout.track(p.track).bottom;
        if bottom {
            if self.layout.damages && !self.dirty_bottoms.contains(&p.track) {
                self.dirty_bottoms.push(p.track);
            }
        } else {
            self.order_before_top(p.track)?;
        }
        self.dev_write(p.lba, bytes)?;
        let w = &mut self.state.written[p.track as usize];
        *w = (*w).max((p.first + p.sectors) as u32);
        let n = p.sectors * ss;
        let lv = self.stats.level_mut(level);
        if bottom {
            lv.bottom_bytes += n;
            self.stats.data_bytes_bottom += n;
        } else {
            lv.top_bytes += n;
            self.stats.data_bytes_top += n;
        }
        Ok(())
    }

    /// Valid top tracks next to the bottom tracks of `pieces`, in track order.
    fn victims(&self, pieces: &[Piece]) -> Vec<u32> {
        let mut v: Vec<u32> = pieces
            .iter()
            .filter(|p| self.layout.track(p.track).bottom)
            .flat_map(|p| self.layout.track(p.track).neighbours())
            .filter(|&n| self.state.is_valid(n))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    fn execute(&mut self, pieces: &[Piece], data: &[u8], level: Option<u8>) -> Result<()> {
        if !self.layout.damages {
            for p in pieces {
                self.write_piece(p, data, level)?;
            }
            return Ok(());
        }
        match self.opts.rmw {
            crate::options::RmwMode::Naive => {
                for p in pieces {
                    if self.layout.track(p.track).bottom && !self.victims(&[*p]).is_empty() {
                        self.rmw(&[*p], &[], data, level)?;
                    } else {
                        self.write_piece(p, data, level)?;
                    }
                }
                Ok(())
            }
            crate::options::RmwMode::Merged => self.merged(pieces, data, level),
        }
    }

    fn merged(&mut self, pieces: &[Piece], data: &[u8], level: Option<u8>) -> Result<()> {
        let (bottoms, tops): (Vec<Piece>, Vec<Piece>) = pieces
            .iter()
            .partition(|p| self.layout.track(p.track).bottom);
        if self.victims(&bottoms).is_empty() {
            // Bottoms first; a top next to one of them waits for a flush (write_piece).
            for p in &bottoms {
                self.write_piece(p, data, level)?;
            }
            for p in &tops {
                self.write_piece(p, data, level)?;
            }
            return Ok(());
        }
        // Groups of bottoms whose backup fits the staging area.
        let ss = self.layout.ss;
        let room = (self.layout.regions.staging_sectors * ss).saturating_sub(ss + 4096);
        let mut groups: Vec<Vec<Piece>> = Vec::new();
        let mut cur: Vec<Piece> = Vec::new();
        for b in bottoms {
            cur.push(b);
            if cur.len() > 1 && self.backup_bytes(&self.victims(&cur)) > room {
                let last = cur.pop();
                groups.push(std::mem::take(&mut cur));
                cur.extend(last);
            }
        }
        groups.push(cur);
        let n = groups.len();
        for (i, g) in groups.into_iter().enumerate() {
            let extra: &[Piece] = if i + 1 == n { &tops } else { &[] };
            if self.victims(&g).is_empty() {
                for p in &g {
                    self.write_piece(p, data, level)?;
                }
                for p in extra {
                    self.write_piece(p, data, level)?;
                }
            } else {
                self.rmw(&g, extra, data, level)?;
            }
        }
        Ok(())
    }

    fn backup_bytes(&self, tops: &[u32]) -> u64 {
        tops.iter()
            .map(|&t| self.state.written[t as usize] as u64 * self.layout.ss + 12)
            .sum()
    }

    /// One read-modify-write: back up the valid tops next to `bottoms`, sync, write the
    /// bottoms, sync, restore the tops together with the file's own top pieces `tops`, sync.
    fn rmw(
        &mut self,
        bottoms: &[Piece],
        tops: &[Piece],
        data: &[u8],
        level: Option<u8>,
    ) -> Result<()> {
        let t0 = self.dev.now();
        let ss = self.layout.ss;
        let victims = self.victims(bottoms);
        let mut entries = Vec::with_capacity(victims.len());
        for &t in &victims {
            let lba = self.layout.track(t).lba;
            let n = self.state.written[t as usize] as u64;
            let mut buf = vec![0u8; (n * ss) as usize];
            self.dev.read(lba, &mut buf)?;
            entries.push(Backup { lba, data: buf });
        }
        let seq = self.rmw_seq + 1;
        let rec = StagingRecord {
            seq,
            epoch: self.epoch,
            entries,
        };
        self.stage(&rec)?;
        self.rmw_seq = seq;
        self.flush()?;
        self.stats.rmw_syncs += 1;
        let t1 = self.dev.now();
        for p in bottoms {
            self.write_piece(p, data, level)?;
        }
        if !self.opts.unsafe_skip_bottom_sync {
            self.flush()?;
            self.stats.rmw_syncs += 1;
        }
        let t2 = self.dev.now();
        // Restores and own tops in track (LBA) order.
        let mut restore: Vec<(u64, Option<Piece>, usize)> = Vec::new();
        let staged = rec.entries;
        for (i, b) in staged.iter().enumerate() {
            restore.push((b.lba, None, i));
        }
        for p in tops {
            restore.push((p.lba, Some(*p), 0));
        }
        restore.sort_by_key(|r| r.0);
        let mut bytes = 0u64;
        for (lba, piece, i) in restore {
            match piece {
                Some(p) => self.write_piece(&p, data, level)?,
                None => {
                    if let Some(t) = self.layout.track_of_lba(lba) {
                        self.order_before_top(t)?;
                    }
                    self.dev_write(lba, &staged[i].data)?;
                    bytes += staged[i].data.len() as u64;
                }
            }
        }
        self.flush()?;
        self.stats.rmw_syncs += 1;
        self.applied_rmw = seq;
        let t3 = self.dev.now();
        self.stats.rmw_ops += 1;
        self.stats.top_rewrites += victims.len() as u64;
        self.stats.rmw_bytes += bytes;
        self.stats.rmw_ns += (t1 - t0) + (t3 - t2);
        Ok(())
    }

    /// Writes a staging record at the staging area's next free sector (wrapping, after a map
    /// write has made every older record unnecessary).
    fn stage(&mut self, rec: &StagingRecord) -> Result<()> {
        let ss = self.layout.ss;
        let mut b = rec.encode();
        let sectors = (b.len() as u64).div_ceil(ss);
        let r = self.layout.regions;
        if sectors > r.staging_sectors {
            return Err(Error::NoSpace(format!(
                "a backup of {} bytes exceeds the staging area of {} sectors",
                b.len(),
                r.staging_sectors
            )));
        }
        if self.staging_pos + sectors > r.staging_sectors {
            self.write_map()?;
            self.staging_pos = 0;
        }
        b.resize((sectors * ss) as usize, 0);
        self.safe_write(r.staging + self.staging_pos, &b)?;
        self.staging_pos += sectors;
        self.stats.staging_bytes += b.len() as u64;
        Ok(())
    }
}
