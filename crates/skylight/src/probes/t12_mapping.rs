//! TEST 12 (section 4.10): static or dynamic band mapping. Reads alternate between block j of
//! the first track of band a and block j of track i of the adjacent band b (Figure 21): the
//! latencies trace the physical distance and angle between the two tracks. Band b's first two
//! tracks are then overwritten and cleaning forced; with static mapping b comes back to the
//! same place and the pattern repeats, with dynamic mapping it moves and the pattern changes.
//! On a lazy drive the cache is filled until the pattern no longer shows b's data in the cache
//! (the paper's adaptation).

use super::fill::{fill, fill_forcing};
use crate::error::Result;
use crate::plot::Plot;
use crate::report::Mapping;
use crate::session::Session;
use crate::stats::median;
use serde_json::json;
use tegula_device::SEC;

/// "Track" and "block" of the test (the paper's Figure 21 used 2 MiB and 16 KiB).
const TRACK: u64 = 2 << 20;
const BLOCK: u64 = 16 << 10;

/// Offsets of the blocks read inside a track: 16 KiB blocks, skipping the first of every
/// 128 KiB (where TEST 11 may have left 4 KiB in the cache).
fn blocks() -> Vec<u64> {
    (0..TRACK / BLOCK)
        .map(|j| j * BLOCK)
        .filter(|o| o % (128 << 10) != 0)
        .collect()
}

/// Step 2: the alternating reads; latencies in ms.
fn pattern(s: &mut Session<'_>, a: u64, b: u64) -> Result<Vec<f64>> {
    let mut lat = Vec::new();
    for i in 0..2u64 {
        for o in blocks() {
            lat.push(s.read(a + o, BLOCK)?);
            lat.push(s.read(b + i * TRACK + o, BLOCK)?);
        }
    }
    s.tick(1);
    Ok(lat)
}

/// The trip from band a to band b: the latency of reading a block three quarters into b
/// right after the same block of a (median of five, the heads sent elsewhere before each
/// pair), past the tracks of b that the test overwrites. Under static mapping both bands keep
/// their places, so the trip (seek and rotation) costs exactly the same before and after b
/// is rewritten and cleaned; a band remapped by cleaning (dynamic mapping) is reached by
/// another seek and at another angle.
fn trip(s: &mut Session<'_>, a: u64, b: u64, band: u64) -> Result<f64> {
    let into = s.align(band / 4 * 3);
    let mut v = Vec::new();
    for _ in 0..5 {
        let away = s.rand_off(0, s.cap, s.bs);
        s.read(away, s.bs)?;
        s.read(a + into, s.bs)?;
        v.push(s.read(b + into, s.bs)?);
    }
    Ok(median(&v))
}

/// How different two patterns are: the median absolute difference over the median latency.
fn distance(p: &[f64], q: &[f64]) -> f64 {
    let d: Vec<f64> = p.iter().zip(q).map(|(x, y)| (x - y).abs()).collect();
    median(&d) / median(p).max(median(q)).max(1e-6)
}

