//! Reading a compaction's inputs: each input band is read from its first block to its last in
//! large sequential windows, whose memory the compaction's inputs share under one budget.
//!
//! A compaction merges several bands at once, so its reads alternate between them, and on a
//! disk every switch from one band to another costs a seek and, on average, half a
//! revolution. Reading each input in windows of `Options::compaction_read_ahead_bytes`
//! (when set, e.g. 8 MiB: about four tracks of a 2 MiB-track drive; 0, the default, reads
//! inputs with the scans' [`crate::band::BandIter`]) makes the positioning a small
//! share of each read, as RocksDB's `compaction_readahead_size` does for disks. The scans'
//! doubling read-ahead (32 KiB up to `read_ahead_bytes`) suits a scan that may stop early; a
//! compaction reads every input to its end, so from the first read on it asks for full
//! windows.
//!
//! Memory: the windows of one compaction are charged to a [`ReadAheadPool`] of
//! `Options::compaction_read_ahead_budget` bytes (default 64 MiB). An input asking for its
//! next window gets the full window while the pool has room, else what is left, but never less
//! than the pool's floor (`read_ahead_bytes`) nor less than the block it needs. A window ends
//! at a block boundary (no block is read twice, none is split between windows), and the input
//! keeps charged only the bytes it read. A window is returned to the pool before the next one
//! is read, and when the input ends or is dropped. So the windows held at once total at most
//! the budget plus, for the inputs that asked once it was spent, one floor-sized window (or
//! one block, if larger) each (see [`ReadAheadPool::bound`]); when the budget holds a full
//! window (or block) for every input, every input gets its full window.

use crate::band::block::decode_block;
use crate::band::Band;
use crate::error::{Error, Result};
use crate::io::{Dev, IoKind};
use crate::iter::Source;
use crate::memtable::Entry;
use parking_lot::Mutex;
use std::sync::Arc;

/// The read-ahead memory one compaction's inputs share.
#[derive(Debug)]
pub struct ReadAheadPool {
    window: u64,
    budget: u64,
    floor: u64,
    /// Bytes charged now, and the most ever charged at once.
    held: Mutex<(u64, u64)>,
}

impl ReadAheadPool {
    /// A pool handing out windows of `window` bytes out of `budget`, never fewer than `floor`
    /// (capped at `window`) to an input that asks.
    pub fn new(window: u64, budget: u64, floor: u64) -> Arc<Self> {
        let window = window.max(1);
        Arc::new(ReadAheadPool {
            window,
            budget,
            floor: floor.clamp(1, window),
            held: Mutex::new((0, 0)),
        })
    }

    /// The window an input asks for.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Charges a window of up to `want` bytes: all of it while the budget has room, else
    /// what is left but at least the floor; never less than `need` (the block the input must
    /// read). Returns the bytes charged.
    pub fn take(&self, want: u64, need: u64) -> u64 {
        let mut g = self.held.lock();
        let room = self.budget.saturating_sub(g.0).max(self.floor);
        let n = want.min(room).max(need);
        g.0 += n;
        g.1 = g.1.max(g.0);
        n
    }

    /// Returns `n` charged bytes.
    pub fn release(&self, n: u64) {
        let mut g = self.held.lock();
        g.0 = g.0.saturating_sub(n);
    }

    /// Bytes charged now.
    pub fn held(&self) -> u64 {
        self.held.lock().0
    }

    /// The most bytes ever charged at once.
    pub fn peak(&self) -> u64 {
        self.held.lock().1
    }

    /// The most bytes `inputs` inputs reading at once can hold, whose blocks are at most
    /// `max_block` bytes: the budget plus a floor-sized window (or a block, if larger) per
    /// input. (A charge granted while the budget had room for more than that fits in what
    /// was left of the budget, so such charges held at once total at most the budget; every
    /// other charge is at most a floor-sized window or a block.)
    pub fn bound(&self, inputs: usize, max_block: u64) -> u64 {
        self.budget + inputs as u64 * self.floor.max(max_block)
    }
}

/// Entries of one input band, read from its start in windows charged to a [`ReadAheadPool`].
pub struct InputIter {
    band: Arc<Band>,
    dev: Arc<Dev>,
    pool: Arc<ReadAheadPool>,
    verify: bool,
    next_block: usize,
    window_off: u64,
    window: Vec<u8>,
    /// Bytes of the pool this input holds.
    charged: u64,
    cur: std::vec::IntoIter<Entry>,
}

