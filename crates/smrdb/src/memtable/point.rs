//! The point index: the newest version of each key, so that a get at the latest snapshot costs
//! one hash probe. Beside a log it holds each newest version's position in the log (4 bytes
//! per key where a copy of the version took 48: with 100-byte values that copy was a quarter
//! of a memtable's memory); the positions are rebuilt when the log is sorted. Beside a tree,
//! where versions have no stable position, it holds a copy of each newest version.

use super::order::Order;
use super::{IKey, Probe};
use hashbrown::hash_table::Entry as Slot;
use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;

/// Newest version of each key, by position in the log or by copy.
#[derive(Debug)]
pub(super) enum PointIndex {
    /// Positions in the log's items ([`Order::log_items`]).
    Positions(HashTable<u32>),
    /// Copies of the versions (sharing their chunks), beside a tree.
    Copies(HashTable<IKey>),
}

/// Whether `k`'s key is `key`, whose inline prefix is `prefix`: the prefix decides for keys
/// that fit in it, so only a longer key is read out of its chunk.
fn same_key(k: &IKey, prefix: (u128, u64), key: &[u8]) -> bool {
    k.prefix == prefix.0
        && k.prefix_tail == prefix.1
        && k.klen() == key.len()
        && (key.len() <= super::INLINE || k.key() == key)
}

fn item(items: &[IKey], pos: u32) -> &IKey {
    &items[pos as usize]
}

impl PointIndex {
    /// An empty index of positions (for a memtable whose versions start in a log).
    pub(super) fn new() -> Self {
        PointIndex::Positions(HashTable::new())
    }

    /// The newest version of the probe's key, if the memtable holds the key.
    pub(super) fn find<'a>(
        &'a self,
        order: &'a Order,
        hasher: &DefaultHashBuilder,
        p: &Probe<'_>,
    ) -> Option<&'a IKey> {
        let h = hasher.hash_one(p.key);
        match self {
            PointIndex::Positions(t) => {
                let items = order.log_items()?;
                t.find(h, |&i| same_key(item(items, i), p.prefix, p.key))
                    .map(|&i| item(items, i))
            }
            PointIndex::Copies(t) => t.find(h, |e| same_key(e, p.prefix, p.key)),
        }
    }

    /// Records `k`, about to be added to `order`, as its key's newest version if it is. The
    /// index is first turned into copies if `order` is about to become a tree (or the log has
    /// more versions than a position can name).
    pub(super) fn note(&mut self, order: &Order, hasher: &DefaultHashBuilder, k: &IKey) {
        let pos = order
            .log_items()
            .filter(|items| !order.becomes_tree_on_insert() && items.len() < u32::MAX as usize)
            .map(|items| items.len() as u32);
        if pos.is_none() {
            self.make_copies(order, hasher);
        }
        let h = hasher.hash_one(k.key());
        let prefix = (k.prefix, k.prefix_tail);
        match self {
            PointIndex::Positions(t) => {
                let (Some(items), Some(pos)) = (order.log_items(), pos) else {
                    return;
                };
                match t.entry(
                    h,
                    |&i| same_key(item(items, i), prefix, k.key()),
                    |&i| hasher.hash_one(item(items, i).key()),
                ) {
                    Slot::Occupied(mut o) => {
                        if item(items, *o.get()).seq < k.seq {
                            *o.get_mut() = pos;
                        }
                    }
                    Slot::Vacant(v) => {
                        v.insert(pos);
                    }
                }
            }
            PointIndex::Copies(t) => {
                match t.entry(
                    h,
                    |e| same_key(e, prefix, k.key()),
                    |e| hasher.hash_one(e.key()),
                ) {
                    Slot::Occupied(mut o) => {
                        if o.get().seq < k.seq {
                            *o.get_mut() = k.clone();
                        }
                    }
                    Slot::Vacant(v) => {
                        v.insert(k.clone());
                    }
                }
            }
        }
    }

    /// Turns an index of positions into one of copies (before the log becomes a tree).
    fn make_copies(&mut self, order: &Order, hasher: &DefaultHashBuilder) {
        let PointIndex::Positions(t) = self else {
            return;
        };
        let items = order.log_items().unwrap_or(&[]);
        let mut copies = HashTable::with_capacity(t.len());
        for &i in t.iter() {
            let k = item(items, i);
            copies.insert_unique(hasher.hash_one(k.key()), k.clone(), |e: &IKey| {
                hasher.hash_one(e.key())
            });
        }
        *self = PointIndex::Copies(copies);
    }

    /// Points the positions at the log's new places after it was sorted (in internal order
    /// each key's newest version comes first among its versions).
    pub(super) fn rebuild(&mut self, order: &Order, hasher: &DefaultHashBuilder) {
        let (PointIndex::Positions(t), Some(items)) = (&mut *self, order.log_items()) else {
            return;
        };
        t.clear();
        let mut prev: Option<&IKey> = None;
        for (i, k) in items.iter().enumerate() {
            if prev.is_some_and(|p| p.key() == k.key()) {
                continue;
            }
            prev = Some(k);
            t.insert_unique(hasher.hash_one(k.key()), i as u32, |&j| {
                hasher.hash_one(item(items, j).key())
            });
        }
    }

    /// Bytes of memory the index's table takes.
    pub(super) fn allocation_size(&self) -> usize {
        match self {
            PointIndex::Positions(t) => t.allocation_size(),
            PointIndex::Copies(t) => t.allocation_size(),
        }
    }
}
