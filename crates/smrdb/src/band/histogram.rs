//! Byte-based equi-depth histogram of a band (paper §4.3): bucket boundaries chosen so each
//! bucket holds about the same number of bytes; built from the index. Used to estimate how
//! much of other bands' data falls inside a band's key range (its sequentiality).
//! Encoding: `varint n | first key | (bytes upper_key | varint bytes)* | crc: u32`.

use super::block::IndexEntry;
use tegula_codec::{Dec, DecodeError, Enc, FormatError};

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
    /// Builds a histogram of about `budget` encoded bytes from a band's index (the paper's
    /// fixed 4 KB histogram): as many buckets as fit, each holding an equal share of the
    /// band's data bytes.
    pub fn sized(first: &[u8], idx: &[IndexEntry], budget: usize) -> Self {
        let data: u64 = idx.iter().map(|e| e.len as u64).sum();
        let key_bytes: usize = idx.iter().map(|e| e.last_key.len()).sum();
        let per_bucket = key_bytes / idx.len().max(1) + 4;
        let buckets = (budget.saturating_sub(first.len() + 8) / per_bucket).max(1) as u64;
        Self::from_index(first, idx, data.div_ceil(buckets).max(1))
    }

    /// Builds the histogram from a band's index (each block's bytes end at its last key),
    /// closing a bucket once it holds `bucket_bytes`.
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
        let mut b = Enc::new();
        b.varint(self.buckets.len() as u64);
        b.bytes_varint(&self.first);
        for x in &self.buckets {
            b.bytes_varint(&x.upper);
            b.varint(x.bytes);
        }
        super::block::checksummed(b)
    }

    /// Decodes and checks a histogram.
    pub fn decode(buf: &[u8]) -> Result<Self, FormatError> {
        let body = super::block::verify(buf)?;
        let mut r = Dec::new(body);
        let bad = |_: DecodeError| FormatError::invalid("malformed histogram");
        let n = r.varint().map_err(bad)?;
        let first = r.bytes_varint().map_err(bad)?.to_vec();
        let mut buckets = Vec::with_capacity((n as usize).min(body.len()));
        for _ in 0..n {
            let upper = r.bytes_varint().map_err(bad)?.to_vec();
            let bytes = r.varint().map_err(bad)?;
            buckets.push(Bucket { upper, bytes });
        }
        if !r.is_empty() {
            return Err(FormatError::invalid("trailing bytes after histogram"));
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
                first_key: Vec::new(),
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

    #[test]
    fn sized_histogram_fits_its_budget() {
        let idx: Vec<IndexEntry> = (0..10_000u64)
            .map(|i| IndexEntry {
                first_key: Vec::new(),
                last_key: format!("key{i:08}").into_bytes(),
                last_seq: 1,
                offset: i * 4096,
                len: 4096,
            })
            .collect();
        let h = Histogram::sized(b"key", &idx, 4096);
        let n = h.encode().len();
        assert!(n <= 4096 + 64 && n > 2048, "{n} bytes");
        assert_eq!(h.total(), 10_000 * 4096);
    }
}
