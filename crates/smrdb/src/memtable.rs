//! The in-memory table: every version of every key written since the last flush, sorted by
//! key ascending and sequence number descending (the internal key order shared by bands).

use parking_lot::RwLock;
use std::collections::BTreeSet;
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

/// One version in the memtable: key and value share one allocation (`data = key ++ value`),
/// so an insert costs one allocation. Ordered by user key ascending, then sequence number
/// descending (the internal key order).
#[derive(Debug, Clone, PartialEq, Eq)]
struct IKey {
    data: Box<[u8]>,
    klen: u32,
    seq: u64,
    /// Whether `data[klen..]` is a value (false: a tombstone).
    put: bool,
}

impl IKey {
    fn key(&self) -> &[u8] {
        &self.data[..self.klen as usize]
    }
    fn value(&self) -> Option<&[u8]> {
        self.put.then(|| &self.data[self.klen as usize..])
    }
    fn probe(key: &[u8], seq: u64) -> Self {
        IKey {
            data: key.into(),
            klen: key.len() as u32,
            seq,
            put: false,
        }
    }
    fn entry(&self) -> Entry {
        Entry {
            key: self.key().to_vec(),
            seq: self.seq,
            value: self.value().map(|v| v.to_vec()),
        }
    }
}

impl Ord for IKey {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key().cmp(o.key()).then(o.seq.cmp(&self.seq))
    }
}

impl PartialOrd for IKey {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// A sorted, concurrently readable memtable.
#[derive(Debug, Default)]
pub struct Memtable {
    map: RwLock<BTreeSet<IKey>>,
    bytes: AtomicU64,
    min_seq: AtomicU64,
    max_seq: AtomicU64,
}

impl Memtable {
    /// An empty memtable.
    pub fn new() -> Self {
        Memtable {
            map: RwLock::new(BTreeSet::new()),
            bytes: AtomicU64::new(0),
            min_seq: AtomicU64::new(u64::MAX),
            max_seq: AtomicU64::new(0),
        }
    }

    fn make(key: &[u8], seq: u64, value: Option<&[u8]>) -> IKey {
        let v = value.unwrap_or(&[]);
        let mut data = Vec::with_capacity(key.len() + v.len());
        data.extend_from_slice(key);
        data.extend_from_slice(v);
        IKey {
            data: data.into_boxed_slice(),
            klen: key.len() as u32,
            seq,
            put: value.is_some(),
        }
    }

    /// Adds one version.
    pub fn insert(&self, key: &[u8], seq: u64, value: Option<&[u8]>) {
        let len = key.len() + value.map_or(0, |v| v.len()) + 32;
        let k = Self::make(key, seq, value);
        self.map.write().insert(k);
        self.account(len as u64, seq, seq);
    }

    /// Adds the versions `(key, value)` with consecutive sequence numbers from `seq0`, under
    /// one lock acquisition (a write batch).
    pub fn insert_many<'a>(
        &self,
        seq0: u64,
        ops: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>,
    ) {
        let mut m = self.map.write();
        let mut len = 0u64;
        let mut seq = seq0;
        for (k, v) in ops {
            len += (k.len() + v.map_or(0, |v| v.len()) + 32) as u64;
            m.insert(Self::make(k, seq, v));
            seq += 1;
        }
        drop(m);
        if seq > seq0 {
            self.account(len, seq0, seq - 1);
        }
    }

    fn account(&self, len: u64, lo: u64, hi: u64) {
        self.bytes.fetch_add(len, Ordering::Relaxed);
        self.min_seq.fetch_min(lo, Ordering::Relaxed);
        self.max_seq.fetch_max(hi, Ordering::Relaxed);
    }

    /// The newest version of `key` with a sequence number ≤ `snap`: `Some((seq, value))`,
    /// where a `None` value is a tombstone.
    pub fn get(&self, key: &[u8], snap: u64) -> Option<(u64, Option<Vec<u8>>)> {
        let from = IKey::probe(key, snap);
        let m = self.map.read();
        let k = m.range(from..).next()?;
        (k.key() == key).then(|| (k.seq, k.value().map(|v| v.to_vec())))
    }

    /// Up to `limit` entries in internal order starting after (`after`) or at (`start`) a
    /// position; used by iterators that fetch in batches without holding the lock.
    pub fn batch(&self, from: BatchFrom<'_>, limit: usize) -> Vec<Entry> {
        let lower = match from {
            BatchFrom::Start(k) => Bound::Included(IKey::probe(k, u64::MAX)),
            BatchFrom::After(k, seq) => Bound::Excluded(IKey::probe(k, seq)),
        };
        let m = self.map.read();
        m.range((lower, Bound::Unbounded))
            .take(limit)
            .map(IKey::entry)
            .collect()
    }

    /// Every entry in internal order (flush).
    pub fn entries(&self) -> Vec<Entry> {
        self.map.read().iter().map(IKey::entry).collect()
    }

    /// Calls `f` on every entry in internal order, without copying (flush). The memtable
    /// must not be written meanwhile (it is immutable by then); readers may proceed.
    pub fn for_each(&self, mut f: impl FnMut(&[u8], u64, Option<&[u8]>) -> bool) {
        let m = self.map.read();
        for k in m.iter() {
            if !f(k.key(), k.seq, k.value()) {
                break;
            }
        }
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
