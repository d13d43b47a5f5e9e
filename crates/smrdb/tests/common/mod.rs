//! Shared helpers of the integration tests.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error
#![allow(missing_docs)]
#![allow(dead_code)]

use std::sync::Arc;
use tegula_device::{profile, Disk};
use tegula_smrdb::{FormatOptions, Mode, Options};

/// A tiny host-managed SMR disk: 1 MiB zones, `mib` MiB, write cache on.
pub fn tiny_disk(mib: u64) -> Arc<Disk> {
    let mut cfg = profile("hm-smr").unwrap();
    cfg.zones.zone_size = 1 << 20;
    cfg.capacity = mib << 20;
    cfg.cache.write_cache = true;
    Arc::new(Disk::in_memory(cfg).unwrap())
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
