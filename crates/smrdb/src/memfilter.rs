//! The memtable's key filter: a Bloom filter of every user key a memtable holds, so that a
//! point get of a key the memtable lacks skips the descent of its tree (as RocksDB's
//! `memtable_whole_key_filtering`). Once most keys live in bands, most gets miss the memtable,
//! and the descent (a few cache misses per level of a tree of millions of versions) was the
//! largest single cost of a get served from a band.
//!
//! Blocked: all of a key's bits fall in one 64-byte line, so a probe costs one cache miss. Set
//! with atomic ORs before the version enters the tree (under the tree's write lock), so a
//! reader that can see a version also sees its bits; never cleared (a memtable only grows).

use crate::band::bloom::hash;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bits probed per key: a false-positive rate of about 2% at 8 bits per key.
const PROBES: u32 = 6;
/// 64-bit words per line (one 64-byte cache line).
const LINE_WORDS: usize = 8;

/// A concurrent, insert-only, cache-blocked Bloom filter of user keys.
#[derive(Debug)]
pub struct KeyFilter {
    words: Box<[AtomicU64]>,
    lines: u64,
}

impl KeyFilter {
    /// A filter of about `bits` bits (rounded up to a power of two, at least one line).
    pub fn new(bits: u64) -> Self {
        let lines = (bits.max(512).next_power_of_two() / 512).max(1);
        KeyFilter {
            words: (0..lines as usize * LINE_WORDS)
                .map(|_| AtomicU64::new(0))
                .collect(),
            lines,
        }
    }

    /// A filter for a memtable of up to `memtable_bytes` bytes of versions (each charged at
    /// least 32 bytes of overhead): a bit per 16 bytes, so 8 or more bits per key for versions
    /// of 128 bytes or more; between 4 KiB and 8 MiB.
    pub fn for_memtable(memtable_bytes: u64) -> Self {
        KeyFilter::new((memtable_bytes / 16).clamp(1 << 15, 1 << 26))
    }

    /// The line and the six bit positions within it of a key.
    fn probes(&self, key: &[u8]) -> (usize, u64) {
        let h = hash(key);
        let line = ((u64::from(h) * self.lines) >> 32) as usize;
        // The bit positions come from a 64-bit mix of the hash (splitmix64's finaliser), nine
        // bits each.
        let mut g = u64::from(h).wrapping_add(0x9e37_79b9_7f4a_7c15);
        g = (g ^ (g >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        g = (g ^ (g >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        g ^= g >> 31;
        (line * LINE_WORDS, g)
    }

    /// Records `key`.
    pub fn insert(&self, key: &[u8]) {
        let (base, g) = self.probes(key);
        for i in 0..PROBES {
            let bit = (g >> (9 * i)) & 511;
            if let Some(w) = self.words.get(base + (bit / 64) as usize) {
                w.fetch_or(1 << (bit % 64), Ordering::Relaxed);
            }
        }
    }

    /// Whether `key` may have been recorded (false: it certainly was not).
    pub fn may_contain(&self, key: &[u8]) -> bool {
        let (base, g) = self.probes(key);
        (0..PROBES).all(|i| {
            let bit = (g >> (9 * i)) & 511;
            self.words
                .get(base + (bit / 64) as usize)
                .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (bit % 64)) != 0)
        })
    }

    /// Bytes of memory the filter takes.
    pub fn size(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_inserted_key_is_found() {
        let f = KeyFilter::new(1 << 16);
        for i in 0..5000u32 {
            f.insert(format!("key{i:08}").as_bytes());
        }
        for i in 0..5000u32 {
            assert!(f.may_contain(format!("key{i:08}").as_bytes()), "{i}");
        }
        f.insert(b"");
        assert!(f.may_contain(b""));
    }

    #[test]
    fn false_positives_stay_near_the_design_rate() {
        // 8 bits per key: a blocked filter with 6 probes gives about 2-3%.
        let f = KeyFilter::new(1 << 20);
        let n = (1u32 << 20) / 8;
        for i in 0..n {
            f.insert(format!("user{i:010}").as_bytes());
        }
        let fp = (0..100_000u32)
            .filter(|i| f.may_contain(format!("miss{i:010}").as_bytes()))
            .count();
        assert!(fp < 5_000, "{fp} false positives in 100,000");
        assert!(fp > 0, "a filter this full must give some false positives");
    }

    #[test]
    fn sizes_are_powers_of_two_within_bounds() {
        assert_eq!(KeyFilter::new(0).size(), 64);
        assert_eq!(KeyFilter::new(1000).size(), 128);
        assert_eq!(KeyFilter::for_memtable(0).size(), 4096);
        assert_eq!(KeyFilter::for_memtable(256 << 20).size(), 2 << 20);
        assert_eq!(KeyFilter::for_memtable(u64::MAX).size(), 8 << 20);
    }
}
