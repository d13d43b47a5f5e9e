//! A cursor over a memtable: entries are copied out in batches (the tree's lock is held only
//! while a batch is copied), small at first so that a short scan copies little (a few
//! entries and at most 4 KiB: a seek that reads one 4 KiB value copies one), doubling up to
//! 256 entries and 256 KiB.

use super::{Cursor, Head};
use crate::error::Result;
use crate::memtable::{BatchFrom, FlatBatch, Memtable};
use std::sync::Arc;

/// Largest batch, in entries.
const MAX_BATCH: usize = 256;
/// Bytes of keys and values after which a batch stops early.
const MAX_BATCH_BYTES: usize = 256 << 10;
/// The byte budget of the first batch.
const FIRST_BATCH_BYTES: usize = 4 << 10;

/// Iterates a memtable from a start key.
#[derive(Debug)]
pub struct MemCursor {
    mem: Arc<Memtable>,
    batch: FlatBatch,
    /// Position in `batch`.
    pos: usize,
    /// Entries to fetch next time.
    want: usize,
    /// Bytes after which the next batch stops (at least one entry is fetched).
    want_bytes: usize,
    /// The last batch was short: nothing follows it.
    last_batch: bool,
    /// The last entry of the previous batch (where the next one starts).
    resume: Vec<u8>,
}

impl MemCursor {
    /// A cursor at the first entry of `mem` with user key ≥ `start`; `first_batch` entries are
    /// copied now (a seek that reads one entry wants few).
    pub fn new(mem: Arc<Memtable>, start: &[u8], first_batch: usize) -> Self {
        let mut c = MemCursor {
            mem,
            batch: FlatBatch::default(),
            pos: 0,
            want: first_batch.clamp(1, MAX_BATCH),
            want_bytes: FIRST_BATCH_BYTES,
            last_batch: false,
            resume: Vec::new(),
        };
        c.fetch(BatchFrom::Start(start));
        c
    }

    fn fetch(&mut self, from: BatchFrom<'_>) {
        self.last_batch = !self
            .mem
            .batch_into(from, self.want, self.want_bytes, &mut self.batch);
        self.pos = 0;
        self.want = (self.want * 2).min(MAX_BATCH);
        self.want_bytes = (self.want_bytes * 2).min(MAX_BATCH_BYTES);
    }
}

impl Cursor for MemCursor {
    fn head(&self) -> Head<'_> {
        self.batch
            .get(self.pos)
            .map_or(Head::Done, |e| Head::At(e.key, e.seq))
    }

    fn value(&self) -> Option<&[u8]> {
        self.batch.get(self.pos).and_then(|e| e.value)
    }

    fn position(&mut self) -> Result<()> {
        Ok(())
    }

    fn advance(&mut self) -> Result<()> {
        if self.pos >= self.batch.len() {
            return Ok(());
        }
        self.pos += 1;
        if self.pos < self.batch.len() || self.last_batch {
            return Ok(());
        }
        let Some(e) = self.batch.get(self.pos - 1) else {
            return Ok(());
        };
        let seq = e.seq;
        self.resume.clear();
        self.resume.extend_from_slice(e.key);
        let resume = std::mem::take(&mut self.resume);
        self.fetch(BatchFrom::After(&resume, seq));
        self.resume = resume;
        Ok(())
    }
}
