//! Filling the persistent cache until cleaning starts (TESTs 6-8, 9-10): writes spread evenly
//! over the whole drive (a golden-ratio sequence: random-looking, but every region, cache set
//! and zone receives its share at the same rate, as section 4.6 asks of random writes) at a
//! given size and queue depth, watching for the collapse of throughput.

use crate::error::Result;
use crate::session::Session;
use crate::stats::{median, Collapse};

/// The golden-ratio (Weyl) sequence: evenly spread fractions in [0, 1).
pub(crate) struct Spread {
    x: f64,
}

impl Spread {
    /// A sequence starting at `seed` (a fraction).
    pub fn new(seed: f64) -> Self {
        Spread { x: seed.fract() }
    }

    /// The next fraction.
    pub fn next_frac(&mut self) -> f64 {
        const PHI: f64 = 0.618_033_988_749_894_8;
        self.x = (self.x + PHI).fract();
        self.x
    }

    /// The next offset of a `len`-byte write inside `[lo, hi)`, aligned to `align`.
    pub fn next_off(&mut self, lo: u64, hi: u64, len: u64, align: u64) -> u64 {
        let span = hi.saturating_sub(lo).saturating_sub(len);
        let o = lo + (self.next_frac() * span as f64) as u64;
        o / align * align
    }
}

/// Where a fill writes next.
pub(crate) enum Order {
    /// Evenly over the drive (a golden-ratio sequence).
    Golden(Spread),
    /// The bands in LBA order, one write each, then again a write further into each: a set-
    /// associative cache (data band b → cache set b mod n) then receives its writes set by
    /// set in turn, so that all its sets fill together, where writes spread by LBA reach some
    /// sets more often than others.
    Bands {
        /// Start of every band (sizes from TEST 11, interpolated between its offsets).
        starts: Vec<u64>,
        /// Next band.
        k: usize,
        /// Pass over the bands.
        pass: u64,
    },
}

impl Order {
    /// The bands of a drive of `cap` bytes whose band size at each of `bands` (offset,
    /// bytes) is known: sizes interpolated linearly between the offsets, aligned to `align`.
    pub fn bands(bands: &[(u64, u64)], cap: u64, align: u64) -> Option<Order> {
        let mut pts: Vec<(u64, u64)> = bands.to_vec();
        pts.sort_unstable();
        let first = *pts.first()?;
        let size_at = |o: u64| -> u64 {
            let last = pts[pts.len() - 1];
            if o <= first.0 {
                return first.1;
            }
            if o >= last.0 {
                return last.1;
            }
            let i = pts.partition_point(|p| p.0 <= o);
            let (a, b) = (pts[i - 1], pts[i]);
            let t = (o - a.0) as f64 / (b.0 - a.0).max(1) as f64;
            (a.1 as f64 + t * (b.1 as f64 - a.1 as f64)) as u64
        };
        let mut starts = Vec::new();
        let mut o = 0u64;
        while o < cap {
            starts.push(o);
            o += (size_at(o) / align * align).max(align);
        }
        Some(Order::Bands {
            starts,
            k: 0,
            pass: 0,
        })
    }

    fn next_off(&mut self, cap: u64, len: u64, align: u64) -> u64 {
        match self {
            Order::Golden(seq) => seq.next_off(0, cap, len, align),
            Order::Bands { starts, k, pass } => {
                let start = starts[*k];
                let end = starts.get(*k + 1).copied().unwrap_or(cap);
                let room = end.saturating_sub(start).saturating_sub(len).max(1);
                let off = start + (*pass * len) % room;
                *k += 1;
                if *k == starts.len() {
                    *k = 0;
                    *pass += 1;
                }
                (off / align * align).min(cap.saturating_sub(len) / align * align)
            }
        }
    }
}

/// One fill run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fill {
    /// Write size, bytes.
    pub size: u64,
    /// Queue depth.
    pub qd: usize,
    /// Latency of each batch (of `qd` writes), ms.
    pub batches: Vec<f64>,
    /// Batch where the collapse began (cleaning started).
    pub onset: Option<usize>,
    /// Batch where a second, harder collapse began (the cache or map completely full).
    pub hard: Option<usize>,
    /// Median batch latency before the onset and between the onset and the hard limit.
    pub levels: (f64, f64),
}

impl Fill {
    /// Writes completed before cleaning started.
    pub fn ops(&self) -> Option<u64> {
        self.onset.map(|b| (b * self.qd) as u64)
    }

    /// Writes completed before the hard limit.
    pub fn hard_ops(&self) -> Option<u64> {
        self.hard.map(|b| (b * self.qd) as u64)
    }

    /// Latency per write for a plot: each batch's latency at its first write's index.
    pub fn points(&self) -> Vec<(f64, f64)> {
        self.batches
            .iter()
            .enumerate()
            .map(|(i, &l)| ((i * self.qd) as f64, l))
            .collect()
    }
}

