//! Ops, the metadata changes, and their log codec: one tag byte ([`OpTag`]) then the
//! fields (`docs/formats/fs.md`, "Log record payload").

use super::inode::{decode_piece, encode_piece, Kind, Piece};
use tegula_codec::{Dec, DecodeError, Enc};

/// One metadata change. The fields hold everything replay needs; no op reads the clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Creates inode `ino` and links it as `parent/name`.
    Create {
        /// Parent directory.
        parent: u64,
        /// Name.
        name: Vec<u8>,
        /// New inode number.
        ino: u64,
        /// Kind.
        kind: Kind,
        /// Permission bits.
        perm: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
        /// Creation time.
        time: i64,
        /// Symlink target.
        target: Vec<u8>,
    },
    /// Adds a hard link `parent/name` to file `ino`.
    Link {
        /// Parent directory.
        parent: u64,
        /// Name.
        name: Vec<u8>,
        /// Existing inode.
        ino: u64,
        /// Time.
        time: i64,
    },
    /// Removes `parent/name` (a file, symlink or empty directory).
    Unlink {
        /// Parent directory.
        parent: u64,
        /// Name.
        name: Vec<u8>,
        /// Time.
        time: i64,
    },
    /// Moves `parent/name` to `new_parent/new_name`, replacing what is there.
    Rename {
        /// Source directory.
        parent: u64,
        /// Source name.
        name: Vec<u8>,
        /// Destination directory.
        new_parent: u64,
        /// Destination name.
        new_name: Vec<u8>,
        /// Time.
        time: i64,
    },
    /// Changes attributes (each `Some` field).
    SetAttr {
        /// Inode.
        ino: u64,
        /// New permission bits.
        perm: Option<u32>,
        /// New owner.
        uid: Option<u32>,
        /// New group.
        gid: Option<u32>,
        /// New access time.
        atime: Option<i64>,
        /// New modification time.
        mtime: Option<i64>,
        /// Status change time.
        ctime: i64,
    },
    /// Sets the size, dropping mapped bytes beyond it.
    Truncate {
        /// Inode.
        ino: u64,
        /// New size.
        size: u64,
        /// Time.
        time: i64,
    },
    /// Maps file bytes `[off, off + piece.len)` to `piece` (newly written or relocated data);
    /// the size grows to cover them.
    Map {
        /// Inode.
        ino: u64,
        /// File offset.
        off: u64,
        /// Where the bytes are.
        piece: Piece,
        /// New modification time (None for relocation by the cleaner).
        mtime: Option<i64>,
    },
    /// Forgets an inode that has no names left and is not open.
    Free {
        /// Inode.
        ino: u64,
    },
    /// Empties a zone's append and delete logs: the zone holds no live byte and is about to
    /// be reset (committed before the reset, so that no record names an LBA the zone may
    /// reuse).
    ZoneReset {
        /// Zone.
        zone: u32,
    },
    /// A zone's write pointer is about to be set back to `lba` (tail cleaning): no live byte
    /// is stored at or after it.
    ZoneRewind {
        /// Zone.
        zone: u32,
        /// The new write pointer.
        lba: u64,
    },
}

/// The tag byte that starts an encoded [`Op`]. The values are on disk: never reuse or
/// renumber one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum OpTag {
    /// [`Op::Create`].
    Create = 1,
    /// [`Op::Link`].
    Link = 2,
    /// [`Op::Unlink`].
    Unlink = 3,
    /// [`Op::Rename`].
    Rename = 4,
    /// [`Op::SetAttr`].
    SetAttr = 5,
    /// [`Op::Truncate`].
    Truncate = 6,
    /// [`Op::Map`].
    Map = 7,
    /// [`Op::Free`].
    Free = 8,
    /// [`Op::ZoneReset`].
    ZoneReset = 9,
    /// [`Op::ZoneRewind`].
    ZoneRewind = 10,
}

impl OpTag {
    /// Every tag, in order.
    pub const ALL: [OpTag; 10] = [
        OpTag::Create,
        OpTag::Link,
        OpTag::Unlink,
        OpTag::Rename,
        OpTag::SetAttr,
        OpTag::Truncate,
        OpTag::Map,
        OpTag::Free,
        OpTag::ZoneReset,
        OpTag::ZoneRewind,
    ];

