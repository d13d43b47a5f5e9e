//! TEST 3 (section 4.5): aggressive or lazy cleaning, and how long the drive waits idle before
//! it starts. A fragmented region is read right away and again after a pause (Figure 10): an
//! aggressive drive cleans during the pause, so the first command after it waits for the
//! band being rewritten, and the region may read back unfragmented. The idle delay is found by
//! bisection on the pause length, with enough dirty bands queued that cleaning, once started,
//! is still running when the pause ends.

use super::frag::{fragment, read_back};
use crate::error::Result;
use crate::plot::Plot;
use crate::report::CleaningKind;
use crate::session::{busy_threshold, Session};
use crate::stats::mean;
use serde_json::json;
use tegula_device::SEC;

/// Longest pause tried, seconds (the paper paused 3-5 s).
const PAUSE: f64 = 8.0;

/// Queues cleaning work: one queued batch of single-block writes over the whole drive (each
/// block in its own band), then pauses `pause` seconds between two reads of neighbouring
/// blocks. Returns whether the drive used its heads during the pause (the second read missed
/// the look-ahead buffer) and the idle time the host actually left between the first read's
/// completion and the second read's submission, seconds (on a busy host a sleep overshoots).
fn trial(s: &mut Session<'_>, pause: f64) -> Result<(bool, f64)> {
    let offs: Vec<u64> = (0..31).map(|_| s.rand_off(0, s.cap, s.bs)).collect();
    s.write_batch(&offs, s.bs)?;
    let (quiet, _, gap) = s.quiet_gap(pause)?;
    Ok((!quiet, gap))
}

/// Bisections of the idle delay run in wall time; they must agree within this (relative) or
/// [`AGREE_S`] (absolute), whichever is larger.
const AGREE: f64 = 0.1;
const AGREE_S: f64 = 0.05;

/// One bisection of the idle delay on the pause length, to 20 ms. In wall time a host stall
/// can only lengthen the drive's idle time (a pause looks longer to the drive than the host
/// asked for), so a quiet trial is a sound lower bound, and a busy one is believed only when a
/// second trial at the same pause is busy too. Returns (lower, upper) bounds, seconds, or
/// `None` when the trials contradict each other (a quiet trial longer than a busy one).
fn bisect(s: &mut Session<'_>) -> Result<Option<(f64, f64)>> {
    let wall = !s.virtual_time();
    let (mut lo, mut hi) = (0.0f64, PAUSE);
    while hi - lo > 0.02 {
        let mid = (lo + hi) / 2.0;
        let (mut busy, mut gap) = trial(s, mid)?;
        if busy && wall {
            let (b2, g2) = trial(s, mid)?;
            busy = b2;
            gap = if b2 { gap.max(g2) } else { g2 };
        }
        if busy {
            hi = mid;
        } else {
            // The drive stayed quiet for all of the measured gap.
            let g = if wall { gap.max(mid) } else { mid };
            if g >= hi {
                return Ok(None);
            }
            lo = g;
        }
        s.tick(1);
    }
    Ok(Some((lo, hi)))
}

