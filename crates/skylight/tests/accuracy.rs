//! End-to-end accuracy: the prober against drives whose configuration it never sees, checked
//! against that configuration. The default run probes two small drives (one drive-managed,
//! one conventional) with a few tests; `TEGULA_PROBE_MATRIX=1` runs every test on the shipped
//! drives (Skylight's three emulated drives, the 5 and 8 TB Seagates) and on a generated
//! matrix of random drive-managed configurations and conventional drives, printing the
//! accuracy table of `docs/guides/probe.md`:
//!
//! `TEGULA_PROBE_MATRIX=1 cargo test --release -p tegula-skylight --test accuracy -- --nocapture --test-threads 1`
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{checks_cmr, checks_dm, probe_cmr, probe_dm, table};
use rand::{Rng, SeedableRng};
use std::io::Write as _;
use tegula_device::DiskConfig;
use tegula_stl::{CacheLocation as Loc, CacheMedia as Med, Cleaning, DmConfig, DmDrive, StlKind};

/// A random drive-managed configuration (every STL, cache medium and location, both cleaning
/// types and idle delays, bands of 8-64 MiB, cache and map sizes, entry quanta, volatile
/// cache on and off).
fn random_dm(rng: &mut rand::rngs::SmallRng, i: usize) -> DmConfig {
    loop {
        let stl = [
            StlKind::Journal,
            StlKind::SetAssociative,
            StlKind::FullyAssociative,
        ][i % 3];
        let mib = 1u64 << 20;
        let gib = 1u64 << 30;
        let mut c = DmConfig {
            media: if rng.gen_bool(0.7) {
                "smr-5900".into()
            } else {
                "hm-smr".into()
            },
            capacity: rng.gen_range(200..1000) * gib,
            stl,
            band_size: rng.gen_range(8..=64) * mib,
            cleaning: if rng.gen_bool(0.5) {
                Cleaning::Aggressive
            } else {
                Cleaning::Lazy
            },
            idle_before_cleaning: rng.gen_range(5..=40) * 100_000_000,
            volatile_cache: rng.gen_bool(0.3),
            store_data: false,
            seed: i as u64,
            ..DmConfig::default()
        };
        match stl {
            StlKind::Journal => {
                if rng.gen_bool(0.25) {
                    c.band_size = 0;
                    c.band_tracks = rng.gen_range(8..=24);
                }
                c.cache_location = [Loc::Od, Loc::Md, Loc::Id][rng.gen_range(0..3)];
                c.cache_size = rng.gen_range(8..=40) * gib;
                c.map_entries = rng.gen_range(20..=250) * 1000;
                c.journal_entry_min = [512 * 1024, mib, 2 * mib][rng.gen_range(0..3)];
                c.journal_entry_quantum = [512 * 1024, mib][rng.gen_range(0..2)];
                c.journal_entry_max =
                    c.journal_entry_min + c.journal_entry_quantum * rng.gen_range(3..=6);
                c.journal_oob = rng.gen_range(2..=8) * 512 * 1024;
                c.map_merge_every = [0, 120, 240, 500][rng.gen_range(0..4)];
            }
            StlKind::SetAssociative => {
                if rng.gen_bool(0.35) {
                    c.cache_media = Med::Flash;
                } else {
                    c.cache_location = [Loc::Od, Loc::Md, Loc::Id][rng.gen_range(0..3)];
                }
                c.cache_size = rng.gen_range(2..=10) * gib;
            }
            StlKind::FullyAssociative => {
                c.mapping = tegula_stl::Mapping::Dynamic;
                c.cache_location = Loc::Distributed;
                c.zone_size = rng.gen_range(8..=40) * gib;
                c.cache_size = rng.gen_range(4..=16) * gib;
            }
        }
        if c.validate().is_ok() && DmDrive::new(c.clone()).is_ok() {
            return c;
        }
    }
}

fn cmr_configs() -> Vec<(String, DiskConfig)> {
    let mut out = Vec::new();
    for (rpm, heads, cap) in [
        (7200u32, 10u32, 0u64),
        (5400, 6, 500),
        (10000, 4, 300),
        (15000, 8, 600),
        (5900, 12, 1000),
    ] {
        let mut c = tegula_device::profile("cmr-7200").unwrap();
        c.store_data = false;
        if cap > 0 {
            c.capacity = cap * 1_000_000_000;
        }
        c.media.rpm = rpm;
        c.media.heads = heads;
        if c.validate().is_ok() {
            out.push((
                format!(
                    "cmr {rpm} rpm, {heads} heads, {} GB",
                    c.capacity / 1_000_000_000
                ),
                c,
            ));
        }
    }
    out
}

