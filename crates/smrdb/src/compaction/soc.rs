//! SMRDB's SMR-friendly compaction selection (paper §4.3).
//!
//! * L0→L1 when L0 holds `l0_compaction_trigger` bands: the oldest L0 band, then newer L0
//!   bands that overlap it (never a band whose older overlapping L0 bands are left behind),
//!   up to `l0_compaction_max_bands`. The L1 bands they overlap are pruned to the least
//!   sequential one and the newer L1 bands it overlaps. One L0 band and no L1 band: a trivial
//!   move.
//! * L1→L1 when an L1 band overlaps more than `l1_overlap_trigger` others: the band with
//!   most overlaps and those it overlaps, pruned the same way.

use super::{disorder, Plan};
use crate::options::Options;
use crate::version::{level_of, VBand};

/// The least sequential band of `cand` and the bands of `cand` newer than it that overlap it.
fn prune(cand: &[VBand], all: &[VBand]) -> Vec<VBand> {
    let Some(worst) = cand
        .iter()
        .max_by(|a, b| {
            disorder(a, all)
                .partial_cmp(&disorder(b, all))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(b.id().cmp(&a.id()))
        })
        .cloned()
    else {
        return Vec::new();
    };
    let mut out = vec![worst.clone()];
    out.extend(
        cand.iter()
            .filter(|b| b.id() > worst.id() && b.overlaps(&worst))
            .cloned(),
    );
    out
}

/// L1→L1 pruning: candidates from the least sequential down; the first whose selection
/// (itself and the newer candidates it overlaps) holds two bands or more. Taking the least
/// sequential band alone would merge nothing; falling back to every candidate would rewrite
/// the whole overlap set each time, which is what the pruning is there to avoid.
fn prune_l1(cand: &[VBand], all: &[VBand]) -> Option<Vec<VBand>> {
    let mut order: Vec<(f64, &VBand)> = cand.iter().map(|b| (disorder(b, all), b)).collect();
    order.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(b.1.id().cmp(&a.1.id()))
    });
    order.into_iter().find_map(|(_, w)| {
        let mut sel = vec![w.clone()];
        sel.extend(
            cand.iter()
                .filter(|b| b.id() > w.id() && b.overlaps(w))
                .cloned(),
        );
        (sel.len() >= 2).then_some(sel)
    })
}

/// Picks a SOC compaction.
pub fn pick(opts: &Options, bands: &[VBand]) -> Option<Plan> {
    let l0 = level_of(bands, 0);
    let l1 = level_of(bands, 1);
    if !l0.is_empty() && l0.len() >= opts.l0_compaction_trigger.max(1) {
        let oldest = l0[0].clone();
        let mut sel = vec![oldest.clone()];
        for (i, b) in l0.iter().enumerate().skip(1) {
            if sel.len() >= opts.l0_compaction_max_bands.max(1) {
                break;
            }
            if !b.overlaps(&oldest) {
                continue;
            }
            // Every older L0 band overlapping b must come along, or a newer version would
            // move below an older one.
            let older_ok = l0[..i]
                .iter()
                .filter(|o| o.overlaps(b))
                .all(|o| sel.iter().any(|s| s.id() == o.id()));
            if older_ok {
                sel.push(b.clone());
            }
        }
        let cand: Vec<VBand> = l1
            .iter()
            .filter(|x| sel.iter().any(|s| s.overlaps(x)))
            .cloned()
            .collect();
        if sel.len() == 1 && cand.is_empty() {
            return Some(Plan {
                inputs: vec![oldest.id()],
                output_level: 1,
                trivial_move: true,
                pointer: None,
                reason: "soc L0 trivial move",
            });
        }
        let mut inputs: Vec<u64> = sel.iter().map(|b| b.id()).collect();
        inputs.extend(prune(&cand, bands).iter().map(|b| b.id()));
        return Some(Plan {
            inputs,
            output_level: 1,
            trivial_move: false,
            pointer: None,
            reason: "soc L0->L1",
        });
    }
    // L1→L1: the band with the most overlaps.
    let counts: Vec<usize> = l1
        .iter()
        .map(|a| {
            l1.iter()
                .filter(|b| b.id() != a.id() && a.overlaps(b))
                .count()
        })
        .collect();
    let (i, &most) = counts
        .iter()
        .enumerate()
        .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))?;
    if most <= opts.l1_overlap_trigger {
        return None;
    }
    let center = &l1[i];
    let cand: Vec<VBand> = l1
        .iter()
        .filter(|b| b.id() == center.id() || b.overlaps(center))
        .cloned()
        .collect();
    let sel = prune_l1(&cand, bands)?;
    Some(Plan {
        inputs: sel.iter().map(|b| b.id()).collect(),
        output_level: 1,
        trivial_move: false,
        pointer: None,
        reason: "soc L1->L1",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::testutil::vb;

    fn opts() -> Options {
        Options::default()
    }

    #[test]
    fn nothing_below_trigger() {
        let b = vec![vb(1, 0, 1, 5), vb(2, 0, 1, 5)];
        assert_eq!(pick(&opts(), &b), None);
    }

    #[test]
    fn single_l0_without_l1_overlap_moves_trivially() {
        let b = vec![
            vb(1, 0, 1, 5),
            vb(2, 0, 10, 15),
            vb(3, 0, 20, 25),
            vb(4, 0, 30, 35),
        ];
        let p = pick(&opts(), &b).unwrap();
        assert!(p.trivial_move);
        assert_eq!(p.inputs, vec![1]);
    }

    #[test]
    fn oldest_plus_overlapping_newer_and_pruned_l1() {
        let b = vec![
            vb(1, 0, 10, 20),
            vb(2, 0, 15, 30),
            vb(3, 0, 50, 60),
            vb(4, 0, 12, 14),
            vb(5, 1, 0, 12),
            vb(6, 1, 13, 40),
        ];
        let p = pick(&opts(), &b).unwrap();
        assert!(!p.trivial_move);
        assert_eq!(&p.inputs[..3], &[1, 2, 4]);
        assert!(p.inputs.len() >= 4);
    }

    #[test]
    fn newer_band_not_taken_without_its_older_overlaps() {
        // Band 3 overlaps the oldest (1) but also 2, which does not overlap 1: 3 stays.
        let b = vec![
            vb(1, 0, 10, 20),
            vb(2, 0, 25, 40),
            vb(3, 0, 18, 30),
            vb(4, 0, 90, 99),
        ];
        let p = pick(&opts(), &b).unwrap();
        assert_eq!(p.inputs, vec![1]);
        assert!(p.trivial_move);
    }

    #[test]
    fn l1_overlaps_trigger_l1_compaction() {
        let b = vec![
            vb(1, 1, 0, 100),
            vb(2, 1, 10, 20),
            vb(3, 1, 30, 40),
            vb(4, 1, 50, 60),
        ];
        let o = Options {
            l1_overlap_trigger: 2,
            ..opts()
        };
        let p = pick(&o, &b).unwrap();
        assert_eq!(p.reason, "soc L1->L1");
        assert!(p.inputs.len() >= 2 && p.inputs.contains(&1));
    }
}
