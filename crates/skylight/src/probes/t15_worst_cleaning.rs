//! Section 4.9: the worst-case cleaning time of one band. The blocks of about 20 bands are
//! shuffled and written at queue depth 31, so that every journal entry holds blocks of many
//! bands and cleaning any band must read back from nearly every entry; the idle time the drive
//! then needs to clean them, over the number of bands, bounds the cleaning time of one band.

use crate::error::Result;
use crate::report::bytes;
use crate::session::Session;
use rand::seq::SliceRandom;
use serde_json::json;
use tegula_device::SEC;

/// Bands in the region (the paper's 700 MiB were 20 bands).
const BANDS: u64 = 20;

/// Runs section 4.9 (test 15).
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(15, "worst-case band cleaning time", 100);
    if s.f.aggressive != Some(true) {
        let why = "lazy cleaning: the drive does not clean in idle time, where this is timed";
        s.report.unknown("cleaning.worst_band_clean_s", "4.9", why);
        return Ok(why.into());
    }
    let Some(&(_, band)) = s.f.bands.first() else {
        let why = "the band size is unknown (TEST 11)";
        s.report.unknown("cleaning.worst_band_clean_s", "4.9", why);
        return Ok(why.into());
    };
    let slate = s.clean_slate()?;
    // The region where TEST 11 measured a band (bands differ from the OD to the ID), next to
    // TEST 11's own region.
    let (at, band) =
        s.f.bands
            .iter()
            .copied()
            .min_by_key(|b| b.0.abs_diff(s.cap / 2))
            .unwrap_or((s.cap / 2, band));
    // Stay below the map's watermark, so that nothing is cleaned while writing.
    let mut blocks_max = BANDS * band / s.bs;
    if let Some(m) = s.f.map_soft.or(s.f.map_entries) {
        blocks_max = blocks_max.min(m * 8 / 10);
    }
    let bands = (blocks_max * s.bs / band).max(1);
    let base = s.align(at.saturating_sub((bands + 2) * band).max(s.cap / 10));
    let mut blocks: Vec<u64> = (0..bands * band / s.bs).map(|i| base + i * s.bs).collect();
    blocks.shuffle(&mut s.rng);
    for chunk in blocks.chunks(31) {
        s.write_batch(chunk, s.bs)?;
    }
    s.tick(10);
    let delay = s.f.idle_delay.map_or(1.0, |t| t as f64 / SEC as f64);
    let per_band_guess = s.f.band_clean.map_or(1.0, |t| t as f64 / SEC as f64);
    let step = (per_band_guess * bands as f64 * 2.0).clamp(10.0, 120.0);
    // Device time from here to the first pause the drive spends quiet, less the idle delay
    // that opens each pause: the drive's cleaning time (a band being cleaned when a pause ends
    // delays the next command, so the clock, not the pauses, counts).
    let t0 = s.now_s();
    let mut active = 0u32;
    let cleaning;
    loop {
        let t = s.now_s();
        let (quiet, _) = s.quiet_after(delay + step)?;
        s.tick(1);
        if quiet {
            cleaning = (t - t0 - active as f64 * delay).max(0.0);
            break;
        }
        active += 1;
        if active >= 2000 {
            let why = format!("still cleaning after {:.0} s of idle time", s.now_s() - t0);
            s.report
                .unknown("cleaning.worst_band_clean_s", "4.9", why.clone());
            return Ok(why);
        }
    }
    let per = cleaning / bands as f64;
    let t = (per * 10.0).round() / 10.0;
    s.report.cleaning.worst_band_clean_s = Some(t);
    s.report.set(
        "cleaning.worst_band_clean_s",
        json!(t),
        "4.9",
        format!(
            "the {} blocks of {bands} bands of {} (TEST 11 at {:.2} TB) written shuffled at QD31 took {cleaning:.0} s (±{:.0} s) of idle cleaning; {slate}",
            blocks.len(),
            bytes(band),
            at as f64 / 1e12,
            step
        ),
        0.6,
    );
    Ok(format!(
        "{t:.1} s per band ({bands} bands cleaned in {cleaning:.0} s)"
    ))
}
