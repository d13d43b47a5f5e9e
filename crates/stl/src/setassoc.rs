//! Cassuto et al.'s set-associative translation layer (Skylight's Emulated-SMR-1 and -2): the
//! persistent cache is `n` cache bands; a block of data band `a` is logged to the next free
//! block of cache band `a mod n`; when a cache band fills, every data band with blocks in it is
//! read-modify-written back to its static native location (lazy cleaning). The cache is on the
//! shingled disk or on flash.

use crate::config::{CacheMedia, Cleaning, DmConfig};
use crate::durable::{Durable, Replay};
use crate::error::{Result, StlError};
use crate::extmap::ExtentMap;
use crate::layer::{read_across, salvage_read, write_across, Flash, Layer, WriteReq};
use crate::layout::Layout;
use crate::stats::StlStats;
use std::collections::BTreeSet;
use tegula_device::media::Media;
use tegula_device::Nanos;

/// Durable state: block map, cache band write pointers, which data bands each cache band holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct SState {
    map: ExtentMap,
    wp: Vec<u64>,
    bands_in: Vec<BTreeSet<usize>>,
    staged: Option<usize>,
}

/// Committed metadata (the cache blocks' headers and the band rewrite records).
#[derive(Debug, Clone)]
pub(crate) enum SRec {
    /// Logical `[lba, lba + n)` of data band `band` is at cache address `addr` of cache band `c`.
    Put {
        c: usize,
        band: usize,
        lba: u64,
        n: u64,
        addr: u64,
    },
    /// The merged image of data band `band` is in the staging area.
    Staged { band: usize },
    /// Logical `[lo, hi)` is current at its native location.
    Native {
        band: Option<usize>,
        lo: u64,
        hi: u64,
    },
    /// Cache band `c` is empty again.
    Reset { c: usize },
}

impl Replay for SState {
    type Rec = SRec;
    fn apply(&mut self, r: &SRec) {
        match r {
            SRec::Put {
                c,
                band,
                lba,
                n,
                addr,
            } => {
                self.map.insert(*lba, *n, *addr);
                self.wp[*c] += n;
                self.bands_in[*c].insert(*band);
            }
            SRec::Staged { band } => self.staged = Some(*band),
            SRec::Native { band, lo, hi } => {
                self.map.remove(*lo, hi - lo);
                if band.is_some() && *band == self.staged {
                    self.staged = None;
                }
            }
            SRec::Reset { c } => {
                self.wp[*c] = 0;
                self.bands_in[*c].clear();
            }
        }
    }
}

/// The set-associative layer.
pub(crate) struct SetAssociative {
    cfg: DmConfig,
    layout: Layout,
    /// Start address and capacity of each cache band (physical LBA, or flash sector).
    cbands: Vec<(u64, u64)>,
    flash: Option<Flash>,
    flash_staging: u64,
    d: Durable<SState>,
    stats: StlStats,
    ss: u64,
}

impl SetAssociative {
    /// A set-associative layer over `layout`.
    pub fn new(cfg: &DmConfig, layout: Layout) -> Result<Self> {
        let ss = layout.sector;
        let band = layout.max_band().max(1);
        let (cbands, flash): (Vec<(u64, u64)>, Option<Flash>) = match cfg.cache_media {
            CacheMedia::Disk => (
                layout
                    .cache
                    .iter()
                    .map(|&b| (layout.bands[b].start, layout.bands[b].len))
                    .collect(),
                None,
            ),
            CacheMedia::Flash => {
                let n = (cfg.cache_size / ss / band).max(1);
                (
                    (0..n).map(|i| (i * band, band)).collect(),
                    Some(Flash::new(
                        cfg.store_data,
                        cfg.flash_latency_us,
                        cfg.flash_mb_s,
                    )),
                )
            }
        };
        if cbands.is_empty() {
            return Err(StlError::Config("the cache holds no cache band".into()));
        }
        let n = cbands.len();
        let flash_staging = cbands.iter().map(|c| c.0 + c.1).max().unwrap_or(0);
        let total: u64 = cbands.iter().map(|c| c.1).sum();
        let st = SState {
            wp: vec![0; n],
            bands_in: vec![BTreeSet::new(); n],
            ..Default::default()
        };
        Ok(SetAssociative {
            cfg: cfg.clone(),
            stats: StlStats {
                stl: "set-associative".into(),
                cache_bytes: total * ss,
                map_entries_max: total,
                ..Default::default()
            },
            layout,
            cbands,
            flash,
            flash_staging,
            d: Durable::new(st),
            ss,
        })
    }

