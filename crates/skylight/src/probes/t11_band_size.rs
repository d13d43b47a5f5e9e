//! TEST 11 (section 4.8): band size. 4 KiB is written at the start of every `a`-sized block
//! of a linear region, in random order; cleaning is forced (a pause on an aggressive drive, a
//! cache fill on a lazy one); the blocks are read back in order (Figure 19). Cleaning rewrites
//! whole bands, so a cleaned band reads as a run of blocks at their native locations —
//! streaming at the stride's rotational delay — among blocks still in the cache (a seek each,
//! or a sub-millisecond flash read). Regions at several offsets show how the band size varies
//! from the outer to the inner diameter.

use super::fill::fill_forcing;
use crate::error::Result;
use crate::plot::Plot;
use crate::report::{bytes, BandSize};
use crate::session::Session;
use crate::stats::median;
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::json;
use tegula_device::SEC;

/// Stride between the written blocks (the paper's accuracy granularity `a`), unless the
/// cache holds too few blocks for it.
const STRIDE: u64 = 128 << 10;
/// Shortest run of native reads taken for a band (2 MiB, and at least 4 reads): cache reads
/// that happen to be fast (short hops inside the cache) never line up this long.
const MIN_RUN_BYTES: u64 = 2 << 20;
/// Latencies this close (ms) count as identical (at least).
const SAME_MS: f64 = 0.05;
/// Native reads repeat a latency at most this many reads apart.
const PERIOD: usize = 4;
/// Slow reads between native ones that still belong to the same cleaned run (when they are
/// no slower than native reads can be, and there are at least `STRETCH` native reads on
/// either side).
const MAX_GAP: usize = 2;
const STRETCH: usize = 2;
/// Rounds of forced cleaning at most.
const ROUNDS: i32 = 6;
/// Regions are this many times the largest band expected (64 MiB).
const REGION_BANDS: u64 = 50;

/// What a native read looks like in one region.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Native {
    /// A disk cache: native reads at a fixed stride repeat the same few latencies (the
    /// stride's rotational delay, and a track switch every few reads; section 4.8): a native
    /// read matches one of its near neighbours within the first value (ms), and is not slower
    /// than the second (the slowest native read, a track switch, with a margin). Reads from the cache vary with the distance and angle of each cached
    /// copy, and near the cache some of them are as fast, so speed alone does not tell them
    /// apart.
    Repeats(f64, f64),
    /// A flash cache: native reads are the ones slower than this (ms).
    Above(f64),
}

