//! The memtable's arena: keys and values copied one after another into chunks of 1 MiB (as
//! RocksDB's memtable arena), one allocation per chunk instead of one per version.

use std::ptr::NonNull;

/// Keys and values are copied one after another into chunks of this many bytes.
pub(super) const CHUNK_BYTES: usize = 1 << 20;

/// A version with more bytes of key and value than this gets a chunk of its own, so that at
/// most a quarter of a chunk is left unused at its end.
pub(super) const OWN_CHUNK: usize = CHUNK_BYTES / 4;

/// A block of memory that versions' keys and values are copied into, one after another (as
/// RocksDB's memtable arena): one allocation per megabyte of versions instead of one per
/// version. Every byte is written once, before any version refers to it, and never again.
pub(super) struct Chunk {
    ptr: NonNull<u8>,
    /// The allocation's capacity.
    pub(super) cap: usize,
    /// For a chunk of one version's own ([`OWN_CHUNK`]): its key and value bytes (0 otherwise).
    pub(super) own_len: usize,
}

// SAFETY: a chunk owns its allocation. The bytes a version refers to are never written again,
// and the one writer (holding the memtable's write lock) writes only bytes beyond every
// version's, so shared reads from any thread never meet a write.
unsafe impl Send for Chunk {}
unsafe impl Sync for Chunk {}

impl Chunk {
    /// An unwritten chunk of (at least) `cap` bytes.
    pub(super) fn with_capacity(cap: usize) -> Chunk {
        let mut v = std::mem::ManuallyDrop::new(Vec::<u8>::with_capacity(cap));
        let cap = v.capacity();
        // SAFETY: a Vec's pointer is never null (dangling but non-null when it allocated
        // nothing).
        let ptr = unsafe { NonNull::new_unchecked(v.as_mut_ptr()) };
        Chunk {
            ptr,
            cap,
            own_len: 0,
        }
    }

    /// Copies `key` and then `value` to offset `at`.
    ///
    /// SAFETY: `at + key.len() + value.len() <= self.cap`, and no version refers to those
    /// bytes yet (the caller holds the memtable's write lock and writes past every version).
    pub(super) unsafe fn write(&self, at: usize, key: &[u8], value: &[u8]) {
        let p = self.ptr.as_ptr().add(at);
        std::ptr::copy_nonoverlapping(key.as_ptr(), p, key.len());
        std::ptr::copy_nonoverlapping(value.as_ptr(), p.add(key.len()), value.len());
    }

    /// The `len` bytes at offset `at`.
    ///
    /// SAFETY: [`Chunk::write`] wrote them (they are never written again).
    pub(super) unsafe fn bytes(&self, at: usize, len: usize) -> &[u8] {
        std::slice::from_raw_parts(self.ptr.as_ptr().add(at), len)
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `cap` are those of the Vec made in `with_capacity`, freed only here.
        drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), 0, self.cap) });
    }
}

impl std::fmt::Debug for Chunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunk").field("cap", &self.cap).finish()
    }
}
