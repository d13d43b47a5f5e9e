//! TEST 8 (section 4.6): the persistent cache's usable size — host bytes written at a large
//! size and high queue depth before cleaning starts. Doubling the write size halves the
//! writes when the cache space is the limit, and leaves them unchanged when a count (the
//! map) is (Table II rows 4-5, Figure 15): sizes double until two runs agree on the space
//! limit. A drive without journal entries (TEST 1) maps its cache block by block, so the same
//! runs give its raw size and map size too; one whose count stays fixed whatever the size
//! allocates its cache in units of a band.

use super::fill::{fill, fill_in, fill_units, Fill, Order, Spread, Watch};
use crate::error::Result;
use crate::plot::Plot;
use crate::report::bytes;
use crate::session::{Entries, Session};
use crate::stats::close;
use serde_json::json;

/// Queue depth of the fills.
const QD: usize = 31;

/// The first size to try on a journal drive: the smallest power of two (from 128 KiB) whose
/// batches would fill the raw cache (TEST 6) before the map (TEST 7) at its watermark.
fn first_size(s: &Session<'_>) -> u64 {
    let mut size = 128u64 << 10;
    if let (Some(e), Some(raw), Some(map)) = (s.f.entries, s.report.cache.raw_bytes, s.f.map_soft) {
        while size < 8 << 20 {
            let batch = QD as u64 * size + e.oob;
            let writes = raw as f64 / batch as f64 * QD as f64;
            if writes < 0.8 * map as f64 {
                break;
            }
            size *= 2;
        }
    }
    size
}

/// Units the first zone takes: single small writes to consecutive bands from LBA 0, until
/// two in a row each cost a merge more than the fastest of the first four (every write past
/// the zone's units merges one); `None` when none does within the first eighth of the drive.
/// The fastest, not the median, is the bar: a zone of two or three units (a few spare bands,
/// one kept free) is full within the first four writes.
fn local_units(s: &mut Session<'_>, band: u64, merge_ms: f64) -> Result<Option<u64>> {
    s.stage("counting the cache units of the first zone");
    let band = s.align(band).max(s.bs);
    let mut lat: Vec<f64> = Vec::new();
    let mut k = 0u64;
    while (k + 1) * band < s.cap / 8 && k < 4096 {
        lat.push(s.write(k * band + s.bs, s.bs)?);
        k += 1;
        if lat.len() >= 5 {
            let base = lat[..4].iter().copied().fold(f64::INFINITY, f64::min);
            let thr = base + (0.5 * merge_ms).max(0.5 * base).max(40.0);
            if let Some(i) = (1..lat.len() - 1).find(|&i| lat[i] > thr && lat[i + 1] > thr) {
                return Ok(Some(i as u64));
            }
        }
    }
    Ok(None)
}

/// Writes per full-entry batch: few, so that an entry takes few map entries.
const PER_ENTRY: u64 = 4;

