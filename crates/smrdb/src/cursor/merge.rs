//! The k-way merge of cursors: a binary min-heap of child indices ordered by each child's head
//! (an entry or, for an unpositioned child, a lower bound of its first entry). Only the child
//! on top is ever positioned, so children whose bound lies beyond what the caller reads are
//! never touched.

use super::{Cursor, Head};
use crate::band::reader::cmp_ikey;
use crate::error::Result;
use crate::memtable::EntryRef;
use std::cmp::Ordering;

/// Merges children into one stream in internal key order (duplicates are kept; the scan on
/// top of it yields each user key once).
pub struct MergingCursor {
    children: Vec<Box<dyn Cursor>>,
    /// Indices of the children not exhausted, as a binary min-heap.
    heap: Vec<usize>,
}

impl std::fmt::Debug for MergingCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergingCursor")
            .field("children", &self.children.len())
            .field("live", &self.heap.len())
            .finish()
    }
}

/// Orders heads: entries and bounds by internal key; at equal keys an entry after a bound
/// (the bound's child may hold the same key with a newer sequence number), the end last.
fn parts(h: Head<'_>) -> Option<(&[u8], u64, u8)> {
    match h {
        Head::At(k, s) => Some((k, s, 1)),
        Head::Bound(k, s) => Some((k, s, 0)),
        Head::Done => None,
    }
}

fn cmp_head(a: Head<'_>, b: Head<'_>) -> Ordering {
    match (parts(a), parts(b)) {
        (Some((ka, sa, ea)), Some((kb, sb, eb))) => cmp_ikey(ka, sa, kb, sb).then(ea.cmp(&eb)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

impl MergingCursor {
    /// Merges `children` (positioned or not); reads nothing.
    pub fn new(children: Vec<Box<dyn Cursor>>) -> Self {
        let mut m = MergingCursor {
            heap: (0..children.len()).collect(),
            children,
        };
        m.heap.retain(|&i| m.children[i].head() != Head::Done);
        for i in (0..m.heap.len() / 2).rev() {
            m.sift_down(i);
        }
        m
    }

    fn less(&self, a: usize, b: usize) -> bool {
        let (ca, cb) = (self.heap[a], self.heap[b]);
        cmp_head(self.children[ca].head(), self.children[cb].head()) == Ordering::Less
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < self.heap.len() && self.less(l, m) {
                m = l;
            }
            if r < self.heap.len() && self.less(r, m) {
                m = r;
            }
            if m == i {
                return;
            }
            self.heap.swap(i, m);
            i = m;
        }
    }

    /// Restores the heap after the top child moved (or drops it when exhausted).
    fn fix_top(&mut self) {
        let Some(&top) = self.heap.first() else {
            return;
        };
        if self.children[top].head() == Head::Done {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
        }
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
    }

    /// Positions children until the one on top stands at an entry; `false` at the end.
    fn settle(&mut self) -> Result<bool> {
        loop {
            let Some(&top) = self.heap.first() else {
                return Ok(false);
            };
            match self.children[top].head() {
                Head::At(..) => return Ok(true),
                Head::Done => self.fix_top(),
                Head::Bound(..) => {
                    self.children[top].position()?;
                    self.fix_top();
                }
            }
        }
    }

    /// The smallest entry of all children, or `None` at the end.
    pub fn current(&mut self) -> Result<Option<EntryRef<'_>>> {
        if !self.settle()? {
            return Ok(None);
        }
        let c = &self.children[self.heap[0]];
        match c.head() {
            Head::At(key, seq) => Ok(Some(EntryRef {
                key,
                seq,
                value: c.value(),
            })),
            _ => Ok(None),
        }
    }

    /// The entry the child on top stands at, without positioning anything: what
    /// [`MergingCursor::current`] returned last, as long as nothing moved since.
    pub fn top_entry(&self) -> Option<EntryRef<'_>> {
        let c = &self.children[*self.heap.first()?];
        match c.head() {
            Head::At(key, seq) => Some(EntryRef {
                key,
                seq,
                value: c.value(),
            }),
            _ => None,
        }
    }

    /// Moves past every entry with user key `key` (the scan decided it): children standing at
    /// it, or whose bound is it, skip it, without reading what their index lets them pass.
    pub fn skip_key(&mut self, key: &[u8]) -> Result<()> {
        while let Some(&top) = self.heap.first() {
            match self.children[top].head() {
                Head::At(k, _) | Head::Bound(k, _) if k == key => {
                    self.children[top].skip_key(key)?;
                    self.fix_top();
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// Moves past the current entry.
    pub fn advance(&mut self) -> Result<()> {
        if !self.settle()? {
            return Ok(());
        }
        let top = self.heap[0];
        self.children[top].advance()?;
        self.fix_top();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cursor over a vector, optionally unpositioned with a bound.
    struct VecCursor {
        v: Vec<(Vec<u8>, u64, Option<Vec<u8>>)>,
        i: usize,
        bound: Option<(Vec<u8>, u64)>,
        positioned: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }

    impl Cursor for VecCursor {
        fn head(&self) -> Head<'_> {
            if let Some((k, s)) = &self.bound {
                return Head::Bound(k, *s);
            }
            self.v
                .get(self.i)
                .map_or(Head::Done, |(k, s, _)| Head::At(k, *s))
        }
        fn value(&self) -> Option<&[u8]> {
            self.v.get(self.i).and_then(|e| e.2.as_deref())
        }
        fn position(&mut self) -> Result<()> {
            self.bound = None;
            self.positioned
                .store(true, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        }
        fn advance(&mut self) -> Result<()> {
            if self.bound.is_some() {
                return self.position();
            }
            self.i += 1;
            Ok(())
        }
    }

    fn cur(
        v: &[(&str, u64)],
        bound: Option<&str>,
    ) -> (
        Box<dyn Cursor>,
        std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) {
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let c = VecCursor {
            v: v.iter()
                .map(|(k, s)| (k.as_bytes().to_vec(), *s, Some(vec![*s as u8])))
                .collect(),
            i: 0,
            bound: bound.map(|b| (b.as_bytes().to_vec(), u64::MAX)),
            positioned: flag.clone(),
        };
        (Box::new(c), flag)
    }

    #[test]
    fn merges_in_internal_order_and_positions_lazily() {
        let (a, _) = cur(&[("a", 5), ("c", 1)], None);
        let (b, _) = cur(&[("a", 7), ("b", 2), ("c", 1)], Some("a"));
        let (far, far_opened) = cur(&[("x", 9)], Some("x"));
        let mut m = MergingCursor::new(vec![a, b, far]);
        let mut got = Vec::new();
        while let Some(e) = m.current().unwrap() {
            got.push((String::from_utf8(e.key.to_vec()).unwrap(), e.seq));
            if got.len() == 5 {
                break;
            }
            m.advance().unwrap();
        }
        let want: Vec<(String, u64)> = [("a", 7), ("a", 5), ("b", 2), ("c", 1), ("c", 1)]
            .iter()
            .map(|(k, s)| (k.to_string(), *s))
            .collect();
        assert_eq!(got, want);
        assert!(
            !far_opened.load(std::sync::atomic::Ordering::Relaxed),
            "a child whose bound lies past what was read was positioned"
        );
        m.advance().unwrap();
        assert_eq!(
            m.current().unwrap().map(|e| (e.key.to_vec(), e.seq)),
            Some((b"x".to_vec(), 9))
        );
        m.advance().unwrap();
        assert!(m.current().unwrap().is_none());
    }
}
