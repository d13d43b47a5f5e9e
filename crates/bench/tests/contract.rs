//! `tegula bench paper smrdb` at the tiny scale through the library: every figure runs, the
//! markdown names each one, `results.json` carries the JSON schema of `tegula bench db`, and
//! every plot is an SVG; plus the option checks and the JSON key names the issue fixes. (The
//! command line's flags are tested where they are parsed, in the `tegula` binary.)
#![allow(clippy::unwrap_used)]

#[cfg(not(feature = "compare"))]
use std::io::Write as _; // skips are written past the test harness's capture, so CI shows them

use tegula_bench::paper::smrdb::{self, Scale, SmrdbOptions};
use tegula_bench::{EngineKind, EngineSetup, Quiet};

/// The keys the issue's JSON contract names, exactly as spelled there, plus p99.9.
const ISSUE_KEYS: [&str; 11] = [
    "engine",
    "benchmark",
    "ops",
    "ops_per_sec",
    "mb_per_sec",
    "p50_us",
    "p99_us",
    "device_seconds",
    "device_ops_per_sec",
    "write_amp",
    "p999_us",
];

#[cfg(feature = "smrdb")]
#[test]
fn paper_smrdb_at_tiny_scale_writes_every_figure_json_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let opts = SmrdbOptions {
        scale: Scale::Tiny,
        out: dir.path().to_path_buf(),
        ..SmrdbOptions::default()
    };
    let report = smrdb::run(&opts, &Quiet).unwrap();
    let results = report.results;
    assert!(!results.is_empty());
    assert_eq!(report.tables.len(), 2);
    assert_eq!(report.plots.len(), 12);

    let md = std::fs::read_to_string(dir.path().join("paper-smrdb.md")).unwrap();
    for fig in [
        "Figure 7",
        "Figure 8",
        "Figures 9 and 10",
        "Figure 11",
        "Figure 12",
        "Figure 13",
        "Figures 14 and 15",
    ] {
        assert!(
            md.contains(&format!("## {fig}")),
            "{fig} missing from the table"
        );
    }
    for p in ["hm-smr", "cmr-7200"] {
        assert!(md.contains(&format!("| {p} |")), "{p} missing");
    }

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap())
            .unwrap();
    let arr = json.as_array().unwrap();
    assert_eq!(arr.len(), results.len());
    for o in arr {
        for k in ISSUE_KEYS {
            assert!(o.get(k).is_some(), "key {k} missing in {o}");
        }
        // Every paper run is on an emulated drive: device time is never null.
        assert!(o["device_seconds"].as_f64().is_some(), "{}", o["benchmark"]);
    }
    // Sequential puts: one run per value size, sync interval (and one without the log) and
    // drive.
    let seq = arr
        .iter()
        .filter(|o| o["benchmark"].as_str().unwrap().starts_with("fig08-"))
        .count();
    assert_eq!(seq, 2 * 2 * 6);
    // Random puts on both organisations compacted something.
    for e in ["tegula", "tegula-loc"] {
        let r = arr
            .iter()
            .find(|o| o["benchmark"] == format!("fig09-hm-smr-{e}-fillrandom"))
            .unwrap();
        assert!(r["compaction_bytes"].as_u64().unwrap() > 0, "{e}");
        assert!(r["write_amp"].as_f64().unwrap() > 1.0, "{e}");
    }

    for svg in [
        "fig07-raw-seq-write.svg",
        "fig08-seq-put-sync.svg",
        "fig09-random-put.svg",
        "fig09-readseq-after-random-put.svg",
        "fig10-compaction-bytes.svg",
        "fig10-compaction-time.svg",
        "fig11-l0-trigger.svg",
        "fig12-random-read.svg",
        "fig13-band-size.svg",
        "fig14-ycsb.svg",
        "fig15-ycsb-load-over-time.svg",
    ] {
        let s = std::fs::read_to_string(dir.path().join(svg)).unwrap();
        assert!(
            s.starts_with("<svg") || s.contains("<svg"),
            "{svg} is not SVG"
        );
    }
}

#[test]
fn paper_options_are_checked_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let opts = SmrdbOptions {
        scale: Scale::Tiny,
        out: dir.path().to_path_buf(),
        profiles: vec!["hm-smr".into()],
        figures: Some(vec![16]),
        seed: 1,
        ..SmrdbOptions::default()
    };
    let e = smrdb::run(&opts, &Quiet).unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(
        e.to_string().contains("16"),
        "figure 16 does not exist: {e}"
    );
    let opts = SmrdbOptions {
        profiles: vec!["no-such-drive".into()],
        figures: None,
        ..opts
    };
    let e = smrdb::run(&opts, &Quiet).unwrap_err();
    assert!(
        e.to_string().contains("no-such-drive"),
        "unknown profile: {e}"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing was written"
    );
}

#[cfg(not(feature = "compare"))]
#[test]
fn compare_engines_are_skipped_without_the_feature() {
    let _ =
        writeln!(std::io::stderr(),
        "SKIPPED: RocksDB and LevelDB tests need `cargo test -p tegula-bench --features compare` \
         (Debian librocksdb-dev, libleveldb-dev)"
    );
    let setup = EngineSetup {
        engines: vec![EngineKind::Leveldb],
        ..EngineSetup::default()
    };
    let e = setup.factories().unwrap_err();
    assert!(e.is_unavailable(), "{e}");
    assert!(e.to_string().contains("compare"), "{e}");
}

/// The contract's side-by-side run on all four engines at a tiny `--num`: one JSON object per
/// engine and benchmark, tegula's with device figures and the others' with null there.
#[cfg(all(feature = "compare", feature = "smrdb"))]
#[test]
fn the_side_by_side_run_covers_every_engine_in_one_json() {
    use tegula_bench::{DbBenchConfig, Lineup};
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let setup = EngineSetup {
        engines: EngineKind::parse_list("tegula,tegula-loc,rocksdb,leveldb").unwrap(),
        capacity: 4 << 30,
        db: Some(dir.path().join("db")),
        ..EngineSetup::default()
    };
    let cfg = DbBenchConfig {
        benchmarks: ["fillseq", "fillrandom", "readrandom", "readseq"]
            .map(String::from)
            .to_vec(),
        num: 2000,
        value_size: 100,
        ..DbBenchConfig::default()
    };
    let lineup = Lineup::for_db(&setup, &cfg).unwrap();
    assert_eq!(lineup.engines(), setup.engines);
    let results = lineup.run_db(&cfg, &Quiet).unwrap();
    tegula_bench::report::write_json(&json, &results).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 16);
    for o in arr {
        for k in ISSUE_KEYS {
            assert!(o.get(k).is_some(), "key {k} missing in {o}");
        }
        let on_device = o["engine"].as_str().unwrap().starts_with("tegula");
        assert_eq!(o["device_seconds"].is_null(), !on_device, "{o}");
        if o["benchmark"] == "readrandom" {
            // Every engine saw the same fillrandom keys and reads.
            assert_eq!(o["found"], arr[2]["found"], "{}", o["engine"]);
        }
    }
}
