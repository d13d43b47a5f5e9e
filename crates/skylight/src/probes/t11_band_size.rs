//! TEST 11 (section 4.8): band size. 4 KiB is written at the start of every `a`-sized block
//! of a linear region, in random order; cleaning is forced (a pause on an aggressive drive, a
//! cache fill on a lazy one); the blocks are read back in order (Figure 19). Cleaning rewrites
//! whole bands, so a cleaned band reads as a run of blocks at their native locations —
//! streaming at the stride's rotational delay — among blocks still in the cache (a seek each,
//! or a sub-millisecond flash read). Regions at several offsets show how the band size varies
//! from the outer to the inner diameter.

use super::fill::fill;
use crate::error::Result;
use crate::plot::Plot;
use crate::report::{bytes, BandSize};
use crate::session::Session;
use crate::stats::median;
use rand::seq::SliceRandom;
use serde_json::json;
use tegula_device::SEC;

/// Stride between the written blocks.
const STRIDE: u64 = 128 << 10;
/// Shortest run of native reads taken for a band (2 MiB): cache reads that happen to be fast
/// (short hops inside the cache) never line up this long.
const MIN_RUN: u64 = 16;
/// Regions are this many times the largest band expected (64 MiB).
const REGION_BANDS: u64 = 50;

/// Runs of native reads, as `[start, end)` block indices. On a disk cache a native read
/// streams (fast) except the first of a band, reached by a seek from the cache; on a flash
/// cache the cache reads are the fast ones.
pub(crate) fn native_runs(lat: &[f64], thr: f64, flash: bool) -> Vec<(usize, usize)> {
    let native: Vec<bool> = lat
        .iter()
        .map(|&l| if flash { l > thr } else { l < thr })
        .collect();
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
        out.push((start, j));
        i = j;
    }
    out
}

