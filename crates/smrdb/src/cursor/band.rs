//! A cursor over one band. It reads nothing until the merge needs its first entry, and then
//! first looks in the index: when the start key falls between two blocks (with large values,
//! nearly always), the first entry is the next block's first key, which the index records
//! (band format 2), so the cursor offers that key as a tighter bound and still reads nothing;
//! only when the merge reaches it is the block read. Its first blocks come through the block
//! cache; from the third block on, a scan is taken to be long and reads ahead in windows that
//! double from 32 KiB up to `read_ahead_bytes`, without filling the cache.

use super::{parse_entry, Cursor, Head, Range};
use crate::band::block::block_entries;
use crate::band::Band;
use crate::cache::{Block, BlockCache};
use crate::error::{Error, Result};
use crate::io::{Dev, IoKind};
use crate::keyorder::cmp_keys;
use std::cmp::Ordering;
use std::sync::Arc;

/// Blocks read through the block cache before read-ahead starts.
const CACHED_BLOCKS: usize = 2;
/// First read-ahead window.
const FIRST_WINDOW: u64 = 32 << 10;
/// Read-ahead buffers a thread keeps for its next cursors, and the largest kept.
const SPARE_WINDOWS: usize = 4;
const SPARE_WINDOW_MAX: usize = 4 << 20;

thread_local! {
    /// Read-ahead buffers of this thread's finished cursors: a scan's cursors take them
    /// instead of allocating (and zeroing) a window of their own each time, which cost a
    /// short scan (YCSB E) more than the reads.
    static SPARE: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Nothing looked at; `start` bounds the first entry.
    Bound,
    /// The first entry is the first of this block, whose first key is in `start`.
    Indexed(usize),
    /// At an entry or done.
    Positioned,
}

enum Buf {
    None,
    /// A block from the block cache (its entry area).
    Cached(Block),
    /// The entry area `area` of a block inside the read-ahead window.
    Window(Range),
}

/// Iterates one band from a start key.
pub struct BandCursor {
    band: Arc<Band>,
    dev: Arc<Dev>,
    cache: Arc<BlockCache>,
    verify: bool,
    read_ahead: u64,
    /// Lower bound of the first entry until positioned: `max(start, smallest key)`, then the
    /// first key of the block the index points to.
    start: Vec<u8>,
    stage: Stage,
    /// Block held in `buf` (`usize::MAX` before the first).
    block: usize,
    blocks_read: usize,
    buf: Buf,
    /// Read-ahead buffer: its first `window_len` bytes hold the zone's bytes from
    /// `window_off` (the rest is stale).
    window: Vec<u8>,
    window_len: usize,
    window_off: u64,
    next_window: u64,
    /// Current entry: key, sequence number, value, where the next one starts.
    cur: Option<(Range, u64, Option<Range>, usize)>,
}

impl std::fmt::Debug for BandCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BandCursor")
            .field("band", &self.band.meta.id)
            .field("block", &self.block)
            .finish()
    }
}

impl BandCursor {
    /// An unpositioned cursor over `band` from user key `start` (no I/O until the merge needs
    /// its first entry).
    pub fn new(
        band: Arc<Band>,
        dev: Arc<Dev>,
        cache: Arc<BlockCache>,
        start: &[u8],
        read_ahead: usize,
        verify: bool,
    ) -> Self {
        let start = start.max(band.meta.smallest.as_slice()).to_vec();
        BandCursor {
            band,
            dev,
            cache,
            verify,
            read_ahead: read_ahead.max(1) as u64,
            start,
            stage: Stage::Bound,
            block: usize::MAX,
            blocks_read: 0,
            buf: Buf::None,
            window: SPARE
                .try_with(|s| s.borrow_mut().pop())
                .ok()
                .flatten()
                .unwrap_or_default(),
            window_len: 0,
            window_off: 0,
            next_window: FIRST_WINDOW,
            cur: None,
        }
    }

    fn area(&self) -> &[u8] {
        match &self.buf {
            Buf::None => &[],
            Buf::Cached(b) => b,
            Buf::Window((a, b)) => self.window.get(*a..*b).unwrap_or_default(),
        }
    }

