//! The write path: host writes split per physical track, bottoms before tops, and a
//! read-modify-write wherever a bottom write would destroy a top holding data:
//!
//! 1. read the damaged span of every such top (from the cache or the media) and write it as a
//!    staging record to the staging slot of this RMW (slots alternate), sync;
//! 2. write the bottoms, sync;
//! 3. restore the tops and write the host's own top pieces, sync.
//!
//! At most one RMW is unfinished at any time (step 3's sync ends it before the next begins),
//! so recovery restores at most the newest staging record, and only if it is newer than the
//! metadata's `applied_rmw`. A host FLUSH writes the data first and the metadata (track flags,
//! `applied_rmw`) after, each followed by a sync, so the metadata never runs ahead of the data.

use crate::drive::Inner;
use crate::mapping::Piece;
use crate::meta::MetaRecord;
use std::collections::BTreeMap;
use tegula_device::{BlockDevice, DeviceError, RangeSet};
use tegula_kvimr::staging::{Backup, StagingRecord};

type DevResult<T> = std::result::Result<T, DeviceError>;

impl Inner {
    /// Writes host sectors at `lba`; with `fua`, durable on return.
    pub fn write(&mut self, lba: u64, data: &[u8], fua: bool) -> DevResult<()> {
        let n = data.len() as u64 / self.ss;
        let pieces = self.map.pieces(&self.layout, lba, n, self.ss);
        self.stats.host_writes += 1;
        self.stats.host_write_bytes += data.len() as u64;
        let (bottoms, tops): (Vec<Piece>, Vec<Piece>) = pieces.into_iter().partition(|p| p.bottom);
        let groups = self.groups(&bottoms, &tops);
        let last = groups.len().saturating_sub(1);
        for (i, g) in groups.iter().enumerate() {
            let own_tops: &[Piece] = if i == last { &tops } else { &[] };
            let victims = self.victims(g, own_tops);
            if victims.is_empty() {
                for p in g {
                    self.write_bottom(p, data)?;
                }
                for p in own_tops {
                    self.write_top(p, data)?;
                }
            } else {
                self.rmw(g, own_tops, &victims, data)?;
            }
        }
        if groups.is_empty() {
            for p in &tops {
                self.write_top(p, data)?;
            }
        }
        if fua {
            self.sync_all()?;
        }
        Ok(())
    }

    /// Splits the bottom pieces into groups whose backups each fit one staging slot (a
    /// single piece always does: the slot holds two of the largest tracks).
    fn groups(&self, bottoms: &[Piece], tops: &[Piece]) -> Vec<Vec<Piece>> {
        let room = self.slot_sectors().saturating_sub(2) * self.ss;
        let mut groups: Vec<Vec<Piece>> = Vec::new();
        let mut cur: Vec<Piece> = Vec::new();
        for b in bottoms {
            cur.push(*b);
            if cur.len() > 1 && self.backup_bytes(&self.victims(&cur, tops)) > room {
                let lastp = cur.pop();
                groups.push(std::mem::take(&mut cur));
                cur.extend(lastp);
            }
        }
        if !cur.is_empty() {
            groups.push(cur);
        }
        groups
    }

    fn backup_bytes(&self, victims: &[(u64, u64)]) -> u64 {
        victims
            .iter()
            .map(|(a, b)| (b - a) * self.ss + 12)
            .sum::<u64>()
            + 64
    }

    /// Sectors of one staging slot.
    pub fn slot_sectors(&self) -> u64 {
        self.layout.regions.staging_sectors / 2
    }

    /// The top-track ranges holding host data that writing `bottoms` would destroy, less
    /// what the host's own top pieces of the same command overwrite anyway.
    fn victims(&self, bottoms: &[Piece], own_tops: &[Piece]) -> Vec<(u64, u64)> {
        let mut hit = RangeSet::new();
        for p in bottoms {
            for (a, b) in self.tl.damaged_by(p.lba, p.sectors) {
                if let Some(t) = self.track_at(a) {
                    if self.valid[t as usize] {
                        hit.insert(a, b);
                    }
                }
            }
        }
        for p in own_tops {
            hit.remove(p.lba, p.lba + p.sectors);
        }
        hit.iter().collect()
    }

