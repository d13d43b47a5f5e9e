//! The redundant copies of the conventional area's metadata (`docs/formats/smrdb.md`): the
//! superblock at LBA 0 and again in the area's last sector, and each manifest slot's
//! generation written twice, at the slot's start and half-way into it. A damaged newest copy is
//! replaced by its twin of the same content, never by an older state; `Db::check` names every
//! damaged copy.
//!
//! Databases created before the copies existed have one superblock (their manifest slots may
//! reach the area's last sector) and one copy per slot: they open as before, and their slots
//! get twins from their next manifest commits on.

use crate::error::{Error, Result};
use crate::io::Dev;
use crate::manifest::Manifest;
use crate::superblock::Superblock;
use tegula_codec::FormatError;

/// LBA of the superblock's second copy in a conventional area of `conv_sectors` sectors, for
/// a database whose manifest slots are `slot_sectors` long: the area's last sector, when the
/// slots leave it free (databases created before the copy existed may not).
pub fn superblock_copy_b(conv_sectors: u64, slot_sectors: u64) -> Option<u64> {
    let last = conv_sectors.checked_sub(1)?;
    (2 * slot_sectors < last).then_some(last)
}

/// Sectors of each manifest slot for a new database: the conventional area less the two
/// superblock copies and the two log tail slots, halved.
pub fn slot_sectors_for(conv_sectors: u64) -> u64 {
    conv_sectors.saturating_sub(4) / 2
}

/// LBAs of the two log tail slots (`crate::log::tail`) in a conventional area of
/// `conv_sectors` sectors: the two sectors before superblock copy B, when the manifest slots
/// leave them free (databases created before the tail slots existed have none, and write a
/// padded log chunk per write instead).
pub fn tail_slots(conv_sectors: u64, slot_sectors: u64) -> Option<[u64; 2]> {
    let b = superblock_copy_b(conv_sectors, slot_sectors)?;
    (1 + 2 * slot_sectors + 2 <= b).then(|| [b - 2, b - 1])
}

/// LBAs of the two copies of manifest slot `slot` (0 or 1): its start and half-way into it.
pub fn manifest_copies(slot: u64, slot_sectors: u64) -> [u64; 2] {
    let start = 1 + slot * slot_sectors;
    [start, start + slot_sectors / 2]
}

/// The superblock, from copy A (LBA 0) or, when A is damaged or gone, copy B; `None` on a
/// device holding no database. Also returns what is wrong with a copy that was not used.
pub fn read_superblock(dev: &Dev, conv_sectors: u64) -> Result<(Option<Superblock>, Vec<String>)> {
    let a = Superblock::decode(&dev.read_lba(0, 1)?);
    let last = conv_sectors.saturating_sub(1);
    let b = if last > 0 {
        Superblock::decode(&dev.read_lba(last, 1)?)
    } else {
        Ok(None)
    };
    // Copy B counts only where the database it names keeps that sector for it.
    let b = match b {
        Ok(Some(sb)) if superblock_copy_b(conv_sectors, sb.slot_sectors) == Some(last) => {
            Ok(Some(sb))
        }
        Ok(_) => Ok(None),
        Err(e) => Err(e),
    };
    match (a, b) {
        (Ok(Some(a)), Ok(Some(b))) if a == b => Ok((Some(a), Vec::new())),
        (Ok(Some(a)), Ok(Some(_))) => Ok((
            Some(a),
            vec![format!(
                "superblock copy B (LBA {last}) differs from copy A (LBA 0), which is in use"
            )],
        )),
        (Ok(Some(a)), Ok(None)) => {
            let note = superblock_copy_b(conv_sectors, a.slot_sectors)
                .map(|l| format!("superblock copy B (LBA {l}) is missing or damaged"));
            Ok((Some(a), note.into_iter().collect()))
        }
        (Ok(Some(a)), Err(e)) => Ok((
            Some(a),
            vec![format!("superblock copy B (LBA {last}) is damaged: {e}")],
        )),
        (Ok(None), Ok(None)) => Ok((None, Vec::new())),
        (Ok(None), Ok(Some(b))) => Ok((
            Some(b),
            vec!["superblock copy A (LBA 0) has no magic: damaged; copy B was used".into()],
        )),
        (Err(e), Ok(Some(b))) => Ok((
            Some(b),
            vec![format!(
                "superblock copy A (LBA 0) is damaged ({e}); copy B was used"
            )],
        )),
        (Err(e), _) | (Ok(None), Err(e)) => Err(Error::corruption(
            0,
            0,
            format!("superblock: {e}, and no valid copy B at LBA {last}"),
        )),
    }
}

/// Writes manifest `m` into its slot (generation parity): the first copy, then the twin when
/// both fit the slot. The caller flushes. Returns the sectors of one copy.
pub fn write_manifest_copies(dev: &Dev, m: &Manifest, slot_sectors: u64) -> Result<u64> {
    let mut enc = m.encode();
    dev.pad(&mut enc);
    let secs = enc.len() as u64 / dev.ss;
    if secs > slot_sectors {
        return Err(Error::NoSpace(format!(
            "manifest of {secs} sectors exceeds its slot of {slot_sectors}"
        )));
    }
    let [a, b] = manifest_copies(m.generation % 2, slot_sectors);
    dev.dev.write(a, &enc).map_err(Error::Device)?;
    if secs <= slot_sectors / 2 {
        dev.dev.write(b, &enc).map_err(Error::Device)?;
    }
    Ok(secs)
}

