//! `disk write --zone Z` up to the end of a zone whose write pointer is not 1 MiB-aligned to
//! the zone's end (issue 33, item 11: the write stopped at a zone boundary after 255 MiB;
//! `disk write` now splits its 1 MiB commands at each zone's capacity end). A file of exactly
//! the zone's remaining bytes fills the zone; one sector more continues in the next zone (as
//! `docs/cli/disk.md` documents for `--zone`), fails with the device's error when the next
//! zone cannot take it, and on a ZNS drive (zone capacity below the zone size) fails naming
//! the zone's capacity — each failure with the zone written full.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{fails, image, ok, ok_json};
use serde_json::Value;
use std::path::Path;

/// A 1 GiB host-managed image with 16 MiB zones (4,096 sectors of 4 KiB).
fn hm_image(dir: &Path) -> String {
    image(dir, "z.img", "hm-smr", "1GiB", &["--zone-size", "16MiB"])
}

/// Zone `z`'s report entry.
fn zone(img: &str, z: u32) -> Value {
    let r = ok_json(&[
        "disk",
        "report",
        img,
        "--zone",
        &z.to_string(),
        "--count",
        "1",
        "--json",
    ]);
    r[0].clone()
}

fn u(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("no {key} in {v}"))
}

/// Bytes from zone `z`'s write pointer to the end of its capacity.
fn remaining(img: &str, z: u32) -> u64 {
    let e = zone(img, z);
    (u(&e, "start_lba") + u(&e, "capacity_lba") - u(&e, "write_pointer_lba")) * 4096
}

/// A file of `len` bytes with a pattern that shows where each sector went.
fn pattern_file(dir: &Path, name: &str, len: u64) -> String {
    let data: Vec<u8> = (0..len)
        .map(|i| (i / 4096 % 251) as u8 ^ (i % 7) as u8)
        .collect();
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p.display().to_string()
}

/// Writes 4 KiB at zone `z`'s write pointer: the pointer is then one sector past a MiB.
fn nudge(dir: &Path, img: &str, z: u32) {
    let f = pattern_file(dir, "4k", 4096);
    ok(&["disk", "write", img, "--zone", &z.to_string(), "--file", &f]);
}

#[test]
fn a_file_of_exactly_the_remaining_bytes_fills_the_zone() {
    let dir = tempfile::tempdir().unwrap();
    let img = hm_image(dir.path());
    nudge(dir.path(), &img, 3);
    let left = remaining(&img, 3);
    assert_eq!(left, (16 << 20) - 4096);
    let f = pattern_file(dir.path(), "rest", left);
    let o = ok(&["disk", "write", &img, "--zone", "3", "--file", &f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("(zone 3)"), "{err}");
    let z3 = zone(&img, 3);
    assert_eq!(z3["condition"], "full", "{z3}");
    assert_eq!(u(&z3, "write_pointer_lba"), u(&z3, "start_lba") + 4096);
    assert_eq!(zone(&img, 4)["condition"], "empty");
    // What was written reads back, up to the zone's last sector.
    let back = dir.path().join("back").display().to_string();
    let lba = (u(&z3, "start_lba") + 1).to_string();
    ok(&[
        "disk",
        "read",
        &img,
        "--lba",
        &lba,
        "--len",
        &left.to_string(),
        "--out",
        &back,
    ]);
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&f).unwrap());
}

#[test]
fn one_sector_more_fails_when_the_next_zone_cannot_take_it_and_fills_the_zone() {
    let dir = tempfile::tempdir().unwrap();
    let img = hm_image(dir.path());
    nudge(dir.path(), &img, 3);
    nudge(dir.path(), &img, 4);
    let f = pattern_file(dir.path(), "over", remaining(&img, 3) + 4096);
    let e = fails(&["disk", "write", &img, "--zone", "3", "--file", &f]);
    assert!(
        e.contains("unaligned write to zone 4: write pointer is at LBA 16385, write at LBA 16384"),
        "{e}"
    );
    assert!(
        e.contains("wrote 16773120 bytes at LBA 12289..16384 before the failure"),
        "{e}"
    );
    assert_eq!(zone(&img, 3)["condition"], "full");
    assert_eq!(
        u(&zone(&img, 4), "write_pointer_lba"),
        16385,
        "zone 4 untouched"
    );
}

#[test]
fn one_sector_more_continues_in_an_empty_next_zone() {
    let dir = tempfile::tempdir().unwrap();
    let img = hm_image(dir.path());
    nudge(dir.path(), &img, 3);
    let f = pattern_file(dir.path(), "over", remaining(&img, 3) + 4096);
    let o = ok(&["disk", "write", &img, "--zone", "3", "--file", &f]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("at LBA 12289..16385 (zones 3..=4)"), "{err}");
    assert_eq!(zone(&img, 3)["condition"], "full");
    assert_eq!(u(&zone(&img, 4), "write_pointer_lba"), 16385);
}

/// ZNS: 64 MiB zones with 48 MiB of capacity; one sector more than the capacity left fails
/// naming the capacity, and the zone is full.
#[test]
fn on_a_zns_drive_one_sector_past_the_capacity_fails_and_fills_the_zone() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "zns.img", "zns", "1GiB", &[]);
    nudge(dir.path(), &img, 2);
    let left = remaining(&img, 2);
    assert_eq!(left, (48 << 20) - 4096);
    let f = pattern_file(dir.path(), "over", left + 4096);
    let e = fails(&["disk", "write", &img, "--zone", "2", "--file", &f]);
    assert!(e.contains("lies past zone 2's capacity"), "{e}");
    assert!(e.contains("wrote 50327552 bytes at LBA"), "{e}");
    // (A full zone reports its write pointer at the zone's end, past the capacity.)
    let z2 = zone(&img, 2);
    assert_eq!(z2["condition"], "full", "{z2}");
}

/// The last zone: a file one sector longer than the drive has left is refused before anything
/// is written (it used to fill 15 of the zone's 16 MiB and fail mid-way without saying so).
#[test]
fn a_file_past_the_end_of_the_drive_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let img = hm_image(dir.path());
    nudge(dir.path(), &img, 63);
    let before = u(&zone(&img, 63), "write_pointer_lba");
    let f = pattern_file(dir.path(), "over", remaining(&img, 63) + 4096);
    let e = fails(&["disk", "write", &img, "--zone", "63", "--file", &f]);
    assert!(e.contains("lies beyond the end of the drive"), "{e}");
    assert!(!e.contains("before the failure"), "{e}");
    assert_eq!(u(&zone(&img, 63), "write_pointer_lba"), before);
}
