//! The space-usage sweep: on a fresh database, load to each usage in turn (unmeasured), then
//! overwrite uniformly chosen existing keys (measured): throughput at steady usage.

use super::bed::{row, Bed};
use super::load::{insert_until, is_nospace};
use super::{KvimrSizes, Results, Scheme};
use crate::error::Result;
use crate::keys::ValueGen;
use crate::ycsb::key_name;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Runs the sweep for `scheme`.
pub(super) fn run(scheme: Scheme, s: &KvimrSizes, seed: u64, res: &mut Results) -> Result<()> {
    let bed = Bed::new(scheme, s)?;
    let mut values = ValueGen::new(seed ^ 0x5eeb, s.value_bytes);
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x0e1e);
    let (mut k, mut inserted) = (0u64, 0u64);
    let mut ops = 0u64;
    for &usage in &s.sweep {
        let target = (usage * bed.data_bytes as f64) as u64;
        let r = insert_until(&bed, &mut values, s.value_bytes, k, inserted, target).and_then(
            |(nk, ni)| {
                k = nk;
                inserted = ni;
                let a = bed.snap(ops);
                for _ in 0..s.sweep_ops {
                    let key = key_name(rng.gen_range(0..k.max(1)));
                    bed.put(&key, values.next(s.value_bytes))?;
                    ops += 1;
                }
                let b = bed.snap(ops);
                res.rows.push(row("sweep", scheme, usage, &a, &b));
                Ok(())
            },
        );
        match r {
            Ok(()) => {}
            Err(e) if is_nospace(&e) => {
                res.notes.push(format!(
                    "{}: the sweep ran out of space at {:.0}% usage ({e})",
                    scheme.name(),
                    usage * 100.0
                ));
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
