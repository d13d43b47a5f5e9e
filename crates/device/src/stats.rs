//! Device statistics: what the host asked for, what the media did, where the time went.

use crate::mechanics::MechStats;
use serde::{Deserialize, Serialize};

/// Cumulative counters of one device (persisted in disk images across invocations).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Host read commands.
    pub reads: u64,
    /// Host write commands.
    pub writes: u64,
    /// Host flush commands.
    pub flushes: u64,
    /// Host discard commands.
    pub discards: u64,
    /// Zone management commands.
    pub zone_ops: u64,
    /// Bytes the host read.
    pub bytes_read: u64,
    /// Bytes the host wrote.
    pub bytes_written: u64,
    /// Reads served entirely from the write cache.
    pub cache_read_hits: u64,
    /// Media read operations.
    pub media_reads: u64,
    /// Media write operations (host write-through and destage).
    pub media_writes: u64,
    /// Bytes read from the media.
    pub media_bytes_read: u64,
    /// Bytes written to the media.
    pub media_bytes_written: u64,
    /// Time the device was busy.
    pub busy_ns: u64,
    /// Time the device was idle (virtual clock minus busy time).
    pub idle_ns: u64,
    /// Mechanical counters (seeks, seek distance, rotation, transfer).
    pub mech: MechStats,
    /// Host bytes written per zone.
    pub zone_bytes_written: Vec<u64>,
    /// Interlaced media: bytes written to top tracks (host write-through and destage).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub top_bytes_written: u64,
    /// Interlaced media: bytes written to bottom tracks.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bottom_bytes_written: u64,
    /// Interlaced media: readable top-track sectors destroyed by bottom-track writes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interlace_destroyed_sectors: u64,
}

// Zero-valued interlace counters are left out so that the statistics of other drives (and the
// state slots of existing images) keep their bytes.
fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Stats {
    /// Media bytes written per host byte written (1.0 for a plain drive after a flush).
    pub fn media_write_amplification(&self) -> f64 {
        if self.bytes_written == 0 {
            0.0
        } else {
            self.media_bytes_written as f64 / self.bytes_written as f64
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}
