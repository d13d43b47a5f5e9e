//! The file system core: a plain Rust API by inode number that the FUSE adapter, the CLI and
//! the tests call. Metadata changes are [`Op`]s applied to the in-memory [`State`] and
//! appended to a pending batch that `fsync` (or any commit) writes to the log.

use crate::buffer::WriteBuf;
use crate::codec::{Dec, Enc};
use crate::error::{FsError, Result};
use crate::journal::Journal;
use crate::pool::Pool;
use crate::state::{Inode, Kind, Op, State, ROOT};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tegula_device::{ZoneAction, ZoneTarget, ZonedDevice};

/// File-system options. `Default` is the one source of defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsOptions {
    /// Per-file write buffer (default 5 MiB, as ZEAFS): data is written as an extent when a
    /// file's buffer reaches this size, on fsync and on the last close.
    pub buffer_bytes: usize,
    /// Total buffered bytes across files before the largest buffer is written (default 64 MiB).
    pub dirty_limit: usize,
    /// Largest extent written (default 8 MiB); bigger buffers are split.
    pub max_extent: u64,
    /// ZEA back pointers per extent (default 8; persisted by mkfs).
    pub back_pointers: u16,
    /// Commit the pending metadata batch when it grows past this many bytes (default 1 MiB),
    /// even without an fsync.
    pub commit_bytes: usize,
    /// Mount read-only (default false): nothing is written, orphans are left for a
    /// read-write mount to free.
    pub read_only: bool,
}

impl Default for FsOptions {
    fn default() -> Self {
        FsOptions {
            buffer_bytes: 5 << 20,
            dirty_limit: 64 << 20,
            max_extent: 8 << 20,
            back_pointers: 8,
            commit_bytes: 1 << 20,
            read_only: false,
        }
    }
}

/// Attributes of an inode as callers see them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    /// Inode number.
    pub ino: u64,
    /// Kind.
    pub kind: Kind,
    /// Size in bytes (including buffered writes).
    pub size: u64,
    /// Permission bits.
    pub perm: u32,
    /// Link count.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Access time (ns since the epoch).
    pub atime: i64,
    /// Modification time.
    pub mtime: i64,
    /// Status change time.
    pub ctime: i64,
    /// Bytes of mapped (stored) data.
    pub stored: u64,
}

/// Attribute changes for [`Fs::setattr`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// New size (truncate or extend).
    pub size: Option<u64>,
    /// New permission bits.
    pub perm: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New access time.
    pub atime: Option<i64>,
    /// New modification time.
    pub mtime: Option<i64>,
}

/// File-system wide numbers for statfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatFs {
    /// Block size used below.
    pub block_size: u64,
    /// Data capacity in blocks (sequential zones less one reserved for cleaning).
    pub blocks: u64,
    /// Blocks that can still be written (after cleaning dead space).
    pub free_blocks: u64,
    /// Inodes in use.
    pub files: u64,
    /// Inodes that can still be created.
    pub free_files: u64,
}

/// A file with buffered data or open handles.
#[derive(Debug, Default)]
pub(crate) struct OpenFile {
    pub(crate) buf: WriteBuf,
    pub(crate) size: u64,
    pub(crate) opens: u32,
}

/// A mounted file system.
pub struct Fs {
    pub(crate) dev: Arc<dyn ZonedDevice>,
    pub(crate) journal: Journal,
    pub(crate) state: State,
    pub(crate) pending: Vec<Op>,
    pub(crate) pending_bytes: usize,
    pub(crate) pool: Pool,
    pub(crate) files: HashMap<u64, OpenFile>,
    pub(crate) dirty: usize,
    pub(crate) opts: FsOptions,
    pub(crate) broken: Option<String>,
    pub(crate) active_user: Option<u32>,
    pub(crate) active_gc: Option<u32>,
    pub(crate) bad_zones: Vec<u32>,
    pub(crate) cleanings: u64,
}

/// Nanoseconds since the Unix epoch, from the host clock.
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn check_name(name: &[u8]) -> Result<()> {
    if name.is_empty() || name == b"." || name == b".." {
        return Err(FsError::Invalid("reserved name".into()));
    }
    if name.len() > 255 || name.iter().any(|&c| c == b'/' || c == 0) {
        return Err(FsError::BadName);
    }
    Ok(())
}

