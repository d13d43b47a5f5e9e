//! The public handle: [`Db`] and its methods, which delegate to the engine's shared state.

use super::{Inner, ScanIter, Snapshot, WriteBatch};
use crate::check::CheckReport;
use crate::compaction;
use crate::error::{Error, Result};
use crate::options::{FormatOptions, Mode, Options, WriteOptions};
use crate::stats::DbStats;
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tegula_device::ZonedDevice;

/// An SMRDB database on a zoned device. `Send + Sync`: share it by reference or in an `Arc`.
pub struct Db {
    inner: Arc<Inner>,
    /// The background threads: compaction, and flushes (`Options::flush_during_compaction`).
    bg: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dev", &self.inner.dev).finish()
    }
}

impl Db {
    /// Creates a database on a device that holds none (its sequential zones empty), in the
    /// organisation `format` names. Fails with [`Error::AlreadyExists`] on a device that holds
    /// an SMRDB database (and with `Corruption` on a damaged superblock), writing nothing.
    pub fn create(
        device: Arc<dyn ZonedDevice>,
        format: FormatOptions,
        opts: Options,
    ) -> Result<Db> {
        Self::start(Inner::create(device, format, opts)?)
    }

    /// Opens the database on the device, in the organisation its superblock records, and
    /// recovers it (manifest, then log replay; zones written but not recorded are reset).
    /// Fails with [`Error::NotFound`] on a device without a database, writing nothing.
    pub fn open(device: Arc<dyn ZonedDevice>, opts: Options) -> Result<Db> {
        Self::start(Inner::open(device, opts)?)
    }

    /// Finishes a recovery stopped at an unlogged write and starts the background thread.
    fn start(inner: Inner) -> Result<Db> {
        let inner = Arc::new(inner);
        if inner.restart_log {
            // Put what was replayed into a band and drop the log bands, whose records after
            // the gap (or the cut) must never be replayed (a crash in between repeats the same
            // recovery).
            let mut w = inner.writer.lock();
            inner.rotate(&mut w)?;
            drop(w);
            inner.flush_imm()?;
        } else if !inner.writer.lock().buf.is_empty() {
            // Records recovered from a log tail slot (and from chunks past a saved write
            // pointer) go to the log band and are made durable before anything else is
            // written: the chunk rewrites the sectors after the saved write pointer, so a
            // second crash before a flush would leave neither the old chain the slot names nor
            // a saved pointer past the new chunk.
            inner.sync_all()?;
        }
        let mut bg = Vec::new();
        if inner.opts.background_compaction {
            let i = inner.clone();
            let h = std::thread::Builder::new()
                .name("smrdb-compaction".into())
                .spawn(move || i.bg_loop())
                .map_err(|e| Error::InvalidArgument(format!("cannot start thread: {e}")))?;
            bg.push(h);
            if inner.opts.flush_during_compaction {
                let i = inner.clone();
                let spawned = std::thread::Builder::new()
                    .name("smrdb-flush".into())
                    .spawn(move || i.flush_loop());
                match spawned {
                    Ok(h) => bg.push(h),
                    Err(e) => {
                        // Stop the compaction thread before giving up.
                        inner.bg.lock().shutdown = true;
                        inner.bg_cv.notify_all();
                        for h in bg {
                            let _ = h.join();
                        }
                        return Err(Error::InvalidArgument(format!("cannot start thread: {e}")));
                    }
                }
            }
        }
        let db = Db {
            inner,
            bg: Mutex::new(bg),
        };
        db.inner.kick();
        Ok(db)
    }

