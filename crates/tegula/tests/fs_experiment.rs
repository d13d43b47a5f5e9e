//! `tegula fs experiment` end to end at a tiny size: both workloads on a 32 MiB drive kept
//! 85 % full, under the thresholds and idle triggers; the table, the JSON and the plots; and
//! a clean failure for a fill level the drive cannot hold.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;

#[test]
fn tiny_experiment_cleans_and_writes_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exp");
    let o = ok(&[
        "fs",
        "experiment",
        "--capacity",
        "32MiB",
        "--zone",
        "2MiB",
        "--tree",
        "1MiB",
        "--volume",
        "1.5",
        "--fill",
        "0.85",
        "--placements",
        "last-used",
        "--cleans",
        "auto",
        "--triggers",
        "thresholds,idle",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    let text = stdout(&o);
    assert!(text.contains("| workload | placement |"), "{text}");
    assert_eq!(text.matches("| last-used | auto |").count(), 4, "{text}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("fs-cleaning.json")).unwrap()).unwrap();
    let runs = v["runs"].as_array().unwrap();
    let want = [
        ("tree", "thresholds"),
        ("tree", "idle"),
        ("overwrite", "thresholds"),
        ("overwrite", "idle"),
    ];
    assert_eq!(runs.len(), want.len());
    for (r, (w, t)) in runs.iter().zip(want) {
        assert_eq!(r["workload"], w);
        assert_eq!(r["trigger"], t);
        let user = r["user_bytes"].as_u64().unwrap();
        let moved = r["moved_bytes"].as_u64().unwrap();
        // 1.5 data capacities of new data on a drive kept 85 % full cannot fit without
        // cleaning: the cleaner ran and moved live data, and freed space.
        assert!(user > 32 << 20, "{r}");
        assert!(r["cleanings"].as_u64().unwrap() > 0, "{r}");
        assert!(
            moved > 0 && r["reclaimed_bytes"].as_u64().unwrap() > 0,
            "{r}"
        );
        let wa = r["write_amplification"].as_f64().unwrap();
        assert!(
            (wa - (user + moved) as f64 / user as f64).abs() < 1e-9,
            "{r}"
        );
        assert!(r["device_secs"].as_f64().unwrap() > r["think_secs"].as_f64().unwrap());
        assert!(r["measured_clean_rate"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["estimated_clean_rate"].as_f64().is_some(), "{r}");
    }
    for f in [
        "fs-cleaning.md",
        "fs-cleaning-tree-wa.svg",
        "fs-cleaning-tree-moved.svg",
        "fs-cleaning-tree-throughput.svg",
        "fs-cleaning-overwrite-throughput.svg",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
}

#[test]
fn experiment_refuses_a_fill_the_drive_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("exp");
    let e = fails(&[
        "fs",
        "experiment",
        "--fill",
        "0.99",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(e.contains("fill 0.99"), "{e}");
}
