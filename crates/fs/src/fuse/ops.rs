//! The requests: each fuser call runs on the session thread when it only touches memory,
//! or on a worker when it may wait for the drive, calling the core under the read or the
//! write lock and replying.

use super::convert::{attr, file_type, kind_of_mode, ns};
use super::{unmounted, writer, FuseFs, Shared, KEEP_CACHE, MAX_WRITE, TTL};
use crate::error::FsError;
use crate::fs::{Attr, Fs, SetAttr};
use crate::profile::op;
use crate::serve::{self, try_reply};
use fuser::{
    Filesystem, KernelConfig, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow,
};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

/// Attribute lifetime for a file system low on space: zero, so that the kernel asks again at
/// every `write` call and a write the drive cannot hold fails there (see `getattr`).
const NO_TTL: Duration = Duration::ZERO;

fn ttl(fs: &Fs) -> &'static Duration {
    if fs.space_is_low() {
        &NO_TTL
    } else {
        &TTL
    }
}

impl Filesystem for FuseFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), libc::c_int> {
        let wb = serve::configure(config, MAX_WRITE, self.want_writeback);
        self.shared.writeback.store(wb, Ordering::Relaxed);
        self.start_background();
        Ok(())
    }

    fn destroy(&mut self) {
        // Let queued requests finish, then the background threads, before the final flush.
        self.lanes.stop("worker thread");
        self.stop_background();
        tracing::info!(
            "{} requests served ({} workers); largest write request {} bytes",
            self.shared.requests.load(Ordering::Relaxed),
            self.threads,
            self.shared.max_write_seen.load(Ordering::Relaxed)
        );
        let fs = self.shared.w().take();
        let res = match fs {
            Some(fs) => fs.close(),
            None => Ok(()),
        };
        if let Err(e) = &res {
            tracing::error!("unmount failed to write everything: {e}");
        }
        if let Some(tx) = self.done.take() {
            let _ = tx.send(res);
        }
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let name = name.as_bytes();
        with_read!(self, inline, op::LOOKUP, reply, |fs| {
            let a = try_reply!(reply, fs.lookup(parent, name));
            entry(fs, reply, &a)
        });
    }

    fn forget(&mut self, _req: &Request<'_>, ino: u64, nlookup: u64) {
        self.lanes.inline(op::FORGET, |sh: &Shared| {
            let mut g = sh.w();
            let Some(fs) = g.as_mut() else {
                return (false, 0);
            };
            if let Err(e) = fs.forget(ino, nlookup) {
                tracing::error!("forget of inode {ino}: {e}");
                return (false, 0);
            }
            (true, 0)
        });
    }

    fn batch_forget(&mut self, _req: &Request<'_>, nodes: &[fuser::fuse_forget_one]) {
        self.lanes.inline(op::BATCH_FORGET, |sh: &Shared| {
            let mut g = sh.w();
            let Some(fs) = g.as_mut() else {
                return (false, 0);
            };
            let mut ok = true;
            for n in nodes {
                if let Err(e) = fs.forget(n.nodeid, n.nlookup) {
                    tracing::error!("forget of inode {}: {e}", n.nodeid);
                    ok = false;
                }
            }
            (ok, 0)
        });
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, fh: Option<u64>, reply: ReplyAttr) {
        with_read!(self, inline, op::GETATTR, reply, |fs| {
            // With the writeback cache a `write` call only fills the page cache; the kernel
            // asks for the attributes first (with the handle) once they expire, and an error
            // here fails the call: so a file whose data found no room fails its writer at
            // `write`, not only at `close`.
            if fh.is_some() && fs.is_out_of_space(ino) {
                reply.error(libc::ENOSPC);
                return (false, 0);
            }
            let a = try_reply!(reply, fs.getattr(ino));
            reply.attr(ttl(fs), &attr(&a));
            (true, 0)
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
        with_write!(self, inline, op::SETATTR, reply, |_sh, fs| {
            let a = try_reply!(reply, fs.setattr(ino, &sa));
            reply.attr(ttl(fs), &attr(&a));
            (true, 0)
        });
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        with_read!(self, inline, op::READLINK, reply, |fs| {
            let t = try_reply!(reply, fs.readlink(ino));
            reply.data(&t);
            (true, 0)
        });
    }

    fn mknod(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let Some(kind) = kind_of_mode(mode) else {
            reply.error(libc::EINVAL);
            return;
        };
        let (name, uid, gid) = (name.as_bytes(), req.uid(), req.gid());
        with_write!(self, inline, op::MKNOD, reply, |_sh, fs| {
            let a = try_reply!(
                reply,
                fs.mknod(parent, name, kind, mode & !umask, rdev, uid, gid)
            );
            entry(fs, reply, &a)
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
        let (name, uid, gid) = (name.as_bytes(), req.uid(), req.gid());
        with_write!(self, inline, op::MKDIR, reply, |_sh, fs| {
            let a = try_reply!(reply, fs.mkdir(parent, name, mode & !umask, uid, gid));
            entry(fs, reply, &a)
        });
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let name = name.as_bytes();
        with_write!(self, inline, op::UNLINK, reply, |_sh, fs| {
            try_reply!(reply, fs.unlink(parent, name));
            reply.ok();
            (true, 0)
        });
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let name = name.as_bytes();
        with_write!(self, inline, op::RMDIR, reply, |_sh, fs| {
            try_reply!(reply, fs.rmdir(parent, name));
            reply.ok();
            (true, 0)
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
        let (name, uid, gid) = (link_name.as_bytes(), req.uid(), req.gid());
        let target = target.as_os_str().as_bytes();
        with_write!(self, inline, op::SYMLINK, reply, |_sh, fs| {
            let a = try_reply!(reply, fs.symlink(parent, name, target, uid, gid));
            entry(fs, reply, &a)
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
        let (name, newname) = (name.as_bytes(), newname.as_bytes());
        with_write!(self, inline, op::RENAME, reply, |_sh, fs| {
            try_reply!(
                reply,
                fs.rename(parent, name, newparent, newname, no_replace)
            );
            reply.ok();
            (true, 0)
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
        let newname = newname.as_bytes();
        with_write!(self, inline, op::LINK, reply, |_sh, fs| {
            let a = try_reply!(reply, fs.link(ino, newparent, newname));
            entry(fs, reply, &a)
        });
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        with_write!(self, inline, op::OPEN, reply, |sh, fs| {
            try_reply!(reply, fs.open_file(ino));
            let writing = flags & libc::O_ACCMODE != libc::O_RDONLY;
            if flags & libc::O_TRUNC != 0 && writing {
                // The kernel normally sends a setattr for O_TRUNC; this covers atomic_o_trunc.
                let sa = SetAttr {
                    size: Some(0),
                    ..SetAttr::default()
                };
                try_reply!(reply, fs.setattr(ino, &sa));
            }
            let fh = sh.handle(ino, flags);
            reply.opened(fh, open_flags(fs, writing));
            (true, 0)
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
        with_read!(self, worker, op::READ, reply, |fs| {
            let d = try_reply!(reply, fs.read(ino, offset.max(0) as u64, size as usize));
            reply.data(&d);
            (true, d.len() as u64)
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
        self.shared
            .max_write_seen
            .fetch_max(data.len() as u64, Ordering::Relaxed);
        let off = offset.max(0) as u64;
        // Buffering costs only memory; when the writer falls behind (twice the dirty limit
        // buffered) or the cleaner must free space first, the write waits on a worker.
        let len = data.len() as u64;
        let must_wait = {
            let g = self.shared.r();
            g.as_ref().is_some_and(|fs| {
                fs.writers_must_wait(&self.shared.triggers()) || fs.fits_after_orphans(len)
            })
        };
        if !must_wait {
            with_write!(self, inline, op::WRITE, reply, |sh, fs| {
                let append = sh.handles().get(&fh).is_some_and(|h| h.append);
                try_reply!(reply, fs.write(ino, off, data, append));
                reply.written(data.len() as u32);
                (true, data.len() as u64)
            });
            return;
        }
        let data = data.to_vec();
        self.lanes.worker(op::WRITE, move |sh: &Shared| {
            sh.wait_until_writable();
            sh.wait_for_orphans(len);
            let mut g = sh.w();
            let fs: &mut Fs = try_reply!(reply, g.as_mut().ok_or_else(unmounted));
            let append = sh.handles().get(&fh).is_some_and(|h| h.append);
            let res = fs.write(ino, off, &data, append);
            sh.send_flushes(fs);
            try_reply!(reply, res);
            reply.written(data.len() as u32);
            (true, data.len() as u64)
        });
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        // close() does not wait for the disk (as on a page-cache file system); fsync does.
        self.lanes.ok(op::FLUSH, reply);
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
        // The last release hands the file's buffer to the writer thread and returns.
        with_write!(self, inline, op::RELEASE, reply, |sh, fs| {
            let Some(h) = sh.handles().remove(&fh) else {
                reply.ok();
                return (true, 0);
            };
            try_reply!(reply, fs.release(h.ino));
            sh.progress.tick();
            reply.ok();
            (true, 0)
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
        // data needs, and committing the rest of the batch costs nothing extra. The file's
        // data goes through the writer (after the file's earlier jobs), then one commit.
        self.lanes.worker(op::FSYNC, move |sh: &Shared| {
            let (tx, rx) = mpsc::channel();
            let sent = sh
                .writer
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_some_and(|w| w.send(writer::Msg::Sync(ino, tx.clone())).is_ok());
            let written = if sent {
                rx.recv()
                    .unwrap_or_else(|_| Err(FsError::Broken("the writer stopped".into())))
            } else {
                writer::write_file(sh, ino)
            };
            try_reply!(reply, written);
            let mut g = sh.w();
            let fs: &mut Fs = try_reply!(reply, g.as_mut().ok_or_else(unmounted));
            try_reply!(reply, fs.fsync(ino));
            reply.ok();
            (true, 0)
        });
    }

    fn opendir(&mut self, _req: &Request<'_>, _ino: u64, _flags: i32, reply: ReplyOpen) {
        self.lanes.inline(op::OPENDIR, |_sh| {
            reply.opened(0, 0);
            (true, 0)
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
        with_read!(self, inline, op::READDIR, reply, |fs| {
            try_reply!(
                reply,
                fs.readdir_from(ino, offset.max(0) as u64, |e| {
                    reply.add(
                        e.ino,
                        e.offset as i64,
                        file_type(e.kind),
                        OsStr::from_bytes(e.name),
                    )
                })
            );
            reply.ok();
            (true, 0)
        });
    }

    fn releasedir(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        _flags: i32,
        reply: ReplyEmpty,
    ) {
        self.lanes.ok(op::RELEASEDIR, reply);
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        with_write!(self, worker, op::FSYNCDIR, reply, |_sh, fs| {
            try_reply!(reply, fs.fsync_dir(ino));
            reply.ok();
            (true, 0)
        });
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        with_read!(self, inline, op::STATFS, reply, |fs| {
            let s = fs.statfs();
            reply.statfs(
                s.blocks,
                s.free_blocks,
                s.free_blocks,
                s.files + s.free_files,
                s.free_files,
                s.block_size as u32,
                crate::fs::NAME_MAX as u32,
                s.block_size as u32,
            );
            (true, 0)
        });
    }

    fn getxattr(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        self.lanes.no_xattr(op::GETXATTR, reply);
    }

    fn listxattr(&mut self, _req: &Request<'_>, _ino: u64, _size: u32, reply: ReplyXattr) {
        self.lanes.no_xattr(op::LISTXATTR, reply);
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
        let (name, uid, gid) = (name.as_bytes(), req.uid(), req.gid());
        with_write!(self, inline, op::CREATE, reply, |sh, fs| {
            let a = try_reply!(reply, fs.create(parent, name, mode & !umask, uid, gid));
            try_reply!(reply, fs.open_file(a.ino));
            fs.remember(a.ino);
            let fh = sh.handle(a.ino, flags);
            let writing = flags & libc::O_ACCMODE != libc::O_RDONLY;
            reply.created(ttl(fs), &attr(&a), 0, fh, open_flags(fs, writing));
            (true, 0)
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
        if mode != 0 && mode != libc::FALLOC_FL_KEEP_SIZE {
            reply.error(libc::EOPNOTSUPP);
            return;
        }
        with_write!(self, inline, op::FALLOCATE, reply, |_sh, fs| {
            let a = try_reply!(reply, fs.getattr(ino));
            let end = offset.saturating_add(length).max(0) as u64;
            if end > fs.free_bytes().saturating_add(a.size) {
                reply.error(libc::ENOSPC);
                return (false, 0);
            }
            if mode == 0 && end > a.size {
                let sa = SetAttr {
                    size: Some(end),
                    ..SetAttr::default()
                };
                try_reply!(reply, fs.setattr(ino, &sa));
            }
            reply.ok();
            (true, 0)
        });
    }

    fn access(&mut self, _req: &Request<'_>, ino: u64, _mask: i32, reply: ReplyEmpty) {
        with_read!(self, inline, op::ACCESS, reply, |fs| {
            try_reply!(reply, fs.getattr(ino));
            reply.ok();
            (true, 0)
        });
    }
}

/// Replies to a request that made or found `a` with its entry, counting the kernel's new
/// reference to it.
fn entry(fs: &Fs, reply: ReplyEntry, a: &Attr) -> (bool, u64) {
    fs.remember(a.ino);
    reply.entry(ttl(fs), &attr(a), 0);
    (true, 0)
}

/// Open flags: keep the page cache; and when the drive is nearly full, write around the
/// kernel's writeback cache (each write then reaches the file system, which can refuse
/// what the drive cannot hold).
fn open_flags(fs: &Fs, writing: bool) -> u32 {
    if writing && fs.space_is_low() {
        KEEP_CACHE | fuser::consts::FOPEN_DIRECT_IO
    } else {
        KEEP_CACHE
    }
}