    fn corrupt(&self, what: impl Into<String>) -> Error {
        let off = self.band.index.extent(self.block).map_or(0, |e| e.0);
        Error::corruption(self.band.meta.zone, off, what)
    }

    /// Loads block `i` into `buf` (`Buf::None` past the last one).
    fn fetch(&mut self, i: usize) -> Result<()> {
        self.block = i;
        self.cur = None;
        let Some((offset, len)) = self.band.index.extent(i).map(|(o, l)| (o, l as u64)) else {
            self.buf = Buf::None;
            return Ok(());
        };
        if self.blocks_read < CACHED_BLOCKS {
            let (id, n) = (self.band.meta.id, i as u32);
            self.buf = match self.cache.get(id, n) {
                Some(b) => Buf::Cached(b),
                None if self.cache.admit(id, n) => {
                    Buf::Cached(
                        self.band
                            .cache_block(&self.dev, &self.cache, i, self.verify)?,
                    )
                }
                None => {
                    // A block the cache does not admit ([`BlockCache::admit`]) is read into
                    // the window and searched there, as a get does: no allocation, no
                    // eviction.
                    self.fill_window(offset, len)?;
                    self.window_block(offset, len)?
                }
            };
        } else {
            let end = offset + len;
            let have = offset >= self.window_off && end <= self.window_off + self.window_len as u64;
            if !have {
                let data_end = self.band.footer.index.offset;
                let want = self.next_window.min(self.read_ahead).max(len);
                self.next_window = (self.next_window * 2).min(self.read_ahead);
                let n = want.min(data_end.saturating_sub(offset)).max(len);
                self.fill_window(offset, n)?;
            }
            self.buf = self.window_block(offset, len)?;
        }
        self.blocks_read += 1;
        Ok(())
    }

    /// Reads `n` bytes of the band's zone from `offset` into the window.
    fn fill_window(&mut self, offset: u64, n: u64) -> Result<()> {
        (self.window_off, self.window_len) = self.dev.read_window(
            self.band.meta.zone,
            offset,
            n as usize,
            IoKind::Read,
            &mut self.window,
        )?;
        Ok(())
    }

    /// Checks the block of `len` bytes at zone offset `offset`, which the window holds, and
    /// returns its entry area there.
    fn window_block(&self, offset: u64, len: u64) -> Result<Buf> {
        let a = (offset - self.window_off) as usize;
        let raw = self.window[..self.window_len]
            .get(a..a + len as usize)
            .ok_or_else(|| self.corrupt("short block read"))?;
        let n = block_entries(raw, self.verify)
            .map_err(|w| self.corrupt(format!("data block: {w}")))?
            .len();
        Ok(Buf::Window((a, a + n)))
    }

    /// Parses the entry at `pos` of the current block, moving on to the next block at its end
    /// (`cur` is `None` past the last block).
    fn parse(&mut self, mut pos: usize) -> Result<()> {
        loop {
            if matches!(self.buf, Buf::None) {
                self.cur = None;
                return Ok(());
            }
            if pos < self.area().len() {
                let e = parse_entry(self.area(), pos).ok_or_else(|| {
                    self.corrupt(format!("data block: malformed entry at block offset {pos}"))
                })?;
                self.cur = Some(e);
                return Ok(());
            }
            self.fetch(self.block.wrapping_add(1))?;
            pos = 0;
        }
    }
}

impl Drop for BandCursor {
    fn drop(&mut self) {
        let w = std::mem::take(&mut self.window);
        if w.capacity() > 0 && w.capacity() <= SPARE_WINDOW_MAX {
            let _ = SPARE.try_with(|s| {
                let mut s = s.borrow_mut();
                if s.len() < SPARE_WINDOWS {
                    s.push(w);
                }
            });
        }
    }
}

