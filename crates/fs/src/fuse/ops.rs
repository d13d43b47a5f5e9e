//! The requests: each fuser call becomes a job for the workers that calls the core under
//! the read or the write lock and replies.

use super::convert::{attr, file_type, kind_of_mode, ns};
use super::{unmounted, FuseFs, Shared, KEEP_CACHE, MAX_WRITE, TTL};
use crate::error::FsError;
use crate::fs::{Fs, SetAttr};
use fuser::{
    Filesystem, KernelConfig, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

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
            fs.remember(a.ino);
            reply.entry(&TTL, &attr(&a), 0);
        });
    }

    fn forget(&mut self, _req: &Request<'_>, ino: u64, nlookup: u64) {
        self.spawn(move |sh: &Shared| {
            if let Some(fs) = sh.w().as_mut() {
                if let Err(e) = fs.forget(ino, nlookup) {
                    eprintln!("tegula-fs: forget of inode {ino}: {e}");
                }
            }
        });
    }

    fn batch_forget(&mut self, _req: &Request<'_>, nodes: &[fuser::fuse_forget_one]) {
        let nodes: Vec<(u64, u64)> = nodes.iter().map(|n| (n.nodeid, n.nlookup)).collect();
        self.spawn(move |sh: &Shared| {
            if let Some(fs) = sh.w().as_mut() {
                for (ino, n) in nodes {
                    if let Err(e) = fs.forget(ino, n) {
                        eprintln!("tegula-fs: forget of inode {ino}: {e}");
                    }
                }
            }
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
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let Some(kind) = kind_of_mode(mode) else {
            reply.error(libc::EINVAL);
            return;
        };
        let (name, uid, gid) = (name.as_bytes().to_vec(), req.uid(), req.gid());
        with_write!(self, reply, |_sh, fs| {
            let a = tryr!(
                reply,
                fs.mknod(parent, &name, kind, mode & !umask, rdev, uid, gid)
            );
            fs.remember(a.ino);
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
            fs.remember(a.ino);
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
            fs.remember(a.ino);
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
            fs.remember(a.ino);
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
            tryr!(
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
            fs.remember(a.ino);
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
