//! The namespace: lookups, directory listings, and creating, linking, unlinking and
//! renaming names.

use super::cookies::DirCookies;
use super::{now_ns, Attr, Fs};
use crate::error::{FsError, Result};
use crate::state::{Kind, Op, ROOT};

/// Longest name in bytes (`NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// A name that is looked up: too long is `ENAMETOOLONG` before anything else, as on ext4.
fn check_len(name: &[u8]) -> Result<()> {
    if name.len() > NAME_MAX {
        return Err(FsError::BadName);
    }
    Ok(())
}

/// A name that is created.
fn check_name(name: &[u8]) -> Result<()> {
    check_len(name)?;
    if name.is_empty() || name == b"." || name == b".." {
        return Err(FsError::Invalid("reserved name".into()));
    }
    if name.iter().any(|&c| c == b'/' || c == 0) {
        return Err(FsError::BadName);
    }
    Ok(())
}

/// One directory entry as [`Fs::readdir_from`] hands it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirEntry<'a> {
    /// Offset to resume after this entry.
    pub offset: u64,
    /// Inode number.
    pub ino: u64,
    /// Kind.
    pub kind: Kind,
    /// Name.
    pub name: &'a [u8],
}

impl Fs {
    /// Looks up `name` in `parent`.
    pub fn lookup(&self, parent: u64, name: &[u8]) -> Result<Attr> {
        check_len(name)?;
        self.dir(parent)?;
        let ino = self.state.lookup(parent, name).ok_or(FsError::NotFound)?;
        self.getattr(ino)
    }

    /// Entries of a directory (without `.` and `..`): name, inode, kind.
    pub fn readdir(&self, ino: u64) -> Result<Vec<(Vec<u8>, u64, Kind)>> {
        let d = self.dir(ino)?;
        Ok(d.entries
            .iter()
            .map(|(name, &c)| {
                let k = self.state.get(c).map_or(Kind::File, |n| n.kind);
                (name.clone(), c, k)
            })
            .collect())
    }

