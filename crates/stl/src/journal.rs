//! The journal translation layer of the Seagate drives Skylight measured: a single persistent
//! disk cache used as a circular log of journal entries with quantized sizes, a bounded extent
//! map with a low watermark, periodic map merges to the middle tracks, static band mapping, and
//! FIFO read-modify-write cleaning that stages each band in the cache area first.

use crate::bands::{read_native, read_pieces};
use crate::config::DmConfig;
use crate::durable::{
    dec_count, dec_native, dec_opt, dec_staged, enc_native, enc_opt, Durable, LogOps, Replay, Shape,
};
use crate::error::{Result, StlError};
use crate::extmap::{ExtentMap, Piece};
use crate::idle::{clean_until, idle_start};
use crate::layer::{
    band_buf, current_stats, live_runs_of, part, rd, read_across, restore_counters, salvage_read,
    wr, write_across, Layer, LiveRun, WriteReq,
};
use crate::layout::Layout;
use crate::metalog::MetaLog;
use crate::stats::StlStats;
use std::collections::BTreeMap;
use tegula_codec::{Dec, Enc, FormatError};
use tegula_device::geometry::ANGLE_FULL;
use tegula_device::media::Media;
use tegula_device::Nanos;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Ent {
    len: u64,
    live: u64,
    seq: u64,
    extents: Vec<(u64, u64, u64)>,
}

/// The durable part of the journal: the extent map and the live entries of the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JState {
    map: ExtentMap,
    entries: BTreeMap<u64, Ent>,
    fifo: BTreeMap<u64, u64>,
    head: u64,
    seq: u64,
    staged: Option<usize>,
    used: u64,
}

/// Committed journal metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JRec {
    /// A journal entry at `pos` of `len` sectors holds `extents` (lba, sectors, position).
    Entry {
        pos: u64,
        len: u64,
        extents: Vec<(u64, u64, u64)>,
    },
    /// The image of logical band `band` is complete in the staging area.
    Staged { band: usize },
    /// Logical `[lo, hi)` is current at its native location (cleaned, trimmed, or overwritten
    /// in place); `band` ends a staged rewrite.
    Native {
        band: Option<usize>,
        lo: u64,
        hi: u64,
    },
}

impl JState {
    fn dec(&mut self, p: &Piece) {
        let Some((&epos, _)) = self.entries.range(..=p.pos).next_back() else {
            return;
        };
        let mut dead = None;
        if let Some(e) = self.entries.get_mut(&epos) {
            if p.pos < epos + e.len {
                e.live = e.live.saturating_sub(p.len);
                if e.live == 0 {
                    dead = Some((e.seq, e.len));
                }
            }
        }
        if let Some((seq, len)) = dead {
            self.entries.remove(&epos);
            self.fifo.remove(&seq);
            self.used -= len;
        }
    }

    /// Whether a live entry overlaps physical `[a, b)`; returns its position.
    fn live_in(&self, a: u64, b: u64) -> Option<u64> {
        if let Some((&p, e)) = self.entries.range(..a).next_back() {
            if p + e.len > a {
                return Some(p);
            }
        }
        self.entries.range(a..b).next().map(|(&p, _)| p)
    }
}

fn enc_extents(e: &mut Enc, x: &[(u64, u64, u64)]) {
    e.u64(x.len() as u64);
    for &(l, n, p) in x {
        e.u64(l);
        e.u64(n);
        e.u64(p);
    }
}

fn dec_extents(
    d: &mut Dec<'_>,
    shape: &Shape,
) -> std::result::Result<Vec<(u64, u64, u64)>, FormatError> {
    let n = dec_count(d, "entry extents", 24)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let (l, k, p) = (d.u64()?, d.u64()?, d.u64()?);
        shape.extent(l, k)?;
        shape.pos(p, k)?;
        v.push((l, k, p));
    }
    Ok(v)
}

const J_ENTRY: u8 = 1;
const J_STAGED: u8 = 2;
const J_NATIVE: u8 = 3;

impl JRec {
    /// [`JRec::Native`]: logical `[lo, hi)` is current at its native location.
    fn native(band: Option<usize>, lo: u64, hi: u64) -> Self {
        JRec::Native { band, lo, hi }
    }
}

impl Replay for JState {
    type Rec = JRec;

