//! Writes one band sequentially into an empty zone, in large chunks.

use super::block::{encode_index, BlockBuilder, IndexEntry, BLOCK_TRAILER};
use super::bloom::{hash, Bloom};
use super::footer::{Extent, Footer, BAND_VERSION, FOOTER_LEN};
use super::histogram::Histogram;
use super::index::BlockIndex;
use super::reader::Band;
use crate::error::Result;
use crate::io::{Dev, IoKind};
use crate::manifest::BandMeta;
use crate::memtable::EntryRef;

/// Format parameters of a band writer.
#[derive(Debug, Clone, Copy)]
pub struct WriterConfig {
    /// Target data block size.
    pub block_size: usize,
    /// Keep data blocks that fit in `block_size` (rounded up to whole sectors) inside whole
    /// sectors: a block is ended before an entry would carry it past that, and the next
    /// starts at a sector boundary (zeros between). See [`crate::Options::block_align`].
    pub block_align: bool,
    /// Bloom bits per key.
    pub bloom_bits_per_key: u32,
    /// Size budget of the histogram in bytes.
    pub histogram_bytes: usize,
    /// Bytes per device write.
    pub write_chunk_bytes: usize,
}

/// Builds a band in `zone`.
pub struct BandWriter<'a> {
    dev: &'a Dev,
    zone: u32,
    kind: IoKind,
    cfg: WriterConfig,
    pending: Vec<u8>,
    written_sectors: u64,
    offset: u64,
    block: BlockBuilder,
    /// Sequence number of the open block's last entry.
    block_last_seq: u64,
    /// First user key of the block being built.
    block_first_key: Vec<u8>,
    index: Vec<IndexEntry>,
    index_bytes: u64,
    hashes: Vec<u32>,
    /// Last user key added (buffer reused; meaningful once `entries > 0`).
    last_user_key: Vec<u8>,
    entries: u64,
    min_seq: u64,
    max_seq: u64,
    smallest: Vec<u8>,
    capacity: u64,
}

impl<'a> BandWriter<'a> {
    /// A writer into the (empty) zone `zone`.
    pub fn new(dev: &'a Dev, zone: u32, kind: IoKind, cfg: WriterConfig) -> Self {
        BandWriter {
            dev,
            zone,
            kind,
            cfg,
            pending: Vec::with_capacity(cfg.write_chunk_bytes + cfg.block_size * 2),
            written_sectors: 0,
            offset: 0,
            block: BlockBuilder::default(),
            block_last_seq: 0,
            block_first_key: Vec::new(),
            index: Vec::new(),
            index_bytes: 0,
            hashes: Vec::new(),
            last_user_key: Vec::new(),
            entries: 0,
            min_seq: u64::MAX,
            max_seq: 0,
            smallest: Vec::new(),
            capacity: dev.zone_bytes(),
        }
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Whether `e` can still be added without the band outgrowing its zone.
    pub fn fits<'e>(&self, e: impl Into<EntryRef<'e>>) -> bool {
        let e = e.into();
        let n = (self.hashes.len() + 1) as u64;
        let est = self.offset
            + self.block.len() as u64
            + e.encoded_len() as u64
            + 16
            + 2 * (self.index_bytes + e.key.len() as u64 + 32)
            + n * self.cfg.bloom_bits_per_key as u64 / 8
            + 64
            + FOOTER_LEN as u64
            + 2 * self.dev.ss;
        est <= self.capacity
    }

