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
        let mut enc = ms.m.encode();
        self.dev.pad(&mut enc);
        let secs = enc.len() as u64 / self.dev.ss;
        if secs > ms.slot_sectors {
            ms.m.generation -= 1;
            return Err(Error::NoSpace(format!(
                "manifest of {} sectors exceeds its slot of {}",
                secs, ms.slot_sectors
            )));
        }
        let lba = 1 + (ms.m.generation % 2) * ms.slot_sectors;
        let r = self
            .dev
            .dev
            .write(lba, &enc)
            .map_err(Error::Device)
            .and_then(|d| {
                self.dev
                    .counters
                    .meta_bytes
                    .fetch_add(enc.len() as u64, Ordering::Relaxed);
                let _ = d;
                self.dev.flush(IoKind::Meta)
            });
        if let Err(e) = r {
            return self.fail(e);
        }
        Ok(())
    }

    pub(super) fn pressure(&self) -> bool {
        self.delete_pressure.load(Ordering::Acquire)
    }

    /// Free bands a new log band must leave: the reserve, or one band (for the flush that
    /// frees the log bands again) while a write that only deletes waits for room.
    pub(super) fn log_keep(&self) -> usize {
        if self.pressure() {
            1
        } else {
            self.opts.reserve_bands as usize
        }
    }

    /// Free bands a memtable flush must leave: the reserve, or none while deletes or a full
    /// compaction need room (a flush resets its log bands right after, giving bands back).
    pub(super) fn flush_keep(&self) -> usize {
        if self.pressure() {
            0
        } else {
            self.opts.reserve_bands as usize
        }
    }

    /// Takes a free band, leaving at least `keep` free.
    pub(super) fn alloc(&self, ms: &mut MetaState, keep: usize) -> Result<u32> {
        if ms.free.len() <= keep {
            return Err(Error::NoSpace(format!(
                "{} free bands, {} reserved for compaction",
                ms.free.len(),
                keep
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