    fn cache_read(&mut self, m: &mut Media, addr: u64, buf: &mut [u8]) -> Result<()> {
        match &mut self.flash {
            Some(f) => f.read(m, addr * self.ss, buf),
            None => m.read(addr, buf).map(|_| ()).map_err(Into::into),
        }
    }

    fn cache_write(&mut self, m: &mut Media, addr: u64, data: &[u8]) -> Result<()> {
        match &mut self.flash {
            Some(f) => f.write(m, addr * self.ss, data),
            None => m.write(addr, data, true).map(|_| ()).map_err(Into::into),
        }
    }

    fn stage(&mut self, m: &mut Media, img: &[u8]) -> Result<()> {
        match &mut self.flash {
            Some(f) => f.write(m, self.flash_staging * self.ss, img),
            None => write_across(m, &self.layout, &self.layout.staging, img).map(|_| ()),
        }
    }

    fn unstage(&mut self, m: &mut Media, img: &mut [u8]) -> Result<()> {
        match &mut self.flash {
            Some(f) => f.read(m, self.flash_staging * self.ss, img),
            None => read_across(m, &self.layout, &self.layout.staging, img),
        }
    }

    /// Read-modify-write of data band `band` with its cached blocks, staged first.
    fn rmw(&mut self, m: &mut Media, band: usize) -> Result<()> {
        let ss = self.ss;
        let (lo, hi) = self.layout.logical_range(band);
        let native = self.layout.bands[self.layout.data[band]].start;
        let mut img = vec![0u8; ((hi - lo) * ss) as usize];
        self.stats.salvaged_sectors += salvage_read(m, native, &mut img)?;
        self.stats.cleaning_bytes_read += img.len() as u64;
        for p in self.d.live.map.pieces_in(lo, hi - lo) {
            let o = ((p.lba - lo) * ss) as usize;
            let k = (p.len * ss) as usize;
            self.cache_read(m, p.pos, &mut img[o..o + k])?;
            self.stats.cleaning_bytes_read += k as u64;
        }
        self.stage(m, &img)?;
        self.d.commit(SRec::Staged { band });
        m.write(native, &img, true)?;
        self.d.commit(SRec::Native {
            band: Some(band),
            lo,
            hi,
        });
        self.stats.cleaning_bytes_written += 2 * img.len() as u64;
        self.stats.bands_cleaned += 1;
        Ok(())
    }

    /// Cleans cache band `c`: every data band with blocks in it goes home.
    fn clean(&mut self, m: &mut Media, c: usize) -> Result<()> {
        let t0 = m.now();
        let bands: Vec<usize> = self.d.live.bands_in[c].iter().copied().collect();
        for b in bands {
            self.rmw(m, b)?;
        }
        self.d.commit(SRec::Reset { c });
        self.stats.cleaning_runs += 1;
        self.stats.cleaning_ns += m.now() - t0;
        if self.d.pending() > 20_000 {
            self.d.checkpoint();
        }
        Ok(())
    }

    fn put(&mut self, m: &mut Media, lba: u64, data: &[u8]) -> Result<()> {
        let n = data.len() as u64 / self.ss;
        let band = self.layout.band_of(lba);
        let c = band % self.cbands.len();
        let (start, cap) = self.cbands[c];
        if n > cap {
            // Larger than a cache band: clean, then write the band home directly.
            self.clean(m, c)?;
            let native = self.layout.native(lba);
            let (lo, hi) = self.layout.logical_range(band);
            let ss = self.ss as usize;
            let mut img = vec![0u8; (hi - lo) as usize * ss];
            salvage_read(m, self.layout.native(lo), &mut img)?;
            let o = (lba - lo) as usize * ss;
            img[o..o + data.len()].copy_from_slice(data);
            let _ = native;
            self.stage(m, &img)?;
            self.d.commit(SRec::Staged { band });
            m.write(self.layout.native(lo), &img, true)?;
            self.d.commit(SRec::Native {
                band: Some(band),
                lo,
                hi,
            });
            return Ok(());
        }
        if self.d.live.wp[c] + n > cap {
            self.clean(m, c)?;
        }
        let addr = start + self.d.live.wp[c];
        self.cache_write(m, addr, data)?;
        self.d.commit(SRec::Put {
            c,
            band,
            lba,
            n,
            addr,
        });
        self.stats.journal_entries += 1;
        Ok(())
    }

