//! TEST 6 (section 4.6): the persistent cache's raw size. Small synchronous writes each take a
//! whole journal entry (minimum data area plus out-of-band data), so writes until cleaning
//! starts × that footprint is what the cache holds on the platters (Table II, row 1;
//! Figure 16). A drive that does not pack writes into entries (TEST 1) maps its cache block by
//! block: its raw size is its usable size, which TEST 8 measures.

use super::fill::fill;
use crate::error::Result;
use crate::plot::Plot;
use crate::report::bytes;
use crate::session::Session;
use serde_json::json;

/// Runs TEST 6.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(6, "persistent cache raw size", 500);
    let Some(e) = s.f.entries else {
        let why = if s.f.packs == Some(false) || s.f.flash == Some(true) {
            "no journal entries (TEST 1): the cache is block-mapped, so its raw size is its usable size (TEST 8)"
        } else {
            "the journal entry size is unknown (TEST 1), so writes cannot be converted to raw bytes"
        };
        s.report.unknown("cache.raw_bytes", "6", why);
        return Ok(why.to_string());
    };
    let slate = s.clean_slate()?;
    let f = fill(s, s.bs, 1, 50_000_000, false, 0.11)?;
    s.plots.push(
        Plot::new(
            "t06_raw_size.svg",
            "TEST 6: 4 KiB synchronous random writes until cleaning starts (Figure 16)",
            "operation number",
            "write latency (ms)",
        )
        .dots("QD1, 4 KiB", f.points())
        .log(),
    );
    let Some(n) = f.ops() else {
        let why = format!("no cleaning after {} writes", f.batches.len());
        s.report.unknown("cache.raw_bytes", "6", why.clone());
        return Ok(why);
    };
    let fp = e.min + e.oob;
    let raw = n * fp;
    s.f.small_writes = Some(n);
    s.report.cache.raw_bytes = Some(raw);
    s.report.set(
        "cache.raw_bytes",
        json!(raw),
        "6",
        format!(
            "cleaning started after {n} QD1 4 KiB writes ({:.1} -> {:.1} ms per write), each a {} entry + {} OOB; {slate}",
            f.levels.0,
            f.batches.get(f.onset.unwrap_or(0) + 4).copied().unwrap_or(0.0),
            bytes(e.min),
            bytes(e.oob)
        ),
        0.7,
    );
    Ok(format!("{n} writes x {} = {} raw", bytes(fp), bytes(raw)))
}
