//! Helpers shared by the drive-managed IMR tests: tiny interlaced drives, a reference model
//! of what the host wrote, and contents that name their write.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk, DiskConfig};
use tegula_dmimr::{DmImr, FormatOptions};

/// Sector size.
pub const SS: u64 = 4096;
/// Sectors of a bottom track of the tiny drives.
pub const BOTTOM: u64 = 16;

/// A tiny imr drive: 2 heads, bottom tracks of 16 sectors (tops 13), one recording zone,
/// `capacity_kib` KiB, write cache on or off.
pub fn config(capacity_kib: u64, cache: bool) -> DiskConfig {
    static IMR: std::sync::OnceLock<DiskConfig> = std::sync::OnceLock::new();
    let mut c = IMR.get_or_init(|| profile("imr").unwrap()).clone();
    c.media.heads = 2;
    c.media.cylinders = 400;
    c.media.od_track_bytes = BOTTOM * SS;
    c.media.od_id_ratio = 1.0;
    c.media.recording_zones = 1;
    c.zones.zone_size = 256 << 10;
    c.capacity = capacity_kib << 10;
    c.cache.write_cache = cache;
    c.cache.size = 4 << 20;
    c
}

/// Format options for the tiny drives: staging slots of 48 sectors.
pub fn small() -> FormatOptions {
    FormatOptions {
        staging_bytes: 2 * 48 * SS,
    }
}

/// A formatted tiny drive and its raw disk.
pub fn drive(capacity_kib: u64, cache: bool) -> (Arc<Disk>, DmImr) {
    let d = Arc::new(Disk::in_memory(config(capacity_kib, cache)).unwrap());
    let dm = DmImr::format(d.clone(), small()).unwrap();
    (d, dm)
}

/// `sectors` sectors whose every 8-byte word names `tag` and its sector.
pub fn content(tag: u64, lba: u64, sectors: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity((sectors * SS) as usize);
    for s in lba..lba + sectors {
        for w in 0..SS / 8 {
            v.extend_from_slice(&(tag << 40 ^ s << 12 ^ w).to_le_bytes());
        }
    }
    v
}

/// What each host sector must read back as: `None` for "either of two versions" is kept
/// as a list of allowed contents.
#[derive(Clone)]
pub struct Model {
    /// Allowed contents per sector (one entry: exact).
    pub allowed: Vec<Vec<Vec<u8>>>,
}

impl Model {
    /// A model of `sectors` zero sectors.
    pub fn new(sectors: u64) -> Self {
        Model {
            allowed: vec![vec![vec![0u8; SS as usize]]; sectors as usize],
        }
    }

    /// The host wrote `data` at `lba` (and it is durable or we do not crash).
    pub fn write(&mut self, lba: u64, data: &[u8]) {
        for (i, c) in data.chunks(SS as usize).enumerate() {
            self.allowed[lba as usize + i] = vec![c.to_vec()];
        }
    }

    /// The write may or may not have reached the media: each sector is old or new.
    pub fn maybe(&mut self, lba: u64, data: &[u8]) {
        for (i, c) in data.chunks(SS as usize).enumerate() {
            self.allowed[lba as usize + i].push(c.to_vec());
        }
    }

    /// Checks every sector of `dev` against the model.
    pub fn verify(&self, dev: &dyn BlockDevice, what: &str) {
        let n = self.allowed.len() as u64;
        let mut buf = vec![0u8; (n * SS) as usize];
        dev.read(0, &mut buf)
            .unwrap_or_else(|e| panic!("{what}: reading back: {e}"));
        for (i, c) in buf.chunks(SS as usize).enumerate() {
            assert!(
                self.allowed[i].iter().any(|a| a == c),
                "{what}: sector {i} holds none of its {} allowed contents",
                self.allowed[i].len()
            );
        }
    }

    /// Collapses every sector to what it holds now (after a check).
    pub fn settle(&mut self, dev: &dyn BlockDevice) {
        let n = self.allowed.len() as u64;
        let mut buf = vec![0u8; (n * SS) as usize];
        dev.read(0, &mut buf).unwrap();
        for (i, c) in buf.chunks(SS as usize).enumerate() {
            self.allowed[i] = vec![c.to_vec()];
        }
    }
}