/// The band size from run lengths (in blocks of `stride`). Adjacent cleaned bands merge into
/// one run, so the band is the shortest length (seen at least twice) of which most runs are
/// whole multiples; its runs are averaged (a band starts anywhere between two written blocks,
/// so one run is ±1 block). Returns the size and how many runs had exactly that length.
pub(crate) fn band_from_runs(lens: &[u64], stride: u64) -> Option<(u64, usize)> {
    if lens.is_empty() {
        return None;
    }
    let mut cands: Vec<u64> = lens.to_vec();
    cands.sort_unstable();
    cands.dedup();
    let fits = |l: u64, x: u64| -> bool {
        let k = ((x as f64 / l as f64).round() as u64).max(1);
        x.abs_diff(k * l) <= k
    };
    let pick = cands
        .iter()
        .copied()
        .filter(|&l| lens.iter().filter(|&&x| x.abs_diff(l) <= 1).count() >= 2 || lens.len() == 1)
        .find(|&l| lens.iter().filter(|&&x| fits(l, x)).count() * 10 >= lens.len() * 6)
        .or_else(|| {
            // No length explains most runs: the most frequent one (ties: the shortest).
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
    band: Option<(u64, u64, usize, usize)>,
    note: String,
}

/// Reads `n` blocks at the stride from `start`; latencies in ms.
fn stride_reads(s: &mut Session<'_>, start: u64, n: usize) -> Result<Vec<f64>> {
    let mut lat = Vec::with_capacity(n);
    for j in 0..n as u64 {
        lat.push(s.read(start + j * STRIDE, s.bs)?);
        if j % 256 == 0 {
            s.tick(1);
        }
    }
    Ok(lat)
}

/// Reads a region and finds its cleaned bands. `thr` separates native from cache reads.
fn look(s: &mut Session<'_>, start: u64, per: usize, thr: f64, flash: bool) -> Result<Seen> {
    let lat = stride_reads(s, start, per)?;
    let runs = native_runs(&lat, thr, flash);
    let inner: Vec<&(usize, usize)> = runs.iter().filter(|r| r.0 > 0 && r.1 < per).collect();
    let lens: Vec<u64> = inner
        .iter()
        .map(|r| (r.1 - r.0) as u64)
        .filter(|&l| l >= MIN_RUN)
        .collect();
    let native = lat
        .iter()
        .filter(|&&l| if flash { l > thr } else { l < thr })
        .count();
    let band = band_from_runs(&lens, STRIDE).map(|(b, n)| {
        let at = inner
            .iter()
            .find(|r| ((r.1 - r.0) as u64 * STRIDE).abs_diff(b) <= STRIDE)
            .map_or(start, |r| start + r.0 as u64 * STRIDE);
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
    let len =
        ((if wall { 16 } else { REGION_BANDS }) * (64 << 20)).min(s.cap / 10) / STRIDE * STRIDE;
    let cal = 256usize;
    let starts: Vec<u64> = [0.06, 0.52, 0.9]
        .iter()
        .map(|f| {
            ((s.cap as f64 * f) as u64 / STRIDE * STRIDE)
                .min(s.cap - len - (cal as u64 + 2) * STRIDE)
        })
        .collect();
    let per = (len / STRIDE) as usize;
    // Every block of every region, in one random order.
    let mut blocks: Vec<u64> = starts
        .iter()
        .flat_map(|&o| (0..per as u64).map(move |j| o + j * STRIDE))
        .collect();
    blocks.shuffle(&mut s.rng);
    for chunk in blocks.chunks(31) {
        s.write_batch(chunk, bs)?;
        s.tick(1);
    }
    // Native reads at the stride, where nothing was written: their slowest (fastest, for a
    // flash cache) sets the bar for "native".
    let flash = s.f.flash == Some(true);
    let mut thr = if flash { f64::INFINITY } else { 0.0f64 };
    for &st in &starts {
        let c = stride_reads(s, st + len + STRIDE, cal)?;
        let c = &c[1..];
        tracing::debug!("band size calibration at {st}: {:?}", &c[..c.len().min(40)]);
        thr = if flash {
            thr.min(c.iter().copied().fold(f64::INFINITY, f64::min) * 0.7)
        } else {
            // Track switches (one read in a few dozen) stay under it; a rare seek (a zone or
            // band jump) does not raise it.
            thr.max(crate::stats::quantile(c, 0.97) * 1.3 + 0.1)
        };
    }
    let aggressive = s.f.aggressive == Some(true);
    let delay = s.f.idle_delay.map_or(1.0, |t| t as f64 / SEC as f64);
    let band_t = s.f.band_clean.map_or(1.0, |t| t as f64 / SEC as f64);
    let mut how = "no pause".to_string();
    let mut best: Vec<Seen> = Vec::new();
    let mut score = 0usize;
    for round in 0..6 {
        let seen: Vec<Seen> = starts
            .iter()
            .map(|&st| look(s, st, per, thr, flash))
            .collect::<Result<_>>()?;
        for x in &seen {
            tracing::debug!("band size round {round}: {} {:?}", x.note, x.band);
        }
        let sc: usize = seen.iter().map(|x| x.band.map_or(0, |b| b.2.min(4))).sum();
        if sc > score || best.is_empty() {
            score = sc;
            best = seen;
        }
        if best.iter().all(|x| x.band.is_some_and(|b| b.2 >= 3)) {
            break;
        }
        // Force (more) cleaning.
        if aggressive {
            let pause = delay + band_t * 8.0 * 4f64.powi(round);
            s.idle(pause)?;
            how = format!("{pause:.0} s idle");
        } else if round == 0 {
            let f = fill(s, 256 << 10, 31, 100_000_000, true, 0.123)?;
            how = format!(
                "a cache fill of {} writes of 256 KiB (cleaning from write {})",
                f.batches.len() * 31,
                f.ops().unwrap_or(0)
            );
        } else {
            break;
        }
    }
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
                .map(|(j, &l)| ((j as u64 * STRIDE) as f64 / (1 << 20) as f64, l))
                .collect(),
        );
    }
    s.plots.push(plot.log());
    let notes: Vec<String> = best.iter().map(|x| x.note.clone()).collect();
    let found: Vec<(u64, u64, usize, usize)> = best.iter().filter_map(|x| x.band).collect();
    if found.is_empty() {
        let why = format!(
            "no cleaned band found after {how} (native below {thr:.2} ms; {})",
            notes.join("; ")
        );
        s.report.unknown("band_size_bytes", "11", why.clone());
        return Ok(why);
    }
    s.f.bands = found.iter().map(|f| (f.0, f.1)).collect();
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
            "runs of native reads (below {thr:.2} ms) among cached ones at a {} stride after {how}: {}; {slate}; {}",
            bytes(STRIDE),
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
        let runs = native_runs(&lat, 5.0, false);
        assert_eq!(runs, vec![(10, 20)]);
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
