//! Bloom filter over a band's user keys (LevelDB's double-hashing scheme).
//! Encoding: `bits | k: u8 | crc: u32`.

use tegula_codec::{Enc, FormatError};

/// A 32-bit hash of a key (Murmur-like, as LevelDB's `Hash`).
pub fn hash(data: &[u8]) -> u32 {
    const M: u32 = 0xc6a4_a793;
    let mut h: u32 = 0xbc9f_1d34 ^ (data.len() as u32).wrapping_mul(M);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        h = h.wrapping_add(w).wrapping_mul(M);
        h ^= h >> 16;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = 0u32;
        for (i, &b) in rest.iter().enumerate() {
            w |= (b as u32) << (8 * i);
        }
        h = h.wrapping_add(w).wrapping_mul(M);
        h ^= h >> 24;
    }
    h
}

/// An in-memory Bloom filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bloom {
    bits: Vec<u8>,
    k: u8,
}

impl Bloom {
    /// Builds a filter for keys given by their hashes.
    pub fn build(hashes: &[u32], bits_per_key: u32) -> Self {
        if bits_per_key == 0 {
            return Bloom {
                bits: Vec::new(),
                k: 0,
            };
        }
        let k = ((bits_per_key as f64 * 0.69) as u8).clamp(1, 30);
        let nbits = (hashes.len() * bits_per_key as usize).max(64);
        let nbytes = nbits.div_ceil(8);
        let nbits = nbytes * 8;
        let mut bits = vec![0u8; nbytes];
        for &h0 in hashes {
            let mut h = h0;
            let delta = h.rotate_right(17);
            for _ in 0..k {
                let pos = h as usize % nbits;
                bits[pos / 8] |= 1 << (pos % 8);
                h = h.wrapping_add(delta);
            }
        }
        Bloom { bits, k }
    }

    /// Whether the key may be present (false means certainly absent).
    pub fn may_contain(&self, key: &[u8]) -> bool {
        if self.k == 0 || self.bits.is_empty() {
            return true;
        }
        let nbits = self.bits.len() * 8;
        let mut h = hash(key);
        let delta = h.rotate_right(17);
        for _ in 0..self.k {
            let pos = h as usize % nbits;
            if self.bits[pos / 8] & (1 << (pos % 8)) == 0 {
                return false;
            }
            h = h.wrapping_add(delta);
        }
        true
    }

    /// Encoded form.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Enc::with_capacity(self.bits.len() + 5);
        b.raw(&self.bits);
        b.u8(self.k);
        super::block::checksummed(b)
    }

    /// Decodes and checks a filter.
    pub fn decode(buf: &[u8]) -> Result<Self, FormatError> {
        let body = super::block::verify(buf)?;
        let (bits, k) = body
            .split_last()
            .map(|(k, bits)| (bits, *k))
            .ok_or_else(|| FormatError::invalid("empty filter"))?;
        if k > 30 {
            return Err(FormatError::invalid(format!("filter with {k} probes")));
        }
        Ok(Bloom {
            bits: bits.to_vec(),
            k,
        })
    }

    /// Memory held.
    pub fn size(&self) -> usize {
        self.bits.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let keys: Vec<Vec<u8>> = (0..2000u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let hs: Vec<u32> = keys.iter().map(|k| hash(k)).collect();
        let f = Bloom::decode(&Bloom::build(&hs, 10).encode()).unwrap();
        assert!(keys.iter().all(|k| f.may_contain(k)));
        let fp = (10_000u32..20_000)
            .filter(|i| f.may_contain(&i.to_be_bytes()))
            .count();
        assert!(fp < 300, "false positives {fp}");
    }
}