/// A journal drive whose largest entry TEST 1 found: batches of exactly one full entry
/// (`max` bytes in [`PER_ENTRY`] writes), so that the writes before cleaning count full
/// entries, and the usable size (what full entries hold before the cleaning watermark) is
/// their number times `max`. TEST 6 counted minimum entries to the same watermark; the cache
/// space both filled, `n_max x (max + oob) = n_min x (min + oob)`, gives the out-of-band
/// area without any latency (TEST 1 prices it from a jump that also holds the entry's
/// metadata commit), and from it the raw size. `None` when the fill did not end by space.
fn full_entries(
    s: &mut Session<'_>,
    e: Entries,
    max: u64,
    plot: Plot,
) -> Result<(Option<String>, Plot)> {
    let piece = max / PER_ENTRY / s.bs * s.bs;
    if piece == 0 {
        return Ok((None, plot));
    }
    let map = s.f.map_soft;
    let slate = s.clean_slate()?;
    let cap_ops = map.map_or(100_000_000, |m| m * 13 / 10);
    let f = fill(s, piece, PER_ENTRY as usize, cap_ops, false, 0.71)?;
    let plot = plot.dots(
        &format!("{} KiB x {PER_ENTRY}: one full entry", piece >> 10),
        f.points(),
    );
    let Some(n) = f.ops() else {
        return Ok((None, plot));
    };
    if map.is_some_and(|m| n as f64 > 0.9 * m as f64) {
        // The map, not the space, ended the fill.
        return Ok((None, plot));
    }
    let entries = n / PER_ENTRY;
    let usable = entries * PER_ENTRY * piece;
    s.f.usable = Some(usable);
    s.report.cache.usable_bytes = Some(usable);
    let why = format!(
        "{entries} batches of {PER_ENTRY} x {} (one entry of the largest data area, {}, TEST 1) before cleaning started; {slate}",
        bytes(piece),
        bytes(max)
    );
    s.report.set(
        "cache.usable_bytes",
        json!(usable),
        "1, 8",
        why.clone(),
        0.85,
    );
    // Not when TEST 6's count may be the map's (a map limit ends a fill of single writes).
    let n_min =
        s.f.small_writes
            .filter(|&n6| n6 > entries && map.is_none_or(|m| (n6 as f64) < 0.9 * m as f64));
    let Some(n6) = n_min else {
        return Ok((Some(format!("usable cache {}", bytes(usable))), plot));
    };
    let full = (entries * PER_ENTRY * piece) as f64;
    let oob = (full - (n6 * e.min) as f64) / (n6 - entries) as f64;
    if oob < 0.0 {
        return Ok((Some(format!("usable cache {}", bytes(usable))), plot));
    }
    let oob = (oob / s.bs as f64).round() as u64 * s.bs;
    let raw = n6 * (e.min + oob);
    let how = format!(
        "the cache held {entries} full entries of {} or {n6} minimum entries of {} (TEST 6) before cleaning: {entries} x ({} + OOB) = {n6} x ({} + OOB)",
        bytes(PER_ENTRY * piece),
        bytes(e.min),
        bytes(PER_ENTRY * piece),
        bytes(e.min)
    );
    if let Some(f) = s.f.entries.as_mut() {
        f.oob = oob;
    }
    if let Some(j) = s.report.journal.as_mut() {
        j.oob_bytes = Some(oob);
    }
    s.report
        .set("journal.oob_bytes", json!(oob), "1, 6, 8", how.clone(), 0.8);
    s.report.cache.raw_bytes = Some(raw);
    s.report.set(
        "cache.raw_bytes",
        json!(raw),
        "6, 8",
        format!(
            "{n6} minimum entries x ({} + {} OOB); {how}",
            bytes(e.min),
            bytes(oob)
        ),
        0.75,
    );
    Ok((
        Some(format!(
            "usable cache {}, OOB {}, raw {}",
            bytes(usable),
            bytes(oob),
            bytes(raw)
        )),
        plot,
    ))
}

/// What a write costs at least when it must first merge a band: the band (TEST 11) read and
/// written at the media rate (TEST 14), ms.
fn merge_ms(s: &Session<'_>) -> f64 {
    let band = s.f.bands.first().map_or(8 << 20, |b| b.1) as f64;
    let rate = s
        .report
        .zones
        .as_ref()
        .map(|z| z.plateaus.iter().map(|p| p.mb_per_s).collect::<Vec<_>>())
        .filter(|r| !r.is_empty())
        .map_or(100.0, |r| crate::stats::median(&r));
    2.0 * band / (rate * 1e3)
}

