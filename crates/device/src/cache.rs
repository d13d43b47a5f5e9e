//! The drive's volatile write cache: dirty extents waiting to be destaged to the media.
//! Lost on power cut; destaged on FLUSH, when full, and during idle time. The media's cache
//! and a drive-managed drive's (in `tegula-stl`, keyed by logical LBA) are both this one.

use std::collections::{btree_map, BTreeMap};

/// One dirty extent. `data` is `None` on drives that keep no data.
#[derive(Debug, Clone)]
pub struct Dirty {
    /// Length in sectors.
    pub sectors: u64,
    /// Sector contents (`sectors × sector size` bytes) or nothing.
    pub data: Option<Vec<u8>>,
}

/// A run of contiguous dirty sectors taken out of the cache for one media write.
#[derive(Debug)]
pub struct Run {
    /// First sector.
    pub lba: u64,
    /// Length in sectors.
    pub sectors: u64,
    /// The data of its extents in LBA order (together `sectors × sector size` bytes), or
    /// `None` when an extent carries no data.
    pub data: Option<Vec<Vec<u8>>>,
}

/// Largest extent kept when appending contiguous writes, so destage writes stay bounded.
const MAX_MERGED_SECTORS_BYTES: u64 = 4 << 20;

/// Dirty, not yet persistent extents keyed by first LBA; never overlapping.
#[derive(Debug, Default)]
pub struct WriteCache {
    dirty: BTreeMap<u64, Dirty>,
    dirty_sectors: u64,
    sector_size: u64,
    /// Data buffers of destaged extents, kept for new extents: a stream of writes then
    /// reuses a few buffers instead of faulting in fresh memory for every extent.
    spare: Vec<Vec<u8>>,
    /// Sum of the spare buffers' capacities.
    spare_bytes: usize,
}

/// Capacity of the spare data buffers kept, in bytes: as much as a default 32 MiB cache
/// destages at once (half of it) and more, so a stream of large writes reuses the buffers its
/// destages free instead of allocating (and faulting in) new ones.
const SPARE_BYTES: usize = 32 << 20;
/// The largest buffer kept as a spare: an owned write of 8 MiB of data and a sector or two
/// more (a file system extent of 8 MiB with its metadata block) must come back to its writer,
/// or every such write faults in a fresh buffer.
const SPARE_MAX_BUFFER: usize = 12 << 20;

impl WriteCache {
    /// An empty cache for a given sector size.
    pub fn new(sector_size: u32) -> Self {
        WriteCache {
            dirty: BTreeMap::new(),
            dirty_sectors: 0,
            sector_size: sector_size as u64,
            spare: Vec::new(),
            spare_bytes: 0,
        }
    }

    /// Sectors waiting for destage.
    pub fn dirty_sectors(&self) -> u64 {
        self.dirty_sectors
    }

    /// Whether anything is dirty.
    pub fn is_empty(&self) -> bool {
        self.dirty.is_empty()
    }

    /// Drops `[lba, end)` from the cache, splitting extents that straddle it.
    pub fn remove(&mut self, lba: u64, end: u64) {
        let ss = self.sector_size as usize;
        let mut keys: Vec<u64> = self.dirty.range(lba..end).map(|(&k, _)| k).collect();
        if let Some((&k, d)) = self.dirty.range(..lba).next_back() {
            if k + d.sectors > lba {
                keys.insert(0, k);
            }
        }
        for k in keys {
            let Some(d) = self.dirty.remove(&k) else {
                continue;
            };
            self.dirty_sectors -= d.sectors;
            let dend = k + d.sectors;
            if k < lba {
                let n = lba - k;
                let data = d.data.as_ref().map(|v| v[..n as usize * ss].to_vec());
                self.put(k, Dirty { sectors: n, data });
            }
            if dend > end {
                let n = dend - end;
                let skip = (end - k) as usize * ss;
                let data = d.data.as_ref().map(|v| v[skip..].to_vec());
                self.put(end, Dirty { sectors: n, data });
            }
        }
    }

    fn put(&mut self, lba: u64, d: Dirty) {
        self.dirty_sectors += d.sectors;
        self.dirty.insert(lba, d);
    }

