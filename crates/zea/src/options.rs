//! Allocator options. `Default` is the one source of defaults.

/// When a put's data and metadata become durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// A write followed by a cache flush: durable when `put` returns (the default).
    #[default]
    Flush,
    /// FUA writes: durable when `put` returns, without flushing what else the cache holds.
    Fua,
    /// A plain write: durable at the caller's next device flush. For a caller that commits
    /// many extents at once (a file system flushes once per commit, not once per extent).
    Caller,
}

/// How a ZEA instance writes and recovers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Back pointers per metadata block (default 8). More pointers let discovery skip further
    /// per read and survive more unreadable metadata blocks, at 8 bytes each.
    pub back_pointers: u16,
    /// When a put is durable (default [`Durability::Flush`]: write + flush).
    pub durability: Durability,
    /// On open, read the last extent's data and check its checksum too (default true).
    /// Costs one read of the last extent per zone; catches a device that reorders writes.
    pub verify_tail: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            back_pointers: 8,
            durability: Durability::default(),
            verify_tail: true,
        }
    }
}
