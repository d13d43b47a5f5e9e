//! The store: files (SSTables and safe files) on an interlaced drive. This file holds the
//! public handle and the state its jobs share; `io` talks to the device, `rmw` persists a
//! file's data with read-modify-write, `recovery` formats and opens.

use crate::alloc::{self, Allocator};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::map::Place;
use crate::options::{FormatOptions, Options};
use crate::stats::Stats;
use crate::tracks::{Owner, TrackState};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{BlockDevice, TrackLayout};

/// Where a new file goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewFile {
    /// A data file (an SSTable) of this LSM level, if known: placed by the allocation policy.
    Data {
        /// The level hint.
        level: Option<u8>,
    },
    /// A safe file (a write-ahead log): a fixed slot of the safe region, written in place.
    Safe,
}

/// Public facts about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Unique id.
    pub id: u64,
    /// The client's name for it.
    pub name: u32,
    /// Where it lives.
    pub place: Place,
    /// Bytes appended.
    pub len: u64,
    /// Bytes the durable map records (for a safe file: its length as of the last sync).
    pub durable: u64,
    /// Whether it is sealed.
    pub sealed: bool,
    /// Its data tracks, in file order.
    pub tracks: Vec<u32>,
}

/// One file in memory.
#[derive(Debug, Clone)]
pub(crate) struct File {
    pub id: u64,
    pub name: u32,
    pub place: Place,
    /// Bytes appended.
    pub len: u64,
    /// File offset (sector aligned) where `buf` starts; data before it is on the media.
    pub buf_start: u64,
    /// Appended data not yet written (plus the partial last sector that was).
    pub buf: Vec<u8>,
    /// Bytes the durable map records.
    pub durable: u64,
    pub sealed: bool,
    /// Data tracks in file order.
    pub tracks: Vec<u32>,
}

impl File {
    pub fn level(&self) -> Option<u8> {
        match self.place {
            Place::Data { level } => level,
            Place::Safe { .. } => None,
        }
    }

    pub fn info(&self) -> FileInfo {
        FileInfo {
            id: self.id,
            name: self.name,
            place: self.place,
            len: self.len,
            durable: self.durable,
            sealed: self.sealed,
            tracks: self.tracks.clone(),
        }
    }
}

/// A safe slot's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotOwner {
    Free,
    /// Its file was deleted; free at the next map write.
    Pending,
    File(u64),
}

/// The state behind the lock.
pub(crate) struct Inner {
    pub dev: Arc<dyn BlockDevice>,
    pub layout: Layout,
    pub state: TrackState,
    pub files: BTreeMap<u64, File>,
    pub slots: Vec<SlotOwner>,
    pub alloc: Box<dyn Allocator>,
    pub opts: Options,
    pub format: FormatOptions,
    pub epoch: u64,
    pub map_seq: u64,
    pub next_file: u64,
    /// Sequence number of the last read-modify-write started.
    pub rmw_seq: u64,
    /// Sequence number of the last read-modify-write completed (its tops restored and synced).
    pub applied_rmw: u64,
    /// Next free sector of the staging area.
    pub staging_pos: u64,
    pub map_dirty: bool,
    /// Writes since the last flush.
    pub media_dirty: bool,
    /// Bottom tracks written since the last flush: a write to a top track next to one of them
    /// waits for a flush, or the write cache could put it on the media first.
    pub dirty_bottoms: Vec<u32>,
    pub poisoned: Option<String>,
    pub stats: Stats,
    /// The lifetime counters the map this store opened recorded (zero on a new store).
    pub base: Stats,
    /// `stats` as the last map copy recorded them.
    pub saved: Stats,
}

