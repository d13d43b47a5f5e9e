//! Merging of sorted sources of owned entries in internal key order: what compactions read
//! (scans use the borrowing cursors of [`crate::cursor`]).

use crate::band::BandIter;
use crate::error::Result;
use crate::memtable::{Entry, EntryRef};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A sorted stream of entries.
pub trait Source: Send {
    /// The next entry in internal key order.
    fn next_entry(&mut self) -> Result<Option<Entry>>;
}

impl Source for BandIter {
    fn next_entry(&mut self) -> Result<Option<Entry>> {
        BandIter::next_entry(self)
    }
}

/// A sorted stream of borrowed entries (each valid until the next call): what band writers
/// consume, so that a flush writes straight from the memtable without copying it.
pub trait RefSource {
    /// The next entry in internal key order.
    fn next_ref(&mut self) -> Result<Option<EntryRef<'_>>>;
}

/// A [`RefSource`] over an iterator of borrowed entries (a memtable's).
pub struct IterRefs<'i, 'a>(pub &'i mut dyn Iterator<Item = EntryRef<'a>>);

impl RefSource for IterRefs<'_, '_> {
    fn next_ref(&mut self) -> Result<Option<EntryRef<'_>>> {
        Ok(self.0.next())
    }
}

/// A [`RefSource`] lending the entries of a [`Merge`] one at a time.
pub struct MergeRefs<'m> {
    merge: &'m mut Merge,
    cur: Option<Entry>,
}

impl<'m> MergeRefs<'m> {
    /// Lends the entries of `merge`.
    pub fn new(merge: &'m mut Merge) -> Self {
        MergeRefs { merge, cur: None }
    }
}

impl RefSource for MergeRefs<'_> {
    fn next_ref(&mut self) -> Result<Option<EntryRef<'_>>> {
        self.cur = self.merge.next_entry()?;
        Ok(self.cur.as_ref().map(Entry::as_ref))
    }
}

/// Entries from a vector already in internal order.
pub struct VecSource(pub std::vec::IntoIter<Entry>);

impl Source for VecSource {
    fn next_entry(&mut self) -> Result<Option<Entry>> {
        Ok(self.0.next())
    }
}

struct Head {
    e: Entry,
    src: usize,
}

impl PartialEq for Head {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Head {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap is a max-heap: the smallest internal key must compare greatest.
        crate::band::reader::cmp_ikey(&o.e.key, o.e.seq, &self.e.key, self.e.seq)
            .then(o.src.cmp(&self.src))
    }
}

/// K-way merge of sources; duplicates (same key and sequence) are yielded once.
pub struct Merge {
    sources: Vec<Box<dyn Source>>,
    heap: BinaryHeap<Head>,
    last: Option<(Vec<u8>, u64)>,
}

impl Merge {
    /// Merges `sources`.
    pub fn new(mut sources: Vec<Box<dyn Source>>) -> Result<Self> {
        let mut heap = BinaryHeap::new();
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(e) = s.next_entry()? {
                heap.push(Head { e, src: i });
            }
        }
        Ok(Merge {
            sources,
            heap,
            last: None,
        })
    }

    /// The next entry in internal key order.
    pub fn next_entry(&mut self) -> Result<Option<Entry>> {
        loop {
            let Some(h) = self.heap.pop() else {
                return Ok(None);
            };
            match self.sources[h.src].next_entry()? {
                Some(e) => self.heap.push(Head { e, src: h.src }),
                // Drop an exhausted source at once: it may hold a band a low-space
                // compaction wants to free before the merge ends.
                None => self.sources[h.src] = Box::new(VecSource(Vec::new().into_iter())),
            }
            let dup = self
                .last
                .as_ref()
                .is_some_and(|(k, s)| *s == h.e.seq && *k == h.e.key);
            if dup {
                continue;
            }
            self.last = Some((h.e.key.clone(), h.e.seq));
            return Ok(Some(h.e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_in_internal_order() {
        let e = |k: &str, s| Entry {
            key: k.as_bytes().to_vec(),
            seq: s,
            value: None,
        };
        let a = VecSource(vec![e("a", 5), e("c", 1)].into_iter());
        let b = VecSource(vec![e("a", 7), e("b", 2), e("c", 1)].into_iter());
        let mut m = Merge::new(vec![Box::new(a), Box::new(b)]).unwrap();
        let mut got = Vec::new();
        while let Some(x) = m.next_entry().unwrap() {
            got.push((String::from_utf8(x.key).unwrap(), x.seq));
        }
        let want: Vec<(String, u64)> = [("a", 7), ("a", 5), ("b", 2), ("c", 1)]
            .iter()
            .map(|(k, s)| (k.to_string(), *s))
            .collect();
        assert_eq!(got, want);
    }
}
