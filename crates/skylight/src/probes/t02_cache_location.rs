//! TEST 2 (section 4.4): where the disk cache lies and whether it is one region, from
//! fragmented reads at low, middle and high offsets (Figure 8). A fragmented read pays a seek
//! to the cache and back for every other block: short near the cache, long far from it, and
//! about the same everywhere when caches are spread over the disk. The prober reads regions at
//! thirteen offsets across the LBA range and asks whether one cache location explains how
//! their latencies vary.

use super::frag::{fragment, read_back};
use crate::error::Result;
use crate::plot::Plot;
use crate::report::{CacheLayout, CacheLocation};
use crate::session::Session;
use crate::stats::mean;
use rand::seq::SliceRandom;
use serde_json::json;

/// Regions read across the LBA range.
const REGIONS: usize = 13;
/// Share of the spread of the regions' latencies that one cache location must explain.
const EXPLAINED: f64 = 0.75;
/// Smallest rise of latency with the distance from the cache (ms over the whole stroke) that
/// counts as a trend: less is rotation and noise.
const RISE_MS: f64 = 2.0;

/// The best single-cache fit of `lat` at positions `x` (fractions of the LBA range): latency
/// = a + b·√|x − p| (a seek grows with the square root of short distances and more slowly
/// than the distance over long ones), b ≥ 0. Returns (p, a, b, the share of the variance it
/// explains).
pub(crate) fn single_fit(x: &[f64], lat: &[f64]) -> (f64, f64, f64, f64) {
    let n = x.len() as f64;
    let mean = lat.iter().sum::<f64>() / n;
    let total: f64 = lat.iter().map(|l| (l - mean).powi(2)).sum();
    let mut best = (0.0, mean, 0.0, f64::INFINITY);
    for k in 0..=100 {
        let p = k as f64 / 100.0;
        let g: Vec<f64> = x.iter().map(|&xi| (xi - p).abs().sqrt()).collect();
        let mg = g.iter().sum::<f64>() / n;
        let sgg: f64 = g.iter().map(|gi| (gi - mg).powi(2)).sum();
        let sgl: f64 = g
            .iter()
            .zip(lat)
            .map(|(gi, l)| (gi - mg) * (l - mean))
            .sum();
        let b = if sgg > 0.0 { (sgl / sgg).max(0.0) } else { 0.0 };
        let a = mean - b * mg;
        let rss: f64 = g
            .iter()
            .zip(lat)
            .map(|(gi, l)| (l - a - b * gi).powi(2))
            .sum();
        if rss < best.3 {
            best = (p, a, b, rss);
        }
    }
    let explained = if total > 0.0 {
        1.0 - best.3 / total
    } else {
        0.0
    };
    (best.0, best.1, best.2, explained)
}

