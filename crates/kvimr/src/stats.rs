//! What the middleware did: data by track kind and by level, read-modify-writes, syncs, map
//! writes, and the device time read-modify-writes took.

use serde::Serialize;
use std::collections::BTreeMap;

/// Where one level's data went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// Files created at this level.
    pub files: u64,
    /// File bytes written to top tracks.
    pub top_bytes: u64,
    /// File bytes written to bottom tracks.
    pub bottom_bytes: u64,
}

/// Cumulative counters of one store: since it was opened ([`crate::Store::stats`]), or over
/// the store's life ([`crate::Store::lifetime_stats`]: what every map copy records, plus
/// this open's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Files created.
    pub files_created: u64,
    /// Files deleted.
    pub files_deleted: u64,
    /// Bytes appended to data files (what the layer above asked to store).
    pub bytes_appended: u64,
    /// File data written to top tracks (restores not included).
    pub data_bytes_top: u64,
    /// File data written to bottom tracks.
    pub data_bytes_bottom: u64,
    /// Read-modify-writes (naive: one per bottom track with valid neighbours; merged: one per
    /// group of a file's bottom tracks).
    pub rmw_ops: u64,
    /// Top tracks restored after a bottom write.
    pub top_rewrites: u64,
    /// Bytes backed up and restored by read-modify-writes.
    pub rmw_bytes: u64,
    /// Bytes written to the staging area (backups with their headers, padded).
    pub staging_bytes: u64,
    /// Device flushes the store issued (its own and those the layer above asked for).
    pub syncs: u64,
    /// Of those, flushes inside read-modify-writes.
    pub rmw_syncs: u64,
    /// Map copies written.
    pub map_writes: u64,
    /// Bytes of map copies written (padded).
    pub map_bytes: u64,
    /// Bytes appended to safe files.
    pub safe_bytes: u64,
    /// Bytes written to the raw area.
    pub raw_bytes: u64,
    /// Device time spent in read-modify-writes beyond writing the bottoms themselves
    /// (backup reads, staging writes, restores and their syncs).
    pub rmw_ns: u64,
    /// Device time spent persisting data files: their track writes with every
    /// read-modify-write and ordering sync they needed (what the paper calls the time of
    /// persisting SSTables; `rmw_ns` is part of it).
    pub persist_ns: u64,
    /// Device time of the store's syncs beyond the persists they run: the flush that puts
    /// cached writes on the media (SSTable data among them: with the write cache on, a
    /// persist without read-modify-write mostly fills the cache) and the map write.
    pub sync_ns: u64,
    /// Staging records restored when the store was opened (read-modify-writes a power cut
    /// interrupted).
    pub recovered_rmw: u64,
    /// Data placement per level (`L0` … and `none` for files without a level).
    pub levels: BTreeMap<String, Placement>,
}

impl Stats {
    /// Every scalar counter, in the order a map copy stores them
    /// (`docs/formats/kvimr-map.md`).
    pub(crate) fn counters_mut(&mut self) -> [&mut u64; 19] {
        [
            &mut self.files_created,
            &mut self.files_deleted,
            &mut self.bytes_appended,
            &mut self.data_bytes_top,
            &mut self.data_bytes_bottom,
            &mut self.rmw_ops,
            &mut self.top_rewrites,
            &mut self.rmw_bytes,
            &mut self.staging_bytes,
            &mut self.syncs,
            &mut self.rmw_syncs,
            &mut self.map_writes,
            &mut self.map_bytes,
            &mut self.safe_bytes,
            &mut self.raw_bytes,
            &mut self.rmw_ns,
            &mut self.persist_ns,
            &mut self.sync_ns,
            &mut self.recovered_rmw,
        ]
    }

    /// Adds `other`'s counters to these (saturating).
    pub fn add(&mut self, other: &Stats) {
        let mut o = other.clone();
        for (a, b) in self.counters_mut().into_iter().zip(o.counters_mut()) {
            *a = a.saturating_add(*b);
        }
        for (k, p) in &other.levels {
            let e = self.levels.entry(k.clone()).or_default();
            e.files = e.files.saturating_add(p.files);
            e.top_bytes = e.top_bytes.saturating_add(p.top_bytes);
            e.bottom_bytes = e.bottom_bytes.saturating_add(p.bottom_bytes);
        }
    }

    /// The placement counters of `level`.
    pub fn level_mut(&mut self, level: Option<u8>) -> &mut Placement {
        let key = level.map_or_else(|| "none".to_string(), |l| format!("L{l}"));
        self.levels.entry(key).or_default()
    }

    /// Bytes written to the media per byte appended: file data, restores, staging and map
    /// copies over the bytes appended to data files (1.0 without any overhead).
    pub fn media_write_amplification(&self) -> f64 {
        if self.bytes_appended == 0 {
            return 0.0;
        }
        (self.data_bytes_top
            + self.data_bytes_bottom
            + self.rmw_bytes
            + self.staging_bytes
            + self.map_bytes) as f64
            / self.bytes_appended as f64
    }
}