    /// Stores `value` under `key`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(key.len() + value.len() + 12);
        b.put(key, value);
        self.write(b, WriteOptions::default())
    }

    /// Removes `key` (writes a tombstone).
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b, WriteOptions::default())
    }

    /// Whether each write's log records reach the device before it returns
    /// ([`Options::log_write_through`], resolved for this device).
    pub fn log_write_through(&self) -> bool {
        self.inner.log_write_through
    }

    /// The options the engine runs with: those it was opened with, the L0 limits fitted to
    /// the drive ([`Options::fitted_to_bands`]).
    pub fn options(&self) -> &Options {
        self.inner.opts()
    }

    /// Applies a batch atomically; with `sync` it is durable when this returns.
    pub fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        self.inner.write(batch, opts)
    }

    /// The newest value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.check_open()?;
        self.inner
            .get(key, self.inner.visible_seq.load(Ordering::Acquire))
    }

    /// A snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        *self.inner.snapshots.lock().entry(seq).or_insert(0) += 1;
        Snapshot {
            seq,
            list: self.inner.snapshots.clone(),
        }
    }

    /// The value of `key` as of `snap`.
    pub fn get_at(&self, snap: &Snapshot, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.check_open()?;
        self.inner.get(key, snap.seq)
    }

    /// Iterates keys in `[start, end)` (to the last key when `end` is `None`) in order, over a
    /// consistent view taken now.
    pub fn scan(&self, start: &[u8], end: Option<&[u8]>) -> Result<ScanIter> {
        self.inner.check_open()?;
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        self.inner.scan(start, end, seq)
    }

    /// Iterates keys in `[start, end)` as of `snap`.
    pub fn scan_at(&self, snap: &Snapshot, start: &[u8], end: Option<&[u8]>) -> Result<ScanIter> {
        self.inner.check_open()?;
        self.inner.scan(start, end, snap.seq)
    }

    /// Writes the memtable to a band and resets the log bands it covered.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush_memtable()
    }

    /// Flushes the memtable, then merges every band into non-overlapping bands (the paper's
    /// manual full compaction).
    pub fn compact_all(&self) -> Result<()> {
        // The flush may use the reserve: the compaction that follows gives bands back.
        self.inner.delete_pressure.store(true, Ordering::Release);
        let r = self.inner.flush_memtable();
        self.inner.delete_pressure.store(false, Ordering::Release);
        r?;
        self.inner.compact_all()
    }

    /// Statistics.
    pub fn stats(&self) -> DbStats {
        self.inner.stats()
    }

    /// Verifies every checksum and invariant; problems are listed in the report.
    pub fn check(&self) -> Result<CheckReport> {
        self.inner.check()
    }

    /// Waits until no flush or compaction is pending (background mode) or runs them (inline).
    pub fn wait_for_compactions(&self) -> Result<()> {
        if self.inner.opts.background_compaction {
            loop {
                self.inner.check_writable()?;
                let idle = {
                    let sv = self.inner.current();
                    let ptrs = self.inner.meta.lock().m.compact_pointers.clone();
                    sv.imm.is_none()
                        && !compaction::needed(self.inner.mode, &self.inner.opts, &sv.bands, &ptrs)
                };
                if idle {
                    return Ok(());
                }
                if let Some(e) = self.inner.bg.lock().nospace.clone() {
                    return Err(Error::NoSpace(e));
                }
                self.inner.kick();
                std::thread::sleep(Duration::from_millis(2));
            }
        } else {
            self.inner.maintain().map(|_| ())
        }
    }

    /// The organisation of the database (recorded in its superblock at creation).
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// The underlying device.
    pub fn device(&self) -> Arc<dyn ZonedDevice> {
        self.inner.dev.dev.clone()
    }

    fn stop_bg(&self) {
        {
            let mut b = self.inner.bg.lock();
            b.shutdown = true;
        }
        self.inner.bg_cv.notify_all();
        for h in std::mem::take(&mut *self.bg.lock()) {
            let _ = h.join();
        }
    }

    /// Stops background work and makes everything written durable (writes made without the
    /// log are flushed to a band).
    pub fn close(self) -> Result<()> {
        let flushed = self.inner.flush_unlogged();
        self.stop_bg();
        let r = flushed.and_then(|_| self.inner.sync_all());
        self.inner.closed.store(true, Ordering::Release);
        r
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let open = !self.inner.closed.load(Ordering::Acquire);
        if open && self.inner.poisoned.lock().is_none() {
            if let Err(e) = self.inner.flush_unlogged() {
                tracing::debug!("smrdb drop: {e}");
            }
        }
        self.stop_bg();
        if !self.inner.closed.swap(true, Ordering::AcqRel) && self.inner.poisoned.lock().is_none() {
            if let Err(e) = self.inner.sync_all() {
                tracing::debug!("smrdb drop: {e}");
            }
        }
    }
}