impl std::fmt::Debug for InputIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputIter")
            .field("band", &self.band.meta.id)
            .field("next_block", &self.next_block)
            .field("charged", &self.charged)
            .finish()
    }
}

impl InputIter {
    /// An iterator over every entry of `band`; reads nothing until the first entry is asked
    /// for.
    pub fn new(band: Arc<Band>, dev: Arc<Dev>, pool: Arc<ReadAheadPool>, verify: bool) -> Self {
        InputIter {
            band,
            dev,
            pool,
            verify,
            next_block: 0,
            window_off: 0,
            window: Vec::new(),
            charged: 0,
            cur: Vec::new().into_iter(),
        }
    }

    /// Gives the window back to the pool (and its memory back to the allocator).
    fn drop_window(&mut self) {
        self.pool.release(self.charged);
        self.charged = 0;
        self.window = Vec::new();
    }

    /// Reads the next window: from block `first` through the last whole block that fits in
    /// the bytes the pool grants (at least block `first`).
    fn read_window(&mut self, first: usize, offset: u64, blen: u64) -> Result<()> {
        self.drop_window();
        let data_end = self.band.footer.index.offset;
        let want = self
            .pool
            .window()
            .min(data_end.saturating_sub(offset))
            .max(blen);
        let grant = self.pool.take(want, blen);
        self.charged = grant;
        // End at a block boundary, so that no block is read twice (a gap between blocks,
        // which the writer leaves none of, is read through).
        let mut end = offset + blen;
        let mut i = first + 1;
        while let Some((o, l)) = self.band.index.extent(i) {
            let e = o + l as u64;
            if o < end || e > offset + grant {
                break;
            }
            end = e;
            i += 1;
        }
        // Keep charged only what the window holds: the grant less the part of a block
        // that did not fit.
        let len = end - offset;
        self.pool.release(grant - len);
        self.charged = len;
        self.window = self.dev.read_at(
            self.band.meta.zone,
            offset,
            len as usize,
            IoKind::Compaction,
        )?;
        self.window_off = offset;
        Ok(())
    }

    fn load_next(&mut self) -> Result<bool> {
        let Some((offset, blen)) = self.band.index.extent(self.next_block) else {
            self.drop_window();
            return Ok(false);
        };
        let blen = blen as u64;
        let end = offset + blen;
        let in_window =
            offset >= self.window_off && end <= self.window_off + self.window.len() as u64;
        if !in_window {
            self.read_window(self.next_block, offset, blen)?;
        }
        let a = (offset - self.window_off) as usize;
        let buf = self
            .window
            .get(a..a + blen as usize)
            .ok_or_else(|| Error::corruption(self.band.meta.zone, offset, "short block read"))?;
        let entries = decode_block(buf, self.verify)
            .map_err(|w| Error::malformed(self.band.meta.zone, offset, w.within("data block")))?;
        self.cur = entries.into_iter();
        self.next_block += 1;
        Ok(true)
    }
}

impl Drop for InputIter {
    fn drop(&mut self) {
        self.pool.release(self.charged);
    }
}

impl Source for InputIter {
    fn next_entry(&mut self) -> Result<Option<Entry>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::band::test_util::write_band;
    use crate::band::BandIter;
    use crate::iter::Merge;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::sync::atomic::Ordering::Relaxed;
    use tegula_device::{profile, BlockDevice, Disk, ZonedDevice};

    fn test_dev() -> (Arc<Disk>, Arc<Dev>) {
        let mut cfg = profile("hm-smr").unwrap();
        cfg.zones.zone_size = 4 << 20;
        cfg.capacity = 64 << 20;
        let disk = Arc::new(Disk::in_memory(cfg).unwrap());
        let z: Arc<dyn ZonedDevice> = disk.clone();
        (disk, Arc::new(Dev::new(z)))
    }

    /// Writes `n` entries with keys `k{i * step + first}` as band `id` in `zone`.
    fn band(dev: &Arc<Dev>, zone: u32, id: u64, first: u64, step: u64, n: u64) -> Arc<Band> {
        let entries: Vec<Entry> = (0..n)
            .map(|i| Entry {
                key: format!("k{:08}", first + i * step).into_bytes(),
                seq: id * 1_000_000 + i,
                value: Some(vec![(i % 251) as u8; 900]),
            })
            .collect();
        write_band(dev, zone, id, &entries)
    }

