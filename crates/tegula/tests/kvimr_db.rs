//! KVIMR as a product, end to end with the real binary: `tegula db create` on a raw
//! interlaced (`imr`) image makes a KVIMR store with SMRDB-LOC on it, and every `db` command,
//! `bench db`, `bench ycsb` and `serve resp` reopen it with the options stored at create; `db
//! stats` shows the store's figures over its life; a drive-managed IMR image is refused with
//! the reason. (`serve resp` on a KVIMR image, and 30 `kill -9`s of it, are in
//! `serve_resp/kvimr.rs`.)
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

/// A raw `imr` image of `capacity` in `dir`.
fn imr(dir: &Path, name: &str, capacity: &str) -> String {
    image(dir, name, "imr", capacity, &[])
}

/// The `kvimr` object of `db stats --json`.
fn kvimr_stats(img: &str) -> Value {
    let v = ok_json(&["db", "stats", img, "--json"]);
    assert!(v["kvimr"].is_object(), "no KVIMR figures: {v}");
    v["kvimr"].clone()
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn db_commands_keep_a_database_on_a_kvimr_store_of_an_imr_image() {
    let dir = tempfile::tempdir().unwrap();
    let img = imr(dir.path(), "imr.img", "1GiB");
    let out = ok_out(&["db", "create", &img]);
    assert!(
        out.contains("SMRDB-Loc database on a KVIMR store")
            && out.contains("compaction-aware allocation, merged read-modify-write"),
        "{out}"
    );
    ok(&["db", "put", &img, "k", "v"]);
    assert_eq!(ok_out(&["db", "get", &img, "k"]), "v\n");
    let after_one = n(&kvimr_stats(&img)["lifetime"]["syncs"]);
    ok_in(
        &["db", "put", &img, "big", "-x"],
        Some(&vec![b'z'; 100_000]),
    );
    ok(&["db", "put", &img, "gone", "soon"]);
    ok(&["db", "del", &img, "gone"]);
    // Each command reopened the store (recovery, then SMRDB's); nothing was lost.
    let scan = ok_out(&["db", "scan", &img]);
    let keys: Vec<&str> = scan
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(keys, ["big", "k"], "{scan}");
    assert_eq!(ok_out(&["db", "get", &img, "big"]).len(), 100_001);
    fails_with(&["db", "get", &img, "gone"], "not found");
    ok(&["db", "compact", &img]);
    assert!(ok_out(&["db", "check", &img]).ends_with("ok\n"));
    let text = ok_out(&["db", "stats", &img]);
    for line in [
        "kvimr store         compaction-aware allocation, merged read-modify-write, SSTables of 16.00 MiB",
        "space usage",
        "read-modify-writes",
        "top-track rewrites",
        "syncs",
        "placement L",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
    let k = kvimr_stats(&img);
    assert_eq!(k["policy"], "compaction-aware");
    assert_eq!(k["rmw"], "merged");
    assert_eq!(n(&k["sstable_bytes"]), 16 << 20);
    // The counters are the store's life, kept on the image across commands.
    let l = &k["lifetime"];
    assert!(n(&l["syncs"]) > after_one, "{l}");
    assert!(n(&l["bytes_appended"]) > 100_000, "{l}");
    assert!(n(&k["data_files"]) >= 1, "{k}");
    // A second create is refused; a forced one with other settings keeps them on the image.
    fails_with(&["db", "create", &img], "already holds a database");
    let out = ok_out(&[
        "db",
        "create",
        &img,
        "--force",
        "--policy",
        "three-phase",
        "--rmw",
        "naive",
        "--sstable-size",
        "8MiB",
    ]);
    assert!(out.contains("three-phase allocation, naive"), "{out}");
    fails_with(&["db", "get", &img, "k"], "not found");
    ok(&["db", "put", &img, "k", "again"]);
    let k = kvimr_stats(&img);
    assert_eq!(
        (k["policy"].as_str(), k["rmw"].as_str()),
        (Some("three-phase"), Some("naive"))
    );
    assert_eq!(n(&k["sstable_bytes"]), 8 << 20);
    // The KVIMR settings apply to imr images only.
    let smr = image(dir.path(), "smr.img", "hm-smr", "4GiB", &[]);
    fails_with(
        &["db", "create", &smr, "--policy", "seq"],
        "apply to an interlaced (imr) disk image",
    );
    // A raw imr image holds no database until `db create`.
    let raw = imr(dir.path(), "raw.img", "1GiB");
    fails_with(&["db", "put", &raw, "a", "b"], "run `tegula db create");
}

#[test]
fn a_full_store_runs_merged_read_modify_writes_under_commands_from_outside() {
    let dir = tempfile::tempdir().unwrap();
    let img = imr(dir.path(), "small.img", "256MiB");
    ok(&["db", "create", &img, "--sstable-size", "2MiB"]);
    // Past half the data tracks, compaction-aware allocation puts the deep levels' SSTables
    // next to valid tops: merged read-modify-writes. Compactions run inline: on a background
    // thread, how far they keep up with the writer depends on the machine's load (a loaded CI
    // run left 46 files in L0 and no deep SSTable beside a top), and so would the placement.
    ok(&[
        "bench",
        "db",
        "--disk",
        &img,
        "--engine",
        "tegula-loc",
        "--use_existing_db",
        "--benchmarks",
        "fillrandom",
        "--num",
        "130000",
        "--value_size",
        "1000",
        "--smrdb_option",
        "background_compaction=false",
    ]);
    let k = kvimr_stats(&img);
    let l = &k["lifetime"];
    assert!(k["usage"].as_f64().unwrap() > 0.5, "{k}");
    assert!(n(&l["rmw_ops"]) > 0 && n(&l["top_rewrites"]) > 0, "{l}");
    assert!(n(&l["rmw_syncs"]) > 0, "{l}");
    assert!(ok_out(&["db", "check", &img]).ends_with("ok\n"));
}

#[test]
fn bench_db_and_ycsb_run_on_an_imr_image() {
    let dir = tempfile::tempdir().unwrap();
    let img = imr(dir.path(), "imr.img", "1GiB");
    ok(&["db", "create", &img]);
    ok(&["db", "put", &img, "keep", "me"]);
    // SMRDB-SOC is refused before the image is recreated.
    fails_with(
        &[
            "bench",
            "db",
            "--disk",
            &img,
            "--force",
            "--benchmarks",
            "fillseq",
            "--num",
            "100",
        ],
        "--engine tegula-loc",
    );
    assert_eq!(ok_out(&["db", "get", &img, "keep"]), "me\n");
    // Without --force a fresh benchmark would destroy the database.
    fails_with(
        &[
            "bench",
            "ycsb",
            "--disk",
            &img,
            "--engine",
            "tegula-loc",
            "--workload",
            "a",
        ],
        "--force",
    );
    let out = ok_out(&[
        "bench",
        "ycsb",
        "--disk",
        &img,
        "--engine",
        "tegula-loc",
        "--force",
        "--workload",
        "a",
        "--recordcount",
        "3000",
        "--operationcount",
        "3000",
    ]);
    assert!(out.contains("ycsb-a-run"), "{out}");
    // The fresh start kept the store's format; the benchmark's database checks out.
    assert!(ok_out(&["db", "check", &img]).ends_with("ok\n"));
    assert_eq!(kvimr_stats(&img)["policy"], "compaction-aware");
    // On a raw imr image, the benchmark formats the store itself.
    let raw = imr(dir.path(), "raw.img", "1GiB");
    let out = ok_out(&[
        "bench",
        "db",
        "--disk",
        &raw,
        "--engine",
        "tegula-loc",
        "--benchmarks",
        "fillrandom,readrandom",
        "--num",
        "5000",
    ]);
    assert!(out.contains("readrandom"), "{out}");
    assert_eq!(kvimr_stats(&raw)["rmw"], "merged");
}

#[test]
fn a_drive_managed_imr_image_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let dm = image(dir.path(), "dm.img", "imr", "1GiB", &["--drive-managed"]);
    for force in [false, true] {
        let mut args = vec!["db", "create", dm.as_str()];
        if force {
            args.push("--force");
        }
        let e = fails_with(&args, "is a drive-managed IMR drive");
        assert!(e.contains("a block device without zones"), "{e}");
        assert!(
            e.contains("create the image without --drive-managed"),
            "{e}"
        );
    }
    fails_with(
        &["db", "put", &dm, "a", "b"],
        "a block device without zones",
    );
    // Still the drive-managed drive it was.
    let info = ok_out(&["disk", "info", &dm]);
    assert!(info.contains("drive-managed:"), "{info}");
}