/// Files on an interlaced drive, placed by LSM level, protected by read-modify-write, with a
/// crash-safe map. Thread safe: operations are serialized.
pub struct Store {
    pub(crate) inner: Mutex<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Inner {
    pub fn new(
        dev: Arc<dyn BlockDevice>,
        layout: Layout,
        format: FormatOptions,
        opts: Options,
        epoch: u64,
    ) -> Inner {
        let state = TrackState::new(&layout);
        let slots = vec![SlotOwner::Free; layout.regions.safe_files as usize];
        Inner {
            dev,
            alloc: alloc::new(&opts),
            layout,
            state,
            files: BTreeMap::new(),
            slots,
            opts,
            format,
            epoch,
            map_seq: 0,
            next_file: 1,
            rmw_seq: 0,
            applied_rmw: 0,
            staging_pos: 0,
            map_dirty: true,
            media_dirty: false,
            dirty_bottoms: Vec::new(),
            poisoned: None,
            stats: Stats::default(),
            base: Stats::default(),
            saved: Stats::default(),
        }
    }

    pub fn writable(&self) -> Result<()> {
        match &self.poisoned {
            Some(p) => Err(Error::Poisoned(p.clone())),
            None => Ok(()),
        }
    }

    /// Records a failure of a write path: the handle refuses further writes.
    pub fn fail<T>(&mut self, e: Error) -> Result<T> {
        if matches!(
            e,
            Error::Device(_) | Error::Corruption { .. } | Error::Malformed { .. }
        ) && self.poisoned.is_none()
        {
            self.poisoned = Some(e.to_string());
        }
        Err(e)
    }

    pub fn file(&self, id: u64) -> Result<&File> {
        self.files.get(&id).ok_or(Error::NoSuchFile(id))
    }

    pub fn file_mut(&mut self, id: u64) -> Result<&mut File> {
        self.files.get_mut(&id).ok_or(Error::NoSuchFile(id))
    }

    fn create(&mut self, name: u32, kind: NewFile) -> Result<u64> {
        let place = match kind {
            NewFile::Data { level } => Place::Data { level },
            NewFile::Safe => {
                let mut free = self.slots.iter().position(|s| *s == SlotOwner::Free);
                if free.is_none() && self.slots.contains(&SlotOwner::Pending) {
                    self.write_map()?;
                    free = self.slots.iter().position(|s| *s == SlotOwner::Free);
                }
                let slot = free.ok_or_else(|| {
                    Error::NoSpace(format!("all {} safe files are in use", self.slots.len()))
                })?;
                // Zeros, so that nothing an earlier file left there reads as this file's.
                let r = self.layout.regions;
                self.safe_discard(r.files + slot as u64 * r.file_sectors, r.file_sectors)?;
                Place::Safe { slot: slot as u32 }
            }
        };
        let id = self.next_file;
        self.next_file += 1;
        if let Place::Safe { slot } = place {
            self.slots[slot as usize] = SlotOwner::File(id);
        }
        self.files.insert(
            id,
            File {
                id,
                name,
                place,
                len: 0,
                buf_start: 0,
                buf: Vec::new(),
                durable: 0,
                sealed: false,
                tracks: Vec::new(),
            },
        );
        self.stats.files_created += 1;
        self.stats.level_mut(match place {
            Place::Data { level } => level,
            Place::Safe { .. } => None,
        });
        if let Place::Data { level } = place {
            self.stats.level_mut(level).files += 1;
        }
        self.map_dirty = true;
        Ok(id)
    }

    fn append(&mut self, id: u64, data: &[u8]) -> Result<()> {
        let ss = self.layout.ss;
        let f = self.file(id)?;
        if f.sealed {
            return Err(Error::Invalid(format!("file {id} is sealed")));
        }
        match f.place {
            Place::Data { .. } => {
                let max = self.format.file_bytes.max(1);
                if f.len + data.len() as u64 > max {
                    return Err(Error::Invalid(format!(
                        "file {id} would grow past the largest file of {max} bytes"
                    )));
                }
                let f = self.file_mut(id)?;
                if f.buf.capacity() - f.buf.len() < data.len() {
                    // Room for the rest of the file at once (appends come in chunks: growing
                    // a zone-sized buffer by doubling copied it over and over).
                    let rest = max.saturating_sub(f.len).min(64 << 20) as usize;
                    f.buf.reserve(rest.max(data.len()));
                }
                f.buf.extend_from_slice(data);
                f.len += data.len() as u64;
                self.stats.bytes_appended += data.len() as u64;
            }
            Place::Safe { slot } => {
                let r = self.layout.regions;
                if !(data.len() as u64).is_multiple_of(ss) || !f.len.is_multiple_of(ss) {
                    return Err(Error::Invalid(format!(
                        "appends to safe file {id} must be whole sectors"
                    )));
                }
                if f.len + data.len() as u64 > r.file_sectors * ss {
                    return Err(Error::NoSpace(format!(
                        "safe file {id} holds at most {} bytes",
                        r.file_sectors * ss
                    )));
                }
                let off = r.files + slot as u64 * r.file_sectors + f.len / ss;
                self.safe_write(off, data)?;
                self.file_mut(id)?.len += data.len() as u64;
                self.stats.safe_bytes += data.len() as u64;
            }
        }
        Ok(())
    }

    fn delete(&mut self, id: u64) -> Result<()> {
        let f = self.files.remove(&id).ok_or(Error::NoSuchFile(id))?;
        for &t in &f.tracks {
            self.state.release(&self.layout, t);
        }
        if let Place::Safe { slot } = f.place {
            self.slots[slot as usize] = SlotOwner::Pending;
        }
        self.stats.files_deleted += 1;
        self.map_dirty = true;
        Ok(())
    }

    /// Persists every data file's buffered data, flushes, and writes the map if it changed.
    fn sync(&mut self) -> Result<()> {
        let open: Vec<u64> = self
            .files
            .values()
            .filter(|f| matches!(f.place, Place::Data { .. }) && f.len > f.buf_start)
            .map(|f| f.id)
            .collect();
        for id in open {
            self.persist(id)?;
        }
        let t0 = self.dev.now();
        if self.media_dirty {
            self.flush()?;
        }
        // A safe file's length is recorded too: after a crash its durable length is the
        // write pointer the layer above sees, which must not cover a sector the flush did not
        // put on the media (a log replay takes damage below it for corruption).
        for f in self.files.values_mut() {
            if f.durable != f.len {
                f.durable = f.len;
                self.map_dirty = true;
            }
        }
        if self.map_dirty {
            self.write_map()?;
        }
        self.stats.sync_ns += self.dev.now() - t0;
        Ok(())
    }

    /// Sectors of data tracks that data not yet on tracks can still take: free and pending
    /// tracks, less what every file's buffered data will take (its sectors beyond the
    /// file's tracks, plus the unused end of its last track: at most a largest track).
    pub fn room(&self) -> u64 {
        let ss = self.layout.ss;
        let max = self.layout.max_track_sectors();
        let mut room = self.state.room(&self.layout);
        for f in self.files.values() {
            if !matches!(f.place, Place::Data { .. }) || f.len <= f.buf_start {
                continue;
            }
            let have: u64 = f
                .tracks
                .iter()
                .map(|&t| self.layout.track(t).sectors as u64)
                .sum();
            let need = f.len.div_ceil(ss);
            if need > have {
                room = room.saturating_sub(need - have + max);
            }
        }
        room
    }

    /// Frees tracks and slots whose deletion the durable map records.
    pub fn free_pending(&mut self) {
        self.state.free_pending(&self.layout);
        for s in self.slots.iter_mut() {
            if *s == SlotOwner::Pending {
                *s = SlotOwner::Free;
            }
        }
    }

    /// Reads `buf.len()` bytes at `off` of file `id`.
    fn read(&mut self, id: u64, off: u64, buf: &mut [u8]) -> Result<()> {
        let ss = self.layout.ss;
        let f = self.file(id)?;
        let end = off
            .checked_add(buf.len() as u64)
            .ok_or_else(|| Error::Invalid("read range overflows".into()))?;
        let limit = match f.place {
            Place::Data { .. } => f.len,
            Place::Safe { .. } => self.layout.regions.file_sectors * ss,
        };
        if end > limit {
            return Err(Error::Invalid(format!(
                "read of {}..{end} past the end of file {id} ({limit} bytes)",
                off
            )));
        }
        match f.place {
            Place::Safe { slot } => {
                let r = self.layout.regions;
                let base = (r.files + slot as u64 * r.file_sectors) * ss;
                self.safe_read_bytes(base + off, buf)
            }
            Place::Data { .. } => {
                let split = f.buf_start.clamp(off, end);
                if split < end {
                    let from = (split - f.buf_start) as usize;
                    let n = (end - split) as usize;
                    let at = (split - off) as usize;
                    buf[at..at + n].copy_from_slice(&f.buf[from..from + n]);
                }
                if off < split {
                    let tracks = f.tracks.clone();
                    self.read_tracks(&tracks, off, &mut buf[..(split - off) as usize])?;
                }
                Ok(())
            }
        }
    }
}

impl Store {
    /// Runs `f` on the state, poisoning the handle when a write path fails.
    fn write_op<R>(&self, f: impl FnOnce(&mut Inner) -> Result<R>) -> Result<R> {
        let mut g = self.inner.lock();
        g.writable()?;
        match f(&mut g) {
            Ok(r) => Ok(r),
            Err(e) => g.fail(e),
        }
    }

