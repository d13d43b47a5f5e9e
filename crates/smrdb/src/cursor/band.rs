//! A cursor over one band. It reads nothing until positioned; then the block holding the
//! start key comes through the block cache (a seek costs one block per band), and so does the
//! next one; from the third block on, a scan is taken to be long and reads ahead in windows
//! that double from 32 KiB up to `read_ahead_bytes`, without filling the cache.

use super::{parse_entry, Cursor, Head, Range};
use crate::band::block::block_entries;
use crate::band::Band;
use crate::cache::{Block, BlockCache};
use crate::error::{Error, Result};
use crate::io::{Dev, IoKind};
use std::sync::Arc;

/// Blocks read through the block cache before read-ahead starts.
const CACHED_BLOCKS: usize = 2;
/// First read-ahead window.
const FIRST_WINDOW: u64 = 32 << 10;

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
    /// Lower bound of the first entry until positioned: `max(start, smallest key)`.
    start: Vec<u8>,
    positioned: bool,
    /// Block held in `buf` (`usize::MAX` before the first).
    block: usize,
    blocks_read: usize,
    buf: Buf,
    window: Vec<u8>,
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
            positioned: false,
            block: usize::MAX,
            blocks_read: 0,
            buf: Buf::None,
            window: Vec::new(),
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
        let off = self.band.index.get(self.block).map_or(0, |e| e.offset);
        Error::corruption(self.band.meta.zone, off, what)
    }

    /// Loads block `i` into `buf` (`Buf::None` past the last one).
    fn fetch(&mut self, i: usize) -> Result<()> {
        self.block = i;
        self.cur = None;
        let Some((offset, len)) = self.band.index.get(i).map(|e| (e.offset, e.len as u64)) else {
            self.buf = Buf::None;
            return Ok(());
        };
        if self.blocks_read < CACHED_BLOCKS {
            let b = self
                .band
                .block(&self.dev, Some(&self.cache), i, self.verify)?;
            self.buf = Buf::Cached(b);
        } else {
            let end = offset + len;
            let have =
                offset >= self.window_off && end <= self.window_off + self.window.len() as u64;
            if !have {
                let data_end = self.band.footer.index.offset;
                let want = self.next_window.min(self.read_ahead).max(len);
                self.next_window = (self.next_window * 2).min(self.read_ahead);
                let n = want.min(data_end.saturating_sub(offset)).max(len);
                self.window =
                    self.dev
                        .read_at(self.band.meta.zone, offset, n as usize, IoKind::Read)?;
                self.window_off = offset;
            }
            let a = (offset - self.window_off) as usize;
            let raw = self
                .window
                .get(a..a + len as usize)
                .ok_or_else(|| self.corrupt("short block read"))?;
            let n = block_entries(raw, self.verify)
                .map_err(|w| self.corrupt(format!("data block: {w}")))?
                .len();
            self.buf = Buf::Window((a, a + n));
        }
        self.blocks_read += 1;
        Ok(())
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

impl Cursor for BandCursor {
    fn head(&self) -> Head<'_> {
        if !self.positioned {
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
        if self.positioned {
            return Ok(());
        }
        self.positioned = true;
        let first = self.band.seek_block(&self.start, u64::MAX);
        self.fetch(first)?;
        self.parse(0)?;
        while let Some(((a, b), _, _, next)) = self.cur {
            if self.area()[a..b] >= *self.start {
                break;
            }
            self.parse(next)?;
        }
        Ok(())
    }

    fn advance(&mut self) -> Result<()> {
        if !self.positioned {
            return self.position();
        }
        if let Some((_, _, _, next)) = self.cur {
            self.parse(next)?;
        }
        Ok(())
    }
}
