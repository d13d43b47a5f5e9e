//! A file's write buffer: dirty byte ranges not yet written as extents, kept as disjoint,
//! non-adjacent segments so that appends grow one segment; the data of its flush jobs in
//! flight, shared with the jobs (no copy); and the spare segment buffers a stream of writes
//! reuses instead of faulting in fresh memory for every buffer it fills.

use std::collections::BTreeMap;
use std::sync::Arc;

/// A write at least this large starts a new segment in a spare buffer (streaming writes;
/// a small file's few bytes do not take a multi-megabyte buffer).
const SPARE_MIN_WRITE: usize = 64 << 10;
/// A buffer smaller than this is not kept as a spare.
const SPARE_MIN_CAPACITY: usize = 256 << 10;

/// Segment buffers of finished flush jobs, kept for new segments: a stream of writes then
/// fills the same few buffers instead of allocating (and first touching) new memory for each
/// file buffer it fills.
#[derive(Debug)]
pub struct Spares {
    bufs: Vec<Vec<u8>>,
    /// Sum of the kept buffers' capacities.
    bytes: usize,
    /// At most this many bytes of capacity are kept.
    limit: usize,
    /// An append does not grow a segment past this size: it starts a new one (so that the
    /// buffers of a long stream stay of a size the spares keep).
    segment_max: usize,
}

impl Spares {
    /// Keeps at most `limit` bytes of spare capacity; appends start a new segment once one
    /// holds `segment_max` bytes.
    pub fn new(limit: usize, segment_max: usize) -> Self {
        Spares {
            bufs: Vec::new(),
            bytes: 0,
            limit,
            segment_max: segment_max.max(1),
        }
    }

    /// An empty buffer for a segment that starts with a write of `len` bytes: a spare one
    /// when the write is large enough and there is one, else a new one.
    fn take(&mut self, len: usize) -> Vec<u8> {
        if len >= SPARE_MIN_WRITE {
            if let Some(mut v) = self.bufs.pop() {
                self.bytes -= v.capacity();
                v.clear();
                return v;
            }
        }
        Vec::with_capacity(len)
    }

    /// Keeps `v` for a later segment if it is large and there is room.
    pub fn give(&mut self, v: Vec<u8>) {
        let cap = v.capacity();
        if cap >= SPARE_MIN_CAPACITY && self.bytes + cap <= self.limit {
            self.bytes += cap;
            self.bufs.push(v);
        }
    }

    /// Bytes of spare capacity kept.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Default for Spares {
    fn default() -> Self {
        Spares::new(0, usize::MAX)
    }
}

/// Copies `data` over `base` at `a`, growing it (zeros between its end and `a`): the bytes
/// past the old end are appended, not zero-filled first and then overwritten.
fn put_at(base: &mut Vec<u8>, a: usize, data: &[u8]) {
    if base.len() < a {
        base.resize(a, 0);
    }
    let n = (base.len() - a).min(data.len());
    base[a..a + n].copy_from_slice(&data[..n]);
    base.extend_from_slice(&data[n..]);
}

/// The data of a file's flush jobs not yet finished, shared with the jobs: reads overlay it
/// (later jobs over earlier ones) until the jobs end.
#[derive(Debug, Default)]
pub struct InFlight {
    /// (file offset, the job's segment, bytes of it still visible), oldest job first.
    segs: Vec<(u64, Arc<Vec<u8>>, usize)>,
}

impl InFlight {
    /// Adds a segment of a new job (it hides older in-flight bytes it overlaps).
    pub fn push(&mut self, off: u64, data: Arc<Vec<u8>>) {
        let n = data.len();
        self.segs.push((off, data, n));
    }

    /// Copies in-flight bytes that fall in `[off, off + out.len())` over `out`.
    pub fn overlay(&self, off: u64, out: &mut [u8]) {
        let end = off + out.len() as u64;
        for (s, v, n) in &self.segs {
            let se = s + *n as u64;
            let a = (*s).max(off);
            let b = se.min(end);
            if a < b {
                out[(a - off) as usize..(b - off) as usize]
                    .copy_from_slice(&v[(a - s) as usize..(b - s) as usize]);
            }
        }
    }

