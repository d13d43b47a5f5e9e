//! Choosing between the two alternating state slots of an image (disk images and the drive
//! state of dm-smr images), as with a superblock pair: the valid slot with the higher sequence
//! wins. A damaged slot is never passed over silently: it is reported as a warning that says
//! whether it claimed to be the newer one (then the last save was torn by a crash while it was
//! written, or the slot was corrupted later, and what that save recorded is lost) or the older
//! one (harmless: the next save rewrites it). A slot never written (its header is all zero) is
//! not a problem.

/// What reading one slot found.
#[derive(Debug, Clone)]
pub struct SlotRead<T> {
    /// Byte offset of the slot in the image.
    pub offset: u64,
    /// The decoded state, or why it did not decode.
    pub decoded: Result<T, String>,
    /// The sequence its header claims when the header itself decodes (the checksum may still
    /// fail).
    pub claimed_seq: Option<u64>,
    /// Whether the slot was never written (all-zero header).
    pub blank: bool,
}

impl<T> SlotRead<T> {
    /// Builds the record for the slot at `offset` whose first bytes are `head`.
    pub fn new(
        offset: u64,
        head: &[u8],
        decoded: Result<T, String>,
        claimed_seq: Option<u64>,
    ) -> Self {
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

const NAMES: [&str; 2] = ["A", "B"];

/// Picks the valid slot with the higher sequence (`seq` reads it from a decoded state) and
/// describes any damaged slot; fails, naming both problems, when neither slot is valid.
pub fn choose<T>(
    what: &str,
    slots: [SlotRead<T>; 2],
    seq: impl Fn(&T) -> u64,
) -> Result<SlotChoice<T>, String> {
    let reads = slots;
    let mut best: Option<(usize, u64)> = None;
    for (i, r) in reads.iter().enumerate() {
        if let Ok(s) = &r.decoded {
            if best.is_none_or(|(_, q)| seq(s) > q) {
                best = Some((i, seq(s)));
            }
        }
    }
    let Some((slot, best_seq)) = best else {
        let problems: Vec<String> = reads
            .iter()
            .enumerate()
            .map(|(i, r)| match &r.decoded {
                Err(p) if r.blank => format!(
                    "slot {} at offset {} was never written ({p})",
                    NAMES[i], r.offset
                ),
                Err(p) => format!("slot {} at offset {}: {p}", NAMES[i], r.offset),
                Ok(_) => String::new(),
            })
            .collect();
        return Err(format!("no valid {what}: {}", problems.join("; ")));
    };
    let mut warnings = Vec::new();
    let other = 1 - slot;
    let r = &reads[other];
    if let Err(p) = &r.decoded {
        if !r.blank {
            let (a, b) = (NAMES[other], NAMES[slot]);
            let off = r.offset;
            warnings.push(match r.claimed_seq {
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
    let Some(Ok(state)) = reads.into_iter().nth(slot).map(|r| r.decoded) else {
        return Err(format!("no valid {what}"));
    };
    Ok(SlotChoice {
        state,
        slot,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(seq: u64) -> SlotRead<u64> {
        SlotRead::new(0, &[1], Ok(seq), Some(seq))
    }

    fn bad(claimed: Option<u64>) -> SlotRead<u64> {
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
        let e = choose("state", [bad(None), bad(Some(9))], |s| *s).expect_err("none valid");
        assert!(e.contains("slot A") && e.contains("slot B"), "{e}");
    }
}
