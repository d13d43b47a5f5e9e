//! TESTs 9 and 10 (section 4.7): is the persistent cache a circular log? TEST 9 writes a pool
//! of random blocks (43% of what the cache holds, as 10,000 of 23,000 in the paper) three
//! times in the same order (Figure 17); TEST 10 writes as many blocks chosen at random from the
//! same pool (Figure 18). A circular log finds only stale copies when its head wraps in TEST 9
//! and never cleans, but meets live ones in TEST 10 and cleans; a cache updated in place cleans
//! in neither; a cache that never reuses stale space cleans in both.

use crate::error::Result;
use crate::plot::Plot;
use crate::report::bytes;
use crate::session::Session;
use crate::stats::median;
use rand::Rng;
use serde_json::json;

/// The pool: its unit (write size) and how many writes fill the cache.
fn unit(s: &Session<'_>) -> Option<(u64, u64)> {
    if s.f.entries.is_some() {
        // A journal: every small synchronous write takes an entry (TEST 6).
        return s.f.small_writes.map(|n| (s.bs, n));
    }
    let usable = s.f.usable?;
    if s.f.map_entries.is_some_and(|m| m * s.bs < usable / 2) {
        // Allocated per band: one unit per write, whatever its size.
        return s.f.map_entries.map(|m| (s.bs, m));
    }
    // Block-mapped: a unit large enough to keep the test near 30,000 writes.
    let mut u = s.bs;
    while usable / u > 30_000 && u < 1 << 20 {
        u *= 2;
    }
    Some((u, usable / u))
}

/// Slow writes (cleaning) after the cache is full against before: density after `full` over
/// density before, and the first slow write after it.
fn cleaning(lat: &[f64], full: usize) -> (f64, Option<usize>, f64) {
    let m = median(lat);
    let slow = |l: f64| l > 4.0 * m + 50.0;
    let full = full.min(lat.len());
    let before = lat[..full].iter().filter(|&&l| slow(l)).count() as f64 / full.max(1) as f64;
    let after_n = lat.len() - full;
    let after = lat[full..].iter().filter(|&&l| slow(l)).count() as f64 / after_n.max(1) as f64;
    let first = lat
        .iter()
        .enumerate()
        .position(|(i, &l)| i >= full / 2 && slow(l));
    let cleaned_lat: Vec<f64> = lat.iter().copied().filter(|&l| slow(l)).collect();
    let ratio = (after + 1e-3) / (before + 1e-3);
    (ratio, first.filter(|_| ratio > 3.0), median(&cleaned_lat))
}

/// Where a circular log's head first met live entries in TEST 10: the first slow write,
/// leaving out map merges (the residue class of the merge period holding most slow writes),
/// after which slow writes keep coming (3 within the next 200).
fn wrap_index(lat: &[f64], period: Option<u64>) -> Option<usize> {
    let m = median(lat);
    let mut slow: Vec<usize> = (0..lat.len())
        .filter(|&i| lat[i] > 4.0 * m + 50.0)
        .collect();
    if let Some(p) = period.filter(|&p| p > 1).map(|p| p as usize) {
        let mut counts = vec![0usize; p];
        for &i in &slow {
            counts[i % p] += 1;
        }
        let r = (0..p).max_by_key(|&r| counts[r]).unwrap_or(0);
        if counts[r] >= 2 {
            slow.retain(|&i| i % p != r);
        }
    }
    (0..slow.len())
        .find(|&k| slow[k..].iter().take_while(|&&j| j < slow[k] + 200).count() >= 3)
        .map(|k| slow[k])
}

