//! TEST 4 (section 4.5.1): the cleaning algorithm. 4096 random blocks are written and read
//! back in the written order — from a log-structured cache at a fixed latency — then read
//! again after pauses (Figure 12): a block cleaned in the meantime reads from its native
//! location, with a seek. Cleaning band by band, oldest cached block first (Algorithm 1,
//! FIFO), shows as a growing prefix of cleaned blocks; the blocks cleaned per second of idle
//! time give the cleaning time of a band holding one changed block. Whether a block is still
//! cached is read off its neighbour: right after a block read from its native location the
//! next block streams from the drive's read-ahead, after one read from the cache it needs a
//! seek.

use crate::error::Result;
use crate::plot::Plot;
use crate::session::Session;
use crate::stats::median;
use serde_json::json;
use tegula_device::SEC;

/// Blocks written.
const BLOCKS: usize = 4096;

/// The best split of `flags` into a cleaned prefix and an uncleaned rest: (prefix length,
/// fraction of blocks that agree with it).
pub(crate) fn prefix(flags: &[bool]) -> (usize, f64) {
    let n = flags.len();
    let total_clean = flags.iter().filter(|&&f| f).count();
    let mut best = (0usize, n - total_clean);
    let mut clean_before = 0usize;
    for k in 1..=n {
        if flags[k - 1] {
            clean_before += 1;
        }
        let agree = clean_before + (n - k) - (total_clean - clean_before);
        if agree > best.1 {
            best = (k, agree);
        }
    }
    (best.0, best.1 as f64 / n.max(1) as f64)
}

/// Reads each of `offs` and then the block after it: the block's latency, and whether it
/// was read from its native location (its neighbour came from the read-ahead).
pub(crate) fn native_flags(s: &mut Session<'_>, offs: &[u64]) -> Result<(Vec<f64>, Vec<bool>)> {
    let hit = (0.25 * s.f.random_read_ms.unwrap_or(16.0)).clamp(0.5, 5.0);
    let mut lat = Vec::with_capacity(offs.len());
    let mut native = Vec::with_capacity(offs.len());
    for &o in offs {
        lat.push(s.read(o, s.bs)?);
        let next = (o + s.bs).min(s.cap - s.bs);
        native.push(s.read(next, s.bs)? < hit);
    }
    s.tick(1);
    Ok((lat, native))
}

/// Runs TEST 4.
pub(crate) fn run(s: &mut Session<'_>) -> Result<String> {
    s.begin(4, "cleaning algorithm", 8);
    if s.f.aggressive != Some(true) {
        let why = "lazy cleaning: nothing is cleaned in idle time, so the order cannot be watched";
        s.report.unknown("cleaning.algorithm", "4", why);
        s.report.unknown("cleaning.band_clean_s", "4", why);
        return Ok(why.into());
    }
    let slate = s.clean_slate()?;
    let delay = s.f.idle_delay.map_or(1.0, |t| t as f64 / SEC as f64);
    let offs: Vec<u64> = (0..BLOCKS).map(|_| s.rand_off(0, s.cap, s.bs)).collect();
    for &o in &offs {
        s.write(o, s.bs)?;
    }
    s.tick(1);
    let (l0, n0) = native_flags(s, &offs)?;
    // First pause: how many bands the drive cleans per second.
    let p1 = delay + 60.0;
    s.idle(p1)?;
    let (l1, n1) = native_flags(s, &offs)?;
    // Only blocks still cached after writing count (a drive may clean some while writing).
    let cached0: Vec<usize> = (0..BLOCKS).filter(|&i| !n0[i]).collect();
    let c1 = cached0.iter().filter(|&&i| n1[i]).count();
    let mut plot = Plot::new(
        "t04_cleaning_algorithm.svg",
        "TEST 4: reads in written order right after writing and after pauses (Figure 12)",
        "operation",
        "read latency (ms)",
    )
    .per_op("right after writing", &l0)
    .per_op(&format!("after {p1:.0} s idle"), &l1);
    if c1 == 0 {
        s.plots.push(plot.log());
        let why = format!("no block moved to its native location in {p1:.0} s idle ({slate})");
        s.report.unknown("cleaning.algorithm", "4", why.clone());
        s.report.unknown("cleaning.band_clean_s", "4", why.clone());
        return Ok(why);
    }
    let per_band = (p1 - delay) / c1 as f64;
    s.f.band_clean = Some((per_band * SEC as f64) as u64);
    let t = (per_band * 100.0).round() / 100.0;
    s.report.cleaning.band_clean_s = Some(t);
    s.report.set(
        "cleaning.band_clean_s",
        json!(t),
        "4",
        format!(
            "{c1} of {BLOCKS} random blocks (each in its own band) cleaned in {:.0} s of idle time after the {delay:.1} s delay",
            p1 - delay
        ),
        0.8,
    );
    // Second pause: to about half of the blocks still cached after writing.
    let p2 = ((cached0.len() / 2).saturating_sub(c1) as f64 * per_band).max(1.0) + delay;
    s.idle(p2)?;
    let (l2, n2) = native_flags(s, &offs)?;
    let flags: Vec<bool> = cached0.iter().map(|&i| n2[i]).collect();
    plot = plot.per_op(&format!("after {:.0} s more", p2), &l2);
    s.plots.push(plot.log());
    let c2 = flags.iter().filter(|&&c| c).count();
    let already = BLOCKS - cached0.len();
    let (k, agree) = prefix(&flags);
    let n = flags.len();
    let fifo = agree >= 0.9 && k > 0 && k < n;
    let evidence = format!(
        "{n} of {BLOCKS} random blocks cached after writing ({already} cleaned while writing), read back at a median {:.1} ms; after {:.0} s idle {c2} of them read from their native locations, {:.0}% agree with a cleaned prefix of {k} in written order (the oldest first); {slate}",
        median(&l0),
        p1 + p2,
        agree * 100.0
    );
    if fifo {
        s.report.cleaning.algorithm = Some("fifo".into());
        s.report
            .set("cleaning.algorithm", json!("fifo"), "4", evidence, 0.7);
        Ok(format!(
            "FIFO: the oldest {k} blocks cleaned first; {t:.2} s per band"
        ))
    } else {
        s.report
            .set("cleaning.algorithm", json!("other"), "4", evidence, 0.5);
        s.report.cleaning.algorithm = Some("other".into());
        Ok(format!(
            "not FIFO (prefix agreement {:.0}%); {t:.2} s per band",
            agree * 100.0
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cleaned_prefix_is_found_despite_noise() {
        let mut flags = vec![true; 300];
        flags.extend(vec![false; 700]);
        flags[10] = false;
        flags[500] = true;
        let (k, agree) = prefix(&flags);
        assert_eq!(k, 300);
        assert!(agree > 0.99);
    }
}
