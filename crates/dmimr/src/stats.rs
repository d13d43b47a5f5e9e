//! Counters of the drive-managed layer (cumulative since the drive was built or opened).

use serde::Serialize;

/// What the layer did on behalf of the host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DmImrStats {
    /// Host write commands.
    pub host_writes: u64,
    /// Host bytes written.
    pub host_write_bytes: u64,
    /// Host bytes written to bottom tracks.
    pub bottom_bytes: u64,
    /// Host bytes written to top tracks.
    pub top_bytes: u64,
    /// Read-modify-writes (one per group of bottom pieces of a host write whose neighbouring
    /// tops held data).
    pub rmw_ops: u64,
    /// Top-track extents backed up and rewritten by them.
    pub top_rewrites: u64,
    /// Bytes backed up (and rewritten) by them.
    pub rmw_bytes: u64,
    /// Bytes of staging records written.
    pub staging_bytes: u64,
    /// Cache flushes of the raw drive (read-modify-write syncs, ordering syncs, host flushes).
    pub syncs: u64,
    /// Of those, the syncs inside read-modify-writes.
    pub rmw_syncs: u64,
    /// Of those, flushes that keep a top write behind a bottom write still in the cache.
    pub ordering_syncs: u64,
    /// Metadata records written.
    pub meta_writes: u64,
    /// First writes to a top track, written as the whole track (zeros around the host data).
    pub top_first_writes: u64,
    /// Modelled device time inside read-modify-writes, in nanoseconds.
    pub rmw_ns: u64,
    /// Interrupted read-modify-writes restored when the drive was opened.
    pub recovered_rmw: u64,
}
