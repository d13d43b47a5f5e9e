//! A map from logical extents to physical positions, with overwrite splitting: the extent map
//! of the journal layer and the block maps of the other layers.

use crate::durable::{dec_count, Shape};
use std::collections::BTreeMap;
use tegula_codec::{Dec, Enc, FormatError};

/// One mapped piece: logical `[lba, lba + len)` at physical `pos..`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// First logical LBA.
    pub lba: u64,
    /// Sectors.
    pub len: u64,
    /// Physical LBA of `lba`.
    pub pos: u64,
}

/// Disjoint logical extents, each mapped to a contiguous physical run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtentMap {
    map: BTreeMap<u64, (u64, u64)>,
    sectors: u64,
}

impl ExtentMap {
    /// Number of extents (map entries).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Mapped sectors.
    pub fn sectors(&self) -> u64 {
        self.sectors
    }

    /// Removes `[lba, lba + len)`; returns the pieces that were mapped there.
    pub fn remove(&mut self, lba: u64, len: u64) -> Vec<Piece> {
        let end = lba + len;
        let mut out = Vec::new();
        if len == 0 {
            return out;
        }
        // An extent starting before `lba` that reaches into the range.
        if let Some((&s, &(l, p))) = self.map.range(..lba).next_back() {
            if s + l > lba {
                self.map.insert(s, (lba - s, p));
                let cut_end = (s + l).min(end);
                out.push(Piece {
                    lba,
                    len: cut_end - lba,
                    pos: p + (lba - s),
                });
                if s + l > end {
                    self.map.insert(end, (s + l - end, p + (end - s)));
                }
            }
        }
        let inside: Vec<(u64, (u64, u64))> =
            self.map.range(lba..end).map(|(&k, &v)| (k, v)).collect();
        for (s, (l, p)) in inside {
            self.map.remove(&s);
            let cut_end = (s + l).min(end);
            out.push(Piece {
                lba: s,
                len: cut_end - s,
                pos: p,
            });
            if s + l > end {
                self.map.insert(end, (s + l - end, p + (end - s)));
            }
        }
        self.sectors -= out.iter().map(|p| p.len).sum::<u64>();
        out
    }

    /// Maps `[lba, lba + len)` to `pos..`; returns the pieces it replaced. Merges with a
    /// neighbour that continues both logically and physically.
    pub fn insert(&mut self, lba: u64, len: u64, pos: u64) -> Vec<Piece> {
        let old = self.remove(lba, len);
        let (mut s, mut l, mut p) = (lba, len, pos);
        if let Some((&ps, &(pl, pp))) = self.map.range(..lba).next_back() {
            if ps + pl == lba && pp + pl == pos {
                self.map.remove(&ps);
                s = ps;
                l += pl;
                p = pp;
            }
        }
        if let Some(&(nl, np)) = self.map.get(&(lba + len)) {
            if np == pos + len {
                self.map.remove(&(lba + len));
                l += nl;
            }
        }
        self.map.insert(s, (l, p));
        self.sectors += len;
        old
    }

    /// Splits `[lba, lba + len)` into mapped pieces and unmapped gaps (`pos` = `None`).
    pub fn lookup(&self, lba: u64, len: u64) -> Vec<(u64, u64, Option<u64>)> {
        let end = lba + len;
        let mut out = Vec::new();
        let mut cur = lba;
        let start_key = match self.map.range(..=lba).next_back() {
            Some((&s, &(l, _))) if s + l > lba => s,
            _ => lba,
        };
        for (&s, &(l, p)) in self.map.range(start_key..end) {
            let a = s.max(cur);
            let b = (s + l).min(end);
            if b <= a {
                continue;
            }
            if a > cur {
                out.push((cur, a - cur, None));
            }
            out.push((a, b - a, Some(p + (a - s))));
            cur = b;
        }
        if cur < end {
            out.push((cur, end - cur, None));
        }
        out
    }

    /// Mapped pieces inside `[lba, lba + len)`.
    pub fn pieces_in(&self, lba: u64, len: u64) -> Vec<Piece> {
        self.lookup(lba, len)
            .into_iter()
            .filter_map(|(l, n, p)| {
                p.map(|pos| Piece {
                    lba: l,
                    len: n,
                    pos,
                })
            })
            .collect()
    }
}

impl ExtentMap {
    /// Encodes the map: a count, then (lba, len, pos) per extent in LBA order.
    pub(crate) fn encode(&self, e: &mut Enc) {
        e.u64(self.map.len() as u64);
        for (&lba, &(len, pos)) in &self.map {
            e.u64(lba);
            e.u64(len);
            e.u64(pos);
        }
    }

    /// Decodes and checks a map: extents sorted, disjoint, non-empty, inside `shape`.
    pub(crate) fn decode(d: &mut Dec<'_>, shape: &Shape) -> Result<Self, FormatError> {
        let n = dec_count(d, "map extents", 24)?;
        let mut m = ExtentMap::default();
        let mut end = 0u64;
        for _ in 0..n {
            let (lba, len, pos) = (d.u64()?, d.u64()?, d.u64()?);
            shape.extent(lba, len)?;
            shape.pos(pos, len)?;
            if lba < end {
                return Err(FormatError::invalid(format!(
                    "map extent at {lba} overlaps the previous one"
                )));
            }
            end = lba + len;
            m.map.insert(lba, (len, pos));
            m.sectors += len;
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn agrees_with_a_per_sector_model() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut m = ExtentMap::default();
        let mut model: Vec<Option<u64>> = vec![None; 300];
        for i in 0..3000 {
            let lba = rng.gen_range(0..280u64);
            let len = rng.gen_range(1..20u64).min(300 - lba);
            if rng.gen_bool(0.8) {
                let pos = 10_000 + i * 20;
                m.insert(lba, len, pos);
                for k in 0..len {
                    model[(lba + k) as usize] = Some(pos + k);
                }
            } else {
                let removed = m.remove(lba, len);
                let n: u64 = removed.iter().map(|p| p.len).sum();
                let want = (lba..lba + len)
                    .filter(|&k| model[k as usize].is_some())
                    .count() as u64;
                assert_eq!(n, want);
                for k in 0..len {
                    model[(lba + k) as usize] = None;
                }
            }
            let got = m.lookup(0, 300);
            let mut flat = Vec::new();
            for (l, n, p) in got {
                for k in 0..n {
                    assert_eq!(l + k, flat.len() as u64);
                    flat.push(p.map(|p| p + k));
                }
            }
            assert_eq!(flat, model);
            assert_eq!(
                m.sectors(),
                model.iter().filter(|p| p.is_some()).count() as u64
            );
        }
    }
}
