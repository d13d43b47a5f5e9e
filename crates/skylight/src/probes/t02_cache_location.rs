//! TEST 2 (section 4.4): where the disk cache lies and whether it is one region, from
//! fragmented reads at low, middle and high offsets (Figure 8). A fragmented read pays a seek
//! to the cache and back for every other block: short near the cache, long far from it, and
//! about the same everywhere when caches are spread over the disk.

use super::frag::{fragment, read_back};
use crate::error::Result;
use crate::plot::Plot;
use crate::report::{CacheLayout, CacheLocation};
use crate::session::Session;
use crate::stats::mean;
use serde_json::json;

/// Latencies within this ratio of each other count as equal.
const SAME: f64 = 1.3;

/// Runs TEST 2.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(2, "cache location and layout", 3 * 1536);
    let region = 2 * super::frag::WRITTEN * s.bs;
    let low = s.align((s.cap / 50).max((1 << 30) + (64 << 20)).min(s.cap / 8));
    let offsets = [
        ("low", low),
        ("mid", s.align(s.cap / 2)),
        ("high", s.align(s.cap - s.cap / 50 - region)),
    ];
    let mut avg = Vec::new();
    let mut plot = Plot::new(
        "t02_fragmented_reads.svg",
        "TEST 2: fragmented reads at three offsets (Figure 8)",
        "block",
        "read latency (ms)",
    );
    for (name, off) in offsets {
        fragment(s, off)?;
        let lat = read_back(s, off)?;
        avg.push(mean(&lat));
        plot = plot.per_op(&format!("{name} ({:.0} GB)", off as f64 / 1e9), &lat);
    }
    s.plots.push(plot.log());
    let (lo, mid, hi) = (avg[0], avg[1], avg[2]);
    let evidence = format!(
        "mean fragmented-read latency {lo:.2} ms at low, {mid:.2} ms at mid, {hi:.2} ms at high offsets"
    );
    if s.f.flash == Some(true) {
        let why = format!("flash cache: not on the platters ({evidence})");
        s.report.unknown("cache.layout", "2", why.clone());
        s.report.unknown("cache.location", "2", why);
        return Ok(format!("flash cache: {lo:.2} / {mid:.2} / {hi:.2} ms"));
    }
    let max = lo.max(mid).max(hi);
    let min = lo.min(mid).min(hi);
    let rr = s.f.random_read_ms.unwrap_or(f64::INFINITY);
    // No trip to the cache longer than an average random access, or no trend at all: a
    // cache near every region.
    if max / min.max(1e-9) < SAME || max < 0.75 * rr {
        s.report.cache.layout = Some(CacheLayout::Distributed);
        s.report.set(
            "cache.layout",
            json!("distributed"),
            "2",
            format!("{evidence}: within {SAME}x of each other or all below 0.75 x a random read ({rr:.2} ms)"),
            if max < 0.6 * rr || max / min < 1.15 { 0.9 } else { 0.6 },
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
    let (loc, name) = if lo <= mid && lo <= hi {
        (CacheLocation::Od, "od")
    } else if hi <= mid && hi <= lo {
        (CacheLocation::Id, "id")
    } else {
        (CacheLocation::Md, "md")
    };
    // How clearly the nearest offset beats the others.
    let mut sorted = [lo, mid, hi];
    sorted.sort_by(f64::total_cmp);
    let sep = sorted[1] / sorted[0].max(1e-9);
    let conf = ((sep - 1.0) / 0.5).clamp(0.4, 0.95);
    s.report.cache.layout = Some(CacheLayout::Single);
    s.report.cache.location = Some(loc);
    s.report.set(
        "cache.layout",
        json!("single"),
        "2",
        format!("{evidence}: latency grows with the distance from one place"),
        conf,
    );
    s.report.set(
        "cache.location",
        json!(name),
        "2",
        format!("{evidence}: shortest near the {}", name.to_uppercase()),
        conf,
    );
    Ok(format!(
        "single cache at the {}: {lo:.1} / {mid:.1} / {hi:.1} ms",
        name.to_uppercase()
    ))
}
