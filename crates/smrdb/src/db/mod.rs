//! The engine, one file per job: the public handle (`api`), recovery at open (`recovery`),
//! the write path (`write`), reads (`read`), flushes (`flush`), compactions (`compact`), their
//! scheduling (`background`) and band bookkeeping (`zones`). This file holds the state they
//! share.

mod api;
mod background;
mod batch;
mod compact;
mod flush;
mod group;
mod metacopies;
mod read;
mod recovery;
mod write;
mod zones;

pub use api::Db;
pub use batch::WriteBatch;
pub use read::{ScanIter, Snapshot};

use crate::band::Band;
use crate::cache::BlockCache;
use crate::check::CheckReport;
use crate::error::{Error, Result};
use crate::io::Dev;
use crate::log;
use crate::manifest::Manifest;
use crate::memtable::Memtable;
use crate::options::{Mode, Options};
use crate::stats::{Counters, DbStats};
use crate::version::SuperVersion;
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Largest key accepted.
pub const MAX_KEY_LEN: usize = 64 << 10;

struct WriteState {
    last_seq: u64,
    buf: log::LogBuffer,
    /// Active log band and the next sector to write in it.
    active: Option<(u32, u64)>,
    /// Log bands of the mutable memtable.
    mem_zones: Vec<u32>,
    /// The unlogged write (`WriteOptions::disable_wal`) that the last gap marker written to
    /// the log names, 0 if none: a logged write after an unlogged one that is not yet in a
    /// band needs a marker before it (see `apply_batch`).
    marked_gap: u64,
    /// First sequence number of the latest unlogged write, 0 if none.
    last_unlogged: u64,
    /// The log tail slots (`log::tail`), when the layout has them.
    tail: Option<TailSlots>,
}

/// Where the records not yet in a log band are written at each write
/// (`Options::log_write_through`), and the generation of the newest slot written.
#[derive(Debug, Clone, Copy)]
struct TailSlots {
    lbas: [u64; 2],
    generation: u64,
}

struct MetaState {
    m: Manifest,
    free: BTreeSet<u32>,
    /// Bands dropped from the manifest whose zones are reset once no reader holds them.
    pending: Vec<Arc<Band>>,
    /// Log bands of the immutable memtable.
    imm_zones: Vec<u32>,
    slot_sectors: u64,
}

#[derive(Default)]
struct BgState {
    shutdown: bool,
    work: bool,
    nospace: Option<String>,
}

pub(crate) struct Inner {
    dev: Arc<Dev>,
    /// Organisation, from the superblock.
    mode: Mode,
    opts: Options,
    /// `Options::log_write_through` resolved for the device.
    log_write_through: bool,
    memtable_limit: u64,
    seq_zones: Vec<u32>,
    sv: RwLock<Arc<SuperVersion>>,
    writer: Mutex<WriteState>,
    /// Held by whoever flushes the immutable memtable (the flush thread, the background
    /// thread, a forced flush), so that one flush runs at a time.
    flush_lock: Mutex<()>,
    /// Free bands the running compaction still needs, which the flush thread leaves alone
    /// (`usize::MAX`: a compaction that counts on every free band, or has not said yet; 0
    /// when none runs).
    compaction_reserve: AtomicUsize,
    /// Writers waiting to be applied by a group's leader (`group`).
    writers: group::WriterQueue,
    sync_lock: Mutex<()>,
    durable_seq: AtomicU64,
    visible_seq: AtomicU64,
    meta: Mutex<MetaState>,
    maint: Mutex<()>,
    cache: Arc<BlockCache>,
    snapshots: Arc<Mutex<BTreeMap<u64, usize>>>,
    bg: Mutex<BgState>,
    bg_cv: Condvar,
    done_cv: Condvar,
    poisoned: Mutex<Option<String>>,
    /// Set while a write that only deletes waits for room: flushes and log bands may then use
    /// the reserve down to one band (deletes are how a full database gets space back).
    delete_pressure: AtomicBool,
    /// Fast-path mirror of `poisoned.is_some()`.
    is_poisoned: AtomicBool,
    closed: AtomicBool,
    /// Flushed memtables that readers may still hold; the background thread frees them.
    retired: Mutex<Vec<Arc<Memtable>>>,
    /// Recovery stopped the log early (at a gap marker of an unlogged write, or where a log
    /// band closed without a flush lost chunks): the log bands still hold records after it
    /// until `Db::open` flushes the replayed memtable.
    restart_log: bool,
    /// Damaged redundant copies (superblock, manifest) that opening found and rewrote from
    /// their good twins, and damaged log tail slots it passed over; `Db::check` reports them.
    repaired_at_open: Vec<String>,
    pub(crate) counters: Counters,
}

/// Called by a low-space merge with the finished output bands, the next key to write, and
/// the zones allocated but not yet recorded.
type Checkpoint<'a> = dyn FnMut(&mut Vec<Band>, &[u8], &mut Vec<u32>) -> Result<()> + 'a;

fn is_nospace(e: &Error) -> bool {
    matches!(e, Error::NoSpace(_))
}

impl Inner {
    pub(super) fn current(&self) -> Arc<SuperVersion> {
        self.sv.read().clone()
    }

    pub(super) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed("closed".into()));
        }
        Ok(())
    }

    pub(super) fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if !self.is_poisoned.load(Ordering::Acquire) {
            return Ok(());
        }
        if let Some(p) = self.poisoned.lock().clone() {
            return Err(Error::Closed(format!(
                "refusing writes after an I/O failure: {p}"
            )));
        }
        Ok(())
    }

    /// Records a failure that leaves the in-memory state unreliable for further writes.
    pub(super) fn fail<T>(&self, e: Error) -> Result<T> {
        if matches!(e, Error::Device(_)) || e.is_corruption() {
            let mut p = self.poisoned.lock();
            if p.is_none() {
                *p = Some(e.to_string());
            }
            self.is_poisoned.store(true, Ordering::Release);
        }
        Err(e)
    }

    pub(super) fn kick(&self) {
        self.bg.lock().work = true;
        self.bg_cv.notify_all();
    }

    pub(super) fn stats(&self) -> DbStats {
        let sv = self.current();
        let ms = self.meta.lock();
        let free = self.free_bands(&ms);
        let log_zones = ms.m.log_zones.len();
        drop(ms);
        crate::stats::collect(self, &sv, free, log_zones)
    }

    pub(crate) fn dev(&self) -> &Dev {
        &self.dev
    }

    pub(crate) fn dev_arc(&self) -> Arc<Dev> {
        self.dev.clone()
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    pub(crate) fn opts(&self) -> &Options {
        &self.opts
    }

    pub(crate) fn last_seq(&self) -> u64 {
        self.visible_seq.load(Ordering::Acquire)
    }

    pub(super) fn check(&self) -> Result<CheckReport> {
        let _m = self.maint.lock();
        // No flush in flight either: its bands are taken from the free list before the
        // manifest names them.
        let _f = self.flush_lock.lock();
        let sv = self.current();
        let ms = self.meta.lock();
        let manifest = ms.m.clone();
        let free: Vec<u32> = ms.free.iter().copied().collect();
        drop(ms);
        let mut rep = crate::check::check(self, &sv, &manifest, &free, &self.seq_zones)?;
        rep.repaired.clone_from(&self.repaired_at_open);
        Ok(rep)
    }
}
