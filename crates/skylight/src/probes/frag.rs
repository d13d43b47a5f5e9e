//! Fragmented regions (TESTs 2 and 3): every other block rewritten, so that a sequential read
//! alternates between the persistent cache and the blocks' native locations.

use crate::error::Result;
use crate::session::Session;

/// Blocks written (every other one) in a fragmented region.
pub(crate) const WRITTEN: u64 = 512;

/// Writes every other block of `2 × WRITTEN` blocks from `off` (durable writes, 31 queued at
/// a time: a journal packs them into a few entries, so even a small cache holds them all).
pub(crate) fn fragment(s: &mut Session<'_>, off: u64) -> Result<()> {
    let bs = s.bs;
    let offs: Vec<u64> = (0..WRITTEN).map(|i| off + 2 * i * bs).collect();
    for chunk in offs.chunks(31) {
        s.write_batch(chunk, bs)?;
    }
    s.tick(WRITTEN);
    Ok(())
}

/// Reads the `2 × WRITTEN` blocks from `off` one by one; their latencies in ms.
pub(crate) fn read_back(s: &mut Session<'_>, off: u64) -> Result<Vec<f64>> {
    let bs = s.bs;
    let mut lat = Vec::with_capacity(2 * WRITTEN as usize);
    for i in 0..2 * WRITTEN {
        lat.push(s.read(off + i * bs, bs)?);
    }
    s.tick(2 * WRITTEN);
    Ok(lat)
}
