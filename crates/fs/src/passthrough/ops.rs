//! The pass-through requests: metadata on the session thread, data and fsync on workers.

use super::sys::{self, Make};
use super::{lock, Dir, Node, Passthrough, PtShared};
use crate::profile::op;
use fuser::{
    FileAttr, Filesystem, KernelConfig, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow,
};
use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

const TTL: Duration = Duration::from_secs(1);

/// Replies with the errno and returns `(false, 0)` from the request's closure.
macro_rules! tryp {
    ($reply:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(errno) => {
                $reply.error(errno);
                return (false, 0);
            }
        }
    };
}

impl PtShared {
    /// Looks `name` up in `parent` and counts a kernel reference to what it finds.
    fn lookup(&self, parent: u64, name: &OsStr) -> Result<FileAttr, i32> {
        let name = sys::cname(name)?;
        let mut t = lock(&self.inodes);
        let pfd = t.fd(parent)?;
        let fd = sys::open_at(pfd, &name)?;
        let st = sys::stat(fd.as_raw_fd())?;
        let key = (st.st_dev, st.st_ino);
        if let Some(&ino) = t.by_key.get(&key) {
            if let Some(n) = t.nodes.get_mut(&ino) {
                n.lookups += 1;
                return Ok(sys::attr(ino, &st));
            }
        }
        let ino = t.next;
        t.next += 1;
        t.nodes.insert(
            ino,
            Node {
                fd,
                key,
                lookups: 1,
            },
        );
        t.by_key.insert(key, ino);
        Ok(sys::attr(ino, &st))
    }

    fn forget(&self, ino: u64, n: u64) {
        if ino == fuser::FUSE_ROOT_ID {
            return;
        }
        let mut t = lock(&self.inodes);
        let gone = match t.nodes.get_mut(&ino) {
            Some(node) => {
                node.lookups = node.lookups.saturating_sub(n);
                node.lookups == 0
            }
            None => false,
        };
        if gone {
            if let Some(node) = t.nodes.remove(&ino) {
                if t.by_key.get(&node.key) == Some(&ino) {
                    t.by_key.remove(&node.key);
                }
            }
        }
    }

    fn getattr(&self, ino: u64) -> Result<FileAttr, i32> {
        let t = lock(&self.inodes);
        let st = sys::stat(t.fd(ino)?)?;
        Ok(sys::attr(ino, &st))
    }

    fn fd(&self, ino: u64) -> Result<i32, i32> {
        lock(&self.inodes).fd(ino)
    }
}

