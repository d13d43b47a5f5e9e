//! A file's write buffer: dirty byte ranges not yet written as extents, kept as disjoint,
//! non-adjacent segments so that appends grow one segment.

use std::collections::BTreeMap;

/// Dirty segments by file offset.
#[derive(Debug, Default)]
pub struct WriteBuf {
    segs: BTreeMap<u64, Vec<u8>>,
    bytes: usize,
}

impl WriteBuf {
    /// Bytes buffered.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// End of the last buffered byte, if any.
    #[cfg(test)]
    pub fn end(&self) -> Option<u64> {
        self.segs
            .iter()
            .next_back()
            .map(|(&o, v)| o + v.len() as u64)
    }

    /// Buffers `data` at `off`, merging with segments it overlaps or touches.
    pub fn write(&mut self, off: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let end = off + data.len() as u64;
        let touching: Vec<u64> = self
            .segs
            .range(..=end)
            .rev()
            .take_while(|(&s, v)| s + v.len() as u64 >= off)
            .map(|(&s, _)| s)
            .collect();
        if touching.is_empty() {
            self.bytes += data.len();
            self.segs.insert(off, data.to_vec());
            return;
        }
        // `touching` is newest-offset first; the last one starts lowest.
        let lo = touching[touching.len() - 1];
        let mut base = match self.segs.remove(&lo) {
            Some(v) => v,
            None => return,
        };
        self.bytes -= base.len();
        let start = lo.min(off);
        if off < lo {
            let mut v = vec![0u8; (lo - off) as usize];
            v.extend_from_slice(&base);
            base = v;
        }
        for s in touching.iter().rev().skip(1) {
            if let Some(v) = self.segs.remove(s) {
                self.bytes -= v.len();
                let a = (s - start) as usize;
                if base.len() < a + v.len() {
                    base.resize(a + v.len(), 0);
                }
                base[a..a + v.len()].copy_from_slice(&v);
            }
        }
        let a = (off - start) as usize;
        if base.len() < a + data.len() {
            base.resize(a + data.len(), 0);
        }
        base[a..a + data.len()].copy_from_slice(data);
        self.bytes += base.len();
        self.segs.insert(start, base);
    }

    /// Copies buffered bytes that fall in `[off, off + out.len())` over `out`.
    pub fn overlay(&self, off: u64, out: &mut [u8]) {
        let end = off + out.len() as u64;
        let first = self
            .segs
            .range(..=off)
            .next_back()
            .map(|(&s, _)| s)
            .unwrap_or(off);
        for (&s, v) in self.segs.range(first..end) {
            let se = s + v.len() as u64;
            let a = s.max(off);
            let b = se.min(end);
            if a < b {
                out[(a - off) as usize..(b - off) as usize]
                    .copy_from_slice(&v[(a - s) as usize..(b - s) as usize]);
            }
        }
    }

    /// Drops buffered bytes at or beyond `size`.
    pub fn truncate(&mut self, size: u64) {
        let beyond: Vec<u64> = self.segs.range(size..).map(|(&s, _)| s).collect();
        for s in beyond {
            if let Some(v) = self.segs.remove(&s) {
                self.bytes -= v.len();
            }
        }
        if let Some((&s, v)) = self.segs.range(..size).next_back() {
            let keep = (size - s) as usize;
            if v.len() > keep {
                let mut v = v.clone();
                self.bytes -= v.len() - keep;
                v.truncate(keep);
                self.segs.insert(s, v);
            }
        }
    }

    /// Removes and returns the lowest segment.
    pub fn pop_first(&mut self) -> Option<(u64, Vec<u8>)> {
        let (s, v) = self.segs.pop_first()?;
        self.bytes -= v.len();
        Some((s, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_merge_and_overlay_like_a_flat_file() {
        let mut b = WriteBuf::default();
        let mut flat = vec![0u8; 100];
        let mut mark = [false; 100];
        let writes: [(u64, usize, u8); 7] = [
            (10, 5, 1),
            (20, 5, 2),
            (15, 5, 3),
            (0, 3, 4),
            (2, 30, 5),
            (60, 10, 6),
            (55, 2, 7),
        ];
        for (off, n, v) in writes {
            b.write(off, &vec![v; n]);
            for i in off as usize..off as usize + n {
                flat[i] = v;
                mark[i] = true;
            }
            let mut out = vec![0u8; 100];
            b.overlay(0, &mut out);
            assert_eq!(out, flat);
            assert_eq!(b.bytes(), mark.iter().filter(|&&m| m).count());
        }
        b.truncate(58);
        let mut out = vec![0u8; 100];
        b.overlay(0, &mut out);
        assert_eq!(&out[..58], &flat[..58]);
        assert!(out[58..].iter().all(|&x| x == 0));
        assert_eq!(b.end(), Some(57));
    }
}
