//! Scheduling maintenance: running due flushes and compactions, inline or on the background
//! thread.

use super::{is_nospace, Inner};
use crate::error::{Error, Result};
use std::sync::Arc;
use std::time::Duration;

impl Inner {
    /// Runs pending flushes and compactions until none is due.
    pub(super) fn maintain(&self) -> Result<bool> {
        let _m = self.maint.lock();
        {
            let mut ms = self.meta.lock();
            self.free_pending(&mut ms)?;
        }
        let mut progress = false;
        match self.flush_imm() {
            Ok(p) => progress |= p,
            Err(e) if is_nospace(&e) => {
                if let Some(p) = self.pick() {
                    self.run(&p)?;
                    progress = true;
                }
                progress |= self.flush_imm()?;
            }
            Err(e) => return self.fail(e),
        }
        for _ in 0..64 {
            if self.bg.lock().shutdown {
                break;
            }
            let Some(plan) = self.pick() else { break };
            match self.run(&plan) {
                Ok(()) => {
                    progress = true;
                    let mut ms = self.meta.lock();
                    self.free_pending(&mut ms)?;
                }
                Err(e) if is_nospace(&e) => {
                    if progress {
                        break;
                    }
                    return Err(e);
                }
                Err(e) => return self.fail(e),
            }
            // A new immutable memtable takes precedence over further compaction.
            if self.current().imm.is_some() {
                progress |= self.flush_imm()?;
            }
        }
        Ok(progress)
    }

    /// The flush thread (`Options::flush_during_compaction`): flushes each immutable memtable
    /// as soon as there is one, beside a running compaction, so that writers wait for a flush
    /// only, never for a compaction (RocksDB's flush threads). A flush it cannot make without
    /// the bands the compaction still needs is left to the background thread.
    pub(super) fn flush_loop(self: Arc<Self>) {
        loop {
            {
                let mut b = self.bg.lock();
                if b.shutdown {
                    break;
                }
                if self.current().imm.is_none() {
                    self.bg_cv.wait_for(&mut b, Duration::from_millis(20));
                }
                if b.shutdown {
                    break;
                }
            }
            if self.is_poisoned.load(std::sync::atomic::Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            match self.flush_imm_beside_compaction() {
                Ok(true) => {
                    self.done_cv.notify_all();
                    // A new L0 band may make a compaction due.
                    self.kick();
                }
                Ok(false) => {
                    if self.current().imm.is_some() {
                        // Waiting for room, or for the compaction to say what it needs.
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
                Err(e) => {
                    tracing::warn!("smrdb flush failed: {e}");
                    let _ = self.fail::<()>(e);
                    self.done_cv.notify_all();
                }
            }
        }
    }

    pub(super) fn bg_loop(self: Arc<Self>) {
        loop {
            {
                let mut b = self.bg.lock();
                if b.shutdown {
                    break;
                }
                if !b.work {
                    self.bg_cv.wait_for(&mut b, Duration::from_millis(20));
                }
                b.work = false;
                if b.shutdown {
                    break;
                }
            }
            self.free_retired();
            if self.poisoned.lock().is_some() {
                self.done_cv.notify_all();
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            let r = self.maintain();
            {
                let mut b = self.bg.lock();
                match r {
                    Ok(_) => b.nospace = None,
                    Err(Error::NoSpace(m)) => b.nospace = Some(m),
                    Err(e) => {
                        tracing::warn!("smrdb background work failed: {e}");
                        // A device error or corruption leaves the in-memory state unreliable:
                        // poison the handle so that writers and waiters see the failure
                        // instead of waiting for work that will never complete.
                        let _ = self.fail::<()>(e);
                    }
                }
            }
            self.done_cv.notify_all();
        }
        self.done_cv.notify_all();
    }
}
