//! A band's block index as it is kept in memory: one fixed-size slot per data block in one
//! array, and every key in one buffer. A seek is a binary search over the slots that compares
//! each block's last key by its first 16 bytes kept inline (as the memtable does), touching the
//! key buffer only to break a tie, instead of chasing one heap allocation per block. A sample of
//! every 32nd slot's prefix, small enough to stay in the processor's cache, narrows the search
//! to one stretch of 32 slots first.

use super::block::IndexEntry;
use crate::band::reader::cmp_ikey;
use std::cmp::Ordering;

/// Slots per sample of `tops`.
const STRIDE: usize = 32;

/// The first 16 bytes of `key` as a big-endian integer, zero-padded: keys compare like their
/// prefixes whenever the prefixes differ.
fn prefix16(key: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = key.len().min(16);
    b[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(b)
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Prefix of the last key.
    prefix: u128,
    last_seq: u64,
    offset: u64,
    len: u32,
    /// The block's first key is `keys[kstart..kmid]` (empty when the band's format does not
    /// record it), its last key `keys[kmid..]` up to the next slot's `kstart`.
    kstart: u32,
    kmid: u32,
}

/// The in-memory index of a band (built from its decoded index block).
#[derive(Debug, Clone, Default)]
pub struct BlockIndex {
    slots: Vec<Slot>,
    /// The prefix of every [`STRIDE`]-th slot.
    tops: Vec<u128>,
    keys: Vec<u8>,
    /// Whether first keys are recorded (band format version 2).
    first_keys: bool,
}

impl BlockIndex {
    /// Builds the index from decoded entries (in block order).
    pub fn new(entries: &[IndexEntry], first_keys: bool) -> Self {
        let total: usize = entries
            .iter()
            .map(|e| e.last_key.len() + e.first_key.len())
            .sum();
        let mut keys = Vec::with_capacity(total);
        let mut slots = Vec::with_capacity(entries.len());
        for e in entries {
            let kstart = keys.len() as u32;
            if first_keys {
                keys.extend_from_slice(&e.first_key);
            }
            let kmid = keys.len() as u32;
            keys.extend_from_slice(&e.last_key);
            slots.push(Slot {
                prefix: prefix16(&e.last_key),
                last_seq: e.last_seq,
                offset: e.offset,
                len: e.len,
                kstart,
                kmid,
            });
        }
        let tops = slots.iter().step_by(STRIDE).map(|s| s.prefix).collect();
        BlockIndex {
            slots,
            tops,
            keys,
            first_keys,
        }
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the band has no block.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn key_end(&self, i: usize) -> usize {
        self.slots
            .get(i + 1)
            .map_or(self.keys.len(), |s| s.kstart as usize)
    }

    /// Byte offset and length of block `i` in the band.
    pub fn extent(&self, i: usize) -> Option<(u64, u32)> {
        self.slots.get(i).map(|s| (s.offset, s.len))
    }

    /// The last user key of block `i`.
    pub fn last_key(&self, i: usize) -> Option<&[u8]> {
        let s = self.slots.get(i)?;
        self.keys.get(s.kmid as usize..self.key_end(i))
    }

    /// The first user key of block `i`, when the band's format records it.
    pub fn first_key(&self, i: usize) -> Option<&[u8]> {
        if !self.first_keys {
            return None;
        }
        let s = self.slots.get(i)?;
        self.keys.get(s.kstart as usize..s.kmid as usize)
    }

    /// The stretch of slots `[lo, hi)` that the samples leave for a probe with prefix `p`:
    /// slots before it have smaller prefixes (their keys are smaller), slots after it larger.
    fn narrow(&self, p: u128) -> (usize, usize) {
        let a = self.tops.partition_point(|&t| t < p);
        let b = self.tops.partition_point(|&t| t <= p);
        let lo = if a == 0 { 0 } else { (a - 1) * STRIDE + 1 };
        let hi = (b * STRIDE).min(self.slots.len());
        (lo.min(hi), hi)
    }

    /// The first block whose last user key is > `key` (`len()` if none).
    pub fn seek_past(&self, key: &[u8]) -> usize {
        self.partition(key, |last, _| last.cmp(key) != Ordering::Greater)
    }

    /// The first block whose last internal key is ≥ `(key, seq)` (`len()` if none).
    pub fn seek(&self, key: &[u8], seq: u64) -> usize {
        self.partition(key, |last, last_seq| {
            cmp_ikey(last, last_seq, key, seq) == Ordering::Less
        })
    }

    /// The first block for which `before` is false, by binary search (`before` must hold
    /// for a prefix of the blocks). Blocks whose 16-byte key prefix differs from `key`'s are
    /// judged by the prefix alone; `before` sees the last key and sequence of the others.
    fn partition(&self, key: &[u8], before: impl Fn(&[u8], u64) -> bool) -> usize {
        let p = prefix16(key);
        let (mut lo, mut hi) = self.narrow(p);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let s = &self.slots[mid];
            let go_right = match s.prefix.cmp(&p) {
                Ordering::Equal => before(
                    self.keys
                        .get(s.kmid as usize..self.key_end(mid))
                        .unwrap_or_default(),
                    s.last_seq,
                ),
                o => o == Ordering::Less,
            };
            if go_right {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(first: &str, last: &str, seq: u64, i: u64) -> IndexEntry {
        IndexEntry {
            first_key: first.as_bytes().to_vec(),
            last_key: last.as_bytes().to_vec(),
            last_seq: seq,
            offset: i * 100,
            len: 100,
        }
    }

    #[test]
    fn seek_agrees_with_a_linear_search() {
        let long = "0123456789abcdef";
        // In internal key order, as a band's blocks are.
        let lasts: Vec<(String, u64)> = vec![
            (format!("{long}x"), 9),
            (format!("{long}y"), 1),
            ("a".into(), 5),
            ("a".into(), 2),
            ("m".into(), 3),
            ("z\0".into(), 1),
        ];
        let entries: Vec<IndexEntry> = lasts
            .iter()
            .enumerate()
            .map(|(i, (k, s))| entry("", k, *s, i as u64))
            .collect();
        for first_keys in [false, true] {
            let idx = BlockIndex::new(&entries, first_keys);
            assert_eq!(idx.len(), 6);
            let probes: Vec<(String, u64)> = [
                ("", u64::MAX),
                ("a", u64::MAX),
                ("a", 3),
                ("a", 1),
                (long, 0),
                ("m", 3),
                ("z", 0),
                ("z\0", 1),
                ("zz", 1),
            ]
            .iter()
            .map(|(k, s)| (k.to_string(), *s))
            .chain([
                (format!("{long}x"), 10),
                (format!("{long}x"), 0),
                (format!("{long}z"), 7),
            ])
            .collect();
            for (k, s) in probes {
                let want = entries.partition_point(|e| {
                    cmp_ikey(&e.last_key, e.last_seq, k.as_bytes(), s) == Ordering::Less
                });
                assert_eq!(idx.seek(k.as_bytes(), s), want, "{k:?} {s}");
                let past = entries.partition_point(|e| e.last_key.as_slice() <= k.as_bytes());
                assert_eq!(idx.seek_past(k.as_bytes()), past, "{k:?}");
            }
            assert_eq!(idx.last_key(0), Some(format!("{long}x").as_bytes()));
            assert_eq!(idx.extent(3), Some((300, 100)));
        }
        // Enough blocks for the samples to matter, with runs of equal prefixes.
        let many: Vec<IndexEntry> = (0..1000u64)
            .map(|i| {
                let k = format!("{long}{:04}", i / 3);
                entry("", &k, 1000 - i, i)
            })
            .collect();
        let idx = BlockIndex::new(&many, false);
        for i in 0..1010u64 {
            for k in [format!("{:04}", i / 3), format!("{long}{:04}", i / 3)] {
                for s in [0, 500, u64::MAX] {
                    let want = many.partition_point(|e| {
                        cmp_ikey(&e.last_key, e.last_seq, k.as_bytes(), s) == Ordering::Less
                    });
                    assert_eq!(idx.seek(k.as_bytes(), s), want, "{k:?} {s}");
                }
                let past = many.partition_point(|e| e.last_key.as_slice() <= k.as_bytes());
                assert_eq!(idx.seek_past(k.as_bytes()), past, "{k:?}");
            }
        }
        let with_first = BlockIndex::new(&[entry("b", "c", 1, 0), entry("d", "e", 1, 1)], true);
        assert_eq!(with_first.first_key(1), Some(&b"d"[..]));
        assert_eq!(with_first.last_key(1), Some(&b"e"[..]));
        assert_eq!(
            BlockIndex::new(&[entry("b", "c", 1, 0)], false).first_key(0),
            None
        );
    }
}
