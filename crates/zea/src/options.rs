//! Allocator options. `Default` is the one source of defaults.

/// How a ZEA instance writes and recovers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Back pointers per metadata block (default 8). More pointers let discovery skip further
    /// per read and survive more unreadable metadata blocks, at 8 bytes each.
    pub back_pointers: u16,
    /// Make each put durable with FUA writes instead of a write followed by a cache flush
    /// (default false: write + flush). Either way `put` returns only once data and metadata
    /// are on the media.
    pub fua: bool,
    /// On open, read the last extent's data and check its checksum too (default true).
    /// Costs one read of the last extent per zone; catches a device that reorders writes.
    pub verify_tail: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            back_pointers: 8,
            fua: false,
            verify_tail: true,
        }
    }
}