    /// The pool charges full windows while it has room, then what is left but at least the
    /// floor or the block needed, and gets every byte back.
    #[test]
    fn pool_charges_within_budget_and_floor() {
        let p = ReadAheadPool::new(8 << 20, 20 << 20, 1 << 20);
        assert_eq!(p.take(8 << 20, 4096), 8 << 20);
        assert_eq!(p.take(8 << 20, 4096), 8 << 20);
        assert_eq!(p.take(8 << 20, 4096), 4 << 20, "what is left of the budget");
        assert_eq!(p.take(8 << 20, 4096), 1 << 20, "the floor");
        assert_eq!(p.take(8 << 20, 3 << 20), 3 << 20, "the block needed");
        assert_eq!(p.take(100, 10), 100, "a short band's tail");
        assert_eq!(p.held(), (24 << 20) + 100);
        assert!(p.peak() <= p.bound(6, 3 << 20));
        p.release(p.held());
        assert_eq!(p.held(), 0);
        // A floor above the window is capped at the window.
        let q = ReadAheadPool::new(1 << 20, 0, 8 << 20);
        assert_eq!(q.take(4 << 20, 4096), 1 << 20);
    }

    /// Merging interleaved bands reads each in windows of the configured size (one device
    /// read per window, none re-reading a block), returns every entry in order, keeps the
    /// windows held at once within the pool's bound, and returns every charge at the end.
    #[test]
    fn inputs_are_read_in_windows_of_the_configured_size() {
        let (disk, dev) = test_dev();
        let conv = dev.dev.info().conventional_zones;
        // Four bands of fully interleaved keys (every compaction step alternates between
        // them), about 3.6 MiB each.
        let bands: Vec<Arc<Band>> = (0..4u64)
            .map(|b| band(&dev, conv + b as u32, b + 1, b, 4, 4000))
            .collect();
        let data: u64 = bands.iter().map(|b| b.footer.index.offset).sum();
        for (window, budget) in [(1u64 << 20, 64u64 << 20), (512 << 10, 1 << 20)] {
            let pool = ReadAheadPool::new(window, budget, 256 << 10);
            let sources: Vec<Box<dyn Source>> = bands
                .iter()
                .map(|b| {
                    Box::new(InputIter::new(b.clone(), dev.clone(), pool.clone(), true))
                        as Box<dyn Source>
                })
                .collect();
            let (reads0, bytes0) = (
                disk.stats().reads,
                dev.counters
                    .compaction_read
                    .load(std::sync::atomic::Ordering::Relaxed),
            );
            let mut m = Merge::new(sources).unwrap();
            let mut n = 0u64;
            let mut last: Option<Vec<u8>> = None;
            while let Some(e) = m.next_entry().unwrap() {
                assert!(last.as_ref().is_none_or(|l| *l < e.key), "in order");
                last = Some(e.key);
                n += 1;
            }
            assert_eq!(n, 16_000);
            drop(m);
            let reads = disk.stats().reads - reads0;
            let bytes = dev
                .counters
                .compaction_read
                .load(std::sync::atomic::Ordering::Relaxed)
                - bytes0;
            // Each window ends at a block boundary: at most a block short of the window,
            // plus a sector of alignment at each end.
            assert!(
                bytes <= data + reads * 2 * dev.ss,
                "no block read twice: {bytes} of {data}"
            );
            let granted = window.min(budget / 4);
            let per_band: u64 = bands
                .iter()
                .map(|b| b.footer.index.offset.div_ceil(granted - 8192))
                .sum();
            assert!(
                reads <= per_band,
                "window {window}, budget {budget}: {reads} reads, at most {per_band}"
            );
            assert!(reads >= data / (window + 2 * dev.ss), "{reads} reads");
            assert!(pool.peak() <= pool.bound(4, 8192), "{}", pool.peak());
            assert_eq!(pool.held(), 0, "every window given back");
        }
    }

    /// Entries of varied sizes: two versions of some keys, tombstones, and every 13th value
    /// of 10,000 bytes (a block of its own, larger than the 4 KiB block size).
    fn varied_entries(n: u64) -> Vec<Entry> {
        let mut out = Vec::new();
        for i in 0..n {
            let key = format!("key{:06}", i * 3).into_bytes();
            let versions: &[u64] = if i % 5 == 0 { &[900, 40] } else { &[500] };
            for &v in versions {
                let len = if i % 13 == 0 {
                    10_000
                } else {
                    (i * 37 % 1500) as usize
                };
                out.push(Entry {
                    key: key.clone(),
                    seq: v * 10_000 + i,
                    value: (i % 11 != 3).then(|| vec![(i % 251) as u8; len]),
                });
            }
        }
        out
    }

