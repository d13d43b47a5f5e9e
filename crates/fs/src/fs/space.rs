//! Capacity and free space ([`StatFs`]).

use super::Fs;
use crate::triggers::Triggers;

/// File-system wide numbers for statfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatFs {
    /// Block size used below.
    pub block_size: u64,
    /// Data capacity in blocks (sequential zones less one reserved for cleaning).
    pub blocks: u64,
    /// Blocks that can still be written (after cleaning dead space).
    pub free_blocks: u64,
    /// Inodes in use.
    pub files: u64,
    /// Inodes that can still be created.
    pub free_files: u64,
}

impl Fs {
    /// Capacity and free space. Free space counts dead bytes (the cleaner reclaims them) and
    /// keeps one zone in reserve for cleaning.
    pub fn statfs(&self) -> StatFs {
        let bs = self.pool.sector();
        let zones = self.pool.seq_zones().len() as u64;
        let cap = zones.saturating_sub(1) * self.pool.zone_bytes();
        StatFs {
            block_size: bs,
            blocks: cap / bs,
            free_blocks: self.free_estimate() / bs,
            files: self.state.inodes.len() as u64,
            free_files: (u32::MAX as u64).saturating_sub(self.state.inodes.len() as u64),
        }
    }

    /// Bytes that can still be written: capacity less the reserve zone, live data, buffered
    /// data and an allowance for metadata blocks and padding.
    pub(crate) fn free_estimate(&self) -> u64 {
        let zb = self.pool.zone_bytes();
        let zones = self.pool.seq_zones().len() as u64;
        let cap = zones.saturating_sub(1 + self.bad_zones.len() as u64) * zb;
        let live: u64 = self.state.zone_live.iter().sum();
        let dirty = self.dirty as u64;
        let overhead = (live + dirty) / 64 + 2 * zb / 64;
        cap.saturating_sub(live + dirty + overhead)
    }
}

impl Fs {
    /// Bytes that can still be written ([`StatFs::free_blocks`] in bytes).
    pub fn free_bytes(&self) -> u64 {
        self.free_estimate()
    }

    /// Whether the drive is nearly full: less free than four times the dirty limit or a
    /// twentieth of the capacity. The mount then keeps attributes uncached and opens files
    /// for writing around the kernel's writeback cache, so that a write the drive cannot
    /// hold fails at `write`.
    pub fn space_is_low(&self) -> bool {
        let cap = self.statfs().blocks * self.pool.sector();
        self.free_estimate() < (4 * self.opts.dirty_limit as u64).max(cap / 20)
    }

    /// Bytes held by files that no name refers to any more but that are not freed yet (a
    /// handle is still open, or a flush job is in flight): space that comes back by itself
    /// once the kernel's release (sent after an `unlink` it may overtake) or the job ends.
    pub fn orphan_bytes(&self) -> u64 {
        self.files
            .iter()
            .filter_map(|(ino, f)| {
                let n = self.state.get(*ino)?;
                (n.nlink == 0).then(|| n.size.max(f.size))
            })
            .sum()
    }

    /// Whether a write of `len` bytes does not fit now but would once the unlinked files
    /// still held open or being written are freed (see [`Fs::orphan_bytes`]).
    pub fn fits_after_orphans(&self, len: u64) -> bool {
        let free = self.free_estimate();
        len > free && len <= free.saturating_add(self.orphan_bytes())
    }

    /// Whether a write to `ino` failed for lack of space since it was last truncated.
    pub fn is_out_of_space(&self, ino: u64) -> bool {
        self.out_of_space.contains(&ino)
    }

    /// Whether a new write should wait: the writer thread is behind (more than twice the
    /// dirty limit buffered), or usable free space is below the high threshold and the
    /// cleaner has something to clean (ShingledFS's high-priority cleaner makes writers
    /// wait).
    pub fn writers_must_wait(&self, t: &Triggers) -> bool {
        if self.dirty > 2 * self.opts.dirty_limit {
            return true;
        }
        self.usable_free_fraction() < t.high_free
            && (self.job.is_some() || self.clean_victim().is_some())
    }
}
