//! The fully associative (S-blocks variant) translation layer of Skylight's Emulated-SMR-3: the
//! disk is split into large zones, each with spare bands; writes to logical band `a` go to a free
//! update band `c` of its zone; cleaning merges the data band `b` and `c` into a free band `d`
//! and remaps `a` to `d` (dynamic mapping), freeing `b` and `c`. A band written completely and
//! in order in its update band is remapped without copying (streaming writes cost nothing
//! extra). Merges write only to free bands and switch the map atomically, so no staging is
//! needed. Aggressive cleaning merges update bands in idle time.

use crate::bands::{read_native, read_pieces, write_by_band};
use crate::config::DmConfig;
use crate::durable::{dec_count, Durable, LogOps, Replay, Shape};
use crate::error::{Result, StlError};
use crate::extmap::ExtentMap;
use crate::idle::{clean_until, idle_start};
use crate::layer::{
    band_buf, current_stats, live_runs_of, part, rd, restore_counters, salvage_read, wr, Layer,
    LiveRun, WriteReq,
};
use crate::layout::Layout;
use crate::metalog::MetaLog;
use crate::stats::StlStats;
use std::collections::BTreeMap;
use tegula_codec::{Dec, Enc, FormatError};
use tegula_device::media::Media;
use tegula_device::Nanos;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Upd {
    phys: usize,
    wp: u64,
    seq: u64,
}

/// Durable state: the band map, free bands, open update bands and the block map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FState {
    phys_of: Vec<usize>,
    free: Vec<Vec<usize>>,
    upd: BTreeMap<usize, Upd>,
    map: ExtentMap,
    seq: u64,
}

/// Committed metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FRec {
    /// Logical band `band` (of zone `zone`) got update band `phys`.
    Open {
        zone: usize,
        band: usize,
        phys: usize,
    },
    /// Logical `[lba, lba + n)` of band `band` is at physical `pos` in its update band.
    Put {
        band: usize,
        lba: u64,
        n: u64,
        pos: u64,
    },
    /// Band `band` now lives in physical band `to`; its old data band and update band are free.
    Merge {
        zone: usize,
        band: usize,
        to: usize,
        lo: u64,
        hi: u64,
    },
}

const F_OPEN: u8 = 1;
const F_PUT: u8 = 2;
const F_MERGE: u8 = 3;

fn dec_band_list(
    d: &mut Dec<'_>,
    what: &str,
    bound: usize,
) -> std::result::Result<Vec<usize>, FormatError> {
    let n = dec_count(d, what, 8)?;
    (0..n)
        .map(|_| Shape::index(what, d.u64()?, bound))
        .collect()
}

impl Replay for FState {
    type Rec = FRec;

    fn encode(&self, e: &mut Enc) {
        e.u64(self.phys_of.len() as u64);
        for &p in &self.phys_of {
            e.u64(p as u64);
        }
        e.u64(self.free.len() as u64);
        for z in &self.free {
            e.u64(z.len() as u64);
            for &b in z {
                e.u64(b as u64);
            }
        }
        e.u64(self.upd.len() as u64);
        for (&b, u) in &self.upd {
            e.u64(b as u64);
            e.u64(u.phys as u64);
            e.u64(u.wp);
            e.u64(u.seq);
        }
        self.map.encode(e);
        e.u64(self.seq);
    }

