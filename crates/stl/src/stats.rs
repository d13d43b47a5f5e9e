//! Per-drive statistics of the translation layer.

use serde::{Deserialize, Serialize};
use tegula_device::Nanos;

/// What the translation layer did. Cumulative since the drive was built, except the
/// occupancy figures, which are current.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StlStats {
    /// Translation layer name.
    pub stl: String,
    /// Size of the persistent cache in bytes.
    pub cache_bytes: u64,
    /// Bytes of the persistent cache holding live entries or blocks (raw, padding included).
    pub cache_used_bytes: u64,
    /// Host data bytes currently served from the persistent cache.
    pub cache_live_bytes: u64,
    /// Journal entries (or cache block writes) written.
    pub journal_entries: u64,
    /// Journal entries still holding live data.
    pub journal_entries_live: u64,
    /// Current map entries (extents or cached blocks).
    pub map_entries: u64,
    /// Map capacity in entries.
    pub map_entries_max: u64,
    /// Map merges written to the map region.
    pub map_merges: u64,
    /// Cleaning episodes (one idle period or one foreground trigger).
    pub cleaning_runs: u64,
    /// Bands cleaned (read-modify-written or merged).
    pub bands_cleaned: u64,
    /// Bytes read from the media by cleaning.
    pub cleaning_bytes_read: u64,
    /// Bytes written to the media by cleaning (staging included).
    pub cleaning_bytes_written: u64,
    /// Modelled time spent cleaning.
    pub cleaning_ns: Nanos,
    /// Host writes that bypassed the persistent cache (volatile cache on, in-place band writes).
    pub bypass_writes: u64,
    /// Sectors found destroyed while cleaning (torn in-place writes), rewritten as zeros.
    pub salvaged_sectors: u64,
    /// Recoveries after power loss.
    pub recoveries: u64,
    /// Records replayed by the last recovery.
    pub replayed_records: u64,
    /// Dirty bytes in the volatile cache.
    pub volatile_dirty_bytes: u64,
}
