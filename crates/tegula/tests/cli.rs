//! End-to-end tests of the `tegula` binary: every `tegula disk` subcommand on real image files
//! in a temporary directory, the error paths (zone-rule violations, damaged images) and `demo`.

mod common;

use common::{fails, fails_in, json, ok, ok_in, stderr, stdout, tegula};
use serde_json::Value;
use std::path::{Path, PathBuf};

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Self {
        Dir(tempfile::tempdir().expect("tempdir"))
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
    fn s(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

/// A 1 GiB host-managed SMR image: zone 0 conventional, zones 1..3 sequential-write-required,
/// 65536 sectors of 4 KiB each.
fn hm_smr(d: &Dir, extra: &[&str]) -> String {
    let img = d.s("hm.img");
    let mut args = vec![
        "disk",
        "create",
        "--profile",
        "hm-smr",
        "--capacity",
        "1GiB",
    ];
    args.extend_from_slice(extra);
    args.push(&img);
    ok(&args);
    img
}

fn zones(img: &str) -> Vec<Value> {
    json(&ok(&["disk", "report", img, "--json"]))
        .as_array()
        .expect("array")
        .clone()
}

fn zone(img: &str, i: usize) -> Value {
    zones(img)[i].clone()
}

fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn create_prints_geometry_for_every_profile() {
    let d = Dir::new();
    for (p, extra) in [
        ("hm-smr", &[][..]),
        ("cmr-7200", &[][..]),
        ("smr-5900", &[][..]),
        ("ha-smr", &["--no-data"][..]),
    ] {
        let img = d.s(&format!("{p}.img"));
        let mut args = vec!["disk", "create", "--profile", p, "--capacity", "1GiB"];
        args.extend_from_slice(extra);
        args.push(&img);
        let out = stdout(&ok(&args));
        for key in [
            "profile:",
            "kind:",
            "capacity:",
            "sector size:",
            "zones:",
            "rpm:",
            "heads:",
            "cylinders:",
            "tracks:",
            "max open zones:",
            "write cache:",
            "image:",
        ] {
            assert!(out.contains(key), "{p}: no {key:?} in\n{out}");
        }
        assert!(out.contains(p), "{out}");
        let info = json(&ok(&["disk", "info", &img, "--json"]));
        assert_eq!(info["info"]["sector_size"], 4096);
        assert_eq!(info["capacity_bytes"], 1u64 << 30);
        assert_eq!(info["info"]["zones"], 4);
        assert_eq!(info["config"]["profile"], p);
        assert_eq!(info["info"]["stores_data"], extra.is_empty());
        let kind = info["info"]["kind"].as_str().expect("kind");
        let conv = info["info"]["conventional_zones"].as_u64().expect("conv");
        match p {
            "hm-smr" | "ha-smr" => assert_eq!((kind, conv), (p, 1)),
            "cmr-7200" => assert_eq!((kind, conv), ("cmr", 4)),
            _ => assert_eq!((kind, conv), ("smr-raw", 4)),
        }
        assert!(stdout(&ok(&["disk", "info", &img])).contains("zone conditions:"));
    }
    let meta = std::fs::metadata(d.path("ha-smr.img")).expect("stat");
    assert!(
        meta.len() < 16 << 20,
        "a --no-data image holds no data region"
    );
}

#[test]
fn create_applies_flags_config_files_and_overrides() {
    let d = Dir::new();
    let img = d.s("a.img");
    let out = stdout(&ok(&[
        "disk",
        "create",
        "--profile",
        "hm-smr",
        "--capacity",
        "1GiB",
        "--zone-size",
        "64MiB",
        "--conv-zones",
        "2",
        "--sector-size",
        "512",
        "--no-data",
        "--write-cache",
        "off",
        "--set",
        "media.rpm=5400",
        "--span",
        "partition",
        &img,
    ]));
    assert!(out.contains("write cache:     off"), "{out}");
    let info = json(&ok(&["disk", "info", &img, "--json"]));
    assert_eq!(info["info"]["zones"], 16);
    assert_eq!(info["info"]["conventional_zones"], 2);
    assert_eq!(info["info"]["sector_size"], 512);
    assert_eq!(info["config"]["media"]["rpm"], 5400);
    assert_eq!(info["config"]["span"], "partition");
    assert_eq!(info["config"]["cache"]["write_cache"], false);

    let cfg = d.path("drive.toml");
    std::fs::write(
        &cfg,
        "profile = \"cmr-7200\"\ncapacity = \"2GiB\"\n[media]\nrpm = 10000\n",
    )
    .expect("write config");
    let img2 = d.s("b.img");
    ok(&[
        "disk",
        "create",
        "--config",
        &cfg.display().to_string(),
        &img2,
    ]);
    let info = json(&ok(&["disk", "info", &img2, "--json"]));
    assert_eq!(info["config"]["kind"], "cmr");
    assert_eq!(info["config"]["media"]["rpm"], 10000);
    assert_eq!(info["capacity_bytes"], 2u64 << 30);
}

#[test]
fn create_refuses_bad_requests_with_one_clear_line() {
    let d = Dir::new();
    let img = hm_smr(&d, &["--no-data"]);
    let e = fails(&[
        "disk",
        "create",
        "--profile",
        "hm-smr",
        "--capacity",
        "1GiB",
        &img,
    ]);
    assert!(e.contains("already exists"), "{e}");
    let x = d.s("x.img");
    let e = fails(&["disk", "create", "--capacity", "4XB", &x]);
    assert!(e.contains("invalid size"), "{e}");
    let e = fails(&[
        "disk",
        "create",
        "--profile",
        "nope",
        "--capacity",
        "1GiB",
        &x,
    ]);
    assert!(e.contains("unknown profile"), "{e}");
    let e = fails(&["disk", "create", "--capacity", "100MiB", &x]);
    assert!(e.contains("smaller than one zone"), "{e}");
    let e = fails(&[
        "disk",
        "create",
        "--capacity",
        "1GiB",
        "--set",
        "media.bogus=1",
        &x,
    ]);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(!d.path("x.img").exists(), "a failed create leaves no file");
}

#[test]
fn report_lists_zones_as_json_and_filters_by_condition() {
    let d = Dir::new();
    let img = hm_smr(&d, &["--no-data"]);
    let zs = zones(&img);
    assert_eq!(zs.len(), 4);
    assert_eq!(zs[0]["type"], "conventional");
    assert_eq!(zs[0]["condition"], "not-write-pointer");
    for (i, z) in zs.iter().enumerate().skip(1) {
        assert_eq!(z["index"], i);
        assert_eq!(z["type"], "seq-write-required");
        assert_eq!(z["condition"], "empty");
        assert_eq!(z["len_lba"], 65536);
        assert_eq!(z["start_lba"], 65536 * i as u64);
        assert_eq!(z["write_pointer_lba"], z["start_lba"]);
    }
    let n = |c: &str| {
        json(&ok(&["disk", "report", &img, "--json", "--condition", c]))
            .as_array()
            .expect("array")
            .len()
    };
    assert_eq!(n("empty"), 3);
    assert_eq!(n("not-write-pointer"), 1);
    assert_eq!(n("open"), 0);
    ok_in(&["disk", "write", &img, "--zone", "2"], Some(&[1u8; 4096]));
    assert_eq!(n("open"), 1);
    assert_eq!(n("implicit-open"), 1);
    assert_eq!(n("empty"), 2);
    let table = stdout(&ok(&["disk", "report", &img]));
    assert_eq!(table.lines().count(), 2 + 4, "{table}");
    assert!(table.contains("SEQ_WRITE_REQUIRED") && table.contains("implicit-open"));
    let e = fails(&["disk", "report", &img, "--condition", "bogus"]);
    assert!(e.contains("unknown zone condition"), "{e}");
}

#[test]
fn write_at_a_zone_reads_back_byte_for_byte() {
    let d = Dir::new();
    let img = hm_smr(&d, &[]);
    let start = 65536u64;
    // 10000 bytes: not a whole sector; padded and said so.
    let input = data(10_000, 7);
    let o = ok_in(&["disk", "write", &img, "--zone", "1"], Some(&input));
    let e = stderr(&o);
    assert!(e.contains("padded"), "{e}");
    assert!(e.contains("ms modelled"), "{e}");
    assert!(e.contains(&format!("LBA {start}..{}", start + 3)), "{e}");
    assert_eq!(zone(&img, 1)["write_pointer_lba"], start + 3);
    let o = ok(&[
        "disk",
        "read",
        &img,
        "--lba",
        &start.to_string(),
        "--len",
        "10000",
    ]);
    assert_eq!(o.stdout, input);
    assert!(stderr(&o).contains("ms modelled"));

    // Several chunks from a file, appended at the write pointer.
    let big = data(3 << 20, 9);
    let f = d.path("big.bin");
    std::fs::write(&f, &big).expect("write input");
    ok(&[
        "disk",
        "write",
        &img,
        "--zone",
        "1",
        "--file",
        &f.display().to_string(),
    ]);
    let out = d.path("out.bin");
    ok(&[
        "disk",
        "read",
        &img,
        "--lba",
        &(start + 3).to_string(),
        "--len",
        "3MiB",
        "--out",
        &out.display().to_string(),
    ]);
    assert_eq!(std::fs::read(&out).expect("read output"), big);
    assert_eq!(zone(&img, 1)["write_pointer_lba"], start + 3 + 768);

    // The conventional zone takes writes anywhere.
    ok_in(
        &["disk", "write", &img, "--lba", "100"],
        Some(&data(8192, 3)),
    );
    ok_in(
        &["disk", "write", &img, "--lba", "50"],
        Some(&data(4096, 4)),
    );
    let o = ok(&["disk", "read", &img, "--lba", "100", "--len", "8KiB"]);
    assert_eq!(o.stdout, data(8192, 3));
    let e = fails_in(&["disk", "write", &img, "--lba", "60"], Some(&[]));
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn zone_rule_violations_fail_with_the_device_message() {
    let d = Dir::new();
    let img = hm_smr(&d, &["--no-data"]);
    ok_in(&["disk", "write", &img, "--zone", "1"], Some(&[5u8; 8192]));
    let e = fails_in(
        &["disk", "write", &img, "--lba", "65544"],
        Some(&[5u8; 4096]),
    );
    assert!(
        e.contains(
            "error: unaligned write to zone 1: write pointer is at LBA 65538, write at LBA 65544"
        ),
        "{e}"
    );
    let e = fails(&["disk", "read", &img, "--lba", "65536", "--len", "16KiB"]);
    assert!(e.contains("past the write pointer of zone 1"), "{e}");
    let e = fails(&["disk", "read", &img, "--lba", "131072", "--len", "4096"]);
    assert!(e.contains("past the write pointer of zone 2"), "{e}");
    let e = fails_in(
        &["disk", "write", &img, "--lba", "999999999"],
        Some(&[1u8; 4096]),
    );
    assert!(e.contains("beyond the end of the drive"), "{e}");
    let e = fails_in(&["disk", "write", &img, "--zone", "9"], Some(&[1u8; 4096]));
    assert!(e.contains("no zone 9"), "{e}");
    ok(&["disk", "finish", &img, "--zone", "3"]);
    let e = fails_in(&["disk", "write", &img, "--zone", "3"], Some(&[1u8; 4096]));
    assert!(e.contains("zone 3 is full"), "{e}");
    // The failed writes changed nothing.
    assert_eq!(zone(&img, 1)["write_pointer_lba"], 65538);
}

#[test]
fn zone_actions_show_in_the_report() {
    let d = Dir::new();
    let img = hm_smr(&d, &["--no-data"]);
    let cond = |i: usize| {
        zone(&img, i)["condition"]
            .as_str()
            .expect("cond")
            .to_string()
    };
    let o = ok(&["disk", "open", &img, "--zone", "2"]);
    assert!(stdout(&o).contains("zone 2: empty"), "{}", stdout(&o));
    assert_eq!(cond(2), "explicit-open");
    ok(&["disk", "close", &img, "--zone", "2"]);
    assert_eq!(cond(2), "empty");
    ok_in(&["disk", "write", &img, "--zone", "3"], Some(&[1u8; 4096]));
    assert_eq!(cond(3), "implicit-open");
    ok(&["disk", "close", &img, "--zone", "3"]);
    assert_eq!(cond(3), "closed");
    ok(&["disk", "finish", &img, "--zone", "3"]);
    assert_eq!(cond(3), "full");
    assert_eq!(zone(&img, 3)["write_pointer_lba"], 4 * 65536);
    ok(&["disk", "open", &img, "--zones", "1..=2"]);
    assert_eq!(
        (cond(1), cond(2)),
        ("explicit-open".into(), "explicit-open".into())
    );
    ok(&["disk", "finish", &img, "--zones", "1..3"]);
    assert_eq!((cond(1), cond(2)), ("full".into(), "full".into()));
    ok(&["disk", "reset", &img, "--zone", "1"]);
    assert_eq!(cond(1), "empty");
    ok(&["disk", "reset", &img, "--all"]);
    assert!(zones(&img)
        .iter()
        .skip(1)
        .all(|z| z["condition"] == "empty"));
    let e = fails(&["disk", "reset", &img, "--zone", "0"]);
    assert!(
        e.contains("cannot reset zone 0: zone is conventional"),
        "{e}"
    );
    // The message speaks of the zones asked for, not of the first missing one alone.
    let e = fails(&["disk", "reset", &img, "--zones", "2..9"]);
    assert!(e.contains("asks for zones up to 8"), "{e}");
    assert!(e.contains("0 to"), "{e}");
    let e = fails(&["disk", "reset", &img, "--zones", "3..1"]);
    assert!(e.contains("empty"), "{e}");
    let o = tegula(&["disk", "reset", &img], None);
    assert_eq!(
        o.status.code(),
        Some(2),
        "usage error without a zone selection"
    );
}

#[test]
fn stats_count_bytes_per_zone() {
    let d = Dir::new();
    let img = hm_smr(&d, &[]);
    ok_in(
        &["disk", "write", &img, "--zone", "1"],
        Some(&data(64 << 10, 1)),
    );
    ok_in(
        &["disk", "write", &img, "--zone", "2"],
        Some(&data(8 << 10, 2)),
    );
    ok(&[
        "disk",
        "read",
        &img,
        "--lba",
        "65536",
        "--len",
        "64KiB",
        "--out",
        &d.s("o"),
    ]);
    let s = json(&ok(&["disk", "stats", &img, "--json"]));
    assert_eq!(s["stats"]["writes"], 2);
    assert_eq!(s["stats"]["bytes_written"], 72 << 10);
    assert_eq!(s["stats"]["reads"], 1);
    assert_eq!(s["stats"]["zone_bytes_written"][1], 64 << 10);
    assert!(s["now_ns"].as_u64().expect("now") > 0);
    let zs = s["zones"].as_array().expect("zones");
    assert_eq!(zs.len(), 2, "only written zones: {zs:?}");
    assert_eq!(zs[0]["index"], 1);
    assert_eq!(zs[0]["bytes_written"], 64 << 10);
    assert_eq!(zs[1]["bytes_written"], 8 << 10);
    let all = json(&ok(&["disk", "stats", &img, "--json", "--all"]));
    assert_eq!(all["zones"].as_array().expect("zones").len(), 4);
    let text = stdout(&ok(&["disk", "stats", &img]));
    for key in [
        "seeks:",
        "virtual clock:",
        "busy / idle:",
        "media writes:",
        "64.00 KiB",
    ] {
        assert!(text.contains(key), "no {key:?} in\n{text}");
    }
}

#[test]
fn dump_shows_header_config_and_state() {
    let d = Dir::new();
    let img = hm_smr(&d, &["--no-data"]);
    ok_in(&["disk", "write", &img, "--zone", "1"], Some(&[1u8; 4096]));
    let out = stdout(&ok(&["disk", "dump", &img]));
    for key in [
        "TGLADISK",
        "version:",
        "state slot A:",
        "data region:",
        "[media]",
        "rpm = 7200",
        "slot A at offset",
        "valid, seq",
        "clock:",
        "65537",
        "implicit-open",
        "damaged (shingle-destroyed) ranges:",
        "injected media errors: 0",
    ] {
        assert!(out.contains(key), "no {key:?} in\n{out}");
    }
}

fn assert_image_error(args: &[&str], img: &Path) {
    let mut a = args.to_vec();
    let s = img.display().to_string();
    a.push(&s);
    let e = fails(&a);
    assert!(
        e.contains("disk image") || e.contains("opening"),
        "{a:?}: {e}"
    );
}

#[test]
fn damaged_images_give_clear_errors() {
    let d = Dir::new();
    let img = hm_smr(&d, &["--no-data"]);
    let good = std::fs::read(&img).expect("read image");

    let flipped = d.path("flipped.img");
    let mut b = good.clone();
    b[100] ^= 0x20;
    std::fs::write(&flipped, &b).expect("write");
    let truncated = d.path("truncated.img");
    std::fs::write(&truncated, &good[..100_000]).expect("write");
    let foreign = d.path("foreign.img");
    std::fs::write(
        &foreign,
        b"#!/bin/sh\necho this is not a disk image\n".repeat(100),
    )
    .expect("write");
    let empty = d.path("empty.img");
    std::fs::write(&empty, b"").expect("write");
    // Both state slots damaged (their offsets as `dump` reports them).
    let no_state = d.path("nostate.img");
    let mut b = good.clone();
    let dump = stdout(&ok(&["disk", "dump", &img]));
    let slots: Vec<usize> = dump
        .lines()
        .filter(|l| l.starts_with("state slot "))
        .map(|l| {
            let range = l.rsplit(' ').next().expect("range");
            range
                .split("..")
                .next()
                .expect("start")
                .parse()
                .expect("offset")
        })
        .collect();
    assert_eq!(slots.len(), 2, "{dump}");
    for off in slots {
        b[off] ^= 0xff;
    }
    std::fs::write(&no_state, &b).expect("write");

    for img in [&flipped, &truncated, &foreign, &empty, &no_state] {
        for cmd in [
            &["disk", "info"][..],
            &["disk", "report"],
            &["disk", "stats"],
            &["disk", "dump"],
        ] {
            assert_image_error(cmd, img);
        }
        assert_image_error(&["disk", "reset", "--all"], img);
    }
    let e = fails(&["disk", "info", &flipped.display().to_string()]);
    assert!(e.contains("checksum"), "{e}");
    let e = fails(&["disk", "info", &truncated.display().to_string()]);
    assert!(e.contains("truncated"), "{e}");
    let e = fails(&["disk", "info", &foreign.display().to_string()]);
    assert!(e.contains("not a tegula disk image"), "{e}");
    let e = fails(&["disk", "info", &d.s("missing.img")]);
    assert!(e.contains("does not exist"), "{e}");
    assert_eq!(
        e.matches("does not exist").count(),
        1,
        "cause printed once: {e}"
    );
}

#[test]
fn profiles_are_listed() {
    let out = stdout(&ok(&["disk", "profiles"]));
    for p in [
        "cmr-7200",
        "hm-smr",
        "ha-smr",
        "smr-5900",
        "imr",
        "imr-paper",
        "zns",
    ] {
        assert!(out.contains(p), "{out}");
    }
    // The drive-managed drives are built in too (no repository files needed).
    for p in [
        "seagate-5tb",
        "seagate-5tb-data",
        "seagate-8tb",
        "emulated-smr-1",
    ] {
        assert!(out.contains(p), "{out}");
    }
    let j = json(&ok(&["disk", "profiles", "--json"]));
    assert_eq!(j["zoned"].as_array().expect("array").len(), 7);
    assert_eq!(j["dm_smr"].as_array().expect("array").len(), 6);
}

#[test]
fn metadata_only_disks_read_zeros() {
    let d = Dir::new();
    let img = hm_smr(&d, &["--no-data"]);
    ok_in(&["disk", "write", &img, "--zone", "1"], Some(&[9u8; 8192]));
    let o = ok(&["disk", "read", &img, "--lba", "65536", "--len", "8192"]);
    assert_eq!(o.stdout, vec![0u8; 8192]);
}

#[test]
fn demo_runs() {
    let d = Dir::new();
    let img = d.s("demo.img");
    let o = ok(&["demo", "--image", &img]);
    let out = stdout(&o);
    for key in [
        "verified",
        "UnalignedWrite",
        "ReadPastWritePointer",
        "zone report",
        "timing summary",
        "of the media rate",
        "random 4 KiB read",
        "virtual time elapsed",
        "wall time",
    ] {
        assert!(out.contains(key), "no {key:?} in\n{out}");
    }
    // The stack tour: SMRDB's check is clean, the synced writes survive the power cut and the
    // unsynced one is gone, the journal drive shows its two map merges in 480 writes.
    for key in [
        "entries verified",
        "no problems",
        "a -> \"put before the synced batch\"",
        "b -> \"in the synced batch\"",
        "c -> gone",
        "and 2 map merges: #240",
        "starts cleaning",
    ] {
        assert!(out.contains(key), "no {key:?} in\n{out}");
    }
    // The kept image is a valid disk with the demo's writes.
    let s = json(&ok(&["disk", "stats", &img, "--json"]));
    assert!(s["stats"]["bytes_written"].as_u64().expect("bytes") >= 32 << 20);
    let o = ok(&["demo", "--disk-only"]);
    assert!(!stdout(&o).contains("SMRDB"));
}
