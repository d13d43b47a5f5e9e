//! TEST 13 (section 4.11): torn writes. With the volatile cache on, a drive with static
//! mapping streams sequential writes straight into their band; a power cut in the middle of
//! that band overwrite leaves the following tracks unreadable (Figures 22-23). Each round
//! starts 1 MiB sequential writes at a random offset, cuts power during a media write, powers
//! on and reads back the range written, locating every unreadable block; the ranges are then
//! rewritten, which cures them.

use crate::error::{Result, TargetError};
use crate::report::{bytes, Range, TornReport};
use crate::session::Session;
use rand::Rng;
use serde_json::json;

/// Rounds (the paper made 50).
const ROUNDS: u32 = 12;
/// Write size.
const MIB: u64 = 1 << 20;
/// Most written per round before giving up on the cut.
const MAX_WRITE: u64 = 1 << 30;

/// Reads `[lo, hi)` in 1 MiB pieces; unreadable blocks as merged ranges.
fn unreadable(s: &mut Session<'_>, lo: u64, hi: u64) -> Result<Vec<Range>> {
    let mut bad: Vec<Range> = Vec::new();
    let mut push = |off: u64, len: u64| match bad.last_mut() {
        Some(r) if r.offset + r.bytes == off => r.bytes += len,
        _ => bad.push(Range {
            offset: off,
            bytes: len,
        }),
    };
    let mut off = lo;
    while off < hi {
        let len = MIB.min(hi - off);
        if s.try_read(off, len)?.is_err() {
            // Block by block inside the failing piece.
            let mut b = off;
            while b < off + len {
                if s.try_read(b, s.bs)?.is_err() {
                    push(b, s.bs);
                }
                b += s.bs;
            }
        }
        off += len;
    }
    Ok(bad)
}

/// Runs TEST 13.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(13, "torn writes", ROUNDS as u64);
    if s.power().is_none() {
        let why = "no power control on this target (the emulator's power cut is available for images and configurations; a real drive needs a relay)";
        s.report.unknown("torn_writes", "13", why);
        return Ok(why.into());
    }
    let mut rep = TornReport::default();
    let mut cured = 0usize;
    for round in 0..ROUNDS {
        let start = s.rand_off(s.cap / 10, s.cap - s.cap / 10 - MAX_WRITE, MIB) / MIB * MIB;
        let after = s.rng.gen_range(1..=24u64);
        let seed = s.rng.gen::<u64>();
        if let Some(p) = s.power() {
            p.arm_cut(after, seed);
        }
        let mut off = start;
        let mut cut = false;
        while off < start + MAX_WRITE {
            match s.write_cached(off, MIB)? {
                Ok(_) => off += MIB,
                Err(TargetError::PowerLoss) => {
                    cut = true;
                    break;
                }
                Err(_) => off += MIB,
            }
        }
        if !cut {
            // Flushing makes the cached writes reach the media (and meet the cut).
            if let Err(crate::error::ProbeError::Target {
                source: TargetError::PowerLoss,
                ..
            }) = s.flush()
            {
                cut = true;
            }
        }
        if let Some(p) = s.power() {
            if !cut {
                p.cut_now();
            }
            if let Err(e) = p.power_on() {
                let why = format!("powering on after round {round} failed: {e}");
                s.report.unknown("torn_writes", "13", why.clone());
                return Ok(why);
            }
        }
        rep.cuts += 1;
        let hi = (off + 64 * MIB).min(s.cap);
        let bad = unreadable(s, start, hi)?;
        if !bad.is_empty() {
            rep.cuts_with_errors += 1;
            for r in &bad {
                // Overwriting cures a torn range.
                s.write(r.offset, r.bytes)?;
                if s.try_read(r.offset, r.bytes)?.is_ok() {
                    cured += 1;
                }
            }
            rep.unreadable.extend(bad);
        }
        s.tick(1);
    }
    rep.unreadable.sort_by_key(|r| std::cmp::Reverse(r.bytes));
    let total: u64 = rep.unreadable.iter().map(|r| r.bytes).sum();
    let n = rep.unreadable.len();
    rep.unreadable.truncate(32);
    let volatile = s.report.volatile_cache;
    let evidence = format!(
        "{} power cuts during 1 MiB sequential writes (volatile cache {}): {} of them left unreadable blocks, {n} ranges, {} in all, the largest {}; {cured} of the ranges read again after being rewritten",
        rep.cuts,
        match volatile {
            Some(true) => "present",
            Some(false) => "absent (TEST 1)",
            None => "not tested",
        },
        rep.cuts_with_errors,
        bytes(total),
        rep.unreadable.first().map_or("-".into(), |r| bytes(r.bytes))
    );
    s.report.set(
        "torn_writes",
        json!(rep.cuts_with_errors > 0),
        "13",
        evidence.clone(),
        0.8,
    );
    let verdict = if rep.cuts_with_errors > 0 {
        format!("torn writes: {evidence}")
    } else {
        format!("no torn writes: {evidence}")
    };
    s.report.torn_writes = Some(rep);
    Ok(verdict)
}