    fn decode(d: &mut Dec<'_>, shape: &Shape) -> std::result::Result<Self, FormatError> {
        let phys_of = dec_band_list(d, "physical band", shape.phys_bands)?;
        if phys_of.len() != shape.logical_bands {
            return Err(FormatError::invalid(format!(
                "{} mapped bands, the drive has {}",
                phys_of.len(),
                shape.logical_bands
            )));
        }
        let nz = dec_count(d, "zones", 8)?;
        if nz != shape.zones {
            return Err(FormatError::invalid(format!(
                "{nz} zones, the drive has {}",
                shape.zones
            )));
        }
        let free = (0..nz)
            .map(|_| dec_band_list(d, "free band", shape.phys_bands))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let nu = dec_count(d, "update bands", 32)?;
        let mut upd = BTreeMap::new();
        for _ in 0..nu {
            let b = Shape::index("logical band", d.u64()?, shape.logical_bands)?;
            let phys = Shape::index("update band", d.u64()?, shape.phys_bands)?;
            let (wp, seq) = (d.u64()?, d.u64()?);
            if wp > shape.pos_limit {
                return Err(FormatError::invalid(format!(
                    "update band write pointer {wp} beyond the media"
                )));
            }
            if upd.keys().next_back().is_some_and(|&l| l >= b) {
                return Err(FormatError::invalid(format!(
                    "update band of band {b} out of order"
                )));
            }
            upd.insert(b, Upd { phys, wp, seq });
        }
        let map = ExtentMap::decode(d, shape)?;
        let seq = d.u64()?;
        Ok(FState {
            phys_of,
            free,
            upd,
            map,
            seq,
        })
    }

    fn encode_rec(r: &FRec, e: &mut Enc) {
        match r {
            FRec::Open { zone, band, phys } => {
                e.u8(F_OPEN);
                e.u64(*zone as u64);
                e.u64(*band as u64);
                e.u64(*phys as u64);
            }
            FRec::Put { band, lba, n, pos } => {
                e.u8(F_PUT);
                e.u64(*band as u64);
                e.u64(*lba);
                e.u64(*n);
                e.u64(*pos);
            }
            FRec::Merge {
                zone,
                band,
                to,
                lo,
                hi,
            } => {
                e.u8(F_MERGE);
                e.u64(*zone as u64);
                e.u64(*band as u64);
                e.u64(*to as u64);
                e.u64(*lo);
                e.u64(*hi);
            }
        }
    }

    fn decode_rec(d: &mut Dec<'_>, shape: &Shape) -> std::result::Result<FRec, FormatError> {
        match d.u8()? {
            F_OPEN => Ok(FRec::Open {
                zone: Shape::index("zone", d.u64()?, shape.zones)?,
                band: Shape::index("logical band", d.u64()?, shape.logical_bands)?,
                phys: Shape::index("physical band", d.u64()?, shape.phys_bands)?,
            }),
            F_PUT => {
                let band = Shape::index("logical band", d.u64()?, shape.logical_bands)?;
                let (lba, n, pos) = (d.u64()?, d.u64()?, d.u64()?);
                shape.extent(lba, n)?;
                shape.pos(pos, n)?;
                Ok(FRec::Put { band, lba, n, pos })
            }
            F_MERGE => {
                let zone = Shape::index("zone", d.u64()?, shape.zones)?;
                let band = Shape::index("logical band", d.u64()?, shape.logical_bands)?;
                let to = Shape::index("physical band", d.u64()?, shape.phys_bands)?;
                let (lo, hi) = (d.u64()?, d.u64()?);
                if lo > hi || hi > shape.capacity {
                    return Err(FormatError::invalid(format!(
                        "merged range {lo}..{hi} outside the drive"
                    )));
                }
                Ok(FRec::Merge {
                    zone,
                    band,
                    to,
                    lo,
                    hi,
                })
            }
            t => Err(FormatError::invalid(format!(
                "unknown fully associative record type {t}"
            ))),
        }
    }
    fn apply(&mut self, r: &FRec) {
        match r {
            FRec::Open { zone, band, phys } => {
                self.free[*zone].retain(|b| b != phys);
                self.seq += 1;
                self.upd.insert(
                    *band,
                    Upd {
                        phys: *phys,
                        wp: 0,
                        seq: self.seq,
                    },
                );
            }
            FRec::Put { band, lba, n, pos } => {
                self.map.insert(*lba, *n, *pos);
                if let Some(u) = self.upd.get_mut(band) {
                    u.wp = u.wp.saturating_add(*n);
                }
            }
            FRec::Merge {
                zone,
                band,
                to,
                lo,
                hi,
            } => {
                let old = self.phys_of[*band];
                let upd = self.upd.remove(band);
                self.free[*zone].retain(|b| b != to);
                if old != *to {
                    self.free[*zone].push(old);
                }
                if let Some(u) = upd {
                    if u.phys != *to {
                        self.free[*zone].push(u.phys);
                    }
                }
                self.phys_of[*band] = *to;
                self.map.remove(*lo, hi.saturating_sub(*lo));
            }
        }
    }
}

