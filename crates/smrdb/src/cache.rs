//! LRU cache of checked data blocks, charged by encoded block size.
//!
//! Blocks are shared (`Arc<[u8]>`): a GET that hits the cache searches the cached bytes in
//! place, copying nothing but the value it returns. The recency list is intrusive over a slab
//! of slots, so a hit or an insert moves a slot to the front without allocating.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A data block's entry area, checked when it was read (see
/// [`crate::band::block::block_entries`]); GETs search it in place.
pub type Block = Arc<[u8]>;

/// A hasher for the cache's keys (band id, block number): one multiply per word, as the
/// keys are the engine's own numbers (no one can choose them to collide), where the
/// standard library's SipHash costs ~150 instructions per lookup, several per seek.
#[derive(Debug, Default, Clone, Copy)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        // The multiply leaves the high bits best mixed; the table uses the low ones.
        self.0 ^ (self.0 >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type KeyMap = HashMap<(u64, u32), usize, BuildHasherDefault<KeyHasher>>;

/// No slot (end of the recency list).
const NIL: usize = usize::MAX;

#[derive(Debug)]
struct Slot {
    key: (u64, u32),
    block: Option<Block>,
    charge: u64,
    /// Towards the most recently used end.
    prev: usize,
    /// Towards the least recently used end.
    next: usize,
}

#[derive(Debug)]
struct Inner {
    map: KeyMap,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Most recently used slot.
    head: usize,
    /// Least recently used slot.
    tail: usize,
    used: u64,
}

impl Inner {
    fn unlink(&mut self, i: usize) {
        let (p, n) = (self.slots[i].prev, self.slots[i].next);
        if p == NIL {
            self.head = n;
        } else {
            self.slots[p].next = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.slots[n].prev = p;
        }
    }

    fn push_front(&mut self, i: usize) {
        self.slots[i].prev = NIL;
        self.slots[i].next = self.head;
        if self.head != NIL {
            self.slots[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    fn remove(&mut self, i: usize) {
        self.unlink(i);
        let s = &mut self.slots[i];
        s.block = None;
        self.used -= s.charge;
        self.map.remove(&s.key);
        self.free.push(i);
    }
}

/// The block cache, shared by all readers.
#[derive(Debug)]
pub struct BlockCache {
    inner: Mutex<Inner>,
    capacity: u64,
    /// With second-miss admission: a direct-mapped record of recently missed blocks (a
    /// fingerprint per slot, 0 for none); see [`BlockCache::with_second_miss_admission`].
    missed: Option<Box<[AtomicU64]>>,
}

/// Slots of the record of missed blocks per block the cache holds (at 4 KiB blocks).
const MISSED_PER_BLOCK: u64 = 8;

fn key_hash(band: u64, block: u32) -> u64 {
    let mut h = KeyHasher::default();
    h.write_u64(band);
    h.write_u32(block);
    h.finish()
}

impl BlockCache {
    /// A cache of `capacity` bytes (0 disables caching).
    pub fn new(capacity: u64) -> Self {
        BlockCache {
            inner: Mutex::new(Inner {
                map: KeyMap::default(),
                slots: Vec::new(),
                free: Vec::new(),
                head: NIL,
                tail: NIL,
                used: 0,
            }),
            capacity,
            missed: None,
        }
    }

    /// A cache of `capacity` bytes that a get's miss fills only when the same block missed
    /// recently too ([`BlockCache::admit`]): a get over data many times the cache's size
    /// then searches the block where it was read, instead of copying it in and evicting
    /// another that will not be asked for again (a fifth of such a get's CPU time), while
    /// blocks asked for repeatedly still enter on their second miss. The record of misses
    /// holds about 8 times as many blocks as the cache (8 bytes each).
    pub fn with_second_miss_admission(capacity: u64) -> Self {
        let slots = (capacity / 4096 * MISSED_PER_BLOCK).clamp(1024, 1 << 24);
        BlockCache {
            missed: Some(
                (0..slots.next_power_of_two())
                    .map(|_| AtomicU64::new(0))
                    .collect(),
            ),
            ..BlockCache::new(capacity)
        }
    }

    /// Whether a block a get just missed should be put in the cache: always, unless the
    /// cache admits on a second miss; then only if this block's miss is recorded (and the
    /// record is cleared), else its miss is recorded. Races between readers can only admit
    /// a block early or late.
    pub fn admit(&self, band: u64, block: u32) -> bool {
        let Some(missed) = &self.missed else {
            return self.capacity > 0;
        };
        let h = key_hash(band, block);
        // Fingerprint: the hash with its low bit set, so that no block's is 0 (empty).
        let fp = h | 1;
        let Some(slot) = missed.get((h >> 7) as usize & (missed.len() - 1)) else {
            return true;
        };
        if slot.load(Ordering::Relaxed) == fp {
            slot.store(0, Ordering::Relaxed);
            true
        } else {
            slot.store(fp, Ordering::Relaxed);
            false
        }
    }

    /// Looks a block up by band id and block number.
    pub fn get(&self, band: u64, block: u32) -> Option<Block> {
        let mut g = self.inner.lock();
        let i = *g.map.get(&(band, block))?;
        if g.head != i {
            g.unlink(i);
            g.push_front(i);
        }
        g.slots[i].block.clone()
    }

    /// Inserts a block, evicting the least recently used ones beyond capacity.
    pub fn insert(&self, band: u64, block: u32, b: Block, charge: u64) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.inner.lock();
        let g = &mut *g;
        if let Some(&i) = g.map.get(&(band, block)) {
            g.remove(i);
        }
        let slot = Slot {
            key: (band, block),
            block: Some(b),
            charge,
            prev: NIL,
            next: NIL,
        };
        let i = match g.free.pop() {
            Some(i) => {
                g.slots[i] = slot;
                i
            }
            None => {
                g.slots.push(slot);
                g.slots.len() - 1
            }
        };
        g.map.insert((band, block), i);
        g.push_front(i);
        g.used += charge;
        while g.used > self.capacity && g.tail != NIL {
            let t = g.tail;
            g.remove(t);
        }
    }

    /// Bytes charged now.
    pub fn used(&self) -> u64 {
        self.inner.lock().used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> Block {
        Arc::from(&b"x"[..])
    }

    #[test]
    fn second_miss_admission_admits_blocks_that_miss_twice() {
        let plain = BlockCache::new(1 << 20);
        assert!(plain.admit(1, 0) && plain.admit(1, 0));
        assert!(!BlockCache::new(0).admit(1, 0));
        let c = BlockCache::with_second_miss_admission(1 << 20);
        assert!(!c.admit(1, 0), "first miss is only recorded");
        assert!(!c.admit(1, 1) && !c.admit(2, 0));
        assert!(c.admit(1, 0), "second miss admits");
        assert!(!c.admit(1, 0), "the record was cleared");
        // A stream of distinct blocks far larger than the record admits (almost) none.
        let admitted = (0..100_000u32).filter(|&i| c.admit(7, i)).count();
        assert!(admitted < 100, "{admitted}");
        // Blocks read over and over are admitted.
        let hot = (0..20u32)
            .flat_map(|_| 0..100u32)
            .filter(|&i| c.admit(9, i))
            .count();
        assert!(hot >= 900, "{hot}");
    }

    #[test]
    fn evicts_least_recently_used() {
        let c = BlockCache::new(100);
        c.insert(1, 0, block(), 60);
        c.insert(1, 1, block(), 30);
        assert!(c.get(1, 0).is_some());
        c.insert(1, 2, block(), 30);
        assert!(c.get(1, 1).is_none());
        assert!(c.get(1, 0).is_some() && c.get(1, 2).is_some());
        assert!(c.used() <= 100);
    }

    #[test]
    fn reinsert_replaces_and_oversized_blocks_do_not_stay() {
        let c = BlockCache::new(100);
        c.insert(1, 0, block(), 40);
        c.insert(1, 0, block(), 50);
        assert_eq!(c.used(), 50);
        c.insert(2, 0, block(), 500);
        assert_eq!(c.used(), 0);
        assert!(c.get(1, 0).is_none() && c.get(2, 0).is_none());
        for i in 0..1000u32 {
            c.insert(3, i, block(), 10);
            assert!(c.get(3, i).is_some());
            assert!(c.used() <= 100);
        }
        assert!(c.get(3, 999).is_some() && c.get(3, 990).is_some() && c.get(3, 989).is_none());
    }
}