fn describe(c: &DmConfig) -> String {
    format!(
        "{:?} {} {:?}/{:?} {:.0} GiB, band {} MiB, {:?} {:.1}s, vc {}, {} GB",
        c.stl,
        c.media,
        c.cache_media,
        c.cache_location,
        c.cache_size as f64 / (1u64 << 30) as f64,
        c.band_size >> 20,
        c.cleaning,
        c.idle_before_cleaning as f64 / 1e9,
        c.volatile_cache,
        c.capacity / 1_000_000_000
    )
}

fn matrix() -> bool {
    std::env::var("TEGULA_PROBE_MATRIX").is_ok_and(|v| v == "1")
}

#[test]
fn a_small_journal_drive_is_recognised_in_tests_1_to_3() {
    let cfg = DmConfig {
        capacity: 200 << 30,
        cache_size: 8 << 30,
        map_entries: 20_000,
        cache_location: Loc::Id,
        idle_before_cleaning: 1_500_000_000,
        store_data: false,
        ..DmConfig::default()
    };
    let r = probe_dm(&cfg, "1-3");
    let cs = checks_dm(&cfg, &r);
    for p in [
        "drive_type",
        "cache.media",
        "cache.layout",
        "cache.location",
        "cleaning.kind",
        "cleaning.idle_delay_s",
        "journal.entry_min_bytes",
        "journal.entry_quantum_bytes",
        "journal.map_merge_every",
    ] {
        let c = cs.iter().find(|c| c.property == p).unwrap();
        assert!(c.right, "{p}: expected {} got {}", c.expected, c.got);
    }
    // Tests not run leave their properties null, with a reason.
    assert!(r.cache.usable_bytes.is_none());
    let p = r.property("cache.usable_bytes").unwrap();
    assert!(p.value.is_null() && p.evidence.contains("not run"), "{p:?}");
}

#[test]
fn a_conventional_drive_has_no_cache_and_shows_its_surfaces() {
    let mut cfg = tegula_device::profile("cmr-7200").unwrap();
    cfg.capacity = 200_000_000_000;
    cfg.store_data = false;
    let r = probe_cmr(&cfg, "1,2,14");
    for c in checks_cmr(&cfg, &r) {
        assert!(
            c.right,
            "{}: expected {} got {}",
            c.property, c.expected, c.got
        );
    }
    let p = r.property("cache.location").unwrap();
    assert!(
        p.value.is_null() && p.evidence.contains("conventional"),
        "{p:?}"
    );
}

#[test]
fn shipped_drives_every_test() {
    if !matrix() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: set TEGULA_PROBE_MATRIX=1 (release build) for the shipped drives"
        );
        return;
    }
    let mut rows = Vec::new();
    for name in [
        "seagate-5tb",
        "seagate-8tb",
        "emulated-smr-1",
        "emulated-smr-2",
        "emulated-smr-3",
    ] {
        let cfg = tegula_stl::dm_profile(name).unwrap().unwrap();
        let t = std::time::Instant::now();
        let r = probe_dm(&cfg, "");
        println!("{name}: {:.1} s wall", t.elapsed().as_secs_f64());
        rows.push((name.to_string(), checks_dm(&cfg, &r)));
    }
    let (right, _, total) = table(&rows);
    // Issue 31: the shipped drives keep every field (89 of 89); the table above names any miss.
    assert_eq!(
        right, total,
        "{right} of {total} right on the shipped drives"
    );
}

#[test]
fn generated_matrix_of_drives() {
    if !matrix() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: set TEGULA_PROBE_MATRIX=1 (release build) for the matrix of 33 drives"
        );
        return;
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(2015);
    let mut rows = Vec::new();
    for i in 0..33 {
        let cfg = random_dm(&mut rng, i);
        let t = std::time::Instant::now();
        let r = probe_dm(&cfg, "");
        let name = format!("#{i} {}", describe(&cfg));
        println!("{name}: {:.1} s wall", t.elapsed().as_secs_f64());
        rows.push((name, checks_dm(&cfg, &r)));
    }
    for (name, cfg) in cmr_configs() {
        let r = probe_cmr(&cfg, "");
        rows.push((name, checks_cmr(&cfg, &r)));
    }
    let (right, answered, total) = table(&rows);
    // Wrong answers (not nulls) are what the rules forbid most.
    assert!(
        answered - right <= total / 10,
        "{} wrong of {total}",
        answered - right
    );
    assert!(right * 100 >= total * 80, "{right} of {total}");
}
