//! CRC-32C (Castagnoli), the checksum of every tegula format, plain and masked.

/// CRC-32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC-32C of the bytes checksummed as `crc` followed by `data`: a checksum computed in pieces
/// (`crc32c_append(crc32c(a), b) == crc32c(a ++ b)`).
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// CRC-32C of `a ++ b` from `crc32c(a)`, `crc32c(b)` and `b`'s length, without reading the
/// bytes again: a checksum of the whole from checksums of its pieces.
pub fn crc32c_combine(crc_a: u32, crc_b: u32, len_b: usize) -> u32 {
    Crc32cCombiner::new(len_b).combine(crc_a, crc_b)
}

/// The reflected CRC-32C (Castagnoli) polynomial.
const POLY: u32 = 0x82F6_3B78;

/// `a * b` modulo the polynomial, both reflected (bit 31 is x^0), as zlib's `multmodp`.
fn multmodp(a: u32, mut b: u32) -> u32 {
    let mut m = 1u32 << 31;
    let mut p = 0u32;
    while m != 0 {
        if a & m != 0 {
            p ^= b;
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    p
}

/// [`crc32c_combine`] for many pieces `b` of one length: the factor that moves a checksum
/// past `len_b` bytes (x^(8·len_b) modulo the polynomial) is computed once, so each combine
/// costs one 32-step product (the `crc32c` crate's own combine builds GF(2) matrices on every
/// call, which costs more than checksumming a 64 KiB piece).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crc32cCombiner {
    shift: u32,
}

impl Crc32cCombiner {
    /// A combiner for pieces of `len_b` bytes.
    pub fn new(len_b: usize) -> Self {
        // x^(8·len_b) by square-and-multiply from x^8. (The pre- and post-inversion of
        // CRC-32C cancel out in a combine, as in zlib's crc32_combine.)
        let mut shift = 1u32 << 31;
        let mut sq = 1u32 << (31 - 8);
        let mut n = len_b;
        while n != 0 {
            if n & 1 != 0 {
                shift = multmodp(sq, shift);
            }
            n >>= 1;
            if n != 0 {
                sq = multmodp(sq, sq);
            }
        }
        Crc32cCombiner { shift }
    }

    /// CRC-32C of `a ++ b` from `crc32c(a)` and `crc32c(b)`, `b` of the combiner's length.
    pub fn combine(&self, crc_a: u32, crc_b: u32) -> u32 {
        multmodp(self.shift, crc_a) ^ crc_b
    }
}

/// CRC-32C of `data`, masked as LevelDB does so that the checksum of bytes that embed a
/// checksum differs from that checksum (smrdb's formats).
pub fn masked_crc32c(data: &[u8]) -> u32 {
    crc32c(data).rotate_right(15).wrapping_add(0xa282_ead8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combine_equals_the_checksum_of_the_whole() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 31 + i / 7) as u8).collect();
        for cut in [0, 1, 7, 512, 4096, 65_536, 123_457, 299_999, 300_000] {
            let (a, b) = data.split_at(cut);
            let whole = crc32c(&data);
            assert_eq!(
                crc32c_combine(crc32c(a), crc32c(b), b.len()),
                whole,
                "cut {cut}"
            );
            assert_eq!(
                crc32c_combine(crc32c(a), crc32c(b), b.len()),
                crc32c::crc32c_combine(crc32c(a), crc32c(b), b.len()),
                "the crate's combine agrees at cut {cut}"
            );
        }
        // Equal pieces through one combiner.
        let piece = 4096;
        let c = Crc32cCombiner::new(piece);
        let mut acc = crc32c(&[]);
        for p in data.chunks(piece) {
            acc = if p.len() == piece {
                c.combine(acc, crc32c(p))
            } else {
                crc32c_combine(acc, crc32c(p), p.len())
            };
        }
        assert_eq!(acc, crc32c(&data));
    }
}
