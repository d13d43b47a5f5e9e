//! The file system's metadata as a deterministic state machine: inodes, directories, extent
//! maps and per-zone live bytes. Every change is an [`Op`]; the live file system and log
//! replay both go through [`State::apply`], so what is replayed is exactly what ran.

use crate::codec::{Dec, DecodeError, Enc};
use std::collections::BTreeMap;

/// Inode number of the root directory.
pub const ROOT: u64 = 1;

/// What an inode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::File => 1,
            Kind::Dir => 2,
            Kind::Symlink => 3,
        }
    }
    fn from_code(c: u8) -> Option<Kind> {
        match c {
            1 => Some(Kind::File),
            2 => Some(Kind::Dir),
            3 => Some(Kind::Symlink),
            _ => None,
        }
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

    fn advance(mut self, by: u64) -> Piece {
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
    /// Link target (symlinks only).
    pub target: Vec<u8>,
}

impl Inode {
    fn new(kind: Kind, perm: u32, uid: u32, gid: u32, time: i64) -> Inode {
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
}

/// Why an op cannot apply: replay found a log that does not fit its checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("op does not apply: {0}")]
pub struct ApplyError(pub String);

/// All metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// Inodes by number.
    pub inodes: BTreeMap<u64, Inode>,
    /// Next inode number to hand out.
    pub next_ino: u64,
    /// Live (mapped) bytes per zone, derived from the maps.
    pub zone_live: Vec<u64>,
}

fn bad(s: impl Into<String>) -> ApplyError {
    ApplyError(s.into())
}

impl State {
    /// A fresh file system: an empty root directory.
    pub fn new(zones: usize, time: i64) -> State {
        let mut root = Inode::new(Kind::Dir, 0o755, 0, 0, time);
        root.parent = ROOT;
        let mut inodes = BTreeMap::new();
        inodes.insert(ROOT, root);
        State {
            inodes,
            next_ino: ROOT + 1,
            zone_live: vec![0; zones],
        }
    }

    /// The inode `ino`.
    pub fn get(&self, ino: u64) -> Option<&Inode> {
        self.inodes.get(&ino)
    }

    fn get_mut(&mut self, ino: u64) -> Result<&mut Inode, ApplyError> {
        self.inodes
            .get_mut(&ino)
            .ok_or_else(|| bad(format!("no inode {ino}")))
    }

    fn dir_mut(&mut self, ino: u64) -> Result<&mut Inode, ApplyError> {
        let d = self.get_mut(ino)?;
        if d.kind != Kind::Dir {
            return Err(bad(format!("inode {ino} is not a directory")));
        }
        Ok(d)
    }

    fn live_add(&mut self, zone: u32, n: u64) {
        if let Some(v) = self.zone_live.get_mut(zone as usize) {
            *v = v.saturating_add(n);
        }
    }

    fn live_sub(&mut self, zone: u32, n: u64) {
        if let Some(v) = self.zone_live.get_mut(zone as usize) {
            *v = v.saturating_sub(n);
        }
    }

    /// Removes the mapping of `[a, b)` from a map, returning the pieces removed.
    fn unmap(map: &mut BTreeMap<u64, Piece>, a: u64, b: u64) -> Vec<Piece> {
        let mut removed = Vec::new();
        // A piece starting before `a` may overlap.
        if let Some((&s, &p)) = map.range(..a).next_back() {
            if s + p.len > a {
                map.remove(&s);
                let head = a - s;
                let mut front = p;
                front.len = head;
                map.insert(s, front);
                let rest = p.advance(head);
                if s + p.len > b {
                    let mid = b - a;
                    let mut m = rest;
                    m.len = mid;
                    removed.push(m);
                    map.insert(b, rest.advance(mid));
                } else {
                    removed.push(rest);
                }
            }
        }
        let inside: Vec<u64> = map.range(a..b).map(|(&s, _)| s).collect();
        for s in inside {
            let Some(p) = map.remove(&s) else { continue };
            if s + p.len > b {
                let cut = b - s;
                let mut m = p;
                m.len = cut;
                removed.push(m);
                map.insert(b, p.advance(cut));
            } else {
                removed.push(p);
            }
        }
        removed
    }

    fn drop_link(&mut self, ino: u64, time: i64) -> Result<(), ApplyError> {
        let n = self.get_mut(ino)?;
        n.times.ctime = time;
        if n.kind == Kind::Dir {
            n.nlink = 0;
        } else {
            n.nlink = n.nlink.saturating_sub(1);
        }
        Ok(())
    }

    fn check_name_free(&self, dir: u64, name: &[u8]) -> Result<(), ApplyError> {
        match self.get(dir) {
            Some(d) if d.entries.contains_key(name) => Err(bad("name exists")),
            Some(_) => Ok(()),
            None => Err(bad(format!("no directory {dir}"))),
        }
    }

    /// Applies one op. On error nothing changed.
    pub fn apply(&mut self, op: &Op) -> Result<(), ApplyError> {
        match op {
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
                if self.inodes.contains_key(ino) {
                    return Err(bad(format!("inode {ino} exists")));
                }
                self.dir_mut(*parent)?;
                self.check_name_free(*parent, name)?;
                let mut n = Inode::new(*kind, *perm, *uid, *gid, *time);
                n.target = target.clone();
                n.size = target.len() as u64;
                n.parent = *parent;
                self.inodes.insert(*ino, n);
                let d = self.dir_mut(*parent)?;
                d.entries.insert(name.clone(), *ino);
                d.times.mtime = *time;
                d.times.ctime = *time;
                if *kind == Kind::Dir {
                    d.nlink = d.nlink.saturating_add(1);
                }
                self.next_ino = self.next_ino.max(ino.saturating_add(1));
            }
            Op::Link {
                parent,
                name,
                ino,
                time,
            } => {
                match self.get(*ino) {
                    Some(n) if n.kind != Kind::Dir => {}
                    _ => return Err(bad("link target must be an existing non-directory")),
                }
                self.dir_mut(*parent)?;
                self.check_name_free(*parent, name)?;
                let d = self.dir_mut(*parent)?;
                d.entries.insert(name.clone(), *ino);
                d.times.mtime = *time;
                d.times.ctime = *time;
                let n = self.get_mut(*ino)?;
                n.nlink = n.nlink.saturating_add(1);
                n.times.ctime = *time;
            }
            Op::Unlink { parent, name, time } => {
                let d = self.dir_mut(*parent)?;
                let ino = *d
                    .entries
                    .get(name)
                    .ok_or_else(|| bad("unlink of a missing name"))?;
                let child_dir = match self.get(ino) {
                    Some(c) if c.kind == Kind::Dir => {
                        if !c.entries.is_empty() {
                            return Err(bad("directory not empty"));
                        }
                        true
                    }
                    Some(_) => false,
                    None => return Err(bad("entry names a missing inode")),
                };
                let d = self.dir_mut(*parent)?;
                d.entries.remove(name);
                d.times.mtime = *time;
                d.times.ctime = *time;
                if child_dir {
                    d.nlink = d.nlink.saturating_sub(1);
                }
                self.drop_link(ino, *time)?;
            }
            Op::Rename {
                parent,
                name,
                new_parent,
                new_name,
                time,
            } => self.rename(*parent, name, *new_parent, new_name, *time)?,
            Op::SetAttr {
                ino,
                perm,
                uid,
                gid,
                atime,
                mtime,
                ctime,
            } => {
                let n = self.get_mut(*ino)?;
                if let Some(v) = perm {
                    n.perm = *v;
                }
                if let Some(v) = uid {
                    n.uid = *v;
                }
                if let Some(v) = gid {
                    n.gid = *v;
                }
                if let Some(v) = atime {
                    n.times.atime = *v;
                }
                if let Some(v) = mtime {
                    n.times.mtime = *v;
                }
                n.times.ctime = *ctime;
            }
            Op::Truncate { ino, size, time } => {
                let n = self.get_mut(*ino)?;
                if n.kind != Kind::File {
                    return Err(bad("truncate of a non-file"));
                }
                let removed = Self::unmap(&mut n.map, *size, u64::MAX);
                n.size = *size;
                n.times.mtime = *time;
                n.times.ctime = *time;
                for p in removed {
                    self.live_sub(p.zone, p.len);
                }
            }
            Op::Map {
                ino,
                off,
                piece,
                mtime,
            } => {
                if !piece.fits() {
                    return Err(bad("piece outside its extent"));
                }
                if piece.zone as usize >= self.zone_live.len() {
                    return Err(bad("piece in a zone past the device"));
                }
                let end = off
                    .checked_add(piece.len)
                    .ok_or_else(|| bad("map overflows"))?;
                let n = self.get_mut(*ino)?;
                if n.kind != Kind::File {
                    return Err(bad("map on a non-file"));
                }
                let removed = Self::unmap(&mut n.map, *off, end);
                n.map.insert(*off, *piece);
                n.size = n.size.max(end);
                if let Some(t) = mtime {
                    n.times.mtime = *t;
                    n.times.ctime = *t;
                }
                for p in removed {
                    self.live_sub(p.zone, p.len);
                }
                self.live_add(piece.zone, piece.len);
            }
            Op::Free { ino } => {
                match self.get(*ino) {
                    Some(n) if n.nlink == 0 && *ino != ROOT => {}
                    _ => return Err(bad(format!("free of linked inode {ino}"))),
                }
                if let Some(n) = self.inodes.remove(ino) {
                    for p in n.map.values() {
                        self.live_sub(p.zone, p.len);
                    }
                }
            }
        }
        Ok(())
    }

    fn is_ancestor(&self, anc: u64, mut d: u64) -> bool {
        for _ in 0..self.inodes.len() + 1 {
            if d == anc {
                return true;
            }
            match self.get(d) {
                Some(n) if n.parent != d => d = n.parent,
                _ => return false,
            }
        }
        false
    }

    fn rename(
        &mut self,
        parent: u64,
        name: &[u8],
        new_parent: u64,
        new_name: &[u8],
        time: i64,
    ) -> Result<(), ApplyError> {
        let ino = *self
            .dir_mut(parent)?
            .entries
            .get(name)
            .ok_or_else(|| bad("rename of a missing name"))?;
        self.dir_mut(new_parent)?;
        let moving_dir = self.get(ino).map(|n| n.kind == Kind::Dir) == Some(true);
        if moving_dir && self.is_ancestor(ino, new_parent) {
            return Err(bad("rename of a directory into itself"));
        }
        let old = self
            .get(new_parent)
            .and_then(|d| d.entries.get(new_name).copied());
        if old == Some(ino) {
            return Ok(());
        }
        let mut replaced_dir = false;
        if let Some(o) = old {
            let on = self
                .get(o)
                .ok_or_else(|| bad("entry names a missing inode"))?;
            match (moving_dir, on.kind == Kind::Dir) {
                (true, true) if !on.entries.is_empty() => return Err(bad("target not empty")),
                (true, false) => return Err(bad("directory over a non-directory")),
                (false, true) => return Err(bad("non-directory over a directory")),
                _ => {}
            }
            replaced_dir = on.kind == Kind::Dir;
        }
        let d = self.dir_mut(parent)?;
        d.entries.remove(name);
        d.times.mtime = time;
        d.times.ctime = time;
        if moving_dir {
            d.nlink = d.nlink.saturating_sub(1);
        }
        let nd = self.dir_mut(new_parent)?;
        nd.entries.insert(new_name.to_vec(), ino);
        nd.times.mtime = time;
        nd.times.ctime = time;
        if moving_dir {
            nd.nlink = nd.nlink.saturating_add(1);
        }
        if replaced_dir {
            nd.nlink = nd.nlink.saturating_sub(1);
        }
        if let Some(o) = old {
            self.drop_link(o, time)?;
        }
        let n = self.get_mut(ino)?;
        n.times.ctime = time;
        if moving_dir {
            n.parent = new_parent;
        }
        Ok(())
    }

    /// Looks up `name` in directory `dir`.
    pub fn lookup(&self, dir: u64, name: &[u8]) -> Option<u64> {
        self.get(dir)?.entries.get(name).copied()
    }

    /// Inodes that no name refers to (to free after recovery).
    pub fn orphans(&self) -> Vec<u64> {
        self.inodes
            .iter()
            .filter(|(&i, n)| n.nlink == 0 && i != ROOT)
            .map(|(&i, _)| i)
            .collect()
    }

    /// Serializes the whole state (a checkpoint payload).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u64(self.next_ino);
        e.u64(self.zone_live.len() as u64);
        e.u64(self.inodes.len() as u64);
        for (&ino, n) in &self.inodes {
            e.u64(ino);
            e.u8(n.kind.code());
            e.u32(n.perm);
            e.u32(n.uid);
            e.u32(n.gid);
            e.u32(n.nlink);
            e.u64(n.size);
            e.i64(n.times.atime);
            e.i64(n.times.mtime);
            e.i64(n.times.ctime);
            e.u64(n.parent);
            e.bytes(&n.target);
            e.u64(n.entries.len() as u64);
            for (name, &c) in &n.entries {
                e.bytes(name);
                e.u64(c);
            }
            e.u64(n.map.len() as u64);
            for (&off, p) in &n.map {
                e.u64(off);
                encode_piece(&mut e, p);
            }
        }
        e.buf
    }

    /// Deserializes a checkpoint payload; recomputes live bytes per zone.
    pub fn decode(b: &[u8]) -> Result<State, DecodeError> {
        let mut d = Dec::new(b);
        let next_ino = d.u64()?;
        let zones = d.u64()?;
        if zones > 1 << 24 {
            return Err(d.err("zone count"));
        }
        let mut s = State {
            inodes: BTreeMap::new(),
            next_ino,
            zone_live: vec![0; zones as usize],
        };
        let n = d.count(60)?;
        for _ in 0..n {
            let ino = d.u64()?;
            let kind = Kind::from_code(d.u8()?).ok_or_else(|| d.err("inode kind"))?;
            let mut node = Inode::new(kind, 0, 0, 0, 0);
            node.perm = d.u32()?;
            node.uid = d.u32()?;
            node.gid = d.u32()?;
            node.nlink = d.u32()?;
            node.size = d.u64()?;
            node.times.atime = d.i64()?;
            node.times.mtime = d.i64()?;
            node.times.ctime = d.i64()?;
            node.parent = d.u64()?;
            node.target = d.bytes()?;
            let ne = d.count(12)?;
            for _ in 0..ne {
                let name = d.bytes()?;
                let c = d.u64()?;
                node.entries.insert(name, c);
            }
            let np = d.count(44)?;
            for _ in 0..np {
                let off = d.u64()?;
                let p = decode_piece(&mut d)?;
                if p.zone as u64 >= zones {
                    return Err(d.err("piece zone"));
                }
                if !p.fits() || off.checked_add(p.len).is_none() {
                    return Err(d.err("piece outside its extent"));
                }
                s.zone_live[p.zone as usize] = s.zone_live[p.zone as usize].saturating_add(p.len);
                node.map.insert(off, p);
            }
            s.inodes.insert(ino, node);
        }
        if d.remaining() != 0 {
            return Err(d.err("trailing bytes"));
        }
        Ok(s)
    }
}