/// The fully associative layer.
pub(crate) struct FullyAssociative {
    cfg: DmConfig,
    layout: Layout,
    zone_of: Vec<usize>,
    d: Durable<FState>,
    stats: StlStats,
    ss: u64,
}

impl FullyAssociative {
    /// A fully associative layer over `layout` (its zones and spare bands).
    pub fn new(cfg: &DmConfig, layout: Layout, log: MetaLog, shape: Shape) -> Result<Self> {
        let mut zone_of = vec![0; layout.data.len()];
        for (z, r) in layout.zones.iter().enumerate() {
            for b in r.clone() {
                zone_of[b] = z;
            }
        }
        if layout.spares.iter().any(|s| s.len() < 2) {
            return Err(StlError::Config(
                "every zone needs at least two spare bands".into(),
            ));
        }
        let ss = layout.sector;
        let spare: u64 = layout
            .spares
            .iter()
            .flatten()
            .map(|&b| layout.bands[b].len)
            .sum();
        let nzones = layout.zones.len();
        let st = FState {
            phys_of: layout.data.clone(),
            free: layout.spares.clone(),
            ..Default::default()
        };
        Ok(FullyAssociative {
            cfg: cfg.clone(),
            stats: StlStats {
                stl: "fully-associative".into(),
                cache_bytes: spare * ss,
                map_entries_max: spare,
                ..Default::default()
            },
            zone_of,
            layout,
            d: Durable::new(
                st,
                log,
                Shape {
                    zones: nzones,
                    ..shape
                },
            )?,
            ss,
        })
    }

    fn native(&self, lba: u64) -> u64 {
        let b = self.layout.band_of(lba);
        self.layout.bands[self.d.live.phys_of[b]].start + (lba - self.layout.logical_starts[b])
    }

    /// Merges logical band `band` with its update band into a free band (or remaps the update
    /// band when it holds the whole band in order).
    fn merge(&mut self, m: &mut Media, band: usize) -> Result<()> {
        let t0 = m.now();
        let ss = self.ss;
        let zone = self.zone_of[band];
        let (lo, hi) = self.layout.logical_range(band);
        let Some(u) = self.d.live.upd.get(&band).copied() else {
            return Ok(());
        };
        let ustart = self.layout.bands[u.phys].start;
        let pieces = self.d.live.map.pieces_in(lo, hi - lo);
        let in_order = pieces.len() == 1
            && pieces[0].lba == lo
            && pieces[0].len == hi - lo
            && pieces[0].pos == ustart;
        if in_order {
            self.d.commit(
                m,
                FRec::Merge {
                    zone,
                    band,
                    to: u.phys,
                    lo,
                    hi,
                },
            )?;
        } else {
            let Some(&to) = self.d.live.free[zone].last() else {
                return Err(StlError::Layout(format!("zone {zone} has no free band")));
            };
            let n = hi - lo;
            let mut img = band_buf(m, n);
            let old = self.layout.bands[self.d.live.phys_of[band]].start;
            self.stats.salvaged_sectors += salvage_read(m, old, n, &mut img)?;
            self.stats.cleaning_bytes_read += n * ss;
            for p in &pieces {
                let o = ((p.lba - lo) * ss) as usize;
                let k = (p.len * ss) as usize;
                rd(m, p.pos, p.len, part(&mut img, o, o + k))?;
                self.stats.cleaning_bytes_read += k as u64;
            }
            wr(m, self.layout.bands[to].start, n, &img)?;
            self.stats.cleaning_bytes_written += n * ss;
            self.d.commit(
                m,
                FRec::Merge {
                    zone,
                    band,
                    to,
                    lo,
                    hi,
                },
            )?;
        }
        self.stats.bands_cleaned += 1;
        self.stats.cleaning_ns += m.now() - t0;
        self.d.checkpoint(m)
    }