    fn read_native(&mut self, m: &mut Media, lba: u64, buf: &mut [u8]) -> Result<()> {
        let ss = self.ss as usize;
        let mut cur = lba;
        let mut off = 0usize;
        while off < buf.len() {
            let b = self.layout.band_of(cur);
            let (_, hi) = self.layout.logical_range(b);
            let n = ((buf.len() - off) / ss).min((hi - cur) as usize);
            m.read(self.layout.native(cur), &mut buf[off..off + n * ss])?;
            off += n * ss;
            cur += n as u64;
        }
        Ok(())
    }
}

impl Layer for SetAssociative {
    fn read(&mut self, m: &mut Media, lba: u64, buf: &mut [u8]) -> Result<()> {
        let ss = self.ss;
        let n = buf.len() as u64 / ss;
        for (l, k, pos) in self.d.live.map.lookup(lba, n) {
            let (a, b) = (((l - lba) * ss) as usize, ((l - lba + k) * ss) as usize);
            match pos {
                Some(p) => self.cache_read(m, p, &mut buf[a..b])?,
                None => self.read_native(m, l, &mut buf[a..b])?,
            }
        }
        Ok(())
    }

    fn write(&mut self, m: &mut Media, batch: &[WriteReq<'_>]) -> Result<Vec<Nanos>> {
        let ss = self.ss;
        let mut done = Vec::with_capacity(batch.len());
        for r in batch {
            let n = r.data.len() as u64 / ss;
            let mut cur = r.lba;
            while cur < r.lba + n {
                let (_, hi) = self.layout.logical_range(self.layout.band_of(cur));
                let e = hi.min(r.lba + n);
                let (a, b) = (((cur - r.lba) * ss) as usize, ((e - r.lba) * ss) as usize);
                self.put(m, cur, &r.data[a..b])?;
                cur = e;
            }
            done.push(m.now());
        }
        Ok(done)
    }

    fn discard(&mut self, _m: &mut Media, _lba: u64, _n: u64) -> Result<()> {
        // Cached blocks stay until their cache band is cleaned: the set-associative map has no
        // cheap way to drop a block from the middle of a cache band.
        Ok(())
    }

    fn background(&mut self, m: &mut Media, last_io: Nanos, until: Nanos) -> Result<()> {
        if self.cfg.cleaning == Cleaning::Lazy {
            return Ok(());
        }
        let start = last_io + self.cfg.idle_before_cleaning;
        if until <= start {
            return Ok(());
        }
        if m.now() < start {
            m.idle(start - m.now());
        }
        while m.now() < until {
            let Some(c) = (0..self.cbands.len())
                .filter(|&c| self.d.live.wp[c] > 0)
                .max_by_key(|&c| self.d.live.wp[c])
            else {
                break;
            };
            self.clean(m, c)?;
        }
        Ok(())
    }

    fn recover(&mut self, m: &mut Media) -> Result<()> {
        let n = self.d.recover();
        self.stats.recoveries += 1;
        self.stats.replayed_records = n as u64;
        if let Some(band) = self.d.live.staged {
            let (lo, hi) = self.layout.logical_range(band);
            let mut img = vec![0u8; ((hi - lo) * self.ss) as usize];
            self.unstage(m, &mut img)?;
            m.write(self.layout.native(lo), &img, true)?;
            self.d.commit(SRec::Native {
                band: Some(band),
                lo,
                hi,
            });
        }
        Ok(())
    }

    fn stats(&self) -> StlStats {
        let st = &self.d.live;
        let mut s = self.stats.clone();
        s.cache_used_bytes = st.wp.iter().sum::<u64>() * self.ss;
        s.cache_live_bytes = st.map.sectors() * self.ss;
        s.journal_entries_live = st.wp.iter().filter(|&&w| w > 0).count() as u64;
        s.map_entries = st.map.len() as u64;
        s
    }
}
