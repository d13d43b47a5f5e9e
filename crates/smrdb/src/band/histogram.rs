//! Byte-based equi-depth histogram of a band (paper §4.3): bucket boundaries chosen so each
//! bucket holds about the same number of bytes; built from the index. Used to estimate how
//! much of other bands' data falls inside a band's key range (its sequentiality).
//! Encoding: `varint n | first key | (bytes upper_key | varint bytes)* | crc: u32`.

use super::block::IndexEntry;
use crate::codec::{crc, put_bytes, put_u32, put_varint, Reader};

/// One bucket: keys up to and including `upper` (after the previous bucket), `bytes` of data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    /// Largest user key of the bucket.
    pub upper: Vec<u8>,
    /// Data bytes in the bucket.
    pub bytes: u64,
}

/// An equi-depth histogram.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Histogram {
    /// Smallest user key of the band.
    pub first: Vec<u8>,
    /// Buckets in key order.
    pub buckets: Vec<Bucket>,
}

impl Histogram {
    /// Builds the histogram from a band's index (each block's bytes end at its last key).
    pub fn from_index(first: &[u8], idx: &[IndexEntry], bucket_bytes: u64) -> Self {
        let mut buckets = Vec::new();
        let mut acc = 0u64;
        for (i, e) in idx.iter().enumerate() {
            acc += e.len as u64;
            if acc >= bucket_bytes.max(1) || i + 1 == idx.len() {
                buckets.push(Bucket {
                    upper: e.last_key.clone(),
                    bytes: acc,
                });
                acc = 0;
            }
        }
        Histogram {
            first: first.to_vec(),
            buckets,
        }
    }

    /// Total bytes.
    pub fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.bytes).sum()
    }

    /// Estimated bytes with keys in `[lo, hi]`: whole buckets inside count fully, buckets that
    /// straddle a bound count half.
    pub fn bytes_in(&self, lo: &[u8], hi: &[u8]) -> u64 {
        let mut sum = 0u64;
        let mut prev: &[u8] = &self.first;
        for b in &self.buckets {
            let (a, z) = (prev, b.upper.as_slice());
            prev = z;
            if z < lo || a > hi {
                continue;
            }
            if a >= lo && z <= hi {
                sum += b.bytes;
            } else {
                sum += b.bytes / 2;
            }
        }
        sum
    }

    /// Encoded form.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        put_varint(&mut b, self.buckets.len() as u64);
        put_bytes(&mut b, &self.first);
        for x in &self.buckets {
            put_bytes(&mut b, &x.upper);
            put_varint(&mut b, x.bytes);
        }
        let c = crc(&b);
        put_u32(&mut b, c);
        b
    }

    /// Decodes and checks a histogram.
    pub fn decode(buf: &[u8]) -> Result<Self, String> {
        let body = super::block::verify(buf)?;
        let mut r = Reader::new(body);
        let bad = || "malformed histogram".to_string();
        let n = r.varint().ok_or_else(bad)?;
        let first = r.bytes().ok_or_else(bad)?.to_vec();
        let mut buckets = Vec::with_capacity((n as usize).min(body.len()));
        for _ in 0..n {
            let upper = r.bytes().ok_or_else(bad)?.to_vec();
            let bytes = r.varint().ok_or_else(bad)?;
            buckets.push(Bucket { upper, bytes });
        }
        if !r.is_empty() {
            return Err("trailing bytes after histogram".into());
        }
        Ok(Histogram { first, buckets })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equi_depth_by_bytes() {
        let idx: Vec<IndexEntry> = (0..10u8)
            .map(|i| IndexEntry {
                last_key: vec![b'a' + i],
                last_seq: 0,
                offset: i as u64 * 1000,
                len: 1000,
            })
            .collect();
        let h = Histogram::from_index(b"a", &idx, 2000);
        assert_eq!(h.buckets.len(), 5);
        assert_eq!(h.total(), 10_000);
        assert_eq!(h.bytes_in(b"a", b"j"), 10_000);
        assert!(h.bytes_in(b"x", b"z") == 0);
        assert_eq!(Histogram::decode(&h.encode()).unwrap(), h);
    }
}
