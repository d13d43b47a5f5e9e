//! The consistency check ([`crate::Db::check`]): the manifest's zones, every band's
//! footer, index, filter, histogram and data blocks (checksums, order, ranges, entry counts),
//! LOC's non-overlapping levels, and every log band's chunks up to its write pointer.

use crate::band::{Band, BandIter};
use crate::compaction::overlap_pairs;
use crate::db::Inner;
use crate::error::Result;
use crate::io::IoKind;
use crate::log;
use crate::manifest::Manifest;
use crate::options::Mode;
use crate::version::{level_of, SuperVersion};
use serde::Serialize;
use std::collections::BTreeSet;
use tegula_device::ZoneCondition;

/// What [`crate::Db::check`] found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckReport {
    /// Bands verified.
    pub bands: usize,
    /// Entries read and checked.
    pub entries: u64,
    /// Data bytes read.
    pub data_bytes: u64,
    /// Log records read (in the log bands of the memtables not yet flushed).
    pub log_records: u64,
    /// Everything found wrong (empty when the database is sound).
    pub problems: Vec<String>,
    /// Damaged redundant copies (superblock, manifest) found when the database was opened
    /// and rewritten from their good twins: nothing was lost, something was wrong.
    pub repaired: Vec<String>,
}

impl CheckReport {
    /// Whether no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

pub(crate) fn check(
    db: &Inner,
    sv: &SuperVersion,
    m: &Manifest,
    free: &[u32],
    seq_zones: &[u32],
) -> Result<CheckReport> {
    let dev = db.dev();
    let mut rep = CheckReport::default();
    let mut seen = BTreeSet::new();
    for z in m
        .bands
        .iter()
        .map(|b| b.zone)
        .chain(m.log_zones.iter().copied())
    {
        if !seen.insert(z) {
            rep.problems.push(format!("zone {z} is referenced twice"));
        }
        if !seq_zones.contains(&z) {
            rep.problems
                .push(format!("zone {z} is not a sequential zone"));
        }
    }
    for &z in free {
        if seen.contains(&z) {
            rep.problems
                .push(format!("zone {z} is both free and in use"));
        }
        match dev.dev.zone(z) {
            Ok(zi) if zi.condition != ZoneCondition::Empty => {
                rep.problems
                    .push(format!("free zone {z} is {}", zi.condition));
            }
            Err(e) => rep.problems.push(format!("zone {z}: {e}")),
            _ => {}
        }
    }
    for b in sv.bands.iter() {
        let meta = &b.band.meta;
        rep.bands += 1;
        match dev.dev.zone(meta.zone) {
            Ok(zi) => {
                let wp = zi.written_sectors();
                if wp < meta.sectors {
                    rep.problems.push(format!(
                        "band {} in zone {}: {} sectors recorded, write pointer at {wp}",
                        meta.id, meta.zone, meta.sectors
                    ));
                    continue;
                }
            }
            Err(e) => {
                rep.problems.push(format!("band {}: {e}", meta.id));
                continue;
            }
        }
        // Re-read the footer, index, filter and histogram from the media.
        if let Err(e) = Band::open(dev, meta.clone()) {
            rep.problems.push(format!("band {}: {e}", meta.id));
            continue;
        }
        let mut it = match BandIter::new(
            b.band.clone(),
            db.dev_arc(),
            &[],
            IoKind::Read,
            db.opts().read_ahead_bytes,
            true,
        ) {
            Ok(it) => it,
            Err(e) => {
                rep.problems.push(format!("band {}: {e}", meta.id));
                continue;
            }
        };
        let mut prev: Option<(Vec<u8>, u64)> = None;
        let mut n = 0u64;
        loop {
            match it.next_entry() {
                Ok(Some(e)) => {
                    n += 1;
                    rep.data_bytes += e.encoded_len() as u64;
                    if let Some((pk, ps)) = &prev {
                        if crate::band::reader::cmp_ikey(pk, *ps, &e.key, e.seq)
                            != std::cmp::Ordering::Less
                        {
                            rep.problems
                                .push(format!("band {}: entries out of order", meta.id));
                            break;
                        }
                    }
                    if !meta.covers(&e.key) || e.seq < meta.min_seq || e.seq > meta.max_seq {
                        rep.problems.push(format!(
                            "band {}: entry outside the recorded key or sequence range",
                            meta.id
                        ));
                        break;
                    }
                    if !b.band.bloom.may_contain(&e.key) {
                        rep.problems
                            .push(format!("band {}: Bloom filter misses a key", meta.id));
                        break;
                    }
                    prev = Some((e.key, e.seq));
                }
                Ok(None) => break,
                Err(e) => {
                    rep.problems.push(format!("band {}: {e}", meta.id));
                    break;
                }
            }
        }
        rep.entries += n;
        if n != meta.entries && rep.problems.is_empty() {
            rep.problems.push(format!(
                "band {}: {n} entries read, {} recorded",
                meta.id, meta.entries
            ));
        }
    }
    check_logs(db, m, &mut rep);
    if db.mode() == Mode::Loc {
        for l in 1..crate::compaction::loc::LEVELS {
            let n = overlap_pairs(&level_of(&sv.bands, l));
            if n > 0 {
                rep.problems.push(format!(
                    "level {l}: {n} pairs of bands overlap (LOC forbids)"
                ));
            }
        }
    }
    Ok(rep)
}

/// Reads every log band up to its write pointer as recovery would: damage below the write
/// pointer is a problem wherever it lies; a torn tail (a chunk cut short by a power cut,
/// which recovery never appends behind) is not.
fn check_logs(db: &Inner, m: &Manifest, rep: &mut CheckReport) {
    let dev = db.dev();
    for &z in &m.log_zones {
        let wp = match dev.dev.zone(z) {
            Ok(zi) => zi.written_sectors(),
            Err(e) => {
                rep.problems.push(format!("log band in zone {z}: {e}"));
                continue;
            }
        };
        let mut n = 0u64;
        if let Err(e) = log::replay_zone(dev, z, wp, &mut |_| {
            n += 1;
            true
        }) {
            rep.problems.push(format!("log band in zone {z}: {e}"));
        }
        rep.log_records += n;
    }
}
