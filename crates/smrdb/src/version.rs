//! The set of live bands as readers see it.

use crate::band::Band;
use crate::memtable::Memtable;
use std::sync::Arc;

/// A live band and its level (the level can change by a trivial move; the band cannot).
#[derive(Debug, Clone)]
pub struct VBand {
    /// Level.
    pub level: u8,
    /// The open band.
    pub band: Arc<Band>,
}

impl VBand {
    /// Band id.
    pub fn id(&self) -> u64 {
        self.band.meta.id
    }
    /// Whether the key ranges of two bands intersect.
    pub fn overlaps(&self, o: &VBand) -> bool {
        self.band.meta.overlaps(&o.band.meta)
    }
}

/// What a reader needs: memtables and bands, consistent with each other.
#[derive(Debug, Clone)]
pub struct SuperVersion {
    /// The mutable memtable.
    pub mem: Arc<Memtable>,
    /// The memtable being flushed, if any.
    pub imm: Option<Arc<Memtable>>,
    /// Live bands, newest data first (by largest sequence number).
    pub bands: Arc<Vec<VBand>>,
}

impl SuperVersion {
    /// Bands at `level`, oldest first (by band id).
    pub fn level(&self, level: u8) -> Vec<VBand> {
        level_of(&self.bands, level)
    }
}

/// Bands at `level`, oldest first (by band id).
pub fn level_of(bands: &[VBand], level: u8) -> Vec<VBand> {
    let mut v: Vec<VBand> = bands.iter().filter(|b| b.level == level).cloned().collect();
    v.sort_by_key(|b| b.id());
    v
}

/// Sorts bands newest data first.
pub fn sort_newest_first(v: &mut [VBand]) {
    v.sort_by(|a, b| {
        b.band
            .meta
            .max_seq
            .cmp(&a.band.meta.max_seq)
            .then(b.id().cmp(&a.id()))
    });
}
