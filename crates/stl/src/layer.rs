//! The internal interface every translation layer implements, and the physical helpers they
//! share: reads and writes through the media, salvage reads, writes across a list of bands,
//! and the flash cache device.

use crate::durable::LogOps;
use crate::error::Result;
use crate::extmap::ExtentMap;
use crate::layout::Layout;
use crate::stats::StlStats;
use tegula_device::media::Media;
use tegula_device::store::Store;
use tegula_device::{DeviceError, IoDone, Nanos};

/// One host write handed to a layer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteReq<'a> {
    /// Logical LBA.
    pub lba: u64,
    /// Whole sectors.
    pub data: &'a [u8],
}

/// A shingle translation layer. Every physical access goes through the [`Media`]; on an error
/// the layer may be left inconsistent only when the media lost power, and
/// [`Layer::recover`] then rebuilds it from what was durable.
pub(crate) trait Layer: Send {
    /// Reads logical sectors at `lba` into `buf`.
    fn read(&mut self, m: &mut Media, lba: u64, buf: &mut [u8]) -> Result<()>;
    /// Writes a batch of host writes that arrived together (queue depth = batch size); returns
    /// each one's completion time. Every write is durable when it completes.
    fn write(&mut self, m: &mut Media, batch: &[WriteReq<'_>]) -> Result<Vec<Nanos>>;
    /// Writes a long sequential run destaged from the volatile cache. Layers with static
    /// mapping may overwrite the band in place (not crash safe); the default logs it.
    fn bypass(&mut self, m: &mut Media, req: WriteReq<'_>) -> Result<()> {
        self.write(m, &[req]).map(|_| ())
    }
    /// Forgets cached copies of logical `[lba, lba + n)`.
    fn discard(&mut self, m: &mut Media, lba: u64, n: u64) -> Result<()>;
    /// Background work while the host is idle, from the media's `now` up to `until`;
    /// `last_io` is when the host last issued a command.
    fn background(&mut self, m: &mut Media, last_io: Nanos, until: Nanos) -> Result<()>;
    /// Rebuilds the layer from its metadata log after power returns (or when an image is
    /// opened); with `redo`, finishes an interrupted staged band write.
    fn recover(&mut self, m: &mut Media, redo: bool) -> Result<()>;
    /// Current statistics.
    fn stats(&self) -> StlStats;
    /// Logical range `[lo, hi)` of the band holding `lba`.
    fn band_range(&self, lba: u64) -> (u64, u64);
    /// Restores the cumulative statistics saved in a drive image.
    fn restore_stats(&mut self, s: &StlStats);
    /// The layer's metadata log (sync, damage events, format upgrade).
    fn log(&mut self) -> &mut dyn LogOps;
    /// Where the live data sits on the media (for checks); the home of a band whose staged
    /// rewrite is unfinished is left out (its staged copy is what counts).
    fn live_runs(&self) -> Vec<LiveRun>;
    /// The logical band whose rewrite from the staging area is unfinished, if any (finished
    /// when the drive powers on writable).
    fn staged_band(&self) -> Option<usize> {
        None
    }
}

/// A run of live logical sectors and where the media holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LiveRun {
    /// First logical sector.
    pub lba: u64,
    /// Sectors.
    pub sectors: u64,
    /// Physical sector of `lba`.
    pub pos: u64,
    /// In the band's home (its data band) rather than in the persistent cache.
    pub home: bool,
}

/// The live runs of a layer that keeps a map of cached pieces over per-band homes: each
/// band's cached pieces (when the cache is on the media) and its unmapped gaps at
/// `home(band)` plus their offset in the band; the band `staged` is left out.
pub(crate) fn live_runs_of(
    layout: &Layout,
    map: &ExtentMap,
    cache_on_media: bool,
    staged: Option<usize>,
    home: impl Fn(usize) -> u64,
) -> Vec<LiveRun> {
    let mut out = Vec::new();
    for b in (0..layout.data.len()).filter(|&b| Some(b) != staged) {
        let (lo, hi) = layout.logical_range(b);
        for (lba, sectors, pos) in map.lookup(lo, hi - lo) {
            match pos {
                Some(pos) if cache_on_media => out.push(LiveRun {
                    lba,
                    sectors,
                    pos,
                    home: false,
                }),
                Some(_) => {}
                None => out.push(LiveRun {
                    lba,
                    sectors,
                    pos: home(b) + (lba - lo),
                    home: true,
                }),
            }
        }
    }
    out
}

/// Copies the cumulative counters of `from` into `to` (the derived, current figures are
/// recomputed by each layer).
pub(crate) fn restore_counters(to: &mut StlStats, from: &StlStats) {
    to.journal_entries = from.journal_entries;
    to.map_merges = from.map_merges;
    to.cleaning_runs = from.cleaning_runs;
    to.bands_cleaned = from.bands_cleaned;
    to.cleaning_bytes_read = from.cleaning_bytes_read;
    to.cleaning_bytes_written = from.cleaning_bytes_written;
    to.cleaning_ns = from.cleaning_ns;
    to.bypass_writes = from.bypass_writes;
    to.salvaged_sectors = from.salvaged_sectors;
    to.recoveries = from.recoveries;
    to.replayed_records = from.replayed_records;
}

/// The statistics of a layer: its cumulative `counters` with the current figures of its cache
/// filled in (`used` sectors of cache, the sectors `map` serves from it, `entries_live`
/// journal entries or cache bands holding data, with `ss`-byte sectors).
pub(crate) fn current_stats(
    counters: &StlStats,
    ss: u64,
    used: u64,
    map: &ExtentMap,
    entries_live: u64,
) -> StlStats {
    let mut s = counters.clone();
    s.cache_used_bytes = used * ss;
    s.cache_live_bytes = map.sectors() * ss;
    s.journal_entries_live = entries_live;
    s.map_entries = map.len() as u64;
    s
}

/// A buffer of `sectors` for a whole-band transfer, or an empty one on metadata-only media:
/// there the helpers below move no data, only time, damage and statistics (cleaning a 30 MiB
/// band must not cost 30 MiB of memset on a terabyte drive that keeps no data).
pub(crate) fn band_buf(m: &Media, sectors: u64) -> Vec<u8> {
    if m.keeps_data() {
        vec![0u8; (sectors * m.sector_size() as u64) as usize]
    } else {
        Vec::new()
    }
}

/// `buf[a..b]`, or the empty buffer of a metadata-only transfer.
pub(crate) fn part(buf: &mut [u8], a: usize, b: usize) -> &mut [u8] {
    if buf.is_empty() {
        &mut []
    } else {
        &mut buf[a..b]
    }
}

/// Reads `sectors` at `pos` into `buf` (empty: timing only).
pub(crate) fn rd(m: &mut Media, pos: u64, sectors: u64, buf: &mut [u8]) -> Result<IoDone> {
    if buf.is_empty() {
        Ok(m.read_no_data(pos, sectors)?)
    } else {
        Ok(m.read(pos, buf)?)
    }
}

/// Writes `sectors` at `pos` from `data` (empty: timing only), durable on completion.
pub(crate) fn wr(m: &mut Media, pos: u64, sectors: u64, data: &[u8]) -> Result<IoDone> {
    if data.is_empty() {
        Ok(m.write_no_data(pos, sectors)?)
    } else {
        Ok(m.write(pos, data, true)?)
    }
}

/// Writes `sectors` of `image` (empty: timing only) piecewise over `bands` from their starts
/// (staging area, map copies).
pub(crate) fn write_across(
    m: &mut Media,
    layout: &Layout,
    bands: &[usize],
    image: &[u8],
    sectors: u64,
) -> Result<Nanos> {
    let ss = layout.sector as usize;
    let mut off = 0u64;
    let mut end = m.now();
    for &b in bands {
        if off >= sectors {
            break;
        }
        let band = layout.bands[b];
        let n = (sectors - off).min(band.len);
        let piece = if image.is_empty() {
            &[][..]
        } else {
            &image[off as usize * ss..(off + n) as usize * ss]
        };
        end = wr(m, band.start, n, piece)?.end;
        off += n;
    }
    Ok(end)
}

/// Reads `sectors` into `buf` (empty: timing only) piecewise from `bands` (the counterpart
/// of [`write_across`]).
pub(crate) fn read_across(
    m: &mut Media,
    layout: &Layout,
    bands: &[usize],
    buf: &mut [u8],
    sectors: u64,
) -> Result<()> {
    let ss = layout.sector as usize;
    let mut off = 0u64;
    for &b in bands {
        if off >= sectors {
            break;
        }
        let band = layout.bands[b];
        let n = (sectors - off).min(band.len);
        rd(
            m,
            band.start,
            n,
            part(buf, off as usize * ss, (off + n) as usize * ss),
        )?;
        off += n;
    }
    Ok(())
}

/// Reads physical `[pos, pos + sectors)` into `buf` (empty: timing only), skipping sectors
/// destroyed by a torn in-place write (they read as zeros); returns how many were skipped.
/// Cleaning uses this so that one torn band does not stop the drive; everything else reads
/// with [`Media::read`] and fails loudly.
pub(crate) fn salvage_read(m: &mut Media, pos: u64, sectors: u64, buf: &mut [u8]) -> Result<u64> {
    let ss = m.sector_size() as u64;
    let n = sectors;
    let bad = m.shingling().destroyed().clipped(pos, pos + n);
    let bad2 = m.injected_errors().clipped(pos, pos + n);
    if bad.is_empty() && bad2.is_empty() {
        rd(m, pos, n, buf)?;
        return Ok(0);
    }
    let mut set = tegula_device::RangeSet::new();
    for (a, b) in bad.into_iter().chain(bad2) {
        set.insert(a, b);
    }
    let mut cur = pos;
    let mut skipped = 0;
    for (a, b) in set.iter().collect::<Vec<_>>() {
        if a > cur {
            let (s, e) = (((cur - pos) * ss) as usize, ((a - pos) * ss) as usize);
            rd(m, cur, a - cur, part(buf, s, e))?;
        }
        let (s, e) = (((a - pos) * ss) as usize, ((b - pos) * ss) as usize);
        part(buf, s, e).fill(0);
        skipped += b - a;
        cur = b;
    }
    if cur < pos + n {
        let s = ((cur - pos) * ss) as usize;
        let e = (n * ss) as usize;
        rd(m, cur, pos + n - cur, part(buf, s, e))?;
    }
    Ok(skipped)
}

/// A flash persistent cache: sub-millisecond accesses that advance the drive's clock without
/// moving the heads.
pub(crate) struct Flash {
    store: Option<Box<dyn Store>>,
    latency: Nanos,
    ns_per_byte: f64,
}

impl Flash {
    /// A flash device over `store` (none: metadata-only) with per-access `latency_us` and
    /// `mb_s` transfer rate.
    pub fn new(store: Option<Box<dyn Store>>, latency_us: u64, mb_s: u64) -> Self {
        Flash {
            store,
            latency: latency_us * 1000,
            ns_per_byte: 1e3 / mb_s as f64,
        }
    }

