//! Band bookkeeping: manifest commits, free-band allocation with its reserve, and the reset
//! of zones that no longer hold anything.

use super::{Inner, MetaState};
use crate::error::{Error, Result};
use crate::io::IoKind;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Inner {
    pub(super) fn commit(&self, ms: &mut MetaState) -> Result<()> {
        ms.m.generation += 1;
        let r = super::metacopies::write_manifest_copies(&self.dev, &ms.m, ms.slot_sectors)
            .and_then(|secs| {
                let copies = if secs <= ms.slot_sectors / 2 { 2 } else { 1 };
                self.dev
                    .counters
                    .meta_bytes
                    .fetch_add(copies * secs * self.dev.ss, Ordering::Relaxed);
                // The manifest's slot only: the bands it lists were flushed before it.
                let lba = 1 + (ms.m.generation % 2) * ms.slot_sectors;
                let zs = self.dev.zone_stride;
                let slot: Vec<u32> =
                    ((lba / zs) as u32..=((lba + ms.slot_sectors - 1) / zs) as u32).collect();
                self.dev.flush_zones(IoKind::Meta, &slot)
            });
        match r {
            Err(Error::NoSpace(m)) => {
                ms.m.generation -= 1;
                Err(Error::NoSpace(m))
            }
            Err(e) => self.fail(e),
            Ok(()) => Ok(()),
        }
    }

    pub(super) fn pressure(&self) -> bool {
        self.delete_pressure.load(Ordering::Acquire)
    }

    /// Free bands: the empty zones, and on a thin-provisioned device (one that backs a zone
    /// with media only as it is written, see [`tegula_device::ZoneSpace`]) no more than its
    /// free media holds in full bands, each with the device's allocation overhead, less one
    /// for the active log band (it takes media as it grows, up to a band).
    pub(super) fn free_bands(&self, ms: &MetaState) -> usize {
        let slots = ms.free.len();
        match self.dev.space() {
            None => slots,
            Some(s) => {
                let media = s.full_zones(self.dev.zone_sectors);
                let log = u64::from(!ms.m.log_zones.is_empty());
                let media = usize::try_from(media.saturating_sub(log)).unwrap_or(usize::MAX);
                slots.min(media)
            }
        }
    }

    /// Free bands kept back for compaction: `reserve_bands`; on a thin-provisioned device at
    /// least the L0 compaction trigger plus two. There a compaction short of room for all its
    /// outputs runs checkpointed (inputs consumed so far are freed as it goes), and the one
    /// that needs the most room that way is the L0 compaction: every L0 band spans the key
    /// range of random writes, so none is consumed before the end, while one output band is
    /// being written and one band of the next level is partly consumed.
    pub(super) fn reserve(&self) -> usize {
        let r = self.opts.reserve_bands as usize;
        if self.dev.space().is_some() {
            r.max(self.opts.l0_compaction_trigger + 2)
        } else {
            r
        }
    }

    /// Free bands a new log band must leave: the reserve, or one band (for the flush that
    /// frees the log bands again) while a write that only deletes waits for room.
    pub(super) fn log_keep(&self) -> usize {
        if self.pressure() {
            1
        } else {
            self.reserve()
        }
    }

    /// Free bands a memtable flush must leave: the reserve, or none while deletes or a full
    /// compaction need room (a flush resets its log bands right after, giving bands back).
    pub(super) fn flush_keep(&self) -> usize {
        if self.pressure() {
            0
        } else {
            self.reserve()
        }
    }

    /// Takes a free band, leaving at least `keep` free.
    pub(super) fn alloc(&self, ms: &mut MetaState, keep: usize) -> Result<u32> {
        let free = self.free_bands(ms);
        if free <= keep {
            return Err(Error::NoSpace(format!(
                "{free} free bands, {keep} reserved for compaction"
            )));
        }
        ms.free
            .pop_first()
            .ok_or_else(|| Error::NoSpace("no free band".into()))
    }

    /// Returns zones that were allocated but not recorded (after a failed flush/compaction).
    pub(super) fn abandon(&self, zones: &[u32]) {
        if zones.is_empty() {
            return;
        }
        let mut ms = self.meta.lock();
        for &z in zones {
            if self.dev.reset(z).is_ok() {
                ms.free.insert(z);
            }
        }
    }

    pub(super) fn free_pending(&self, ms: &mut MetaState) -> Result<()> {
        let mut keep = Vec::new();
        for b in std::mem::take(&mut ms.pending) {
            if Arc::strong_count(&b) == 1 {
                if let Err(e) = self.dev.reset(b.meta.zone) {
                    ms.pending.push(b);
                    ms.pending.extend(keep);
                    return self.fail(e);
                }
                ms.free.insert(b.meta.zone);
            } else {
                keep.push(b);
            }
        }
        ms.pending = keep;
        Ok(())
    }
}