/// Writes `size`-byte blocks at queue depth `qd`, evenly over the drive, until throughput
/// collapses (or `max_ops`). With `hard`, goes on after the collapse until a second, harder
/// one (or 1.6 times the writes before the first).
pub(crate) fn fill(
    s: &mut Session<'_>,
    size: u64,
    qd: usize,
    max_ops: u64,
    hard: bool,
    seed: f64,
) -> Result<Fill> {
    let order = Order::Golden(Spread::new(seed));
    fill_in(s, size, qd, max_ops, hard, order, Watch::default())
}

/// A lazy drive's cleaning forced by a [`fill`] of `size`-byte writes at queue depth `qd`
/// (TESTs 11 and 12, which need some cleaning done, not the cache's size): a sustained rise
/// of the level counts too. Earlier writes may have filled the cache of part of the drive
/// already (a fully associative zone whose spare bands a TEST's own blocks took), so that
/// the fill starts at a level where a share of its writes clean, and the rest of the cache
/// filling only doubles or triples that level: the 4x of a collapse from a clean start is
/// never reached and the fill would run to its end.
///
/// With `early`, two slow batches in a row are a collapse (not 6 of 8): a set-associative
/// cache whose sets the fill reaches evenly fills them all at once, and a lazy drive then
/// cleans set after set within a few batches, every band of the TEST's regions among them,
/// so that six slow batches later nothing is left to tell one band from the next.
pub(crate) fn fill_forcing(
    s: &mut Session<'_>,
    size: u64,
    qd: usize,
    max_ops: u64,
    seed: f64,
    early: bool,
) -> Result<Fill> {
    let order = Order::Golden(Spread::new(seed));
    let watch = Watch {
        rise: true,
        early,
        ..Watch::default()
    };
    fill_in(s, size, qd, max_ops, false, order, watch)
}

/// What besides a collapse from a clean start ends a [`fill_in`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Watch {
    /// A sustained rise to twice the starting level ([`fill_forcing`]).
    pub rise: bool,
    /// Two slow batches in a row are a collapse ([`fill_forcing`]).
    pub early: bool,
    /// What a write costs at least when it must first clean a band (a band read and
    /// written, ms), when known: a fill whose first batches (their median) already cost half
    /// of that per write started in a full cache (one of a few dozen band-sized units, taken
    /// by the first batch), and its onset is its first batch. A band-by-band fill's slow
    /// batch must also exceed the level by this much (a set cleaned, not a long seek).
    pub merge_ms: Option<f64>,
}

/// A sustained rise: this many batches in a row's window, nearly all of them at twice the
/// level before (a collapse from a clean start needs 6 of 8 at four times it).
const RISE_WINDOW: usize = 64;
const RISE_NEED: usize = 60;

