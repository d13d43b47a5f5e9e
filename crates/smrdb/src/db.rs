//! The engine: open and recovery, the write path with its log and group commit, reads,
//! flushes, compactions and the background thread.

use crate::band::{Band, BandIter, BandWriter, WriterConfig};
use crate::cache::BlockCache;
use crate::compaction::{self, Plan};
use crate::error::{Error, Result};
use crate::io::{Dev, IoKind};
use crate::iter::{IterRefs, MemSource, Merge, MergeRefs, RefSource, Source};
use crate::log;
use crate::manifest::{BandMeta, Manifest};
use crate::memtable::Memtable;
use crate::options::{Mode, Options, WriteOptions};
use crate::stats::{CheckReport, Counters, DbStats};
use crate::superblock::Superblock;
use crate::version::{sort_newest_first, SuperVersion, VBand};
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tegula_device::{ZoneCondition, ZoneFilter, ZonedDevice};

/// Largest key accepted.
pub const MAX_KEY_LEN: usize = 64 << 10;

/// A group of puts and deletes applied atomically. Operations are kept encoded as the log
/// stores them (`kind u8 | bytes key | [bytes value]`), so applying a batch copies it once
/// into the log buffer and once into the memtable.
#[derive(Debug, Clone, Default)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: usize,
    bytes: usize,
    max_key: usize,
    puts: usize,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }
    /// An empty batch with room for `bytes` of encoded operations.
    pub fn with_capacity(bytes: usize) -> Self {
        WriteBatch {
            rep: Vec::with_capacity(bytes),
            ..Self::default()
        }
    }
    /// Adds a put.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.bytes += key.len() + value.len();
        self.max_key = self.max_key.max(key.len());
        self.count += 1;
        self.puts += 1;
        log::encode_op(&mut self.rep, key, Some(value));
    }
    /// Adds a delete.
    pub fn delete(&mut self, key: &[u8]) {
        self.bytes += key.len();
        self.max_key = self.max_key.max(key.len());
        self.count += 1;
        log::encode_op(&mut self.rep, key, None);
    }
    /// Number of operations.
    pub fn len(&self) -> usize {
        self.count
    }
    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.count = 0;
        self.bytes = 0;
        self.max_key = 0;
        self.puts = 0;
    }
    /// The operations in order: `(key, Some(value))` for a put, `(key, None)` for a delete.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        log::OpIter::new(&self.rep)
    }
}

/// A consistent point-in-time view for [`Db::get_at`] and [`Db::scan_at`]. Compaction keeps
/// the versions it needs while it lives.
#[derive(Debug)]
pub struct Snapshot {
    seq: u64,
    list: Arc<Mutex<BTreeMap<u64, usize>>>,
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

struct WriteState {
    last_seq: u64,
    buf: log::LogBuffer,
    /// Active log band and the next sector to write in it.
    active: Option<(u32, u64)>,
    /// Log bands of the mutable memtable.
    mem_zones: Vec<u32>,
    /// The unlogged write (`WriteOptions::disable_wal`) that the last gap marker written to
    /// the log names, 0 if none: a logged write after an unlogged one that is not yet in a
    /// band needs a marker before it (see `write_inner`).
    marked_gap: u64,
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
    opts: Options,
    memtable_limit: u64,
    seq_zones: Vec<u32>,
    sv: RwLock<Arc<SuperVersion>>,
    writer: Mutex<WriteState>,
    sync_lock: Mutex<()>,
    durable_seq: AtomicU64,
    visible_seq: AtomicU64,
    meta: Mutex<MetaState>,
    maint: Mutex<()>,
    cache: BlockCache,
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
    /// Recovery stopped at this unlogged write (a gap marker): the log bands still hold
    /// records after it until `Db::open` flushes the replayed memtable.
    recovered_gap: Option<u64>,
    pub(crate) counters: Counters,
}

/// Called by a low-space merge with the finished output bands, the next key to write, and
/// the zones allocated but not yet recorded.
type Checkpoint<'a> = dyn FnMut(&mut Vec<Band>, &[u8], &mut Vec<u32>) -> Result<()> + 'a;

/// An SMRDB database on a zoned device. `Send + Sync`: share it by reference or in an `Arc`.
pub struct Db {
    inner: Arc<Inner>,
    bg: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dev", &self.inner.dev).finish()
    }
}

