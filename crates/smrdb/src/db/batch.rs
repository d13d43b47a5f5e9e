//! [`WriteBatch`]: a group of puts and deletes kept encoded as the log stores them.

use crate::log;
use tegula_codec::Enc;

/// A group of puts and deletes applied atomically. Operations are kept encoded as the log
/// stores them (`kind u8 | bytes key | [bytes value]`), so applying a batch copies it once
/// into the log buffer and once into the memtable.
#[derive(Debug, Clone, Default)]
pub struct WriteBatch {
    pub(super) rep: Enc,
    pub(super) count: usize,
    pub(super) bytes: usize,
    pub(super) max_key: usize,
    pub(super) puts: usize,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }
    /// An empty batch with room for `bytes` of encoded operations.
    pub fn with_capacity(bytes: usize) -> Self {
        WriteBatch {
            rep: Enc::with_capacity(bytes),
            ..Self::default()
        }
    }
    /// Adds a put.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.bytes += key.len() + value.len();
        self.max_key = self.max_key.max(key.len());
        self.count += 1;
        self.puts += 1;
        log::encode_op(&mut self.rep, key, Some(value));
    }
    /// Adds a delete.
    pub fn delete(&mut self, key: &[u8]) {
        self.bytes += key.len();
        self.max_key = self.max_key.max(key.len());
        self.count += 1;
        log::encode_op(&mut self.rep, key, None);
    }
    /// Number of operations.
    pub fn len(&self) -> usize {
        self.count
    }
    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Removes every operation.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.count = 0;
        self.bytes = 0;
        self.max_key = 0;
        self.puts = 0;
    }
    /// The operations in order: `(key, Some(value))` for a put, `(key, None)` for a delete.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        log::OpIter::new(self.rep.as_bytes())
    }
}
