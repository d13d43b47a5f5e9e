//! The FUSE adapter: translates kernel requests into calls on [`Fs`]. Requests are served
//! one at a time by fuser's session loop (the core takes `&mut self`).

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
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TTL: Duration = Duration::from_secs(1);
/// Largest write the kernel is asked to send in one request.
pub const MAX_WRITE: u32 = 1 << 20;

struct Handle {
    ino: u64,
    append: bool,
}

/// A mounted [`Fs`] as a fuser file system. When the session ends (unmount) it writes every
/// buffer, checkpoints, and reports the outcome on the `done` channel.
pub struct FuseFs {
    fs: Option<Fs>,
    handles: HashMap<u64, Handle>,
    next_fh: u64,
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
    /// Wraps a mounted file system; `done` receives the unmount's outcome.
    pub fn new(fs: Fs, done: mpsc::Sender<Result<(), String>>) -> Self {
        FuseFs {
            fs: Some(fs),
            handles: HashMap::new(),
            next_fh: 1,
            done: Some(done),
        }
    }

    fn fs(&mut self) -> Result<&mut Fs, FsError> {
        self.fs
            .as_mut()
            .ok_or_else(|| FsError::Broken("unmounted".into()))
    }

    fn handle(&mut self, ino: u64, flags: i32) -> u64 {
        let fh = self.next_fh;
        self.next_fh += 1;
        self.handles.insert(
            fh,
            Handle {
                ino,
                append: flags & libc::O_APPEND != 0,
            },
        );
        fh
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

impl Filesystem for FuseFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), libc::c_int> {
        // Ask for 1 MiB writes; the kernel settles on what it supports.
        let _ = config.set_max_write(MAX_WRITE);
        Ok(())
    }

    fn destroy(&mut self) {
        let res = match self.fs.take() {
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
        let fs = tryr!(reply, self.fs());
        let a = tryr!(reply, fs.lookup(parent, name.as_bytes()));
        reply.entry(&TTL, &attr(&a), 0);
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        let fs = tryr!(reply, self.fs());
        let a = tryr!(reply, fs.getattr(ino));
        reply.attr(&TTL, &attr(&a));
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
        let fs = tryr!(reply, self.fs());
        let a = tryr!(
            reply,
            fs.setattr(
                ino,
                &SetAttr {
                    size,
                    perm: mode,
                    uid,
                    gid,
                    atime: atime.map(ns),
                    mtime: mtime.map(ns),
                }
            )
        );
        reply.attr(&TTL, &attr(&a));
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        let fs = tryr!(reply, self.fs());
        let t = tryr!(reply, fs.readlink(ino));
        reply.data(&t);
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
        let fs = tryr!(reply, self.fs());
        let a = tryr!(
            reply,
            fs.create(parent, name.as_bytes(), mode & !umask, req.uid(), req.gid())
        );
        reply.entry(&TTL, &attr(&a), 0);
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
        let fs = tryr!(reply, self.fs());
        let a = tryr!(
            reply,
            fs.mkdir(parent, name.as_bytes(), mode & !umask, req.uid(), req.gid())
        );
        reply.entry(&TTL, &attr(&a), 0);
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let fs = tryr!(reply, self.fs());
        tryr!(reply, fs.unlink(parent, name.as_bytes()));
        reply.ok();
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let fs = tryr!(reply, self.fs());
        tryr!(reply, fs.rmdir(parent, name.as_bytes()));
        reply.ok();
    }

    fn symlink(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let fs = tryr!(reply, self.fs());
        let a = tryr!(
            reply,
            fs.symlink(
                parent,
                link_name.as_bytes(),
                target.as_os_str().as_bytes(),
                req.uid(),
                req.gid()
            )
        );
        reply.entry(&TTL, &attr(&a), 0);
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
        let fs = tryr!(reply, self.fs());
        tryr!(
            reply,
            fs.rename(
                parent,
                name.as_bytes(),
                newparent,
                newname.as_bytes(),
                no_replace
            )
        );
        reply.ok();
    }

    fn link(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let fs = tryr!(reply, self.fs());
        let a = tryr!(reply, fs.link(ino, newparent, newname.as_bytes()));
        reply.entry(&TTL, &attr(&a), 0);
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        let fs = tryr!(reply, self.fs());
        tryr!(reply, fs.open_file(ino));
        let fh = self.handle(ino, flags);
        reply.opened(fh, 0);
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
        let fs = tryr!(reply, self.fs());
        let d = tryr!(reply, fs.read(ino, offset.max(0) as u64, size as usize));
        reply.data(&d);
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
        let append = self.handles.get(&fh).is_some_and(|h| h.append);
        let fs = tryr!(reply, self.fs());
        tryr!(reply, fs.write(ino, offset.max(0) as u64, data, append));
        reply.written(data.len() as u32);
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
        let Some(h) = self.handles.remove(&fh) else {
            reply.ok();
            return;
        };
        let fs = tryr!(reply, self.fs());
        tryr!(reply, fs.release(h.ino));
        reply.ok();
    }

    fn fsync(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let fs = tryr!(reply, self.fs());
        tryr!(reply, fs.fsync(ino));
        reply.ok();
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let fs = tryr!(reply, self.fs());
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
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        let fs = tryr!(reply, self.fs());
        tryr!(reply, fs.fsync_dir(ino));
        reply.ok();
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        let fs = tryr!(reply, self.fs());
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
        let fs = tryr!(reply, self.fs());
        let a = tryr!(
            reply,
            fs.create(parent, name.as_bytes(), mode & !umask, req.uid(), req.gid())
        );
        tryr!(reply, fs.open_file(a.ino));
        let fh = self.handle(a.ino, flags);
        reply.created(&TTL, &attr(&a), 0, fh, 0);
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
        let fs = tryr!(reply, self.fs());
        let a = tryr!(reply, fs.getattr(ino));
        let end = (offset + length).max(0) as u64;
        if end > a.size {
            tryr!(
                reply,
                fs.setattr(
                    ino,
                    &SetAttr {
                        size: Some(end),
                        ..SetAttr::default()
                    }
                )
            );
        }
        reply.ok();
    }

    fn access(&mut self, _req: &Request<'_>, ino: u64, _mask: i32, reply: ReplyEmpty) {
        let fs = tryr!(reply, self.fs());
        tryr!(reply, fs.getattr(ino));
        reply.ok();
    }
}
