//! The drive's half of a check: does the media's damage map agree with the live data? Live
//! data on a sector that reads back as a media error is corruption, except in the home band of
//! a journal drive with the volatile cache on, which a power cut during an in-place band
//! overwrite tears by design (Skylight TEST 13).

use super::DmDrive;
use crate::check::{Finding, Severity};
use crate::config::StlKind;
use tegula_device::RangeSet;

/// Up to this many places are named per finding.
const NAMED: usize = 5;

impl DmDrive {
    /// Findings about live data on damaged sectors.
    pub(crate) fn damage_findings(&self) -> Vec<Finding> {
        let g = self.inner.lock();
        let torn_by_design = self.config.stl == StlKind::Journal && self.config.volatile_cache;
        let destroyed = g.media.shingling().destroyed();
        let injected = g.media.injected_errors();
        // (sectors, first places) for: cache data destroyed, home data destroyed, injected.
        let mut found: [(u64, Vec<String>); 3] = Default::default();
        for run in g.layer.live_runs() {
            let (a, b) = (run.pos, run.pos + run.sectors);
            let sets: [(&RangeSet, usize); 2] =
                [(destroyed, if run.home { 1 } else { 0 }), (injected, 2)];
            for (set, k) in sets {
                for (x, y) in set.clipped(a, b) {
                    found[k].0 += y - x;
                    if found[k].1.len() < NAMED {
                        found[k].1.push(format!(
                            "logical {} (physical {x}), {} sectors",
                            run.lba + (x - a),
                            y - x
                        ));
                    }
                }
            }
        }
        let mut out = Vec::new();
        if let Some(b) = g.layer.staged_band() {
            out.push(Finding::new(
                Severity::Note,
                format!(
                    "logical band {b} has an unfinished rewrite from the staging area (a power \
                     cut or crash during cleaning); opening the image writable finishes it"
                ),
            ));
        }
        let places = |v: &Vec<String>| v.join("; ");
        if found[0].0 > 0 {
            out.push(Finding::new(
                Severity::Error,
                format!(
                    "{} sectors of live data in the persistent cache are marked destroyed by a \
                     shingled write and read back as media errors: the damage map disagrees \
                     with the map (at {})",
                    found[0].0,
                    places(&found[0].1)
                ),
            ));
        }
        if found[1].0 > 0 {
            let (severity, why) = if torn_by_design {
                (
                    Severity::Warning,
                    "a band overwritten in place from the volatile cache was torn by a power \
                     cut (Skylight TEST 13); they read back as media errors until rewritten",
                )
            } else {
                (
                    Severity::Error,
                    "this drive never overwrites a band in place without staging it, so the \
                     damage map disagrees with the map",
                )
            };
            out.push(Finding::new(
                severity,
                format!(
                    "{} sectors of live data in their home bands are destroyed: {why} (at {})",
                    found[1].0,
                    places(&found[1].1)
                ),
            ));
        }
        if found[2].0 > 0 {
            out.push(Finding::new(
                Severity::Note,
                format!(
                    "{} sectors of live data fail by fault injection (at {})",
                    found[2].0,
                    places(&found[2].1)
                ),
            ));
        }
        out
    }
}
