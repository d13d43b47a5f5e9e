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

/// A byte range `(start, end)` inside a buffer.
pub(crate) type Range = (usize, usize);

/// Reads one block entry at `pos` of an entry area: `(key, seq, value, next pos)`, or `None`
/// if the bytes there are not a whole entry. (What `tegula_codec::Dec` would read, decoded
/// here in place: scans and seeks parse every entry they pass.)
#[inline]
pub(crate) fn parse_entry(area: &[u8], pos: usize) -> Option<(Range, u64, Option<Range>, usize)> {
    let mut p = pos;
    let klen = usize::try_from(varint(area, &mut p)?).ok()?;
    let k = (p, p.checked_add(klen).filter(|&e| e <= area.len())?);
    p = k.1;
    let sk = varint(area, &mut p)?;
    let value = if sk & 1 == 1 {
        let vlen = usize::try_from(varint(area, &mut p)?).ok()?;
        let v = (p, p.checked_add(vlen).filter(|&e| e <= area.len())?);
        p = v.1;
        Some(v)
    } else {
        None
    };
    Some((k, sk >> 1, value, p))
}

/// A LEB128 varint of at most 10 bytes at `*pos` (as `tegula_codec::Dec::varint` reads it),
/// moving `pos` past it.
#[inline]
fn varint(area: &[u8], pos: &mut usize) -> Option<u64> {
    let b = *area.get(*pos)?;
    *pos += 1;
    if b & 0x80 == 0 {
        return Some(u64::from(b));
    }
    let mut v = u64::from(b & 0x7f);
    for i in 1..10 {
        let b = *area.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry as `tegula_codec::Dec` reads it.
    fn reference(area: &[u8], pos: usize) -> Option<(Range, u64, Option<Range>, usize)> {
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

    #[test]
    fn entries_parse_as_the_codec_reads_them_whatever_the_bytes() {
        let mut enc = tegula_codec::Enc::new();
        enc.varint(3);
        enc.raw(b"key");
        enc.varint((300 << 1) | 1);
        enc.varint(200);
        enc.raw(&[7u8; 200]);
        enc.varint(1);
        enc.raw(b"k");
        enc.varint(9 << 1);
        let good = enc.into_bytes();
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut cases: Vec<Vec<u8>> = vec![good.clone(), vec![], vec![0x80; 12], vec![0xff; 11]];
        for cut in 0..good.len() {
            cases.push(good[..cut].to_vec());
        }
        for _ in 0..2000 {
            let mut b = good.clone();
            for _ in 0..3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x % b.len() as u64) as usize;
                b[i] = (x >> 32) as u8;
            }
            cases.push(b);
        }
        for b in &cases {
            for pos in 0..=b.len() + 1 {
                assert_eq!(parse_entry(b, pos), reference(b, pos), "{b:?} at {pos}");
            }
        }
        let (k, seq, v, next) = parse_entry(&good, 0).expect("an entry");
        assert_eq!((&good[k.0..k.1], seq), (&b"key"[..], 300));
        assert_eq!(v.map(|(a, b)| b - a), Some(200));
        assert_eq!(
            parse_entry(&good, next).map(|e| (e.1, e.2)),
            Some((9, None))
        );
    }
}
