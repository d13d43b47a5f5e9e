//! Inodes: what a file, directory or symlink is, with its times and its extent map of
//! [`Piece`]s, and the piece's byte encoding shared by checkpoints and ops.

use std::collections::BTreeMap;
use tegula_codec::{Dec, DecodeError, Enc};

/// Inode number of the root directory.
pub const ROOT: u64 = 1;

/// What an inode is. The discriminant is the byte stored for it (checkpoints, Create ops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Regular file.
    File = 1,
    /// Directory.
    Dir = 2,
    /// Symbolic link.
    Symlink = 3,
    /// Named pipe (FIFO); the kernel serves its data.
    Fifo = 4,
    /// UNIX domain socket; the kernel serves its connections.
    Socket = 5,
    /// Character device node (its device number in [`crate::Attr::rdev`]).
    CharDev = 6,
    /// Block device node (its device number in [`crate::Attr::rdev`]).
    BlockDev = 7,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::File,
        Kind::Dir,
        Kind::Symlink,
        Kind::Fifo,
        Kind::Socket,
        Kind::CharDev,
        Kind::BlockDev,
    ];

    /// Whether the kind is a device node, whose `target` holds the device number.
    pub fn is_device(self) -> bool {
        matches!(self, Kind::CharDev | Kind::BlockDev)
    }

    /// The byte stored for this kind.
    pub(super) fn code(self) -> u8 {
        self as u8
    }

    /// The kind stored as `c`, if any.
    pub(super) fn from_code(c: u8) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.code() == c)
    }
}

/// A run of file bytes stored in (part of) one ZEA extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Bytes of the file this piece covers.
    pub len: u64,
    /// Zone of the extent.
    pub zone: u32,
    /// First LBA of the extent's data.
    pub ext_lba: u64,
    /// Length of the whole extent in bytes.
    pub ext_len: u64,
    /// Offset of this piece within the extent.
    pub ext_off: u64,
}

impl Piece {
    /// Whether the piece is non-empty and lies inside its extent.
    pub fn fits(&self) -> bool {
        self.len > 0
            && self
                .ext_off
                .checked_add(self.len)
                .is_some_and(|e| e <= self.ext_len)
    }

    pub(super) fn advance(mut self, by: u64) -> Piece {
        self.ext_off += by;
        self.len -= by;
        self
    }
}

/// Times in nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Times {
    /// Last access.
    pub atime: i64,
    /// Last data change.
    pub mtime: i64,
    /// Last status change.
    pub ctime: i64,
}

/// One inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inode {
    /// Kind.
    pub kind: Kind,
    /// Permission bits (and set-id / sticky bits).
    pub perm: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Names that refer to it (directories: 2 + subdirectories, as POSIX expects).
    pub nlink: u32,
    /// Size in bytes (durable part; the write buffer may extend it).
    pub size: u64,
    /// Times.
    pub times: Times,
    /// File extents by file offset (files only).
    pub map: BTreeMap<u64, Piece>,
    /// Entries by name (directories only).
    pub entries: BTreeMap<Vec<u8>, u64>,
    /// Parent directory (directories only).
    pub parent: u64,
    /// Link target (symlinks); the device number as 4 little-endian bytes (device nodes).
    pub target: Vec<u8>,
}

impl Inode {
    /// The device number of a device node (0 for other kinds).
    pub fn rdev(&self) -> u32 {
        match (self.kind.is_device(), self.target.as_slice()) {
            (true, &[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
            _ => 0,
        }
    }
}

impl Inode {
    pub(super) fn new(kind: Kind, perm: u32, uid: u32, gid: u32, time: i64) -> Inode {
        Inode {
            kind,
            perm,
            uid,
            gid,
            nlink: if kind == Kind::Dir { 2 } else { 1 },
            size: 0,
            times: Times {
                atime: time,
                mtime: time,
                ctime: time,
            },
            map: BTreeMap::new(),
            entries: BTreeMap::new(),
            parent: 0,
            target: Vec::new(),
        }
    }
}

/// Appends a piece: `len u64 | zone u32 | ext_lba u64 | ext_len u64 | ext_off u64`.
pub(super) fn encode_piece(e: &mut Enc, p: &Piece) {
    e.u64(p.len);
    e.u32(p.zone);
    e.u64(p.ext_lba);
    e.u64(p.ext_len);
    e.u64(p.ext_off);
}

/// Decodes a piece written by [`encode_piece`].
pub(super) fn decode_piece(d: &mut Dec) -> Result<Piece, DecodeError> {
    Ok(Piece {
        len: d.u64()?,
        zone: d.u32()?,
        ext_lba: d.u64()?,
        ext_len: d.u64()?,
        ext_off: d.u64()?,
    })
}
