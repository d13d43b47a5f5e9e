//! Bounded time (issue 31): a TEST that cannot conclude within its budget of wall or modelled
//! time stops, reports what it could not determine as null with the reason (`why` in the
//! JSON), and the probe goes on with the next test.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use tegula_skylight::{probe, Budget, ProbeOptions, Quiet};
use tegula_stl::{CacheLocation, Cleaning, DmConfig, StlKind};

/// A lazy drive with a huge cache: it never cleans in idle time, and filling its cache takes
/// hundreds of thousands of writes.
fn lazy_huge_cache() -> DmConfig {
    DmConfig {
        capacity: 2_000_000_000_000,
        stl: StlKind::SetAssociative,
        band_size: 40 << 20,
        cache_size: 64 << 30,
        cache_location: CacheLocation::Id,
        cleaning: Cleaning::Lazy,
        store_data: false,
        ..DmConfig::default()
    }
}

fn run(cfg: &DmConfig, tests: &str, budget: Budget) -> tegula_skylight::Report {
    let (dev, _) = common::dm(cfg);
    let mut t = tegula_skylight::BlockTarget::new("drive", dev);
    let opts = ProbeOptions {
        tests: tegula_skylight::parse_tests(tests).unwrap(),
        ..ProbeOptions::default()
    };
    probe::run_within(&mut t, &opts, &budget, &mut Quiet)
        .unwrap()
        .report
}

#[test]
fn a_test_past_its_wall_budget_reports_null_with_the_reason_and_the_probe_goes_on() {
    let budget = Budget {
        test_wall_s: 2.0,
        ..Budget::default()
    };
    let t = std::time::Instant::now();
    let r = run(&lazy_huge_cache(), "1,3,8,14", budget);
    assert!(t.elapsed().as_secs_f64() < 30.0, "{:?}", t.elapsed());
    let t8 = r.tests.iter().find(|t| t.id == 8).unwrap();
    assert!(t8.verdict.contains("budget"), "{}", t8.verdict);
    assert!(t8.wall_s < 4.0, "{}", t8.wall_s);
    let p = r.property("cache.usable_bytes").unwrap();
    assert!(p.value.is_null(), "{p:?}");
    let why = p.why.as_deref().unwrap();
    assert!(why.contains("TEST 8") && why.contains("budget"), "{why}");
    let json = serde_json::to_value(&r).unwrap();
    let row = json["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["key"] == "cache.usable_bytes")
        .unwrap()
        .clone();
    assert!(row["value"].is_null() && row["why"].as_str() == Some(why));
    // The tests before it concluded, and the probe went on after it (TEST 14 runs first in
    // the order, so this checks the cleaning verdict of TEST 3 survived the cut).
    assert_eq!(
        r.cleaning.kind,
        Some(tegula_skylight::report::CleaningKind::Lazy)
    );
    assert!(r.zones.is_some());
}

#[test]
fn a_test_past_its_modelled_time_budget_stops_too() {
    let budget = Budget {
        test_device_s: 600.0,
        ..Budget::default()
    };
    let r = run(&lazy_huge_cache(), "8", budget);
    let t8 = r.tests.iter().find(|t| t.id == 8).unwrap();
    assert!(
        t8.verdict.contains("budget") && t8.verdict.contains("drive's clock"),
        "{}",
        t8.verdict
    );
    assert!(t8.device_s < 600.0 + 300.0, "{}", t8.device_s);
    // A property the cut test did not reach carries the reason too.
    let p = r.property("cache.usable_bytes").unwrap();
    assert!(p.value.is_null() && p.why.as_deref().is_some_and(|w| w.contains("budget")));
}
