//! Capacity and free space ([`StatFs`]).

use super::Fs;

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