    fn encode(&self, e: &mut Enc) {
        self.map.encode(e);
        e.u64(self.entries.len() as u64);
        for (&pos, en) in &self.entries {
            e.u64(pos);
            e.u64(en.len);
            e.u64(en.live);
            e.u64(en.seq);
            enc_extents(e, &en.extents);
        }
        e.u64(self.head);
        e.u64(self.seq);
        enc_opt(e, self.staged);
    }

    fn decode(d: &mut Dec<'_>, shape: &Shape) -> std::result::Result<Self, FormatError> {
        let map = ExtentMap::decode(d, shape)?;
        let n = dec_count(d, "journal entries", 40)?;
        let mut st = JState {
            map,
            ..Default::default()
        };
        let mut end = 0u64;
        for _ in 0..n {
            let (pos, len, live, seq) = (d.u64()?, d.u64()?, d.u64()?, d.u64()?);
            if len == 0 || live > len {
                return Err(FormatError::invalid(format!(
                    "journal entry at {pos} of {len} sectors with {live} live ones"
                )));
            }
            shape.pos(pos, len)?;
            if pos < end {
                return Err(FormatError::invalid(format!(
                    "journal entry at {pos} overlaps the previous one"
                )));
            }
            end = pos + len;
            let extents = dec_extents(d, shape)?;
            if st.fifo.insert(seq, pos).is_some() {
                return Err(FormatError::invalid(format!(
                    "two journal entries with sequence {seq}"
                )));
            }
            st.used += len;
            st.entries.insert(
                pos,
                Ent {
                    len,
                    live,
                    seq,
                    extents,
                },
            );
        }
        st.head = d.u64()?;
        shape.pos(st.head, 0)?;
        st.seq = d.u64()?;
        if st.fifo.keys().next_back().is_some_and(|&s| s > st.seq) {
            return Err(FormatError::invalid(
                "journal entry sequence ahead of the log",
            ));
        }
        st.staged = dec_opt(d, "staged band", shape.logical_bands)?;
        Ok(st)
    }

    fn encode_rec(r: &JRec, e: &mut Enc) {
        match r {
            JRec::Entry { pos, len, extents } => {
                e.u8(J_ENTRY);
                e.u64(*pos);
                e.u64(*len);
                enc_extents(e, extents);
            }
            JRec::Staged { band } => {
                e.u8(J_STAGED);
                e.u64(*band as u64);
            }
            JRec::Native { band, lo, hi } => {
                e.u8(J_NATIVE);
                enc_native(e, *band, *lo, *hi);
            }
        }
    }

    fn decode_rec(d: &mut Dec<'_>, shape: &Shape) -> std::result::Result<JRec, FormatError> {
        match d.u8()? {
            J_ENTRY => {
                let (pos, len) = (d.u64()?, d.u64()?);
                if len == 0 {
                    return Err(FormatError::invalid(format!(
                        "journal entry at {pos} of no sectors"
                    )));
                }
                shape.pos(pos, len)?;
                let extents = dec_extents(d, shape)?;
                Ok(JRec::Entry { pos, len, extents })
            }
            J_STAGED => Ok(JRec::Staged {
                band: dec_staged(d, shape)?,
            }),
            J_NATIVE => {
                let (band, lo, hi) = dec_native(d, shape)?;
                Ok(JRec::native(band, lo, hi))
            }
            t => Err(FormatError::invalid(format!(
                "unknown journal record type {t}"
            ))),
        }
    }
    fn apply(&mut self, r: &JRec) {
        match r {
            JRec::Entry { pos, len, extents } => {
                self.seq += 1;
                let live = extents.iter().map(|e| e.1).sum();
                self.entries.insert(
                    *pos,
                    Ent {
                        len: *len,
                        live,
                        seq: self.seq,
                        extents: extents.clone(),
                    },
                );
                self.fifo.insert(self.seq, *pos);
                self.used += len;
                self.head = pos + len;
                for &(lba, n, p) in extents {
                    for old in self.map.insert(lba, n, p) {
                        self.dec(&old);
                    }
                }
                if live == 0 {
                    self.dec(&Piece {
                        lba: 0,
                        len: 0,
                        pos: *pos,
                    });
                }
            }
            JRec::Staged { band } => self.staged = Some(*band),
            JRec::Native { band, lo, hi } => {
                for old in self.map.remove(*lo, hi.saturating_sub(*lo)) {
                    self.dec(&old);
                }
                if band.is_some() && *band == self.staged {
                    self.staged = None;
                }
            }
        }
    }
}