    /// Every entry of `band`, read by the scans' [`BandIter`].
    fn band_iter_entries(band: &Arc<Band>, dev: &Arc<Dev>) -> Vec<Entry> {
        let mut it =
            BandIter::new(band.clone(), dev.clone(), &[], IoKind::Read, 1 << 20, true).unwrap();
        let mut out = Vec::new();
        while let Some(e) = it.next_entry().unwrap() {
            out.push(e);
        }
        out
    }

    /// The largest block of `band`.
    fn max_block(band: &Band) -> u64 {
        (0..band.index.len())
            .filter_map(|i| band.index.extent(i))
            .map(|(_, l)| l as u64)
            .max()
            .unwrap_or(0)
    }

    /// Inputs taking and giving back windows in any order: the pool's charge is the sum of
    /// what the inputs hold, never above [`ReadAheadPool::bound`]; a pool whose budget holds
    /// a full window per input grants every request in full; all is back at the end.
    #[test]
    fn pool_accounting_under_random_takes() {
        let mut rng = SmallRng::seed_from_u64(7);
        for case in 0..200 {
            let inputs = rng.gen_range(1..12usize);
            let window = rng.gen_range(1..(16u64 << 20));
            let max_block = rng.gen_range(1..(64u64 << 10));
            // Room for every input's largest charge (a window or a block), or any budget.
            let roomy = window.max(max_block) * inputs as u64;
            let budget = if case % 4 == 0 {
                roomy
            } else {
                rng.gen_range(0..(96u64 << 20))
            };
            let floor = rng.gen_range(0..(2u64 << 20));
            let pool = ReadAheadPool::new(window, budget, floor);
            let bound = pool.bound(inputs, max_block);
            let mut held = vec![0u64; inputs];
            for _ in 0..500 {
                let i = rng.gen_range(0..inputs);
                pool.release(held[i]);
                held[i] = 0;
                if rng.gen_bool(0.1) {
                    continue; // the input ended
                }
                let need = rng.gen_range(1..=max_block);
                let want = window.min(rng.gen_range(1..(32u64 << 20))).max(need);
                let got = pool.take(want, need);
                assert!(got >= need && got <= want.max(need), "case {case}: {got}");
                if budget >= roomy {
                    assert_eq!(got, want, "case {case}: room for every input's window");
                }
                // The input keeps what its whole blocks fill.
                let keep = rng.gen_range(need..=got);
                pool.release(got - keep);
                held[i] = keep;
                assert_eq!(pool.held(), held.iter().sum::<u64>(), "case {case}");
                assert!(
                    pool.held() <= bound,
                    "case {case}: {} > {bound}",
                    pool.held()
                );
            }
            for h in held {
                pool.release(h);
            }
            assert_eq!(pool.held(), 0);
            assert!(pool.peak() <= bound);
        }
    }

