//! SCAN cursors: the position each live cursor resumes from, in bounded memory.
//!
//! A cursor number names a [`Position`]: the engine key the previous call examined last.
//! Keys of up to [`PREFIX_MAX`] bytes are kept whole (resuming is exact); a longer key (a
//! Redis key may be 64 KiB) is kept as its first [`PREFIX_MAX`] bytes, its length and a keyed
//! 64-bit hash (SipHash with a random key per server, so that a client cannot make keys
//! collide). Resuming then walks the keys that share the prefix until it meets the one with
//! that length and hash and goes on after it ([`Resume::Find`]); when that key is gone
//! (deleted meanwhile) it goes on from the prefix itself, so keys that share the prefix may
//! be returned twice — which Redis's SCAN allows — but a key present throughout the iteration
//! is never missed. A cursor therefore holds at most about 300 bytes.
//!
//! At most [`CAPACITY`] cursors are kept. Past it the oldest cursor that was already resumed
//! is forgotten first (a client resumes a cursor once and goes on with the next), then the
//! oldest never resumed; a forgotten cursor is `ERR invalid cursor` (Redis's cursors are
//! stateless and never expire: this is where the two differ).

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;

/// Longest engine key a cursor keeps whole; of longer keys it keeps this many bytes.
pub const PREFIX_MAX: usize = 256;

/// Most cursors kept.
pub const CAPACITY: usize = 1 << 16;

/// Where a cursor resumes: after the engine key it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// The key (at most [`PREFIX_MAX`] bytes), or its first [`PREFIX_MAX`] bytes.
    prefix: Box<[u8]>,
    /// For a longer key: its length and keyed hash.
    tail: Option<(usize, u64)>,
}

/// How to find where an iteration resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume<'a> {
    /// At this engine key (inclusive).
    From(Vec<u8>),
    /// After the key among those starting with `prefix` that has this length and hash
    /// ([`Cursors::is_key`]); at `prefix` when none has.
    Find {
        /// The first [`PREFIX_MAX`] bytes of the key.
        prefix: &'a [u8],
        /// The key's length.
        len: usize,
        /// Its keyed hash.
        hash: u64,
    },
}

impl Position {
    /// How to resume after this position.
    pub fn resume(&self) -> Resume<'_> {
        match self.tail {
            None => {
                let mut from = Vec::with_capacity(self.prefix.len() + 1);
                from.extend_from_slice(&self.prefix);
                from.push(0);
                Resume::From(from)
            }
            Some((len, hash)) => Resume::Find {
                prefix: &self.prefix,
                len,
                hash,
            },
        }
    }

    /// Bytes this position holds on the heap.
    fn heap_bytes(&self) -> usize {
        self.prefix.len()
    }
}

#[derive(Debug)]
struct Entry {
    pos: Position,
    /// Resumed at least once.
    used: bool,
}

/// The live cursors of a server.
#[derive(Debug)]
pub struct Cursors {
    next: u64,
    map: HashMap<u64, Entry>,
    /// Cursors in creation order (some since resumed: skipped when met).
    fresh: VecDeque<u64>,
    /// Cursors in the order they were first resumed.
    used: VecDeque<u64>,
    hasher: RandomState,
    capacity: usize,
}

