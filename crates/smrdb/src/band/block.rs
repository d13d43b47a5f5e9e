//! Data blocks and the index block of a band.
//!
//! A data block is a run of entries in internal key order followed by a trailer:
//! `entry* | count: u32 | crc: u32`, where an entry is
//! `varint klen | key | varint (seq << 1 | has_value) | [varint vlen | value]` and the crc
//! (masked crc32c) covers everything before it: the checksum suffix [`BLOCK`] every band
//! structure ends with.

use crate::memtable::{Entry, EntryRef};
use tegula_codec::frame::Suffix;
use tegula_codec::{varint_len, Dec, DecodeError, Enc, FormatError};

/// The frame of every band structure (data block, index, Bloom filter, histogram, footer):
/// `payload | crc: u32`, the masked crc32c of the payload.
pub const BLOCK: Suffix = Suffix::masked("band block");

/// Bytes of a data block's trailer (`count: u32 | crc: u32`).
pub const BLOCK_TRAILER: usize = 8;

/// Appends entries and produces an encoded block.
#[derive(Debug, Default)]
pub struct BlockBuilder {
    buf: Enc,
    count: u32,
}

impl BlockBuilder {
    /// Adds an entry (callers add in internal key order).
    pub fn add<'e>(&mut self, e: impl Into<EntryRef<'e>>) {
        let e = e.into();
        self.buf.bytes_varint(e.key);
        self.buf.varint((e.seq << 1) | e.value.is_some() as u64);
        if let Some(v) = e.value {
            self.buf.bytes_varint(v);
        }
        self.count += 1;
    }
    /// Bytes `e` adds to a block (exactly what [`BlockBuilder::add`] encodes).
    pub fn entry_len(e: EntryRef<'_>) -> usize {
        let v = |n: u64| varint_len(n);
        v(e.key.len() as u64)
            + e.key.len()
            + v((e.seq << 1) | 1)
            + e.value.map_or(0, |x| v(x.len() as u64) + x.len())
    }
    /// Encoded size so far without the trailer.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// Whether no entry was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// The encoded block with its trailer; the builder is empty afterwards.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut b = std::mem::take(&mut self.buf);
        b.u32(self.count);
        self.count = 0;
        checksummed(b)
    }
}

/// Seals everything encoded so far with [`BLOCK`] and returns the bytes: the
/// `payload | crc: u32` form every band structure ends with.
pub fn checksummed(mut e: Enc) -> Vec<u8> {
    BLOCK.seal(&mut e);
    e.into_bytes()
}

/// Opens a band structure `payload | crc: u32` ([`BLOCK`]) and returns the payload.
pub fn verify(buf: &[u8]) -> Result<&[u8], FormatError> {
    Ok(BLOCK.open(buf)?)
}

/// Decodes a data block (checking its checksum when `verify_crc`).
pub fn decode_block(buf: &[u8], verify_crc: bool) -> Result<Vec<Entry>, FormatError> {
    let body = if verify_crc {
        verify(buf)?
    } else if buf.len() >= 4 {
        &buf[..buf.len() - 4]
    } else {
        return Err(FormatError::invalid("block too short"));
    };
    if body.len() < 4 {
        return Err(FormatError::invalid("block trailer missing"));
    }
    let (entries, cnt) = body.split_at(body.len() - 4);
    let count = u32::from_le_bytes([cnt[0], cnt[1], cnt[2], cnt[3]]) as usize;
    let mut r = Dec::new(entries);
    let mut out = Vec::with_capacity(count.min(entries.len() / 3 + 1));
    while !r.is_empty() {
        out.push(next_ref(&mut r)?.to_entry());
    }
    if out.len() != count {
        return Err(FormatError::invalid(format!(
            "block holds {} entries, trailer says {count}",
            out.len()
        )));
    }
    Ok(out)
}

/// Checks a data block (checksum when `verify_crc`, trailer always) and returns its entry
/// area, the bytes [`search_block`] looks in.
pub fn block_entries(buf: &[u8], verify_crc: bool) -> Result<&[u8], FormatError> {
    let body = if verify_crc {
        verify(buf)?
    } else {
        buf.get(..buf.len().saturating_sub(4))
            .filter(|_| buf.len() >= 4)
            .ok_or_else(|| FormatError::invalid("block too short"))?
    };
    if body.len() < 4 {
        return Err(FormatError::invalid("block trailer missing"));
    }
    Ok(&body[..body.len() - 4])
}

/// Decodes the entry at the reader's position.
fn next_ref<'a>(r: &mut Dec<'a>) -> Result<EntryRef<'a>, FormatError> {
    let at = r.pos();
    let bad =
        |_: DecodeError| FormatError::invalid(format!("malformed entry at block offset {at}"));
    let key = r.bytes_varint().map_err(bad)?;
    let sk = r.varint().map_err(bad)?;
    let value = if sk & 1 == 1 {
        Some(r.bytes_varint().map_err(bad)?)
    } else {
        None
    };
    Ok(EntryRef {
        key,
        seq: sk >> 1,
        value,
    })
}