/// Runs TEST 12.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(12, "mapping type", 40);
    let Some(&(at, band)) = s.f.bands.first() else {
        let why = "the band size is unknown (TEST 11)";
        s.report.unknown("mapping", "12", why);
        return Ok(why.into());
    };
    if band < 2 * TRACK + BLOCK {
        let why = "bands shorter than two test tracks";
        s.report.unknown("mapping", "12", why);
        return Ok(why.into());
    }
    let slate = s.clean_slate()?;
    let a = s.align(at);
    let b = s.align(at + band);
    let p0 = pattern(s, a, b)?;
    let j0 = trip(s, a, b, band)?;
    let j0b = trip(s, a, b, band)?;
    let p0b = pattern(s, a, b)?;
    let noise = distance(&p0, &p0b);
    // Overwrite the first two tracks of band b.
    let w = 256u64 << 10;
    let overwrite = |s: &mut Session<'_>| -> Result<()> {
        for k in 0..(2 * TRACK / w) {
            s.write(b + k * w, w)?;
        }
        Ok(())
    };
    overwrite(s)?;
    let p1 = pattern(s, a, b)?;
    let same = (0.1f64).max(noise * 3.0);
    let how;
    let p2;
    let aggressive = s.f.aggressive == Some(true);
    // A trip that differs by more than this moved (the drive's clock repeats a trip exactly;
    // a host's noise does not).
    let move_ms = (4.0 * (j0b - j0).abs()).max(0.1);
    // Whether cleaning is known to have finished (an aggressive drive gone quiet).
    let mut drained = false;
    // Trips from a to b after each rewrite of b and its cleaning.
    let mut trips = Vec::new();
    if aggressive {
        // Idle until the drive has nothing left to clean; on a drive that keeps b in place,
        // rewrite it and clean it again (up to three times): a band remapped by cleaning
        // moves to another free band each time.
        let delay = s.f.idle_delay.map_or(1.0, |t| t as f64 / SEC as f64);
        let band_t = s.f.band_clean.map_or(1.0, |t| t as f64 / SEC as f64);
        let mut total = 0.0;
        let mut last = Vec::new();
        for cycle in 0..3 {
            if cycle > 0 {
                overwrite(s)?;
            }
            for k in 0..10 {
                let pause = delay + band_t * 4.0 * 4f64.powi(k);
                let (quiet, _) = s.quiet_after(pause)?;
                total += pause;
                if quiet {
                    drained = true;
                    break;
                }
            }
            last = pattern(s, a, b)?;
            trips.push(trip(s, a, b, band)?);
            if !drained || trips.iter().any(|&j| (j - j0).abs() > move_ms) {
                break;
            }
        }
        how = format!(
            "{total:.0} s idle over {} rewrite(s) of b's first tracks",
            trips.len()
        );
        p2 = last;
    } else {
        // Lazy: fill the cache past the collapse, then in quarters of that, until the
        // pattern no longer shows b in the cache.
        let f = fill_forcing(s, 256 << 10, 31, 100_000_000, 0.2, false)?;
        let onset = f.ops().unwrap_or(f.batches.len() as u64 * 31);
        let mut written = f.batches.len() as u64 * 31;
        let mut last = pattern(s, a, b)?;
        for k in 0..12 {
            if distance(&last, &p1) > same || distance(&last, &p0) <= same {
                break;
            }
            let g = fill(
                s,
                256 << 10,
                31,
                (onset / 4).max(1000),
                false,
                0.3 + k as f64 * 0.07,
            )?;
            written += g.batches.len() as u64 * 31;
            last = pattern(s, a, b)?;
        }
        p2 = last;
        how = format!("cache fills of {written} writes of 256 KiB");
    }
    let (d0, d1) = (distance(&p2, &p0), distance(&p2, &p1));
    if trips.is_empty() {
        trips.push(trip(s, a, b, band)?);
    }
    let moved = trips.iter().any(|&j| (j - j0).abs() > move_ms);
    let j2 = trips
        .iter()
        .map(|j| format!("{j:.2}"))
        .collect::<Vec<_>>()
        .join(", ");
    s.plots.push(
        Plot::new(
            "t12_mapping.svg",
            "TEST 12: alternating reads of bands a and b before and after b is cleaned (Figure 21)",
            "read",
            "latency (ms)",
        )
        .per_op("before", &p0)
        .per_op("b overwritten, in the cache", &p1)
        .per_op(&format!("after {how}"), &p2)
        .log(),
    );
    let evidence = format!(
        "pattern distance after cleaning: {d0:.2} from before, {d1:.2} from the cached state (same below {same:.2}; repeat noise {noise:.2}); a read three quarters into b after the same read in a: {j0:.2} ms before (again {j0b:.2}), {j2} ms after cleaning; bands of {} at {:.2} TB; {slate}",
        crate::report::bytes(band),
        a as f64 / 1e12
    );
    if d1 <= same && d0 > same && !drained {
        s.report.unknown(
            "mapping",
            "12",
            format!("band b still reads from the cache after {how} ({evidence})"),
        );
        return Ok(format!("undetermined: b still cached after {how}"));
    }
    let (m, name) = if d0 <= same && !moved {
        (Mapping::Static, "static")
    } else {
        (Mapping::Dynamic, "dynamic")
    };
    s.report.mapping = Some(m);
    let margin = ((d0 - same).abs() / same).min(1.0);
    s.report
        .set("mapping", json!(name), "12", evidence, 0.6 + 0.35 * margin);
    Ok(format!(
        "{name} mapping (pattern distance {d0:.2} after {how})"
    ))
}
