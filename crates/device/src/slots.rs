//! Choosing between the two alternating state slots of an image (disk images and the drive
//! state of dm-smr images), as with a superblock pair: the valid slot with the higher sequence
//! wins. A damaged slot is never passed over silently: it is reported as a warning that says
//! whether it claimed to be the newer one (then the last save was torn by a crash while it was
//! written, or the slot was corrupted later, and what that save recorded is lost) or the older
//! one (harmless: the next save rewrites it). A slot never written (its header is all zero) is
//! not a problem.

use std::fmt;

/// What reading one slot found; `E` is why a slot did not decode (the format's error).
#[derive(Debug, Clone)]
pub struct SlotRead<T, E> {
    /// Byte offset of the slot in the image.
    pub offset: u64,
    /// The decoded state, or why it did not decode.
    pub decoded: Result<T, E>,
    /// The sequence its header claims when the header itself decodes (the checksum may still
    /// fail).
    pub claimed_seq: Option<u64>,
    /// Whether the slot was never written (all-zero header).
    pub blank: bool,
}

impl<T, E> SlotRead<T, E> {
    /// Builds the record for the slot at `offset` whose first bytes are `head`.
    pub fn new(offset: u64, head: &[u8], decoded: Result<T, E>, claimed_seq: Option<u64>) -> Self {
        SlotRead {
            offset,
            decoded,
            claimed_seq,
            blank: head.iter().all(|&b| b == 0),
        }
    }
}

/// The state chosen from a slot pair.
#[derive(Debug, Clone)]
pub struct SlotChoice<T> {
    /// The newest valid state.
    pub state: T,
    /// Which slot held it (0 = A, 1 = B).
    pub slot: usize,
    /// Problems with the other slot, worded for a person.
    pub warnings: Vec<String>,
}

/// One slot of a pair that did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotFault<E> {
    /// Byte offset of the slot in the image.
    pub offset: u64,
    /// Whether the slot was never written (all-zero header).
    pub blank: bool,
    /// Why it did not decode.
    pub problem: E,
}

/// Neither slot of a pair holds a valid state: the error of [`choose`], naming both problems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoValidSlot<E> {
    /// The state's name (`state`, `zone state`).
    pub what: String,
    /// Slot A's problem, then slot B's.
    pub slots: [SlotFault<E>; 2],
}

impl<E: fmt::Display> fmt::Display for NoValidSlot<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no valid {}: ", self.what)?;
        for (i, s) in self.slots.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            let (name, off, p) = (NAMES[i], s.offset, &s.problem);
            if s.blank {
                write!(f, "slot {name} at offset {off} was never written ({p})")?;
            } else {
                write!(f, "slot {name} at offset {off}: {p}")?;
            }
        }
        Ok(())
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for NoValidSlot<E> {}

const NAMES: [&str; 2] = ["A", "B"];

/// Picks the valid slot with the higher sequence (`seq` reads it from a decoded state; slot A
/// wins a tie) and describes any damaged slot; fails, naming both problems, when neither slot
/// is valid.
pub fn choose<T, E: fmt::Display>(
    what: &str,
    slots: [SlotRead<T, E>; 2],
    seq: impl Fn(&T) -> u64,
) -> Result<SlotChoice<T>, NoValidSlot<E>> {
    let [a, b] = slots;
    let meta = |r: &SlotRead<T, E>| (r.offset, r.blank, r.claimed_seq);
    let (ma, mb) = (meta(&a), meta(&b));
    let (slot, state, other) = match (a.decoded, b.decoded) {
        (Ok(x), Ok(y)) if seq(&y) > seq(&x) => (1, y, None),
        (Ok(x), Ok(_)) => (0, x, None),
        (Ok(x), Err(p)) => (0, x, Some((mb, p))),
        (Err(p), Ok(y)) => (1, y, Some((ma, p))),
        (Err(p), Err(q)) => {
            let fa = SlotFault {
                offset: ma.0,
                blank: ma.1,
                problem: p,
            };
            let fb = SlotFault {
                offset: mb.0,
                blank: mb.1,
                problem: q,
            };
            return Err(NoValidSlot {
                what: what.into(),
                slots: [fa, fb],
            });
        }
    };
    let best_seq = seq(&state);
    let mut warnings = Vec::new();
    if let Some(((off, blank, claimed), p)) = other {
        if !blank {
            let (a, b) = (NAMES[1 - slot], NAMES[slot]);
            warnings.push(match claimed {
                Some(c) if c > best_seq => format!(
                    "{what} slot {a} at offset {off} claims the newer sequence {c} but is \
                     damaged ({p}); using slot {b} (sequence {best_seq}): the last save was torn \
                     by a crash while it was written, or the slot was corrupted, and what that \
                     save recorded is lost"
                ),
                Some(c) => format!(
                    "{what} slot {a} at offset {off} (older, sequence {c}) is damaged ({p}); \
                     using slot {b} (sequence {best_seq}); the next save rewrites it"
                ),
                None => format!(
                    "{what} slot {a} at offset {off} is damaged beyond its header ({p}); using \
                     slot {b} (sequence {best_seq}); if slot {a} held the newer state, what its \
                     save recorded is lost"
                ),
            });
        }
    }
    Ok(SlotChoice {
        state,
        slot,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(seq: u64) -> SlotRead<u64, String> {
        SlotRead::new(0, &[1], Ok(seq), Some(seq))
    }

    fn bad(claimed: Option<u64>) -> SlotRead<u64, String> {
        SlotRead::new(4096, &[1], Err("checksum mismatch".into()), claimed)
    }

    #[test]
    fn the_newer_valid_slot_wins_without_warnings() {
        let c = choose("state", [ok(4), ok(5)], |s| *s).expect("valid");
        assert_eq!((c.state, c.slot, c.warnings.len()), (5, 1, 0));
    }

    #[test]
    fn a_damaged_newer_slot_is_reported_not_silently_replaced() {
        let c = choose("state", [ok(4), bad(Some(5))], |s| *s).expect("valid");
        assert_eq!((c.state, c.slot), (4, 0));
        assert_eq!(c.warnings.len(), 1);
        assert!(
            c.warnings[0].contains("newer sequence 5"),
            "{:?}",
            c.warnings
        );
        assert!(c.warnings[0].contains("lost"), "{:?}", c.warnings);
    }

    #[test]
    fn a_damaged_older_slot_is_a_milder_warning_and_a_blank_one_none() {
        let c = choose("state", [bad(Some(2)), ok(3)], |s| *s).expect("valid");
        assert!(c.warnings[0].contains("older"), "{:?}", c.warnings);
        let blank = SlotRead::new(0, &[0; 8], Err("bad magic".into()), None);
        let c = choose("state", [blank, ok(1)], |s| *s).expect("valid");
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn no_valid_slot_names_both_problems() {
        let e = choose("state", [bad(None), bad(Some(9))], |s| *s)
            .expect_err("none valid")
            .to_string();
        assert!(e.contains("slot A") && e.contains("slot B"), "{e}");
    }
}