/// Runs TEST 3.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(3, "cleaning type and idle delay", 3 * 1024 + 20);
    let slate = s.clean_slate()?;
    let typical = s.f.random_read_ms.unwrap_or(20.0);
    let off = s.align(s.cap / 3);
    fragment(s, off)?;
    let before = read_back(s, off)?;
    s.idle(PAUSE)?;
    let after = read_back(s, off)?;
    let first_wait = (after[0] - typical).max(0.0);
    let (fb, fa) = (mean(&before), mean(&after[1..]));
    s.plots.push(
        Plot::new(
            "t03_cleaning_type.svg",
            &format!("TEST 3: fragmented read before and after {PAUSE:.0} s idle (Figure 10)"),
            "block",
            "read latency (ms)",
        )
        .per_op("right after writing", &before)
        .per_op(&format!("after {PAUSE:.0} s idle"), &after)
        .log(),
    );
    // A second trial over the whole drive, so that the verdict does not hang on one region.
    let (active, _) = trial(s, PAUSE)?;
    s.tick(2);
    let thr = busy_threshold(typical);
    let busy = first_wait > thr || active;
    let cleaned = fa < 0.6 * fb;
    let evidence = format!(
        "fragmented read {fb:.2} ms per block, {fa:.2} ms after {PAUSE:.0} s idle; the first command after the pause waited {first_wait:.0} ms (background work above {thr:.0} ms); during a second pause the heads {} (a read of the next block {} the look-ahead buffer); {slate}",
        if active { "moved" } else { "stayed" },
        if active { "missed" } else { "hit" }
    );
    if !(busy || cleaned) {
        s.f.aggressive = Some(false);
        s.report.cleaning.kind = Some(CleaningKind::Lazy);
        s.report
            .set("cleaning.kind", json!("lazy"), "3", evidence, 0.8);
        s.report.unknown(
            "cleaning.idle_delay_s",
            "3",
            format!("lazy cleaning: no background work after {PAUSE:.0} s idle"),
        );
        return Ok(format!(
            "lazy: still fragmented after {PAUSE:.0} s idle ({fb:.1} -> {fa:.1} ms)"
        ));
    }
    s.f.aggressive = Some(true);
    s.report.cleaning.kind = Some(CleaningKind::Aggressive);
    s.report.set(
        "cleaning.kind",
        json!("aggressive"),
        "3",
        evidence,
        if busy && cleaned { 0.95 } else { 0.8 },
    );
    // Bisection of the idle delay: the shortest pause after which a command waits. In wall
    // time it runs twice (three times if the first two disagree) and two must agree.
    let runs = if s.virtual_time() { 1 } else { 2 };
    let mut found: Vec<(f64, f64)> = Vec::new();
    let mut contradictions = 0;
    let mut agreed: Option<(f64, f64)> = None;
    for round in 0..runs + 1 {
        if round == runs && agreed.is_some() {
            break;
        }
        match bisect(s)? {
            Some(b) => found.push(b),
            None => contradictions += 1,
        }
        if runs == 1 {
            agreed = found.first().copied();
        } else {
            'pairs: for (i, a) in found.iter().enumerate() {
                for b in &found[i + 1..] {
                    let (x, y) = ((a.0 + a.1) / 2.0, (b.0 + b.1) / 2.0);
                    if (x - y).abs() <= (AGREE * x.max(y)).max(AGREE_S) {
                        agreed = Some((a.0.max(b.0), a.1.max(b.1)));
                        break 'pairs;
                    }
                }
            }
        }
        if runs == 1 {
            break;
        }
    }
    let list = found
        .iter()
        .map(|(l, h)| format!("{:.2}", (l + h) / 2.0))
        .collect::<Vec<_>>()
        .join(", ");
    let Some((lo, hi)) = agreed else {
        let why = format!(
            "the bisections of the idle delay disagree ({} s{}): host noise on a wall clock",
            if list.is_empty() {
                "none finished"
            } else {
                &list
            },
            if contradictions > 0 {
                format!("; {contradictions} contradicted itself (quiet after a longer pause than a busy one)")
            } else {
                String::new()
            }
        );
        s.report.unknown("cleaning.idle_delay_s", "3", why);
        return Ok(format!(
            "aggressive, idle delay unknown (bisections {list} s disagree)"
        ));
    };
    let delay = (lo + hi) / 2.0;
    s.f.idle_delay = Some((delay * SEC as f64) as u64);
    s.report.cleaning.idle_delay_s = Some((delay * 100.0).round() / 100.0);
    s.report.set(
        "cleaning.idle_delay_s",
        json!((delay * 100.0).round() / 100.0),
        "3",
        format!(
            "after {lo:.2} s idle the heads had not moved (the next block came from the look-ahead buffer), after {hi:.2} s they had{}",
            if runs > 1 {
                format!(" (bisections: {list} s; each busy trial confirmed by a second; the idle time is the measured gap between the reads)")
            } else {
                String::new()
            }
        ),
        if runs > 1 { 0.75 } else { 0.85 },
    );
    Ok(format!(
        "aggressive, cleaning starts after {delay:.2} s idle ({fb:.1} -> {fa:.1} ms per fragmented block)"
    ))
}
