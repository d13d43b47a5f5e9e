//! Data placement (ShingledFS §6.1): which zone the next extent goes to. The policy is a pure
//! function of the zones' free space, so that each one can be tested against a model; the
//! file system supplies the candidates (sequential zones it may write: not being cleaned,
//! not failed, not held by another writer) and remembers the last zone each stream used.
//!
//! * [`Placement::LastUsed`], the paper's default: the zone used last if the data fits, else
//!   an empty zone, else any zone with room (the first that fits, else the roomiest).
//! * [`Placement::FirstFit`]: the lowest-numbered zone the data fits in.
//! * [`Placement::BestFit`]: the zone whose free space fits the data most tightly.
//! * [`Placement::AgeFit`]: data is grouped by the age of the file it belongs to (inode
//!   numbers grow with creation, so a file's age is how many inodes were created after it;
//!   ZEA tags every extent with its inode): each age class fills zones of its own, so data
//!   written together dies together, and the cleaner moves older data before younger, so
//!   that within a zone the oldest data sits at the head and the youngest, which dies first,
//!   toward the tail where tail cleaning reclaims it cheaply.
//!
//! In every policy an empty zone is taken only while more than `reserve` empty zones remain
//! (the cleaner's reserve), and data that fits nowhere whole goes to the zone with the most
//! room (it is split across zones).

use std::fmt;
use std::str::FromStr;

/// A placement policy; chosen by mkfs (stored in the checkpoint) and overridable per mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[repr(u8)]
pub enum Placement {
    /// Last used zone, else an empty zone, else any zone with room (the paper's default).
    #[default]
    LastUsed = 1,
    /// Lowest-numbered zone the data fits in.
    FirstFit = 2,
    /// Zone whose free space fits the data most tightly.
    BestFit = 3,
    /// One stream of zones per age class of the data's file.
    AgeFit = 4,
}

impl Placement {
    /// Every policy.
    pub const ALL: [Placement; 4] = [
        Placement::LastUsed,
        Placement::FirstFit,
        Placement::BestFit,
        Placement::AgeFit,
    ];

    /// The byte stored for the policy.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The policy stored as `c`.
    pub fn from_code(c: u8) -> Option<Placement> {
        Placement::ALL.into_iter().find(|p| p.code() == c)
    }

    /// Name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Placement::LastUsed => "last-used",
            Placement::FirstFit => "first-fit",
            Placement::BestFit => "best-fit",
            Placement::AgeFit => "age-fit",
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A placement policy name that is not one of `last-used`, `first-fit`, `best-fit`, `age-fit`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown placement policy {0:?} (last-used, first-fit, best-fit, age-fit)")]
pub struct UnknownPlacement(pub String);

impl FromStr for Placement {
    type Err = UnknownPlacement;
    fn from_str(s: &str) -> Result<Self, UnknownPlacement> {
        Placement::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownPlacement(s.into()))
    }
}

/// Number of age classes of [`Placement::AgeFit`].
pub const AGE_CLASSES: usize = 4;

/// The age class of a file: how many inodes were created after it, on a scale of powers of
/// 16 (class 0: fewer than 16; 1: fewer than 256; 2: fewer than 4096; 3: more).
pub fn age_class(ino: u64, next_ino: u64) -> usize {
    let age = next_ino.saturating_sub(ino);
    let mut c = 0;
    let mut lim = 16u64;
    while c + 1 < AGE_CLASSES && age >= lim {
        c += 1;
        lim = lim.saturating_mul(16);
    }
    c
}

/// A zone the file system may write, as placement sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Zone index.
    pub zone: u32,
    /// Largest extent (bytes) that still fits.
    pub room: u64,
    /// Whether nothing was written to it since its reset.
    pub empty: bool,
}