    /// Hides the bytes at or beyond `size` (a truncate while the jobs run).
    pub fn truncate(&mut self, size: u64) {
        for (s, _, n) in &mut self.segs {
            *n = (*n).min(size.saturating_sub(*s) as usize);
        }
    }
}

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
    #[cfg(test)]
    pub fn write(&mut self, off: u64, data: &[u8]) {
        self.write_from(off, data, &mut Spares::default());
    }

    /// Buffers `data` at `off`, merging with segments it overlaps or touches; a new segment
    /// of a large write starts in one of `spares`.
    pub fn write_from(&mut self, off: u64, data: &[u8], spares: &mut Spares) {
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
        // An append right after a full segment (and touching nothing else) starts a new
        // segment: adjacent segments are allowed, later writes over both merge them.
        let full_append = match touching.as_slice() {
            [s] => self
                .segs
                .get(s)
                .is_some_and(|v| s + v.len() as u64 == off && v.len() >= spares.segment_max),
            _ => false,
        };
        if touching.is_empty() || full_append {
            self.bytes += data.len();
            let mut v = spares.take(data.len());
            v.extend_from_slice(data);
            self.segs.insert(off, v);
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
                put_at(&mut base, (s - start) as usize, &v);
                spares.give(v);
            }
        }
        put_at(&mut base, (off - start) as usize, data);
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

    /// Segments started in spare buffers (dirty, larger than needed) hold the same bytes as
    /// fresh ones, and merging gives the absorbed segments' buffers back as spares.
    #[test]
    fn spare_buffers_give_the_same_bytes_and_come_back() {
        let mut spares = Spares::new(64 << 20, usize::MAX);
        spares.give(vec![0xAAu8; 1 << 20]);
        spares.give(vec![0xBBu8; 2 << 20]);
        let mut with = WriteBuf::default();
        let mut plain = WriteBuf::default();
        let big = |v: u8| vec![v; SPARE_MIN_WRITE + 100];
        // Two large segments with a gap, then a write that joins them, then appends.
        let writes: Vec<(u64, Vec<u8>)> = vec![
            (0, big(1)),
            (300_000, big(2)),
            (10, vec![3; 5]),
            (SPARE_MIN_WRITE as u64, vec![4; 300_000]),
            (600_000, big(5)),
            (100, vec![6; 10]),
        ];
        for (i, (off, d)) in writes.iter().enumerate() {
            with.write_from(*off, d, &mut spares);
            match i {
                // Both spares taken by the two large segments.
                1 => assert_eq!(spares.bytes(), 0),
                // The segment the joining write absorbed came back; the next large segment
                // takes it again.
                3 => assert_eq!(spares.bytes(), 1 << 20),
                4 => assert_eq!(spares.bytes(), 0),
                _ => {}
            }
            plain.write(*off, d);
            let mut a = vec![0u8; 800_000];
            let mut b = vec![0u8; 800_000];
            with.overlay(0, &mut a);
            plain.overlay(0, &mut b);
            assert!(a == b, "after the write at {off}");
            assert_eq!(with.bytes(), plain.bytes());
        }
        assert_eq!(
            with.pop_first().map(|(o, v)| (o, v.len())),
            plain.pop_first().map(|(o, v)| (o, v.len()))
        );
    }

    /// A stream of appends is cut into segments of at most the segment size, which read
    /// back as one flat file; a write over a boundary merges the two segments.
    #[test]
    fn appends_start_a_new_segment_once_one_is_full() {
        let mut spares = Spares::new(0, 3000);
        let mut b = WriteBuf::default();
        let mut flat = Vec::new();
        for i in 0..10u8 {
            let d = vec![i; 1000];
            b.write_from(flat.len() as u64, &d, &mut spares);
            flat.extend_from_slice(&d);
        }
        assert_eq!(b.segs.len(), 4, "10,000 bytes in segments of at most 3,000");
        assert!(b.segs.values().all(|v| v.len() <= 3000));
        b.write_from(2990, &[0xEE; 20], &mut spares);
        flat[2990..3010].fill(0xEE);
        assert_eq!(b.segs.len(), 3);
        let mut out = vec![0u8; flat.len()];
        b.overlay(0, &mut out);
        assert_eq!(out, flat);
        assert_eq!(b.bytes(), flat.len());
    }

    /// In-flight data overlays later jobs over earlier ones, and a truncate hides what lies
    /// past the new size in the jobs already in flight only.
    #[test]
    fn in_flight_overlays_newest_last_and_truncates() {
        let mut f = InFlight::default();
        f.push(0, Arc::new(vec![1; 100]));
        f.push(50, Arc::new(vec![2; 100]));
        let mut out = vec![0u8; 200];
        f.overlay(0, &mut out);
        assert!(out[..50].iter().all(|&x| x == 1));
        assert!(out[50..150].iter().all(|&x| x == 2));
        assert!(out[150..].iter().all(|&x| x == 0));
        f.truncate(80);
        f.push(120, Arc::new(vec![3; 10]));
        let mut out = vec![9u8; 200];
        f.overlay(0, &mut out);
        assert!(out[..50].iter().all(|&x| x == 1));
        assert!(out[50..80].iter().all(|&x| x == 2));
        assert!(out[80..120].iter().all(|&x| x == 9), "hidden past the cut");
        assert!(
            out[120..130].iter().all(|&x| x == 3),
            "a later job is not cut"
        );
        assert!(out[130..].iter().all(|&x| x == 9));
        // A read starting inside a segment.
        let mut out = vec![0u8; 10];
        f.overlay(45, &mut out);
        assert_eq!(out, [1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
    }
}
