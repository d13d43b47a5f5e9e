//! TEST 5 (section 4.5.1): Algorithm 1 verified (Figure 13). 128 blocks from a 256 MiB region
//! in random order, 128 random blocks over the drive, 128 other blocks of the region; after a
//! pause long enough for the region's bands and some more, FIFO band by band has cleaned all
//! of the first and third groups (the third with its bands) but only part of the second.

use super::t04_cleaning_algorithm::native_flags;
use crate::error::Result;
use crate::plot::Plot;
use crate::session::Session;
use rand::seq::SliceRandom;
use serde_json::json;
use tegula_device::SEC;

/// Blocks per group.
const N: usize = 128;

/// Runs TEST 5.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(5, "cleaning algorithm verified", 6);
    let Some(per_band) = s.f.band_clean.map(|t| t as f64 / SEC as f64) else {
        let why = "TEST 4 did not measure the cleaning rate";
        return Ok(why.into());
    };
    let slate = s.clean_slate()?;
    let delay = s.f.idle_delay.map_or(1.0, |t| t as f64 / SEC as f64);
    let region = 256u64 << 20;
    let base = s.align(s.cap / 5 * 2);
    let mut blocks: Vec<u64> = (0..region / s.bs).map(|i| base + i * s.bs).collect();
    blocks.shuffle(&mut s.rng);
    let g1: Vec<u64> = blocks[..N].to_vec();
    let g3: Vec<u64> = blocks[N..2 * N].to_vec();
    let g2: Vec<u64> = (0..N).map(|_| s.rand_off(0, s.cap, s.bs)).collect();
    let all: Vec<u64> = g1.iter().chain(&g2).chain(&g3).copied().collect();
    for &o in &all {
        s.write(o, s.bs)?;
    }
    let (l0, n0) = native_flags(s, &all)?;
    let band = s.f.bands.first().map_or(16 << 20, |b| b.1);
    let region_bands = (region / band.max(1)) as f64 + 1.0;
    // Clean the region's bands and about half of the random blocks' bands.
    let pause = delay + (region_bands + N as f64 / 2.0) * per_band;
    s.idle(pause)?;
    let (l1, n1) = native_flags(s, &all)?;
    // Cleaned during the pause: native now, not before.
    let flags: Vec<bool> = n1.iter().zip(&n0).map(|(&a, &b)| a && !b).collect();
    let frac = |r: std::ops::Range<usize>| -> f64 {
        flags[r.clone()].iter().filter(|&&c| c).count() as f64 / r.len() as f64
    };
    let (f1, f2, f3) = (frac(0..N), frac(N..2 * N), frac(2 * N..3 * N));
    s.plots.push(
        Plot::new(
            "t05_cleaning_verified.svg",
            "TEST 5: region, random, region blocks read in written order (Figure 13)",
            "operation",
            "read latency (ms)",
        )
        .per_op("right after writing", &l0)
        .per_op(&format!("after {pause:.0} s idle"), &l1)
        .log(),
    );
    let confirmed = f1 >= 0.9 && f3 >= 0.9 && f2 < 0.95 && f2 > 0.02;
    let evidence = format!(
        "after {pause:.0} s idle: {:.0}% of the first region group, {:.0}% of the random group, {:.0}% of the second region group cleaned; {slate}",
        f1 * 100.0,
        f2 * 100.0,
        f3 * 100.0
    );
    if let Some(p) = s.report.property("cleaning.algorithm").cloned() {
        if confirmed && p.value == json!("fifo") {
            s.report.set(
                "cleaning.algorithm",
                json!("fifo"),
                "4, 5",
                format!("{}; TEST 5: {evidence}", p.evidence),
                0.9,
            );
        }
    }
    Ok(if confirmed {
        format!("Algorithm 1 confirmed: {evidence}")
    } else {
        format!("not confirmed: {evidence}")
    })
}