/// The journal layer.
pub(crate) struct Journal {
    cfg: DmConfig,
    layout: Layout,
    segs: Vec<(u64, u64)>,
    cache_total: u64,
    d: Durable<JState>,
    stats: StlStats,
    ss: u64,
    entry_min: u64,
    quantum: u64,
    entry_max: u64,
    oob: u64,
    slot: usize,
    buf: Vec<u8>,
    map_buf: Vec<u8>,
    map_sectors: u64,
}

impl Journal {
    /// A journal over `layout` (its `cache`, `staging` and `map_slots` regions).
    pub fn new(cfg: &DmConfig, layout: Layout, log: MetaLog, shape: Shape) -> Result<Self> {
        let ss = layout.sector;
        let mut segs: Vec<(u64, u64)> = Vec::new();
        for &b in &layout.cache {
            let band = layout.bands[b];
            match segs.last_mut() {
                Some(s) if s.1 == band.start => s.1 = band.end(),
                _ => segs.push((band.start, band.end())),
            }
        }
        let cache_total: u64 = segs.iter().map(|s| s.1 - s.0).sum();
        let q = |b: u64| b.div_ceil(ss).max(1);
        let (entry_min, quantum, entry_max, oob) = (
            q(cfg.journal_entry_min),
            q(cfg.journal_entry_quantum),
            q(cfg.journal_entry_max),
            cfg.journal_oob.div_ceil(ss),
        );
        let biggest = segs.iter().map(|s| s.1 - s.0).max().unwrap_or(0);
        if biggest < 4 * (entry_max + oob) {
            return Err(StlError::Config(format!(
                "cache_size {} is too small for journal entries of up to {} bytes plus {} bytes of OOB",
                cfg.cache_size, cfg.journal_entry_max, cfg.journal_oob
            )));
        }
        let map_sectors = (cfg.map_entries * cfg.map_entry_bytes).div_ceil(ss).max(1);
        let st = JState {
            head: segs.first().map_or(0, |s| s.0),
            ..Default::default()
        };
        let stats = StlStats {
            stl: "journal".into(),
            cache_bytes: cache_total * ss,
            map_entries_max: cfg.map_entries,
            ..Default::default()
        };
        Ok(Journal {
            cfg: cfg.clone(),
            layout,
            segs,
            cache_total,
            d: Durable::new(st, log, shape)?,
            stats,
            ss,
            entry_min,
            quantum,
            entry_max,
            oob,
            slot: 0,
            buf: if cfg.store_data {
                vec![0u8; (entry_max * ss) as usize]
            } else {
                Vec::new()
            },
            map_buf: if cfg.store_data {
                vec![0u8; (map_sectors * ss) as usize]
            } else {
                Vec::new()
            },
            map_sectors,
        })
    }

    fn seg_of(&self, pos: u64) -> usize {
        self.segs
            .iter()
            .position(|s| pos >= s.0 && pos < s.1)
            .unwrap_or(0)
    }

    /// Where an entry of `len` sectors goes: at the log head, or — when the heads are already
    /// on the head's track — at the sector passing under them now (no rotational delay; the
    /// skipped sectors are wasted, as in the drive).
    fn place(&self, m: &Media, len: u64) -> u64 {
        let st = &self.d.live;
        let mut pos = st.head;
        let mut si = self.seg_of(pos);
        if pos < self.segs[si].0 || pos >= self.segs[si].1 {
            pos = self.segs[si].0;
        }
        let mech = m.mechanics();
        let geo = mech.geometry();
        let loc = geo.locate(pos);
        if mech.position() == (loc.cyl, loc.head) {
            let t0 = m.now() + mech.overhead();
            let angle = ((t0 as u128 * geo.rpm() as u128) % ANGLE_FULL as u128) as u64;
            let rel = (angle + ANGLE_FULL - geo.sector_angle(&loc, 0)) % ANGLE_FULL;
            let under = (rel as u128 * loc.spt as u128).div_ceil(ANGLE_FULL as u128) as u64 + 1;
            if under > loc.sector && under < loc.spt {
                pos = loc.track_lba + under;
            }
        }
        if pos + len > self.segs[si].1 {
            si = (si + 1) % self.segs.len();
            pos = self.segs[si].0;
        }
        pos
    }