    /// Formats the interlaced drive `dev` (whose track layout is `tracks`) and opens it.
    pub fn format(
        dev: Arc<dyn BlockDevice>,
        tracks: &TrackLayout,
        format: FormatOptions,
        opts: Options,
    ) -> Result<Store> {
        crate::recovery::format(dev, tracks, format, opts)
    }

    /// Opens a formatted drive: reads the superblock and the newest map, restores the backups
    /// of an interrupted read-modify-write, and forgets data that no durable map records.
    pub fn open(dev: Arc<dyn BlockDevice>, tracks: &TrackLayout, opts: Options) -> Result<Store> {
        crate::recovery::open(dev, tracks, Some(opts))
    }

    /// [`Store::open`] with the options the superblock recorded at format
    /// ([`Options::default`] for a version-1 superblock, which recorded none).
    pub fn open_stored(dev: Arc<dyn BlockDevice>, tracks: &TrackLayout) -> Result<Store> {
        crate::recovery::open(dev, tracks, None)
    }

    /// The superblock on `dev` (whose track layout is `tracks`): `Ok(None)` when the drive
    /// holds none (never formatted), an error when it holds a damaged one or cannot be read.
    pub fn superblock(
        dev: &dyn BlockDevice,
        tracks: &TrackLayout,
    ) -> Result<Option<crate::superblock::Superblock>> {
        crate::recovery::read_superblock(dev, tracks)
    }