impl Default for Cursors {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl Cursors {
    /// A table keeping at most `capacity` cursors (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Cursors {
            next: 0,
            map: HashMap::new(),
            fresh: VecDeque::new(),
            used: VecDeque::new(),
            hasher: RandomState::new(),
            capacity: capacity.max(1),
        }
    }

    /// The keyed hash positions use.
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Whether engine key `key` is the one a [`Resume::Find`] looks for.
    pub fn is_key(&self, key: &[u8], len: usize, hash: u64) -> bool {
        key.len() == len && self.hash(key) == hash
    }

    /// A new cursor that resumes after engine key `after`.
    pub fn insert(&mut self, after: &[u8]) -> u64 {
        let pos = if after.len() <= PREFIX_MAX {
            Position {
                prefix: after.into(),
                tail: None,
            }
        } else {
            Position {
                prefix: after[..PREFIX_MAX].into(),
                tail: Some((after.len(), self.hash(after))),
            }
        };
        self.next += 1;
        let id = self.next;
        self.map.insert(id, Entry { pos, used: false });
        self.fresh.push_back(id);
        while self.map.len() > self.capacity {
            self.evict_one();
        }
        if self.fresh.len() > 2 * self.capacity + 16 {
            let map = &self.map;
            self.fresh.retain(|id| map.get(id).is_some_and(|e| !e.used));
        }
        id
    }

    /// Forgets the oldest resumed cursor, else the oldest one.
    fn evict_one(&mut self) {
        while let Some(id) = self.used.pop_front() {
            if self.map.remove(&id).is_some() {
                return;
            }
        }
        while let Some(id) = self.fresh.pop_front() {
            if self.map.get(&id).is_some_and(|e| !e.used) {
                self.map.remove(&id);
                return;
            }
        }
    }

    /// Where cursor `id` resumes (`None`: unknown or forgotten). Marks it resumed.
    pub fn get(&mut self, id: u64) -> Option<Position> {
        let e = self.map.get_mut(&id)?;
        if !e.used {
            e.used = true;
            self.used.push_back(id);
        }
        Some(e.pos.clone())
    }

    /// Cursors kept.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// About how many bytes the table holds (for `INFO`).
    pub fn memory(&self) -> usize {
        let per = std::mem::size_of::<(u64, Entry)>() + 8 + 2 * std::mem::size_of::<u64>();
        self.map.values().map(|e| e.pos.heap_bytes()).sum::<usize>() + self.map.len() * per
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn short_keys_resume_exactly_and_long_ones_by_prefix_and_hash() {
        let mut c = Cursors::default();
        let id = c.insert(b"kshort");
        assert_eq!(
            c.get(id).unwrap().resume(),
            Resume::From(b"kshort\0".to_vec())
        );
        let long: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
        let id = c.insert(&long);
        let pos = c.get(id).unwrap();
        assert!(pos.heap_bytes() <= PREFIX_MAX);
        let Resume::Find { prefix, len, hash } = pos.resume() else {
            panic!("a long key is kept as a prefix and a hash")
        };
        assert_eq!(prefix, &long[..PREFIX_MAX]);
        assert!(c.is_key(&long, len, hash));
        let mut other = long.clone();
        other[60_000] ^= 1;
        assert!(!c.is_key(&other, len, hash));
        assert!(!c.is_key(&long[..long.len() - 1], len, hash));
        assert!(c.get(999).is_none());
    }

    #[test]
    fn resumed_cursors_are_forgotten_before_fresh_ones() {
        let mut c = Cursors::with_capacity(4);
        let a = c.insert(b"a");
        let b = c.insert(b"b");
        let d = c.insert(b"d");
        let e = c.insert(b"e");
        assert!(c.get(b).is_some());
        // Full: the next one pushes out the resumed `b`, not the older `a`.
        let f = c.insert(b"f");
        assert!(c.get(b).is_none());
        for id in [a, d, e, f] {
            assert!(c.map.contains_key(&id), "{id}");
        }
        // With none resumed, the oldest goes.
        let g = c.insert(b"g");
        assert!(!c.map.contains_key(&a) && c.map.contains_key(&g));
        assert_eq!(c.len(), 4);
        // Many resumed cursors keep the queues bounded.
        for i in 0..10_000u32 {
            let id = c.insert(&i.to_be_bytes());
            c.get(id);
        }
        assert_eq!(c.len(), 4);
        assert!(
            c.fresh.len() <= 2 * 4 + 16 + 1 && c.used.len() <= 4,
            "{} {}",
            c.fresh.len(),
            c.used.len()
        );
    }

    #[test]
    fn a_full_table_of_long_keys_stays_small() {
        let mut c = Cursors::with_capacity(10_000);
        let key = vec![b'x'; 64 << 10];
        for _ in 0..10_000 {
            c.insert(&key);
        }
        assert!(c.memory() < 5 << 20, "{} bytes", c.memory());
    }
}