/// Finds, in an entry area, the first entry at or after internal key `(key, snap)`, without
/// copying: `Ok(Some(entry))`, or `Ok(None)` when every entry is smaller.
pub fn search_block<'a>(
    entries: &'a [u8],
    key: &[u8],
    snap: u64,
) -> Result<Option<EntryRef<'a>>, FormatError> {
    let mut pos = 0;
    while pos < entries.len() {
        let ((k0, k1), seq, value, next) =
            crate::cursor::parse_entry(entries, pos).ok_or_else(|| {
                FormatError::invalid(format!("malformed entry at block offset {pos}"))
            })?;
        let k = &entries[k0..k1];
        if crate::band::reader::cmp_ikey(k, seq, key, snap) != std::cmp::Ordering::Less {
            return Ok(Some(EntryRef {
                key: k,
                seq,
                value: value.map(|(a, b)| &entries[a..b]),
            }));
        }
        pos = next;
    }
    Ok(None)
}

/// Where a data block lies, and the first and last keys it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// First user key in the block (band format version 2; empty in version 1).
    pub first_key: Vec<u8>,
    /// Last user key in the block.
    pub last_key: Vec<u8>,
    /// Sequence number of the last entry.
    pub last_seq: u64,
    /// Byte offset of the block inside the band.
    pub offset: u64,
    /// Encoded length of the block, trailer included.
    pub len: u32,
}

/// Encodes an index (band format version 2): `varint n | (bytes last_key | varint seq |
/// varint offset | varint len | bytes first_key)* | crc`.
pub fn encode_index(idx: &[IndexEntry]) -> Vec<u8> {
    let mut b = Enc::new();
    b.varint(idx.len() as u64);
    for e in idx {
        b.bytes_varint(&e.last_key);
        b.varint(e.last_seq);
        b.varint(e.offset);
        b.varint(e.len as u64);
        b.bytes_varint(&e.first_key);
    }
    checksummed(b)
}

/// Decodes an index block of the current band format.
pub fn decode_index(buf: &[u8]) -> Result<Vec<IndexEntry>, FormatError> {
    decode_index_version(buf, super::footer::BAND_VERSION)
}

/// Decodes an index block of band format `version` (1: no first keys).
pub fn decode_index_version(buf: &[u8], version: u32) -> Result<Vec<IndexEntry>, FormatError> {
    let body = verify(buf)?;
    let mut r = Dec::new(body);
    let bad = |_: DecodeError| FormatError::invalid("malformed index");
    let n = r.varint().map_err(bad)?;
    let mut out = Vec::with_capacity((n as usize).min(body.len()));
    for _ in 0..n {
        let last_key = r.bytes_varint().map_err(bad)?.to_vec();
        let last_seq = r.varint().map_err(bad)?;
        let offset = r.varint().map_err(bad)?;
        let len = r.varint().map_err(bad)?;
        let first_key = if version >= 2 {
            r.bytes_varint().map_err(bad)?.to_vec()
        } else {
            Vec::new()
        };
        out.push(IndexEntry {
            first_key,
            last_key,
            last_seq,
            offset,
            len: u32::try_from(len).map_err(|_| FormatError::invalid("malformed index"))?,
        });
    }
    if !r.is_empty() {
        return Err(FormatError::invalid("trailing bytes after index"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(k: &str, seq: u64, v: Option<&str>) -> Entry {
        Entry {
            key: k.as_bytes().to_vec(),
            seq,
            value: v.map(|v| v.as_bytes().to_vec()),
        }
    }

    #[test]
    fn block_round_trip_and_corruption_detected() {
        let mut b = BlockBuilder::default();
        let es = vec![e("a", 9, Some("x")), e("a", 3, None), e("b", 1, Some(""))];
        for x in &es {
            b.add(x);
        }
        let enc = b.finish();
        assert_eq!(decode_block(&enc, true).unwrap(), es);
        for i in 0..enc.len() {
            let mut bad = enc.clone();
            bad[i] ^= 0x40;
            assert!(decode_block(&bad, true).is_err(), "flip at {i}");
        }
        assert!(decode_block(&enc[..enc.len() - 1], true).is_err());
    }

    #[test]
    fn index_round_trip() {
        let idx = vec![IndexEntry {
            first_key: b"a".to_vec(),
            last_key: b"k".to_vec(),
            last_seq: 7,
            offset: 4096,
            len: 100,
        }];
        assert_eq!(decode_index(&encode_index(&idx)).unwrap(), idx);
        // A version 1 index (no first keys) still decodes as version 1.
        let mut v1 = Enc::new();
        v1.varint(1);
        v1.bytes_varint(b"k");
        v1.varint(7);
        v1.varint(4096);
        v1.varint(100);
        let v1 = checksummed(v1);
        let old = decode_index_version(&v1, 1).unwrap();
        assert_eq!(
            (old[0].first_key.len(), &old[0].last_key[..]),
            (0, &b"k"[..])
        );
        assert!(decode_index(&v1).is_err());
        assert!(decode_index(&[1, 2, 3]).is_err());
    }
}