    /// Creates a file; `name` is the client's name for it (kept in the map).
    pub fn create(&self, name: u32, kind: NewFile) -> Result<u64> {
        self.write_op(|g| g.create(name, kind))
    }

    /// Appends to a file. Data files buffer until [`Store::persist`], [`Store::seal`] or
    /// [`Store::sync`]; safe files take whole sectors and write them at once.
    pub fn append(&self, id: u64, data: &[u8]) -> Result<()> {
        self.write_op(|g| g.append(id, data))
    }

    /// Writes a data file's buffered data to its tracks (allocating them and protecting
    /// neighbouring top tracks by read-modify-write). Durable after the next [`Store::sync`].
    pub fn persist(&self, id: u64) -> Result<()> {
        self.write_op(|g| g.persist(id))
    }

    /// Persists a file and refuses further appends.
    pub fn seal(&self, id: u64) -> Result<()> {
        self.write_op(|g| {
            g.persist(id)?;
            let f = g.file_mut(id)?;
            if !f.sealed {
                f.sealed = true;
                g.map_dirty = true;
            }
            Ok(())
        })
    }

    /// Makes everything appended so far durable: persists buffered data, flushes the device,
    /// and writes the map when it changed.
    pub fn sync(&self) -> Result<()> {
        self.write_op(|g| g.sync())
    }

    /// Deletes a file. Its tracks are reused once a map recording the deletion is durable.
    pub fn delete(&self, id: u64) -> Result<()> {
        self.write_op(|g| g.delete(id))
    }

    /// Reads `buf.len()` bytes at byte `off` of file `id`. A safe file reads anywhere in its
    /// slot (zeros past what was appended; after a reopen its length is not known).
    pub fn read(&self, id: u64, off: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.lock().read(id, off, buf)
    }

    /// Reads whole sectors `[off, off + buf.len())` of the raw area.
    pub fn raw_read(&self, sector: u64, buf: &mut [u8]) -> Result<()> {
        let mut g = self.inner.lock();
        let r = g.layout.regions;
        let n = buf.len() as u64 / g.layout.ss;
        if sector + n > r.raw_sectors || !(buf.len() as u64).is_multiple_of(g.layout.ss) {
            return Err(Error::Invalid(format!(
                "raw read of {n} sectors at {sector} outside the raw area of {}",
                r.raw_sectors
            )));
        }
        g.safe_read(r.raw + sector, buf)
    }