    /// End of the region a write of `[pos, pos + len)` may damage.
    fn damage_end(&self, m: &Media, pos: u64, len: u64) -> u64 {
        let geo = m.mechanics().geometry();
        let last = pos + len - 1;
        let spt = geo.locate(last).spt;
        let band_end = m
            .shingling()
            .band_end(geo, last)
            .unwrap_or(pos + len + self.layout.overlap * spt);
        band_end.min(pos + len + self.layout.overlap * spt)
    }

    fn quantize(&self, data: u64) -> u64 {
        if data <= self.entry_min {
            return self.entry_min;
        }
        let steps = (data - self.entry_min).div_ceil(self.quantum);
        (self.entry_min + steps * self.quantum).min(self.entry_max.max(self.entry_min))
    }

    /// Logical band of the oldest cached block.
    fn oldest_band(&self) -> Option<usize> {
        let st = &self.d.live;
        let (_, &pos) = st.fifo.iter().next()?;
        self.band_of_entry(pos)
    }

    fn band_of_entry(&self, pos: u64) -> Option<usize> {
        let st = &self.d.live;
        let e = st.entries.get(&pos)?;
        for &(lba, n, p) in &e.extents {
            for (l, _, q) in st.map.lookup(lba, n) {
                if let Some(q) = q {
                    if q >= p && q < p + n {
                        return Some(self.layout.band_of(l));
                    }
                }
            }
        }
        None
    }

    /// Algorithm 1: gather the band's cached blocks, read-modify-write it, staging it first.
    fn clean_band(&mut self, m: &mut Media, band: usize) -> Result<()> {
        let t0 = m.now();
        let ss = self.ss;
        let (lo, hi) = self.layout.logical_range(band);
        let n = hi - lo;
        let native = self.layout.bands[self.layout.data[band]].start;
        let mut pieces = self.d.live.map.pieces_in(lo, n);
        pieces.sort_by_key(|p| p.pos);
        // Cached blocks first, in log order (the drive scans its cache), then the band.
        let mut img = band_buf(m, n);
        for p in &pieces {
            let off = ((p.lba - lo) * ss) as usize;
            let end = off + (p.len * ss) as usize;
            rd(m, p.pos, p.len, part(&mut img, off, end))?;
            self.stats.cleaning_bytes_read += p.len * ss;
        }
        let mut native_img = band_buf(m, n);
        self.stats.salvaged_sectors += salvage_read(m, native, n, &mut native_img)?;
        self.stats.cleaning_bytes_read += n * ss;
        if !img.is_empty() {
            // Merge: cached pieces override the native image.
            let mut cur = lo;
            let mut sorted = pieces.clone();
            sorted.sort_by_key(|p| p.lba);
            for p in &sorted {
                let (a, b) = (((cur - lo) * ss) as usize, ((p.lba - lo) * ss) as usize);
                if b > a {
                    img[a..b].copy_from_slice(&native_img[a..b]);
                }
                cur = p.lba + p.len;
            }
            let a = ((cur - lo) * ss) as usize;
            img[a..].copy_from_slice(&native_img[a..]);
        }
        write_across(m, &self.layout, &self.layout.staging, &img, n)?;
        self.d.commit(m, JRec::Staged { band })?;
        wr(m, native, n, &img)?;
        self.d.commit(m, JRec::native(Some(band), lo, hi))?;
        self.stats.cleaning_bytes_written += 2 * n * ss;
        self.stats.bands_cleaned += 1;
        self.stats.cleaning_ns += m.now() - t0;
        Ok(())
    }

    fn map_merge(&mut self, m: &mut Media) -> Result<()> {
        let old = self.slot;
        let new = 1 - old;
        let mut buf = std::mem::take(&mut self.map_buf);
        let n = self.map_sectors;
        let r = read_across(m, &self.layout, &self.layout.map_slots[old], &mut buf, n)
            .and_then(|_| write_across(m, &self.layout, &self.layout.map_slots[new], &buf, n));
        self.map_buf = buf;
        r?;
        self.slot = new;
        self.d.checkpoint(m)?;
        self.stats.map_merges += 1;
        Ok(())
    }

