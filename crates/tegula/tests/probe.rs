//! End-to-end tests of `tegula probe`: a small drive-managed configuration probed in virtual
//! time (report, JSON keys, plots); in wall time, a conventional image behind `serve nbd
//! --paced` (a CMR drive, no false SMR finding) and a file in memory (not a disk at all);
//! and the refusals (a plain file without `--destroys-data`, a missing file without
//! `--size`, a bad test list).

mod common;

use common::{fails_any as fails, image, ok, wait_for};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// A small journal drive (200 GB, an 8 GiB cache at the ID), metadata only.
const SMALL: &str = r#"
kind = "dm-smr"
media = "smr-5900"
capacity = "200GB"
stl = "journal"
cache_media = "disk"
cache_size = "8GiB"
cache_location = "id"
cleaning = "aggressive"
idle_before_cleaning = "1500ms"
map_entries = 20000
store_data = false
"#;

#[test]
fn probe_of_a_configuration_reports_table_json_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("small.toml");
    std::fs::write(&cfg, SMALL).unwrap();
    let json = dir.path().join("out.json");
    let plots = dir.path().join("plots");
    let o = ok(&[
        "probe",
        cfg.to_str().unwrap(),
        "--tests",
        "1-3",
        "--json",
        json.to_str().unwrap(),
        "--plots",
        plots.to_str().unwrap(),
    ]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("drive_type"), "{table}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["drive_type"], "smr");
    assert_eq!(r["cache"]["media"], "disk");
    assert_eq!(r["cache"]["location"], "id");
    assert_eq!(r["cleaning"]["kind"], "aggressive");
    for key in [
        "journal",
        "band_size_bytes",
        "mapping",
        "circular_log",
        "volatile_cache",
        "zones",
        "tests",
    ] {
        assert!(r.get(key).is_some(), "no {key} in the JSON");
    }
    let ids: Vec<u64> = r["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_u64())
        .collect();
    assert_eq!(ids, vec![1, 2, 3]);
    // Tests not run leave their properties null.
    assert!(r["cache"]["usable_bytes"].is_null());
    let svgs = std::fs::read_dir(&plots)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "svg"))
        })
        .count();
    assert!(svgs >= 3, "{svgs} plots");
}

#[test]
fn a_plain_file_needs_destroys_data_and_is_left_alone_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("precious");
    std::fs::write(&f, b"keep me").unwrap();
    let e = fails(&["probe", f.to_str().unwrap(), "--tests", "1"]);
    assert!(e.contains("--destroys-data"), "{e}");
    assert_eq!(std::fs::read(&f).unwrap(), b"keep me");
}

#[test]
fn a_missing_file_needs_size() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("new");
    let e = fails(&["probe", f.to_str().unwrap(), "--destroys-data"]);
    assert!(e.contains("--size"), "{e}");
    assert!(!Path::new(&f).exists());
}

#[test]
fn a_bad_test_list_is_refused() {
    fails(&["probe", "emulated-smr-1", "--tests", "99"]);
}

/// TEST 1 over `target`, its JSON report.
fn probe_test1(target: &str, json: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "probe",
        target,
        "--tests",
        "1",
        "--json",
        json.to_str().expect("a UTF-8 path"),
    ];
    args.extend_from_slice(extra);
    ok(&args);
    let text = std::fs::read_to_string(json).expect("the probe's JSON report");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn a_conventional_drive_over_nbd_is_cmr_with_no_smr_finding() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "cmr.img", "cmr-7200", "64GiB", &[]);
    let sock = dir.path().join("nbd.sock");
    let mut server = Command::new(env!("CARGO_BIN_EXE_tegula"))
        .args(["serve", "nbd", "--paced", "--socket"])
        .arg(&sock)
        .arg(&img)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn tegula serve nbd");
    wait_for(&sock, 120);
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let r = probe_test1(&uri, &dir.path().join("nbd.json"), &[]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(r["drive_type"], "cmr", "{r}");
    assert!(r["cache"]["media"].is_null(), "{r}");
    assert!(r["journal"]["entry_min_bytes"].is_null(), "{r}");
}

#[test]
fn a_file_in_memory_is_not_taken_for_a_disk() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("ram.img");
    std::fs::File::create(&f)
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    let r = probe_test1(
        f.to_str().unwrap(),
        &dir.path().join("file.json"),
        &["--destroys-data"],
    );
    assert!(r["drive_type"].is_null(), "{r}");
    let why = r.to_string();
    assert!(why.contains("not a magnetic disk"), "{why}");
}
