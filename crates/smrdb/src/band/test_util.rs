//! Test helpers shared by the modules that read bands.

use super::{Band, BandWriter, WriterConfig};
use crate::io::{Dev, IoKind};
use crate::memtable::Entry;
use std::sync::Arc;
use tegula_device::{profile, Disk, ZonedDevice};

/// An in-memory host-managed disk of 4 MiB zones, 32 MiB in all.
#[allow(clippy::unwrap_used)]
pub(crate) fn test_dev() -> Arc<Dev> {
    let mut cfg = profile("hm-smr").unwrap();
    cfg.zones.zone_size = 4 << 20;
    cfg.capacity = 32 << 20;
    let disk: Arc<dyn ZonedDevice> = Arc::new(Disk::in_memory(cfg).unwrap());
    Arc::new(Dev::new(disk))
}

/// Writes `entries` (in internal key order) as band `id` in `zone`, in 4 KiB blocks aligned
/// to sectors (the engine's default).
pub(crate) fn write_band(dev: &Arc<Dev>, zone: u32, id: u64, entries: &[Entry]) -> Arc<Band> {
    write_band_aligned(dev, zone, id, entries, true)
}

/// [`write_band`] with block alignment on or off.
pub(crate) fn write_band_aligned(
    dev: &Arc<Dev>,
    zone: u32,
    id: u64,
    entries: &[Entry],
    block_align: bool,
) -> Arc<Band> {
    let mut w = BandWriter::new(
        dev,
        zone,
        IoKind::Flush,
        WriterConfig {
            block_size: 4096,
            block_align,
            bloom_bits_per_key: 10,
            histogram_bytes: 4096,
            write_chunk_bytes: 64 << 10,
        },
    );
    for e in entries {
        w.add(e).unwrap();
    }
    Arc::new(w.finish(id, 0, 0).unwrap())
}