    /// The tag stored as byte `b`, if any.
    pub fn from_byte(b: u8) -> Option<OpTag> {
        OpTag::ALL.into_iter().find(|t| *t as u8 == b)
    }
}

fn opt_u32(e: &mut Enc, v: Option<u32>) {
    e.u8(v.is_some() as u8);
    e.u32(v.unwrap_or(0));
}

fn opt_i64(e: &mut Enc, v: Option<i64>) {
    e.u8(v.is_some() as u8);
    e.i64(v.unwrap_or(0));
}

fn get_opt_u32(d: &mut Dec) -> Result<Option<u32>, DecodeError> {
    let f = d.u8()?;
    let v = d.u32()?;
    Ok((f != 0).then_some(v))
}

fn get_opt_i64(d: &mut Dec) -> Result<Option<i64>, DecodeError> {
    let f = d.u8()?;
    let v = d.i64()?;
    Ok((f != 0).then_some(v))
}

impl Op {
    /// The tag byte that starts the op's encoding.
    pub fn tag(&self) -> OpTag {
        match self {
            Op::Create { .. } => OpTag::Create,
            Op::Link { .. } => OpTag::Link,
            Op::Unlink { .. } => OpTag::Unlink,
            Op::Rename { .. } => OpTag::Rename,
            Op::SetAttr { .. } => OpTag::SetAttr,
            Op::Truncate { .. } => OpTag::Truncate,
            Op::Map { .. } => OpTag::Map,
            Op::Free { .. } => OpTag::Free,
            Op::ZoneReset { .. } => OpTag::ZoneReset,
            Op::ZoneRewind { .. } => OpTag::ZoneRewind,
        }
    }

    /// Appends the op's encoding.
    pub fn encode(&self, e: &mut Enc) {
        e.u8(self.tag() as u8);
        match self {
            Op::Create {
                parent,
                name,
                ino,
                kind,
                perm,
                uid,
                gid,
                time,
                target,
            } => {
                e.u64(*parent);
                e.bytes_u32(name);
                e.u64(*ino);
                e.u8(kind.code());
                e.u32(*perm);
                e.u32(*uid);
                e.u32(*gid);
                e.i64(*time);
                e.bytes_u32(target);
            }
            Op::Link {
                parent,
                name,
                ino,
                time,
            } => {
                e.u64(*parent);
                e.bytes_u32(name);
                e.u64(*ino);
                e.i64(*time);
            }
            Op::Unlink { parent, name, time } => {
                e.u64(*parent);
                e.bytes_u32(name);
                e.i64(*time);
            }
            Op::Rename {
                parent,
                name,
                new_parent,
                new_name,
                time,
            } => {
                e.u64(*parent);
                e.bytes_u32(name);
                e.u64(*new_parent);
                e.bytes_u32(new_name);
                e.i64(*time);
            }
            Op::SetAttr {
                ino,
                perm,
                uid,
                gid,
                atime,
                mtime,
                ctime,
            } => {
                e.u64(*ino);
                opt_u32(e, *perm);
                opt_u32(e, *uid);
                opt_u32(e, *gid);
                opt_i64(e, *atime);
                opt_i64(e, *mtime);
                e.i64(*ctime);
            }
            Op::Truncate { ino, size, time } => {
                e.u64(*ino);
                e.u64(*size);
                e.i64(*time);
            }
            Op::Map {
                ino,
                off,
                piece,
                mtime,
            } => {
                e.u64(*ino);
                e.u64(*off);
                encode_piece(e, piece);
                opt_i64(e, *mtime);
            }
            Op::Free { ino } => {
                e.u64(*ino);
            }
            Op::ZoneReset { zone } => {
                e.u32(*zone);
            }
            Op::ZoneRewind { zone, lba } => {
                e.u32(*zone);
                e.u64(*lba);
            }
        }
    }

