//! The file system's metadata as a deterministic state machine: inodes, directories, extent
//! maps and per-zone live bytes. Every change is an [`Op`]; the live file system and log
//! replay both go through [`State::apply`], so what is replayed is exactly what ran. One file
//! per job: `inode` (what an inode holds), `op` (the ops and their log codec), `apply`
//! (applying an op), `checkpoint` (the whole state's encoding).

mod apply;
mod checkpoint;
mod inode;
mod op;
mod zonelog;

pub use checkpoint::ZONE_LOGS;
pub use inode::{Inode, Kind, Piece, ROOT};
pub use op::Op;
pub use zonelog::{LivePiece, ZoneLogs};

use crate::placement::Placement;
use std::collections::BTreeMap;

/// All metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// Inodes by number.
    pub inodes: BTreeMap<u64, Inode>,
    /// Next inode number to hand out.
    pub next_ino: u64,
    /// Live (mapped) bytes per zone, derived from the maps.
    pub zone_live: Vec<u64>,
    /// Per-zone append and delete logs (`zonelog.rs`).
    pub zlogs: ZoneLogs,
    /// Placement policy chosen by mkfs (a mount may override it).
    pub placement: Placement,
    /// Totals since mkfs, derived from the ops (so replay reproduces them).
    pub counters: Counters,
}

/// Totals since mkfs: what was written, moved and deleted, and when (the input of the
/// cleaning cost estimate, ShingledFS §8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Bytes of new file data mapped.
    pub written: u64,
    /// Bytes moved by the cleaner.
    pub moved: u64,
    /// Bytes unmapped (deleted, truncated, overwritten or moved away).
    pub deleted: u64,
    /// Zones reset by the cleaner.
    pub resets: u64,
    /// Write pointers set back by the cleaner.
    pub rewinds: u64,
    /// Time of the first new data (ns since the epoch; 0 before any).
    pub first_write: i64,
    /// Time of the latest new data.
    pub last_write: i64,
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
            zlogs: ZoneLogs::new(zones),
            placement: Placement::default(),
            counters: Counters::default(),
        }
    }

    /// The inode `ino`.
    pub fn get(&self, ino: u64) -> Option<&Inode> {
        self.inodes.get(&ino)
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
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::Piece;

    /// A piece that covers a whole extent of `len` bytes at `lba` in `zone`.
    pub(crate) fn piece(zone: u32, lba: u64, len: u64) -> Piece {
        Piece {
            len,
            zone,
            ext_lba: lba,
            ext_len: len,
            ext_off: 0,
        }
    }
}
