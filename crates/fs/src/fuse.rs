//! The FUSE adapter: translates kernel requests into calls on [`Fs`]. fuser's session loop
//! reads requests on one thread and hands each to a small pool of workers; the core sits
//! behind a reader-writer lock, so reads, lookups and getattr run in parallel while
//! operations that change the file system take it exclusively.

use crate::error::FsError;
use crate::fs::{Attr, Fs, SetAttr};
use crate::state::Kind;
use fuser::{
    FileAttr, FileType, Filesystem, KernelConfig, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TTL: Duration = Duration::from_secs(1);
/// Largest write the kernel is asked to send in one request.
pub const MAX_WRITE: u32 = 1 << 20;
/// Open flag that keeps the kernel's page cache of a file across opens. Every change to a
/// file's data goes through this mount (the kernel updates or drops its cached pages on
/// write and truncate), so cached pages never go stale; without it each open of a file
/// (RocksDB reopens every SST it just wrote) would send all reads to the drive.
const KEEP_CACHE: u32 = fuser::consts::FOPEN_KEEP_CACHE;
/// Worker threads that serve requests (default of [`FuseFs::with_threads`]).
pub const DEFAULT_THREADS: usize = 4;

struct Handle {
    ino: u64,
    append: bool,
}

/// A job for a worker: runs with the shared state.
type Job = Box<dyn FnOnce(&Shared) + Send>;

/// State the workers share.
struct Shared {
    fs: RwLock<Option<Fs>>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
    /// Largest write request the kernel sent (reported at unmount).
    max_write_seen: AtomicU64,
    /// Requests served.
    requests: AtomicU64,
    /// Whether the kernel runs its writeback cache for this mount (see
    /// [`FuseFs::writeback_cache`]): it then keeps written pages, sends page-sized writes at
    /// explicit offsets, and handles `O_APPEND` itself.
    writeback: AtomicBool,
}

impl Shared {
    // A worker that panicked while holding a lock has already failed its request; the file
    // system refuses writes after an error itself, so a poisoned lock is still usable.
    fn r(&self) -> RwLockReadGuard<'_, Option<Fs>> {
        self.fs.read().unwrap_or_else(|e| e.into_inner())
    }

    fn w(&self) -> RwLockWriteGuard<'_, Option<Fs>> {
        self.fs.write().unwrap_or_else(|e| e.into_inner())
    }

    fn handles(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Handle>> {
        self.handles.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handle(&self, ino: u64, flags: i32) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.handles().insert(
            fh,
            Handle {
                ino,
                // With the writeback cache the kernel turns appends into writes at its own
                // end of file, in whatever order it writes pages back.
                append: flags & libc::O_APPEND != 0 && !self.writeback.load(Ordering::Relaxed),
            },
        );
        fh
    }
}

fn unmounted() -> FsError {
    FsError::Broken("unmounted".into())
}

/// A mounted [`Fs`] as a fuser file system whose requests are served by worker threads.
/// When the session ends (unmount) it waits for the workers, writes every buffer,
/// checkpoints, and reports the outcome on the `done` channel.
pub struct FuseFs {
    shared: Arc<Shared>,
    tx: Option<mpsc::Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
    threads: usize,
    /// Ask the kernel for its writeback cache at `init`.
    want_writeback: bool,
    done: Option<mpsc::Sender<Result<(), String>>>,
}

fn time(ns: i64) -> SystemTime {
    if ns >= 0 {
        UNIX_EPOCH + Duration::from_nanos(ns as u64)
    } else {
        UNIX_EPOCH
    }
}

fn ns(t: TimeOrNow) -> i64 {
    match t {
        TimeOrNow::Now => crate::fs::now_ns(),
        TimeOrNow::SpecificTime(s) => s
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64),
    }
}

fn file_type(k: Kind) -> FileType {
    match k {
        Kind::File => FileType::RegularFile,
        Kind::Dir => FileType::Directory,
        Kind::Symlink => FileType::Symlink,
    }
}

