//! The in-memory table: every version of every key written since the last flush, sorted by
//! key ascending and sequence number descending (the internal key order shared by bands).

use parking_lot::RwLock;
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

/// One version of a key: a value or a tombstone (`value == None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// User key.
    pub key: Vec<u8>,
    /// Sequence number of the write.
    pub seq: u64,
    /// Value, or `None` for a deletion.
    pub value: Option<Vec<u8>>,
}

impl Entry {
    /// Bytes this entry occupies in a data block, roughly (key, value, header).
    pub fn encoded_len(&self) -> usize {
        self.key.len() + self.value.as_ref().map_or(0, |v| v.len()) + 14
    }
}

/// Internal key: user key ascending, then sequence number descending.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct IKey {
    key: Vec<u8>,
    seq: Reverse<u64>,
}

/// A sorted, concurrently readable memtable.
#[derive(Debug, Default)]
pub struct Memtable {
    map: RwLock<BTreeMap<IKey, Option<Vec<u8>>>>,
    bytes: AtomicU64,
    min_seq: AtomicU64,
    max_seq: AtomicU64,
}

impl Memtable {
    /// An empty memtable.
    pub fn new() -> Self {
        Memtable {
            map: RwLock::new(BTreeMap::new()),
            bytes: AtomicU64::new(0),
            min_seq: AtomicU64::new(u64::MAX),
            max_seq: AtomicU64::new(0),
        }
    }

    /// Adds one version.
    pub fn insert(&self, key: &[u8], seq: u64, value: Option<&[u8]>) {
        let len = key.len() + value.map_or(0, |v| v.len()) + 32;
        self.map.write().insert(
            IKey {
                key: key.to_vec(),
                seq: Reverse(seq),
            },
            value.map(|v| v.to_vec()),
        );
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
        self.min_seq.fetch_min(seq, Ordering::Relaxed);
        self.max_seq.fetch_max(seq, Ordering::Relaxed);
    }

    /// The newest version of `key` with a sequence number ≤ `snap`: `Some((seq, value))`,
    /// where a `None` value is a tombstone.
    pub fn get(&self, key: &[u8], snap: u64) -> Option<(u64, Option<Vec<u8>>)> {
        let m = self.map.read();
        let from = IKey {
            key: key.to_vec(),
            seq: Reverse(snap),
        };
        let (k, v) = m.range(from..).next()?;
        (k.key == key).then(|| (k.seq.0, v.clone()))
    }

    /// Up to `limit` entries in internal order starting after (`after`) or at (`start`) a
    /// position; used by iterators that fetch in batches without holding the lock.
    pub fn batch(&self, from: BatchFrom<'_>, limit: usize) -> Vec<Entry> {
        let m = self.map.read();
        let lower = match from {
            BatchFrom::Start(k) => Bound::Included(IKey {
                key: k.to_vec(),
                seq: Reverse(u64::MAX),
            }),
            BatchFrom::After(k, seq) => Bound::Excluded(IKey {
                key: k.to_vec(),
                seq: Reverse(seq),
            }),
        };
        m.range((lower, Bound::Unbounded))
            .take(limit)
            .map(|(k, v)| Entry {
                key: k.key.clone(),
                seq: k.seq.0,
                value: v.clone(),
            })
            .collect()
    }

    /// Every entry in internal order (flush).
    pub fn entries(&self) -> Vec<Entry> {
        self.batch(BatchFrom::Start(&[]), usize::MAX)
    }

    /// Approximate bytes held.
    pub fn approximate_bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Number of versions held.
    pub fn len(&self) -> usize {
        self.map.read().len()
    }

    /// Whether nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.map.read().is_empty()
    }

    /// Largest sequence number inserted (0 when empty).
    pub fn max_seq(&self) -> u64 {
        self.max_seq.load(Ordering::Relaxed)
    }
}

/// Where a [`Memtable::batch`] starts.
#[derive(Debug, Clone, Copy)]
pub enum BatchFrom<'a> {
    /// At the first version of this user key.
    Start(&'a [u8]),
    /// Just after this internal key.
    After(&'a [u8], u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_visible_version_wins() {
        let m = Memtable::new();
        m.insert(b"a", 1, Some(b"x"));
        m.insert(b"a", 3, None);
        m.insert(b"a", 5, Some(b"z"));
        m.insert(b"b", 2, Some(b"y"));
        assert_eq!(m.get(b"a", 10), Some((5, Some(b"z".to_vec()))));
        assert_eq!(m.get(b"a", 4), Some((3, None)));
        assert_eq!(m.get(b"a", 2), Some((1, Some(b"x".to_vec()))));
        assert_eq!(m.get(b"a", 0), None);
        assert_eq!(m.get(b"c", 10), None);
        let all = m.entries();
        assert_eq!(all.len(), 4);
        assert_eq!((all[0].seq, all[3].key.as_slice()), (5, &b"b"[..]));
        let rest = m.batch(BatchFrom::After(b"a", 3), 10);
        assert_eq!(rest[0].seq, 1);
    }
}
