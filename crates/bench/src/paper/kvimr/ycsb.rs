//! YCSB's run phases A, B, C, F, D, E (YCSB's recommended order) on the loaded database,
//! single-threaded: zipfian requests (D: latest), 1 KB records, scans of up to 100 records.

use super::bed::{row, Bed};
use super::{KvimrSizes, Results};
use crate::error::{Error, Result};
use crate::generators::{AckCounter, ScrambledZipfian, SkewedLatest};
use crate::keys::ValueGen;
use crate::ycsb::{key_name, Distribution, Op, Workload};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Runs the six phases after a load of `loaded` records.
pub(super) fn run(
    bed: &Bed,
    loaded: u64,
    s: &KvimrSizes,
    seed: u64,
    res: &mut Results,
) -> Result<()> {
    let mut values = ValueGen::new(seed ^ 0xc5b, s.value_bytes);
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x7c5b);
    let acks = AckCounter::new(loaded);
    let mut ops_total = 0u64;
    let usage = res
        .rows
        .iter()
        .rev()
        .find(|r| r.phase == "load" && r.scheme == bed.scheme.name())
        .map_or(0.0, |r| r.usage);
    for letter in ['a', 'b', 'c', 'f', 'd', 'e'] {
        let w = Workload::core(letter)?;
        let count = acks.last_value() + 1;
        let zipf = ScrambledZipfian::new(0, count.max(2) - 1);
        let latest = SkewedLatest::new(&acks);
        let a = bed.snap(ops_total);
        for _ in 0..s.ycsb_ops {
            let pick = |rng: &mut SmallRng| -> u64 {
                match w.dist {
                    Distribution::Latest => latest.next(rng, &acks),
                    Distribution::Uniform => rng.gen_range(0..count),
                    Distribution::Zipfian => zipf.next(rng),
                }
            };
            match w.choose(rng.gen::<f64>()) {
                Op::Read => {
                    bed.get(&key_name(pick(&mut rng)))?;
                }
                Op::Update => {
                    bed.put(&key_name(pick(&mut rng)), values.next(s.value_bytes))?;
                }
                Op::Insert => {
                    let k = acks.next_value();
                    bed.put(&key_name(k), values.next(s.value_bytes))?;
                    acks.acknowledge(k);
                }
                Op::Scan => {
                    let len = rng.gen_range(1..=100usize);
                    let it = bed
                        .db
                        .scan(&key_name(pick(&mut rng)), None)
                        .map_err(|e| Error::engine("smrdb scan", e))?;
                    for kv in it.take(len) {
                        kv.map_err(|e| Error::engine("smrdb scan", e))?;
                    }
                }
                Op::ReadModifyWrite => {
                    let key = key_name(pick(&mut rng));
                    bed.get(&key)?;
                    bed.put(&key, values.next(s.value_bytes))?;
                }
            }
            ops_total += 1;
        }
        let b = bed.snap(ops_total);
        res.rows
            .push(row(&format!("ycsb-{letter}"), bed.scheme, usage, &a, &b));
    }
    Ok(())
}