/// [`fill`], writing in `order`, watching for what `watch` names besides.
pub(crate) fn fill_in(
    s: &mut Session<'_>,
    size: u64,
    qd: usize,
    max_ops: u64,
    hard: bool,
    mut seq: Order,
    watch: Watch,
) -> Result<Fill> {
    let mut f = Fill {
        size,
        qd,
        ..Fill::default()
    };
    s.stage(format!(
        "filling the cache with {} writes of {} at queue depth {qd}",
        max_ops,
        crate::report::bytes(size)
    ));
    let align = s.bs;
    let cap = s.cap;
    let sweep = matches!(seq, Order::Bands { .. });
    let mut collapse: Option<Collapse> = None;
    let mut hard_detector: Option<Collapse> = None;
    let mut rising: Option<Collapse> = None;
    let max_batches = (max_ops as usize).div_ceil(qd).max(1);
    let tick_every = (max_batches / 500).max(1);
    for b in 0..max_batches {
        let offs: Vec<u64> = (0..qd).map(|_| seq.next_off(cap, size, align)).collect();
        let lat = if qd == 1 {
            s.write(offs[0], size)?
        } else {
            s.write_batch(&offs, size)?.into_iter().fold(0.0, f64::max)
        };
        f.batches.push(lat);
        if b % tick_every == 0 {
            s.tick(tick_every as u64);
        }
        if b == 7 {
            // The level before cleaning, from the first batches but the very first (a seek
            // to the cache): a small cache may fill within a few dozen batches, so a later
            // median could already be the collapsed level.
            // Their median, but at most twice the fastest: a cache of a few dozen units is
            // full after a batch or two, so even a median of these could be the collapsed
            // level.
            let fastest = f.batches[1..].iter().copied().fold(f64::INFINITY, f64::min);
            let base = median(&f.batches[1..]).min(2.0 * fastest);
            f.levels.0 = base;
            // Filled band by band, every set fills at once: the first cleaning is the onset,
            // and what follows cleans a set per write (not worth waiting for): two slow
            // batches in a row, each slower than the level by a band merge at least (a set
            // cleaned), where known. A batch that crosses to another surface's stroke can
            // take 5.9x the level without cleaning anything (emulated-smr-1, once, then
            // twice in a row further on).
            let (window, need) = if sweep || watch.early { (2, 2) } else { (8, 6) };
            let merge_floor = if sweep {
                base + watch.merge_ms.unwrap_or(0.0)
            } else {
                0.0
            };
            let bar = (4.0 * base).max(base + 150.0).max(merge_floor);
            collapse = Some(Collapse::new(bar, window, need));
            let typical = median(&f.batches[1..]);
            if watch
                .merge_ms
                .is_some_and(|m| typical / qd as f64 >= 0.5 * m)
            {
                f.onset = Some(0);
                break;
            }
            if watch.rise {
                rising = Some(Collapse::new(2.0 * base, RISE_WINDOW, RISE_NEED));
            }
            for (i, &l) in f.batches.iter().enumerate() {
                if let Some(c) = &mut collapse {
                    if let Some(at) = c.push(i, l) {
                        f.onset = Some(at);
                    }
                }
                if let Some(r) = &mut rising {
                    if let (Some(at), None) = (r.push(i, l), f.onset) {
                        f.onset = Some(at);
                    }
                }
            }
        } else if let (Some(c), None) = (&mut collapse, f.onset) {
            let by_rise = rising.as_mut().and_then(|r| r.push(b, lat));
            if let Some(at) = c.push(b, lat).or(by_rise) {
                f.onset = Some(at);
                if !hard {
                    break;
                }
            }
        } else if let Some(on) = f.onset {
            if b >= on.max(8) * 16 / 10 {
                break;
            }
            // The soft phase: one band cleaned per internal write. Its level sets the bar.
            if b == on + 24 {
                let soft = median(&f.batches[on + 8..]);
                f.levels.1 = soft;
                hard_detector = Some(Collapse::new(3.0 * soft, 8, 6));
                for i in on + 8..=b {
                    if let Some(h) = &mut hard_detector {
                        if let Some(at) = h.push(i, f.batches[i]) {
                            f.hard = Some(at);
                        }
                    }
                }
            } else if let (Some(h), None) = (&mut hard_detector, f.hard) {
                if let Some(at) = h.push(b, lat) {
                    f.hard = Some(at);
                }
            }
            if f.hard.is_some() {
                break;
            }
        }
    }
    Ok(f)
}

/// A count of cache units (TEST 8 on a drive whose cache is allocated per band).
#[derive(Debug, Clone, Default)]
pub(crate) struct Units {
    /// Latency of each write, ms.
    pub lat: Vec<f64>,
    /// Writes that completed without cleaning: the units the cache holds.
    pub units: Option<u64>,
}

impl Units {
    /// Latency per write for a plot.
    pub fn points(&self) -> Vec<(f64, f64)> {
        self.lat
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as f64, l))
            .collect()
    }
}

/// Single `size`-byte writes, evenly spread, on past the first collapse: counts the writes
/// that complete without cleaning until 64 in a row need it (every unit taken).
/// `merge_ms` is what a write that must first merge a unit costs at least (a band read and
/// written).
pub(crate) fn fill_units(
    s: &mut Session<'_>,
    size: u64,
    seed: f64,
    merge_ms: f64,
) -> Result<Units> {
    s.stage(format!(
        "counting cache units with single writes of {}",
        crate::report::bytes(size)
    ));
    let mut u = Units::default();
    let mut seq = Spread::new(seed);
    let cap = s.cap;
    let align = s.bs;
    let mut thr = f64::INFINITY;
    let mut fast = 0u64;
    let mut run = 0u32;
    let mut seen_slow = false;
    for i in 0..2_000_000u64 {
        let off = seq.next_off(0, cap, size, align);
        let l = s.write(off, size)?;
        u.lat.push(l);
        if i == 15 {
            // A write that has to clean first (merge a band) costs a band's read and write
            // more than one that finds a free unit; half of that, at least, is the bar (a
            // write that only seeks farther than most stays under it).
            let base = median(&u.lat[1..]);
            thr = base + (0.5 * merge_ms).max(0.5 * base).max(40.0);
            fast = u.lat.iter().filter(|&&x| x <= thr).count() as u64;
            continue;
        }
        if i < 16 {
            continue;
        }
        if l > thr {
            seen_slow = true;
            run += 1;
            if run >= 64 {
                u.units = Some(fast);
                break;
            }
        } else {
            fast += 1;
            run = 0;
        }
        if i % 64 == 0 {
            s.tick(1);
        }
    }
    if !seen_slow {
        u.units = None;
    }
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_golden_ratio_sequence_fills_every_bin_evenly() {
        let mut s = Spread::new(0.3);
        let mut bins = [0u32; 97];
        for _ in 0..97 * 50 {
            bins[(s.next_frac() * 97.0) as usize] += 1;
        }
        let (lo, hi) = (bins.iter().min().copied(), bins.iter().max().copied());
        assert!(lo >= Some(48) && hi <= Some(52), "{lo:?}..{hi:?}");
    }
}
