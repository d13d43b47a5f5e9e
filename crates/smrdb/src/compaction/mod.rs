//! Choosing what to compact: SMR-friendly organisation ([`soc`], paper §4.3) and the
//! LevelDB-style one ([`loc`], paper §3). The engine executes a [`Plan`].

pub mod input;
pub mod loc;
pub mod soc;

use crate::options::{Mode, Options};
use crate::version::VBand;

/// One compaction to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Input band ids.
    pub inputs: Vec<u64>,
    /// Level of the output bands.
    pub output_level: u8,
    /// Move the single input to `output_level` without copying.
    pub trivial_move: bool,
    /// LOC: new round-robin pointer `(level, key)`.
    pub pointer: Option<(u8, Vec<u8>)>,
    /// Why (for logs and stats).
    pub reason: &'static str,
}

/// Picks the next background compaction of a `mode` database, if one is due.
pub fn pick(mode: Mode, opts: &Options, bands: &[VBand], pointers: &[Vec<u8>]) -> Option<Plan> {
    match mode {
        Mode::Soc => soc::pick(opts, bands),
        Mode::Loc => loc::pick(opts, bands, pointers),
    }
}

/// Whether a background compaction of a `mode` database is due.
pub fn needed(mode: Mode, opts: &Options, bands: &[VBand], pointers: &[Vec<u8>]) -> bool {
    pick(mode, opts, bands, pointers).is_some()
}

/// Bytes of other bands' data that the histograms place inside `b`'s key range, per byte of
/// `b`'s own data: 0 for a perfectly sequential band (paper §4.3's sequentiality, inverted).
pub fn disorder(b: &VBand, all: &[VBand]) -> f64 {
    let m = &b.band.meta;
    let foreign: u64 = all
        .iter()
        .filter(|o| o.id() != b.id() && o.overlaps(b))
        .map(|o| o.band.hist.bytes_in(&m.smallest, &m.largest))
        .sum();
    foreign as f64 / m.data_bytes.max(1) as f64
}

/// Number of other bands in `set` that each band of `set` overlaps, summed over pairs.
pub fn overlap_pairs(set: &[VBand]) -> usize {
    let mut n = 0;
    for (i, a) in set.iter().enumerate() {
        n += set[i + 1..].iter().filter(|b| a.overlaps(b)).count();
    }
    n
}

#[cfg(test)]
pub(crate) mod testutil {
    use crate::band::bloom::Bloom;
    use crate::band::footer::Footer;
    use crate::band::histogram::{Bucket, Histogram};
    use crate::band::Band;
    use crate::manifest::BandMeta;
    use crate::version::VBand;
    use std::sync::Arc;

    /// A band with range [lo, hi] (single-byte keys), one histogram bucket per key.
    pub fn vb(id: u64, level: u8, lo: u8, hi: u8) -> VBand {
        let buckets = (lo..=hi)
            .map(|k| Bucket {
                upper: vec![k],
                bytes: 100,
            })
            .collect();
        VBand {
            level,
            band: Arc::new(Band {
                meta: BandMeta {
                    id,
                    zone: id as u32,
                    level,
                    sectors: 1,
                    smallest: vec![lo],
                    largest: vec![hi],
                    min_seq: id * 10,
                    max_seq: id * 10 + 9,
                    entries: 1,
                    data_bytes: 100 * (hi - lo + 1) as u64,
                    write_time: id,
                },
                footer: Footer::default(),
                index: Default::default(),
                bloom: Bloom::build(&[], 0),
                hist: Histogram {
                    first: vec![lo],
                    buckets,
                },
            }),
        }
    }
}