impl Native {
    /// From reads at the stride where nothing was written (the first left out: a seek).
    fn calibrate(c: &[f64], flash: bool) -> Native {
        let c = &c[1.min(c.len())..];
        if flash {
            return Native::Above(c.iter().copied().fold(f64::INFINITY, f64::min) * 0.7);
        }
        // How far a native read strays from its neighbour's pattern on this target (none on
        // a virtual clock; host noise on a wall clock).
        let dev: Vec<f64> = (PERIOD..c.len())
            .map(|i| {
                (1..=PERIOD)
                    .map(|p| (c[i] - c[i - p]).abs())
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        let eps = (3.0 * median(&dev)).clamp(SAME_MS, 1.0);
        let hi = crate::stats::quantile(c, 0.99) * 1.2 + 0.2;
        Native::Repeats(eps, hi)
    }
}

/// Which of `lat` are native reads.
fn native_flags(lat: &[f64], native_at: Native) -> Vec<bool> {
    match native_at {
        Native::Above(thr) => lat.iter().map(|&l| l > thr).collect(),
        Native::Repeats(eps, hi) => (0..lat.len())
            .map(|i| {
                let l = lat[i];
                l <= hi
                    && (1..=PERIOD).any(|p| {
                        (i >= p && (l - lat[i - p]).abs() <= eps)
                            || (i + p < lat.len() && (l - lat[i + p]).abs() <= eps)
                    })
            })
            .collect(),
    }
}

/// Runs of native reads, as `[start, end)` block indices. On a disk cache the first read of
/// a cleaned band comes after a seek from the cache, so it belongs to the run too.
pub(crate) fn native_runs(lat: &[f64], native_at: Native) -> Vec<(usize, usize)> {
    let flash = matches!(native_at, Native::Above(_));
    let mut native = native_flags(lat, native_at);
    // Gaps are bridged only where they are as fast as native reads can be (a track switch);
    // a seek (to a band remapped elsewhere, or to the cache) ends a run.
    let switch = match native_at {
        Native::Repeats(_, hi) => hi,
        Native::Above(_) => f64::NEG_INFINITY,
    };
    // Cleaning rewrites a whole band, so a band left in the cache shows as a run of cache
    // reads as long as the band (every block at the stride was written): one or two slow
    // reads among native ones are the native layout's own (a track or surface switch that
    // missed a revolution), not a band boundary.
    let stretch = |from: usize, back: bool| -> usize {
        let mut n = 0;
        let mut k = from as isize;
        while k >= 0 && (k as usize) < native.len() && native[k as usize] {
            n += 1;
            k += if back { -1 } else { 1 };
        }
        n
    };
    let mut gaps = Vec::new();
    let mut i = 1;
    while i < native.len() {
        if !native[i] && native[i - 1] {
            let mut j = i;
            while j < native.len() && !native[j] {
                j += 1;
            }
            if j < native.len()
                && j - i <= MAX_GAP
                && lat[i..j].iter().all(|&l| l <= switch)
                && stretch(i - 1, true) >= STRETCH
                && stretch(j, false) >= STRETCH
            {
                gaps.push((i, j));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    let repeats = native.clone();
    for (i, j) in gaps {
        native[i..j].iter_mut().for_each(|x| *x = true);
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < native.len() {
        if !native[i] {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < native.len() && native[j] {
            j += 1;
        }
        // A disk cache: the slow read before a fast run is the band's first block.
        let start = if flash || i == 0 { i } else { i - 1 };
        // A cleaned band reads natively all along but for its track switches: a run bridged
        // over many gaps is chance repeats among cache reads.
        let own = repeats[i..j].iter().filter(|&&r| r).count();
        if own * 5 >= (j - i) * 4 {
            out.push((start, j));
        }
        i = j;
    }
    out
}

/// The band size from run lengths (in blocks of `stride`). Adjacent cleaned bands merge into
/// one run, so the band is the length (seen at least twice, and a quarter as often as the
/// commonest) whose one to six multiples (each within a block and 3%) cover the most reads;
/// its runs are averaged (a band starts anywhere between two written blocks, so one run
/// is ±1 block). Returns the size and how many runs had that length.
pub(crate) fn band_from_runs(lens: &[u64], stride: u64) -> Option<(u64, usize)> {
    if lens.is_empty() {
        return None;
    }
    let fits = |l: u64, x: u64| -> bool {
        (1..=6u64).any(|k| (x as f64 - (k * l) as f64).abs() <= 1.0 + 0.03 * (k * l) as f64)
    };
    let exact = |l: u64| lens.iter().filter(|&&x| x.abs_diff(l) <= 1).count();
    let mut cands: Vec<u64> = lens.to_vec();
    cands.sort_unstable();
    cands.dedup();
    // Lengths seen often enough to be a band: at least twice, and at least a quarter as
    // often as the commonest length (a few runs of half a band, a band partly cleaned or a
    // boundary read lost, must not halve the answer).
    let commonest = cands.iter().map(|&l| exact(l)).max().unwrap_or(0);
    let pick = cands
        .iter()
        .copied()
        .filter(|&l| (exact(l) >= 2 && exact(l) * 4 >= commonest) || lens.len() == 1)
        .max_by_key(|&l| {
            // The reads the length explains as one to six bands.
            let covered: u64 = lens.iter().filter(|&&x| fits(l, x)).sum();
            (covered, exact(l), u64::MAX - l)
        })
        .or_else(|| {
            // No length repeats: the one explaining the most runs (ties: the shortest).
            cands
                .iter()
                .copied()
                .max_by_key(|&l| (lens.iter().filter(|&&x| fits(l, x)).count(), u64::MAX - l))
        })?;
    let group: Vec<u64> = lens
        .iter()
        .copied()
        .filter(|&x| x.abs_diff(pick) <= 1)
        .collect();
    let m = group.iter().sum::<u64>() as f64 / group.len() as f64;
    Some(((m * stride as f64).round() as u64, group.len()))
}

/// What one region showed.
struct Seen {
    start: u64,
    lat: Vec<f64>,
    runs: Vec<(usize, usize)>,
    band: Option<(u64, u64, usize, usize)>,
    note: String,
}

/// Reads `n` blocks at `stride` from `start`; latencies in ms.
fn stride_reads(s: &mut Session<'_>, start: u64, n: usize, stride: u64) -> Result<Vec<f64>> {
    let mut lat = Vec::with_capacity(n);
    for j in 0..n as u64 {
        lat.push(s.read(start + j * stride, s.bs)?);
        if j % 256 == 0 {
            s.tick(1);
        }
    }
    Ok(lat)
}

/// How native reads were told apart, for the evidence.
fn describe(n: &[Native]) -> String {
    n.iter()
        .map(|n| match *n {
            Native::Repeats(e, hi) => {
                format!("repeating a neighbour's latency within {e:.2} ms, below {hi:.1} ms")
            }
            Native::Above(t) => format!("above {t:.2} ms"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads a region and finds its cleaned bands.
fn look(
    s: &mut Session<'_>,
    start: u64,
    per: usize,
    stride: u64,
    native_at: Native,
    before: &[(usize, usize)],
) -> Result<Seen> {
    let lat = stride_reads(s, start, per, stride)?;
    let runs = native_runs(&lat, native_at);
    // Runs already there before cleaning was forced are not its work (bands cleaned while
    // the blocks were written, or cache reads that happened to repeat).
    let inner: Vec<&(usize, usize)> = runs
        .iter()
        .filter(|r| r.0 > 0 && r.1 < per)
        .filter(|r| {
            !before
                .iter()
                .any(|b| b.0.abs_diff(r.0) <= 1 && b.1.abs_diff(r.1) <= 1)
        })
        .collect();
    let lens: Vec<u64> = inner
        .iter()
        .map(|r| (r.1 - r.0) as u64)
        .filter(|&l| l >= (MIN_RUN_BYTES / stride).max(4))
        .collect();
    let native = runs.iter().map(|r| r.1 - r.0).sum::<usize>();
    let band = band_from_runs(&lens, stride).map(|(b, n)| {
        let at = inner
            .iter()
            .find(|r| ((r.1 - r.0) as u64 * stride).abs_diff(b) <= stride)
            .map_or(start, |r| start + r.0 as u64 * stride);
        (at, b, n, lens.len())
    });
    let note = format!(
        "at {:.2} TB: {native} of {per} blocks native, {} runs inside",
        start as f64 / 1e12,
        lens.len()
    );
    Ok(Seen {
        start,
        lat,
        runs,
        band,
        note,
    })
}

/// Runs TEST 11.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(11, "band size", 3000);
    let slate = s.clean_slate()?;
    let bs = s.bs;
    let wall = !s.virtual_time();
    let len = ((if wall { 16 } else { REGION_BANDS }) * (64 << 20)).min(s.cap / 10);
    // The written blocks must stay in the cache until cleaning is forced: a journal holds
    // only so many queued 4 KiB writes before it cleans (TEST 7 counted them), so the stride
    // grows until the three regions' blocks (and a quarter more, below) take at most 60% of
    // that.
    let mut stride = STRIDE;
    if let Some(fit) = s.f.map_soft.map(|m| m * 6 / 10) {
        while 3 * (len / stride) * 5 / 4 > fit && stride < 4 << 20 {
            stride *= 2;
        }
    }
    let len = len / stride * stride;
    let cal = 256usize;
    let starts: Vec<u64> = [0.06, 0.52, 0.9]
        .iter()
        .map(|f| {
            ((s.cap as f64 * f) as u64 / stride * stride)
                .min(s.cap - len - (cal as u64 + 2) * stride)
        })
        .collect();
    let per = (len / stride) as usize;
    // Every block of every region, in one random order; on a drive that cleans in idle time,
    // a quarter as many again between them at random. The extra blocks make the bands'
    // shares of the cache unequal and unrelated to their neighbours': a drive that cleans its
    // fullest cache set first (set-associative) would otherwise clean neighbouring bands one
    // after the other, and they would read as one band several times as long.
    let mut blocks: Vec<u64> = starts
        .iter()
        .flat_map(|&o| (0..per as u64).map(move |j| o + j * stride))
        .collect();
    let between = stride / bs;
    if between > 1 && s.f.aggressive == Some(true) {
        for &o in &starts {
            for _ in 0..per / 4 {
                let j = s.rng.gen_range(0..per as u64);
                let k = s.rng.gen_range(1..between);
                blocks.push(o + j * stride + k * bs);
            }
        }
    }
    blocks.shuffle(&mut s.rng);
    for chunk in blocks.chunks(31) {
        s.write_batch(chunk, bs)?;
        s.tick(1);
    }
    // Native reads at the stride, where nothing was written, next to each region.
    let flash = s.f.flash == Some(true);
    let mut natives = Vec::new();
    for &st in &starts {
        let c = stride_reads(s, st + len + stride, cal, stride)?;
        natives.push(Native::calibrate(&c, flash));
    }
    let aggressive = s.f.aggressive == Some(true);
    let delay = s.f.idle_delay.map_or(1.0, |t| t as f64 / SEC as f64);
    let band_t = s.f.band_clean.map_or(1.0, |t| t as f64 / SEC as f64);
    let mut how = "no pause".to_string();
    // Each region's band from the first round after cleaning was forced that shows it in
    // three runs (or, failing that, the first seen twice): more cleaning merges neighbouring bands
    // into longer runs, and the first round, before any cleaning was forced, is never enough
    // on its own (the paper forces cleaning before it reads).
    let mut best: Vec<Option<Seen>> = (0..starts.len()).map(|_| None).collect();
    let mut unforced: Vec<Seen> = Vec::new();
    let (mut lazy_onset, mut lazy_written) = (0u64, 0u64);
    let mut first: Vec<Vec<(usize, usize)>> = Vec::new();
    let exact = |x: &Option<Seen>| x.as_ref().and_then(|x| x.band).map_or(0, |b| b.2);
    for round in 0..ROUNDS {
        let mut seen: Vec<Seen> = Vec::new();
        for (k, (&st, &n)) in starts.iter().zip(&natives).enumerate() {
            let before = first.get(k).map_or(&[][..], |x| &x[..]);
            seen.push(look(s, st, per, stride, n, before)?);
        }
        for x in &seen {
            tracing::debug!("band size round {round}: {} {:?}", x.note, x.band);
        }
        if round == 0 {
            first = seen.iter().map(|x| x.runs.clone()).collect();
            unforced = seen;
        } else {
            for (k, x) in seen.into_iter().enumerate() {
                let n = x.band.map_or(0, |b| b.2);
                let had = exact(&best[k]);
                // A band seen twice is only replaced by the same band seen more often.
                let agrees = match (best[k].as_ref().and_then(|b| b.band), x.band) {
                    (Some(o), Some(b)) => o.1.abs_diff(b.1) * 10 <= o.1,
                    _ => true,
                };
                if had < 3 && n > had && (had < 2 || agrees) {
                    best[k] = Some(x);
                }
            }
            if best.iter().all(|x| exact(x) >= 3) {
                break;
            }
        }
        // Force (more) cleaning.
        if aggressive {
            let pause = delay + band_t * 8.0 * 4f64.powi(round.min(5));
            s.idle(pause)?;
            how = format!("{pause:.0} s idle");
        } else {
            // A lazy drive cleans only to make room: fill the cache until cleaning starts,
            // then by an eighth of that more at a time, so that some bands, not all, are
            // cleaned when the regions are read.
            let more = if round == 0 {
                100_000_000
            } else {
                (lazy_onset / 8).max(31)
            };
            // A block-mapped (set-associative) cache: stop at its first cleaning.
            let early = s.f.entries.is_none();
            let f = fill_forcing(s, 256 << 10, 31, more, 0.123 + 0.1 * round as f64, early)?;
            let n = f.batches.len() as u64 * 31;
            if round == 0 {
                lazy_onset = f.ops().unwrap_or(n);
            }
            lazy_written += n;
            how = format!(
                "cache fills of {lazy_written} writes of 256 KiB (cleaning from write {lazy_onset})"
            );
        }
    }
    let best: Vec<Seen> = best
        .into_iter()
        .zip(unforced)
        .map(|(b, u)| b.unwrap_or(u))
        .collect();
    let mut plot = Plot::new(
        "t11_band_size.svg",
        "TEST 11: reads of the written blocks after cleaning (Figure 19)",
        "offset in region (MiB)",
        "read latency (ms)",
    );
    for x in &best {
        plot = plot.dots(
            &format!("at {:.2} TB", x.start as f64 / 1e12),
            x.lat
                .iter()
                .enumerate()
                .map(|(j, &l)| ((j as u64 * stride) as f64 / (1 << 20) as f64, l))
                .collect(),
        );
    }
    s.plots.push(plot.log());
    let notes: Vec<String> = best.iter().map(|x| x.note.clone()).collect();
    let found: Vec<(u64, u64, usize, usize)> = best.iter().filter_map(|x| x.band).collect();
    if found.is_empty() {
        let why = format!(
            "no cleaned band found after {how} (native reads: {}; {})",
            describe(&natives),
            notes.join("; ")
        );
        s.report.unknown("band_size_bytes", "11", why.clone());
        return Ok(why);
    }
    s.f.bands = found.iter().map(|f| (f.0, f.1)).collect();
    s.f.bands_sure = found.len() == starts.len() && found.iter().all(|f| f.2 >= 3);
    s.report.band_size_bytes = found
        .iter()
        .map(|f| BandSize {
            offset: f.0,
            bytes: f.1,
        })
        .collect();
    let sizes: Vec<String> = found
        .iter()
        .map(|f| {
            format!(
                "{} at {:.2} TB ({} of {} runs)",
                bytes(f.1),
                f.0 as f64 / 1e12,
                f.2,
                f.3
            )
        })
        .collect();
    let min_runs = found.iter().map(|f| f.2).min().unwrap_or(0);
    s.report.set(
        "band_size_bytes",
        json!(found.iter().map(|f| json!({"offset": f.0, "bytes": f.1})).collect::<Vec<_>>()),
        "11",
        format!(
            "runs of native reads ({}) among cached ones at a {} stride after {how}: {}; {slate}; {}",
            describe(&natives),
            bytes(stride),
            sizes.join(", "),
            notes.join("; ")
        ),
        if min_runs >= 3 { 0.85 } else { 0.6 },
    );
    let mid = median(&found.iter().map(|f| f.1 as f64).collect::<Vec<_>>());
    Ok(format!(
        "bands {} (median {})",
        sizes.join(", "),
        bytes(mid as u64)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_native_reads_give_the_band() {
        // cached (slow) ... band of 10 blocks: 1 slow + 9 fast ... cached.
        let mut lat = vec![20.0; 40];
        for l in lat.iter_mut().skip(11).take(9) {
            *l = 1.3;
        }
        // Cache reads vary.
        for (i, l) in lat.iter_mut().enumerate() {
            *l = 2.0 + (i * 7 % 13) as f64;
        }
        for l in lat.iter_mut().skip(11).take(9) {
            *l = 1.3;
        }
        let n = Native::Repeats(0.05, 30.0);
        assert_eq!(native_runs(&lat, n), vec![(10, 20)]);
        // A track switch inside a cleaned band does not end its run; cache reads as fast as
        // native ones, but not repeating, do not make one.
        lat[15] = 9.5;
        lat[30] = 0.9;
        lat[32] = 0.7;
        assert_eq!(native_runs(&lat, n), vec![(10, 20)]);
        assert_eq!(
            band_from_runs(&[10, 10, 11, 20], 1 << 20),
            Some((10_485_760 + 349_525, 3))
        );
        // Two adjacent cleaned bands read as one run twice as long.
        assert_eq!(
            band_from_runs(&[20, 20, 20, 40, 40, 40, 40], 1),
            Some((20, 3))
        );
        // One run only: take it.
        assert_eq!(band_from_runs(&[33], 1), Some((33, 1)));
        assert_eq!(band_from_runs(&[], 1), None);
    }
}