/// Runs TEST 8.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(8, "persistent cache usable size", 1000);
    let journal = s.f.entries.is_some();
    let map = s.f.map_soft;
    let mut plot = Plot::new(
        "t08_usable_size.svg",
        "TEST 8: large random writes at QD31 until cleaning starts (Figure 15)",
        "operation number",
        "batch latency (ms)",
    );
    // Not with a volatile cache: a batch's small writes are made durable by a FLUSH, and the
    // drive destages them as it likes, not as one entry.
    let full = s.f.entries.filter(|_| s.f.volatile != Some(true));
    if let Some((e, max)) = full.and_then(|e| e.max.map(|m| (e, m))) {
        let (done, p) = full_entries(s, e, max, plot)?;
        plot = p;
        if let Some(verdict) = done {
            s.plots.push(plot.log());
            return Ok(verdict);
        }
    }
    let mut runs: Vec<Fill> = Vec::new();
    let mut size = if journal { first_size(s) } else { 128 << 10 };
    let mut slate = String::new();
    let mut space: Option<(u64, String)> = None;
    let mut count_limited = None;
    // A merge reads and writes a band (TEST 11) at the media rate (TEST 14).
    let merge_ms = merge_ms(s);
    // A block-mapped cache of a few dozen band-sized units is full within the first batch:
    // the fill then starts at the collapsed level, which only the cost of a merge tells.
    let watch = Watch {
        merge_ms: (!journal && !s.f.bands.is_empty()).then_some(merge_ms),
        ..Watch::default()
    };
    while size <= 16 << 20 {
        slate = s.clean_slate()?;
        let cap_ops = map.map_or(100_000_000, |m| m * 13 / 10);
        // A block-mapped cache (no journal entries) with static mapping (TEST 12) may be
        // set-associative: filled band by band when the bands are known for sure and of one
        // size (TEST 11), all its sets fill together. Only on a lazy drive: one that cleans
        // in idle time starts while the sets are still filling.
        let static_bands = s.report.mapping == Some(crate::report::Mapping::Static);
        let sizes: Vec<u64> = s.f.bands.iter().map(|b| b.1).collect();
        let one_size = match (sizes.iter().min(), sizes.iter().max()) {
            (Some(&lo), Some(&hi)) => (hi - lo) * 50 <= lo,
            _ => false,
        };
        let lazy = s.f.aggressive == Some(false);
        // A cache spread over the disk (TEST 2) is many places that a fill by LBA reaches
        // unevenly whatever the bands' sizes or the cleaning: band by band there too.
        let spread = s.report.cache.layout == Some(crate::report::CacheLayout::Distributed);
        let order = if journal || !s.f.bands_sure || !static_bands || !(spread || one_size && lazy)
        {
            None
        } else {
            Order::bands(&s.f.bands, s.cap, s.bs)
        };
        let f = match order {
            Some(o) => fill_in(s, size, QD, cap_ops, false, o, watch)?,
            None => {
                let seed = 0.71 + runs.len() as f64 * 0.1;
                fill_in(
                    s,
                    size,
                    QD,
                    cap_ops,
                    false,
                    Order::Golden(Spread::new(seed)),
                    watch,
                )?
            }
        };
        plot = plot.dots(&format!("{} KiB", size >> 10), f.points());
        let Some(n) = f.ops() else {
            runs.push(f);
            break;
        };
        if n == 0 && !journal {
            // Full from the first batch: fewer units than a batch holds; count them.
            count_limited = Some((0, 0));
            runs.push(f);
            break;
        }
        let by_map = map.is_some_and(|m| n as f64 > 0.9 * m as f64);
        if let Some(prev) = runs.last().and_then(|p| p.ops()) {
            if !by_map && close(n as f64, prev as f64 / 2.0, 0.15) {
                // Journal: bigger batches pack entries better, so the larger run holds more;
                // block-mapped: the smaller writes spread more evenly over the cache sets.
                let b = if journal { n * size } else { prev * (size / 2) };
                let why = format!(
                    "{prev} writes of {} KiB, then {n} of {} KiB before cleaning started: twice the size, half the writes, so the cache space is the limit",
                    size >> 11,
                    size >> 10
                );
                space = Some((b, why));
                runs.push(f);
                break;
            }
            if !journal && close(n as f64, prev as f64, 0.1) {
                count_limited = Some((prev, n));
                runs.push(f);
                break;
            }
        }
        runs.push(f);
        size *= 2;
        if !journal && runs.len() >= 2 {
            break;
        }
    }
    let sizes: Vec<String> = runs
        .iter()
        .map(|f| match f.ops() {
            Some(n) => format!("{} KiB: {n}", f.size >> 10),
            None => format!("{} KiB: no cleaning", f.size >> 10),
        })
        .collect();
    if let Some((prev, n)) = count_limited {
        // The same number of writes whatever their size: a cache allocated in units. Count
        // the units exactly: single writes on after the first collapse, until every write
        // finds the cache full.
        s.clean_slate()?;
        let band = s.f.bands.first().map_or(8 << 20, |b| b.1) as f64;
        // How many units one region of the drive can take: single writes to consecutive
        // bands from LBA 0 until one must clean first. A fully associative layer manages
        // zones independently (section 3.1), each with its spare bands, one of which it keeps
        // free to merge into.
        let local = local_units(s, band as u64, merge_ms)?;
        s.clean_slate()?;
        let u = fill_units(s, s.bs, 0.93, merge_ms)?;
        plot = plot.dots("4 KiB, QD1, units", u.points());
        s.plots.push(plot.log());
        let units = u.units.unwrap_or(n);
        s.report.cache.map_entries = Some(units);
        s.f.map_entries = Some(units);
        s.report.set(
            "cache.map_entries",
            json!(units),
            "7, 8",
            if n == 0 {
                format!(
                    "a fill of {} writes at queue depth {QD} merged bands from its first batch ({:.0} ms a write, a band merge {merge_ms:.0} ms): fewer units than a batch; {units} single writes to new places completed without cleaning (one cache unit each)",
                    bytes(runs[0].size),
                    runs[0].levels.0 / QD as f64
                )
            } else {
                format!(
                    "{prev} and {n} writes before cleaning at twice the size: a count limit; writing on, {units} writes to new places completed without cleaning (one cache unit each)"
                )
            },
            0.7,
        );
        let Some(band) = s.f.bands.first().map(|b| b.1) else {
            let why = format!(
                "a count limit of {units} cache units whose size needs the band size (TEST 11)"
            );
            s.report.unknown("cache.usable_bytes", "8", why.clone());
            s.report.unknown("cache.raw_bytes", "6", why.clone());
            return Ok(why);
        };
        let usable = units * band;
        s.f.usable = Some(usable);
        s.f.small_writes = Some(units);
        s.report.cache.usable_bytes = Some(usable);
        let why = format!(
            "each write to a new band takes one cache unit ({}): {units} units x {} bands (TEST 11)",
            sizes.join(", "),
            bytes(band)
        );
        s.report.set(
            "cache.usable_bytes",
            json!(usable),
            "8, 11",
            why.clone(),
            0.6,
        );
        // The drive's units in zones of `local` each, every zone with one more kept free:
        // when the total is a whole number of zones, that many more bands are raw cache.
        let zones = local
            .filter(|&l| l >= 2)
            .map(|l| (l, (units as f64 / l as f64).round() as u64))
            .filter(|&(l, z)| z >= 1 && units.abs_diff(z * l) * 20 <= units);
        let (raw, raw_why, conf) = match zones {
            Some((l, z)) => (
                (units + z) * band,
                format!(
                    "{why}; the first zone took {l} units before it had to merge, so {units} units are {z} zones of {l}, each with one more band kept free to merge into: {} units",
                    units + z
                ),
                0.6,
            ),
            None => (
                usable,
                format!(
                    "{why}; spare bands kept free for merging, if any, are not seen ({})",
                    local.map_or("no zone found from LBA 0".into(), |l| format!(
                        "the first zone took {l} units, which does not divide {units}"
                    ))
                ),
                0.4,
            ),
        };
        s.report.cache.raw_bytes = Some(raw);
        s.report
            .set("cache.raw_bytes", json!(raw), "6, 8, 11", raw_why, conf);
        return Ok(format!(
            "cache of {units} band-sized units = {}",
            bytes(usable)
        ));
    }
    s.plots.push(plot.log());
    let Some((usable, why)) = space else {
        let why = format!(
            "no two write sizes agreed on a space limit ({})",
            sizes.join(", ")
        );
        s.report.unknown("cache.usable_bytes", "8", why.clone());
        return Ok(why);
    };
    s.f.usable = Some(usable);
    s.report.cache.usable_bytes = Some(usable);
    s.report.set(
        "cache.usable_bytes",
        json!(usable),
        "8",
        format!("{why}; {slate}"),
        0.85,
    );
    if !journal {
        // Block-mapped: what the host writes is what the cache holds, one entry per block.
        let entries = usable / s.bs;
        s.f.small_writes = Some(entries);
        s.f.map_entries = Some(entries);
        s.report.cache.raw_bytes = Some(usable);
        s.report.cache.map_entries = Some(entries);
        let why = "no journal entries (TEST 1): the cache is block-mapped, so its raw size is its usable size and its map holds one entry per block";
        s.report
            .set("cache.raw_bytes", json!(usable), "6, 8", why, 0.6);
        s.report
            .set("cache.map_entries", json!(entries), "7, 8", why, 0.5);
    }
    Ok(format!(
        "usable cache {} ({})",
        bytes(usable),
        sizes.join(", ")
    ))
}
