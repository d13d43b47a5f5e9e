//! The destage of the drive's volatile write cache (the device layer's `WriteCache`, keyed by
//! logical LBA): long sequential runs bypass the persistent cache band by band, the rest is
//! packed into the translation layer as batches.

use super::Inner;
use crate::bands::BandSplit;
use crate::error::Result;
use crate::layer::WriteReq;
use std::collections::BTreeMap;

impl Inner {
    /// Destages the volatile cache until at most `keep` sectors stay dirty: long runs bypass
    /// the persistent cache, the rest is packed into the layer as one batch. While the cache
    /// only needs room (`keep > 0`), the partial last band of a long run stays cached, since a
    /// streaming writer is about to complete it: destaging it now would rewrite that band twice.
    pub(super) fn destage(&mut self, keep: u64) -> Result<()> {
        let Some(cache) = self.vcache.take() else {
            return Ok(());
        };
        let mut cache = cache;
        let mut runs: Vec<(u64, u64)> = Vec::new();
        // Start of each chosen run → its end (a second pass takes only what follows).
        let mut chosen: BTreeMap<u64, u64> = BTreeMap::new();
        let mut taken = 0u64;
        let total = cache.dirty_sectors();
        let mut from = 0u64;
        let mut trim = keep > 0;
        while total - taken > keep {
            let Some(lba) = cache.first_dirty_from(from) else {
                if trim {
                    // Not enough whole bands: take the tails too.
                    trim = false;
                    from = 0;
                    continue;
                }
                break;
            };
            let mut end = cache.run_end(lba);
            from = end;
            let start = chosen.get(&lba).copied().unwrap_or(lba);
            if trim && end - lba >= self.bypass_min {
                let (band_lo, _) = self.layer.band_range(end - 1);
                if band_lo > lba && band_lo < end {
                    end = band_lo;
                } else if band_lo <= lba {
                    continue;
                }
            }
            if start >= end {
                continue;
            }
            chosen.insert(lba, end);
            taken += end - start;
            runs.push((start, end));
        }
        let ss = self.ss();
        let mut small: Vec<(u64, Vec<u8>)> = Vec::new();
        // Long runs go band by band through one reused buffer (no fresh allocation, and no
        // page faults, per destage).
        let mut buf = std::mem::take(&mut self.destage_buf);
        let mut res = Ok(());
        for &(lba, end) in &runs {
            if end - lba < self.bypass_min {
                let len = ((end - lba) * ss) as usize;
                let data = if self.store_data {
                    let mut data = Vec::with_capacity(len);
                    cache.take_range(lba, end, &mut data);
                    data
                } else {
                    // A metadata-only drive's cache holds no bytes: the layer gets zeros of
                    // the run's length (zeroed pages that nothing touches).
                    cache.remove(lba, end);
                    vec![0; len]
                };
                small.push((lba, data));
                continue;
            }
            let mut split = BandSplit::new(lba, end);
            while res.is_ok() {
                let Some((cur, b)) = split.next(|l| self.layer.band_range(l)) else {
                    break;
                };
                let len = ((b - cur) * ss) as usize;
                if self.store_data {
                    buf.clear();
                    cache.take_range(cur, b, &mut buf);
                } else {
                    // Zeros (see above), kept from one band to the next.
                    cache.remove(cur, b);
                    if buf.len() < len {
                        buf.resize(len, 0);
                    }
                }
                res = self.layer.bypass(
                    &mut self.media,
                    WriteReq {
                        lba: cur,
                        data: &buf[..len.min(buf.len())],
                    },
                );
            }
        }
        self.destage_buf = buf;
        self.vcache = Some(cache);
        res?;
        let reqs: Vec<WriteReq<'_>> = small
            .iter()
            .map(|(lba, data)| WriteReq { lba: *lba, data })
            .collect();
        for chunk in reqs.chunks(32) {
            self.layer.write(&mut self.media, chunk)?;
        }
        Ok(())
    }
}
