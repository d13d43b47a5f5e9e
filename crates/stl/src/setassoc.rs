//! Cassuto et al.'s set-associative translation layer (Skylight's Emulated-SMR-1 and -2): the
//! persistent cache is `n` cache bands; a block of data band `a` is logged to the next free
//! block of cache band `a mod n`; when a cache band fills, every data band with blocks in it is
//! read-modify-written back to its static native location (lazy cleaning). The cache is on the
//! shingled disk or on flash.

use crate::bands::{read_native, read_pieces, write_by_band};
use crate::config::{CacheMedia, DmConfig};
use crate::durable::{
    dec_count, dec_native, dec_opt, dec_staged, enc_native, enc_opt, Durable, LogOps, Replay, Shape,
};
use crate::error::{Result, StlError};
use crate::extmap::ExtentMap;
use crate::idle::{clean_until, idle_start};
use crate::layer::{
    band_buf, current_stats, live_runs_of, part, rd, read_across, restore_counters, salvage_read,
    wr, write_across, Flash, Layer, LiveRun, WriteReq,
};
use crate::layout::Layout;
use crate::metalog::MetaLog;
use crate::stats::StlStats;
use std::collections::BTreeSet;
use tegula_codec::{Dec, Enc, FormatError};
use tegula_device::media::Media;
use tegula_device::store::{MemStore, Store};
use tegula_device::Nanos;

/// Durable state: block map, cache band write pointers, which data bands each cache band holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SState {
    map: ExtentMap,
    wp: Vec<u64>,
    bands_in: Vec<BTreeSet<usize>>,
    staged: Option<usize>,
}

/// Committed metadata (the cache blocks' headers and the band rewrite records).
#[derive(Debug, Clone, PartialEq, Eq)]
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

const S_PUT: u8 = 1;
const S_STAGED: u8 = 2;
const S_NATIVE: u8 = 3;
const S_RESET: u8 = 4;

impl SRec {
    /// [`SRec::Native`]: logical `[lo, hi)` is current at its native location.
    fn native(band: Option<usize>, lo: u64, hi: u64) -> Self {
        SRec::Native { band, lo, hi }
    }
}

impl Replay for SState {
    type Rec = SRec;

    fn encode(&self, e: &mut Enc) {
        self.map.encode(e);
        e.u64(self.wp.len() as u64);
        for (w, bands) in self.wp.iter().zip(&self.bands_in) {
            e.u64(*w);
            e.u64(bands.len() as u64);
            for &b in bands {
                e.u64(b as u64);
            }
        }
        enc_opt(e, self.staged);
    }

    fn decode(d: &mut Dec<'_>, shape: &Shape) -> std::result::Result<Self, FormatError> {
        let map = ExtentMap::decode(d, shape)?;
        let n = dec_count(d, "cache bands", 16)?;
        if n != shape.cache_bands {
            return Err(FormatError::invalid(format!(
                "{n} cache bands, the drive has {}",
                shape.cache_bands
            )));
        }
        let mut wp = Vec::with_capacity(n);
        let mut bands_in = Vec::with_capacity(n);
        for _ in 0..n {
            let w = d.u64()?;
            if w > shape.pos_limit {
                return Err(FormatError::invalid(format!(
                    "cache band write pointer {w} beyond the media"
                )));
            }
            wp.push(w);
            let k = dec_count(d, "data bands of a cache band", 8)?;
            let mut set = BTreeSet::new();
            for _ in 0..k {
                let b = Shape::index("data band", d.u64()?, shape.logical_bands)?;
                if set.last().is_some_and(|&l| l >= b) {
                    return Err(FormatError::invalid(format!("data band {b} out of order")));
                }
                set.insert(b);
            }
            bands_in.push(set);
        }
        let staged = dec_opt(d, "staged band", shape.logical_bands)?;
        Ok(SState {
            map,
            wp,
            bands_in,
            staged,
        })
    }

    fn encode_rec(r: &SRec, e: &mut Enc) {
        match r {
            SRec::Put {
                c,
                band,
                lba,
                n,
                addr,
            } => {
                e.u8(S_PUT);
                e.u64(*c as u64);
                e.u64(*band as u64);
                e.u64(*lba);
                e.u64(*n);
                e.u64(*addr);
            }
            SRec::Staged { band } => {
                e.u8(S_STAGED);
                e.u64(*band as u64);
            }
            SRec::Native { band, lo, hi } => {
                e.u8(S_NATIVE);
                enc_native(e, *band, *lo, *hi);
            }
            SRec::Reset { c } => {
                e.u8(S_RESET);
                e.u64(*c as u64);
            }
        }
    }

