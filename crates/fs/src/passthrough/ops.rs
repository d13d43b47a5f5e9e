//! The pass-through requests: metadata on the session thread, data and fsync on workers.

use super::sys::{self, Make};
use super::{lock, Dir, Node, Passthrough, PtShared};
use crate::profile::op;
use crate::serve::{self, try_reply};
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

    /// Makes `what` named `name` in `parent` (see [`sys::make`]) and looks it up.
    fn make(
        &self,
        parent: u64,
        name: &OsStr,
        what: Make<'_>,
        perm: u32,
        (uid, gid): (u32, u32),
    ) -> Result<FileAttr, i32> {
        let c = sys::cname(name)?;
        sys::make(self.fd(parent)?, &c, what, perm, uid, gid)?;
        self.lookup(parent, name)
    }

    /// Removes `name` from `parent`: a directory when `dir`.
    fn unlink(&self, parent: u64, name: &OsStr, dir: bool) -> Result<(), i32> {
        let c = sys::cname(name)?;
        sys::unlink(self.fd(parent)?, &c, dir)
    }
}

impl Filesystem for Passthrough {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), libc::c_int> {
        let wb = serve::configure(config, crate::fuse::MAX_WRITE, self.want_writeback);
        self.lanes.shared().writeback.store(wb, Ordering::Relaxed);
        Ok(())
    }

    fn destroy(&mut self) {
        self.lanes.stop("pass-through worker");
        lock(&self.lanes.shared().files).clear();
        lock(&self.lanes.shared().dirs).clear();
        if let Some(tx) = self.done.take() {
            let _ = tx.send(Ok(()));
        }
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        self.lanes.inline(op::LOOKUP, |st| {
            let a = try_reply!(reply, st.lookup(parent, name));
            reply.entry(&TTL, &a, 0);
            (true, 0)
        });
    }

    fn forget(&mut self, _req: &Request<'_>, ino: u64, nlookup: u64) {
        self.lanes.inline(op::FORGET, |st| {
            st.forget(ino, nlookup);
            (true, 0)
        });
    }

    fn batch_forget(&mut self, _req: &Request<'_>, nodes: &[fuser::fuse_forget_one]) {
        self.lanes.inline(op::BATCH_FORGET, |st| {
            for n in nodes {
                st.forget(n.nodeid, n.nlookup);
            }
            (true, 0)
        });
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        self.lanes.inline(op::GETATTR, |st| {
            let a = try_reply!(reply, st.getattr(ino));
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
        self.lanes.inline(op::SETATTR, |st| {
            let fd = try_reply!(reply, st.fd(ino));
            let file = fh.and_then(|h| st.file(h).ok());
            try_reply!(
                reply,
                sys::setattr(fd, file, mode, uid, gid, size, atime, mtime)
            );
            let a = try_reply!(reply, st.getattr(ino));
            reply.attr(&TTL, &a);
            (true, 0)
        });
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        self.lanes.inline(op::READLINK, |st| {
            let fd = try_reply!(reply, st.fd(ino));
            let t = try_reply!(reply, sys::readlink(fd));
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
        let owner = (req.uid(), req.gid());
        self.lanes.inline(op::MKNOD, |st| {
            let what = Make::Node { mode, rdev };
            let a = try_reply!(reply, st.make(parent, name, what, perm(mode, umask), owner));
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
        let owner = (req.uid(), req.gid());
        self.lanes.inline(op::MKDIR, |st| {
            let what = Make::Dir;
            let a = try_reply!(reply, st.make(parent, name, what, perm(mode, umask), owner));
            reply.entry(&TTL, &a, 0);
            (true, 0)
        });
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.lanes.inline(op::UNLINK, |st| {
            try_reply!(reply, st.unlink(parent, name, false));
            reply.ok();
            (true, 0)
        });
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        self.lanes.inline(op::RMDIR, |st| {
            try_reply!(reply, st.unlink(parent, name, true));
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
        let owner = (req.uid(), req.gid());
        self.lanes.inline(op::SYMLINK, |st| {
            let t = try_reply!(reply, sys::cname(target.as_os_str()));
            let what = Make::Symlink(&t);
            let a = try_reply!(reply, st.make(parent, link_name, what, 0o777, owner));
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
        self.lanes.inline(op::RENAME, |st| {
            let c = try_reply!(reply, sys::cname(name));
            let nc = try_reply!(reply, sys::cname(newname));
            let pfd = try_reply!(reply, st.fd(parent));
            let npfd = try_reply!(reply, st.fd(newparent));
            try_reply!(reply, sys::rename(pfd, &c, npfd, &nc, flags));
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
        self.lanes.inline(op::LINK, |st| {
            let nc = try_reply!(reply, sys::cname(newname));
            let fd = try_reply!(reply, st.fd(ino));
            let npfd = try_reply!(reply, st.fd(newparent));
            try_reply!(reply, sys::link(fd, npfd, &nc));
            let a = try_reply!(reply, st.lookup(newparent, newname));
            reply.entry(&TTL, &a, 0);
            (true, 0)
        });
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        self.lanes.inline(op::OPEN, |st| {
            let fd = try_reply!(reply, st.fd(ino));
            let f = try_reply!(reply, sys::reopen(fd, io_flags(st, flags)));
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
        self.lanes.worker(op::READ, move |st| {
            let fd = try_reply!(reply, st.file(fh));
            let d = try_reply!(reply, sys::pread(fd, offset.max(0) as u64, size as usize));
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
        self.lanes.worker(op::WRITE, move |st| {
            let fd = try_reply!(reply, st.file(fh));
            let n = try_reply!(reply, sys::pwrite(fd, offset.max(0) as u64, &data));
            reply.written(n as u32);
            (true, n as u64)
        });
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
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
        self.lanes.inline(op::RELEASE, |st| {
            lock(&st.files).remove(&fh);
            reply.ok();
            (true, 0)
        });
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, fh: u64, datasync: bool, reply: ReplyEmpty) {
        self.lanes.worker(op::FSYNC, move |st| {
            let fd = try_reply!(reply, st.file(fh));
            try_reply!(reply, sys::fsync(fd, datasync));
            reply.ok();
            (true, 0)
        });
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        self.lanes.inline(op::OPENDIR, |st| {
            let fd = try_reply!(reply, st.fd(ino));
            let d = try_reply!(reply, sys::opendir(fd));
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
        self.lanes.inline(op::READDIR, |st| {
            let dirs = lock(&st.dirs);
            let Some(d) = dirs.get(&fh) else {
                reply.error(libc::EBADF);
                return (false, 0);
            };
            try_reply!(
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
        self.lanes.inline(op::RELEASEDIR, |st| {
            lock(&st.dirs).remove(&fh);
            reply.ok();
            (true, 0)
        });
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, ds: bool, reply: ReplyEmpty) {
        self.lanes.worker(op::FSYNCDIR, move |st| {
            let fd = try_reply!(reply, st.fd(ino));
            let d = try_reply!(reply, sys::reopen(fd, libc::O_RDONLY | libc::O_DIRECTORY));
            try_reply!(reply, sys::fsync(d.as_raw_fd(), ds));
            reply.ok();
            (true, 0)
        });
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        self.lanes.inline(op::STATFS, |st| {
            let s = try_reply!(reply, sys::statvfs(st.root.as_raw_fd()));
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
        self.lanes.no_xattr(op::GETXATTR, reply);
    }

    fn listxattr(&mut self, _req: &Request<'_>, _ino: u64, _size: u32, reply: ReplyXattr) {
        self.lanes.no_xattr(op::LISTXATTR, reply);
    }

    fn access(&mut self, _req: &Request<'_>, _ino: u64, _mask: i32, reply: ReplyEmpty) {
        // The kernel checks permissions (default_permissions).
        self.lanes.ok(op::ACCESS, reply);
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
        self.lanes.inline(op::CREATE, |st| {
            let c = try_reply!(reply, sys::cname(name));
            let pfd = try_reply!(reply, st.fd(parent));
            let perm = perm(mode, umask);
            let f = try_reply!(reply, sys::create_at(pfd, &c, io_flags(st, flags), perm));
            // SAFETY: plain calls on the descriptor just opened.
            let fixed = unsafe {
                libc::fchmod(f.as_raw_fd(), perm as libc::mode_t) == 0
                    && libc::fchown(f.as_raw_fd(), uid, gid) == 0
            };
            if !fixed {
                reply.error(sys::errno());
                return (false, 0);
            }
            let a = try_reply!(reply, st.lookup(parent, name));
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
        self.lanes.inline(op::FALLOCATE, |st| {
            let fd = try_reply!(reply, st.file(fh));
            try_reply!(reply, sys::fallocate(fd, mode, offset, length));
            reply.ok();
            (true, 0)
        });
    }
}

/// The permission bits of a new file: those of `mode` the `umask` lets through.
fn perm(mode: u32, umask: u32) -> u32 {
    mode & 0o7777 & !umask
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
