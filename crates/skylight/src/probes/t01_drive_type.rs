//! TEST 1 (section 4.3): drive type and persistent cache medium from the latency of random
//! writes in a small region (fixed = SMR, logged to a cache; varying = CMR), a volatile write
//! cache from plain against FUA writes, queue-depth packing, the quantized journal entries of
//! section 4.3.1 (QD31 writes of growing total size: the minimum entry, its quantum, the
//! out-of-band data) and the map-merge period (the slow write every Nth journal write).

use crate::error::Result;
use crate::plot::Plot;
use crate::report::{bytes, CacheMedia, DriveType, JournalReport};
use crate::session::{Entries, Session};
use crate::stats::{median, outliers, periodic_slow, spread};
use serde_json::json;

/// Blocks of writes per region.
const SAMPLES: usize = 160;
/// Spread (IQR over median) below which a latency counts as fixed. A conventional drive's
/// random writes wait a uniform part of a revolution: 0.59-0.98 on modelled drives of
/// 5,400-15,000 rpm; a journal whose log walks through cache bands spread over the disk
/// seeks between them and measured 0.23-0.29 (two of 300 drawn drives, taken for CMR at 0.2).
const FIXED: f64 = 0.4;
/// Samples of each entry level for the line fit, and the trim: samples more than this much
/// above the fastest waited for the platter (a missed start), not for the entry.
const LEVEL_SAMPLES: usize = 25;
const TRIM: f64 = 1.12;
/// Batches behind each level of the entry sweep (its minimum: a batch that started at an
/// unlucky rotational phase or met a track switch more is left out).
const LEVEL_MIN_OF: usize = 8;
/// Queue depth of the packing and entry tests (SATA NCQ's 31).
const QD: usize = 31;

/// Write latencies without the first command and isolated slow ones (map merges).
fn steady(lat: &[f64]) -> Vec<f64> {
    let slow = outliers(lat, 4.0, 50.0);
    lat.iter()
        .enumerate()
        .skip(1)
        .filter(|(i, _)| !slow.contains(i))
        .map(|(_, &l)| l)
        .collect()
}

/// Sizes of `k` writes totalling `total` bytes (multiples of `bs`, as even as possible).
fn split(total: u64, k: u64, bs: u64) -> Vec<u64> {
    let blocks = total / bs;
    let k = k.clamp(1, blocks.max(1));
    let base = blocks / k;
    let extra = blocks % k;
    (0..k).map(|i| (base + u64::from(i < extra)) * bs).collect()
}

/// One queued batch totalling `total` bytes inside `[0, region)`; the batch time (the last
/// completion), in ms.
fn batch_time(s: &mut Session<'_>, total: u64, region: u64) -> Result<f64> {
    let sizes = split(total, QD as u64, s.bs);
    let writes: Vec<(u64, u64)> = sizes
        .iter()
        .map(|&len| (s.rand_off(0, region, len), len))
        .collect();
    let ops = s.durable_batch(writes.into_iter());
    let lat = s.batch(&ops)?;
    Ok(lat.iter().copied().fold(0.0, f64::max))
}

/// Minimum of `n` batch times at `total`, each after a single small write that moves the log
/// head to a new rotational phase (so no sample repeats an unlucky alignment).
fn level(s: &mut Session<'_>, total: u64, region: u64, n: usize) -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..n {
        let o = s.rand_off(0, region, s.bs);
        s.write(o, s.bs)?;
        best = best.min(batch_time(s, total, region)?);
    }
    s.tick(n as u64);
    Ok(best)
}

