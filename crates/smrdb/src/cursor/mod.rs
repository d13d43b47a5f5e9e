//! Cursors: positioned iterators over entries in internal key order (user key ascending,
//! sequence number descending) that lend the current entry instead of handing out owned
//! copies, as LevelDB's and RocksDB's iterators do. A range scan is a [`MergingCursor`] over
//! one [`MemCursor`] per memtable and one [`BandCursor`] per band that may hold the range.
//!
//! A band cursor starts *unpositioned*: it costs nothing until the merge needs its first entry.
//! Until then it reports a lower bound of that entry (the band's smallest key, or the scan's
//! start key), so that a band whose keys all lie beyond the ones a short scan returns is never
//! read, and a seek reads one block (through the block cache) per band that holds the start
//! key.

mod band;
mod mem;
mod merge;

pub use band::BandCursor;
pub use mem::MemCursor;
pub use merge::MergingCursor;

use crate::error::Result;

/// Where a cursor stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head<'a> {
    /// At an entry: its user key and sequence number.
    At(&'a [u8], u64),
    /// Not positioned yet; its first entry is at or after this internal key.
    Bound(&'a [u8], u64),
    /// Past the last entry.
    Done,
}

/// A sorted stream of entries that lends the current one.
pub trait Cursor: Send {
    /// The current entry, a lower bound of it (unpositioned), or the end.
    fn head(&self) -> Head<'_>;
    /// The value of the current entry (`None`: a tombstone, or not at an entry).
    fn value(&self) -> Option<&[u8]>;
    /// Positions an unpositioned cursor at its first entry (a no-op otherwise).
    fn position(&mut self) -> Result<()>;
    /// Moves to the next entry. An unpositioned cursor is positioned at its first entry
    /// instead (the merge only advances positioned cursors).
    fn advance(&mut self) -> Result<()>;
    /// Moves past every entry with user key `key`, at or bounded by which the cursor stands
    /// (a scan has decided that key). A band cursor uses its index to pass blocks that hold
    /// nothing else without reading them.
    fn skip_key(&mut self, key: &[u8]) -> Result<()> {
        self.position()?;
        while matches!(self.head(), Head::At(k, _) if k == key) {
            self.advance()?;
        }
        Ok(())
    }
}

/// Reads one block entry at `pos` of an entry area: `(key, seq, value, next pos)`, or `None`
/// if the bytes there are not a whole entry.
pub(crate) fn parse_entry(area: &[u8], pos: usize) -> Option<(Range, u64, Option<Range>, usize)> {
    let mut r = tegula_codec::Dec::new(area.get(pos..)?);
    let klen = r.varint().ok()? as usize;
    let k0 = pos + r.pos();
    r.take(klen).ok()?;
    let sk = r.varint().ok()?;
    let value = if sk & 1 == 1 {
        let vlen = r.varint().ok()? as usize;
        let v0 = pos + r.pos();
        r.take(vlen).ok()?;
        Some((v0, v0 + vlen))
    } else {
        None
    };
    Some(((k0, k0 + klen), sk >> 1, value, pos + r.pos()))
}

/// A byte range `(start, end)` inside a buffer.
pub(crate) type Range = (usize, usize);
