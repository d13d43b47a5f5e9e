//! Cache fills that end at the wrong moment (issue 31): a fully associative drive whose
//! zones hold only a few spare bands each is full within TEST 8's first batch, and one whose
//! zones a TEST's own blocks filled starts TEST 11's cleaning fill at a level where a share of
//! the writes already clean. Both once ran to their 48-hour budget and reported nothing
//! (drives #35 and #47 of the accuracy matrix). A lazy set-associative drive cleans every set
//! within a few batches once they fill together, so TEST 11's fill must stop at the first
//! cleaning or no band is left to see (#19, whose band came out at 12 times the truth).
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::Truth;
use tegula_skylight::report::Report;
use tegula_stl::{CacheLocation, Cleaning, DmConfig, Mapping, StlKind};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn fully_associative(
    capacity: u64,
    band: u64,
    cache: u64,
    zone: u64,
    cleaning: Cleaning,
    vc: bool,
) -> DmConfig {
    DmConfig {
        capacity,
        stl: StlKind::FullyAssociative,
        mapping: Mapping::Dynamic,
        band_size: band,
        cache_size: cache,
        cache_location: CacheLocation::Od,
        zone_size: zone,
        cleaning,
        idle_before_cleaning: 2_170_000_000,
        volatile_cache: vc,
        store_data: false,
        ..DmConfig::default()
    }
}

fn test_device_hours(r: &Report, id: u8) -> f64 {
    r.tests.iter().find(|t| t.id == id).unwrap().device_s / 3600.0
}

fn within(got: Option<u64>, want: u64, tol: f64) -> bool {
    got.is_some_and(|g| (g as f64 - want as f64).abs() <= tol * want as f64)
}

#[test]
fn a_lazy_drive_whose_zones_the_band_test_filled_still_shows_its_band() {
    // 0.68 TB in 64 GiB zones with 24.8 GiB of 12 MiB spare bands: ~190 spares a zone, fewer
    // than TEST 11's region of bands takes, so its cleaning fill starts with a third of its
    // writes merging and the rest of the cache filling only triples that.
    let cfg = fully_associative(
        679_000_000_000,
        12 * MIB,
        26_652_704_768,
        64 * GIB,
        Cleaning::Lazy,
        false,
    );
    let r = common::probe_dm(&cfg, "1,3,11,14");
    let bands: Vec<u64> = r.band_size_bytes.iter().map(|b| b.bytes).collect();
    assert!(!bands.is_empty(), "{:?}", r.property("band_size_bytes"));
    for b in bands {
        assert!(within(Some(b), 12 * MIB, 0.05), "band {b}");
    }
    let h = test_device_hours(&r, 11);
    assert!(h < 24.0, "TEST 11 took {h:.1} h of the drive's clock");
}

#[test]
fn a_drive_of_a_few_spare_bands_a_zone_is_counted_not_filled() {
    // 0.55 TB in 16 GiB zones with 4.8 GiB of 50 MiB spare bands: three spares a zone, one
    // kept free to merge into, so the first batch of TEST 8's fill takes every unit.
    let cfg = fully_associative(
        549_000_000_000,
        50 * MIB,
        5_117_050_880,
        16 * GIB,
        Cleaning::Aggressive,
        true,
    );
    let Truth { raw, usable } = Truth::of(&cfg);
    let r = common::probe_dm(&cfg, "1,2,3,11,12,14,8");
    let h = test_device_hours(&r, 8);
    assert!(h < 24.0, "TEST 8 took {h:.1} h of the drive's clock");
    let t8 = r.tests.iter().find(|t| t.id == 8).unwrap();
    assert!(t8.verdict.contains("units"), "{}", t8.verdict);
    // Usable: the spares less the one a zone keeps free; raw: all of them.
    assert!(
        within(r.cache.usable_bytes, usable, 0.15),
        "usable {:?} against {usable}",
        r.cache.usable_bytes
    );
    assert!(
        within(r.cache.raw_bytes, raw, 0.15),
        "raw {:?} against {raw}",
        r.cache.raw_bytes
    );
}

#[test]
fn a_lazy_set_associative_drive_shows_its_band_before_every_set_is_cleaned() {
    // 2.5 TB, 4.8 GiB of cache spread over the disk, 43 MiB bands, lazy cleaning.
    let cfg = DmConfig {
        capacity: 2_518_000_000_000,
        stl: StlKind::SetAssociative,
        band_size: 45_088_768,
        cache_size: 5_129_633_792,
        cache_location: CacheLocation::Distributed,
        cleaning: Cleaning::Lazy,
        store_data: false,
        seed: 19,
        ..DmConfig::default()
    };
    let r = common::probe_dm(&cfg, "1,3,11,14");
    let bands: Vec<u64> = r.band_size_bytes.iter().map(|b| b.bytes).collect();
    assert_eq!(bands.len(), 3, "{:?}", r.property("band_size_bytes"));
    for b in bands {
        assert!(within(Some(b), 45_088_768, 0.05), "band {b}");
    }
}
