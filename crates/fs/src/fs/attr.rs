//! Attributes: [`Attr`] as callers see them, and changes to them ([`SetAttr`], including
//! truncation).

use super::{now_ns, Fs};
use crate::error::{FsError, Result};
use crate::state::{Kind, Op};

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
    /// Device number (device nodes; 0 otherwise).
    pub rdev: u32,
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

impl Fs {
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
            rdev: n.rdev(),
        })
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
                    FsError::Invalid("truncate of a special file".into())
                });
            }
            self.truncate(ino, size, time)?;
        }
        if let Some(t) = a.mtime {
            // The flush of data written before keeps this time (a time set explicitly, as tar
            // sets it while the data still waits in memory, outlives the flush).
            if let Some(f) = self.files.get_mut(&ino) {
                f.write_mtime = Some(t);
            }
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
            if f.jobs > 0 {
                // Data in flight past the new size must neither be read nor mapped.
                f.inflight.truncate(size);
                f.cut = Some(f.cut.map_or(size, |c| c.min(size)));
            }
        }
        self.out_of_space.remove(&ino);
        self.log(Op::Truncate { ino, size, time })
    }
}