/// Finds the smallest total in `(lo, hi]` (block resolution) whose level exceeds `cut`.
fn boundary(s: &mut Session<'_>, mut lo: u64, mut hi: u64, cut: f64, region: u64) -> Result<u64> {
    let bs = s.bs;
    while hi - lo > bs {
        let mid = (lo + hi) / 2 / bs * bs;
        if level(s, mid, region, LEVEL_MIN_OF)? > cut {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// Splits a non-decreasing step curve into plateaus: `(first index, level)` for each, where
/// a new plateau needs two consecutive points above the current level by `thr`.
fn plateaus(pts: &[(u64, f64)], thr: f64) -> Vec<(usize, f64)> {
    let mut out: Vec<(usize, f64)> = Vec::new();
    for i in 0..pts.len() {
        let l = pts[i].1;
        match out.last_mut() {
            None => out.push((i, l)),
            Some(last) => {
                let next = pts.get(i + 1).map(|p| p.1);
                if l > last.1 + thr && next.is_none_or(|n| n > last.1 + thr) {
                    // The first point of a plateau may straddle the step: its level is the
                    // next point's (lowered by any later one).
                    out.push((i, next.unwrap_or(l)));
                } else if l < last.1 {
                    last.1 = l;
                }
            }
        }
    }
    out
}

/// Least-squares line through `(x, y)`: (slope, intercept).
fn fit(xy: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = xy.len() as f64;
    if xy.len() < 2 {
        return None;
    }
    let mx = xy.iter().map(|p| p.0).sum::<f64>() / n;
    let my = xy.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = xy.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    Some((b, my - b * mx))
}

/// What the entry sweep found: the entries (if any), the Figure 7 points and the evidence.
type Sweep = (Option<Entries>, Vec<(f64, f64)>, String);

/// A level as a mean over random rotational phases (track switches inside an entry average
/// out), leaving out samples that waited a revolution.
fn mean_level(s: &mut Session<'_>, total: u64, region: u64) -> Result<f64> {
    let mut v = Vec::new();
    for _ in 0..LEVEL_SAMPLES {
        let o = s.rand_off(0, region, s.bs);
        s.write(o, s.bs)?;
        v.push(batch_time(s, total, region)?);
    }
    s.tick(LEVEL_SAMPLES as u64);
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let kept: Vec<f64> = v.into_iter().filter(|&x| x <= lo * TRIM).collect();
    Ok(crate::stats::mean(&kept))
}

/// Whether reads across the whole device (`far_ms`, median) cost no more than reads within a
/// few MiB (`near_ms`): no seek, so no disk. A disk's full-stroke average seek alone is
/// several ms and its short seeks well under one; 15% is far below that gap and above the
/// noise of 32 samples' medians.
fn no_seek(far_ms: f64, near_ms: f64) -> bool {
    far_ms < 1.15 * near_ms
}

/// The smallest level change taken as a new plateau: four times the measured noise, at least
/// 1 ms, but never above a tenth of the level (a fast device's whole level can be under 10 ms).
fn noise_threshold(noise: f64, level: f64) -> f64 {
    let cap = 0.1 * level;
    (4.0 * noise).max(1.0).min(cap).max(0.0)
}

/// Whether the last of `found`'s jumps is much larger than the others: a second entry, not
/// a larger one (the bound on the entry size).
fn second_entry(found: &[(usize, f64)]) -> bool {
    if found.len() < 4 {
        return false;
    }
    let jumps: Vec<f64> = found.windows(2).map(|w| w[1].1 - w[0].1).collect();
    jumps[jumps.len() - 1] > 2.2 * median(&jumps[..jumps.len() - 1])
}

/// Section 4.3.1: the entry sweep. Returns the entries found and the Figure 7 points.
fn entries(s: &mut Session<'_>, region: u64) -> Result<Sweep> {
    let step = QD as u64 * s.bs;
    let mut pts: Vec<(u64, f64)> = Vec::new();
    let max = 24u64 << 20;
    // Every batch holds QD commands (one block each at the start), so that the per-command
    // overhead is the same at every size and only the entry's size moves the latency.
    let mut d = step;
    let mut noise_thr = f64::INFINITY;
    let mut thr = f64::INFINITY;
    while d <= max {
        let l = level(s, d, region, LEVEL_MIN_OF)?;
        pts.push((d, l));
        if pts.len() == 1 {
            // The level's repeatability: the same batch again, and a slightly larger one
            // inside the same entry.
            let again = level(s, d, region, LEVEL_MIN_OF)?;
            let near = level(s, d + 4 * s.bs, region, LEVEL_MIN_OF)?;
            let noise = (again - l).abs().max((near - l).abs());
            noise_thr = noise_threshold(noise, l);
            thr = noise_thr;
        }
        let mut found = plateaus(&pts, thr);
        if found.len() == 2 && thr == noise_thr {
            // The first step (minimum entry to one quantum more) sets the scale: a level
            // that drifts by less than 40% of it within one entry size is not a new one.
            thr = noise_thr.max(0.4 * (found[1].1 - found[0].1));
            found = plateaus(&pts, thr);
        }
        if found.len() >= 12 || l > 2000.0 {
            break;
        }
        // Stop after a jump much larger than the steps so far.
        if second_entry(&found) {
            break;
        }
        d += step;
    }
    let fig7: Vec<(f64, f64)> = pts
        .iter()
        .map(|&(d, l)| (d as f64 / QD as f64 / 1024.0, l))
        .collect();
    let mut found = plateaus(&pts, thr);
    // Drop a final jump much larger than the others (a second entry, not a larger one), and
    // keep where it is: it prices the out-of-band area without the fixed costs of a batch.
    let mut split: Option<(u64, u64)> = None;
    if second_entry(&found) {
        if let Some((i, _)) = found.pop() {
            split = Some((pts[i - 1].0, pts[i].0));
        }
    }
    if found.len() < 3 {
        return Ok((
            None,
            fig7,
            format!(
                "{} latency level(s) up to {} per batch: no quantized growth seen",
                found.len(),
                bytes(d.min(max))
            ),
        ));
    }
    // Refine the first two boundaries to one block.
    let (i1, l1) = found[1];
    let (i2, l2) = found[2];
    let l0 = found[0].1;
    let prev = |i: usize| if i == 0 { 0 } else { pts[i - 1].0 };
    let b1 = boundary(s, prev(i1), pts[i1].0, (l0 + l1) / 2.0, region)?;
    let b2 = boundary(s, prev(i2), pts[i2].0, (l1 + l2) / 2.0, region)?;
    let min = b1 - s.bs;
    let quantum = b2 - b1;
    if quantum == 0 {
        return Ok((None, fig7, "latency levels do not grow".into()));
    }
    // Latency = fixed costs + (entry data + OOB) / rate: a line through the levels against
    // the data area gives the rate.
    let mut xy: Vec<(f64, f64)> = Vec::new();
    for k in 0..found.len() {
        let total = (min + k as u64 * quantum).max(s.bs);
        xy.push((
            (min + k as u64 * quantum) as f64,
            mean_level(s, total, region)?,
        ));
    }
    let Some((slope, icpt)) = fit(&xy).filter(|f| f.0 > 0.0) else {
        return Ok((None, fig7, "latency levels do not grow".into()));
    };
    let rate = 1.0 / slope; // bytes per ms
                            // The out-of-band area: a second entry (the minimum data area and its OOB) costs the
                            // jump past the entry's bound, fixed costs (command, seek, flush) being the same on
                            // either side of it; without that jump, the line's intercept (which holds them too).
    let mut max = None;
    let (oob, how) = match split {
        Some((a, b)) => {
            // Each side's fastest batch: one that met no extra revolution or track switch.
            let lb = level(s, b, region, 2 * LEVEL_MIN_OF)?;
            let la = level(s, a, region, 2 * LEVEL_MIN_OF)?;
            let jump = lb - la;
            // The bound to one block: the largest batch that is still one entry.
            let one = boundary(s, a, b, (la + lb) / 2.0, region)? - s.bs;
            max = Some(one.max(min));
            (
                (jump * rate - min as f64).max(0.0),
                format!(
                    "a second entry past {} of data costs {jump:.1} ms more",
                    bytes(a)
                ),
            )
        }
        None => (
            (icpt * rate).max(0.0),
            "the line's intercept (no second entry seen)".to_string(),
        ),
    };
    let oob = (oob / s.bs as f64).round() as u64 * s.bs;
    let why = format!(
        "QD{QD} batch latency levels {} ms; steps at {} and {} of data per batch; out-of-band area: {how}",
        found
            .iter()
            .map(|f| format!("{:.1}", f.1))
            .collect::<Vec<_>>()
            .join(", "),
        bytes(b1),
        bytes(b2)
    );
    Ok((
        Some(Entries {
            min,
            quantum,
            oob,
            rate,
            max,
        }),
        fig7,
        why,
    ))
}

/// Runs TEST 1.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(1, "drive type, cache medium, journal entries", 1000);
    let bs = s.bs;
    let r1 = (1u64 << 30).min(s.cap / 4).max(64 * bs);
    let r2 = (4u64 << 20).min(r1);

    // Volatile cache: plain writes against FUA writes.
    let mut plain = Vec::new();
    let mut fua = Vec::new();
    for _ in 0..24 {
        let o = s.rand_off(0, r2, bs);
        if let Ok(l) = s.write_cached(o, bs)? {
            plain.push(l);
        }
    }
    s.flush()?;
    for _ in 0..24 {
        let o = s.rand_off(0, r2, bs);
        fua.push(s.write(o, bs)?);
    }
    let (mp, mf) = (median(&plain), median(&fua));
    let volatile = mp < 0.3 * mf;
    s.f.volatile = Some(volatile);
    s.report.volatile_cache = Some(volatile);
    s.report.set(
        "volatile_cache",
        json!(volatile),
        "1",
        format!("plain writes {mp:.2} ms vs FUA writes {mf:.2} ms (median of 24 each)"),
        if (mp / mf.max(1e-9) - 0.3).abs() > 0.15 {
            0.9
        } else {
            0.5
        },
    );
    s.tick(48);

    // Random reads over the whole drive: a disk pays a seek and a rotation.
    let mut rr = Vec::new();
    for _ in 0..64 {
        let o = s.rand_off(0, s.cap, bs);
        rr.push(s.read(o, bs)?);
    }
    let rrm = median(&rr);
    s.f.random_read_ms = Some(rrm);
    // The same reads inside a few MiB: a disk's seeks there are short (or the reads hit its
    // track buffer), so reads across the whole device take clearly longer. A RAM-backed or
    // virtual device without a seek answers both alike, however slow its commands are.
    let mut near = Vec::new();
    for _ in 0..32 {
        let o = s.rand_off(0, r2, bs);
        near.push(s.read(o, bs)?);
    }
    let nearm = median(&near);
    s.tick(32);

    // Random FUA writes in a region smaller than any band, then in the first GiB.
    let mut small = Vec::new();
    for _ in 0..SAMPLES {
        let o = s.rand_off(0, r2, bs);
        small.push(s.write(o, bs)?);
    }
    s.tick(SAMPLES as u64);
    let mut big = Vec::new();
    for _ in 0..SAMPLES {
        let o = s.rand_off(0, r1, bs);
        big.push(s.write(o, bs)?);
    }
    s.tick(SAMPLES as u64);
    let (sm, bm) = (steady(&small), steady(&big[..SAMPLES.min(big.len())]));
    let (sp_small, sp_big) = (spread(&sm), spread(&bm));
    let fixed_small = sp_small < FIXED;
    let fixed_big = sp_big < FIXED;
    let lat = if fixed_big { median(&bm) } else { median(&sm) };
    let evidence = format!(
        "random 4 KiB FUA writes: spread (IQR/median) {sp_small:.2} in the first {}, {sp_big:.2} in the first {} (median {:.2} / {:.2} ms); random reads over the drive {rrm:.2} ms",
        bytes(r2),
        bytes(r1),
        median(&sm),
        median(&bm)
    );
    let writes = if fixed_small {
        "fixed, flash-like"
    } else {
        "varying"
    };
    if rrm < 1.0 {
        let why = format!(
            "not a magnetic disk: random reads over the whole device take {rrm:.3} ms (no seek, no rotation); writes look {writes} ({evidence})"
        );
        s.report.unknown("drive_type", "1", why);
        s.f.smr = None;
        return Ok("not a disk: sub-millisecond random reads".into());
    }
    if no_seek(rrm, nearm) {
        let why = format!(
            "not a magnetic disk: random reads over the whole device take {rrm:.2} ms, reads within {} {nearm:.2} ms (no seek distance in the latency); writes look {writes} ({evidence})",
            bytes(r2)
        );
        s.report.unknown("drive_type", "1", why);
        s.f.smr = None;
        return Ok("not a disk: reads cost the same at any distance".into());
    }
    let smr = fixed_small || fixed_big;
    s.f.smr = Some(smr);
    let margin = (FIXED - sp_small.min(sp_big)).abs() / FIXED;
    s.report.drive_type = Some(if smr { DriveType::Smr } else { DriveType::Cmr });
    s.report.set(
        "drive_type",
        json!(if smr { "smr" } else { "cmr" }),
        "1",
        evidence.clone(),
        (0.5 + margin).min(0.95),
    );
    if !smr {
        s.f.flash = None;
        return Ok(format!(
            "CMR: random write latency varies (spread {sp_small:.2})"
        ));
    }
    s.f.write_ms = Some(lat);
    let flash = lat < 1.0;
    s.f.flash = Some(flash);
    s.report.cache.media = Some(if flash {
        CacheMedia::Flash
    } else {
        CacheMedia::Disk
    });
    s.report.set(
        "cache.media",
        json!(if flash { "flash" } else { "disk" }),
        "1",
        format!(
            "fixed random-write latency {lat:.2} ms ({} 1 ms)",
            if flash { "below" } else { "above" }
        ),
        0.9,
    );

    // Packing at queue depth 31.
    let mut ratio = Vec::new();
    for _ in 0..6 {
        let t = batch_time(s, QD as u64 * bs, r1)?;
        ratio.push(t / (QD as f64 * lat));
    }
    s.tick(6);
    let packing = median(&ratio);
    let packs = packing < 0.35;
    s.f.packs = Some(packs);

    let mut journal = JournalReport {
        entry_min_bytes: None,
        entry_quantum_bytes: None,
        oob_bytes: None,
        map_merge_every: None,
    };
    let mut verdict = format!(
        "SMR, {} cache, {lat:.1} ms fixed write latency",
        if flash { "flash" } else { "disk" }
    );
    if packs && !flash {
        let (e, fig7, why) = entries(s, r1)?;
        s.plots.push(
            Plot::new(
                "t01_entry_sizes.svg",
                "TEST 1 / 4.3.1: write latency against write size at QD31 (Figure 7)",
                "write size (KiB), 31 queued writes",
                "batch latency (ms)",
            )
            .line("latency", fig7),
        );
        match e {
            Some(e) => {
                s.f.entries = Some(e);
                journal.entry_min_bytes = Some(e.min);
                journal.entry_quantum_bytes = Some(e.quantum);
                journal.oob_bytes = Some(e.oob);
                s.report.set(
                    "journal.entry_min_bytes",
                    json!(e.min),
                    "1",
                    why.clone(),
                    0.8,
                );
                s.report.set(
                    "journal.entry_quantum_bytes",
                    json!(e.quantum),
                    "1",
                    why.clone(),
                    0.8,
                );
                s.report.set(
                    "journal.oob_bytes",
                    json!(e.oob),
                    "1",
                    format!(
                        "{why}; a line through the levels against the entry data gives {:.1} MB/s and {} more per entry",
                        e.rate / 1e3,
                        bytes(e.oob)
                    ),
                    0.6,
                );
                verdict.push_str(&format!(
                    ", journal entries {} + {} x n, OOB {}",
                    bytes(e.min),
                    bytes(e.quantum),
                    bytes(e.oob)
                ));
            }
            None => {
                for k in [
                    "journal.entry_min_bytes",
                    "journal.entry_quantum_bytes",
                    "journal.oob_bytes",
                ] {
                    s.report.unknown(k, "1", why.clone());
                }
            }
        }
    } else {
        let why = if flash {
            "flash cache: entry sizes are not visible in write latency".to_string()
        } else {
            format!(
                "no packing: {QD} queued writes take {packing:.2} x {QD} single writes, so writes are logged one by one, not in journal entries"
            )
        };
        for k in [
            "journal.entry_min_bytes",
            "journal.entry_quantum_bytes",
            "journal.oob_bytes",
        ] {
            s.report.unknown(k, "1", why.clone());
        }
    }
    s.report.set(
        "queue_packing",
        json!(packs),
        "1",
        format!("{QD} queued 4 KiB writes take {packing:.2} x the time of {QD} single writes"),
        0.9,
    );

    // The map merge: a slow write every Nth journal write. QD1 writes go on (after the entry
    // sweep, so that they do not fill the cache under it) until four slow ones, stopping
    // before the cache fills: a sustained run of slow writes is cleaning, not a merge.
    // In wall time a host pause also makes a slow write: the period must then hold for at
    // least four beats, every one present, well above the run's own noise floor.
    // The entry sweep may have filled much of a small cache: start from an empty one where
    // the drive allows (a secure erase, or idle time on an aggressive drive).
    if s.f.entries.is_some() {
        s.clean_slate()?;
    }
    // A cache that fills before three periods: the run goes on after idle time lets an
    // aggressive drive clean (the drive counts its journal writes across cleaning, so the
    // beats keep their places); the writes it cleaned under, and the first one after each
    // idle (a seek back to the log), are kept as unknowns (NaN) so that every later write
    // keeps its index. A drive that does not clean when idle collapses again at once: the
    // run ends there.
    let cap_writes = if s.virtual_time() { 4000 } else { 1500 };
    let max_rounds = if s.virtual_time() { 6 } else { 2 };
    let beats_needed = if s.virtual_time() { 3 } else { 4 };
    // With nothing slow after this many writes the drive is taken to have no merge; on the
    // modelled clock writes are cheap, so the run goes on to periods of a thousand writes.
    let quiet_stop = if s.virtual_time() { cap_writes } else { 600 };
    let mut seq: Vec<f64> = Vec::new();
    let mut collapse: Option<crate::stats::Collapse> = None;
    let (mut rounds, mut round_start, mut collapse_ms) = (0usize, 0usize, f64::INFINITY);
    // The first write of the run pays a seek to the log: left out.
    let o = s.rand_off(0, r1, bs);
    s.write(o, bs)?;
    while seq.len() < cap_writes {
        let o = s.rand_off(0, r1, bs);
        let l = s.write(o, bs)?;
        seq.push(l);
        if seq.len() == round_start + 16 {
            collapse_ms = 4.0 * median(&seq) + 50.0;
            let mut c = crate::stats::Collapse::new(collapse_ms, 8, 4);
            for (i, &x) in seq.iter().enumerate().skip(round_start) {
                c.push(i, x);
            }
            collapse = Some(c);
        } else if let Some(c) = &mut collapse {
            if let Some(at) = c.push(seq.len() - 1, l) {
                if rounds == 0 && at < 16 {
                    seq.truncate(at);
                    break;
                }
                // So are the cleaning writes that came before the collapse was established.
                for x in &mut seq[at.saturating_sub(64).max(round_start)..at] {
                    if *x > collapse_ms {
                        *x = f64::NAN;
                    }
                }
                seq[at..].fill(f64::NAN);
                if rounds >= max_rounds || at < round_start + 24 {
                    break;
                }
                s.stage("idling until cleaning has made room, for more map-merge beats");
                if s.idle_until_quiet(6.0)?.is_err() {
                    break;
                }
                rounds += 1;
                let o = s.rand_off(0, r1, bs);
                s.write(o, bs)?;
                seq.push(f64::NAN);
                round_start = seq.len();
                collapse = None;
                continue;
            }
        }
        if seq.len().is_multiple_of(40) {
            let found = periodic_slow(&seq, beats_needed.max(4)).is_ok();
            if found || (seq.len() >= quiet_stop && crate::stats::slow_ops(&seq).is_empty()) {
                break;
            }
        }
        s.tick(1);
    }
    big.extend(seq.iter().copied().filter(|x| x.is_finite()));
    let slow_at = crate::stats::slow_ops(&seq);
    s.plots.push(
        Plot::new(
            "t01_random_writes.svg",
            "TEST 1: latency of random 4 KiB FUA writes (Figure 4)",
            "operation",
            "latency (ms)",
        )
        .per_op(&format!("first {}", bytes(r1)), &big)
        .per_op(&format!("first {}", bytes(r2)), &small)
        .log(),
    );
    // The map merge: a slow write every Nth journal write.
    match periodic_slow(&seq, beats_needed) {
        Ok(p) => {
            journal.map_merge_every = Some(p.period as u64);
            s.report.set(
                "journal.map_merge_every",
                json!(p.period),
                "1",
                format!(
                    "{} slow QD1 writes in {}: every {}th from write {} ({} beats, none missing), the fastest {:.0} ms against a median of {:.0} ms and a noise floor (99th percentile of the other writes) of {:.0} ms; {} other write(s) as slow (chance of such a progression {:.0e})",
                    slow_at.len(),
                    seq.len(),
                    p.period,
                    p.first,
                    p.beats,
                    p.latency_ms,
                    p.median_ms,
                    p.floor_ms,
                    p.intruders,
                    p.chance
                ),
                if p.beats >= 4 { 0.9 } else { 0.7 },
            );
            verdict.push_str(&format!(", map merge every {} writes", p.period));
        }
        Err(why) => s.report.unknown(
            "journal.map_merge_every",
            "1",
            format!(
                "no map merge period in {} QD1 writes ({} slow): {why}",
                seq.len(),
                slow_at.len()
            ),
        ),
    }
    if journal.entry_min_bytes.is_some() || journal.map_merge_every.is_some() {
        s.report.journal = Some(journal);
    }
    Ok(verdict)
}

#[cfg(test)]
mod tests {

    #[test]
    fn reads_that_cost_the_same_near_and_far_are_not_a_disk() {
        // The VM's scsi_debug disk under TCG: slow commands, no seek.
        assert!(super::no_seek(2.1, 2.0));
        // A 64 GiB image of cmr-7200: 10.98 ms across the device, a few ms nearby.
        assert!(!super::no_seek(10.98, 4.9));
        // Reads nearby served from the track buffer.
        assert!(!super::no_seek(12.0, 0.2));
    }

    #[test]
    fn noise_threshold_on_a_fast_device_stays_below_a_tenth_of_the_level() {
        // A RAM-backed disk's whole batch level was 6.28 ms (the VM's scsi_debug); here 6.2.
        assert!((super::noise_threshold(0.01, 6.2) - 0.62).abs() < 1e-9);
        assert_eq!(super::noise_threshold(0.01, 100.0), 1.0);
        assert_eq!(super::noise_threshold(5.0, 100.0), 10.0);
        assert_eq!(super::noise_threshold(f64::NAN, 100.0), 1.0);
    }

    use super::*;

    #[test]
    fn plateaus_need_two_points_and_ignore_a_lone_spike() {
        let pts: Vec<(u64, f64)> = [28.0, 28.0, 38.0, 28.0, 34.0, 34.0, 40.0, 40.0]
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u64, l))
            .collect();
        let p = plateaus(&pts, 3.0);
        assert_eq!(p.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 4, 6]);
        let (b, a) = fit(&[(1.0, 3.0), (2.0, 5.0), (3.0, 7.0)]).expect("fit");
        assert!((b - 2.0).abs() < 1e-9 && (a - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_total_splits_into_even_block_multiples() {
        let v = split(130 * 4096, 31, 4096);
        assert_eq!(v.len(), 31);
        assert_eq!(v.iter().sum::<u64>(), 130 * 4096);
        assert!(v.iter().all(|x| x % 4096 == 0 && *x >= 4 * 4096));
        assert_eq!(split(8192, 31, 4096), vec![4096, 4096]);
    }
}
