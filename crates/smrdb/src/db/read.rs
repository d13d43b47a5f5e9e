//! Reads: point lookups and range scans over the memtables and bands, and the snapshots
//! that pin a point in time.

use super::Inner;
use crate::band::BandIter;
use crate::error::Result;
use crate::io::IoKind;
use crate::iter::{MemSource, Merge, Source};
use crate::version::SuperVersion;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
pub struct ScanIter {
    merge: Merge,
    snap: u64,
    end: Option<Vec<u8>>,
    last: Option<Vec<u8>>,
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

impl Iterator for ScanIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let e = match self.merge.next_entry() {
                Ok(Some(e)) => e,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            if self.end.as_ref().is_some_and(|end| e.key >= *end) {
                self.done = true;
                return None;
            }
            if e.seq > self.snap || self.last.as_ref() == Some(&e.key) {
                continue;
            }
            self.last = Some(e.key.clone());
            if let Some(v) = e.value {
                return Some(Ok((e.key, v)));
            }
        }
        None
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
        let mut sources: Vec<Box<dyn Source>> =
            vec![Box::new(MemSource::new(sv.mem.clone(), start))];
        if let Some(imm) = &sv.imm {
            sources.push(Box::new(MemSource::new(imm.clone(), start)));
        }
        for b in sv.bands.iter() {
            let m = &b.band.meta;
            if m.largest.as_slice() < start
                || end.is_some_and(|e| m.smallest.as_slice() >= e)
                || m.min_seq > snap
            {
                continue;
            }
            sources.push(Box::new(BandIter::new(
                b.band.clone(),
                self.dev.clone(),
                start,
                IoKind::Read,
                self.opts.read_ahead_bytes,
                self.opts.verify_checksums,
            )?));
        }
        self.counters.scans.fetch_add(1, Ordering::Relaxed);
        Ok(ScanIter {
            merge: Merge::new(sources)?,
            snap,
            end: end.map(|e| e.to_vec()),
            last: None,
            done: false,
            _sv: sv,
        })
    }
}