fn is_nospace(e: &Error) -> bool {
    matches!(e, Error::NoSpace(_))
}

impl Db {
    /// Creates a database on an empty device, or recovers the one on it (manifest, then log
    /// replay; zones written but not recorded are reset).
    pub fn open(device: Arc<dyn ZonedDevice>, opts: Options) -> Result<Db> {
        let inner = Arc::new(Inner::open(device, opts)?);
        if inner.recovered_gap.is_some() {
            // Put what was replayed into a band and drop the log bands, whose records after
            // the gap must never be replayed (a crash in between repeats the same recovery).
            let mut w = inner.writer.lock();
            inner.rotate(&mut w)?;
            drop(w);
            inner.flush_imm()?;
        }
        let bg = if inner.opts.background_compaction {
            let i = inner.clone();
            let h = std::thread::Builder::new()
                .name("smrdb-compaction".into())
                .spawn(move || i.bg_loop())
                .map_err(|e| Error::InvalidArgument(format!("cannot start thread: {e}")))?;
            Some(h)
        } else {
            None
        };
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
                    sv.imm.is_none() && !compaction::needed(&self.inner.opts, &sv.bands, &ptrs)
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
        if let Some(h) = self.bg.lock().take() {
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
    fn open(device: Arc<dyn ZonedDevice>, opts: Options) -> Result<Inner> {
        let dev = Arc::new(Dev::new(device));
        let info = dev.dev.info();
        if info.zone_sectors == 0 || info.conventional_zones == 0 {
            return Err(Error::Unsupported(
                "SMRDB needs a zoned device with at least one conventional zone".into(),
            ));
        }
        if opts.block_size == 0 || opts.write_chunk_bytes == 0 || opts.l0_compaction_trigger == 0 {
            return Err(Error::InvalidArgument(
                "block_size, write_chunk_bytes and l0_compaction_trigger must be positive".into(),
            ));
        }
        let zones = dev.dev.report_zones(ZoneFilter::All);
        let seq_zones: Vec<u32> = zones
            .iter()
            .filter(|z| z.zone_type.is_sequential())
            .map(|z| z.index)
            .collect();
        if seq_zones.len() < opts.reserve_bands as usize + 4 {
            return Err(Error::Unsupported(format!(
                "{} sequential zones; SMRDB needs at least {}",
                seq_zones.len(),
                opts.reserve_bands + 4
            )));
        }
        let conv_sectors = info.conventional_zones as u64 * info.zone_sectors;
        let slot_sectors = (conv_sectors - 1) / 2;
        if slot_sectors == 0 {
            return Err(Error::Unsupported("conventional area too small".into()));
        }
        let sector0 = dev.read_lba(0, 1)?;
        let sb = Superblock::decode(&sector0).map_err(|w| Error::corruption(0, 0, w))?;
        let mode_here = opts.mode;
        let manifest = match sb {
            None => {
                if zones
                    .iter()
                    .any(|z| z.zone_type.is_sequential() && z.condition != ZoneCondition::Empty)
                {
                    return Err(Error::Unsupported(
                        "the device holds data but no SMRDB superblock".into(),
                    ));
                }
                let sb = Superblock {
                    sector_size: dev.ss as u32,
                    zone_sectors: info.zone_sectors,
                    zones: info.zones,
                    conventional_zones: info.conventional_zones,
                    slot_sectors,
                    mode: opts.mode,
                };
                let mut b = sb.encode();
                dev.pad(&mut b);
                dev.dev.write(0, &b).map_err(Error::Device)?;
                dev.flush(IoKind::Meta)?;
                None
            }
            Some(sb) => {
                if sb.sector_size as u64 != dev.ss
                    || sb.zone_sectors != info.zone_sectors
                    || sb.zones != info.zones
                    || sb.conventional_zones != info.conventional_zones
                {
                    return Err(Error::Unsupported(format!(
                        "database was laid out for another geometry: {sb:?}"
                    )));
                }
                if sb.mode != mode_here {
                    return Err(Error::InvalidArgument(format!(
                        "database was created in mode {:?}, opened as {:?}",
                        sb.mode, mode_here
                    )));
                }
                Some(load_manifest(&dev, sb.slot_sectors)?)
            }
        };
        let fresh = manifest.is_none();
        let m = manifest.unwrap_or_default();
        let zone_bytes = dev.zone_bytes();
        let memtable_limit = opts
            .memtable_bytes
            .unwrap_or(zone_bytes - (zone_bytes / 64).clamp(64 << 10, zone_bytes / 2))
            .max(4096);
        // Open bands.
        let mut bands = Vec::with_capacity(m.bands.len());
        let mut used: BTreeSet<u32> = BTreeSet::new();
        for meta in &m.bands {
            if !used.insert(meta.zone) {
                return Err(Error::corruption(
                    meta.zone,
                    0,
                    "zone used twice in manifest",
                ));
            }
            let level = meta.level;
            let band = Band::open(&dev, meta.clone())?;
            bands.push(VBand {
                level,
                band: Arc::new(band),
            });
        }
        for z in &m.log_zones {
            if !used.insert(*z) {
                return Err(Error::corruption(*z, 0, "log zone used twice in manifest"));
            }
        }
        sort_newest_first(&mut bands);
        // Every other zone is free; reset what a crash left behind.
        let mut free = BTreeSet::new();
        for z in &zones {
            if !z.zone_type.is_sequential() || used.contains(&z.index) {
                continue;
            }
            match z.condition {
                ZoneCondition::Empty => {
                    free.insert(z.index);
                }
                ZoneCondition::ReadOnly | ZoneCondition::Offline => {}
                _ => {
                    dev.reset(z.index)?;
                    free.insert(z.index);
                }
            }
        }
        // Replay the log.
        let mem = Arc::new(Memtable::new());
        let mut last_seq = m.flushed_seq;
        for b in &bands {
            last_seq = last_seq.max(b.band.meta.max_seq);
        }
        let mut active = None;
        let mut gap = None;
        'zones: for (i, &z) in m.log_zones.iter().enumerate() {
            let zi = dev.dev.zone(z).map_err(Error::Device)?;
            let wp = zi.write_pointer_lba - zi.start_lba;
            let r = log::replay_zone(&dev, z, wp)?;
            for (seq0, ops) in r.batches {
                if ops.is_empty() {
                    // A gap marker: the write `seq0` was not logged. Unless a flush put it in
                    // a band, it is lost, and so is everything logged after it (replaying
                    // those would not give the state after a prefix of the writes).
                    if seq0 > m.flushed_seq {
                        gap = Some(seq0);
                        break 'zones;
                    }
                    continue;
                }
                for (j, (k, v)) in ops.iter().enumerate() {
                    let s = seq0 + j as u64;
                    if s > m.flushed_seq {
                        mem.insert(k, s, v.as_deref());
                        last_seq = last_seq.max(s);
                    }
                }
            }
            if i + 1 == m.log_zones.len() && r.end_sector == wp && wp < dev.zone_sectors {
                // A clean tail: keep appending here.
                active = Some((z, wp));
            }
        }
        if let Some(g) = gap {
            tracing::info!(
                "smrdb recovery: write {g} was not logged and not flushed; \
                 the log after it is discarded"
            );
            // The records after the marker stay in these log bands: never append behind
            // them. `Db::open` flushes what was replayed and drops the bands.
            active = None;
        }
        let mem_zones = m.log_zones.clone();
        let sv = SuperVersion {
            mem,
            imm: None,
            bands: Arc::new(bands),
        };
        let inner = Inner {
            dev: dev.clone(),
            memtable_limit,
            seq_zones,
            sv: RwLock::new(Arc::new(sv)),
            writer: Mutex::new(WriteState {
                last_seq,
                buf: log::LogBuffer::default(),
                active,
                mem_zones,
                marked_gap: 0,
            }),
            sync_lock: Mutex::new(()),
            durable_seq: AtomicU64::new(last_seq),
            visible_seq: AtomicU64::new(last_seq),
            meta: Mutex::new(MetaState {
                m,
                free,
                pending: Vec::new(),
                imm_zones: Vec::new(),
                slot_sectors,
            }),
            maint: Mutex::new(()),
            cache: BlockCache::new(opts.block_cache_bytes),
            snapshots: Arc::new(Mutex::new(BTreeMap::new())),
            bg: Mutex::new(BgState::default()),
            bg_cv: Condvar::new(),
            done_cv: Condvar::new(),
            poisoned: Mutex::new(None),
            is_poisoned: AtomicBool::new(false),
            delete_pressure: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            retired: Mutex::new(Vec::new()),
            recovered_gap: gap,
            counters: Counters::default(),
            opts,
        };
        if fresh {
            let mut ms = inner.meta.lock();
            ms.m.next_band_id = 1;
            inner.commit(&mut ms)?;
        }
        Ok(inner)
    }

    fn current(&self) -> Arc<SuperVersion> {
        self.sv.read().clone()
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed("closed".into()));
        }
        Ok(())
    }

    fn check_writable(&self) -> Result<()> {
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
    fn fail<T>(&self, e: Error) -> Result<T> {
        if matches!(e, Error::Device(_) | Error::Corruption { .. }) {
            let mut p = self.poisoned.lock();
            if p.is_none() {
                *p = Some(e.to_string());
            }
            self.is_poisoned.store(true, Ordering::Release);
        }
        Err(e)
    }

    fn kick(&self) {
        self.bg.lock().work = true;
        self.bg_cv.notify_all();
    }

    // ---------------------------------------------------------------- manifest and zones

    fn commit(&self, ms: &mut MetaState) -> Result<()> {
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

    fn pressure(&self) -> bool {
        self.delete_pressure.load(Ordering::Acquire)
    }

    /// Free bands a new log band must leave: the reserve, or one band (for the flush that
    /// frees the log bands again) while a write that only deletes waits for room.
    fn log_keep(&self) -> usize {
        if self.pressure() {
            1
        } else {
            self.opts.reserve_bands as usize
        }
    }

    /// Free bands a memtable flush must leave: the reserve, or none while deletes or a full
    /// compaction need room (a flush resets its log bands right after, giving bands back).
    fn flush_keep(&self) -> usize {
        if self.pressure() {
            0
        } else {
            self.opts.reserve_bands as usize
        }
    }

    /// Takes a free band, leaving at least `keep` free.
    fn alloc(&self, ms: &mut MetaState, keep: usize) -> Result<u32> {
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
    fn abandon(&self, zones: &[u32]) {
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

    fn free_pending(&self, ms: &mut MetaState) -> Result<()> {
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

    // ---------------------------------------------------------------- write path

    fn write(&self, batch: WriteBatch, wo: WriteOptions) -> Result<()> {
        self.check_writable()?;
        if batch.is_empty() {
            return Ok(());
        }
        if batch.puts == 0 {
            // Deletes free space; let them (and the flushes they need) use the reserve.
            self.delete_pressure.store(true, Ordering::Release);
            let r = self.write_inner(batch, wo);
            self.delete_pressure.store(false, Ordering::Release);
            return r;
        }
        self.write_inner(batch, wo)
    }

    fn write_inner(&self, batch: WriteBatch, wo: WriteOptions) -> Result<()> {
        let zone_bytes = self.dev.zone_bytes();
        if wo.sync && wo.disable_wal {
            return Err(Error::InvalidArgument(
                "a synced write needs the log (sync with disable_wal)".into(),
            ));
        }
        if batch.max_key > MAX_KEY_LEN {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes (limit {MAX_KEY_LEN})",
                batch.max_key
            )));
        }
        if batch.bytes as u64 + 64 * batch.count as u64 > zone_bytes / 4 {
            return Err(Error::InvalidArgument(format!(
                "batch of {} bytes exceeds a quarter band ({} bytes)",
                batch.bytes,
                zone_bytes / 4
            )));
        }
        let mut w = self.make_room_for_write()?;
        let seq0 = w.last_seq + 1;
        // The reader view cannot switch memtables while the writer lock is held.
        let sv = self.current();
        if wo.disable_wal {
            sv.mem.mark_unlogged(seq0);
        } else {
            // After an unlogged write that no flush has put in a band yet, the log gets a gap
            // marker (a record of no operations naming it) before the next logged record:
            // recovery replays nothing after a marker whose write is lost, so that the
            // recovered state is always that after a prefix of the writes.
            let gap = [sv.imm.as_deref(), Some(&*sv.mem)]
                .into_iter()
                .flatten()
                .filter_map(Memtable::first_unlogged)
                .min()
                .filter(|&g| g != w.marked_gap);
            let mut rec_len = log::record_len(seq0, batch.count, &batch.rep);
            if let Some(g) = gap {
                rec_len += log::record_len(g, 0, &[]);
            }
            if let Err(e) = self.ensure_log_room(&mut w, rec_len) {
                return self.fail(e);
            }
            if let Some(g) = gap {
                w.buf.append_record(g, 0, &[]);
                w.marked_gap = g;
            }
            w.buf.append_record(seq0, batch.count, &batch.rep);
        }
        sv.mem.insert_many(seq0, batch.iter());
        drop(sv);
        w.last_seq += batch.count as u64;
        let my_seq = w.last_seq;
        self.visible_seq.store(my_seq, Ordering::Release);
        let c = &self.counters;
        c.user_bytes
            .fetch_add(batch.bytes as u64, Ordering::Relaxed);
        let dels = (batch.count - batch.puts) as u64;
        c.puts.fetch_add(batch.puts as u64, Ordering::Relaxed);
        if dels > 0 {
            c.deletes.fetch_add(dels, Ordering::Relaxed);
        }
        if w.buf.len() as u64 >= self.opts.log_buffer_bytes {
            if let Err(e) = self.write_out(&mut w) {
                return self.fail(e);
            }
        }
        drop(w);
        if wo.sync {
            if self.has_unlogged() {
                // Unlogged writes before this one are durable only in a band.
                self.flush_memtable()?;
            } else {
                self.sync_to(my_seq)?;
            }
        }
        if !self.opts.background_compaction {
            let needs = {
                let sv = self.current();
                sv.imm.is_some()
            };
            if needs {
                // The write is in; a flush that finds no room reports it at the next write.
                match self.maintain() {
                    Err(e) if !is_nospace(&e) => return Err(e),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Whether a memtable holds writes that are in no log (`WriteOptions::disable_wal`).
    fn has_unlogged(&self) -> bool {
        let sv = self.current();
        sv.mem.first_unlogged().is_some()
            || sv
                .imm
                .as_ref()
                .is_some_and(|m| m.first_unlogged().is_some())
    }

    fn l0_count(sv: &SuperVersion) -> usize {
        sv.bands.iter().filter(|b| b.level == 0).count()
    }

    fn mem_full(&self, w: &WriteState, sv: &SuperVersion) -> bool {
        // Deletes on a full device may grow the memtable to twice its size (tombstones are
        // small) rather than need a new log band before the old memtable is flushed.
        let limit = if self.pressure() {
            self.memtable_limit * 2
        } else {
            self.memtable_limit
        };
        sv.mem.approximate_bytes() >= limit || w.mem_zones.len() > self.opts.max_log_bands as usize
    }

    /// LevelDB's MakeRoomForWrite: slowdown, stop, and memtable rotation.
    fn make_room_for_write(&self) -> Result<MutexGuard<'_, WriteState>> {
        let mut slowed = false;
        loop {
            self.check_writable()?;
            let mut w = self.writer.lock();
            let sv = self.current();
            let l0 = Self::l0_count(&sv);
            if !slowed
                && self.opts.background_compaction
                && l0 >= self.opts.l0_slowdown
                && self.opts.slowdown_factor > 0.0
            {
                drop(w);
                let d = Duration::from_secs_f64(self.opts.slowdown_factor / 1000.0);
                std::thread::sleep(d);
                self.counters.slowdowns.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .stall_ns
                    .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
                slowed = true;
                continue;
            }
            if !self.mem_full(&w, &sv) {
                return Ok(w);
            }
            if sv.imm.is_some() || (l0 >= self.opts.l0_stop && self.opts.background_compaction) {
                drop(w);
                self.wait_for_background()?;
                continue;
            }
            if let Err(e) = self.rotate(&mut w) {
                return self.fail(e);
            }
            drop(w);
            if self.opts.background_compaction {
                self.kick();
            } else {
                self.maintain()?;
            }
        }
    }

    /// Lets the background thread make progress; fails once the handle is poisoned (the
    /// background thread stops working then, so a waiter would otherwise wait for ever).
    fn wait_for_background(&self) -> Result<()> {
        self.check_writable()?;
        let t0 = Instant::now();
        if !self.opts.background_compaction {
            self.maintain()?;
        } else {
            let mut b = self.bg.lock();
            if let Some(e) = b.nospace.take() {
                return Err(Error::NoSpace(e));
            }
            b.work = true;
            self.bg_cv.notify_all();
            self.done_cv.wait_for(&mut b, Duration::from_millis(50));
        }
        self.counters.stalls.fetch_add(1, Ordering::Relaxed);
        self.counters
            .stall_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Makes the mutable memtable immutable and starts a new one with new log bands.
    fn rotate(&self, w: &mut WriteState) -> Result<()> {
        self.write_out(w)?;
        {
            let mut ms = self.meta.lock();
            ms.imm_zones = std::mem::take(&mut w.mem_zones);
        }
        w.active = None;
        let mut sv = self.sv.write();
        let mut n = (**sv).clone();
        n.imm = Some(n.mem.clone());
        n.mem = Arc::new(Memtable::new());
        *sv = Arc::new(n);
        Ok(())
    }

    fn ensure_log_room(&self, w: &mut WriteState, rec_len: usize) -> Result<()> {
        let ss = self.dev.ss;
        if let Some((_, next)) = w.active {
            if next + log::chunk_sectors(w.buf.len() + rec_len, ss) <= self.dev.zone_sectors {
                return Ok(());
            }
        }
        self.write_out(w)?;
        // Everything in the earlier log bands must be durable before a later band can hold
        // anything, or a crash could keep later records and lose earlier ones.
        self.dev.flush(IoKind::Log)?;
        let mut ms = self.meta.lock();
        let z = self.alloc(&mut ms, self.log_keep())?;
        ms.m.log_zones.push(z);
        if let Err(e) = self.commit(&mut ms) {
            ms.m.log_zones.pop();
            ms.free.insert(z);
            return Err(e);
        }
        w.active = Some((z, 0));
        w.mem_zones.push(z);
        Ok(())
    }

    fn write_out(&self, w: &mut WriteState) -> Result<()> {
        if w.buf.is_empty() {
            return Ok(());
        }
        let Some((z, next)) = w.active else {
            return Err(Error::InvalidArgument(
                "log buffer without a log band".into(),
            ));
        };
        let chunk = w.buf.framed(self.dev.ss);
        let sectors = chunk.len() as u64 / self.dev.ss;
        self.dev.write_at(z, next, chunk, IoKind::Log)?;
        w.active = Some((z, next + sectors));
        w.buf.clear();
        Ok(())
    }

    /// Group commit: the first synced writer to get here writes the buffer and flushes the
    /// device for everyone whose records are in it.
    fn sync_to(&self, seq: u64) -> Result<()> {
        if self.durable_seq.load(Ordering::Acquire) >= seq {
            return Ok(());
        }
        let _g = self.sync_lock.lock();
        if self.durable_seq.load(Ordering::Acquire) >= seq {
            self.counters.grouped_syncs.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let target = {
            let mut w = self.writer.lock();
            if let Err(e) = self.write_out(&mut w) {
                return self.fail(e);
            }
            w.last_seq
        };
        if let Err(e) = self.dev.flush(IoKind::Log) {
            return self.fail(e);
        }
        self.counters.syncs.fetch_add(1, Ordering::Relaxed);
        self.durable_seq.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }

    /// Flushes the memtables if they hold writes that are in no log (close).
    fn flush_unlogged(&self) -> Result<()> {
        if self.is_poisoned.load(Ordering::Acquire) || !self.has_unlogged() {
            return Ok(());
        }
        self.flush_memtable()
    }

    fn sync_all(&self) -> Result<()> {
        if self.poisoned.lock().is_some() {
            return Ok(());
        }
        let seq = self.writer.lock().last_seq;
        self.sync_to(seq)
    }

    // ---------------------------------------------------------------- reads

    fn get(&self, key: &[u8], snap: u64) -> Result<Option<Vec<u8>>> {
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

    fn scan(&self, start: &[u8], end: Option<&[u8]>, snap: u64) -> Result<ScanIter> {
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

    // ---------------------------------------------------------------- flush and compaction

    fn writer_config(&self) -> WriterConfig {
        WriterConfig {
            block_size: self.opts.block_size,
            bloom_bits_per_key: self.opts.bloom_bits_per_key,
            histogram_bytes: self.opts.histogram_bytes,
            write_chunk_bytes: self.opts.write_chunk_bytes,
        }
    }

    fn smallest_snapshot(&self) -> u64 {
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
    /// it can record them and free the inputs already consumed.
    #[allow(clippy::too_many_arguments)] // one call per kind of writer; a struct adds nothing
    fn write_bands(
        &self,
        src: &mut dyn RefSource,
        level: u8,
        kind: IoKind,
        keep: usize,
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
                if let Some(cp) = checkpoint.as_mut() {
                    let tight = self.meta.lock().free.len() <= keep + 1;
                    if tight && !out.is_empty() {
                        self.dev.flush(kind)?;
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

    /// Flushes the immutable memtable, if any, to L0 bands.
    fn flush_imm(&self) -> Result<bool> {
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
                self.flush_keep(),
                &|_| false,
                &mut zones,
                None,
            )
        });
        let bands = match r.and_then(|b| self.dev.flush(IoKind::Flush).map(|_| b)) {
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
    fn free_retired(&self) {
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

    fn flush_memtable(&self) -> Result<()> {
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
        let _m = self.maint.lock();
        match self.flush_imm() {
            Ok(_) => Ok(()),
            Err(e) if is_nospace(&e) => {
                // Compaction may use the reserve and free bands; then try again.
                if let Some(p) = self.pick() {
                    self.run(&p)?;
                }
                self.flush_imm().map(|_| ())
            }
            Err(e) => self.fail(e),
        }
    }

    fn pick(&self) -> Option<Plan> {
        let sv = self.current();
        let ptrs = self.meta.lock().m.compact_pointers.clone();
        compaction::pick(&self.opts, &sv.bands, &ptrs)
    }

    /// Runs pending flushes and compactions until none is due.
    fn maintain(&self) -> Result<bool> {
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

    /// Executes one compaction plan.
    fn run(&self, plan: &Plan) -> Result<()> {
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
            let mut svw = self.sv.write();
            let mut n = (**svw).clone();
            let all: Vec<VBand> = n
                .bands
                .iter()
                .map(|b| {
                    let mut b = b.clone();
                    if plan.inputs.contains(&b.id()) {
                        b.level = plan.output_level;
                    }
                    b
                })
                .collect();
            n.bands = Arc::new(all);
            *svw = Arc::new(n);
            self.counters.trivial_moves.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        {
            let ms = self.meta.lock();
            if ms.free.len() < inputs.len() + 1 {
                return Err(Error::NoSpace(format!(
                    "compaction of {} bands needs free bands; {} free",
                    inputs.len(),
                    ms.free.len()
                )));
            }
        }
        let others: Vec<BandMeta> = sv
            .bands
            .iter()
            .filter(|b| !plan.inputs.contains(&b.id()))
            .map(|b| b.band.meta.clone())
            .collect();
        drop(sv);
        self.merge_into(inputs, &others, plan.output_level, Some(plan), false)
    }

    fn set_pointer(&self, ms: &mut MetaState, plan: &Plan) {
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
    fn merge_into(
        &self,
        inputs: Vec<VBand>,
        others: &[BandMeta],
        level: u8,
        plan: Option<&Plan>,
        low_space: bool,
    ) -> Result<()> {
        let t0 = Instant::now();
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
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
        let all_ids: Vec<u64> = inputs.iter().map(|b| b.id()).collect();
        // Inputs still recorded in the manifest (a checkpoint takes consumed ones out).
        let mut live: Vec<Option<VBand>> = inputs.into_iter().map(Some).collect();
        let mut merge = Merge::new(sources)?;
        let mut zones = Vec::new();
        let drop_tomb = |k: &[u8]| !low_space && !others.iter().any(|o| o.covers(k));
        let cp_level = if self.opts.mode == Mode::Loc && level > 0 {
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
            &drop_tomb,
            &mut zones,
            if low_space { Some(&mut cp) } else { None },
        );
        let bands = match r.and_then(|b| self.dev.flush(IoKind::Compaction).map(|_| b)) {
            Ok(b) => b,
            Err(e) => {
                if is_nospace(&e) || matches!(e, Error::Corruption { .. }) {
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
    fn swap_bands(&self, remove: &[u64], add: Vec<Band>, level: u8) {
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
    fn relevel(&self, ids: &[u64], level: u8) {
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

    fn compact_all(&self) -> Result<()> {
        self.check_writable()?;
        let _m = self.maint.lock();
        let inputs: Vec<VBand> = self.current().bands.iter().cloned().collect();
        if inputs.is_empty() {
            return Ok(());
        }
        // Without room for a full copy, checkpoint as input bands are consumed.
        let low_space = {
            let ms = self.meta.lock();
            let data: u64 = inputs.iter().map(|b| b.band.meta.sectors).sum();
            ms.free.len() as u64 * self.dev.zone_sectors < data + 2 * self.dev.zone_sectors
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

    // ---------------------------------------------------------------- background

    fn bg_loop(self: Arc<Self>) {
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

    // ---------------------------------------------------------------- stats and check

    fn stats(&self) -> DbStats {
        let sv = self.current();
        let ms = self.meta.lock();
        let free = ms.free.len();
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

    pub(crate) fn opts(&self) -> &Options {
        &self.opts
    }

    pub(crate) fn last_seq(&self) -> u64 {
        self.visible_seq.load(Ordering::Acquire)
    }

    fn check(&self) -> Result<CheckReport> {
        let _m = self.maint.lock();
        let sv = self.current();
        let ms = self.meta.lock();
        let manifest = ms.m.clone();
        let free: Vec<u32> = ms.free.iter().copied().collect();
        drop(ms);
        crate::stats::check(self, &sv, &manifest, &free, &self.seq_zones)
    }
}

fn load_manifest(dev: &Dev, slot_sectors: u64) -> Result<Manifest> {
    let mut best: Option<Manifest> = None;
    let mut errors = Vec::new();
    for slot in 0..2u64 {
        let lba = 1 + slot * slot_sectors;
        let first = dev.read_lba(lba, 1)?;
        let Some(len) = Manifest::encoded_len(&first) else {
            errors.push(format!("slot {slot}: no manifest"));
            continue;
        };
        let secs = (len as u64).div_ceil(dev.ss);
        if secs > slot_sectors {
            errors.push(format!("slot {slot}: length {len} exceeds the slot"));
            continue;
        }
        let buf = dev.read_lba(lba, secs)?;
        match Manifest::decode(&buf) {
            Ok(m) => {
                if best.as_ref().is_none_or(|b| m.generation > b.generation) {
                    best = Some(m);
                }
            }
            Err(e) => errors.push(format!("slot {slot}: {e}")),
        }
    }
    best.ok_or_else(|| {
        Error::corruption(
            0,
            dev.ss,
            format!("no valid manifest copy ({})", errors.join("; ")),
        )
    })
}

/// The organisation recorded in the device's superblock, or `None` when the device holds no
/// SMRDB database.
pub fn detect_mode(device: &dyn ZonedDevice) -> Result<Option<Mode>> {
    let ss = device.info().sector_size as usize;
    let mut buf = vec![0u8; ss];
    device.read(0, &mut buf).map_err(Error::Device)?;
    let sb = Superblock::decode(&buf).map_err(|w| Error::corruption(0, 0, w))?;
    Ok(sb.map(|s| s.mode))
}
