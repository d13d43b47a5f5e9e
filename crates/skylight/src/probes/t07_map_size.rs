//! TEST 7 (section 4.6): the persistent cache map's size. Small writes at queue depth 31 pack
//! many extents into each journal entry, so the extent map fills before the cache space does
//! (Figure 14 (b), Table II rows 2-3): the writes before cleaning starts are the map's
//! entries at the drive's low watermark. Writing on through the first collapse (one band
//! cleaned per entry) to the second, harder one (as many bands as the map needs) gives the
//! map's full size.

use super::fill::fill;
use crate::error::Result;
use crate::plot::Plot;
use crate::session::Session;
use serde_json::json;

/// Runs TEST 7.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(7, "persistent cache map size", 500);
    if s.f.entries.is_none() {
        let why = "no journal entries (TEST 1): a block-mapped cache has one map entry per cached block; TEST 8 gives the count";
        s.report.unknown("cache.map_entries", "7", why);
        return Ok(why.to_string());
    }
    let slate = s.clean_slate()?;
    let f = fill(s, s.bs, 31, 200_000_000, true, 0.37)?;
    s.plots.push(
        Plot::new(
            "t07_map_size.svg",
            "TEST 7: 4 KiB random writes at QD31 until cleaning starts (Figure 15, top)",
            "operation number",
            "batch latency (ms)",
        )
        .dots("QD31, 4 KiB", f.points())
        .log(),
    );
    let Some(soft) = f.ops() else {
        let why = format!("no cleaning after {} writes", f.batches.len() * 31);
        s.report.unknown("cache.map_entries", "7", why.clone());
        return Ok(why);
    };
    s.f.map_soft = Some(soft);
    // A batch of 31 small writes takes one journal entry, as one small write does (TEST 6):
    // when cleaning starts after about 31 times TEST 6's writes, the entries filled the cache
    // space before their extents filled the map, whose size then does not show.
    if let Some(n6) = s.f.small_writes {
        if soft as f64 >= 0.8 * 31.0 * n6 as f64 {
            let why = format!(
                "cleaning started after {soft} QD31 4 KiB writes, about 31 x the {n6} QD1 writes of TEST 6: the cache space, not the map, ran out (the map holds more than {soft} entries); {slate}"
            );
            s.report.unknown("cache.map_entries", "7", why.clone());
            return Ok(why);
        }
    }
    let (map, evidence, conf) = match f.hard_ops() {
        Some(hard) => (
            hard,
            format!(
                "cleaning started after {soft} QD31 4 KiB writes (the low watermark, {:.0}% of the map) and became {:.0}x harder after {hard} (the map full); {slate}",
                100.0 * soft as f64 / hard as f64,
                f.batches.get(f.hard.unwrap_or(0) + 4).copied().unwrap_or(0.0) / f.levels.1.max(1e-9)
            ),
            0.8,
        ),
        None => (
            soft,
            format!(
                "cleaning started after {soft} QD31 4 KiB writes; no second, harder limit within {} writes, so this is the map size at the drive's cleaning watermark; {slate}",
                f.batches.len() * 31
            ),
            0.5,
        ),
    };
    s.f.map_entries = Some(map);
    s.f.map_soft = Some(soft);
    s.report.cache.map_entries = Some(map);
    s.report
        .set("cache.map_entries", json!(map), "7", evidence, conf);
    Ok(format!("map of {map} entries (cleaning from {soft})"))
}
