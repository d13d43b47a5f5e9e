//! The orchestrator: runs the selected tests (and the earlier tests whose findings they need)
//! in an order that keeps each test's preconditions, times each in wall and device time, and
//! returns the report and the plots.

use crate::error::{ProbeError, Result};
use crate::plot::Plot;
use crate::probes;
use crate::report::{Report, TestRecord};
use crate::session::{Observer, Session};
use crate::targets::Target;
use std::time::Instant;

/// Section 4.9 (worst-case cleaning time of one band) runs as test number 15.
pub const SECTION_4_9: u8 = 15;

/// Every test, in the order they run: reads of a fresh drive first (TEST 14), the power cuts
/// last (TEST 13); TESTs 6-7 before TEST 11, whose writes must fit in the cache they measure.
pub const ORDER: [u8; 15] = [14, 1, 2, 3, 4, 5, 6, 7, 11, 12, 8, 9, 10, SECTION_4_9, 13];

/// Short name of a test.
pub fn name(id: u8) -> &'static str {
    match id {
        1 => "drive type, cache medium, journal entries",
        2 => "cache location and layout",
        3 => "cleaning type and idle delay",
        4 => "cleaning algorithm",
        5 => "cleaning algorithm verified",
        6 => "persistent cache raw size",
        7 => "persistent cache map size",
        8 => "persistent cache usable size",
        9 => "circular log, part I",
        10 => "circular log, part II",
        11 => "band size",
        12 => "mapping type",
        13 => "torn writes",
        14 => "zone structure",
        SECTION_4_9 => "worst-case band cleaning time (4.9)",
        _ => "unknown",
    }
}

/// Tests whose findings test `id` needs.
fn needs(id: u8) -> &'static [u8] {
    match id {
        2 | 3 => &[1],
        4 | 6 | 7 | 11 => &[1, 3],
        8 => &[1, 3, 6, 7, 11],
        5 => &[1, 3, 4],
        9 => &[1, 3, 6, 7, 8],
        10 => &[1, 3, 6, 7, 8, 9],
        12 => &[1, 3, 11],
        13 => &[1],
        SECTION_4_9 => &[1, 3, 11],
        _ => &[],
    }
}

/// Tests that only make sense on a drive-managed SMR drive.
fn smr_only(id: u8) -> bool {
    !matches!(id, 1 | 13 | 14)
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Test numbers (1-14, 15 for section 4.9); empty = all.
    pub tests: Vec<u8>,
    /// Seed of the random offsets.
    pub seed: u64,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            tests: Vec::new(),
            seed: 0x5e1f,
        }
    }
}

/// The time a probe may spend. A TEST that runs past its share stops at its next command and
/// reports what it could not determine as unknown, with what it spent (the probe goes on
/// with the next test); on a target with a virtual clock the whole probe has a wall-time
/// budget too, and tests that would start after it are skipped with that reason.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Wall seconds one TEST may run on a target with a virtual clock.
    pub test_wall_s: f64,
    /// Seconds of the target's clock one TEST may spend (on a wall-clock target, its wall
    /// time: a drive's hours).
    pub test_device_s: f64,
    /// Wall seconds of the whole probe on a target with a virtual clock (none by default).
    pub probe_wall_s: f64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            test_wall_s: 60.0,
            test_device_s: 48.0 * 3600.0,
            probe_wall_s: f64::INFINITY,
        }
    }
}

/// A finished probe.
#[derive(Debug, Clone)]
pub struct Probe {
    /// Table III and the JSON fields.
    pub report: Report,
    /// The plots, ready for [`crate::plot::write_all`].
    pub plots: Vec<Plot>,
}

