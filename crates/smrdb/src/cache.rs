//! LRU cache of decoded data blocks, charged by encoded block size.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A data block's entry area, checked when it was read (see
/// [`crate::band::block::block_entries`]); GETs search it in place.
pub type Block = Arc<Vec<u8>>;

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<(u64, u32), (Block, u64, u64)>,
    lru: BTreeMap<u64, (u64, u32)>,
    tick: u64,
    used: u64,
}

/// The block cache, shared by all readers.
#[derive(Debug)]
pub struct BlockCache {
    inner: Mutex<Inner>,
    capacity: u64,
}

impl BlockCache {
    /// A cache of `capacity` bytes (0 disables caching).
    pub fn new(capacity: u64) -> Self {
        BlockCache {
            inner: Mutex::new(Inner::default()),
            capacity,
        }
    }

    /// Looks a block up by band id and block number.
    pub fn get(&self, band: u64, block: u32) -> Option<Block> {
        let mut g = self.inner.lock();
        let g = &mut *g;
        g.tick += 1;
        let t = g.tick;
        let (b, _, old) = g.map.get_mut(&(band, block))?;
        let b = b.clone();
        g.lru.remove(old);
        *old = t;
        g.lru.insert(t, (band, block));
        Some(b)
    }

    /// Inserts a block, evicting the least recently used ones beyond capacity.
    pub fn insert(&self, band: u64, block: u32, b: Block, charge: u64) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.inner.lock();
        let g = &mut *g;
        g.tick += 1;
        let t = g.tick;
        if let Some((_, c, old)) = g.map.insert((band, block), (b, charge, t)) {
            g.lru.remove(&old);
            g.used -= c;
        }
        g.lru.insert(t, (band, block));
        g.used += charge;
        while g.used > self.capacity {
            let Some((_, k)) = g.lru.pop_first() else {
                break;
            };
            if let Some((_, c, _)) = g.map.remove(&k) {
                g.used -= c;
            }
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

    #[test]
    fn evicts_least_recently_used() {
        let c = BlockCache::new(100);
        c.insert(1, 0, Arc::new(vec![]), 60);
        c.insert(1, 1, Arc::new(vec![]), 30);
        assert!(c.get(1, 0).is_some());
        c.insert(1, 2, Arc::new(vec![]), 30);
        assert!(c.get(1, 1).is_none());
        assert!(c.get(1, 0).is_some() && c.get(1, 2).is_some());
        assert!(c.used() <= 100);
    }
}
