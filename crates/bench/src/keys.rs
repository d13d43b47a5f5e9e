//! Keys and values as db_bench makes them: keys are the key number in zero-padded decimal
//! (`%016d` for the default 16-byte key), values are slices of a pseudo-random buffer.

use rand::{Rng, SeedableRng};

/// Two-digit decimal strings `00` to `99`, back to back.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes key number `k` into `buf` as zero-padded decimal, `key_size` bytes wide (wider when
/// the number has more digits than `key_size`, as `snprintf` would). Two digits per division,
/// no per-byte push: this runs once per operation of every benchmark.
#[inline]
pub fn format_key(k: u64, key_size: usize, buf: &mut Vec<u8>) {
    let mut digits = [b'0'; 20];
    let mut i = digits.len();
    let mut v = k;
    while v >= 100 {
        let r = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&PAIRS[r..r + 2]);
    }
    if v >= 10 {
        let r = v as usize * 2;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&PAIRS[r..r + 2]);
    } else {
        i -= 1;
        digits[i] = b'0' + v as u8;
    }
    let n = digits.len() - i;
    buf.clear();
    buf.resize(key_size.saturating_sub(n), b'0');
    buf.extend_from_slice(&digits[i..]);
}

/// The key for number `k` as a new vector.
pub fn key(k: u64, key_size: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(key_size.max(20));
    format_key(k, key_size, &mut v);
    v
}

/// Pseudo-random value bytes, handed out as slices of a 1 MiB buffer at a rolling offset (what
/// db_bench's `RandomGenerator` does), so that making a value costs nothing measurable.
#[derive(Debug, Clone)]
pub struct ValueGen {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGen {
    /// A generator seeded with `seed`, able to produce values up to `max_len` bytes.
    pub fn new(seed: u64, max_len: usize) -> Self {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5eed_7a1e);
        let len = (1usize << 20).max(max_len * 2);
        let mut data = vec![0u8; len];
        rng.fill(&mut data[..]);
        ValueGen { data, pos: 0 }
    }

    /// The next `len`-byte value.
    pub fn next(&mut self, len: usize) -> &[u8] {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        let s = self.pos;
        // Step by an odd amount so that consecutive values differ in alignment too.
        self.pos += len.max(1) | 1;
        &self.data[s..s + len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_zero_padded_decimal_like_db_bench() {
        assert_eq!(key(0, 16), b"0000000000000000".to_vec());
        assert_eq!(key(42, 16), b"0000000000000042".to_vec());
        assert_eq!(key(1234567, 10), b"0001234567".to_vec());
        assert_eq!(key(123456, 4), b"123456".to_vec());
        assert_eq!(key(u64::MAX, 20), u64::MAX.to_string().into_bytes());
        // Numeric order is key order at a fixed width.
        assert!(key(999, 16) < key(1000, 16));
        for k in [
            0u64,
            7,
            10,
            99,
            100,
            101,
            999_999,
            1_000_000_007,
            12_345_678_901_234_567,
        ] {
            assert_eq!(key(k, 0), k.to_string().into_bytes(), "{k}");
            assert_eq!(key(k, 24), format!("{k:024}").into_bytes(), "{k}");
        }
    }

    #[test]
    fn values_have_the_requested_length_and_vary() {
        let mut g = ValueGen::new(1, 100);
        let a = g.next(100).to_vec();
        let b = g.next(100).to_vec();
        assert_eq!(a.len(), 100);
        assert_ne!(a, b);
        let mut big = ValueGen::new(1, 102_400);
        for _ in 0..100 {
            assert_eq!(big.next(102_400).len(), 102_400);
        }
    }
}