/// Why a manifest copy is not usable.
#[derive(Debug, thiserror::Error)]
enum CopyProblem {
    /// No manifest header is there.
    #[error("no manifest")]
    Missing,
    /// The header claims more sectors than the copy has room for.
    #[error("length {0} exceeds its room")]
    TooLong(usize),
    /// The copy does not decode.
    #[error(transparent)]
    Damaged(#[from] FormatError),
}

/// One manifest copy read from `lba`: the manifest and its format version, or why not.
fn read_copy(
    dev: &Dev,
    lba: u64,
    room: u64,
) -> Result<std::result::Result<(Manifest, u32), CopyProblem>> {
    let first = dev.read_lba(lba, 1)?;
    let Some(len) = Manifest::encoded_len(&first) else {
        return Ok(Err(CopyProblem::Missing));
    };
    let secs = (len as u64).div_ceil(dev.ss);
    if secs > room {
        return Ok(Err(CopyProblem::TooLong(len)));
    }
    let buf = dev.read_lba(lba, secs)?;
    Ok(Manifest::decode(&buf)
        .map(|m| (m, Manifest::version_of(&buf).unwrap_or(0)))
        .map_err(CopyProblem::from))
}

/// Every copy of both slots: (slot, copy, LBA, what it holds).
type Copies = Vec<(
    u64,
    usize,
    u64,
    std::result::Result<(Manifest, u32), CopyProblem>,
)>;

fn read_copies(dev: &Dev, slot_sectors: u64) -> Result<Copies> {
    let mut out = Vec::new();
    for slot in 0..2u64 {
        let [a, b] = manifest_copies(slot, slot_sectors);
        out.push((slot, 1, a, read_copy(dev, a, slot_sectors)?));
        out.push((
            slot,
            2,
            b,
            read_copy(dev, b, slot_sectors - slot_sectors / 2)?,
        ));
    }
    Ok(out)
}

/// The newest valid manifest copy and its format version, and what is wrong with the copies
/// of its generation that were not used (a damaged twin).
pub fn load_manifest(dev: &Dev, slot_sectors: u64) -> Result<(Manifest, u32, Vec<String>)> {
    let copies = read_copies(dev, slot_sectors)?;
    let best = copies
        .iter()
        .filter_map(|(_, _, _, r)| r.as_ref().ok())
        .max_by_key(|(m, _)| m.generation)
        .cloned();
    let Some((m, v)) = best else {
        let why: Vec<String> = copies
            .iter()
            .map(|(s, c, l, r)| match r {
                Ok(_) => format!("slot {s} copy {c} (LBA {l}): valid"),
                Err(e) => format!("slot {s} copy {c} (LBA {l}): {e}"),
            })
            .collect();
        return Err(Error::corruption(
            0,
            dev.ss,
            format!("no valid manifest copy ({})", why.join("; ")),
        ));
    };
    let notes = twin_problems(&copies, &m);
    Ok((m, v, notes))
}

/// What is wrong with the copies of the newest generation's slot: a first copy that does not
/// hold it (damaged: its twin was used), or a twin that is damaged. A twin holding an older
/// generation (a commit cut short between the copies, never acknowledged) or none at all (a
/// manifest written before twins existed, or too big for two copies) is not a problem.
fn twin_problems(copies: &Copies, newest: &Manifest) -> Vec<String> {
    let slot = newest.generation % 2;
    copies
        .iter()
        .filter(|(s, _, _, _)| *s == slot)
        .filter_map(|(_, c, l, r)| match (c, r) {
            (_, Ok((m, _))) if m.generation == newest.generation => None,
            (2, Ok(_)) => None,
            (2, Err(CopyProblem::Missing)) => None,
            (_, Ok((m, _))) => Some(format!(
                "manifest slot {slot} copy 1 (LBA {l}) holds generation {}, but its twin holds \
                 the newest, {}, which was used",
                m.generation, newest.generation
            )),
            (_, Err(e)) => Some(format!(
                "manifest slot {slot} copy {c} (LBA {l}) is damaged ({e}); the copy holding \
                 generation {} was used",
                newest.generation
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_lie_inside_the_area_and_never_overlap() {
        for conv in [64u64, 255, 256, 65_536] {
            let s = slot_sectors_for(conv);
            let b = superblock_copy_b(conv, s).expect("a new database has copy B");
            let [a0, b0] = manifest_copies(0, s);
            let [a1, b1] = manifest_copies(1, s);
            assert!(0 < a0 && a0 < b0 && b0 < a1 && a1 < b1 && b1 < b, "{conv}");
            assert!(a1 + s <= b, "{conv}: slot 1 ends before copy B");
            let [t0, t1] = tail_slots(conv, s).expect("a new database has tail slots");
            assert!(
                a1 + s <= t0 && t0 < t1 && t1 < b,
                "{conv}: tail slots between"
            );
        }
        // The layout of databases created before the tail slots (slots of (conv - 2) / 2)
        // has no room for them, but keeps copy B.
        assert_eq!(tail_slots(256, 127), None);
        assert_eq!(superblock_copy_b(256, 127), Some(255));
        // A database of the older layout (slots of (conv - 1) / 2) may have no copy B.
        assert_eq!(superblock_copy_b(257, 256 / 2), None);
    }
}