    fn charge(&self, m: &mut Media, bytes: usize) -> Result<()> {
        if !m.is_powered() {
            return Err(DeviceError::PowerLoss.into());
        }
        let t = m.now() + self.latency + (bytes as f64 * self.ns_per_byte) as Nanos;
        m.set_now(t);
        Ok(())
    }

    /// Reads `bytes` at byte offset `off` into `buf` (empty: timing only).
    pub fn read(&mut self, m: &mut Media, off: u64, bytes: u64, buf: &mut [u8]) -> Result<()> {
        self.charge(m, bytes as usize)?;
        match &mut self.store {
            Some(s) if !buf.is_empty() => s
                .read(off, buf)
                .map_err(|e| DeviceError::io("reading the flash cache", e))?,
            _ => buf.fill(0),
        }
        Ok(())
    }

    /// Writes `bytes` at byte offset `off` from `data` (empty: timing only).
    pub fn write(&mut self, m: &mut Media, off: u64, bytes: u64, data: &[u8]) -> Result<()> {
        self.charge(m, bytes as usize)?;
        if let Some(s) = &mut self.store {
            if !data.is_empty() {
                s.write(off, data)
                    .map_err(|e| DeviceError::io("writing the flash cache", e))?;
            }
        }
        Ok(())
    }
}