fn encode_piece(e: &mut Enc, p: &Piece) {
    e.u64(p.len);
    e.u32(p.zone);
    e.u64(p.ext_lba);
    e.u64(p.ext_len);
    e.u64(p.ext_off);
}

fn decode_piece(d: &mut Dec) -> Result<Piece, DecodeError> {
    Ok(Piece {
        len: d.u64()?,
        zone: d.u32()?,
        ext_lba: d.u64()?,
        ext_len: d.u64()?,
        ext_off: d.u64()?,
    })
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
    /// Appends the op's encoding.
    pub fn encode(&self, e: &mut Enc) {
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
                e.u8(1);
                e.u64(*parent);
                e.bytes(name);
                e.u64(*ino);
                e.u8(kind.code());
                e.u32(*perm);
                e.u32(*uid);
                e.u32(*gid);
                e.i64(*time);
                e.bytes(target);
            }
            Op::Link {
                parent,
                name,
                ino,
                time,
            } => {
                e.u8(2);
                e.u64(*parent);
                e.bytes(name);
                e.u64(*ino);
                e.i64(*time);
            }
            Op::Unlink { parent, name, time } => {
                e.u8(3);
                e.u64(*parent);
                e.bytes(name);
                e.i64(*time);
            }
            Op::Rename {
                parent,
                name,
                new_parent,
                new_name,
                time,
            } => {
                e.u8(4);
                e.u64(*parent);
                e.bytes(name);
                e.u64(*new_parent);
                e.bytes(new_name);
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
                e.u8(5);
                e.u64(*ino);
                opt_u32(e, *perm);
                opt_u32(e, *uid);
                opt_u32(e, *gid);
                opt_i64(e, *atime);
                opt_i64(e, *mtime);
                e.i64(*ctime);
            }
            Op::Truncate { ino, size, time } => {
                e.u8(6);
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
                e.u8(7);
                e.u64(*ino);
                e.u64(*off);
                encode_piece(e, piece);
                opt_i64(e, *mtime);
            }
            Op::Free { ino } => {
                e.u8(8);
                e.u64(*ino);
            }
        }
    }

    /// Decodes one op.
    pub fn decode(d: &mut Dec) -> Result<Op, DecodeError> {
        Ok(match d.u8()? {
            1 => Op::Create {
                parent: d.u64()?,
                name: d.bytes()?,
                ino: d.u64()?,
                kind: Kind::from_code(d.u8()?).ok_or_else(|| d.err("inode kind"))?,
                perm: d.u32()?,
                uid: d.u32()?,
                gid: d.u32()?,
                time: d.i64()?,
                target: d.bytes()?,
            },
            2 => Op::Link {
                parent: d.u64()?,
                name: d.bytes()?,
                ino: d.u64()?,
                time: d.i64()?,
            },
            3 => Op::Unlink {
                parent: d.u64()?,
                name: d.bytes()?,
                time: d.i64()?,
            },
            4 => Op::Rename {
                parent: d.u64()?,
                name: d.bytes()?,
                new_parent: d.u64()?,
                new_name: d.bytes()?,
                time: d.i64()?,
            },
            5 => Op::SetAttr {
                ino: d.u64()?,
                perm: get_opt_u32(d)?,
                uid: get_opt_u32(d)?,
                gid: get_opt_u32(d)?,
                atime: get_opt_i64(d)?,
                mtime: get_opt_i64(d)?,
                ctime: d.i64()?,
            },
            6 => Op::Truncate {
                ino: d.u64()?,
                size: d.u64()?,
                time: d.i64()?,
            },
            7 => Op::Map {
                ino: d.u64()?,
                off: d.u64()?,
                piece: decode_piece(d)?,
                mtime: get_opt_i64(d)?,
            },
            8 => Op::Free { ino: d.u64()? },
            _ => return Err(d.err("op code")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(zone: u32, lba: u64, len: u64) -> Piece {
        Piece {
            len,
            zone,
            ext_lba: lba,
            ext_len: len,
            ext_off: 0,
        }
    }

    #[test]
    fn overlapping_maps_split_pieces_and_track_live_bytes() {
        let mut s = State::new(4, 0);
        let create = Op::Create {
            parent: ROOT,
            name: b"f".to_vec(),
            ino: 2,
            kind: Kind::File,
            perm: 0o644,
            uid: 0,
            gid: 0,
            time: 1,
            target: vec![],
        };
        s.apply(&create).unwrap();
        let map = |off, p| Op::Map {
            ino: 2,
            off,
            piece: p,
            mtime: Some(2),
        };
        s.apply(&map(0, piece(1, 100, 1000))).unwrap();
        s.apply(&map(200, piece(2, 500, 100))).unwrap();
        assert_eq!(s.zone_live, vec![0, 900, 100, 0]);
        let n = s.get(2).unwrap();
        assert_eq!(n.map.len(), 3);
        assert_eq!(n.map[&300].ext_off, 300);
        s.apply(&Op::Truncate {
            ino: 2,
            size: 250,
            time: 3,
        })
        .unwrap();
        assert_eq!(s.zone_live, vec![0, 200, 50, 0]);
        let enc = s.encode();
        assert_eq!(State::decode(&enc).unwrap(), s);
        for cut in 0..enc.len() {
            assert!(State::decode(&enc[..cut]).is_err());
        }
    }

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
        ];
        for op in ops {
            let mut e = Enc::new();
            op.encode(&mut e);
            let mut d = Dec::new(&e.buf);
            assert_eq!(Op::decode(&mut d).unwrap(), op);
            assert_eq!(d.remaining(), 0);
        }
    }
}