    fn oldest_in(&self, zone: Option<usize>, except: usize) -> Option<usize> {
        self.d
            .live
            .upd
            .iter()
            .filter(|(&b, _)| b != except && zone.is_none_or(|z| self.zone_of[b] == z))
            .min_by_key(|(_, u)| u.seq)
            .map(|(&b, _)| b)
    }

    fn put(&mut self, m: &mut Media, lba: u64, data: &[u8]) -> Result<()> {
        let ss = self.ss;
        let n = data.len() as u64 / ss;
        let band = self.layout.band_of(lba);
        let zone = self.zone_of[band];
        let full = self.layout.bands[self.layout.data[band]].len;
        if let Some(u) = self.d.live.upd.get(&band).copied() {
            if u.wp + n > full {
                self.merge(m, band)?;
                self.stats.cleaning_runs += 1;
            }
        }
        if !self.d.live.upd.contains_key(&band) {
            // Keep one free band for merging: below that, merge the zone's oldest update band.
            while self.d.live.free[zone].len() < 2 {
                let Some(victim) = self.oldest_in(Some(zone), band) else {
                    return Err(StlError::Layout(format!("zone {zone} ran out of bands")));
                };
                self.merge(m, victim)?;
                self.stats.cleaning_runs += 1;
            }
            let phys = self.d.live.free[zone][0];
            self.d.commit(m, FRec::Open { zone, band, phys })?;
        }
        let Some(u) = self.d.live.upd.get(&band).copied() else {
            return Err(StlError::Layout("update band vanished".into()));
        };
        let pos = self.layout.bands[u.phys].start + u.wp;
        m.write(pos, data, true)?;
        self.d.commit(m, FRec::Put { band, lba, n, pos })?;
        self.stats.journal_entries += 1;
        Ok(())
    }
}

impl Layer for FullyAssociative {
    fn read(&mut self, m: &mut Media, lba: u64, buf: &mut [u8]) -> Result<()> {
        let pieces = self.d.live.map.lookup(lba, buf.len() as u64 / self.ss);
        read_pieces(self.ss, lba, buf, pieces, |l, _, pos, part| match pos {
            Some(p) => m.read(p, part).map(|_| ()).map_err(Into::into),
            None => read_native(m, &self.layout, l, part, |p| self.native(p)),
        })
    }

    fn write(&mut self, m: &mut Media, batch: &[WriteReq<'_>]) -> Result<Vec<Nanos>> {
        let ss = self.ss;
        write_by_band(self, m, ss, batch, Self::put)
    }

    fn discard(&mut self, _m: &mut Media, _lba: u64, _n: u64) -> Result<()> {
        Ok(())
    }

    fn background(&mut self, m: &mut Media, last_io: Nanos, until: Nanos) -> Result<()> {
        let work = !self.d.live.upd.is_empty();
        let Some(start) = idle_start(&self.cfg, last_io, until, work) else {
            return Ok(());
        };
        let ran = clean_until(m, start, until, |m| {
            let Some(b) = self.oldest_in(None, usize::MAX) else {
                return Ok(false);
            };
            self.merge(m, b).map(|()| true)
        })?;
        self.stats.cleaning_runs += u64::from(ran);
        Ok(())
    }

    fn recover(&mut self, m: &mut Media, _redo: bool) -> Result<()> {
        self.d.recover_counted(m, &mut self.stats)?;
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
        let (l, st) = (&self.layout, &self.d.live);
        live_runs_of(l, &st.map, true, None, |b| l.bands[st.phys_of[b]].start)
    }

    fn stats(&self) -> StlStats {
        let st = &self.d.live;
        let used = st.upd.values().map(|u| u.wp).sum::<u64>();
        current_stats(&self.stats, self.ss, used, &st.map, st.upd.len() as u64)
    }
}