    /// The track holding physical `lba`.
    fn track_at(&self, lba: u64) -> Option<u32> {
        let i = self
            .layout
            .tracks
            .partition_point(|t| t.lba <= lba)
            .checked_sub(1)?;
        (lba < self.layout.tracks[i].end()).then_some(i as u32)
    }

    fn write_bottom(&mut self, p: &Piece, data: &[u8]) -> DevResult<()> {
        let bytes = &data[p.at..p.at + (p.sectors * self.ss) as usize];
        self.disk.write(p.lba, bytes)?;
        if !self.dirty_bottoms.contains(&p.track) {
            self.dirty_bottoms.push(p.track);
        }
        self.set_valid(p.track);
        self.stats.bottom_bytes += bytes.len() as u64;
        Ok(())
    }

    /// Writes a host piece of a top track, after a sync if a neighbouring bottom write is
    /// still in the cache (so that it cannot land after this write and destroy it). A top
    /// without host data is written whole, zeros around the host's sectors, so that none of
    /// its sectors stays destroyed by earlier bottom writes.
    fn write_top(&mut self, p: &Piece, data: &[u8]) -> DevResult<()> {
        self.order_before_top(p.track)?;
        let bytes = &data[p.at..p.at + (p.sectors * self.ss) as usize];
        if self.valid[p.track as usize] {
            self.disk.write(p.lba, bytes)?;
        } else {
            let tr = *self.layout.track(p.track);
            let mut whole = vec![0u8; (tr.sectors as u64 * self.ss) as usize];
            let off = ((p.lba - tr.lba) * self.ss) as usize;
            whole[off..off + bytes.len()].copy_from_slice(bytes);
            self.disk.write(tr.lba, &whole)?;
            self.stats.top_first_writes += 1;
            self.set_valid(p.track);
        }
        self.stats.top_bytes += bytes.len() as u64;
        Ok(())
    }

    fn set_valid(&mut self, t: u32) {
        if !self.valid[t as usize] {
            self.valid[t as usize] = true;
            self.meta_dirty = true;
        }
    }

    fn order_before_top(&mut self, t: u32) -> DevResult<()> {
        if self
            .layout
            .track(t)
            .neighbours()
            .any(|n| self.dirty_bottoms.contains(&n))
        {
            self.sync()?;
            self.stats.ordering_syncs += 1;
        }
        Ok(())
    }

    /// One cache flush of the raw drive.
    pub fn sync(&mut self) -> DevResult<()> {
        self.disk.flush()?;
        self.dirty_bottoms.clear();
        self.stats.syncs += 1;
        Ok(())
    }

    /// The host's FLUSH: the data, then (if it changed) the metadata, each synced.
    pub fn sync_all(&mut self) -> DevResult<()> {
        self.sync()?;
        if self.meta_dirty {
            self.write_meta()?;
            self.sync()?;
        }
        Ok(())
    }

    /// Writes the next metadata record to the slot not holding the newest one.
    pub fn write_meta(&mut self) -> DevResult<()> {
        let seq = self.meta_seq + 1;
        let rec = MetaRecord {
            seq,
            epoch: self.sb.epoch,
            applied_rmw: self.applied,
            valid: self.valid.clone(),
        };
        self.write_meta_record(&rec)?;
        self.meta_seq = seq;
        self.meta_dirty = false;
        self.stats.meta_writes += 1;
        Ok(())
    }

    /// Writes `rec` into slot `rec.seq % 2`: both copies where the format keeps twins (a
    /// damaged copy of the newest record then leaves its twin, never an older record), the
    /// first otherwise. The caller syncs.
    pub fn write_meta_record(&mut self, rec: &MetaRecord) -> DevResult<()> {
        let r = self.layout.regions;
        let off = r.map[(rec.seq % 2) as usize];
        let mut b = rec.encode();
        if self.twins {
            b.resize((self.record_sectors * self.ss) as usize, 0);
            self.safe_write(off, &b)?;
            self.safe_write(off + self.record_sectors, &b)?;
        } else {
            b.resize((r.map_sectors * self.ss) as usize, 0);
            self.safe_write(off, &b)?;
        }
        Ok(())
    }

    /// Writes the superblock's copies: A at safe sector 0 and, where the format keeps twins,
    /// B in the spare sector of metadata slot 0. The caller syncs.
    pub fn write_superblocks(&mut self) -> DevResult<()> {
        let mut b = self.sb.encode();
        b.resize(self.ss as usize, 0);
        self.safe_write(0, &b)?;
        if self.twins {
            self.safe_write(1 + 2 * self.record_sectors, &b)?;
        }
        Ok(())
    }