impl Fs {
    /// Creates a file system on `dev`: resets every sequential zone and writes the superblock
    /// and an empty root.
    pub fn mkfs(dev: Arc<dyn ZonedDevice>, opts: FsOptions) -> Result<Fs> {
        let info = dev.info();
        if !info.stores_data {
            return Err(FsError::NotFs("the device keeps no data".into()));
        }
        dev.zone_action(ZoneAction::Reset, ZoneTarget::All)?;
        let state = State::new(info.zones as usize, now_ns());
        let fs_id = (now_ns() as u64) ^ ((std::process::id() as u64) << 32) ^ 0x7e9a_1a5f;
        Journal::format(
            dev.clone(),
            opts.back_pointers as u32,
            fs_id,
            &state.encode(),
        )?;
        Self::open(dev, opts)
    }

    /// Mounts the file system on `dev`: newest checkpoint, log replay, zone recovery; inodes
    /// left without names (unlinked while open before a crash) are freed.
    pub fn open(dev: Arc<dyn ZonedDevice>, mut opts: FsOptions) -> Result<Fs> {
        let rec = Journal::open(dev.clone())?;
        let corrupt = |what: String| {
            eprintln!("tegula-fs: {what}");
            FsError::Corrupt(what)
        };
        let mut state = State::decode(&rec.checkpoint)
            .map_err(|e| corrupt(format!("checkpoint (conventional zone 0): {e}")))?;
        for (i, r) in rec.records.iter().enumerate() {
            let mut d = Dec::new(r);
            while d.remaining() > 0 {
                let op = Op::decode(&mut d).map_err(|e| corrupt(format!("log record {i}: {e}")))?;
                state
                    .apply(&op)
                    .map_err(|e| corrupt(format!("log record {i}: {e}")))?;
            }
        }
        let sb = rec.journal.superblock().clone();
        opts.back_pointers = sb.back_pointers as u16;
        let pool = Pool::open(dev.clone(), sb.first_seq_zone, opts.back_pointers)?;
        let mut fs = Fs {
            dev,
            journal: rec.journal,
            state,
            pending: Vec::new(),
            pending_bytes: 0,
            pool,
            files: HashMap::new(),
            dirty: 0,
            opts,
            broken: None,
            active_user: None,
            active_gc: None,
            bad_zones: Vec::new(),
            cleanings: 0,
        };
        // Continue filling the emptiest partly written zone rather than opening a new one.
        fs.active_user = fs
            .pool
            .seq_zones()
            .filter(|&z| !fs.pool.is_empty(z) && fs.pool.max_put(z) > 0)
            .max_by_key(|&z| fs.pool.max_put(z));
        if fs.opts.read_only {
            fs.broken = Some("mounted read-only".into());
            return Ok(fs);
        }
        for ino in fs.state.orphans() {
            fs.log(Op::Free { ino })?;
        }
        fs.commit()?;
        Ok(fs)
    }

    /// The options in force.
    pub fn options(&self) -> &FsOptions {
        &self.opts
    }

    /// The device.
    pub fn device(&self) -> &Arc<dyn ZonedDevice> {
        &self.dev
    }

    pub(crate) fn writable(&self) -> Result<()> {
        match &self.broken {
            Some(b) => Err(FsError::Broken(b.clone())),
            None => Ok(()),
        }
    }

    /// Applies an op to the state and queues it for the log.
    pub(crate) fn log(&mut self, op: Op) -> Result<()> {
        self.writable()?;
        self.state
            .apply(&op)
            .map_err(|e| FsError::Invalid(e.to_string()))?;
        self.pending_bytes += 64;
        self.pending.push(op);
        Ok(())
    }

    /// Makes every applied op durable: one log record (or a checkpoint when the log is full).
    pub fn commit(&mut self) -> Result<()> {
        self.writable()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut e = Enc::new();
        for op in &self.pending {
            op.encode(&mut e);
        }
        let res = match self.journal.append(&e.buf) {
            Ok(true) => Ok(()),
            Ok(false) => self.journal.checkpoint(&self.state.encode()),
            Err(err) => Err(err),
        };
        if let Err(err) = res {
            if !matches!(err, FsError::NoSpace(_)) {
                self.broken = Some(err.to_string());
            }
            return Err(err);
        }
        self.pending.clear();
        self.pending_bytes = 0;
        Ok(())
    }

