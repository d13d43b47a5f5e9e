//! Opens a band recorded in the manifest (footer, index, filter and histogram stay in
//! memory), looks keys up through the block cache, and iterates it sequentially with large
//! reads.

use super::block::{block_entries, decode_block, decode_index_version, search_block};
use super::bloom::Bloom;
use super::footer::{Extent, Footer, FOOTER_LEN};
use super::histogram::Histogram;
use super::index::BlockIndex;
use crate::cache::{Block, BlockCache};
use crate::error::{Error, Result};
use crate::io::{Dev, IoKind};
use crate::manifest::BandMeta;
use crate::memtable::Entry;
use std::cmp::Ordering;
use std::sync::Arc;

/// An open band.
#[derive(Debug)]
pub struct Band {
    /// What the manifest says.
    pub meta: BandMeta,
    /// The footer.
    pub footer: Footer,
    /// Block index.
    pub index: BlockIndex,
    /// Bloom filter.
    pub bloom: Bloom,
    /// Equi-depth histogram.
    pub hist: Histogram,
}

/// Compares internal keys: user key ascending, sequence number descending.
pub fn cmp_ikey(a_key: &[u8], a_seq: u64, b_key: &[u8], b_seq: u64) -> Ordering {
    crate::keyorder::cmp_keys(a_key, b_key).then(b_seq.cmp(&a_seq))
}

impl Band {
    /// Reads and checks the footer and the in-memory parts of a band.
    pub fn open(dev: &Dev, meta: BandMeta) -> Result<Band> {
        let zone = meta.zone;
        let len = meta.sectors * dev.ss;
        if meta.sectors == 0 || meta.sectors > dev.zone_sectors {
            return Err(Error::corruption(
                zone,
                0,
                format!("band {} of {} sectors", meta.id, meta.sectors),
            ));
        }
        let foff = len - FOOTER_LEN as u64;
        let fbuf = dev.read_at(zone, foff, FOOTER_LEN, IoKind::Read)?;
        let footer = Footer::decode(&fbuf).map_err(|w| Error::malformed(zone, foff, w))?;
        if footer.band_id != meta.id {
            return Err(Error::corruption(
                zone,
                foff,
                format!(
                    "footer names band {}, manifest band {}",
                    footer.band_id, meta.id
                ),
            ));
        }
        let part = |ex: Extent, what: &str| -> Result<Vec<u8>> {
            if ex.offset + ex.len as u64 > foff {
                return Err(Error::corruption(
                    zone,
                    ex.offset,
                    format!("{what} extent past the footer"),
                ));
            }
            dev.read_at(zone, ex.offset, ex.len as usize, IoKind::Read)
        };
        let index = decode_index_version(&part(footer.index, "index")?, footer.version)
            .map_err(|w| Error::malformed(zone, footer.index.offset, w.within("index")))?;
        let bloom = Bloom::decode(&part(footer.bloom, "filter")?)
            .map_err(|w| Error::malformed(zone, footer.bloom.offset, w.within("filter")))?;
        let hist = Histogram::decode(&part(footer.histogram, "histogram")?)
            .map_err(|w| Error::malformed(zone, footer.histogram.offset, w.within("histogram")))?;
        for (i, e) in index.iter().enumerate() {
            if e.offset.saturating_add(e.len as u64) > footer.index.offset
                || (i > 0 && e.offset < index[i - 1].offset + index[i - 1].len as u64)
                || e.last_key.len() + e.first_key.len() > u32::MAX as usize / 4
            {
                return Err(Error::corruption(
                    zone,
                    e.offset,
                    "index entry out of place",
                ));
            }
        }
        let index = BlockIndex::new(&index, footer.version >= 2);
        Ok(Band {
            meta,
            footer,
            index,
            bloom,
            hist,
        })
    }

    /// Reads block `i`, checks it and puts it in `cache` (after a miss the cache admits);
    /// returns its entry area.
    pub fn cache_block(
        &self,
        dev: &Dev,
        cache: &BlockCache,
        i: usize,
        verify: bool,
    ) -> Result<Block> {
        let b = self.load_block(dev, i, verify)?;
        let len = self.index.extent(i).map_or(0, |(_, l)| l);
        cache.insert(self.meta.id, i as u32, b.clone(), u64::from(len));
        Ok(b)
    }

    /// Reads block `i` from the device and checks it; returns its entry area (the cache is
    /// neither asked nor filled).
    pub fn load_block(&self, dev: &Dev, i: usize, verify: bool) -> Result<Block> {
        let (offset, len) = self
            .index
            .extent(i)
            .ok_or_else(|| Error::corruption(self.meta.zone, 0, format!("no block {i}")))?;
        dev.with_span(self.meta.zone, offset, len as usize, IoKind::Read, |raw| {
            block_entries(raw, verify)
                .map(Arc::from)
                .map_err(|w| Error::malformed(self.meta.zone, offset, w.within("data block")))
        })
    }

    fn decode(&self, buf: &[u8], offset: u64, verify: bool) -> Result<Vec<Entry>> {
        decode_block(buf, verify)
            .map_err(|w| Error::malformed(self.meta.zone, offset, w.within("data block")))
    }