/// Runs TEST 2.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(2, "cache location and layout", REGIONS as u64 * 1536);
    let region = 2 * super::frag::WRITTEN * s.bs;
    // Clear of TEST 1's first GiB; each region written and read before the next.
    let low = ((1u64 << 30) + (64 << 20)).max(s.cap / 50).min(s.cap / 8) as f64 / s.cap as f64;
    let high = 1.0 - (s.cap / 50 + region) as f64 / s.cap as f64;
    let mut plot = Plot::new(
        "t02_fragmented_reads.svg",
        "TEST 2: fragmented reads at three offsets (Figure 8)",
        "block",
        "read latency (ms)",
    );
    // In random order: a log whose head moves on as it is written (its cache bands spread
    // over the disk) then shows no trend with the offset, where reading the regions from the
    // OD to the ID would follow the head.
    let mut order: Vec<usize> = (0..REGIONS).collect();
    order.shuffle(&mut s.rng);
    let mut by_k = vec![(0.0, 0.0); REGIONS];
    for k in order {
        let f = low + (high - low) * k as f64 / (REGIONS - 1) as f64;
        let off = s.align((s.cap as f64 * f) as u64);
        fragment(s, off)?;
        let lat = read_back(s, off)?;
        by_k[k] = (f, mean(&lat));
        if k == 0 || k == REGIONS / 2 || k == REGIONS - 1 {
            let name = ["low", "mid", "high"][(k * 2).div_ceil(REGIONS - 1).min(2)];
            plot = plot.per_op(&format!("{name} ({:.0} GB)", off as f64 / 1e9), &lat);
        }
    }
    s.plots.push(plot.log());
    let x: Vec<f64> = by_k.iter().map(|v| v.0).collect();
    let avg: Vec<f64> = by_k.iter().map(|v| v.1).collect();
    let (lo, mid, hi) = (avg[0], avg[REGIONS / 2], avg[REGIONS - 1]);
    let list = avg
        .iter()
        .map(|a| format!("{a:.1}"))
        .collect::<Vec<_>>()
        .join(" / ");
    let evidence = format!(
        "mean fragmented-read latency at {REGIONS} offsets from {:.0}% to {:.0}% of the drive: {list} ms",
        low * 100.0,
        high * 100.0
    );
    if s.f.flash == Some(true) {
        let why = format!("flash cache: not on the platters ({evidence})");
        s.report.unknown("cache.layout", "2", why.clone());
        s.report.unknown("cache.location", "2", why);
        return Ok(format!("flash cache: {lo:.2} / {mid:.2} / {hi:.2} ms"));
    }
    let max = avg.iter().copied().fold(0.0, f64::max);
    let rr = s.f.random_read_ms.unwrap_or(f64::INFINITY);
    // One cache: the latency grows with the distance from one place, the same place for every
    // region. Caches spread over the disk (or a log whose head moved on between the regions):
    // no such trend.
    let (p, _, b, explained) = single_fit(&x, &avg);
    let rise = b * (p.max(1.0 - p)).sqrt();
    let fit = format!(
        "one cache at {:.0}% of the drive would explain {:.0}% of their spread, rising {rise:.1} ms to the farthest region",
        p * 100.0,
        explained * 100.0
    );
    if explained < EXPLAINED || rise < RISE_MS || max < 0.75 * rr {
        s.report.cache.layout = Some(CacheLayout::Distributed);
        s.report.set(
            "cache.layout",
            json!("distributed"),
            "2",
            format!("{evidence}; {fit} (one cache needs {:.0}% and {RISE_MS} ms), or every region below 0.75 x a random read ({rr:.2} ms)", EXPLAINED * 100.0),
            if explained < 0.5 || max < 0.6 * rr { 0.9 } else { 0.6 },
        );
        s.report.unknown(
            "cache.location",
            "2",
            "caches spread over the disk: no single location",
        );
        return Ok(format!(
            "distributed caches: {lo:.1} / {mid:.1} / {hi:.1} ms"
        ));
    }
    let (loc, name) = if p < 0.25 {
        (CacheLocation::Od, "od")
    } else if p > 0.75 {
        (CacheLocation::Id, "id")
    } else {
        (CacheLocation::Md, "md")
    };
    let conf = (0.5 + (explained - EXPLAINED) * 2.0).clamp(0.5, 0.95);
    s.report.cache.layout = Some(CacheLayout::Single);
    s.report.cache.location = Some(loc);
    s.report.set(
        "cache.layout",
        json!("single"),
        "2",
        format!("{evidence}; {fit}: latency grows with the distance from one place"),
        conf,
    );
    s.report.set(
        "cache.location",
        json!(name),
        "2",
        format!("{evidence}; {fit}: nearest the {}", name.to_uppercase()),
        conf,
    );
    Ok(format!(
        "single cache at the {} ({:.0}%): {lo:.1} / {mid:.1} / {hi:.1} ms",
        name.to_uppercase(),
        p * 100.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cache_explains_a_rise_with_distance_and_none_explains_noise() {
        let x: Vec<f64> = (0..13).map(|k| 0.02 + 0.96 * k as f64 / 12.0).collect();
        let md: Vec<f64> = x
            .iter()
            .map(|&v| 12.0 + 8.0 * (v - 0.5f64).abs().sqrt())
            .collect();
        let (p, _, b, e) = single_fit(&x, &md);
        assert!((p - 0.5).abs() < 0.02 && b > 7.0 && e > 0.99, "{p} {b} {e}");
        let od: Vec<f64> = x.iter().map(|&v| 8.0 + 10.0 * v.sqrt()).collect();
        assert!(single_fit(&x, &od).0 < 0.05);
        // Scattered caches: no location explains the spread.
        let noise = [
            14.0, 19.0, 12.5, 17.0, 13.0, 18.5, 15.0, 12.0, 19.5, 14.5, 16.0, 13.5, 18.0,
        ];
        assert!(single_fit(&x, &noise).3 < EXPLAINED);
    }
}