    /// Notes a repair for `disk check` and the open warnings.
    pub fn note_repair(&mut self, what: String) {
        tracing::warn!("dm-imr: {what}");
        self.repaired.push(what);
    }

    /// Writes whole sectors at sector `off` of the safe region.
    pub fn safe_write(&mut self, off: u64, data: &[u8]) -> DevResult<()> {
        let mut at = 0usize;
        for (lba, n) in self.layout.safe_extents(off, data.len() as u64 / self.ss) {
            let len = (n * self.ss) as usize;
            self.disk.write(lba, &data[at..at + len])?;
            at += len;
        }
        Ok(())
    }

    /// Reads whole sectors at sector `off` of the safe region.
    pub fn safe_read(&mut self, off: u64, buf: &mut [u8]) -> DevResult<()> {
        let mut at = 0usize;
        for (lba, n) in self.layout.safe_extents(off, buf.len() as u64 / self.ss) {
            let len = (n * self.ss) as usize;
            self.disk.read(lba, &mut buf[at..at + len])?;
            at += len;
        }
        Ok(())
    }

    /// One read-modify-write: back up `victims`, sync, write `bottoms`, sync, restore the
    /// victims and write `tops`, sync.
    fn rmw(
        &mut self,
        bottoms: &[Piece],
        tops: &[Piece],
        victims: &[(u64, u64)],
        data: &[u8],
    ) -> DevResult<()> {
        let t0 = self.disk.now();
        let mut entries = Vec::with_capacity(victims.len());
        for &(a, b) in victims {
            let mut buf = vec![0u8; ((b - a) * self.ss) as usize];
            self.disk.read(a, &mut buf)?;
            entries.push(Backup { lba: a, data: buf });
        }
        let seq = self.rmw_seq + 1;
        let rec = StagingRecord {
            seq,
            epoch: self.sb.epoch,
            entries,
        };
        let mut b = rec.encode();
        let sectors = (b.len() as u64).div_ceil(self.ss);
        if sectors > self.slot_sectors() {
            return Err(DeviceError::NoSpace(format!(
                "a backup of {} bytes exceeds a staging slot of {} sectors",
                b.len(),
                self.slot_sectors()
            )));
        }
        b.resize((sectors * self.ss) as usize, 0);
        let slot = self.layout.regions.staging + (seq % 2) * self.slot_sectors();
        self.safe_write(slot, &b)?;
        self.stats.staging_bytes += b.len() as u64;
        self.rmw_seq = seq;
        self.sync()?;
        self.stats.rmw_syncs += 1;
        for p in bottoms {
            self.write_bottom(p, data)?;
        }
        self.sync()?;
        self.stats.rmw_syncs += 1;
        // Restores, then the host's own tops (which win where they overlap), in LBA order.
        let mut bytes = 0u64;
        let restores: BTreeMap<u64, &Backup> = rec.entries.iter().map(|e| (e.lba, e)).collect();
        for (lba, e) in restores {
            self.disk.write(lba, &e.data)?;
            bytes += e.data.len() as u64;
        }
        for p in tops {
            self.write_top(p, data)?;
        }
        self.sync()?;
        self.stats.rmw_syncs += 1;
        self.applied = seq;
        self.meta_dirty = true;
        self.stats.rmw_ops += 1;
        self.stats.top_rewrites += victims.len() as u64;
        self.stats.rmw_bytes += bytes;
        self.stats.rmw_ns += self.disk.now() - t0;
        Ok(())
    }

    /// Forgets host sectors `[lba, lba + n)`: top tracks wholly inside lose their data flag
    /// (a later bottom write need not protect them; they read as zeros), made durable at
    /// once so that a flag can never come back over a track damaged since.
    pub fn discard(&mut self, lba: u64, n: u64) -> DevResult<()> {
        let mut changed = false;
        for p in self.map.pieces(&self.layout, lba, n, self.ss) {
            let tr = self.layout.track(p.track);
            if !p.bottom && p.sectors == tr.sectors as u64 && self.valid[p.track as usize] {
                self.valid[p.track as usize] = false;
                changed = true;
            }
        }
        if changed {
            self.meta_dirty = true;
            self.sync_all()?;
        }
        Ok(())
    }
}