/// Parses a `--tests` list: numbers 1-14, `4.9` (or 15), ranges such as `1-3`.
pub fn parse_tests(text: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let one = |p: &str| -> Result<u8> {
            if p == "4.9" {
                return Ok(SECTION_4_9);
            }
            match p.parse::<u8>() {
                Ok(n) if (1..=15).contains(&n) => Ok(n),
                _ => Err(ProbeError::Invalid(format!(
                    "unknown test {p:?} (1-14, or 4.9)"
                ))),
            }
        };
        if let Some((a, b)) = part.split_once('-') {
            let (a, b) = (one(a.trim())?, one(b.trim())?);
            if a > b {
                return Err(ProbeError::Invalid(format!("empty range {part:?}")));
            }
            out.extend(a..=b);
        } else {
            out.push(one(part)?);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The tests to run for `selected` (empty = all): the selection plus what it needs, in run
/// order, each with whether it is only a prerequisite.
pub fn plan(selected: &[u8]) -> Vec<(u8, bool)> {
    let chosen: Vec<u8> = if selected.is_empty() {
        ORDER.to_vec()
    } else {
        selected.to_vec()
    };
    let mut all = chosen.clone();
    let mut i = 0;
    while i < all.len() {
        for &d in needs(all[i]) {
            if !all.contains(&d) {
                all.push(d);
            }
        }
        i += 1;
    }
    ORDER
        .iter()
        .filter(|id| all.contains(id))
        .map(|&id| (id, !chosen.contains(&id)))
        .collect()
}

/// Runs a probe of `target` within the default [`Budget`].
pub fn run(target: &mut dyn Target, opts: &ProbeOptions, obs: &mut dyn Observer) -> Result<Probe> {
    run_within(target, opts, &Budget::default(), obs)
}

/// Runs a probe of `target` within `budget`.
pub fn run_within(
    target: &mut dyn Target,
    opts: &ProbeOptions,
    budget: &Budget,
    obs: &mut dyn Observer,
) -> Result<Probe> {
    let started = Instant::now();
    let mut s = Session::new(target, obs, opts.seed);
    let virtual_clock = s.virtual_time();
    if s.cap < 64 << 20 {
        return Err(ProbeError::Invalid(format!(
            "the target holds {} bytes: at least 64 MiB are needed",
            s.cap
        )));
    }
    for (id, prereq) in plan(&opts.tests) {
        let wall = Instant::now();
        let dev0 = s.now_s();
        let applicable = !smr_only(id) || s.f.smr == Some(true);
        let spent = started.elapsed().as_secs_f64();
        let verdict = if applicable && virtual_clock && spent >= budget.probe_wall_s {
            let why = format!(
                "skipped: the probe's budget of {:.0} s of wall time was spent ({spent:.0} s)",
                budget.probe_wall_s
            );
            s.begin(id, name(id), 1);
            s.cut.push((id, why.clone()));
            why
        } else if !applicable {
            let why = match s.f.smr {
                Some(false) => "not applicable: a conventional drive has no persistent cache",
                _ => "not applicable: TEST 1 did not find a shingled disk",
            };
            s.begin(id, name(id), 1);
            why.to_string()
        } else {
            let wall = if virtual_clock {
                budget
                    .test_wall_s
                    .min((budget.probe_wall_s - spent).max(0.0))
            } else {
                budget.test_device_s
            };
            s.limit(wall, budget.test_device_s);
            let r = probes::run(id, &mut s);
            s.unlimit();
            match r {
                Ok(v) => v,
                Err(e @ ProbeError::Stopped { .. }) => return Err(e),
                Err(ProbeError::OutOfBudget { spent, .. }) => {
                    // A test cut during a power cut leaves the drive off: the next needs it on.
                    if let Some(p) = s.power() {
                        if !p.is_powered() {
                            let _ = p.power_on();
                        }
                    }
                    s.dirty = true;
                    let why = format!("did not conclude within its budget: {spent}");
                    s.cut.push((id, why.clone()));
                    why
                }
                Err(e) => format!("failed: {e}"),
            }
        };
        s.finish(&verdict);
        let rec = TestRecord {
            id,
            name: name(id).to_string(),
            wall_s: wall.elapsed().as_secs_f64(),
            device_s: s.now_s() - dev0,
            verdict,
            prerequisite: prereq,
        };
        s.report.tests.push(rec);
    }
    probes::not_applicable(&mut s);
    Ok(Probe {
        report: s.report,
        plots: s.plots,
    })
}

#[cfg(test)]
mod tests_ {
    use super::*;

    #[test]
    fn test_lists_parse_and_prerequisites_are_added() {
        assert_eq!(parse_tests("1,2,3").ok(), Some(vec![1, 2, 3]));
        assert_eq!(parse_tests("1-3, 4.9").ok(), Some(vec![1, 2, 3, 15]));
        assert!(parse_tests("0").is_err());
        assert!(parse_tests("16").is_err());
        assert!(parse_tests("x").is_err());
        let p = plan(&[12]);
        let ids: Vec<u8> = p.iter().map(|x| x.0).collect();
        assert_eq!(ids, vec![1, 3, 11, 12]);
        let ids: Vec<u8> = plan(&[10]).iter().map(|x| x.0).collect();
        assert_eq!(ids, vec![1, 3, 6, 7, 11, 8, 9, 10]);
        assert!(p.iter().all(|&(id, pre)| pre == (id != 12)));
        assert_eq!(plan(&[]).len(), 15);
    }
}