/// Runs TESTs 9 and 10 (`id` 9 or 10): TEST 10 reuses TEST 9's pool when both run.
pub(crate) fn run(s: &mut Session<'_>, id: u8) -> Result<String> {
    s.begin(
        id,
        if id == 9 {
            "circular log, part I"
        } else {
            "circular log, part II"
        },
        100,
    );
    let Some((u, fill)) = unit(s) else {
        let why = "the cache size in writes is unknown (TESTs 6-8)";
        if id == 10 {
            s.report.unknown("circular_log", "9, 10", why);
        }
        return Ok(why.into());
    };
    let slate = s.clean_slate()?;
    let pool_n = (fill * 43 / 100).max(16) as usize;
    let writes = 3 * pool_n;
    if s.f.pool.len() != pool_n || s.f.pool_unit != u {
        s.f.pool = (0..pool_n)
            .map(|_| s.rand_off(0, s.cap, u) / u * u)
            .collect();
        s.f.pool_unit = u;
    }
    let pool = s.f.pool.clone();
    let mut lat = Vec::with_capacity(writes);
    let every = (writes / 100).max(1);
    for i in 0..writes {
        let off = if id == 9 {
            pool[i % pool_n]
        } else {
            pool[s.rng.gen_range(0..pool_n)]
        };
        lat.push(s.write(off, u)?);
        if i % every == 0 {
            s.tick(1);
        }
    }
    let (ratio, first, slow_ms) = cleaning(&lat, fill as usize);
    let cleaned = first.is_some();
    s.plots.push(
        Plot::new(
            &format!("t{id:02}_circular_log.svg"),
            &format!(
                "TEST {id}: {writes} writes of {} from a pool of {pool_n} {} (Figure {})",
                bytes(u),
                if id == 9 {
                    "in the same order, three times"
                } else {
                    "chosen at random"
                },
                if id == 9 { 17 } else { 18 }
            ),
            "operation",
            "write latency (ms)",
        )
        .per_op("writes", &lat)
        .log(),
    );
    let period = s.report.journal.as_ref().and_then(|j| j.map_merge_every);
    let wrap = wrap_index(&lat, period);
    let what = match first {
        Some(i) => format!(
            "cleaning from write {} (the cache holds {fill}), slow writes {slow_ms:.0} ms, {ratio:.0}x denser after the cache filled",
            wrap.unwrap_or(i)
        ),
        None => format!("no cleaning in {writes} writes (slow writes {ratio:.1}x as dense after {fill} as before)"),
    };
    if id == 9 {
        s.f.t9_cleaned = Some(cleaned);
        return Ok(format!("{what}; {slate}"));
    }
    let verdict = match s.f.t9_cleaned {
        None => {
            s.report.unknown("circular_log", "9, 10", format!("TEST 9 was not run; TEST 10: {what}"));
            return Ok(what);
        }
        Some(true) => (false, "TEST 9 already cleaned: stale copies are not reused in place of live ones"),
        Some(false) if cleaned => (true, "TEST 9 never cleaned (the head found only stale copies when it wrapped) but TEST 10 did (it met live ones): a circular log"),
        Some(false) => (false, "neither test cleaned: blocks are updated in place"),
    };
    // A circular log's head wraps when it has gone once round the raw cache: the writes up
    // to there, times each entry's footprint, are the raw size without the cleaning watermark
    // TEST 6 stopped at.
    if verdict.0 {
        if let (Some(e), Some(w)) = (s.f.entries, wrap) {
            let raw = w as u64 * (e.min + e.oob);
            let before = s.report.cache.raw_bytes;
            s.report.cache.raw_bytes = Some(raw);
            s.report.set(
                "cache.raw_bytes",
                json!(raw),
                "6, 10",
                format!(
                    "TEST 10: the log's head met live entries after {w} single-block writes, each a {} entry + {} OOB; TEST 6 saw cleaning start {}",
                    bytes(e.min),
                    bytes(e.oob),
                    match (before, s.f.small_writes) {
                        (Some(b), Some(n)) => format!(
                            "after {n} writes ({} raw, the drive's watermark at {:.0}% of the log)",
                            bytes(b),
                            100.0 * n as f64 / w as f64
                        ),
                        _ => "earlier".into(),
                    }
                ),
                0.75,
            );
        }
    }
    s.report.circular_log = Some(verdict.0);
    s.report.set(
        "circular_log",
        json!(verdict.0),
        "9, 10",
        format!("{}; TEST 10: {what}; {slate}", verdict.1),
        0.75,
    );
    Ok(format!(
        "{}: {what}",
        if verdict.0 {
            "circular log"
        } else {
            "not a circular log"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrap_is_the_first_cleaning_write_not_a_merge() {
        let mut lat = vec![25.0; 3000];
        for i in (239..3000).step_by(240) {
            lat[i] = 340.0;
        }
        for i in (2000..3000).step_by(9) {
            lat[i] = 600.0;
        }
        assert_eq!(wrap_index(&lat, Some(240)), Some(2000));
    }

    #[test]
    fn cleaning_is_a_jump_in_slow_writes_after_the_cache_fills() {
        let mut lat = vec![25.0; 1000];
        for i in (100..1000).step_by(240) {
            lat[i] = 340.0; // map merges, throughout
        }
        assert!(cleaning(&lat, 500).1.is_none());
        for i in (600..1000).step_by(7) {
            lat[i] = 600.0;
        }
        assert_eq!(cleaning(&lat, 500).1, Some(340));
    }
}
