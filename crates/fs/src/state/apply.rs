//! Applying ops to the state: the one code path shared by the live file system and log
//! replay, so what is replayed is exactly what ran.

use super::inode::{Inode, Kind, Piece, ROOT};
use super::op::Op;
use super::State;
use std::collections::BTreeMap;

/// Why an op cannot apply: replay found a log that does not fit its checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("op does not apply: {0}")]
pub struct ApplyError(pub String);

fn bad(s: impl Into<String>) -> ApplyError {
    ApplyError(s.into())
}

impl State {
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

    /// Applies one op. An op that does not apply is refused before anything changes, except
    /// for a zone-log inconsistency found midway (bytes unmapped that no append record holds),
    /// which leaves the state part-changed: replay refuses the log, and the live file system
    /// refuses further writes.
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
                if *kind == Kind::Symlink {
                    n.size = target.len() as u64;
                }
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
                self.unmapped(&removed)?;
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
                    // (A modification time set explicitly before the flush may be older than
                    // the status change that set it.)
                    n.times.mtime = *t;
                    n.times.ctime = n.times.ctime.max(*t);
                }
                self.unmapped(&removed)?;
                self.live_add(piece.zone, piece.len);
                let c = &mut self.counters;
                match mtime {
                    Some(t) => {
                        c.written = c.written.saturating_add(piece.len);
                        if c.first_write == 0 {
                            c.first_write = *t;
                        }
                        c.last_write = c.last_write.max(*t);
                    }
                    None => c.moved = c.moved.saturating_add(piece.len),
                }
                self.zlogs.append(*ino, *off, piece).map_err(|e| bad(e.0))?;
            }
            Op::Free { ino } => {
                match self.get(*ino) {
                    Some(n) if n.nlink == 0 && *ino != ROOT => {}
                    _ => return Err(bad(format!("free of linked inode {ino}"))),
                }
                if let Some(n) = self.inodes.remove(ino) {
                    let pieces: Vec<Piece> = n.map.values().copied().collect();
                    self.unmapped(&pieces)?;
                }
            }
            Op::ZoneReset { zone } => {
                self.zlogs.reset(*zone).map_err(|e| bad(e.0))?;
                self.counters.resets += 1;
            }
            Op::ZoneRewind { zone, lba } => {
                self.zlogs.rewind(*zone, *lba).map_err(|e| bad(e.0))?;
                self.counters.rewinds += 1;
            }
        }
        Ok(())
    }

    /// Accounts unmapped pieces: live bytes and delete records.
    fn unmapped(&mut self, removed: &[Piece]) -> Result<(), ApplyError> {
        for p in removed {
            self.live_sub(p.zone, p.len);
            self.counters.deleted = self.counters.deleted.saturating_add(p.len);
            self.zlogs.delete(p).map_err(|e| bad(e.0))?;
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::testutil::piece;

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
}
