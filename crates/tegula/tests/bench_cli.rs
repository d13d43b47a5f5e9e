//! `tegula bench db` and `ycsb` end to end through the binary: db_bench's boolean syntax,
//! refused arguments, a conventional profile banded for SMRDB, and (feature `compare`) the
//! side-by-side run of all four engines in one JSON file.
#![allow(clippy::unwrap_used)]

mod common;

use common::{fails_any as fails, ok_out, run};
use serde_json::Value;

#[test]
fn db_bench_boolean_values_are_accepted() {
    let out = ok_out(&[
        "bench",
        "db",
        "--engine",
        "memory",
        "--num",
        "200",
        "--benchmarks",
        "fillseq,readrandom",
        "--use_existing_db=0",
        "--statistics=0",
        "--sync=false",
        "--no_progress=1",
    ]);
    assert!(out.contains("fillseq      :"), "{out}");
    assert!(out.contains("(200 of 200 found)"), "{out}");
    let e = fails(&["bench", "db", "--engine", "memory", "--sync=sometimes"]);
    assert!(e.contains("sometimes"), "{e}");
}

#[test]
fn zero_threads_are_refused_before_anything_runs() {
    let o = run(&[
        "bench",
        "db",
        "--engine",
        "memory",
        "--threads",
        "0",
        "--num",
        "10",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--threads must be at least 1"), "{e}");
    assert!(o.stdout.is_empty(), "nothing printed before the error");
    let e = fails(&["bench", "ycsb", "--engine", "memory", "--threads", "0"]);
    assert!(e.contains("--threads"), "{e}");
}

#[test]
fn a_conventional_profile_is_banded_for_smrdb() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    ok_out(&[
        "bench",
        "db",
        "--engine",
        "tegula",
        "--profile",
        "cmr-7200",
        "--capacity",
        "4GiB",
        "--num",
        "500",
        "--benchmarks",
        "fillseq,readrandom",
        "--flush",
        "--no_progress",
        "--json",
        json.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 2);
    assert!(arr[0]["device_seconds"].as_f64().unwrap() > 0.0);
    assert!(arr[0]["device_bytes_written"].as_u64().unwrap() >= 500 * 116);
    assert_eq!(arr[1]["found"], 500);
    // Raw shingled media has no zones to band: refused with what to use instead.
    let e = fails(&[
        "bench",
        "db",
        "--engine",
        "tegula",
        "--profile",
        "smr-5900",
        "--num",
        "10",
    ]);
    assert!(e.contains("hm-smr") && e.contains("cmr-7200"), "{e}");
}

/// The contract's side-by-side run on all four engines at a tiny `--num`: one JSON object per
/// engine and benchmark, tegula's with device figures and the others' with null there, and
/// the ratio table on stdout.
#[cfg(feature = "compare")]
#[test]
fn the_side_by_side_run_covers_every_engine_in_one_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = ok_out(&[
        "bench",
        "db",
        "--engine",
        "tegula,tegula-loc,rocksdb,leveldb",
        "--profile",
        "hm-smr",
        "--capacity",
        "4GiB",
        "--db",
        dir.path().join("db").to_str().unwrap(),
        "--benchmarks",
        "fillseq,fillrandom,readrandom,readseq",
        "--num",
        "2000",
        "--value_size",
        "100",
        "--no_progress",
        "--json",
        json.to_str().unwrap(),
    ]);
    for e in ["tegula", "tegula-loc", "rocksdb", "leveldb"] {
        assert!(
            out.contains(&format!(
                "------------------------------------------------ {e}\n"
            )),
            "{out}"
        );
    }
    assert!(out.contains("/tegula"), "ratio table: {out}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 16);
    for o in arr {
        let on_device = o["engine"].as_str().unwrap().starts_with("tegula");
        assert_eq!(o["device_seconds"].is_null(), !on_device, "{o}");
        if o["benchmark"] == "readrandom" {
            assert_eq!(o["found"], arr[2]["found"], "{}", o["engine"]);
        }
    }
}