fn attr(a: &Attr) -> FileAttr {
    FileAttr {
        ino: a.ino,
        size: a.size,
        blocks: a.size.div_ceil(512),
        atime: time(a.atime),
        mtime: time(a.mtime),
        ctime: time(a.ctime),
        crtime: time(a.ctime),
        kind: file_type(a.kind),
        perm: a.perm as u16,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

impl FuseFs {
    /// Wraps a mounted file system with [`DEFAULT_THREADS`] workers; `done` receives the
    /// unmount's outcome.
    pub fn new(fs: Fs, done: mpsc::Sender<Result<(), String>>) -> Self {
        Self::with_threads(fs, done, DEFAULT_THREADS)
    }

    /// Wraps a mounted file system with `threads` workers (at least one).
    pub fn with_threads(fs: Fs, done: mpsc::Sender<Result<(), String>>, threads: usize) -> Self {
        let shared = Arc::new(Shared {
            fs: RwLock::new(Some(fs)),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            max_write_seen: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            writeback: AtomicBool::new(false),
        });
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let threads = threads.max(1);
        let workers = (0..threads)
            .map(|_| {
                let rx = rx.clone();
                let shared = shared.clone();
                std::thread::spawn(move || loop {
                    let job = match rx.lock() {
                        Ok(r) => r.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(&shared),
                        Err(_) => return,
                    }
                })
            })
            .collect();
        FuseFs {
            shared,
            tx: Some(tx),
            workers,
            threads,
            want_writeback: true,
            done: Some(done),
        }
    }

    /// Whether to ask the kernel for its writeback cache (default: yes). With it, `write`
    /// calls land in the kernel's page cache and reach the file system as page-aligned
    /// writes of up to [`MAX_WRITE`] bytes when the kernel writes back (at `fsync`, `close`,
    /// memory pressure or after its writeback delay), so small writes cost no request each
    /// and every written page stays cached; the kernel keeps file sizes and modification
    /// times while data is dirty. Without it, each `write` is a request and a page that no
    /// single write covered whole is not kept, so data written in small unaligned pieces
    /// (LevelDB's tables, RocksDB's log) is read back from the drive. `fsync` means the same
    /// either way: the kernel writes the file's dirty pages, then the file system makes them
    /// durable.
    pub fn writeback_cache(mut self, on: bool) -> Self {
        self.want_writeback = on;
        self
    }

    /// Queues a request for the workers (runs it here if they are gone).
    fn spawn(&self, job: impl FnOnce(&Shared) + Send + 'static) {
        self.shared.requests.fetch_add(1, Ordering::Relaxed);
        let job: Job = Box::new(job);
        match &self.tx {
            Some(tx) => {
                if let Err(mpsc::SendError(job)) = tx.send(job) {
                    job(&self.shared);
                }
            }
            None => job(&self.shared),
        }
    }
}

macro_rules! tryr {
    ($reply:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => {
                let e: FsError = e;
                if matches!(e, FsError::Corrupt(_) | FsError::Io(_) | FsError::Broken(_)) {
                    eprintln!("tegula-fs: {e}");
                }
                $reply.error(e.errno());
                return;
            }
        }
    };
}

/// Runs `$body` with `$fs` bound to the file system under a read lock.
macro_rules! with_read {
    ($self:ident, $reply:ident, |$fs:ident| $body:block) => {
        $self.spawn(move |sh: &Shared| {
            let g = sh.r();
            let $fs: &Fs = tryr!($reply, g.as_ref().ok_or_else(unmounted));
            $body
        })
    };
}

/// Runs `$body` with `$fs` bound to the file system under the write lock.
macro_rules! with_write {
    ($self:ident, $reply:ident, |$sh:ident, $fs:ident| $body:block) => {
        $self.spawn(move |$sh: &Shared| {
            let mut g = $sh.w();
            let $fs: &mut Fs = tryr!($reply, g.as_mut().ok_or_else(unmounted));
            $body
        })
    };
}

impl Filesystem for FuseFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), libc::c_int> {
        // Ask for 1 MiB writes and read-ahead; the kernel settles on what it supports.
        let _ = config.set_max_write(MAX_WRITE);
        let _ = config.set_max_readahead(MAX_WRITE);
        let wb = self.want_writeback
            && config
                .add_capabilities(fuser::consts::FUSE_WRITEBACK_CACHE)
                .is_ok();
        self.shared.writeback.store(wb, Ordering::Relaxed);
        Ok(())
    }

    fn destroy(&mut self) {
        // Let queued requests finish before the final flush.
        drop(self.tx.take());
        for w in self.workers.drain(..) {
            if w.join().is_err() {
                eprintln!("tegula-fs: a worker thread panicked");
            }
        }
        eprintln!(
            "tegula-fs: {} requests served by {} workers; largest write request {} bytes",
            self.shared.requests.load(Ordering::Relaxed),
            self.threads,
            self.shared.max_write_seen.load(Ordering::Relaxed)
        );
        let fs = self.shared.w().take();
        let res = match fs {
            Some(fs) => fs.close().map_err(|e| e.to_string()),
            None => Ok(()),
        };
        if let Err(e) = &res {
            eprintln!("tegula-fs: unmount failed to write everything: {e}");
        }
        if let Some(tx) = self.done.take() {
            let _ = tx.send(res);
        }
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let name = name.as_bytes().to_vec();
        with_read!(self, reply, |fs| {
            let a = tryr!(reply, fs.lookup(parent, &name));
            reply.entry(&TTL, &attr(&a), 0);
        });
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        with_read!(self, reply, |fs| {
            let a = tryr!(reply, fs.getattr(ino));
            reply.attr(&TTL, &attr(&a));
        });
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let sa = SetAttr {
            size,
            perm: mode,
            uid,
            gid,
            atime: atime.map(ns),
            mtime: mtime.map(ns),
        };
        with_write!(self, reply, |_sh, fs| {
            let a = tryr!(reply, fs.setattr(ino, &sa));
            reply.attr(&TTL, &attr(&a));
        });
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        with_read!(self, reply, |fs| {
            let t = tryr!(reply, fs.readlink(ino));
            reply.data(&t);
        });
    }

    fn mknod(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG && mode & libc::S_IFMT != 0 {
            reply.error(libc::EPERM);
            return;
        }
        let (name, uid, gid) = (name.as_bytes().to_vec(), req.uid(), req.gid());
        with_write!(self, reply, |_sh, fs| {
            let a = tryr!(reply, fs.create(parent, &name, mode & !umask, uid, gid));
            reply.entry(&TTL, &attr(&a), 0);
        });
    }

    fn mkdir(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let (name, uid, gid) = (name.as_bytes().to_vec(), req.uid(), req.gid());
        with_write!(self, reply, |_sh, fs| {
            let a = tryr!(reply, fs.mkdir(parent, &name, mode & !umask, uid, gid));
            reply.entry(&TTL, &attr(&a), 0);
        });
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let name = name.as_bytes().to_vec();
        with_write!(self, reply, |_sh, fs| {
            tryr!(reply, fs.unlink(parent, &name));
            reply.ok();
        });
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let name = name.as_bytes().to_vec();
        with_write!(self, reply, |_sh, fs| {
            tryr!(reply, fs.rmdir(parent, &name));
            reply.ok();
        });
    }

    fn symlink(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let (name, uid, gid) = (link_name.as_bytes().to_vec(), req.uid(), req.gid());
        let target = target.as_os_str().as_bytes().to_vec();
        with_write!(self, reply, |_sh, fs| {
            let a = tryr!(reply, fs.symlink(parent, &name, &target, uid, gid));
            reply.entry(&TTL, &attr(&a), 0);
        });
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        if flags & libc::RENAME_EXCHANGE != 0 {
            reply.error(libc::EINVAL);
            return;
        }
        let no_replace = flags & libc::RENAME_NOREPLACE != 0;
        let (name, newname) = (name.as_bytes().to_vec(), newname.as_bytes().to_vec());
        with_write!(self, reply, |_sh, fs| {
            tryr!(
                reply,
                fs.rename(parent, &name, newparent, &newname, no_replace)
            );
            reply.ok();
        });
    }

    fn link(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let newname = newname.as_bytes().to_vec();
        with_write!(self, reply, |_sh, fs| {
            let a = tryr!(reply, fs.link(ino, newparent, &newname));
            reply.entry(&TTL, &attr(&a), 0);
        });
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        with_write!(self, reply, |sh, fs| {
            tryr!(reply, fs.open_file(ino));
            if flags & libc::O_TRUNC != 0 && flags & libc::O_ACCMODE != libc::O_RDONLY {
                // The kernel normally sends a setattr for O_TRUNC; this covers atomic_o_trunc.
                let sa = SetAttr {
                    size: Some(0),
                    ..SetAttr::default()
                };
                tryr!(reply, fs.setattr(ino, &sa));
            }
            let fh = sh.handle(ino, flags);
            reply.opened(fh, KEEP_CACHE);
        });
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        with_read!(self, reply, |fs| {
            let d = tryr!(reply, fs.read(ino, offset.max(0) as u64, size as usize));
            reply.data(&d);
        });
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let data = data.to_vec();
        self.shared
            .max_write_seen
            .fetch_max(data.len() as u64, Ordering::Relaxed);
        with_write!(self, reply, |sh, fs| {
            let append = sh.handles().get(&fh).is_some_and(|h| h.append);
            tryr!(reply, fs.write(ino, offset.max(0) as u64, &data, append));
            reply.written(data.len() as u32);
        });
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        // close() does not wait for the disk (as on a page-cache file system); fsync does.
        reply.ok();
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        with_write!(self, reply, |sh, fs| {
            let Some(h) = sh.handles().remove(&fh) else {
                reply.ok();
                return;
            };
            tryr!(reply, fs.release(h.ino));
            reply.ok();
        });
    }

    fn fsync(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // fdatasync gets the same treatment: the size and the extent map are metadata the
        // data needs, and committing the rest of the batch costs nothing extra.
        with_write!(self, reply, |_sh, fs| {
            tryr!(reply, fs.fsync(ino));
            reply.ok();
        });
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        with_read!(self, reply, |fs| {
            let parent = tryr!(reply, fs.parent(ino));
            let entries = tryr!(reply, fs.readdir(ino));
            let mut all: Vec<(u64, FileType, Vec<u8>)> = vec![
                (ino, FileType::Directory, b".".to_vec()),
                (parent, FileType::Directory, b"..".to_vec()),
            ];
            all.extend(entries.into_iter().map(|(n, i, k)| (i, file_type(k), n)));
            for (i, (ino, kind, name)) in all.iter().enumerate().skip(offset.max(0) as usize) {
                if reply.add(*ino, (i + 1) as i64, *kind, OsStr::from_bytes(name)) {
                    break;
                }
            }
            reply.ok();
        });
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        with_write!(self, reply, |_sh, fs| {
            tryr!(reply, fs.fsync_dir(ino));
            reply.ok();
        });
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        with_read!(self, reply, |fs| {
            let s = fs.statfs();
            reply.statfs(
                s.blocks,
                s.free_blocks,
                s.free_blocks,
                s.files + s.free_files,
                s.free_files,
                s.block_size as u32,
                255,
                s.block_size as u32,
            );
        });
    }

    fn create(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let (name, uid, gid) = (name.as_bytes().to_vec(), req.uid(), req.gid());
        with_write!(self, reply, |sh, fs| {
            let a = tryr!(reply, fs.create(parent, &name, mode & !umask, uid, gid));
            tryr!(reply, fs.open_file(a.ino));
            let fh = sh.handle(a.ino, flags);
            reply.created(&TTL, &attr(&a), 0, fh, KEEP_CACHE);
        });
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        // Space is allocated when data is written; preallocation that keeps the size is a
        // no-op, plain mode only extends the size.
        if mode == libc::FALLOC_FL_KEEP_SIZE {
            reply.ok();
            return;
        }
        if mode != 0 {
            reply.error(libc::EOPNOTSUPP);
            return;
        }
        with_write!(self, reply, |_sh, fs| {
            let a = tryr!(reply, fs.getattr(ino));
            let end = (offset.saturating_add(length)).max(0) as u64;
            if end > a.size {
                let sa = SetAttr {
                    size: Some(end),
                    ..SetAttr::default()
                };
                tryr!(reply, fs.setattr(ino, &sa));
            }
            reply.ok();
        });
    }

    fn access(&mut self, _req: &Request<'_>, ino: u64, _mask: i32, reply: ReplyEmpty) {
        with_read!(self, reply, |fs| {
            tryr!(reply, fs.getattr(ino));
            reply.ok();
        });
    }
}
