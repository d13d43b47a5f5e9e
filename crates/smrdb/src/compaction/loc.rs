//! LevelDB-style compaction selection (SMRDB-LOC, paper §3): seven levels, level ≥ 1 bands
//! never overlap, the level with the highest size score is compacted, and within it the band
//! after the level's round-robin pointer is chosen.

use super::Plan;
use crate::options::Options;
use crate::version::{level_of, VBand};

/// Number of levels.
pub const LEVELS: u8 = 7;

fn max_bands(opts: &Options, level: u8) -> f64 {
    let mut m = opts.loc_level1_bands.max(1) as f64;
    for _ in 1..level {
        m *= opts.loc_level_multiplier.max(2) as f64;
    }
    m
}

fn range(set: &[VBand]) -> Option<(Vec<u8>, Vec<u8>)> {
    let lo = set.iter().map(|b| b.band.meta.smallest.clone()).min()?;
    let hi = set.iter().map(|b| b.band.meta.largest.clone()).max()?;
    Some((lo, hi))
}

/// Picks a LOC compaction.
pub fn pick(opts: &Options, bands: &[VBand], pointers: &[Vec<u8>]) -> Option<Plan> {
    let mut best: Option<(f64, u8)> = None;
    for level in 0..LEVELS - 1 {
        let n = bands.iter().filter(|b| b.level == level).count() as f64;
        let score = if level == 0 {
            n / opts.l0_compaction_trigger.max(1) as f64
        } else {
            n / max_bands(opts, level)
        };
        if score >= 1.0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, level));
        }
    }
    let (_, level) = best?;
    let cur = level_of(bands, level);
    let mut sel: Vec<VBand>;
    let mut pointer = None;
    if level == 0 {
        // The oldest L0 band and every L0 band overlapping the growing range.
        sel = vec![cur[0].clone()];
        loop {
            let (lo, hi) = range(&sel)?;
            let more: Vec<VBand> = cur
                .iter()
                .filter(|b| {
                    !sel.iter().any(|s| s.id() == b.id()) && b.band.meta.overlaps_range(&lo, &hi)
                })
                .cloned()
                .collect();
            if more.is_empty() {
                break;
            }
            sel.extend(more);
        }
    } else {
        let mut sorted = cur.clone();
        sorted.sort_by(|a, b| a.band.meta.smallest.cmp(&b.band.meta.smallest));
        let ptr = pointers.get(level as usize).cloned().unwrap_or_default();
        let pick = sorted
            .iter()
            .find(|b| ptr.is_empty() || b.band.meta.smallest > ptr)
            .or_else(|| sorted.first())?
            .clone();
        pointer = Some((level, pick.band.meta.largest.clone()));
        sel = vec![pick];
    }
    let (lo, hi) = range(&sel)?;
    let next: Vec<VBand> = level_of(bands, level + 1)
        .into_iter()
        .filter(|b| b.band.meta.overlaps_range(&lo, &hi))
        .collect();
    if sel.len() == 1 && next.is_empty() {
        return Some(Plan {
            inputs: vec![sel[0].id()],
            output_level: level + 1,
            trivial_move: true,
            pointer,
            reason: "loc trivial move",
        });
    }
    let mut inputs: Vec<u64> = sel.iter().map(|b| b.id()).collect();
    inputs.extend(next.iter().map(|b| b.id()));
    Some(Plan {
        inputs,
        output_level: level + 1,
        trivial_move: false,
        pointer,
        reason: if level == 0 {
            "loc L0->L1"
        } else {
            "loc Ln->Ln+1"
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::testutil::vb;

    #[test]
    fn l0_takes_all_overlapping_and_l1_overlaps() {
        let b = vec![
            vb(1, 0, 10, 20),
            vb(2, 0, 18, 30),
            vb(3, 0, 29, 35),
            vb(4, 0, 80, 90),
            vb(5, 1, 0, 12),
            vb(6, 1, 40, 50),
        ];
        let p = pick(&Options::default(), &b, &[]).unwrap();
        assert_eq!(p.inputs, vec![1, 2, 3, 5]);
        assert_eq!(p.output_level, 1);
    }

    #[test]
    fn round_robin_in_level_one() {
        let o = Options {
            loc_level1_bands: 2,
            ..Options::default()
        };
        let b = vec![vb(1, 1, 0, 9), vb(2, 1, 10, 19), vb(3, 1, 20, 29)];
        let p = pick(&o, &b, &[]).unwrap();
        assert_eq!(p.inputs, vec![1]);
        assert!(p.trivial_move);
        let ptrs = vec![vec![], vec![9]];
        let p = pick(&o, &b, &ptrs).unwrap();
        assert_eq!(p.inputs, vec![2]);
    }
}