    /// Makes room for an entry of `len` sectors with `extents` new map entries; returns the
    /// position to write it at.
    fn make_room(&mut self, m: &mut Media, len: u64, extents: u64) -> Result<u64> {
        let cap = self.cfg.map_entries;
        let soft = (cap as f64 * (1.0 - self.cfg.map_low_watermark)) as u64;
        let free_min = (self.cache_total as f64 * self.cfg.cache_low_watermark) as u64;
        let mut cleaned = false;
        // Over a watermark: clean one band per host write (the drive's foreground cleaning).
        if self.d.live.map.len() as u64 + extents > soft
            || self.cache_total - self.d.live.used < free_min + len
        {
            if let Some(b) = self.oldest_band() {
                self.clean_band(m, b)?;
                cleaned = true;
            }
        }
        // Hard limits: the map must fit, and the log must not damage live entries.
        while self.d.live.map.len() as u64 + extents > cap {
            let Some(b) = self.oldest_band() else { break };
            self.clean_band(m, b)?;
            cleaned = true;
        }
        let pos = loop {
            let pos = self.place(m, len);
            let end = self.damage_end(m, pos, len);
            match self.d.live.live_in(pos, end) {
                None => break pos,
                Some(epos) => {
                    let b = self.band_of_entry(epos).or_else(|| self.oldest_band());
                    match b {
                        Some(b) => self.clean_band(m, b)?,
                        None => break pos,
                    }
                    cleaned = true;
                }
            }
        };
        if cleaned {
            self.stats.cleaning_runs += 1;
        }
        Ok(pos)
    }

    fn write_entry(&mut self, m: &mut Media, group: &[(u64, &[u8])]) -> Result<Nanos> {
        let ss = self.ss;
        let data: u64 = group.iter().map(|g| g.1.len() as u64 / ss).sum();
        let dlen = self.quantize(data).max(data);
        let len = dlen + self.oob;
        let pos = self.make_room(m, len, group.len() as u64)?;
        let keep = m.keeps_data();
        let bytes = (data * ss) as usize;
        if keep && self.buf.len() < bytes {
            self.buf.resize(bytes, 0);
        }
        let mut extents = Vec::with_capacity(group.len());
        let mut off = 0u64;
        for (lba, d) in group {
            let n = d.len() as u64 / ss;
            if keep {
                let o = (off * ss) as usize;
                self.buf[o..o + d.len()].copy_from_slice(d);
            }
            extents.push((*lba, n, pos + off));
            off += n;
        }
        // Only the data reaches the store: the padding and out-of-band area are timed and
        // shingle the tracks, but their contents never matter (the map lives in the
        // metadata log).
        let done = if keep {
            m.write_padded(pos, len, &self.buf[..(off * ss) as usize])?
        } else {
            wr(m, pos, len, &[])?
        };
        self.d.commit(m, JRec::Entry { pos, len, extents })?;
        self.stats.journal_entries += 1;
        let every = self.cfg.map_merge_every;
        if every > 0 && self.stats.journal_entries.is_multiple_of(every) {
            self.map_merge(m)?;
            return Ok(m.now());
        }
        Ok(done.end)
    }
}

impl Layer for Journal {
    fn read(&mut self, m: &mut Media, lba: u64, buf: &mut [u8]) -> Result<()> {
        let pieces = self.d.live.map.lookup(lba, buf.len() as u64 / self.ss);
        let layout = &self.layout;
        read_pieces(self.ss, lba, buf, pieces, |l, _, pos, part| match pos {
            Some(p) => m.read(p, part).map(|_| ()).map_err(Into::into),
            None => read_native(m, layout, l, part, |p| layout.native(p)),
        })
    }

