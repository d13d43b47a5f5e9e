//! Reads: point lookups and range scans over the memtables and bands, and the snapshots
//! that pin a point in time.

use super::Inner;
use crate::cursor::{BandCursor, Cursor, MemCursor, MergingCursor};
use crate::error::Result;
use crate::memtable::EntryRef;
use crate::version::SuperVersion;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Entries a scan copies from each memtable at first (the batches double from there).
const MEM_FIRST_BATCH: usize = 8;

/// A consistent point-in-time view for [`super::Db::get_at`] and [`super::Db::scan_at`].
/// Compaction keeps the versions it needs while it lives.
#[derive(Debug)]
pub struct Snapshot {
    pub(super) seq: u64,
    pub(super) list: Arc<Mutex<BTreeMap<u64, usize>>>,
}

impl Snapshot {
    /// Sequence number of the snapshot.
    pub fn sequence(&self) -> u64 {
        self.seq
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut l = self.list.lock();
        if let Some(n) = l.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                l.remove(&self.seq);
            }
        }
    }
}

/// Iterator over a key range; yields `(key, value)` of the newest visible version.
///
/// It merges cursors that lend their entries (see [`crate::cursor`]): a band is read only
/// once the merge reaches its keys, one block through the block cache at first, so that a
/// short scan costs a block per band that holds its start key, and the only copies made are
/// those of the pairs yielded.
pub struct ScanIter {
    merge: MergingCursor,
    snap: u64,
    end: Option<Vec<u8>>,
    /// The last user key decided (yielded, or hidden by a tombstone).
    last: Vec<u8>,
    have_last: bool,
    /// The merge still stands at the entry last looked at (moved on at the next call, so
    /// that a scan that stops after one pair reads no further).
    advance: bool,
    /// The merge still stands at the key last decided (`last`), whose other versions are
    /// skipped at the next call.
    skip: bool,
    done: bool,
    _sv: Arc<SuperVersion>,
}

impl std::fmt::Debug for ScanIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanIter")
            .field("snap", &self.snap)
            .finish()
    }
}

impl ScanIter {
    /// Moves to the next pair to yield: `true` if there is one (the merge then stands at it),
    /// `false` at the end of the range.
    fn seek_next(&mut self) -> Result<bool> {
        loop {
            if std::mem::take(&mut self.advance) {
                self.merge.advance()?;
            }
            if std::mem::take(&mut self.skip) {
                self.merge.skip_key(&self.last)?;
            }
            let Some(EntryRef {
                key: k,
                seq,
                value: v,
            }) = self.merge.current()?
            else {
                return Ok(false);
            };
            if self.end.as_deref().is_some_and(|end| k >= end) {
                return Ok(false);
            }
            if seq > self.snap || (self.have_last && self.last.as_slice() == k) {
                // Too new for the snapshot (an older version may be visible), or a version
                // of a key already decided.
                self.advance = true;
                continue;
            }
            self.last.clear();
            self.last.extend_from_slice(k);
            self.have_last = true;
            self.skip = true;
            if v.is_some() {
                return Ok(true);
            }
        }
    }

    /// The next pair, lent until the next call (no copy is made): what [`Iterator::next`]
    /// yields as owned vectors.
    pub fn next_ref(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.done {
            return Ok(None);
        }
        match self.seek_next() {
            Ok(true) => {}
            Ok(false) => {
                self.done = true;
                return Ok(None);
            }
            Err(e) => {
                self.done = true;
                return Err(e);
            }
        }
        // `seek_next` left the merge standing at the pair: its top child is positioned at it.
        let e = self.merge.top_entry();
        debug_assert!(e.is_some_and(|e| e.value.is_some()));
        Ok(e.and_then(|e| Some((e.key, e.value?))))
    }
}

impl Iterator for ScanIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        match self.next_ref() {
            Ok(Some((k, v))) => Some(Ok((k.to_vec(), v.to_vec()))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

impl Inner {
    pub(super) fn get(&self, key: &[u8], snap: u64) -> Result<Option<Vec<u8>>> {
        let sv = self.current();
        self.counters.gets.fetch_add(1, Ordering::Relaxed);
        if let Some((_, v)) = sv.mem.get(key, snap) {
            return Ok(v);
        }
        if let Some(imm) = &sv.imm {
            if let Some((_, v)) = imm.get(key, snap) {
                return Ok(v);
            }
        }
        let mut best: Option<(u64, Option<Vec<u8>>)> = None;
        let mut probes = 0u64;
        for b in sv.bands.iter() {
            let m = &b.band.meta;
            if best.as_ref().is_some_and(|(s, _)| m.max_seq < *s) {
                break;
            }
            if !m.covers(key) || m.min_seq > snap {
                continue;
            }
            if !b.band.bloom.may_contain(key) {
                self.counters.bloom_skips.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            probes += 1;
            let r = b.band.get(
                &self.dev,
                &self.cache,
                key,
                snap,
                self.opts.verify_checksums,
            )?;
            if let Some((s, v)) = r {
                if best.as_ref().is_none_or(|(bs, _)| s > *bs) {
                    best = Some((s, v));
                }
            }
        }
        self.counters
            .get_probes
            .fetch_add(probes, Ordering::Relaxed);
        Ok(best.and_then(|(_, v)| v))
    }

    pub(super) fn scan(&self, start: &[u8], end: Option<&[u8]>, snap: u64) -> Result<ScanIter> {
        let sv = self.current();
        let mut children: Vec<Box<dyn Cursor>> = Vec::with_capacity(sv.bands.len() + 2);
        for m in [Some(&sv.mem), sv.imm.as_ref()].into_iter().flatten() {
            children.push(Box::new(MemCursor::new(m.clone(), start, MEM_FIRST_BATCH)));
        }
        for b in sv.bands.iter() {
            let m = &b.band.meta;
            if m.largest.as_slice() < start
                || end.is_some_and(|e| m.smallest.as_slice() >= e)
                || m.min_seq > snap
            {
                continue;
            }
            children.push(Box::new(BandCursor::new(
                b.band.clone(),
                self.dev.clone(),
                self.cache.clone(),
                start,
                self.opts.read_ahead_bytes,
                self.opts.verify_checksums,
            )));
        }
        self.counters.scans.fetch_add(1, Ordering::Relaxed);
        Ok(ScanIter {
            merge: MergingCursor::new(children),
            snap,
            end: end.map(|e| e.to_vec()),
            last: Vec::new(),
            have_last: false,
            advance: false,
            skip: false,
            done: false,
            _sv: sv,
        })
    }
}
