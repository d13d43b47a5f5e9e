//! The load: YCSB-style random inserts (hashed key order) of 1 KB values until the data
//! inserted reaches the scale's share of the data tracks, one [`Row`] per usage step (the
//! slides' timeline; the sums are their bar charts), then the YCSB run phases on the loaded
//! database.

use super::bed::{row, Bed};
use super::{KvimrOptions, KvimrSizes, Results, Scheme};
use crate::error::{Error, Result};
use crate::keys::ValueGen;
use crate::observer::Observer;
use crate::ycsb::key_name;

/// Whether `e` is the engine running out of space (a scheme's result, not a failure).
pub(super) fn is_nospace(e: &Error) -> bool {
    match e {
        Error::Kv(tegula_kv::Error::Engine { source, .. }) => source
            .downcast_ref::<tegula_smrdb::Error>()
            .is_some_and(|x| {
                matches!(x, tegula_smrdb::Error::NoSpace(_)) || x.to_string().contains("no space")
            }),
        _ => false,
    }
}

/// Inserts records `from..` until `target` bytes were inserted in all; returns the next
/// record number and the bytes inserted.
pub(super) fn insert_until(
    bed: &Bed,
    values: &mut ValueGen,
    value_bytes: usize,
    mut k: u64,
    mut inserted: u64,
    target: u64,
) -> Result<(u64, u64)> {
    while inserted < target {
        let key = key_name(k);
        let v = values.next(value_bytes);
        bed.put(&key, v)?;
        inserted += (key.len() + v.len()) as u64;
        k += 1;
    }
    Ok((k, inserted))
}

/// Runs the load (and the YCSB phases after it) for `scheme`.
pub(super) fn run(
    scheme: Scheme,
    s: &KvimrSizes,
    opts: &KvimrOptions,
    obs: &dyn Observer,
    res: &mut Results,
) -> Result<()> {
    let bed = Bed::new(scheme, s)?;
    let mut values = ValueGen::new(opts.seed, s.value_bytes);
    let steps = (s.load_usage / s.step).round().max(1.0) as usize;
    let (mut k, mut inserted) = (0u64, 0u64);
    let mut prev = bed.snap(0);
    for i in 1..=steps {
        let usage = i as f64 * s.step;
        let target = (usage * bed.data_bytes as f64) as u64;
        obs.phase_started(scheme.name(), &format!("load to {:.0}%", usage * 100.0), 0);
        let r = insert_until(&bed, &mut values, s.value_bytes, k, inserted, target);
        obs.phase_finished();
        match r {
            Ok((nk, ni)) => {
                k = nk;
                inserted = ni;
            }
            Err(e) if is_nospace(&e) => {
                res.notes.push(format!(
                    "{}: out of space at {:.0}% inserted ({e})",
                    scheme.name(),
                    inserted as f64 / bed.data_bytes as f64 * 100.0
                ));
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        let now = bed.snap(k);
        res.rows.push(row("load", scheme, usage, &prev, &now));
        prev = now;
    }
    if opts.parts.ycsb {
        match super::ycsb::run(&bed, k, s, opts.seed, res) {
            Err(e) if is_nospace(&e) => res.notes.push(format!(
                "{}: the YCSB phases ran out of space ({e})",
                scheme.name()
            )),
            r => r?,
        }
    }
    Ok(())
}
