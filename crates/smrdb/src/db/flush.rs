//! Writing sorted streams into bands, and flushing the immutable memtable to level 0.

use super::{is_nospace, Checkpoint, Inner};
use crate::band::{Band, BandWriter, WriterConfig};
use crate::error::Result;
use crate::io::IoKind;
use crate::iter::{IterRefs, RefSource};
use crate::memtable::Memtable;
use crate::version::{sort_newest_first, VBand};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Inner {
    pub(super) fn writer_config(&self) -> WriterConfig {
        WriterConfig {
            block_size: self.opts.block_size,
            block_align: self.opts.block_align,
            bloom_bits_per_key: self.opts.bloom_bits_per_key,
            histogram_bytes: self.opts.histogram_bytes,
            write_chunk_bytes: self.opts.write_chunk_bytes,
        }
    }

    pub(super) fn smallest_snapshot(&self) -> u64 {
        self.snapshots
            .lock()
            .keys()
            .next()
            .copied()
            .unwrap_or(u64::MAX)
            .min(self.visible_seq.load(Ordering::Acquire))
    }

    /// Writes a sorted stream into fresh bands, dropping versions nobody can see and, when
    /// `drop_tombstone` says no older version can exist elsewhere, tombstones. Bands are
    /// taken leaving `keep` free. With `checkpoint`, when a new band is needed and at most
    /// one is free, the finished bands are handed to it (with the next key to write) so that
    /// it can record them and free the inputs already consumed. `need` is how many free bands
    /// the whole stream may take (a compaction's estimate; 0 for a flush): a waiting memtable
    /// is flushed between a compaction's bands only while that leaves the rest of them free.
    #[allow(clippy::too_many_arguments)] // one call per kind of writer; a struct adds nothing
    pub(super) fn write_bands(
        &self,
        src: &mut dyn RefSource,
        level: u8,
        kind: IoKind,
        keep: usize,
        need: usize,
        drop_tombstone: &dyn Fn(&[u8]) -> bool,
        zones_out: &mut Vec<u32>,
        mut checkpoint: Option<&mut Checkpoint<'_>>,
    ) -> Result<Vec<Band>> {
        let smallest_snap = self.smallest_snapshot();
        let cfg = self.writer_config();
        let mut out = Vec::new();
        let mut cur: Option<(BandWriter<'_>, u64)> = None;
        let mut last_key: Vec<u8> = Vec::new();
        let mut have_last = false;
        let mut last_seq_for_key = u64::MAX;
        while let Some(e) = src.next_ref()? {
            if !have_last || last_key != e.key {
                last_key.clear();
                last_key.extend_from_slice(e.key);
                have_last = true;
                last_seq_for_key = u64::MAX;
            }
            let shadowed = last_seq_for_key <= smallest_snap;
            last_seq_for_key = e.seq;
            if shadowed {
                continue;
            }
            if e.value.is_none() && e.seq <= smallest_snap && drop_tombstone(e.key) {
                continue;
            }
            let full = cur
                .as_ref()
                .is_some_and(|(w, _)| !w.is_empty() && !w.fits(e));
            if full {
                if let Some((w, id)) = cur.take() {
                    out.push(w.finish(id, level, self.dev.dev.now())?);
                }
            }
            if cur.is_none() {
                // Not in a checkpointed (low-space) merge: its free bands are counted.
                if kind == IoKind::Compaction && checkpoint.is_none() {
                    let still_needed = need.saturating_sub(out.len());
                    self.compaction_reserve
                        .store(still_needed, Ordering::Release);
                    self.flush_imm_first(still_needed)?;
                }
                if let Some(cp) = checkpoint.as_mut() {
                    let tight = {
                        let ms = self.meta.lock();
                        self.free_bands(&ms) <= keep + 1
                    };
                    if tight && !out.is_empty() {
                        self.dev.flush_zones(kind, zones_out)?;
                        cp(&mut out, e.key, zones_out)?;
                    }
                }
                let (z, id) = {
                    let mut ms = self.meta.lock();
                    let z = self.alloc(&mut ms, keep)?;
                    let id = ms.m.next_band_id;
                    ms.m.next_band_id += 1;
                    (z, id)
                };
                zones_out.push(z);
                // The level hint: a device that places bands by level (KVIMR) uses it.
                self.dev
                    .dev
                    .hint_zone(z, tegula_device::ZoneHint::Level(level));
                cur = Some((BandWriter::new(&self.dev, z, kind, cfg), id));
            }
            if let Some((w, _)) = cur.as_mut() {
                w.add(e)?;
            }
        }
        if let Some((w, id)) = cur.take() {
            out.push(w.finish(id, level, self.dev.dev.now())?);
        }
        Ok(out)
    }

    /// LevelDB's "prioritize immutable compaction work" (`Options::flush_during_compaction`):
    /// a background compaction lets a waiting immutable memtable go first at each of its band
    /// boundaries, so that writers,
    /// which stop when the memtable after it fills too, wait for one output band rather than
    /// for the whole compaction (an L0 → L1 merge of random keys rewrites every L1 band:
    /// gigabytes). The new L0 band is newer than every compaction input, so the merge's
    /// tombstone decisions and its final manifest edit (which removes only its inputs) stay
    /// right. A flush short of room is left for after the compaction, as `maintain` does, and
    /// so is one that would leave fewer than `still_needed` bands (the compaction's outputs
    /// still to come) beyond the flush's reserve.
    fn flush_imm_first(&self, still_needed: usize) -> Result<()> {
        if !self.opts.background_compaction
            || !self.opts.flush_during_compaction
            || self.current().imm.is_none()
        {
            return Ok(());
        }
        let room = {
            let ms = self.meta.lock();
            self.free_bands(&ms)
        };
        if room <= self.flush_keep() + still_needed {
            return Ok(());
        }
        // The flush thread may be flushing it already: then there is nothing to wait for.
        let Some(_f) = self.flush_lock.try_lock() else {
            return Ok(());
        };
        match self.flush_imm_locked(self.flush_keep()) {
            Ok(true) => {
                self.counters
                    .flushes_in_compaction
                    .fetch_add(1, Ordering::Relaxed);
                self.done_cv.notify_all();
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) if is_nospace(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Flushes the immutable memtable, if any, to L0 bands (waiting for a flush the flush
    /// thread is making).
    pub(super) fn flush_imm(&self) -> Result<bool> {
        let _f = self.flush_lock.lock();
        self.flush_imm_locked(self.flush_keep())
    }

    /// The flush thread's flush (`Options::flush_during_compaction`): the immutable memtable
    /// to L0 bands without waiting for the compaction running meanwhile, leaving free the
    /// bands that compaction still needs (`compaction_reserve`). `Ok(false)` when there was
    /// nothing to flush or no room to spare; a flush short of room is left to the background
    /// thread, which makes room first.
    pub(super) fn flush_imm_beside_compaction(&self) -> Result<bool> {
        let _f = self.flush_lock.lock();
        let reserve = self.compaction_reserve.load(Ordering::Acquire);
        if reserve == usize::MAX || self.current().imm.is_none() {
            return Ok(false);
        }
        let keep = self.flush_keep().saturating_add(reserve);
        let room = {
            let ms = self.meta.lock();
            self.free_bands(&ms)
        };
        if room <= keep {
            return Ok(false);
        }
        match self.flush_imm_locked(keep) {
            Ok(true) if reserve > 0 => {
                self.counters
                    .flushes_beside_compaction
                    .fetch_add(1, Ordering::Relaxed);
                Ok(true)
            }
            Err(e) if is_nospace(&e) => Ok(false),
            r => r,
        }
    }

    /// [`Inner::flush_imm`] with the flush lock held, taking bands leaving `keep` free.
    fn flush_imm_locked(&self, keep: usize) -> Result<bool> {
        let sv = self.current();
        let Some(imm) = sv.imm.clone() else {
            return Ok(false);
        };
        let mut zones = Vec::new();
        // Streamed from the immutable memtable: nothing is copied into an intermediate list.
        let r = imm.with_iter(|it| {
            self.write_bands(
                &mut IterRefs(it),
                0,
                IoKind::Flush,
                keep,
                0,
                &|_| false,
                &mut zones,
                None,
            )
        });
        let bands = match r.and_then(|b| self.dev.flush_zones(IoKind::Flush, &zones).map(|_| b)) {
            Ok(b) => b,
            Err(e) => {
                if is_nospace(&e) {
                    self.abandon(&zones);
                }
                return Err(e);
            }
        };
        let old_logs;
        {
            let mut ms = self.meta.lock();
            let saved = ms.m.clone();
            old_logs = std::mem::take(&mut ms.imm_zones);
            ms.m.log_zones.retain(|z| !old_logs.contains(z));
            ms.m.log_ends.retain(|z, _| !old_logs.contains(z));
            ms.m.flushed_seq = ms.m.flushed_seq.max(imm.max_seq());
            ms.m.bands.extend(bands.iter().map(|b| b.meta.clone()));
            if let Err(e) = self.commit(&mut ms) {
                ms.m = saved;
                ms.imm_zones = old_logs;
                return Err(e);
            }
            let mut svw = self.sv.write();
            let mut n = (**svw).clone();
            let mut all = (*n.bands).clone();
            all.extend(bands.into_iter().map(|b| VBand {
                level: 0,
                band: Arc::new(b),
            }));
            sort_newest_first(&mut all);
            n.bands = Arc::new(all);
            n.imm = None;
            *svw = Arc::new(n);
            drop(svw);
            for z in &old_logs {
                if let Err(e) = self.dev.reset(*z) {
                    return self.fail(e);
                }
                ms.free.insert(*z);
            }
        }
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        drop(sv);
        if self.opts.background_compaction {
            // Free the flushed memtable on the background thread rather than in whichever
            // reader lets go of it last (a band's worth of versions takes milliseconds).
            self.retired.lock().push(imm);
            self.free_retired();
        }
        Ok(true)
    }

    /// Frees the flushed memtables no reader holds any more.
    pub(super) fn free_retired(&self) {
        let done: Vec<Arc<Memtable>> = {
            let mut r = self.retired.lock();
            let (done, keep) = std::mem::take(&mut *r)
                .into_iter()
                .partition(|m| Arc::strong_count(m) == 1);
            *r = keep;
            done
        };
        drop(done);
    }

    pub(super) fn flush_memtable(&self) -> Result<()> {
        self.check_writable()?;
        loop {
            // The background thread may fail (and poison the handle) while we wait for it.
            self.check_writable()?;
            {
                let mut w = self.writer.lock();
                let sv = self.current();
                // Forced flushes (synced writes after unlogged ones, `Db::flush`) respect the L0
                // stop like writes do, or they could pile up bands faster than compaction.
                let stopped = self.opts.background_compaction
                    && Self::l0_count(&sv) >= self.opts.l0_stop
                    && !sv.mem.is_empty();
                if sv.imm.is_none() && !stopped {
                    if sv.mem.is_empty() {
                        return Ok(());
                    }
                    if let Err(e) = self.rotate(&mut w) {
                        return self.fail(e);
                    }
                    break;
                }
            }
            self.wait_for_background()?;
        }
        {
            let _m = self.maint.lock();
            match self.flush_imm() {
                Ok(_) => {}
                Err(e) if is_nospace(&e) => {
                    // Compaction may use the reserve and free bands; then try again.
                    if let Some(p) = self.pick() {
                        self.run(&p)?;
                    }
                    self.flush_imm()?;
                }
                Err(e) => return self.fail(e),
            }
        }
        if self.opts.background_compaction {
            self.kick();
        } else {
            // Inline maintenance runs the compactions the new L0 band may have made due; a
            // forced flush (`Db::flush`, a synced write after unlogged ones) that skipped them
            // let L0 grow without bound until not even the reserve could merge it. The flush
            // is done: a compaction short of space reports it at the next write.
            match self.maintain() {
                Err(e) if !is_nospace(&e) => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }
}
