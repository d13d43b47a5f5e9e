//! Support shared by the drive-managed SMR integration tests: the tiny drive configuration
//! that makes cleaning and full caches happen in milliseconds, the soak switch, a whole-drive
//! read-back check and a check of an image whose findings are notes only.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses a different subset

use std::path::Path;
use tegula_device::BlockDevice;
use tegula_stl::{DmConfig, DmDrive};

/// Sector size of the tiny drives.
pub const SS: usize = 4096;

/// Whether this is a soak run (`TEGULA_SOAK=1`: more seeds, longer runs).
pub fn soak() -> bool {
    std::env::var("TEGULA_SOAK").is_ok_and(|v| v == "1")
}

/// A tiny drive of `stl` and `capacity` (4 MiB bands, a 12 MiB cache, a 300-entry map), so
/// that cleaning, wrap-around and full caches happen in milliseconds; `extra` is appended.
pub fn tiny_config(capacity: &str, stl: &str, extra: &str) -> DmConfig {
    let (mapping, loc) = match stl {
        "fully-associative" => ("dynamic", "distributed"),
        _ => ("static", "od"),
    };
    let text = format!(
        "kind = \"dm-smr\"\ncapacity = \"{capacity}\"\nstl = \"{stl}\"\nmapping = \"{mapping}\"\n\
         cache_location = \"{loc}\"\nband_size = \"4MiB\"\ncache_size = \"12MiB\"\n\
         zone_size = \"16MiB\"\njournal_entry_min = \"64KiB\"\njournal_entry_quantum = \"64KiB\"\n\
         journal_entry_max = \"256KiB\"\njournal_oob = \"64KiB\"\nmap_entries = 300\n\
         map_merge_every = 16\nmap_entry_bytes = 64\nidle_before_cleaning = \"200ms\"\n{extra}"
    );
    DmConfig::from_toml(&text).expect("config")
}

/// Reads the whole drive 64 sectors at a time and asserts that each piece is
/// `expected(lba, sectors)`; `what` names the moment in failure messages.
pub fn verify_with(d: &DmDrive, what: &str, expected: impl Fn(u64, u64) -> Vec<u8>) {
    let cap = d.info().capacity_sectors;
    let mut lba = 0;
    while lba < cap {
        let n = 64.min(cap - lba);
        let mut b = vec![0u8; n as usize * SS];
        d.read(lba, &mut b)
            .unwrap_or_else(|e| panic!("{what}: read of LBA {lba} failed: {e}"));
        assert!(
            b == expected(lba, n),
            "{what}: LBA {lba}..{} differs",
            lba + n
        );
        lba += n;
    }
}

/// Checks the image at `path`: it must be clean, with a finding (a note) that mentions `note`.
pub fn check_clean_noting(path: &Path, note: &str) {
    let report = DmDrive::check(path).unwrap();
    assert!(report.is_clean(), "{:?}", report.findings);
    assert!(
        report.findings.iter().any(|f| f.message.contains(note)),
        "{:?}",
        report.findings
    );
}

pub mod crash_model;