    fn decode_rec(d: &mut Dec<'_>, shape: &Shape) -> std::result::Result<SRec, FormatError> {
        match d.u8()? {
            S_PUT => {
                let c = Shape::index("cache band", d.u64()?, shape.cache_bands)?;
                let band = Shape::index("data band", d.u64()?, shape.logical_bands)?;
                let (lba, n, addr) = (d.u64()?, d.u64()?, d.u64()?);
                shape.extent(lba, n)?;
                shape.pos(addr, n)?;
                Ok(SRec::Put {
                    c,
                    band,
                    lba,
                    n,
                    addr,
                })
            }
            S_STAGED => Ok(SRec::Staged {
                band: dec_staged(d, shape)?,
            }),
            S_NATIVE => {
                let (band, lo, hi) = dec_native(d, shape)?;
                Ok(SRec::native(band, lo, hi))
            }
            S_RESET => Ok(SRec::Reset {
                c: Shape::index("cache band", d.u64()?, shape.cache_bands)?,
            }),
            t => Err(FormatError::invalid(format!(
                "unknown set-associative record type {t}"
            ))),
        }
    }
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
                self.wp[*c] = self.wp[*c].saturating_add(*n);
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

/// Bytes of flash a drive needs: its cache bands plus one band of staging.
pub(crate) fn flash_bytes(cfg: &DmConfig, layout: &Layout) -> u64 {
    if cfg.stl != crate::config::StlKind::SetAssociative || cfg.cache_media != CacheMedia::Flash {
        return 0;
    }
    let ss = layout.sector;
    let band = layout.max_band().max(1);
    let n = (cfg.cache_size / ss / band).max(1);
    (n + 1) * band * ss
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
    pub fn new(
        cfg: &DmConfig,
        layout: Layout,
        log: MetaLog,
        shape: Shape,
        flash_store: Option<Box<dyn Store>>,
    ) -> Result<Self> {
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
                        flash_store.or_else(|| {
                            cfg.store_data
                                .then(|| Box::new(MemStore::new()) as Box<dyn Store>)
                        }),
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
        let cbands_end = (cfg.cache_media == CacheMedia::Flash).then_some(flash_staging);
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
            d: Durable::new(st, log, Self::shape_of(shape, n, &cbands_end))?,
            ss,
        })
    }

    /// The decoding bounds: cached blocks live on the media, or below the flash staging area.
    pub(crate) fn shape_of(shape: Shape, cache_bands: usize, flash_end: &Option<u64>) -> Shape {
        Shape {
            cache_bands,
            pos_limit: flash_end.map_or(shape.pos_limit, |e| e.max(shape.pos_limit)),
            ..shape
        }
    }

    fn cache_read(&mut self, m: &mut Media, addr: u64, n: u64, buf: &mut [u8]) -> Result<()> {
        match &mut self.flash {
            Some(f) => f.read(m, addr * self.ss, n * self.ss, buf),
            None => rd(m, addr, n, buf).map(|_| ()),
        }
    }

    fn cache_write(&mut self, m: &mut Media, addr: u64, n: u64, data: &[u8]) -> Result<()> {
        match &mut self.flash {
            Some(f) => f.write(m, addr * self.ss, n * self.ss, data),
            None => wr(m, addr, n, data).map(|_| ()),
        }
    }

    fn stage(&mut self, m: &mut Media, img: &[u8], n: u64) -> Result<()> {
        match &mut self.flash {
            Some(f) => f.write(m, self.flash_staging * self.ss, n * self.ss, img),
            None => write_across(m, &self.layout, &self.layout.staging, img, n).map(|_| ()),
        }
    }

    fn unstage(&mut self, m: &mut Media, img: &mut [u8], n: u64) -> Result<()> {
        match &mut self.flash {
            Some(f) => f.read(m, self.flash_staging * self.ss, n * self.ss, img),
            None => read_across(m, &self.layout, &self.layout.staging, img, n),
        }
    }

    /// Read-modify-write of data band `band` with its cached blocks, staged first.
    fn rmw(&mut self, m: &mut Media, band: usize) -> Result<()> {
        let ss = self.ss;
        let (lo, hi) = self.layout.logical_range(band);
        let n = hi - lo;
        let native = self.layout.bands[self.layout.data[band]].start;
        let mut img = band_buf(m, n);
        self.stats.salvaged_sectors += salvage_read(m, native, n, &mut img)?;
        self.stats.cleaning_bytes_read += n * ss;
        for p in self.d.live.map.pieces_in(lo, n) {
            let o = ((p.lba - lo) * ss) as usize;
            let k = (p.len * ss) as usize;
            self.cache_read(m, p.pos, p.len, part(&mut img, o, o + k))?;
            self.stats.cleaning_bytes_read += k as u64;
        }
        self.stage(m, &img, n)?;
        self.d.commit(m, SRec::Staged { band })?;
        wr(m, native, n, &img)?;
        self.d.commit(m, SRec::native(Some(band), lo, hi))?;
        self.stats.cleaning_bytes_written += 2 * n * ss;
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
        self.d.commit(m, SRec::Reset { c })?;
        self.stats.cleaning_runs += 1;
        self.stats.cleaning_ns += m.now() - t0;
        self.d.checkpoint(m)
    }

    fn put(&mut self, m: &mut Media, lba: u64, data: &[u8]) -> Result<()> {
        let n = data.len() as u64 / self.ss;
        let band = self.layout.band_of(lba);
        let c = band % self.cbands.len();
        let (start, cap) = self.cbands[c];
        if n > cap {
            // Larger than a cache band: clean, then write the band home directly.
            self.clean(m, c)?;
            let (lo, hi) = self.layout.logical_range(band);
            let ss = self.ss as usize;
            let mut img = band_buf(m, hi - lo);
            salvage_read(m, self.layout.native(lo), hi - lo, &mut img)?;
            if !img.is_empty() {
                let o = (lba - lo) as usize * ss;
                img[o..o + data.len()].copy_from_slice(data);
            }
            self.stage(m, &img, hi - lo)?;
            self.d.commit(m, SRec::Staged { band })?;
            wr(m, self.layout.native(lo), hi - lo, &img)?;
            self.d.commit(m, SRec::native(Some(band), lo, hi))?;
            return Ok(());
        }
        if self.d.live.wp[c] + n > cap {
            self.clean(m, c)?;
        }
        let addr = start + self.d.live.wp[c];
        self.cache_write(m, addr, n, data)?;
        self.d.commit(
            m,
            SRec::Put {
                c,
                band,
                lba,
                n,
                addr,
            },
        )?;
        self.stats.journal_entries += 1;
        Ok(())
    }
}