    /// An input yields exactly the entries the scans' iterator yields, in the same order,
    /// whatever the window: smaller than a block (one block per read), not a multiple of
    /// the block size (blocks straddle where a window would end), larger than the band; with
    /// the budget to spare and with none (floor-sized windows). Each read ends at a block
    /// boundary, so no byte is read twice; the charge never exceeds one window (or block)
    /// and is all back when the input ends or is dropped half-way.
    #[test]
    fn input_yields_what_band_iter_yields_for_any_window() {
        let (disk, dev) = test_dev();
        let conv = dev.dev.info().conventional_zones;
        let entries = varied_entries(1200);
        let band = write_band(&dev, conv, 9, &entries);
        let want = band_iter_entries(&band, &dev);
        assert_eq!(want, entries);
        let data = band.footer.index.offset;
        let blocks = band.index.len() as u64;
        let big = max_block(&band);
        // The least two neighbouring blocks take: a read of less holds one block.
        let pair = (1..band.index.len())
            .map(|i| {
                let a = band.index.extent(i - 1).unwrap().1;
                let b = band.index.extent(i).unwrap().1;
                (a + b) as u64
            })
            .min()
            .unwrap();
        assert!(big > 10_000 && blocks > 100, "{big} {blocks}");
        for window in [1u64, 512, 4096, 4097, 10_000, 65_536, 1 << 20, 8 << 20] {
            for (budget, floor) in [(64u64 << 20, 1u64 << 20), (0, 1), (0, 4096), (20_000, 3000)] {
                let pool = ReadAheadPool::new(window, budget, floor);
                let most = pool.window().max(pool.floor).max(big);
                let mut it = InputIter::new(band.clone(), dev.clone(), pool.clone(), true);
                let (reads0, bytes0) = (
                    disk.stats().reads,
                    dev.counters.compaction_read.load(Relaxed),
                );
                let mut got = Vec::new();
                while let Some(e) = it.next_entry().unwrap() {
                    got.push(e);
                    assert!(pool.held() <= most, "window {window}: {}", pool.held());
                    assert!(pool.held() <= pool.bound(1, big));
                }
                assert_eq!(got, want, "window {window}, budget {budget}, floor {floor}");
                assert_eq!(pool.held(), 0, "the last window given back at the end");
                assert_eq!(it.next_entry().unwrap(), None);
                let reads = disk.stats().reads - reads0;
                let bytes = dev.counters.compaction_read.load(Relaxed) - bytes0;
                assert!(
                    reads >= 1 && reads <= blocks,
                    "{reads} reads of {blocks} blocks"
                );
                if window >= data && budget >= data {
                    assert_eq!(reads, 1, "the whole band in one read");
                }
                if pool.window().max(pool.floor) < pair {
                    assert_eq!(reads, blocks, "window {window}: one read per block");
                }
                assert!(
                    bytes >= data && bytes <= data + reads * 2 * dev.ss,
                    "{bytes} of {data}"
                );
                drop(it);
                // Dropped half-way.
                let mut it = InputIter::new(band.clone(), dev.clone(), pool.clone(), true);
                for e in want.iter().take(300) {
                    assert_eq!(it.next_entry().unwrap().as_ref(), Some(e));
                }
                assert!(pool.held() > 0);
                drop(it);
                assert_eq!(pool.held(), 0, "window {window}: given back on drop");
            }
        }
    }

    /// A damaged data block is a corruption error naming the band's zone and the block's
    /// offset, after every entry of the blocks before it, whether the block starts a
    /// window or lies inside one; the window is given back.
    #[test]
    fn damaged_block_is_corruption_at_its_zone_and_offset() {
        let (disk, dev) = test_dev();
        let zone = dev.dev.info().conventional_zones + 1;
        let entries = varied_entries(800);
        let band = write_band(&dev, zone, 11, &entries);
        let j = band.index.len() / 2;
        let (off, len) = band.index.extent(j).unwrap();
        let before: usize = (0..j)
            .map(|i| {
                let (o, l) = band.index.extent(i).unwrap();
                let raw = dev.read_at(zone, o, l as usize, IoKind::Read).unwrap();
                decode_block(&raw, true).unwrap().len()
            })
            .sum();
        // One bit of the block's middle byte flipped on the media.
        disk.flush().unwrap();
        let at = off + len as u64 / 2;
        let lba = dev.zone_lba(zone) + at / dev.ss;
        let mut sector = vec![0u8; dev.ss as usize];
        disk.read(lba, &mut sector).unwrap();
        sector[(at % dev.ss) as usize] ^= 0x04;
        disk.with_media(|m| {
            m.write(lba, &sector, true)?;
            m.shingling_mut().clear(lba + 1, 1 << 16);
            Ok::<_, tegula_device::DeviceError>(())
        })
        .unwrap();
        for window in [1u64, 4096, 1 << 20] {
            let pool = ReadAheadPool::new(window, 64 << 20, 1);
            let mut it = InputIter::new(band.clone(), dev.clone(), pool.clone(), true);
            for e in entries.iter().take(before) {
                assert_eq!(it.next_entry().unwrap().as_ref(), Some(e));
            }
            match it.next_entry() {
                Err(
                    Error::Corruption {
                        zone: z, offset, ..
                    }
                    | Error::Malformed {
                        zone: z, offset, ..
                    },
                ) => assert_eq!((z, offset), (zone, off), "window {window}"),
                r => panic!("window {window}: {r:?}"),
            }
            drop(it);
            assert_eq!(pool.held(), 0);
        }
    }
}