    /// Lists a directory from `offset` (0 for the start; else the offset of the last entry
    /// seen): `.`, `..`, then the names, each with the offset to resume after it. Offsets
    /// stay valid while names are added and removed (see `cookies.rs`). `emit` returns true
    /// when it can take no more.
    pub fn readdir_from(
        &self,
        ino: u64,
        offset: u64,
        mut emit: impl FnMut(DirEntry<'_>) -> bool,
    ) -> Result<()> {
        let d = self.dir(ino)?;
        let dots = [(1u64, ino, &b"."[..]), (2, d.parent, &b".."[..])];
        for (off, i, name) in dots {
            if offset < off
                && emit(DirEntry {
                    offset: off,
                    ino: i,
                    kind: Kind::Dir,
                    name,
                })
            {
                return Ok(());
            }
        }
        let mut all = self.cookie_map();
        let cookies = all
            .entry(ino)
            .or_insert_with(|| DirCookies::new(d.entries.keys()));
        for (c, name) in cookies.after(offset) {
            let Some(&child) = d.entries.get(name) else {
                continue;
            };
            let kind = self.state.get(child).map_or(Kind::File, |n| n.kind);
            if emit(DirEntry {
                offset: c,
                ino: child,
                kind,
                name,
            }) {
                break;
            }
        }
        Ok(())
    }

    /// Parent of a directory.
    pub fn parent(&self, ino: u64) -> Result<u64> {
        Ok(self.dir(ino)?.parent)
    }

    /// Checks that `parent` is a directory with no entry `name` (where one is to be made).
    fn check_free(&self, parent: u64, name: &[u8]) -> Result<()> {
        self.dir(parent)?;
        match self.state.lookup(parent, name) {
            Some(_) => Err(FsError::Exists),
            None => Ok(()),
        }
    }

    pub(super) fn make(
        &mut self,
        parent: u64,
        name: &[u8],
        kind: Kind,
        perm: u32,
        (uid, gid): (u32, u32),
        target: Vec<u8>,
    ) -> Result<Attr> {
        check_name(name)?;
        self.check_free(parent, name)?;
        let ino = self.state.next_ino;
        self.log(Op::Create {
            parent,
            name: name.to_vec(),
            ino,
            kind,
            perm: perm & 0o7777,
            uid,
            gid,
            time: now_ns(),
            target,
        })?;
        self.maybe_commit()?;
        self.getattr(ino)
    }

    /// Creates a regular file.
    pub fn create(
        &mut self,
        parent: u64,
        name: &[u8],
        perm: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr> {
        self.make(parent, name, Kind::File, perm, (uid, gid), Vec::new())
    }

    /// Creates a directory.
    pub fn mkdir(
        &mut self,
        parent: u64,
        name: &[u8],
        perm: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr> {
        self.make(parent, name, Kind::Dir, perm, (uid, gid), Vec::new())
    }

    /// Creates a symbolic link.
    pub fn symlink(
        &mut self,
        parent: u64,
        name: &[u8],
        target: &[u8],
        uid: u32,
        gid: u32,
    ) -> Result<Attr> {
        if target.is_empty() || target.len() > 4096 {
            return Err(FsError::Invalid("symlink target length".into()));
        }
        self.make(
            parent,
            name,
            Kind::Symlink,
            0o777,
            (uid, gid),
            target.to_vec(),
        )
    }

    /// Creates a special file: a FIFO, a socket or a device node (`rdev` is kept for device
    /// nodes). Their data and connections are the kernel's; the file system keeps the name
    /// and the attributes.
    #[allow(clippy::too_many_arguments)]
    pub fn mknod(
        &mut self,
        parent: u64,
        name: &[u8],
        kind: Kind,
        perm: u32,
        rdev: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr> {
        match kind {
            Kind::File => self.create(parent, name, perm, uid, gid),
            Kind::Fifo | Kind::Socket => {
                self.make(parent, name, kind, perm, (uid, gid), Vec::new())
            }
            Kind::CharDev | Kind::BlockDev => self.make(
                parent,
                name,
                kind,
                perm,
                (uid, gid),
                rdev.to_le_bytes().to_vec(),
            ),
            Kind::Dir | Kind::Symlink => Err(FsError::Invalid(
                "mknod makes files, FIFOs, sockets and device nodes".into(),
            )),
        }
    }

    /// Target of a symbolic link.
    pub fn readlink(&self, ino: u64) -> Result<Vec<u8>> {
        let n = self.inode(ino)?;
        if n.kind != Kind::Symlink {
            return Err(FsError::Invalid("not a symlink".into()));
        }
        Ok(n.target.clone())
    }

    /// Adds a hard link to a non-directory.
    pub fn link(&mut self, ino: u64, parent: u64, name: &[u8]) -> Result<Attr> {
        check_name(name)?;
        if self.inode(ino)?.kind == Kind::Dir {
            return Err(FsError::Invalid("hard link to a directory".into()));
        }
        self.check_free(parent, name)?;
        self.log(Op::Link {
            parent,
            name: name.to_vec(),
            ino,
            time: now_ns(),
        })?;
        self.maybe_commit()?;
        self.getattr(ino)
    }

    /// Counts one more kernel reference to `ino` (a FUSE reply that hands out an entry). An
    /// unlinked inode is kept until [`Fs::forget`] drops the last one.
    pub fn remember(&self, ino: u64) {
        *self.lookup_counts().entry(ino).or_default() += 1;
    }

    /// Drops `n` kernel references to `ino` (FUSE `forget`); frees an unlinked inode nothing
    /// holds any more.
    pub fn forget(&mut self, ino: u64, n: u64) -> Result<()> {
        {
            let mut l = self.lookup_counts();
            if let Some(c) = l.get_mut(&ino) {
                *c = c.saturating_sub(n);
                if *c == 0 {
                    l.remove(&ino);
                }
            }
        }
        if self.broken.is_some() {
            return Ok(());
        }
        self.maybe_free(ino)?;
        self.maybe_commit()
    }

    /// Frees `ino` if nothing names it, nothing has it open and the kernel holds no
    /// reference to it.
    pub(crate) fn maybe_free(&mut self, ino: u64) -> Result<()> {
        let unnamed = self.state.get(ino).is_some_and(|n| n.nlink == 0);
        let open = self
            .files
            .get(&ino)
            .is_some_and(|f| f.opens > 0 || f.jobs > 0);
        let held = self.lookup_counts().contains_key(&ino);
        if !unnamed || open {
            return Ok(());
        }
        if let Some(f) = self.files.remove(&ino) {
            self.dirty -= f.buf.bytes();
        }
        if !held {
            self.log(Op::Free { ino })?;
            return Ok(());
        }
        // The kernel still holds the inode (its FORGET comes later), but nothing can read the
        // data of a file no name and no handle refers to: drop it now, so that the space of a
        // file just deleted is reclaimable at once and not only after the FORGET.
        let has_data = self
            .state
            .get(ino)
            .is_some_and(|n| n.kind == Kind::File && (n.size > 0 || !n.map.is_empty()));
        if has_data {
            self.log(Op::Truncate {
                ino,
                size: 0,
                time: now_ns(),
            })?;
        }
        Ok(())
    }

    /// Removes a non-directory name; the inode lives on while open.
    pub fn unlink(&mut self, parent: u64, name: &[u8]) -> Result<()> {
        check_len(name)?;
        self.dir(parent)?;
        let ino = self.state.lookup(parent, name).ok_or(FsError::NotFound)?;
        if self.inode(ino)?.kind == Kind::Dir {
            return Err(FsError::IsDir);
        }
        self.log(Op::Unlink {
            parent,
            name: name.to_vec(),
            time: now_ns(),
        })?;
        self.maybe_free(ino)?;
        self.maybe_commit()
    }

    /// Removes an empty directory.
    pub fn rmdir(&mut self, parent: u64, name: &[u8]) -> Result<()> {
        check_len(name)?;
        self.dir(parent)?;
        let ino = self.state.lookup(parent, name).ok_or(FsError::NotFound)?;
        let n = self.inode(ino)?;
        if n.kind != Kind::Dir {
            return Err(FsError::NotDir);
        }
        if !n.entries.is_empty() {
            return Err(FsError::NotEmpty);
        }
        self.log(Op::Unlink {
            parent,
            name: name.to_vec(),
            time: now_ns(),
        })?;
        self.maybe_free(ino)?;
        self.maybe_commit()
    }

    /// Renames `parent/name` to `new_parent/new_name`, atomically replacing an existing
    /// target (a file, or an empty directory when a directory moves). With `no_replace` an
    /// existing target is an error.
    pub fn rename(
        &mut self,
        parent: u64,
        name: &[u8],
        new_parent: u64,
        new_name: &[u8],
        no_replace: bool,
    ) -> Result<()> {
        check_len(name)?;
        check_name(new_name)?;
        self.dir(parent)?;
        self.dir(new_parent)?;
        let ino = self.state.lookup(parent, name).ok_or(FsError::NotFound)?;
        let moving_dir = self.inode(ino)?.kind == Kind::Dir;
        let old = self.state.lookup(new_parent, new_name);
        if let Some(o) = old {
            if no_replace {
                return Err(FsError::Exists);
            }
            if o == ino {
                return Ok(());
            }
            let on = self.inode(o)?;
            match (moving_dir, on.kind == Kind::Dir) {
                (true, true) if !on.entries.is_empty() => return Err(FsError::NotEmpty),
                (true, false) => return Err(FsError::NotDir),
                (false, true) => return Err(FsError::IsDir),
                _ => {}
            }
        }
        if moving_dir {
            // Refuse to move a directory below itself.
            let mut d = new_parent;
            for _ in 0..self.state.inodes.len() + 1 {
                if d == ino {
                    return Err(FsError::Invalid("directory moved into itself".into()));
                }
                let p = self.state.get(d).map_or(ROOT, |n| n.parent);
                if p == d {
                    break;
                }
                d = p;
            }
        }
        self.log(Op::Rename {
            parent,
            name: name.to_vec(),
            new_parent,
            new_name: new_name.to_vec(),
            time: now_ns(),
        })?;
        if let Some(o) = old {
            self.maybe_free(o)?;
        }
        self.maybe_commit()
    }
}
