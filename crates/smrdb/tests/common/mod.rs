//! Shared helpers of the integration tests.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error
#![allow(missing_docs)]
#![allow(dead_code)]

use std::sync::Arc;
use tegula_device::{profile, Disk};
use tegula_smrdb::{FormatOptions, Mode, Options};

/// The drive the tests run on: `hm-smr`, or with `TEGULA_TEST_PROFILE=zns` the ZNS profile
/// (no conventional zones, a zone capacity below the zone size, open and active limits), which
/// `.ci/run` runs the whole suite on too. Any other value fails the test.
pub fn test_profile() -> String {
    let p = std::env::var("TEGULA_TEST_PROFILE").unwrap_or_else(|_| "hm-smr".into());
    assert!(
        p == "hm-smr" || p == "zns",
        "TEGULA_TEST_PROFILE={p}: hm-smr or zns"
    );
    p
}

/// A tiny disk of the test profile with 1 MiB zones, write cache on: host-managed SMR of
/// `mib` MiB, or ZNS-like with 768 KiB of each zone writable and 8 MiB more for the
/// conventional zone SMRDB emulates in its first zones.
pub fn tiny_disk(mib: u64) -> Arc<Disk> {
    let zns = test_profile() == "zns";
    let mut cfg = profile(if zns { "zns" } else { "hm-smr" }).unwrap();
    cfg.zones.zone_size = 1 << 20;
    cfg.capacity = mib << 20;
    if zns {
        cfg.zones.zone_capacity = Some(768 << 10);
        cfg.capacity += 8 << 20;
    }
    cfg.cache.write_cache = true;
    Arc::new(Disk::in_memory(cfg).unwrap())
}

/// The device as SMRDB sees `disk` (on ZNS, with the conventional zone it emulates), for a
/// test that reads or damages what the engine wrote. Never hold it while the engine runs.
pub fn seen(disk: Arc<Disk>) -> Arc<dyn tegula_device::ZonedDevice> {
    tegula_device::ConvZones::wrap_if_needed(disk).unwrap()
}

/// How many zones lower SMRDB numbers a zone of `disk` than the disk does (0 on hm-smr; on
/// ZNS, the log zones of the emulated conventional zone less that one zone).
pub fn zone_shift(disk: &Arc<Disk>) -> u32 {
    use tegula_device::BlockDevice;
    disk.info().zones - seen(disk.clone()).info().zones
}

/// The format of a database in organisation `mode`.
pub fn format(mode: Mode) -> FormatOptions {
    FormatOptions { mode }
}

/// Options that make flushes and compactions happen quickly and deterministically.
pub fn tiny_opts() -> Options {
    Options {
        memtable_bytes: Some(128 << 10),
        log_buffer_bytes: 16 << 10,
        block_cache_bytes: 256 << 10,
        background_compaction: false,
        read_ahead_bytes: 128 << 10,
        write_chunk_bytes: 128 << 10,
        loc_level1_bands: 2,
        l1_overlap_trigger: 3,
        ..Options::default()
    }
}

/// A deterministic xorshift generator (tests need no external randomness).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub fn key(i: u64) -> Vec<u8> {
    format!("key{:06}", i).into_bytes()
}

pub fn value(rng: &mut Rng, i: u64, max: u64) -> Vec<u8> {
    let n = 1 + rng.below(max) as usize;
    let mut v = format!("v{i}-").into_bytes();
    v.resize(n.max(v.len()), b'a' + (i % 26) as u8);
    v
}