impl Layer for SetAssociative {
    fn read(&mut self, m: &mut Media, lba: u64, buf: &mut [u8]) -> Result<()> {
        let pieces = self.d.live.map.lookup(lba, buf.len() as u64 / self.ss);
        read_pieces(self.ss, lba, buf, pieces, |l, k, pos, part| match pos {
            Some(p) => self.cache_read(m, p, k, part),
            None => read_native(m, &self.layout, l, part, |p| self.layout.native(p)),
        })
    }

    fn write(&mut self, m: &mut Media, batch: &[WriteReq<'_>]) -> Result<Vec<Nanos>> {
        let ss = self.ss;
        write_by_band(self, m, ss, batch, Self::put)
    }

    fn discard(&mut self, _m: &mut Media, _lba: u64, _n: u64) -> Result<()> {
        // Cached blocks stay until their cache band is cleaned: the set-associative map has no
        // cheap way to drop a block from the middle of a cache band.
        Ok(())
    }

    fn background(&mut self, m: &mut Media, last_io: Nanos, until: Nanos) -> Result<()> {
        let Some(start) = idle_start(&self.cfg, last_io, until, true) else {
            return Ok(());
        };
        clean_until(m, start, until, |m| {
            let Some(c) = (0..self.cbands.len())
                .filter(|&c| self.d.live.wp[c] > 0)
                .max_by_key(|&c| self.d.live.wp[c])
            else {
                return Ok(false);
            };
            self.clean(m, c).map(|()| true)
        })?;
        Ok(())
    }

    fn recover(&mut self, m: &mut Media, redo: bool) -> Result<()> {
        self.d.recover_counted(m, &mut self.stats)?;
        if let (true, Some(band)) = (redo, self.d.live.staged) {
            let (lo, hi) = self.layout.logical_range(band);
            let mut img = band_buf(m, hi - lo);
            self.unstage(m, &mut img, hi - lo)?;
            wr(m, self.layout.native(lo), hi - lo, &img)?;
            self.d.commit(m, SRec::native(Some(band), lo, hi))?;
        }
        Ok(())
    }

    fn band_range(&self, lba: u64) -> (u64, u64) {
        self.layout.band_range(lba)
    }

    fn restore_stats(&mut self, s: &StlStats) {
        restore_counters(&mut self.stats, s);
    }

    fn log(&mut self) -> &mut dyn LogOps {
        &mut self.d
    }

    fn live_runs(&self) -> Vec<LiveRun> {
        let l = &self.layout;
        let st = &self.d.live;
        live_runs_of(l, &st.map, self.flash.is_none(), st.staged, |b| {
            l.bands[l.data[b]].start
        })
    }

    fn staged_band(&self) -> Option<usize> {
        self.d.live.staged
    }

    fn stats(&self) -> StlStats {
        let st = &self.d.live;
        let used = st.wp.iter().sum::<u64>();
        let live = st.wp.iter().filter(|&&w| w > 0).count() as u64;
        current_stats(&self.stats, self.ss, used, &st.map, live)
    }
}
