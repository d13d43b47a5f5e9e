//! The memtable's versions in internal order: a tree, or, beside a point index, a log that is
//! sorted once, when it is first read in order (as RocksDB's vector memtable). With a point
//! index, gets at the latest snapshot never need the order, so a memtable that is only
//! written and read by key until its flush keeps its versions in a vector (one push per
//! write) and is sorted by the flush, off the writing thread: the tree's descent was the
//! largest cost of a write to the RESP server (a fifth of its engine thread under
//! `redis-benchmark -t incr -P 16`). A log of more than [`RESORT_MAX`] versions read in
//! order while it is still written becomes a tree from then on (a smaller one is sorted
//! again when next read in order: the server scans its empty memtable when it starts).

use super::{cmp_lookup, IKey, Lookup, Prefix};
use std::cmp::Ordering as CmpOrdering;
use std::collections::{btree_set, BTreeSet};
use std::ops::Bound;

/// Most versions a log may hold when it is written after being sorted and stay a log (to be
/// sorted again when next read in order); a larger one becomes a tree.
const RESORT_MAX: usize = 1024;

/// Versions per sample of a sorted log's key prefixes (see [`Order::Log`]'s `tops`).
const STRIDE: usize = 32;

/// The versions, in a tree or a log.
#[derive(Debug)]
pub(super) enum Order {
    /// Sorted on every insert.
    Tree(BTreeSet<IKey>),
    /// In insertion order until `sorted`; then in internal order, without duplicates, and
    /// `tops` holds the key prefix of every [`STRIDE`]-th version: a search narrows to one
    /// stretch of versions in that small array (which stays in the processor's cache)
    /// before it touches the 48-byte versions, each probe of which was a cache miss (a
    /// memtable of two million versions is ~100 MB).
    Log {
        items: Vec<IKey>,
        sorted: bool,
        tops: Vec<Prefix>,
    },
}

impl Default for Order {
    fn default() -> Self {
        Order::Tree(BTreeSet::new())
    }
}

impl Order {
    /// An empty log.
    pub(super) fn log() -> Self {
        Order::Log {
            items: Vec::new(),
            sorted: false,
            tops: Vec::new(),
        }
    }

    /// Adds a version (a duplicate of one held, same key and sequence number, is dropped).
    pub(super) fn insert(&mut self, k: IKey) {
        match self {
            Order::Tree(t) => {
                t.insert(k);
            }
            Order::Log {
                items,
                sorted: false,
                ..
            } => items.push(k),
            Order::Log {
                items,
                sorted,
                tops,
            } if items.len() <= RESORT_MAX => {
                items.push(k);
                *sorted = false;
                tops.clear();
            }
            Order::Log {
                items,
                sorted: true,
                ..
            } => {
                // Read in order while still written: keep it sorted from now on. The items
                // are sorted, so the tree is built in one pass.
                let mut t: BTreeSet<IKey> = std::mem::take(items).into_iter().collect();
                t.insert(k);
                *self = Order::Tree(t);
            }
        }
    }

    /// The log's versions, in their current order (`None` for a tree): what the point
    /// index's positions refer to.
    pub(super) fn log_items(&self) -> Option<&[IKey]> {
        match self {
            Order::Log { items, .. } => Some(items),
            Order::Tree(_) => None,
        }
    }

    /// Whether the next [`Order::insert`] turns the log into a tree.
    pub(super) fn becomes_tree_on_insert(&self) -> bool {
        matches!(self, Order::Log { items, sorted: true, .. } if items.len() > RESORT_MAX)
    }

    /// Whether [`Order::sort`] must run before [`Order::range`].
    pub(super) fn needs_sort(&self) -> bool {
        matches!(self, Order::Log { sorted: false, .. })
    }

    /// Puts a log in internal order, dropping duplicates.
    pub(super) fn sort(&mut self) {
        if let Order::Log {
            items,
            sorted,
            tops,
        } = self
        {
            if !*sorted {
                items.sort_unstable_by(cmp_lookup);
                items.dedup_by(|a, b| cmp_lookup(a, b) == CmpOrdering::Equal);
                *tops = items
                    .iter()
                    .step_by(STRIDE)
                    .map(|k| (k.prefix, k.prefix_tail))
                    .collect();
                *sorted = true;
            }
        }
    }

    /// The versions from `lower` on, in internal order. A log must be sorted first
    /// ([`Order::needs_sort`]); an unsorted one yields nothing rather than a wrong order.
    pub(super) fn range<'a>(&'a self, lower: Bound<&dyn Lookup>) -> Range<'a> {
        match self {
            Order::Tree(t) => Range::Tree(t.range::<dyn Lookup, _>((lower, Bound::Unbounded))),
            Order::Log {
                items,
                sorted,
                tops,
            } => {
                debug_assert!(*sorted, "an unsorted log read in order");
                let items: &[IKey] = if *sorted { items } else { &[] };
                let start = match lower {
                    Bound::Unbounded => 0,
                    Bound::Included(p) => search(items, tops, p, |o| o == CmpOrdering::Less),
                    Bound::Excluded(p) => search(items, tops, p, |o| o != CmpOrdering::Greater),
                };
                Range::Log(items[start..].iter())
            }
        }
    }

    /// Versions held (before a log's sort, duplicates included).
    pub(super) fn len(&self) -> usize {
        match self {
            Order::Tree(t) => t.len(),
            Order::Log { items, .. } => items.len(),
        }
    }

    /// Whether no version is held.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The first version of the sorted `items` that is not `before` the probe `p` (by
/// [`cmp_lookup`]: `before(order)` holds for a prefix of `items`), narrowed first by the
/// samples `tops` of every [`STRIDE`]-th version's key prefix: a sample whose prefix is below
/// the probe's is before it, one above it is not, and only the stretch between is searched.
fn search(
    items: &[IKey],
    tops: &[Prefix],
    p: &dyn Lookup,
    before: impl Fn(CmpOrdering) -> bool,
) -> usize {
    let (mut lo, mut hi) = (0, items.len());
    if tops.len() == items.len().div_ceil(STRIDE) && !tops.is_empty() {
        let key = (p.prefix(), p.prefix_tail());
        let below = tops.partition_point(|t| *t < key);
        let not_above = below + tops[below..].partition_point(|t| *t == key);
        if below > 0 {
            lo = (below - 1) * STRIDE + 1;
        }
        hi = hi.min(not_above * STRIDE);
    }
    lo + items[lo..hi].partition_point(|k| before(cmp_lookup(k, p)))
}

/// Versions in internal order from a position ([`Order::range`]).
pub(super) enum Range<'a> {
    Tree(btree_set::Range<'a, IKey>),
    Log(std::slice::Iter<'a, IKey>),
}

impl<'a> Iterator for Range<'a> {
    type Item = &'a IKey;

    fn next(&mut self) -> Option<&'a IKey> {
        match self {
            Range::Tree(r) => r.next(),
            Range::Log(r) => r.next(),
        }
    }
}
