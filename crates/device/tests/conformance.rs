//! The zone-rule conformance checks (`tegula_device::conformance`, also run by `tegula disk
//! conformance` on real devices) against every zoned device the layer emulates: the host-managed
//! and host-aware profiles, the ZNS profile (zone capacity below the zone size, open and active
//! limits, no conventional zones), a banded file and zone files.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use tegula_device::conformance::{self, Outcome};
use tegula_device::{
    profile, BlockDevice, Disk, HostBanded, HostBandedOptions, ZoneFiles, ZoneFilesOptions,
    ZonedDevice,
};

/// Runs every check; fails on any failure; returns the names of those that passed.
fn passes(dev: &dyn ZonedDevice) -> Vec<&'static str> {
    let checks = conformance::run(dev, |_| {});
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| c.failed())
        .map(|c| format!("{}: {:?}", c.name, c.outcome))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    checks
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Passed(_)))
        .map(|c| c.name)
        .collect()
}

fn tiny_zns(max_open: u32, max_active: u32) -> Disk {
    let mut c = profile("zns").unwrap();
    c.set("capacity", "\"48MiB\"").unwrap();
    c.set("zones.zone_size", "\"1MiB\"").unwrap();
    c.set("zones.zone_capacity", "\"768KiB\"").unwrap();
    c.zones.max_open = max_open;
    c.zones.max_active = max_active;
    c.cache.size = 256 << 10;
    Disk::in_memory(c).unwrap()
}

#[test]
fn the_host_managed_profile_keeps_every_rule() {
    let p = passes(&tiny_hm(64, 8));
    for want in [
        "report-covers-device",
        "unaligned-write",
        "zone-capacity",
        "explicit-open-limit",
        "conventional-zones",
        "zone-state-machine",
    ] {
        assert!(p.contains(&want), "{want} not passed: {p:?}");
    }
    assert!(!p.contains(&"active-limit"), "hm-smr has no active limit");
}

#[test]
fn the_zns_profile_keeps_every_rule_with_capacity_and_active_limits() {
    let d = tiny_zns(4, 4);
    let info = d.info();
    assert_eq!(info.conventional_zones, 0);
    assert_eq!(info.zone_capacity_sectors, 192);
    assert_eq!(info.zone_sectors, 256);
    let p = passes(&d);
    for want in [
        "zone-capacity",
        "active-limit",
        "explicit-open-limit",
        "unaligned-write",
    ] {
        assert!(p.contains(&want), "{want} not passed: {p:?}");
    }
    // An open limit below the active limit: implicit opens close zones, explicit ones fail
    // as too many open.
    let p = passes(&tiny_zns(2, 6));
    assert!(p.contains(&"explicit-open-limit") && p.contains(&"active-limit"));
}

#[test]
fn the_full_size_zns_profile_reports_capacity_below_the_zone_size() {
    let c = profile("zns").unwrap();
    assert_eq!(c.zone_capacity_sectors() * 4096, 48 << 20);
    assert_eq!(c.zone_sectors() * 4096, 64 << 20);
    assert_eq!(c.conventional_zones(), 0);
    assert_eq!((c.zones.max_open, c.zones.max_active), (14, 14));
}

#[test]
fn a_host_aware_profile_keeps_the_rules_that_apply_to_it() {
    let mut c = tiny_hm_config(32, 8);
    c.set("kind", "\"ha-smr\"").unwrap();
    let p = passes(&Disk::in_memory(c).unwrap());
    assert!(p.contains(&"zone-capacity"));
    assert!(!p.contains(&"unaligned-write"));
}

#[test]
fn banded_files_and_zone_files_keep_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let b = HostBanded::open(
        &dir.path().join("banded"),
        HostBandedOptions {
            zone_size: 1 << 20,
            capacity: Some(16 << 20),
            ..HostBandedOptions::default()
        },
    )
    .unwrap();
    let p = passes(&b);
    assert!(p.contains(&"conventional-zones") && p.contains(&"zone-capacity"));
    let zf = ZoneFiles::open(
        &dir.path().join("zf"),
        ZoneFilesOptions {
            zone_size: 1 << 20,
            capacity: Some(16 << 20),
            ..ZoneFilesOptions::default()
        },
    )
    .unwrap();
    let p = passes(&zf);
    assert!(p.contains(&"zone-capacity"));
}