    /// Caches a write, superseding older dirty data in its range.
    pub fn insert(&mut self, lba: u64, sectors: u64, data: Option<&[u8]>) {
        let end = lba + sectors;
        self.remove(lba, end);
        // Append to a contiguous predecessor when that keeps extents bounded.
        if let Some((&k, prev)) = self.dirty.range_mut(..lba).next_back() {
            let fits = (prev.sectors + sectors) * self.sector_size <= MAX_MERGED_SECTORS_BYTES;
            if k + prev.sectors == lba && fits && prev.data.is_some() == data.is_some() {
                prev.sectors += sectors;
                if let (Some(v), Some(d)) = (prev.data.as_mut(), data) {
                    v.extend_from_slice(d);
                }
                self.dirty_sectors += sectors;
                return;
            }
        }
        let data = data.map(|d| {
            let mut v = self.take_spare();
            v.clear();
            v.extend_from_slice(d);
            v
        });
        self.put(lba, Dirty { sectors, data });
    }

    /// The dirty extents overlapping `[lba, end)` in LBA order, one that starts before `lba`
    /// included.
    fn overlapping(&self, lba: u64, end: u64) -> btree_map::Range<'_, u64, Dirty> {
        let start_key = match self.dirty.range(..=lba).next_back() {
            Some((&k, d)) if k + d.sectors > lba => k,
            _ => lba,
        };
        self.dirty.range(start_key..end)
    }

    /// Copies dirty data over `buf` (which holds `[lba, lba + len)` read from the media).
    /// Returns the number of sectors the cache supplied.
    pub fn overlay(&self, lba: u64, buf: Option<&mut [u8]>, len: u64) -> u64 {
        let ss = self.sector_size;
        let end = lba + len;
        let mut covered = 0;
        let mut buf = buf;
        for (&k, d) in self.overlapping(lba, end) {
            let a = k.max(lba);
            let b = (k + d.sectors).min(end);
            if a >= b {
                continue;
            }
            covered += b - a;
            if let (Some(out), Some(src)) = (buf.as_deref_mut(), d.data.as_ref()) {
                let so = ((a - k) * ss) as usize;
                let doff = ((a - lba) * ss) as usize;
                let n = ((b - a) * ss) as usize;
                out[doff..doff + n].copy_from_slice(&src[so..so + n]);
            }
        }
        covered
    }

    /// Parts of `[lba, end)` not covered by dirty extents.
    pub fn uncovered(&self, lba: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut pos = lba;
        for (&k, d) in self.overlapping(lba, end) {
            if k > pos {
                out.push((pos, k.min(end)));
            }
            pos = pos.max(k + d.sectors);
            if pos >= end {
                break;
            }
        }
        if pos < end {
            out.push((pos, end));
        }
        out
    }

    /// Takes the next run of contiguous dirty extents at or after `from` (wrapping around), as
    /// an elevator would: one media write of at most `max_sectors` (a single extent may be
    /// longer). Its data stays in the extents' own buffers, in LBA order, so taking a run
    /// copies nothing.
    pub fn take_run(&mut self, from: u64, max_sectors: u64) -> Option<Run> {
        let first = self
            .dirty
            .range(from..)
            .next()
            .or_else(|| self.dirty.iter().next())
            .map(|(&k, _)| k)?;
        let mut lba = first;
        let mut total = 0u64;
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        let mut no_data = false;
        while let Some(d) = self.dirty.get(&lba) {
            if total > 0 && total + d.sectors > max_sectors {
                break;
            }
            let Some(d) = self.dirty.remove(&lba) else {
                break;
            };
            self.dirty_sectors -= d.sectors;
            total += d.sectors;
            match d.data {
                Some(v) if !no_data => pieces.push(v),
                _ => no_data = true,
            }
            lba += d.sectors;
        }
        Some(Run {
            lba: first,
            sectors: total,
            data: (!no_data).then_some(pieces),
        })
    }

    /// Caches a write whose buffer the cache keeps as the extent's data (no copy), superseding
    /// older dirty data in its range. Returns a buffer for the caller to fill next: a spare one
    /// of a destaged extent, or an empty one.
    pub fn insert_owned(&mut self, lba: u64, data: Vec<u8>) -> Vec<u8> {
        let sectors = data.len() as u64 / self.sector_size;
        self.remove(lba, lba + sectors);
        self.put(
            lba,
            Dirty {
                sectors,
                data: Some(data),
            },
        );
        self.take_spare()
    }

    fn take_spare(&mut self) -> Vec<u8> {
        let v = self.spare.pop().unwrap_or_default();
        self.spare_bytes -= v.capacity();
        v
    }

    /// Keeps a data buffer that left the cache (a destaged run's) for a new extent: one of
    /// at most `SPARE_MAX_BUFFER` bytes, while the spares hold at most `SPARE_BYTES`.
    pub fn recycle(&mut self, v: Vec<u8>) {
        let cap = v.capacity();
        if self.spare_bytes + cap <= SPARE_BYTES && cap <= SPARE_MAX_BUFFER {
            self.spare_bytes += cap;
            self.spare.push(v);
        }
    }

    /// The first dirty sector at or after `from`.
    pub fn first_dirty_from(&self, from: u64) -> Option<u64> {
        match self.dirty.range(..=from).next_back() {
            Some((&k, d)) if k + d.sectors > from => Some(from),
            _ => self.dirty.range(from..).next().map(|(&k, _)| k),
        }
    }

    /// End of the run of contiguous dirty sectors that covers `lba` (`lba` itself when it is
    /// not dirty), across extent boundaries.
    pub fn run_end(&self, lba: u64) -> u64 {
        let mut end = lba;
        while let Some((&k, d)) = self.dirty.range(..=end).next_back() {
            if k + d.sectors <= end {
                break;
            }
            end = k + d.sectors;
        }
        end
    }

    /// Takes `[lba, end)` out of the cache, appending the data of its dirty sectors to `out`
    /// in LBA order (sectors that are not dirty, or carry no data, append nothing).
    pub fn take_range(&mut self, lba: u64, end: u64, out: &mut Vec<u8>) {
        let ss = self.sector_size;
        for (&k, d) in self.overlapping(lba, end) {
            let a = k.max(lba);
            let b = (k + d.sectors).min(end);
            if let (true, Some(src)) = (a < b, d.data.as_ref()) {
                out.extend_from_slice(&src[((a - k) * ss) as usize..((b - k) * ss) as usize]);
            }
        }
        self.remove(lba, end);
    }

    /// Every dirty range (what a power cut loses).
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.dirty.iter().map(|(&k, d)| (k, k + d.sectors))
    }

    /// Drops everything (power loss).
    pub fn clear(&mut self) {
        self.dirty.clear();
        self.dirty_sectors = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_writes_supersede_and_split_older_ones() {
        let mut c = WriteCache::new(512);
        c.insert(10, 10, Some(&[1u8; 5120]));
        c.insert(12, 2, Some(&[2u8; 1024]));
        assert_eq!(c.dirty_sectors(), 10);
        let mut buf = vec![0u8; 512 * 10];
        assert_eq!(c.overlay(10, Some(&mut buf), 10), 10);
        assert_eq!(buf[0], 1);
        assert_eq!(buf[2 * 512], 2);
        assert_eq!(buf[4 * 512], 1);
        assert_eq!(c.uncovered(5, 25), vec![(5, 10), (20, 25)]);
        let run = c.take_run(0, 1 << 20).expect("run");
        assert_eq!((run.lba, run.sectors), (10, 10));
        let data = run.data.expect("data").concat();
        assert_eq!(data.len(), 10 * 512);
        assert_eq!(&data[2 * 512..2 * 512 + 4], &[2, 2, 2, 2]);
        assert!(c.is_empty());
    }

    #[test]
    fn runs_span_extents_and_take_range_returns_their_data_in_order() {
        let mut c = WriteCache::new(512);
        // Two adjacent extents (a write merges only into its predecessor), a gap, one more.
        c.insert(12, 2, Some(&[2u8; 1024]));
        c.insert(10, 2, Some(&[1u8; 1024]));
        c.insert(20, 1, Some(&[3u8; 512]));
        assert_eq!(c.ranges().count(), 3);
        assert_eq!(c.first_dirty_from(0), Some(10));
        assert_eq!(c.first_dirty_from(11), Some(11));
        assert_eq!(c.first_dirty_from(14), Some(20));
        assert_eq!(c.first_dirty_from(21), None);
        assert_eq!(c.run_end(10), 14);
        assert_eq!(c.run_end(13), 14);
        assert_eq!(c.run_end(14), 14);
        assert_eq!(c.run_end(20), 21);
        let mut out = Vec::new();
        c.take_range(11, 13, &mut out);
        assert_eq!(out.len(), 1024);
        assert_eq!((out[0], out[600]), (1, 2));
        assert_eq!(c.dirty_sectors(), 3);
        assert_eq!(
            c.ranges().collect::<Vec<_>>(),
            vec![(10, 11), (13, 14), (20, 21)]
        );
        // Sectors that are not dirty append nothing.
        let mut out = Vec::new();
        c.take_range(0, 100, &mut out);
        assert_eq!(out.len(), 3 * 512);
        assert!(c.is_empty());
    }

    #[test]
    fn contiguous_writes_merge_into_one_extent() {
        let mut c = WriteCache::new(4096);
        for i in 0..8 {
            c.insert(i, 1, None);
        }
        assert_eq!(c.ranges().count(), 1);
        assert_eq!(
            c.take_run(100, 1 << 20).map(|r| (r.lba, r.sectors)),
            Some((0, 8))
        );
    }

    /// An owned write of 8 MiB and a sector (a file system extent and its metadata block)
    /// is handed back after its destage; a larger than useful one is not kept.
    #[test]
    fn an_eight_mib_extent_with_its_metadata_sector_is_recycled() {
        let mut c = WriteCache::new(4096);
        let mut v = Vec::with_capacity((8 << 20) + 4096);
        v.resize((8 << 20) + 4096, 1);
        let cap = v.capacity();
        assert!(c.insert_owned(0, v).is_empty());
        let run = c.take_run(0, 1 << 20).expect("run");
        for p in run.data.expect("data") {
            c.recycle(p);
        }
        assert_eq!(c.insert_owned(10_000, vec![2u8; 4096]).capacity(), cap);
        c.recycle(vec![0u8; 64 << 20]);
        assert_eq!(c.insert_owned(20_000, vec![3u8; 4096]).capacity(), 0);
    }

    #[test]
    fn owned_writes_keep_their_buffer_and_runs_return_it_uncopied() {
        let mut c = WriteCache::new(512);
        let spare = c.insert_owned(0, vec![1u8; 4 * 512]);
        assert!(spare.is_empty());
        // A later owned write supersedes part of the first, which is split around it.
        let mut b = spare;
        b.resize(4 * 512, 2);
        c.insert_owned(2, b);
        c.insert(6, 2, Some(&[3u8; 1024]));
        c.insert_owned(20, vec![4u8; 512]);
        assert_eq!(c.dirty_sectors(), 9);
        let mut buf = vec![0u8; 8 * 512];
        assert_eq!(c.overlay(0, Some(&mut buf), 8), 8);
        assert_eq!(
            (buf[0], buf[2 * 512], buf[5 * 512], buf[7 * 512]),
            (1, 2, 2, 3)
        );
        // The run covers the three contiguous extents, in order, without concatenating them.
        let run = c.take_run(0, 1 << 20).expect("run");
        assert_eq!((run.lba, run.sectors), (0, 8));
        let pieces = run.data.expect("data");
        assert_eq!(pieces.iter().map(Vec::len).sum::<usize>(), 8 * 512);
        assert_eq!(pieces.concat(), buf);
        assert_eq!(c.ranges().collect::<Vec<_>>(), vec![(20, 21)]);
        // A recycled buffer comes back from the next owned write.
        for p in pieces {
            c.recycle(p);
        }
        let back = c.insert_owned(30, vec![5u8; 512]);
        assert!(back.capacity() > 0);
    }
}