    /// First block whose last internal key is ≥ (key, seq).
    pub(crate) fn seek_block(&self, key: &[u8], seq: u64) -> usize {
        self.index.seek(key, seq)
    }

    /// The newest version of `key` with sequence ≤ `snap` in this band. A block the cache
    /// does not hold and does not admit ([`BlockCache::admit`]) is searched where it was read.
    pub fn get(
        &self,
        dev: &Dev,
        cache: &BlockCache,
        key: &[u8],
        snap: u64,
        verify: bool,
    ) -> Result<Option<(u64, Option<Vec<u8>>)>> {
        // The first entry at or after (key, snap) in a block's entries: `Some` ends the
        // search (a version of `key`, or the proof that there is none).
        type Found = Option<Option<(u64, Option<Vec<u8>>)>>;
        let search = |entries: &[u8], offset: u64| -> Result<Found> {
            let found = search_block(entries, key, snap)
                .map_err(|w| Error::malformed(self.meta.zone, offset, w.within("data block")))?;
            Ok(found.map(|e| (e.key == key).then(|| (e.seq, e.value.map(<[u8]>::to_vec)))))
        };
        let mut i = self.seek_block(key, snap);
        while i < self.index.len() {
            let (offset, len) = self
                .index
                .extent(i)
                .ok_or_else(|| Error::corruption(self.meta.zone, 0, format!("no block {i}")))?;
            let found = match cache.get(self.meta.id, i as u32) {
                Some(b) => search(&b, offset)?,
                None if cache.admit(self.meta.id, i as u32) => {
                    let b = self.cache_block(dev, cache, i, verify)?;
                    search(&b, offset)?
                }
                None => {
                    dev.with_span(self.meta.zone, offset, len as usize, IoKind::Read, |raw| {
                        let entries = block_entries(raw, verify).map_err(|w| {
                            Error::malformed(self.meta.zone, offset, w.within("data block"))
                        })?;
                        search(entries, offset)
                    })?
                }
            };
            if let Some(r) = found {
                return Ok(r);
            }
            i += 1;
        }
        Ok(None)
    }
}

/// Sequential iterator over a band from a start key, reading ahead in large chunks.
pub struct BandIter {
    band: Arc<Band>,
    dev: Arc<Dev>,
    kind: IoKind,
    read_ahead: usize,
    verify: bool,
    next_block: usize,
    ra_cur: u64,
    window_off: u64,
    /// Read-ahead buffer: its first `window_len` bytes hold the zone's bytes from
    /// `window_off`.
    window: Vec<u8>,
    window_len: usize,
    cur: std::vec::IntoIter<Entry>,
}

impl BandIter {
    /// An iterator positioned at the first entry with user key ≥ `start`.
    pub fn new(
        band: Arc<Band>,
        dev: Arc<Dev>,
        start: &[u8],
        kind: IoKind,
        read_ahead: usize,
        verify: bool,
    ) -> Result<Self> {
        let first = band.seek_block(start, u64::MAX);
        let mut it = BandIter {
            band,
            dev,
            kind,
            read_ahead,
            verify,
            next_block: first,
            ra_cur: 32 << 10,
            window_off: 0,
            window: Vec::new(),
            window_len: 0,
            cur: Vec::new().into_iter(),
        };
        if it.load_next()? {
            let v: Vec<Entry> = it
                .cur
                .by_ref()
                .filter(|e| e.key.as_slice() >= start)
                .collect();
            it.cur = v.into_iter();
        }
        Ok(it)
    }

    fn load_next(&mut self) -> Result<bool> {
        let Some((offset, blen)) = self.band.index.extent(self.next_block) else {
            return Ok(false);
        };
        let blen = blen as u64;
        let end = offset + blen;
        let in_window =
            offset >= self.window_off && end <= self.window_off + self.window_len as u64;
        if !in_window {
            let data_end = self.band.footer.index.offset;
            // Start small (a short scan reads little) and double up to the read-ahead size.
            let want = self.ra_cur.min(self.read_ahead as u64).max(blen);
            self.ra_cur = (self.ra_cur * 2).min(self.read_ahead.max(1) as u64);
            let len = want.min(data_end.saturating_sub(offset)).max(blen);
            (self.window_off, self.window_len) = self.dev.read_window(
                self.band.meta.zone,
                offset,
                len as usize,
                self.kind,
                &mut self.window,
            )?;
        }
        let a = (offset - self.window_off) as usize;
        let buf = self.window[..self.window_len]
            .get(a..a + blen as usize)
            .ok_or_else(|| Error::corruption(self.band.meta.zone, offset, "short block read"))?;
        let entries = self.band.decode(buf, offset, self.verify)?;
        self.cur = entries.into_iter();
        self.next_block += 1;
        Ok(true)
    }

    /// The next entry in internal key order.
    pub fn next_entry(&mut self) -> Result<Option<Entry>> {
        loop {
            if let Some(e) = self.cur.next() {
                return Ok(Some(e));
            }
            if !self.load_next()? {
                return Ok(None);
            }
        }
    }
}
