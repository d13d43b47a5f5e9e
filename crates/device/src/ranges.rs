//! A set of LBA ranges kept as disjoint, merged half-open intervals.

use std::collections::BTreeMap;

/// Disjoint half-open ranges `[start, end)` of sectors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    map: BTreeMap<u64, u64>,
}

impl RangeSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of disjoint ranges.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Adds `[start, end)`, merging with neighbours.
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut s, mut e) = (start, end);
        if let Some((&ps, &pe)) = self.map.range(..=s).next_back() {
            if pe >= s {
                s = ps;
                e = e.max(pe);
            }
        }
        let overlapping: Vec<u64> = self.map.range(s..=e).map(|(&k, _)| k).collect();
        for k in overlapping {
            if let Some(v) = self.map.remove(&k) {
                e = e.max(v);
            }
        }
        self.map.insert(s, e);
    }

    /// Removes `[start, end)`.
    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        if let Some((&ps, &pe)) = self.map.range(..start).next_back() {
            if pe > start {
                self.map.insert(ps, start);
                if pe > end {
                    self.map.insert(end, pe);
                }
            }
        }
        let inside: Vec<(u64, u64)> = self.map.range(start..end).map(|(&k, &v)| (k, v)).collect();
        for (k, v) in inside {
            self.map.remove(&k);
            if v > end {
                self.map.insert(end, v);
            }
        }
    }

    /// First sector of `[start, end)` that is in the set.
    pub fn first_in(&self, start: u64, end: u64) -> Option<u64> {
        if let Some((_, &pe)) = self.map.range(..=start).next_back() {
            if pe > start {
                return Some(start);
            }
        }
        self.map.range(start..end).next().map(|(&k, _)| k)
    }

    /// Iterates the ranges in order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&s, &e)| (s, e))
    }

    /// Ranges intersecting `[start, end)`, clipped to it.
    pub fn clipped(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        if let Some((_, &pe)) = self.map.range(..start).next_back() {
            if pe > start {
                out.push((start, pe.min(end)));
            }
        }
        for (&s, &e) in self.map.range(start..end) {
            out.push((s, e.min(end)));
        }
        out
    }

    /// Total sectors in the set.
    pub fn total(&self) -> u64 {
        self.map.iter().map(|(s, e)| e - s).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn agrees_with_a_bitmap(ops in proptest::collection::vec((any::<bool>(), 0u64..200, 0u64..40), 0..60)) {
            let mut set = RangeSet::new();
            let mut bits = vec![false; 256];
            for (add, s, len) in ops {
                let e = s + len;
                if add { set.insert(s, e) } else { set.remove(s, e) }
                for b in &mut bits[s as usize..e as usize] { *b = add; }
                let ranges: Vec<_> = set.iter().collect();
                for w in ranges.windows(2) { prop_assert!(w[0].1 < w[1].0, "not merged: {:?}", ranges); }
                for (i, &b) in bits.iter().enumerate() {
                    let i = i as u64;
                    prop_assert_eq!(set.first_in(i, i + 1).is_some(), b);
                }
                prop_assert_eq!(set.total(), bits.iter().filter(|&&b| b).count() as u64);
            }
        }
    }
}
