//! Executing compaction plans: trivial moves, merges into new bands (checkpointed when space
//! is low), and the manual full compaction.

use super::{is_nospace, Inner, MetaState};
use crate::band::{Band, BandIter};
use crate::compaction::input::{InputIter, ReadAheadPool};
use crate::compaction::{self, Plan};
use crate::error::{Error, Result};
use crate::io::IoKind;
use crate::iter::{Merge, MergeRefs, Source};
use crate::manifest::BandMeta;
use crate::options::Mode;
use crate::version::{sort_newest_first, VBand};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Fewest free bands a checkpointed compaction starts with on a thin-provisioned device: the
/// output band being written and the next one, whose allocation checkpoints the first.
const LOW_SPACE_MIN_BANDS: usize = 2;

impl Inner {
    pub(super) fn pick(&self) -> Option<Plan> {
        let sv = self.current();
        let ptrs = self.meta.lock().m.compact_pointers.clone();
        compaction::pick(self.mode, &self.opts, &sv.bands, &ptrs)
    }

    /// Executes one compaction plan.
    pub(super) fn run(&self, plan: &Plan) -> Result<()> {
        let sv = self.current();
        let inputs: Vec<VBand> = sv
            .bands
            .iter()
            .filter(|b| plan.inputs.contains(&b.id()))
            .cloned()
            .collect();
        if inputs.len() != plan.inputs.len() || inputs.is_empty() {
            return Ok(());
        }
        if plan.trivial_move {
            let mut ms = self.meta.lock();
            let saved = ms.m.clone();
            for b in ms.m.bands.iter_mut() {
                if plan.inputs.contains(&b.id) {
                    b.level = plan.output_level;
                }
            }
            self.set_pointer(&mut ms, plan);
            if let Err(e) = self.commit(&mut ms) {
                ms.m = saved;
                return Err(e);
            }
            self.relevel(&plan.inputs, plan.output_level);
            self.counters.trivial_moves.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let _reserving = Reserving::new(&self.compaction_reserve);
        let low_space = {
            let ms = self.meta.lock();
            let need = self.output_bands(&inputs);
            let free = self.free_bands(&ms);
            if free >= need {
                false
            } else if self.dev.space().is_some() && free >= LOW_SPACE_MIN_BANDS {
                // A thin-provisioned device near full: merge checkpointed, freeing the inputs
                // consumed so far whenever the free bands run short (see `merge_into`).
                true
            } else {
                return Err(Error::NoSpace(format!(
                    "compaction of {} bands needs {need} free bands; {free} free",
                    inputs.len(),
                )));
            }
        };
        let others: Vec<BandMeta> = sv
            .bands
            .iter()
            .filter(|b| !plan.inputs.contains(&b.id()))
            .map(|b| b.band.meta.clone())
            .collect();
        drop(sv);
        if low_space {
            self.counters
                .low_space_compactions
                .fetch_add(1, Ordering::Relaxed);
        }
        self.merge_into(inputs, &others, plan.output_level, Some(plan), low_space)
    }

    /// Free bands a merge of `inputs` may need: their sectors in whole bands, plus one for
    /// a different packing (never more than one per input plus one). Counting bands instead
    /// of sectors made a merge of a few small L0 bands (forced flushes of small memtables)
    /// need more than the reserve, so that no compaction could ever run again.
    fn output_bands(&self, inputs: &[VBand]) -> usize {
        let sectors: u64 = inputs.iter().map(|b| b.band.meta.sectors).sum();
        let bands = sectors.div_ceil(self.dev.zone_sectors.max(1)) as usize + 1;
        bands.min(inputs.len() + 1)
    }

    pub(super) fn set_pointer(&self, ms: &mut MetaState, plan: &Plan) {
        if let Some((level, key)) = &plan.pointer {
            let l = *level as usize;
            if ms.m.compact_pointers.len() <= l {
                ms.m.compact_pointers.resize(l + 1, Vec::new());
            }
            ms.m.compact_pointers[l] = key.clone();
        }
    }

    /// Merges `inputs` into new bands at `level` and swaps them in.
    ///
    /// With `low_space`, the merge checkpoints whenever it runs short of free bands: the
    /// finished output bands are recorded in the manifest together with the removal of every
    /// input already consumed entirely, whose zone is then reset and reused. Tombstones are
    /// kept in that mode, since an input still live after a checkpoint may hold an older
    /// version of a key whose tombstone was already written. Under LOC, checkpointed outputs
    /// are recorded at level 0 (where overlaps are allowed) and moved to `level` at the end.
    pub(super) fn merge_into(
        &self,
        inputs: Vec<VBand>,
        others: &[BandMeta],
        level: u8,
        plan: Option<&Plan>,
        low_space: bool,
    ) -> Result<()> {
        let t0 = Instant::now();
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        if self.opts.compaction_read_ahead_bytes > 0 {
            let pool = ReadAheadPool::new(
                self.opts.compaction_read_ahead_bytes as u64,
                self.opts.compaction_read_ahead_budget as u64,
                self.opts.read_ahead_bytes as u64,
            );
            for b in &inputs {
                sources.push(Box::new(InputIter::new(
                    b.band.clone(),
                    self.dev.clone(),
                    pool.clone(),
                    true,
                )));
            }
        } else {
            for b in &inputs {
                sources.push(Box::new(BandIter::new(
                    b.band.clone(),
                    self.dev.clone(),
                    &[],
                    IoKind::Compaction,
                    self.opts.read_ahead_bytes,
                    true,
                )?));
            }
        }
        let all_ids: Vec<u64> = inputs.iter().map(|b| b.id()).collect();
        let need = self.output_bands(&inputs);
        // Inputs still recorded in the manifest (a checkpoint takes consumed ones out).
        let mut live: Vec<Option<VBand>> = inputs.into_iter().map(Some).collect();
        let mut merge = Merge::new(sources)?;
        let mut zones = Vec::new();
        let drop_tomb = |k: &[u8]| !low_space && !others.iter().any(|o| o.covers(k));
        let cp_level = if self.mode == Mode::Loc && level > 0 {
            0
        } else {
            level
        };
        let mut recorded: Vec<u64> = Vec::new();
        let mut cp = |out: &mut Vec<Band>, next: &[u8], zones: &mut Vec<u32>| -> Result<()> {
            let done: Vec<VBand> = live
                .iter_mut()
                .filter(|b| {
                    b.as_ref()
                        .is_some_and(|b| b.band.meta.largest.as_slice() < next)
                })
                .filter_map(Option::take)
                .collect();
            let new: Vec<Band> = std::mem::take(out);
            let ids: Vec<u64> = done.iter().map(|b| b.id()).collect();
            let mut ms = self.meta.lock();
            let saved = ms.m.clone();
            ms.m.bands.retain(|b| !ids.contains(&b.id));
            ms.m.bands.extend(new.iter().map(|b| {
                let mut m = b.meta.clone();
                m.level = cp_level;
                m
            }));
            if let Err(e) = self.commit(&mut ms) {
                ms.m = saved;
                return Err(e);
            }
            recorded.extend(new.iter().map(|b| b.meta.id));
            self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
            zones.retain(|z| !new.iter().any(|b| b.meta.zone == *z));
            self.swap_bands(&ids, new, cp_level);
            ms.pending.extend(done.into_iter().map(|b| b.band));
            self.free_pending(&mut ms)
        };
        let r = self.write_bands(
            &mut MergeRefs::new(&mut merge),
            level,
            IoKind::Compaction,
            0,
            need,
            &drop_tomb,
            &mut zones,
            if low_space { Some(&mut cp) } else { None },
        );
        let bands =
            match r.and_then(|b| self.dev.flush_zones(IoKind::Compaction, &zones).map(|_| b)) {
                Ok(b) => b,
                Err(e) => {
                    if is_nospace(&e) || e.is_corruption() {
                        self.abandon(&zones);
                    }
                    return Err(e);
                }
            };
        drop(merge);
        let ids: Vec<u64> = live.iter().flatten().map(|b| b.id()).collect();
        let mut ms = self.meta.lock();
        let saved = ms.m.clone();
        ms.m.bands.retain(|b| !ids.contains(&b.id));
        for b in ms.m.bands.iter_mut() {
            if recorded.contains(&b.id) {
                b.level = level;
            }
        }
        ms.m.bands.extend(bands.iter().map(|b| b.meta.clone()));
        if let Some(p) = plan {
            self.set_pointer(&mut ms, p);
        }
        if let Err(e) = self.commit(&mut ms) {
            ms.m = saved;
            return Err(e);
        }
        self.swap_bands(&ids, bands, level);
        if !recorded.is_empty() {
            self.relevel(&recorded, level);
        }
        ms.pending
            .extend(live.into_iter().flatten().map(|b| b.band));
        let _ = all_ids;
        self.counters.compactions.fetch_add(1, Ordering::Relaxed);
        self.counters
            .compaction_wall_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        drop(ms);
        Ok(())
    }

    /// Installs a new reader view without the bands `remove` and with `add` at `level`.
    pub(super) fn swap_bands(&self, remove: &[u64], add: Vec<Band>, level: u8) {
        let mut svw = self.sv.write();
        let mut n = (**svw).clone();
        let mut all: Vec<VBand> = n
            .bands
            .iter()
            .filter(|b| !remove.contains(&b.id()))
            .cloned()
            .collect();
        all.extend(add.into_iter().map(|b| VBand {
            level,
            band: Arc::new(b),
        }));
        sort_newest_first(&mut all);
        n.bands = Arc::new(all);
        *svw = Arc::new(n);
    }

    /// Sets the level of bands `ids` in the reader view (the manifest already says so).
    pub(super) fn relevel(&self, ids: &[u64], level: u8) {
        let mut svw = self.sv.write();
        let mut n = (**svw).clone();
        let all: Vec<VBand> = n
            .bands
            .iter()
            .map(|b| {
                let mut b = b.clone();
                if ids.contains(&b.id()) {
                    b.level = level;
                }
                b
            })
            .collect();
        n.bands = Arc::new(all);
        *svw = Arc::new(n);
    }

    pub(super) fn compact_all(&self) -> Result<()> {
        self.check_writable()?;
        let _m = self.maint.lock();
        let _reserving = Reserving::new(&self.compaction_reserve);
        let inputs: Vec<VBand> = self.current().bands.iter().cloned().collect();
        if inputs.is_empty() {
            return Ok(());
        }
        // Without room for a full copy, checkpoint as input bands are consumed.
        let low_space = {
            let ms = self.meta.lock();
            let data: u64 = inputs.iter().map(|b| b.band.meta.sectors).sum();
            self.free_bands(&ms) as u64 * self.dev.zone_sectors < data + 2 * self.dev.zone_sectors
        };
        let r = self.merge_into(inputs, &[], 1, None, low_space);
        {
            let mut ms = self.meta.lock();
            self.free_pending(&mut ms)?;
        }
        match r {
            Err(e) if !is_nospace(&e) => self.fail(e),
            other => other,
        }
    }
}

/// Tells the flush thread a compaction is running: every free band is the compaction's until
/// it says how many it still needs (`write_bands`, at each output band), and none once it
/// ends, however it ends.
struct Reserving<'a>(&'a AtomicUsize);

impl<'a> Reserving<'a> {
    fn new(reserve: &'a AtomicUsize) -> Self {
        reserve.store(usize::MAX, Ordering::Release);
        Reserving(reserve)
    }
}

impl Drop for Reserving<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}
