//! Storage behind the server: the [`Backend`] trait (point reads, ordered scans, atomic write
//! batches, sync, flush, statistics) and its implementations: SMRDB ([`SmrdbBackend`]) and,
//! with the `compare` feature, RocksDB and LevelDB through tegula-kv's C-API adapter
//! (`CapiBackend`). The server speaks to every engine through this trait alone, so engines are
//! compared under identical networking and key encoding.

#[cfg(feature = "compare")]
mod capi;
mod smrdb;

#[cfg(feature = "compare")]
pub use capi::{CapiBackend, CapiEngine};
pub use smrdb::SmrdbBackend;

use crate::error::BackendResult;

/// One operation of an atomic write batch: a put (`Some(value)`) or a delete (`None`).
pub type Op = (Vec<u8>, Option<Vec<u8>>);

/// A key-value engine as the server uses it. All calls come from the one engine thread.
pub trait Backend: Send {
    /// The engine's name (`smrdb`, `rocksdb`, `leveldb`), for `INFO`.
    fn name(&self) -> &str;
    /// The value of `key`.
    fn get(&self, key: &[u8]) -> BackendResult<Option<Vec<u8>>>;
    /// Up to `limit` pairs with keys in `[start, end)` in key order (to the last key when
    /// `end` is `None`).
    fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> BackendResult<Vec<(Vec<u8>, Vec<u8>)>>;
    /// Applies `ops` atomically; with `sync` they are durable when this returns.
    fn write(&self, ops: &[Op], sync: bool) -> BackendResult<()>;
    /// Stores one pair (a one-operation batch, not synced).
    fn put(&self, key: &[u8], value: &[u8]) -> BackendResult<()> {
        self.write(&[(key.to_vec(), Some(value.to_vec()))], false)
    }
    /// Deletes one key (a one-operation batch, not synced).
    fn delete(&self, key: &[u8]) -> BackendResult<()> {
        self.write(&[(key.to_vec(), None)], false)
    }
    /// Makes every write acknowledged so far durable.
    fn sync(&self) -> BackendResult<()>;
    /// Writes in-memory structures out (a memtable flush) and syncs: `SAVE`.
    fn flush(&self) -> BackendResult<()>;
    /// Engine statistics as `name:value` pairs for `INFO`'s tegula section.
    fn stats(&self) -> Vec<(String, String)>;
    /// Largest key the engine accepts, in bytes.
    fn max_key(&self) -> usize;
    /// Largest batch the engine accepts in one write: key and value bytes plus
    /// [`OP_OVERHEAD`] per operation.
    fn max_batch(&self) -> usize;
    /// Stops the engine, making everything durable.
    fn close(self: Box<Self>) -> BackendResult<()>;
}

/// Bytes a batch is charged per operation besides its key and value, when it is held against
/// [`Backend::max_batch`]: SMRDB charges 64 (so a batch of many deletes of short keys is
/// mostly this).
pub const OP_OVERHEAD: usize = 64;

/// The internal key that a sync without pending writes rewrites (in the server's reserved
/// namespace, never visible to clients): engines sync their log only as part of a write.
pub(crate) const SYNC_KEY: &[u8] = b"\x00sync";
