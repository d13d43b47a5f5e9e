//! Open handles and durability requests: open, release (the last one writes the file's
//! buffer), fsync and sync.

use super::{Fs, OpenFile};
use crate::error::Result;

impl Fs {
    /// Counts an open handle (unlinked files live until the last one is released).
    pub fn open_file(&mut self, ino: u64) -> Result<()> {
        let size = self.inode(ino)?.size;
        self.files
            .entry(ino)
            .or_insert_with(|| OpenFile {
                size,
                ..OpenFile::default()
            })
            .opens += 1;
        // A new handle starts without the ENOSPC an earlier writer was told about: its own
        // writes are checked afresh (a reader must not inherit a failed writer's error).
        self.out_of_space.remove(&ino);
        Ok(())
    }

    /// Releases a handle; the last release writes the file's buffer (or, write-behind,
    /// queues it for the writer thread; either way without a commit) or frees an unlinked
    /// file.
    pub fn release(&mut self, ino: u64) -> Result<()> {
        let last = match self.files.get_mut(&ino) {
            Some(f) => {
                f.opens = f.opens.saturating_sub(1);
                f.opens == 0
            }
            None => false,
        };
        if !last {
            return Ok(());
        }
        self.out_of_space.remove(&ino);
        if self.state.get(ino).is_some_and(|n| n.nlink == 0) {
            self.maybe_free(ino)?;
        } else {
            self.flush_or_queue(ino)?;
        }
        self.maybe_commit()
    }

    /// Writes the file's buffer and commits all metadata: afterwards the file's data and
    /// every metadata change made so far survive a crash. In write-behind mode the caller
    /// has had the writer thread write the buffer (after the file's earlier jobs, which an
    /// inline write here could overtake), and this only commits.
    pub fn fsync(&mut self, ino: u64) -> Result<()> {
        self.inode(ino)?;
        if !self.opts.write_behind {
            self.flush_file(ino)?;
        }
        self.commit()?;
        // Everything written so far is on the drive: an earlier ENOSPC is history.
        if !self
            .files
            .get(&ino)
            .is_some_and(|f| f.buf.bytes() > 0 || f.jobs > 0)
        {
            self.out_of_space.remove(&ino);
        }
        Ok(())
    }

    /// Commits metadata (fsync of a directory).
    pub fn fsync_dir(&mut self, ino: u64) -> Result<()> {
        self.dir(ino)?;
        self.commit()
    }

    /// Writes every buffer and commits (with no flush job in flight: at unmount, or in the
    /// library).
    pub fn sync_all(&mut self) -> Result<()> {
        let inos: Vec<u64> = self.files.keys().copied().collect();
        for ino in inos {
            self.flush_file(ino)?;
        }
        self.commit()
    }
}