    /// Writes a checkpoint now (shortens the next mount's replay).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.writable()?;
        let res = self.journal.checkpoint(&self.state.encode());
        if let Err(e) = &res {
            self.broken = Some(e.to_string());
        }
        res?;
        self.pending.clear();
        self.pending_bytes = 0;
        Ok(())
    }

    pub(crate) fn maybe_commit(&mut self) -> Result<()> {
        if self.pending_bytes >= self.opts.commit_bytes {
            self.commit()?;
        }
        Ok(())
    }

    /// Writes every buffer, commits, checkpoints: the clean unmount.
    pub fn close(mut self) -> Result<()> {
        self.sync_all()?;
        self.checkpoint()?;
        self.dev.flush()?;
        Ok(())
    }

    fn inode(&self, ino: u64) -> Result<&Inode> {
        self.state.get(ino).ok_or(FsError::NotFound)
    }

    fn dir(&self, ino: u64) -> Result<&Inode> {
        let d = self.inode(ino)?;
        if d.kind != Kind::Dir {
            return Err(FsError::NotDir);
        }
        Ok(d)
    }

    /// Current size of a file, including buffered writes.
    pub(crate) fn cur_size(&self, ino: u64) -> u64 {
        match self.files.get(&ino) {
            Some(f) => f.size,
            None => self.state.get(ino).map_or(0, |n| n.size),
        }
    }

    /// Attributes of `ino`.
    pub fn getattr(&self, ino: u64) -> Result<Attr> {
        let n = self.inode(ino)?;
        Ok(Attr {
            ino,
            kind: n.kind,
            size: if n.kind == Kind::File {
                self.cur_size(ino)
            } else {
                n.size
            },
            perm: n.perm,
            nlink: n.nlink,
            uid: n.uid,
            gid: n.gid,
            atime: n.times.atime,
            mtime: n.times.mtime,
            ctime: n.times.ctime,
            stored: n.map.values().map(|p| p.len).sum(),
        })
    }

    /// Looks up `name` in `parent`.
    pub fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        self.dir(parent)?;
        let ino = self.state.lookup(parent, name).ok_or(FsError::NotFound)?;
        self.getattr(ino)
    }

    /// Entries of a directory (without `.` and `..`): name, inode, kind.
    pub fn readdir(&self, ino: u64) -> Result<Vec<(Vec<u8>, u64, Kind)>> {
        let d = self.dir(ino)?;
        Ok(d.entries
            .iter()
            .map(|(name, &c)| {
                let k = self.state.get(c).map_or(Kind::File, |n| n.kind);
                (name.clone(), c, k)
            })
            .collect())
    }

    /// Parent of a directory.
    pub fn parent(&self, ino: u64) -> Result<u64> {
        Ok(self.dir(ino)?.parent)
    }

    fn make(
        &mut self,
        parent: u64,
        name: &[u8],
        kind: Kind,
        perm: u32,
        (uid, gid): (u32, u32),
        target: Vec<u8>,
    ) -> Result<Attr> {
        check_name(name)?;
        self.dir(parent)?;
        if self.state.lookup(parent, name).is_some() {
            return Err(FsError::Exists);
        }
        let ino = self.state.next_ino;
        self.log(Op::Create {
            parent,
            name: name.to_vec(),
            ino,
            kind,
            perm: perm & 0o7777,
            uid,
            gid,
            time: now_ns(),
            target,
        })?;
        self.maybe_commit()?;
        self.getattr(ino)
    }

    /// Creates a regular file.
    pub fn create(
        &mut self,
        parent: u64,
        name: &[u8],
        perm: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr> {
        self.make(parent, name, Kind::File, perm, (uid, gid), Vec::new())
    }

    /// Creates a directory.
    pub fn mkdir(
        &mut self,
        parent: u64,
        name: &[u8],
        perm: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr> {
        self.make(parent, name, Kind::Dir, perm, (uid, gid), Vec::new())
    }

    /// Creates a symbolic link.
    pub fn symlink(
        &mut self,
        parent: u64,
        name: &[u8],
        target: &[u8],
        uid: u32,
        gid: u32,
    ) -> Result<Attr> {
        if target.is_empty() || target.len() > 4096 {
            return Err(FsError::Invalid("symlink target length".into()));
        }
        self.make(
            parent,
            name,
            Kind::Symlink,
            0o777,
            (uid, gid),
            target.to_vec(),
        )
    }

    /// Target of a symbolic link.
    pub fn readlink(&self, ino: u64) -> Result<Vec<u8>> {
        let n = self.inode(ino)?;
        if n.kind != Kind::Symlink {
            return Err(FsError::Invalid("not a symlink".into()));
        }
        Ok(n.target.clone())
    }

    /// Adds a hard link to a non-directory.
    pub fn link(&mut self, ino: u64, parent: u64, name: &[u8]) -> Result<Attr> {
        check_name(name)?;
        if self.inode(ino)?.kind == Kind::Dir {
            return Err(FsError::Invalid("hard link to a directory".into()));
        }
        self.dir(parent)?;
        if self.state.lookup(parent, name).is_some() {
            return Err(FsError::Exists);
        }
        self.log(Op::Link {
            parent,
            name: name.to_vec(),
            ino,
            time: now_ns(),
        })?;
        self.maybe_commit()?;
        self.getattr(ino)
    }

    /// Frees `ino` if nothing names it and nothing has it open.
    fn maybe_free(&mut self, ino: u64) -> Result<()> {
        let unnamed = self.state.get(ino).is_some_and(|n| n.nlink == 0);
        let open = self.files.get(&ino).is_some_and(|f| f.opens > 0);
        if unnamed && !open {
            if let Some(f) = self.files.remove(&ino) {
                self.dirty -= f.buf.bytes();
            }
            self.log(Op::Free { ino })?;
        }
        Ok(())
    }

    /// Removes a non-directory name; the inode lives on while open.
    pub fn unlink(&mut self, parent: u64, name: &[u8]) -> Result<()> {
        self.dir(parent)?;
        let ino = self.state.lookup(parent, name).ok_or(FsError::NotFound)?;
        if self.inode(ino)?.kind == Kind::Dir {
            return Err(FsError::IsDir);
        }
        self.log(Op::Unlink {
            parent,
            name: name.to_vec(),
            time: now_ns(),
        })?;
        self.maybe_free(ino)?;
        self.maybe_commit()
    }

    /// Removes an empty directory.
    pub fn rmdir(&mut self, parent: u64, name: &[u8]) -> Result<()> {
        self.dir(parent)?;
        let ino = self.state.lookup(parent, name).ok_or(FsError::NotFound)?;
        let n = self.inode(ino)?;
        if n.kind != Kind::Dir {
            return Err(FsError::NotDir);
        }
        if !n.entries.is_empty() {
            return Err(FsError::NotEmpty);
        }
        self.log(Op::Unlink {
            parent,
            name: name.to_vec(),
            time: now_ns(),
        })?;
        self.maybe_free(ino)?;
        self.maybe_commit()
    }

    /// Renames `parent/name` to `new_parent/new_name`, atomically replacing an existing
    /// target (a file, or an empty directory when a directory moves). With `no_replace` an
    /// existing target is an error.
    pub fn rename(
        &mut self,
        parent: u64,
        name: &[u8],
        new_parent: u64,
        new_name: &[u8],
        no_replace: bool,
    ) -> Result<()> {
        check_name(new_name)?;
        self.dir(parent)?;
        self.dir(new_parent)?;
        let ino = self.state.lookup(parent, name).ok_or(FsError::NotFound)?;
        let moving_dir = self.inode(ino)?.kind == Kind::Dir;
        let old = self.state.lookup(new_parent, new_name);
        if let Some(o) = old {
            if no_replace {
                return Err(FsError::Exists);
            }
            if o == ino {
                return Ok(());
            }
            let on = self.inode(o)?;
            match (moving_dir, on.kind == Kind::Dir) {
                (true, true) if !on.entries.is_empty() => return Err(FsError::NotEmpty),
                (true, false) => return Err(FsError::NotDir),
                (false, true) => return Err(FsError::IsDir),
                _ => {}
            }
        }
        if moving_dir {
            // Refuse to move a directory below itself.
            let mut d = new_parent;
            for _ in 0..self.state.inodes.len() + 1 {
                if d == ino {
                    return Err(FsError::Invalid("directory moved into itself".into()));
                }
                let p = self.state.get(d).map_or(ROOT, |n| n.parent);
                if p == d {
                    break;
                }
                d = p;
            }
        }
        self.log(Op::Rename {
            parent,
            name: name.to_vec(),
            new_parent,
            new_name: new_name.to_vec(),
            time: now_ns(),
        })?;
        if let Some(o) = old {
            self.maybe_free(o)?;
        }
        self.maybe_commit()
    }

    /// Changes attributes; a size change truncates or extends the file.
    pub fn setattr(&mut self, ino: u64, a: &SetAttr) -> Result<Attr> {
        let kind = self.inode(ino)?.kind;
        let time = now_ns();
        if let Some(size) = a.size {
            if kind != Kind::File {
                return Err(if kind == Kind::Dir {
                    FsError::IsDir
                } else {
                    FsError::Invalid("truncate of a symlink".into())
                });
            }
            self.truncate(ino, size, time)?;
        }
        if a.perm.is_some()
            || a.uid.is_some()
            || a.gid.is_some()
            || a.atime.is_some()
            || a.mtime.is_some()
        {
            self.log(Op::SetAttr {
                ino,
                perm: a.perm.map(|p| p & 0o7777),
                uid: a.uid,
                gid: a.gid,
                atime: a.atime,
                mtime: a.mtime,
                ctime: time,
            })?;
        }
        self.maybe_commit()?;
        self.getattr(ino)
    }

    fn truncate(&mut self, ino: u64, size: u64, time: i64) -> Result<()> {
        if let Some(f) = self.files.get_mut(&ino) {
            let before = f.buf.bytes();
            f.buf.truncate(size);
            self.dirty -= before - f.buf.bytes();
            f.size = size;
        }
        self.log(Op::Truncate { ino, size, time })
    }

    /// Counts an open handle (unlinked files live until the last one is released).
    pub fn open_file(&mut self, ino: u64) -> Result<()> {
        let size = self.inode(ino)?.size;
        self.files
            .entry(ino)
            .or_insert_with(|| OpenFile {
                size,
                ..OpenFile::default()
            })
            .opens += 1;
        Ok(())
    }

    /// Releases a handle; the last release writes the file's buffer (without waiting for a
    /// commit) or frees an unlinked file.
    pub fn release(&mut self, ino: u64) -> Result<()> {
        let last = match self.files.get_mut(&ino) {
            Some(f) => {
                f.opens = f.opens.saturating_sub(1);
                f.opens == 0
            }
            None => false,
        };
        if !last {
            return Ok(());
        }
        if self.state.get(ino).is_some_and(|n| n.nlink == 0) {
            self.maybe_free(ino)?;
        } else {
            self.flush_file(ino)?;
        }
        self.maybe_commit()
    }

    /// Writes the file's buffer and commits all metadata: afterwards the file's data and
    /// every metadata change made so far survive a crash.
    pub fn fsync(&mut self, ino: u64) -> Result<()> {
        self.inode(ino)?;
        self.flush_file(ino)?;
        self.commit()
    }

    /// Commits metadata (fsync of a directory).
    pub fn fsync_dir(&mut self, ino: u64) -> Result<()> {
        self.dir(ino)?;
        self.commit()
    }

    /// Writes every buffer and commits.
    pub fn sync_all(&mut self) -> Result<()> {
        let inos: Vec<u64> = self.files.keys().copied().collect();
        for ino in inos {
            self.flush_file(ino)?;
        }
        self.commit()
    }

    /// Capacity and free space. Free space counts dead bytes (the cleaner reclaims them) and
    /// keeps one zone in reserve for cleaning.
    pub fn statfs(&self) -> StatFs {
        let bs = self.pool.sector();
        let zones = self.pool.seq_zones().len() as u64;
        let cap = zones.saturating_sub(1) * self.pool.zone_bytes();
        StatFs {
            block_size: bs,
            blocks: cap / bs,
            free_blocks: self.free_estimate() / bs,
            files: self.state.inodes.len() as u64,
            free_files: (u32::MAX as u64).saturating_sub(self.state.inodes.len() as u64),
        }
    }

    /// Bytes that can still be written: capacity less the reserve zone, live data, buffered
    /// data and an allowance for metadata blocks and padding.
    pub(crate) fn free_estimate(&self) -> u64 {
        let zb = self.pool.zone_bytes();
        let zones = self.pool.seq_zones().len() as u64;
        let cap = zones.saturating_sub(1 + self.bad_zones.len() as u64) * zb;
        let live: u64 = self.state.zone_live.iter().sum();
        let dirty = self.dirty as u64;
        let overhead = (live + dirty) / 64 + 2 * zb / 64;
        cap.saturating_sub(live + dirty + overhead)
    }
}