    /// Decodes one op.
    pub fn decode(d: &mut Dec) -> Result<Op, DecodeError> {
        let tag = d.u8()?;
        let Some(tag) = OpTag::from_byte(tag) else {
            return Err(d.invalid("op code"));
        };
        Ok(match tag {
            OpTag::Create => Op::Create {
                parent: d.u64()?,
                name: d.bytes_u32()?.to_vec(),
                ino: d.u64()?,
                kind: Kind::from_code(d.u8()?).ok_or_else(|| d.invalid("inode kind"))?,
                perm: d.u32()?,
                uid: d.u32()?,
                gid: d.u32()?,
                time: d.i64()?,
                target: d.bytes_u32()?.to_vec(),
            },
            OpTag::Link => Op::Link {
                parent: d.u64()?,
                name: d.bytes_u32()?.to_vec(),
                ino: d.u64()?,
                time: d.i64()?,
            },
            OpTag::Unlink => Op::Unlink {
                parent: d.u64()?,
                name: d.bytes_u32()?.to_vec(),
                time: d.i64()?,
            },
            OpTag::Rename => Op::Rename {
                parent: d.u64()?,
                name: d.bytes_u32()?.to_vec(),
                new_parent: d.u64()?,
                new_name: d.bytes_u32()?.to_vec(),
                time: d.i64()?,
            },
            OpTag::SetAttr => Op::SetAttr {
                ino: d.u64()?,
                perm: get_opt_u32(d)?,
                uid: get_opt_u32(d)?,
                gid: get_opt_u32(d)?,
                atime: get_opt_i64(d)?,
                mtime: get_opt_i64(d)?,
                ctime: d.i64()?,
            },
            OpTag::Truncate => Op::Truncate {
                ino: d.u64()?,
                size: d.u64()?,
                time: d.i64()?,
            },
            OpTag::Map => Op::Map {
                ino: d.u64()?,
                off: d.u64()?,
                piece: decode_piece(d)?,
                mtime: get_opt_i64(d)?,
            },
            OpTag::Free => Op::Free { ino: d.u64()? },
            OpTag::ZoneReset => Op::ZoneReset { zone: d.u32()? },
            OpTag::ZoneRewind => Op::ZoneRewind {
                zone: d.u32()?,
                lba: d.u64()?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::testutil::piece;

    #[test]
    fn ops_round_trip() {
        let ops = vec![
            Op::Rename {
                parent: 1,
                name: b"a".to_vec(),
                new_parent: 3,
                new_name: b"b".to_vec(),
                time: -5,
            },
            Op::SetAttr {
                ino: 9,
                perm: Some(0o600),
                uid: None,
                gid: Some(4),
                atime: None,
                mtime: Some(77),
                ctime: 78,
            },
            Op::Map {
                ino: 3,
                off: 4096,
                piece: piece(3, 5, 6),
                mtime: None,
            },
            Op::Free { ino: 12 },
            Op::ZoneReset { zone: 4 },
            Op::ZoneRewind { zone: 5, lba: 77 },
        ];
        for op in ops {
            let mut e = Enc::new();
            op.encode(&mut e);
            let mut d = Dec::new(e.as_bytes());
            assert_eq!(Op::decode(&mut d).unwrap(), op);
            assert_eq!(d.remaining(), 0);
        }
    }

    /// The tags are on disk (`docs/formats/fs.md`): each op starts with its documented byte,
    /// and bytes outside 1..=10 are not ops.
    #[test]
    fn op_tags_are_the_documented_bytes() {
        let documented = [
            (OpTag::Create, 1),
            (OpTag::Link, 2),
            (OpTag::Unlink, 3),
            (OpTag::Rename, 4),
            (OpTag::SetAttr, 5),
            (OpTag::Truncate, 6),
            (OpTag::Map, 7),
            (OpTag::Free, 8),
            (OpTag::ZoneReset, 9),
            (OpTag::ZoneRewind, 10),
        ];
        for (tag, byte) in documented {
            assert_eq!(tag as u8, byte);
            assert_eq!(OpTag::from_byte(byte), Some(tag));
        }
        let free = Op::Free { ino: 12 };
        let mut e = Enc::new();
        free.encode(&mut e);
        assert_eq!(e.as_bytes()[0], 8);
        for bad in [0u8, 11, 0xff] {
            let mut b = vec![bad];
            b.extend_from_slice(&12u64.to_le_bytes());
            assert!(Op::decode(&mut Dec::new(&b)).is_err(), "tag {bad}");
        }
    }
}
