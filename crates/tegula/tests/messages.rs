//! Messages a user meets on common mistakes say what is wrong in the user's terms (issue 35's
//! list): ranges past the end, profiles the prober cannot take, flags a command does not
//! have, units in headers, warnings not called clean, sizes with units, output trees.

mod common;
use common::*;

#[test]
fn tracks_past_the_last_one_fail_naming_the_range() {
    let d = tempfile::tempdir().unwrap();
    let img = image(d.path(), "imr.img", "imr", "1GiB", &[]);
    let e = fails(&["disk", "tracks", &img, "--from", "999999"]);
    assert!(e.contains("--from 999999 is past the last track"), "{e}");
    assert!(e.contains("tracks, 0 to"), "{e}");
}

#[test]
fn the_prober_takes_the_cmr_profile_and_explains_host_managed_ones() {
    let out = ok_out(&["probe", "cmr-7200", "--tests", "1"]);
    assert!(out.contains("CMR"), "{out}");
    let e = fails(&["probe", "hm-smr"]);
    assert!(e.contains("built-in hm-smr profile"), "{e}");
    assert!(!e.contains("not a built-in profile"), "{e}");
}

#[test]
fn the_banded_hint_is_given_only_where_the_flag_exists() {
    let d = tempfile::tempdir().unwrap();
    let plain = d.path().join("plain");
    std::fs::write(&plain, b"x").unwrap();
    let p = plain.to_str().unwrap();
    let e = fails(&["disk", "report", p]);
    assert!(e.contains("this one does not"), "{e}");
    let e = fails(&["db", "get", p, "k"]);
    assert!(e.contains("give --banded ZONE_SIZE"), "{e}");
}

#[test]
fn the_report_header_speaks_the_unit_of_the_table() {
    let d = tempfile::tempdir().unwrap();
    let img = image(d.path(), "z.img", "zns", "1GiB", &[]);
    let out = ok_out(&["disk", "report", &img, "--unit", "sector", "--count", "1"]);
    let head = out.lines().next().unwrap_or_default();
    assert!(head.contains("zones of 131072 512-byte sectors"), "{head}");
    assert!(head.contains("capacity of 98304 (48.00 MiB)"), "{head}");
    let out = ok_out(&["disk", "report", &img, "--count", "1"]);
    let head = out.lines().next().unwrap_or_default();
    assert!(head.contains("zones of 16384 4096-byte blocks"), "{head}");
}

#[test]
fn db_stats_json_holds_what_the_database_holds_not_counters_of_this_open() {
    let d = tempfile::tempdir().unwrap();
    let img = image(d.path(), "db.img", "hm-smr", "4GiB", &[]);
    ok(&["db", "create", &img]);
    ok(&["db", "put", &img, "k", "v"]);
    let v = ok_json(&["db", "stats", &img, "--json"]);
    assert!(v.get("puts").is_none(), "{v}");
    assert!(v["last_sequence"].as_u64().unwrap_or(0) >= 1, "{v}");
    assert!(v["free_bands"].as_u64().is_some(), "{v}");
}

/// A tiny `bench db` run on the memory engine, with `extra` flags.
fn tiny_bench(extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "bench",
        "db",
        "--engine",
        "memory",
        "--benchmarks",
        "fillseq",
        "--num",
        "10",
    ]
    .map(String::from)
    .to_vec();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn sizes_with_units_are_accepted_for_the_value_size() {
    let o = tegula(&args(&tiny_bench(&["--value_size", "4KiB"])), None);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = fails_any(&["bench", "db", "--value_size", "lots"]);
    assert!(!e.contains("invalid digit"), "{e}");
}

#[test]
fn output_directories_are_not_grown_into_trees() {
    let d = tempfile::tempdir().unwrap();
    let deep = d.path().join("no/such/plots");
    let e = fails(&args(&tiny_bench(&["--plot", deep.to_str().unwrap()])));
    assert!(e.contains("does not exist"), "{e}");
    assert!(!d.path().join("no").exists());
    // One missing level (the directory itself) is created.
    let one = d.path().join("plots");
    ok(&args(&tiny_bench(&["--plot", one.to_str().unwrap()])));
    assert!(one.is_dir());
}

#[test]
fn a_damaged_image_is_named_once() {
    let d = tempfile::tempdir().unwrap();
    let img = image(d.path(), "bad.img", "hm-smr", "4GiB", &[]);
    {
        use std::io::{Read, Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&img)
            .unwrap();
        let mut b = [0u8; 1];
        f.seek(SeekFrom::Start(757)).unwrap();
        f.read_exact(&mut b).unwrap();
        f.seek(SeekFrom::Start(757)).unwrap();
        f.write_all(&[b[0] ^ 0x55]).unwrap();
    }
    let e = fails(&["disk", "info", &img]);
    assert!(e.contains("corrupt header"), "{e}");
    assert_eq!(e.matches("bad.img").count(), 1, "{e}");
}