    fn write(&mut self, m: &mut Media, batch: &[WriteReq<'_>]) -> Result<Vec<Nanos>> {
        let ss = self.ss as usize;
        let max = (self.entry_max as usize) * ss;
        let mut done = vec![0; batch.len()];
        let mut group: Vec<(u64, &[u8])> = Vec::new();
        let mut members: Vec<usize> = Vec::new();
        let mut size = 0usize;
        for (i, r) in batch.iter().enumerate() {
            let mut off = 0usize;
            while off < r.data.len() {
                let piece = (r.data.len() - off).min(max);
                if size + piece > max && !group.is_empty() {
                    let end = self.write_entry(m, &group)?;
                    for &j in &members {
                        done[j] = end;
                    }
                    group.clear();
                    members.clear();
                    size = 0;
                }
                group.push((r.lba + (off / ss) as u64, &r.data[off..off + piece]));
                members.push(i);
                size += piece;
                off += piece;
            }
        }
        if !group.is_empty() {
            let end = self.write_entry(m, &group)?;
            for &j in &members {
                done[j] = end;
            }
        }
        Ok(done)
    }

    fn bypass(&mut self, m: &mut Media, req: WriteReq<'_>) -> Result<()> {
        let ss = self.ss;
        let n = req.data.len() as u64 / ss;
        let end = req.lba + n;
        let mut cur = req.lba;
        while cur < end {
            let band = self.layout.band_of(cur);
            let (_, hi) = self.layout.logical_range(band);
            let b = end.min(hi);
            if b == hi {
                // The run covers the rest of the band: write it straight from the host data.
                let src = ((cur - req.lba) * ss) as usize;
                let k = ((hi - cur) * ss) as usize;
                let data = if m.keeps_data() {
                    &req.data[src..src + k]
                } else {
                    &[][..]
                };
                wr(m, self.layout.native(cur), hi - cur, data)?;
                self.d.commit(m, JRec::native(None, cur, hi))?;
                self.stats.bypass_writes += 1;
                cur = b;
                continue;
            }
            // Rewrite [cur, hi): the new data, then the rest of the band as it reads now.
            let mut img = band_buf(m, hi - cur);
            let k = ((b - cur) * ss) as usize;
            let src = ((cur - req.lba) * ss) as usize;
            if !img.is_empty() {
                img[..k].copy_from_slice(&req.data[src..src + k]);
            }
            if b < hi {
                let native = self.layout.native(b);
                let rest = part(&mut img, k, ((hi - cur) * ss) as usize);
                self.stats.salvaged_sectors += salvage_read(m, native, hi - b, rest)?;
                for p in self.d.live.map.pieces_in(b, hi - b) {
                    let o = ((p.lba - cur) * ss) as usize;
                    let e = o + (p.len * ss) as usize;
                    rd(m, p.pos, p.len, part(&mut img, o, e))?;
                }
            }
            wr(m, self.layout.native(cur), hi - cur, &img)?;
            self.d.commit(m, JRec::native(None, cur, hi))?;
            self.stats.bypass_writes += 1;
            cur = b;
        }
        Ok(())
    }

    fn discard(&mut self, m: &mut Media, lba: u64, n: u64) -> Result<()> {
        self.d.commit(m, JRec::native(None, lba, lba + n))
    }

    fn background(&mut self, m: &mut Media, last_io: Nanos, until: Nanos) -> Result<()> {
        let work = !self.d.live.entries.is_empty();
        let Some(start) = idle_start(&self.cfg, last_io, until, work) else {
            return Ok(());
        };
        let ran = clean_until(m, start, until, |m| {
            let Some(b) = self.oldest_band() else {
                return Ok(false);
            };
            self.clean_band(m, b).map(|()| true)
        })?;
        self.stats.cleaning_runs += u64::from(ran);
        Ok(())
    }

    fn recover(&mut self, m: &mut Media, redo: bool) -> Result<()> {
        self.d.recover_counted(m, &mut self.stats)?;
        if let (true, Some(band)) = (redo, self.d.live.staged) {
            // A power cut hit the band write: redo it from the staged image.
            let (lo, hi) = self.layout.logical_range(band);
            let mut img = band_buf(m, hi - lo);
            read_across(m, &self.layout, &self.layout.staging, &mut img, hi - lo)?;
            let native = self.layout.bands[self.layout.data[band]].start;
            wr(m, native, hi - lo, &img)?;
            self.d.commit(m, JRec::native(Some(band), lo, hi))?;
        }
        Ok(())
    }

    fn band_range(&self, lba: u64) -> (u64, u64) {
        self.layout.band_range(lba)
    }

    fn restore_stats(&mut self, s: &StlStats) {
        restore_counters(&mut self.stats, s);
        self.slot = (self.stats.map_merges % 2) as usize;
    }

    fn log(&mut self) -> &mut dyn LogOps {
        &mut self.d
    }

    fn live_runs(&self) -> Vec<LiveRun> {
        let l = &self.layout;
        let st = &self.d.live;
        live_runs_of(l, &st.map, true, st.staged, |b| l.bands[l.data[b]].start)
    }

    fn staged_band(&self) -> Option<usize> {
        self.d.live.staged
    }

    fn stats(&self) -> StlStats {
        let st = &self.d.live;
        let live = st.entries.len() as u64;
        current_stats(&self.stats, self.ss, st.used, &st.map, live)
    }
}