    /// Adds an entry (in internal key order).
    pub fn add<'e>(&mut self, e: impl Into<EntryRef<'e>>) -> Result<()> {
        let e = e.into();
        if self.block_full(e) {
            self.finish_block()?;
        }
        if self.entries == 0 {
            self.smallest = e.key.to_vec();
        }
        if self.entries == 0 || self.last_user_key != e.key {
            self.hashes.push(hash(e.key));
            self.last_user_key.clear();
            self.last_user_key.extend_from_slice(e.key);
        }
        if self.block.is_empty() {
            self.block_first_key.clear();
            self.block_first_key.extend_from_slice(e.key);
        }
        self.block.add(e);
        self.block_last_seq = e.seq;
        self.entries += 1;
        self.min_seq = self.min_seq.min(e.seq);
        self.max_seq = self.max_seq.max(e.seq);
        Ok(())
    }

    /// Bytes of an aligned block: `block_size` rounded up to whole sectors.
    fn aligned_unit(&self) -> usize {
        let ss = self.dev.ss as usize;
        self.cfg.block_size.max(1).div_ceil(ss) * ss
    }

    /// Whether the block being built ends before `e`.
    fn block_full(&self, e: EntryRef<'_>) -> bool {
        if self.block.is_empty() {
            return false;
        }
        if !self.cfg.block_align {
            return self.block.len() >= self.cfg.block_size;
        }
        self.block.len() + BlockBuilder::entry_len(e) + BLOCK_TRAILER > self.aligned_unit()
    }

    fn finish_block(&mut self) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let enc = self.block.finish();
        // The block's last user key is the last user key added.
        let last_key = self.last_user_key.clone();
        let first_key = self.block_first_key.clone();
        let last_seq = self.block_last_seq;
        self.index_bytes += (first_key.len() + last_key.len()) as u64 + 24;
        self.index.push(IndexEntry {
            first_key,
            last_key,
            last_seq,
            offset: self.offset,
            len: enc.len() as u32,
        });
        self.append(&enc)?;
        // A block that fits its unit is followed by zeros to the sector boundary, so the next
        // starts on one; a larger block (one entry bigger than the unit) is not padded: the
        // padding would cost up to a sector per entry and save no read.
        let ss = self.dev.ss;
        let tail = self.offset % ss;
        if self.cfg.block_align && tail != 0 && enc.len() <= self.aligned_unit() {
            let pad = vec![0u8; (ss - tail) as usize];
            self.append(&pad)?;
        }
        Ok(())
    }

    fn append(&mut self, b: &[u8]) -> Result<()> {
        self.pending.extend_from_slice(b);
        self.offset += b.len() as u64;
        if self.pending.len() >= self.cfg.write_chunk_bytes {
            let n = self.pending.len() / self.dev.ss as usize * self.dev.ss as usize;
            let rest = self.pending.split_off(n);
            let chunk = std::mem::replace(&mut self.pending, rest);
            self.dev
                .write_at(self.zone, self.written_sectors, &chunk, self.kind)?;
            self.written_sectors += (n as u64) / self.dev.ss;
        }
        Ok(())
    }

    /// Writes index, filter, histogram and footer; returns the open band.
    pub fn finish(mut self, id: u64, level: u8, write_time: u64) -> Result<Band> {
        self.finish_block()?;
        let index_enc = encode_index(&self.index);
        let index = Extent {
            offset: self.offset,
            len: index_enc.len() as u32,
        };
        self.append(&index_enc)?;
        let bloom = Bloom::build(&self.hashes, self.cfg.bloom_bits_per_key);
        let bloom_enc = bloom.encode();
        let bloom_ex = Extent {
            offset: self.offset,
            len: bloom_enc.len() as u32,
        };
        self.append(&bloom_enc)?;
        let hist = Histogram::sized(&self.smallest, &self.index, self.cfg.histogram_bytes);
        let hist_enc = hist.encode();
        let hist_ex = Extent {
            offset: self.offset,
            len: hist_enc.len() as u32,
        };
        self.append(&hist_enc)?;
        let data_bytes = index.offset;
        let footer = Footer {
            version: BAND_VERSION,
            band_id: id,
            index,
            bloom: bloom_ex,
            histogram: hist_ex,
            entries: self.entries,
            data_bytes,
            min_seq: self.min_seq,
            max_seq: self.max_seq,
        };
        let ss = self.dev.ss;
        let total = (self.offset + FOOTER_LEN as u64).div_ceil(ss) * ss;
        let pad = vec![0u8; (total - self.offset - FOOTER_LEN as u64) as usize];
        self.append(&pad)?;
        self.append(&footer.encode())?;
        if !self.pending.is_empty() {
            let chunk = std::mem::take(&mut self.pending);
            self.dev
                .write_at(self.zone, self.written_sectors, &chunk, self.kind)?;
            self.written_sectors += chunk.len() as u64 / ss;
        }
        self.dev.finish_band(self.zone, self.written_sectors)?;
        let largest = self
            .index
            .last()
            .map(|e| e.last_key.clone())
            .unwrap_or_default();
        let index = BlockIndex::new(&self.index, true);
        let meta = BandMeta {
            id,
            zone: self.zone,
            level,
            sectors: self.written_sectors,
            smallest: self.smallest,
            largest,
            min_seq: if self.entries == 0 { 0 } else { self.min_seq },
            max_seq: self.max_seq,
            entries: self.entries,
            data_bytes,
            write_time,
        };
        Ok(Band {
            meta,
            footer,
            index,
            bloom,
            hist,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::test_util::{test_dev, write_band_aligned};
    use crate::cache::BlockCache;
    use crate::memtable::Entry;

    /// Aligned, every block of small entries lies inside one sector and starts on a sector
    /// boundary (unaligned, 4 KiB blocks cross one); a block of one entry larger than a
    /// sector is not padded; either way every entry reads back.
    #[test]
    fn aligned_blocks_lie_inside_one_sector_and_every_entry_reads_back() {
        let dev = test_dev();
        let conv = dev.dev.info().conventional_zones;
        let mut zone = conv;
        for vlen in [100usize, 37, 5000] {
            let entries: Vec<Entry> = (0..3000u64)
                .map(|i| Entry {
                    key: format!("key{i:07}").into_bytes(),
                    seq: 10_000 - i,
                    value: Some(vec![(i % 251) as u8; vlen + (i as usize % 13)]),
                })
                .take(if vlen > 4096 { 300 } else { 3000 })
                .collect();
            let mut spans = Vec::new();
            for align in [true, false] {
                let band = write_band_aligned(&dev, zone, zone as u64, &entries, align);
                zone += 1;
                let ss = dev.ss;
                let mut crossing = 0;
                for i in 0..band.index.len() {
                    let (off, len) = band.index.extent(i).unwrap();
                    let (first, last) = (off / ss, (off + len as u64 - 1) / ss);
                    if first != last {
                        crossing += 1;
                    }
                    if align && len as u64 <= ss {
                        assert_eq!(off % ss, 0, "vlen {vlen}: block {i} at {off}");
                    }
                }
                spans.push((crossing, band.index.len()));
                let cache = BlockCache::new(64 << 10);
                for e in &entries {
                    let got = band.get(&dev, &cache, &e.key, u64::MAX, true).unwrap();
                    assert_eq!(got, Some((e.seq, e.value.clone())), "align {align}");
                }
            }
            let ((aligned_crossing, aligned_blocks), (plain_crossing, _)) = (spans[0], spans[1]);
            if vlen < 4096 {
                assert_eq!(aligned_crossing, 0, "vlen {vlen}");
                assert!(
                    plain_crossing > aligned_blocks / 2,
                    "vlen {vlen}: {spans:?}"
                );
            } else {
                assert_eq!(
                    aligned_crossing, aligned_blocks,
                    "one entry per block, unpadded"
                );
            }
        }
    }
}
