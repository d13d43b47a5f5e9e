//! Conversions from the core's types ([`Attr`], [`Kind`], nanosecond times) to fuser's.

use crate::fs::Attr;
use crate::state::Kind;
use fuser::{FileAttr, FileType, TimeOrNow};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn time(ns: i64) -> SystemTime {
    if ns >= 0 {
        UNIX_EPOCH + Duration::from_nanos(ns as u64)
    } else {
        UNIX_EPOCH
    }
}

pub(super) fn ns(t: TimeOrNow) -> i64 {
    match t {
        TimeOrNow::Now => crate::fs::now_ns(),
        TimeOrNow::SpecificTime(s) => s
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64),
    }
}

pub(super) fn file_type(k: Kind) -> FileType {
    match k {
        Kind::File => FileType::RegularFile,
        Kind::Dir => FileType::Directory,
        Kind::Symlink => FileType::Symlink,
        Kind::Fifo => FileType::NamedPipe,
        Kind::Socket => FileType::Socket,
        Kind::CharDev => FileType::CharDevice,
        Kind::BlockDev => FileType::BlockDevice,
    }
}

/// The kind a `mknod` mode asks for (`S_IFREG` or no type bits: a regular file).
pub(super) fn kind_of_mode(mode: u32) -> Option<Kind> {
    match mode & libc::S_IFMT {
        0 | libc::S_IFREG => Some(Kind::File),
        libc::S_IFIFO => Some(Kind::Fifo),
        libc::S_IFSOCK => Some(Kind::Socket),
        libc::S_IFCHR => Some(Kind::CharDev),
        libc::S_IFBLK => Some(Kind::BlockDev),
        _ => None,
    }
}

pub(super) fn attr(a: &Attr) -> FileAttr {
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
        rdev: a.rdev,
        blksize: 4096,
        flags: 0,
    }
}
