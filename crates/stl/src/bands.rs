//! Band-boundary splitting, shared by the translation layers and the drive: a logical range
//! is served band by band, since each band has its own home (and, for dynamic mapping, its
//! own physical band).

use crate::error::Result;
use crate::layer::{Layer, WriteReq};
use crate::layout::Layout;
use tegula_device::media::Media;
use tegula_device::Nanos;

/// A cursor over logical `[lba, end)` that yields the part of each band it covers, in order.
/// The band lookup is passed to each step, so that the caller may mutate its own state
/// between steps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BandSplit {
    cur: u64,
    end: u64,
}

impl BandSplit {
    /// A cursor at the start of logical `[lba, end)`.
    pub fn new(lba: u64, end: u64) -> Self {
        BandSplit { cur: lba, end }
    }

    /// The next piece `[lo, hi)`: from the cursor to the end of its band (`band_range` gives a
    /// logical LBA's band `[start, end)`) or of the range; `None` once the range is done.
    pub fn next(&mut self, band_range: impl FnOnce(u64) -> (u64, u64)) -> Option<(u64, u64)> {
        if self.cur >= self.end {
            return None;
        }
        let lo = self.cur;
        let (_, band_end) = band_range(lo);
        self.cur = band_end.min(self.end);
        Some((lo, self.cur))
    }
}

/// Reads logical sectors at `lba` into `buf` from their home locations, one media read per
/// band; `native` maps a logical LBA to its physical sector (the static map, or a layer's
/// dynamic band mapping).
pub(crate) fn read_native(
    m: &mut Media,
    layout: &Layout,
    lba: u64,
    buf: &mut [u8],
    native: impl Fn(u64) -> u64,
) -> Result<()> {
    let ss = layout.sector;
    let mut split = BandSplit::new(lba, lba + buf.len() as u64 / ss);
    while let Some((lo, hi)) = split.next(|l| layout.band_range(l)) {
        let (a, b) = (((lo - lba) * ss) as usize, ((hi - lba) * ss) as usize);
        m.read(native(lo), &mut buf[a..b])?;
    }
    Ok(())
}

/// Reads logical sectors at `lba` into `buf` piece by piece as an extent map's lookup placed
/// them (`(lba, sectors, position in the cache or None for home)`): `read` gets each piece
/// with its part of `buf`. `ss` is the sector size.
pub(crate) fn read_pieces(
    ss: u64,
    lba: u64,
    buf: &mut [u8],
    pieces: Vec<(u64, u64, Option<u64>)>,
    mut read: impl FnMut(u64, u64, Option<u64>, &mut [u8]) -> Result<()>,
) -> Result<()> {
    for (l, k, pos) in pieces {
        let (a, b) = (((l - lba) * ss) as usize, ((l - lba + k) * ss) as usize);
        read(l, k, pos, &mut buf[a..b])?;
    }
    Ok(())
}

/// Writes a batch the way layers that place data per band do: each write is split at band
/// boundaries and its pieces handed to `put` in order. Returns each write's completion time
/// (the media's clock after its last piece). `ss` is the sector size.
pub(crate) fn write_by_band<L: Layer + ?Sized>(
    layer: &mut L,
    m: &mut Media,
    ss: u64,
    batch: &[WriteReq<'_>],
    put: impl Fn(&mut L, &mut Media, u64, &[u8]) -> Result<()>,
) -> Result<Vec<Nanos>> {
    let mut done = Vec::with_capacity(batch.len());
    for r in batch {
        let mut split = BandSplit::new(r.lba, r.lba + r.data.len() as u64 / ss);
        while let Some((lo, hi)) = split.next(|l| layer.band_range(l)) {
            let (a, b) = (((lo - r.lba) * ss) as usize, ((hi - r.lba) * ss) as usize);
            put(layer, m, lo, &r.data[a..b])?;
        }
        done.push(m.now());
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_splits_at_every_band_boundary_it_crosses() {
        // Bands of 10 sectors.
        let bands = |l: u64| (l / 10 * 10, l / 10 * 10 + 10);
        let mut s = BandSplit::new(7, 31);
        let mut got = Vec::new();
        while let Some(p) = s.next(bands) {
            got.push(p);
        }
        assert_eq!(got, vec![(7, 10), (10, 20), (20, 30), (30, 31)]);
        let mut s = BandSplit::new(10, 20);
        assert_eq!(s.next(bands), Some((10, 20)));
        assert_eq!(s.next(bands), None);
        assert_eq!(BandSplit::new(5, 5).next(bands), None);
    }
}