/// Chooses the zone for `need` bytes among `zones` (any order). `last` is the zone this
/// stream (the policy's, or the age class's) used last; `reserve` empty zones are left
/// alone. `None` when no zone has room: the caller cleans, or fails with no space.
pub fn choose(
    policy: Placement,
    zones: &[Candidate],
    need: u64,
    last: Option<u32>,
    reserve: usize,
) -> Option<u32> {
    let empties = zones.iter().filter(|c| c.empty && c.room > 0).count();
    let may_open = empties > reserve;
    let usable = |c: &&Candidate| c.room > 0 && (!c.empty || may_open);
    let fits = |c: &&Candidate| usable(c) && c.room >= need;
    let roomiest = || {
        zones
            .iter()
            .filter(|c| usable(c) && !c.empty)
            .max_by_key(|c| (c.room, std::cmp::Reverse(c.zone)))
            .or_else(|| zones.iter().filter(usable).min_by_key(|c| c.zone))
            .map(|c| c.zone)
    };
    let first_empty = || {
        zones
            .iter()
            .filter(|c| c.empty && usable(c))
            .min_by_key(|c| c.zone)
            .map(|c| c.zone)
    };
    let last_fits = last.and_then(|l| zones.iter().find(|c| c.zone == l && fits(c)));
    match policy {
        Placement::LastUsed | Placement::AgeFit => last_fits
            .map(|c| c.zone)
            .or_else(first_empty)
            .or_else(|| {
                zones
                    .iter()
                    .filter(fits)
                    .min_by_key(|c| c.zone)
                    .map(|c| c.zone)
            })
            .or_else(roomiest),
        Placement::FirstFit => zones
            .iter()
            .filter(fits)
            .min_by_key(|c| c.zone)
            .map(|c| c.zone)
            .or_else(roomiest),
        Placement::BestFit => zones
            .iter()
            .filter(fits)
            .min_by_key(|c| (c.room, c.zone))
            .map(|c| c.zone)
            .or_else(roomiest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn z(zone: u32, room: u64, empty: bool) -> Candidate {
        Candidate { zone, room, empty }
    }

    #[test]
    fn names_and_codes_round_trip() {
        for p in Placement::ALL {
            assert_eq!(p.name().parse::<Placement>(), Ok(p));
            assert_eq!(Placement::from_code(p.code()), Some(p));
        }
        assert!("worst-fit".parse::<Placement>().is_err());
        assert_eq!(Placement::from_code(0), None);
    }

    #[test]
    fn each_policy_picks_its_zone() {
        let zones = [
            z(3, 500, false),
            z(4, 120, false),
            z(5, 1000, true),
            z(6, 1000, true),
            z(7, 200, false),
        ];
        // Last used fits: keep it.
        assert_eq!(
            choose(Placement::LastUsed, &zones, 100, Some(7), 1),
            Some(7)
        );
        // Last used too small: an empty zone before any partly written one.
        assert_eq!(
            choose(Placement::LastUsed, &zones, 300, Some(7), 1),
            Some(5)
        );
        assert_eq!(
            choose(Placement::FirstFit, &zones, 100, Some(7), 1),
            Some(3)
        );
        assert_eq!(choose(Placement::BestFit, &zones, 100, Some(7), 1), Some(4));
        assert_eq!(choose(Placement::BestFit, &zones, 150, None, 1), Some(7));
        // Only one empty zone left beyond none in reserve: it is not taken.
        let tight = [z(3, 500, false), z(5, 1000, true)];
        assert_eq!(choose(Placement::LastUsed, &tight, 600, None, 1), Some(3));
        assert_eq!(choose(Placement::FirstFit, &tight, 100, None, 1), Some(3));
        // Nothing fits whole: the roomiest written zone takes a part.
        let full = [z(3, 50, false), z(4, 80, false), z(5, 1000, true)];
        assert_eq!(choose(Placement::BestFit, &full, 600, None, 1), Some(4));
        // No room anywhere (the empty zone is the reserve).
        let none = [z(3, 0, false), z(5, 1000, true)];
        assert_eq!(choose(Placement::FirstFit, &none, 10, None, 1), None);
        assert_eq!(choose(Placement::FirstFit, &none, 10, None, 0), Some(5));
    }

    #[test]
    fn age_classes_grow_by_powers_of_sixteen() {
        assert_eq!(age_class(100, 101), 0);
        assert_eq!(age_class(100, 100 + 15), 0);
        assert_eq!(age_class(100, 100 + 16), 1);
        assert_eq!(age_class(100, 100 + 300), 2);
        assert_eq!(age_class(1, 1 << 40), AGE_CLASSES - 1);
        assert_eq!(age_class(5, 3), 0);
    }

    /// A model run: random extents placed by each policy into a model of zones never
    /// overfill a zone, never take the reserve, and fill the drive before giving up.
    #[test]
    fn every_policy_fills_a_model_drive_without_overfilling() {
        use rand::{Rng, SeedableRng};
        for policy in Placement::ALL {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(policy.code() as u64);
            let cap = 10_000u64;
            let mut used = [0u64; 8];
            let mut last = None;
            let mut placed = 0u64;
            loop {
                let need = rng.gen_range(1..3000u64);
                let cands: Vec<Candidate> = used
                    .iter()
                    .enumerate()
                    .map(|(i, &u)| z(i as u32, cap - u, u == 0))
                    .collect();
                let Some(zone) = choose(policy, &cands, need, last, 1) else {
                    break;
                };
                let c = cands[zone as usize];
                assert!(c.room > 0, "{policy}: zone without room");
                let empties = cands.iter().filter(|c| c.empty).count();
                assert!(!c.empty || empties > 1, "{policy}: took the reserve");
                let n = need.min(c.room);
                used[zone as usize] += n;
                placed += n;
                last = Some(zone);
            }
            assert!(used.iter().all(|&u| u <= cap));
            assert_eq!(used.iter().filter(|&&u| u == 0).count(), 1, "{policy}");
            assert_eq!(
                placed,
                7 * cap,
                "{policy}: the drive less the reserve is full"
            );
        }
    }
}