impl Filesystem for Passthrough {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), libc::c_int> {
        let _ = config.set_max_write(crate::fuse::MAX_WRITE);
        let _ = config.set_max_readahead(crate::fuse::MAX_WRITE);
        let wb = self.want_writeback
            && config
                .add_capabilities(fuser::consts::FUSE_WRITEBACK_CACHE)
                .is_ok();
        self.st.writeback.store(wb, Ordering::Relaxed);
        Ok(())
    }

    fn destroy(&mut self) {
        drop(self.tx.take());
        for w in self.workers.drain(..) {
            if w.join().is_err() {
                eprintln!("tegula-fs: a pass-through worker panicked");
            }
        }
        lock(&self.st.files).clear();
        lock(&self.st.dirs).clear();
        if let Some(tx) = self.done.take() {
            let _ = tx.send(Ok(()));
        }
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        self.inline(op::LOOKUP, |st| {
            let a = tryp!(reply, st.lookup(parent, name));
            reply.entry(&TTL, &a, 0);
            (true, 0)
        });
    }

    fn forget(&mut self, _req: &Request<'_>, ino: u64, nlookup: u64) {
        self.inline(op::FORGET, |st| {
            st.forget(ino, nlookup);
            (true, 0)
        });
    }

    fn batch_forget(&mut self, _req: &Request<'_>, nodes: &[fuser::fuse_forget_one]) {
        self.inline(op::BATCH_FORGET, |st| {
            for n in nodes {
                st.forget(n.nodeid, n.nlookup);
            }
            (true, 0)
        });
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        self.inline(op::GETATTR, |st| {
            let a = tryp!(reply, st.getattr(ino));
            reply.attr(&TTL, &a);
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
        fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        self.inline(op::SETATTR, |st| {
            let fd = tryp!(reply, st.fd(ino));
            let file = fh.and_then(|h| st.file(h).ok());
            tryp!(
                reply,
                sys::setattr(fd, file, mode, uid, gid, size, atime, mtime)
            );
            let a = tryp!(reply, st.getattr(ino));
            reply.attr(&TTL, &a);
            (true, 0)
        });
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        self.inline(op::READLINK, |st| {
            let fd = tryp!(reply, st.fd(ino));
            let t = tryp!(reply, sys::readlink(fd));
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
        let (uid, gid) = (req.uid(), req.gid());
        self.inline(op::MKNOD, |st| {
            let c = tryp!(reply, sys::cname(name));
            let pfd = tryp!(reply, st.fd(parent));
            let perm = mode & 0o7777 & !umask;
            tryp!(
                reply,
                sys::make(pfd, &c, Make::Node { mode, rdev }, perm, uid, gid)
            );
            let a = tryp!(reply, st.lookup(parent, name));
            reply.entry(&TTL, &a, 0);
            (true, 0)
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
        let (uid, gid) = (req.uid(), req.gid());
        self.inline(op::MKDIR, |st| {
            let c = tryp!(reply, sys::cname(name));
            let pfd = tryp!(reply, st.fd(parent));
            tryp!(
                reply,
                sys::make(pfd, &c, Make::Dir, mode & 0o7777 & !umask, uid, gid)
            );
            let a = tryp!(reply, st.lookup(parent, name));
            reply.entry(&TTL, &a, 0);
            (true, 0)
        });
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.inline(op::UNLINK, |st| {
            let c = tryp!(reply, sys::cname(name));
            let pfd = tryp!(reply, st.fd(parent));
            tryp!(reply, sys::unlink(pfd, &c, false));
            reply.ok();
            (true, 0)
        });
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.inline(op::RMDIR, |st| {
            let c = tryp!(reply, sys::cname(name));
            let pfd = tryp!(reply, st.fd(parent));
            tryp!(reply, sys::unlink(pfd, &c, true));
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
        let (uid, gid) = (req.uid(), req.gid());
        self.inline(op::SYMLINK, |st| {
            let c = tryp!(reply, sys::cname(link_name));
            let t = tryp!(reply, sys::cname(target.as_os_str()));
            let pfd = tryp!(reply, st.fd(parent));
            tryp!(
                reply,
                sys::make(pfd, &c, Make::Symlink(&t), 0o777, uid, gid)
            );
            let a = tryp!(reply, st.lookup(parent, link_name));
            reply.entry(&TTL, &a, 0);
            (true, 0)
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
        self.inline(op::RENAME, |st| {
            let c = tryp!(reply, sys::cname(name));
            let nc = tryp!(reply, sys::cname(newname));
            let pfd = tryp!(reply, st.fd(parent));
            let npfd = tryp!(reply, st.fd(newparent));
            tryp!(reply, sys::rename(pfd, &c, npfd, &nc, flags));
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
        self.inline(op::LINK, |st| {
            let nc = tryp!(reply, sys::cname(newname));
            let fd = tryp!(reply, st.fd(ino));
            let npfd = tryp!(reply, st.fd(newparent));
            tryp!(reply, sys::link(fd, npfd, &nc));
            let a = tryp!(reply, st.lookup(newparent, newname));
            reply.entry(&TTL, &a, 0);
            (true, 0)
        });
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        self.inline(op::OPEN, |st| {
            let fd = tryp!(reply, st.fd(ino));
            let f = tryp!(reply, sys::reopen(fd, io_flags(st, flags)));
            let fh = st.add_file(f);
            reply.opened(fh, fuser::consts::FOPEN_KEEP_CACHE);
            (true, 0)
        });
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        self.worker(op::READ, move |st| {
            let fd = tryp!(reply, st.file(fh));
            let d = tryp!(reply, sys::pread(fd, offset.max(0) as u64, size as usize));
            reply.data(&d);
            (true, d.len() as u64)
        });
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let data = data.to_vec();
        self.worker(op::WRITE, move |st| {
            let fd = tryp!(reply, st.file(fh));
            let n = tryp!(reply, sys::pwrite(fd, offset.max(0) as u64, &data));
            reply.written(n as u32);
            (true, n as u64)
        });
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        self.inline(op::FLUSH, |_st| {
            reply.ok();
            (true, 0)
        });
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
        self.inline(op::RELEASE, |st| {
            lock(&st.files).remove(&fh);
            reply.ok();
            (true, 0)
        });
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, fh: u64, datasync: bool, reply: ReplyEmpty) {
        self.worker(op::FSYNC, move |st| {
            let fd = tryp!(reply, st.file(fh));
            tryp!(reply, sys::fsync(fd, datasync));
            reply.ok();
            (true, 0)
        });
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        self.inline(op::OPENDIR, |st| {
            let fd = tryp!(reply, st.fd(ino));
            let d = tryp!(reply, sys::opendir(fd));
            let fh = st.next_fh.fetch_add(1, Ordering::Relaxed);
            lock(&st.dirs).insert(fh, Dir(d));
            reply.opened(fh, 0);
            (true, 0)
        });
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        self.inline(op::READDIR, |st| {
            let dirs = lock(&st.dirs);
            let Some(d) = dirs.get(&fh) else {
                reply.error(libc::EBADF);
                return (false, 0);
            };
            tryp!(
                reply,
                sys::readdir(d.0, offset, |ino, off, kind, name| reply
                    .add(ino, off, kind, name))
            );
            reply.ok();
            (true, 0)
        });
    }

    fn releasedir(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        reply: ReplyEmpty,
    ) {
        self.inline(op::RELEASEDIR, |st| {
            lock(&st.dirs).remove(&fh);
            reply.ok();
            (true, 0)
        });
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, ds: bool, reply: ReplyEmpty) {
        self.worker(op::FSYNCDIR, move |st| {
            let fd = tryp!(reply, st.fd(ino));
            let d = tryp!(reply, sys::reopen(fd, libc::O_RDONLY | libc::O_DIRECTORY));
            tryp!(reply, sys::fsync(d.as_raw_fd(), ds));
            reply.ok();
            (true, 0)
        });
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        self.inline(op::STATFS, |st| {
            let s = tryp!(reply, sys::statvfs(st.root.as_raw_fd()));
            reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
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
        self.inline(op::GETXATTR, |_st| {
            reply.error(libc::ENOSYS);
            (false, 0)
        });
    }

    fn listxattr(&mut self, _req: &Request<'_>, _ino: u64, _size: u32, reply: ReplyXattr) {
        self.inline(op::LISTXATTR, |_st| {
            reply.error(libc::ENOSYS);
            (false, 0)
        });
    }

    fn access(&mut self, _req: &Request<'_>, _ino: u64, _mask: i32, reply: ReplyEmpty) {
        // The kernel checks permissions (default_permissions).
        self.inline(op::ACCESS, |_st| {
            reply.ok();
            (true, 0)
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
        let (uid, gid) = (req.uid(), req.gid());
        self.inline(op::CREATE, |st| {
            let c = tryp!(reply, sys::cname(name));
            let pfd = tryp!(reply, st.fd(parent));
            let perm = mode & 0o7777 & !umask;
            let f = tryp!(reply, sys::create_at(pfd, &c, io_flags(st, flags), perm));
            // SAFETY: plain calls on the descriptor just opened.
            let fixed = unsafe {
                libc::fchmod(f.as_raw_fd(), perm as libc::mode_t) == 0
                    && libc::fchown(f.as_raw_fd(), uid, gid) == 0
            };
            if !fixed {
                reply.error(sys::errno());
                return (false, 0);
            }
            let a = tryp!(reply, st.lookup(parent, name));
            let fh = st.add_file(f);
            reply.created(&TTL, &a, 0, fh, fuser::consts::FOPEN_KEEP_CACHE);
            (true, 0)
        });
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        self.inline(op::FALLOCATE, |st| {
            let fd = tryp!(reply, st.file(fh));
            tryp!(reply, sys::fallocate(fd, mode, offset, length));
            reply.ok();
            (true, 0)
        });
    }
}

/// Open flags for the host file: with the writeback cache the kernel may read pages of a
/// file opened write-only and keeps appends itself (as libfuse's `passthrough_ll` does).
fn io_flags(st: &PtShared, flags: i32) -> i32 {
    let mut f = flags;
    if st.writeback.load(Ordering::Relaxed) {
        if f & libc::O_ACCMODE == libc::O_WRONLY {
            f = (f & !libc::O_ACCMODE) | libc::O_RDWR;
        }
        f &= !libc::O_APPEND;
    }
    f
}