    /// Writes whole sectors at sector `sector` of the raw area (durable after a sync).
    pub fn raw_write(&self, sector: u64, data: &[u8]) -> Result<()> {
        self.write_op(|g| {
            let r = g.layout.regions;
            let ss = g.layout.ss;
            let n = data.len() as u64 / ss;
            if sector + n > r.raw_sectors || !(data.len() as u64).is_multiple_of(ss) {
                return Err(Error::Invalid(format!(
                    "raw write of {n} sectors at {sector} outside the raw area of {}",
                    r.raw_sectors
                )));
            }
            g.safe_write(r.raw + sector, data)?;
            g.stats.raw_bytes += data.len() as u64;
            Ok(())
        })
    }

    /// Discards the whole raw area: it reads as zeros (durable after a sync).
    pub fn discard_raw(&self) -> Result<()> {
        self.write_op(|g| {
            let r = g.layout.regions;
            g.safe_discard(r.raw, r.raw_sectors)
        })
    }

    /// Facts about one file.
    pub fn file(&self, id: u64) -> Result<FileInfo> {
        Ok(self.inner.lock().file(id)?.info())
    }

    /// Every file, by id.
    pub fn files(&self) -> Vec<FileInfo> {
        self.inner.lock().files.values().map(File::info).collect()
    }

    /// Counters since the store was opened.
    pub fn stats(&self) -> Stats {
        self.inner.lock().stats.clone()
    }

    /// Counters over the store's life: what the newest map copy recorded when the store was
    /// opened, plus this open's. Each map copy records them, so after a crash those since
    /// the last copy are missing (see [`Store::checkpoint`]).
    pub fn lifetime_stats(&self) -> Stats {
        self.inner.lock().lifetime()
    }

    /// The options the store runs with.
    pub fn options(&self) -> Options {
        self.inner.lock().opts.clone()
    }

    /// Writes a map copy when the counters changed since the last one, so that
    /// [`Store::lifetime_stats`] survives a close (a copy records only durable data, so this
    /// changes nothing else; data appended and not synced stays as unsynced as it was).
    pub fn checkpoint(&self) -> Result<()> {
        self.write_op(|g| {
            if g.stats != g.saved {
                g.write_map()?;
            }
            Ok(())
        })
    }

    /// The format options recorded in the superblock.
    pub fn format_options(&self) -> FormatOptions {
        self.inner.lock().format
    }

    /// The layout (tracks, safe region, data tracks).
    pub fn layout(&self) -> Layout {
        self.inner.lock().layout.clone()
    }

    /// Fraction of the data tracks' sectors in use (deleted files' tracks count until the
    /// next map write).
    pub fn usage(&self) -> f64 {
        let g = self.inner.lock();
        g.state.usage(&g.layout)
    }

    /// Fraction of the data tracks' sectors owned by live files (tracks of deleted files
    /// left out, although they stay in use until the next map write).
    pub fn live_usage(&self) -> f64 {
        let g = self.inner.lock();
        g.state.live_usage(&g.layout)
    }

    /// Sectors of data tracks still free for data that is not on tracks yet: free tracks and
    /// tracks of deleted files (a map write frees them when an allocation needs them), less
    /// what the data buffered in files will take. A persist that needs more fails with
    /// [`Error::NoSpace`].
    pub fn room(&self) -> u64 {
        self.inner.lock().room()
    }

    /// Checks the in-memory map against the track states: every track of every file is a
    /// data track owned by it, no track belongs to two files, valid prefixes fit the data.
    pub fn check(&self) -> Result<()> {
        let g = self.inner.lock();
        let mut seen = std::collections::HashSet::new();
        for f in g.files.values() {
            let mut cap = 0u64;
            for &t in &f.tracks {
                if !seen.insert(t) {
                    return Err(Error::corrupt("map", format!("track {t} listed twice")));
                }
                if g.state.owner.get(t as usize) != Some(&Owner::File(f.id)) {
                    return Err(Error::corrupt(
                        "map",
                        format!("track {t} of file {} is not owned by it", f.id),
                    ));
                }
                cap += g.layout.track(t).sectors as u64 * g.layout.ss;
            }
            if matches!(f.place, Place::Data { .. }) && cap < f.buf_start {
                return Err(Error::corrupt(
                    "map",
                    format!("file {} has {} bytes on tracks of {cap}", f.id, f.buf_start),
                ));
            }
        }
        for (i, o) in g.state.owner.iter().enumerate() {
            if let Owner::File(id) = o {
                if !g.files.contains_key(id) {
                    return Err(Error::corrupt(
                        "map",
                        format!("track {i} owned by missing file {id}"),
                    ));
                }
            }
        }
        Ok(())
    }
}
