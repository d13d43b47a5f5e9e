//! Iterators over a zone's metadata blocks: backward (newest first, following back pointers)
//! and forward (oldest first: a skip pass over the back pointers collects the block
//! addresses, reading about one block in `back_pointers`, then the blocks are read in order).
//! Neither needs any index beyond the zone itself.

use crate::alloc::Zea;
use crate::error::{Result, ZeaError};
use crate::meta::ExtentMeta;

/// Newest-to-oldest iterator. An unreadable block yields an error and iteration continues
/// through the next back pointer of the last good block, so one bad block loses one extent.
pub struct BackIter<'a> {
    zea: &'a Zea,
    cands: Vec<u64>,
    idx: usize,
}

impl<'a> BackIter<'a> {
    pub(crate) fn new(zea: &'a Zea) -> Self {
        BackIter {
            zea,
            cands: zea.last_meta().into_iter().collect(),
            idx: 0,
        }
    }
}

impl Iterator for BackIter<'_> {
    type Item = Result<ExtentMeta>;

    fn next(&mut self) -> Option<Self::Item> {
        let at = *self.cands.get(self.idx)?;
        match self.zea.meta_at(at) {
            Ok(m) => {
                self.cands = m.back.clone();
                self.idx = 0;
                Some(Ok(m))
            }
            Err(e) => {
                self.idx += 1;
                Some(Err(e))
            }
        }
    }
}

/// Oldest-to-newest iterator (write order).
pub struct ForwardIter<'a> {
    zea: &'a Zea,
    lbas: Vec<u64>,
    idx: usize,
    lost: Option<ZeaError>,
    skip_reads: u64,
}

impl<'a> ForwardIter<'a> {
    pub(crate) fn new(zea: &'a Zea) -> Self {
        let mut it = ForwardIter {
            zea,
            lbas: Vec::new(),
            idx: 0,
            lost: None,
            skip_reads: 0,
        };
        it.collect_lbas();
        it
    }

    /// Metadata blocks read by the skip pass.
    pub fn skip_reads(&self) -> u64 {
        self.skip_reads
    }

    /// Number of metadata blocks found by the skip pass.
    pub fn len_hint(&self) -> usize {
        self.lbas.len()
    }

    fn collect_lbas(&mut self) {
        let Some(last) = self.zea.last_meta() else {
            return;
        };
        // Newest first while collecting; `k` is the block to read next.
        let mut desc = vec![last];
        let mut k = 0usize;
        let mut failed: Option<ZeaError> = None;
        loop {
            self.skip_reads += 1;
            match self.zea.meta_at(desc[k]) {
                Ok(m) => {
                    let oldest = desc[desc.len() - 1];
                    let before = desc.len();
                    desc.extend(m.back.iter().copied().filter(|&l| l < oldest));
                    if desc.len() == before {
                        // Either the zone's first extent, or a bad block we cannot get past.
                        self.lost = failed.take();
                        break;
                    }
                    failed = None;
                    k = desc.len() - 1;
                }
                Err(e) => {
                    // Try a newer neighbour whose back pointers reach past the bad block.
                    failed.get_or_insert(e);
                    if k == 0 {
                        self.lost = failed.take();
                        break;
                    }
                    k -= 1;
                }
            }
        }
        desc.reverse();
        self.lbas = desc;
    }
}

impl Iterator for ForwardIter<'_> {
    type Item = Result<ExtentMeta>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.lost.take() {
            return Some(Err(e));
        }
        let at = *self.lbas.get(self.idx)?;
        self.idx += 1;
        Some(self.zea.meta_at(at))
    }
}

impl Zea {
    /// Iterates the zone's extents newest first.
    pub fn iter_back(&self) -> BackIter<'_> {
        BackIter::new(self)
    }

    /// Iterates the zone's extents in the order they were written.
    pub fn iter_forward(&self) -> ForwardIter<'_> {
        ForwardIter::new(self)
    }
}