impl Cursor for BandCursor {
    fn head(&self) -> Head<'_> {
        if self.stage != Stage::Positioned {
            return Head::Bound(&self.start, u64::MAX);
        }
        match self.cur {
            Some(((a, b), seq, _, _)) => Head::At(&self.area()[a..b], seq),
            None => Head::Done,
        }
    }

    fn value(&self) -> Option<&[u8]> {
        let (_, _, v, _) = self.cur?;
        v.map(|(a, b)| &self.area()[a..b])
    }

    fn position(&mut self) -> Result<()> {
        let block = match self.stage {
            Stage::Positioned => return Ok(()),
            Stage::Indexed(i) => i,
            Stage::Bound => {
                let i = self.band.seek_block(&self.start, u64::MAX);
                if let Some(first) = self.band.index.first_key(i) {
                    if first > self.start.as_slice() {
                        // Every entry of block i is at or after its first key, and every
                        // entry before the block is before the start: the first entry is
                        // the block's first. Offer it as the bound; read it when reached.
                        self.start.clear();
                        self.start.extend_from_slice(first);
                        self.stage = Stage::Indexed(i);
                        return Ok(());
                    }
                }
                i
            }
        };
        self.stage = Stage::Positioned;
        self.fetch(block)?;
        self.parse(0)?;
        while let Some(((a, b), _, _, next)) = self.cur {
            if cmp_keys(&self.area()[a..b], &self.start) != Ordering::Less {
                break;
            }
            self.parse(next)?;
        }
        Ok(())
    }

    fn skip_key(&mut self, key: &[u8]) -> Result<()> {
        if self.stage == Stage::Positioned {
            // Through the rest of the current block.
            loop {
                let Some(((a, b), _, _, next)) = self.cur else {
                    return Ok(());
                };
                if cmp_keys(&self.area()[a..b], key) != Ordering::Equal {
                    return Ok(());
                }
                if next >= self.area().len() {
                    break;
                }
                self.parse(next)?;
            }
        }
        // The first block that holds a later key; when the index says it starts after `key`,
        // offer its first key as the bound and read nothing.
        let j = self.band.index.seek_past(key);
        if let Some(first) = self.band.index.first_key(j) {
            if first > key {
                self.start.clear();
                self.start.extend_from_slice(first);
                self.stage = Stage::Indexed(j);
                self.cur = None;
                return Ok(());
            }
        }
        self.stage = Stage::Positioned;
        self.fetch(j)?;
        self.parse(0)?;
        while let Some(((a, b), _, _, next)) = self.cur {
            if cmp_keys(&self.area()[a..b], key) == Ordering::Greater {
                break;
            }
            self.parse(next)?;
        }
        Ok(())
    }

    fn advance(&mut self) -> Result<()> {
        if self.stage != Stage::Positioned {
            while self.stage != Stage::Positioned {
                self.position()?;
            }
            return Ok(());
        }
        if let Some((_, _, _, next)) = self.cur {
            self.parse(next)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::band::block::decode_index;
    use crate::band::index::BlockIndex;
    use crate::band::test_util::{test_dev, write_band};
    use crate::memtable::Entry;

    fn collect(c: &mut BandCursor, n: usize) -> Vec<(Vec<u8>, u64, Option<Vec<u8>>)> {
        let mut out = Vec::new();
        c.position().unwrap();
        while out.len() < n {
            // The merge positions a cursor until it stands at an entry.
            while !matches!(c.head(), Head::At(..) | Head::Done) {
                c.position().unwrap();
            }
            let Head::At(k, s) = c.head() else { break };
            out.push((k.to_vec(), s, c.value().map(<[u8]>::to_vec)));
            c.advance().unwrap();
        }
        out
    }

    /// Scans from many start keys over one band agree with the entries written, with the
    /// index's first keys (format 2: bounds from the index, blocks read when reached) and
    /// without them (format 1), for blocks of one large entry and of many small ones, through
    /// the cached first blocks and into read-ahead.
    #[test]
    fn scans_from_any_start_with_and_without_first_keys() {
        let dev = test_dev();
        let conv = dev.dev.info().conventional_zones;
        for (zone, vlen) in [(conv, 5000usize), (conv + 1, 60)] {
            let mut entries = Vec::new();
            for i in 0..120u64 {
                let key = format!("k{:05}", i * 2).into_bytes();
                for seq in [1000 - i, 10 - i % 3] {
                    entries.push(Entry {
                        key: key.clone(),
                        seq,
                        value: (i % 7 != 0 || seq < 100).then(|| vec![i as u8; vlen]),
                    });
                }
            }
            let band = write_band(&dev, zone, 7, &entries);
            let raw = dev
                .read_at(
                    zone,
                    band.footer.index.offset,
                    band.footer.index.len as usize,
                    IoKind::Read,
                )
                .unwrap();
            let mut v1 = Band::open(&dev, band.meta.clone()).unwrap();
            v1.index = BlockIndex::new(&decode_index(&raw).unwrap(), false);
            let v1 = Arc::new(v1);
            let cache = Arc::new(BlockCache::new(64 << 10));
            for start in 0..245u64 {
                let start = format!("k{start:05}").into_bytes();
                let want: Vec<_> = entries
                    .iter()
                    .filter(|e| e.key >= start)
                    .take(30)
                    .map(|e| (e.key.clone(), e.seq, e.value.clone()))
                    .collect();
                for b in [&band, &v1] {
                    let mut c = BandCursor::new(
                        b.clone(),
                        dev.clone(),
                        cache.clone(),
                        &start,
                        1 << 20,
                        true,
                    );
                    assert_eq!(collect(&mut c, 30), want, "value {vlen}, start {start:?}");
                }
            }
            // A bound from the index is reached without reading a block.
            let before = dev
                .counters
                .user_read
                .load(std::sync::atomic::Ordering::Relaxed);
            let mut c = BandCursor::new(
                band.clone(),
                dev.clone(),
                cache.clone(),
                b"k00101",
                1 << 20,
                true,
            );
            c.position().unwrap();
            if vlen > 4096 {
                assert_eq!(c.head(), Head::Bound(b"k00102", u64::MAX));
                let after = dev
                    .counters
                    .user_read
                    .load(std::sync::atomic::Ordering::Relaxed);
                assert_eq!(after, before, "the index alone gave the bound");
            }
        }
    }

    /// `skip_key` passes every version of a key, from an unpositioned cursor bounded by it
    /// and from one standing at its first version, in bands whose keys span blocks (many
    /// versions of small values) and bands of one entry per block, where the index gives
    /// the next block's first key without a read.
    #[test]
    fn skip_key_passes_every_version() {
        let dev = test_dev();
        let conv = dev.dev.info().conventional_zones;
        for (zone, vlen, versions) in [(conv, 5000usize, 3u64), (conv + 1, 300, 40)] {
            let mut entries = Vec::new();
            for i in 0..40u64 {
                let key = format!("k{:05}", i * 2).into_bytes();
                for v in 0..versions {
                    entries.push(Entry {
                        key: key.clone(),
                        seq: 1000 - v,
                        value: (v % 5 != 1).then(|| vec![i as u8; vlen]),
                    });
                }
            }
            let band = write_band(&dev, zone, 7, &entries);
            let cache = Arc::new(BlockCache::new(1 << 20));
            for i in 0..40u64 {
                let key = format!("k{:05}", i * 2).into_bytes();
                let want: Vec<_> = entries
                    .iter()
                    .filter(|e| e.key > key)
                    .take(5)
                    .map(|e| (e.key.clone(), e.seq, e.value.clone()))
                    .collect();
                for positioned in [false, true] {
                    let mut c = BandCursor::new(
                        band.clone(),
                        dev.clone(),
                        cache.clone(),
                        &key,
                        1 << 20,
                        true,
                    );
                    if positioned {
                        while !matches!(c.head(), Head::At(..) | Head::Done) {
                            c.position().unwrap();
                        }
                        assert_eq!(c.head(), Head::At(&key, 1000));
                    }
                    let before = dev
                        .counters
                        .user_read
                        .load(std::sync::atomic::Ordering::Relaxed);
                    c.skip_key(&key).unwrap();
                    if vlen > 4096 && i < 39 {
                        let after = dev
                            .counters
                            .user_read
                            .load(std::sync::atomic::Ordering::Relaxed);
                        assert_eq!(after, before, "skipping read blocks the index passes");
                    }
                    assert_eq!(collect(&mut c, 5), want, "{key:?} positioned {positioned}");
                }
            }
        }
    }
}
