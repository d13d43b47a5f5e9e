//! `tegula probe IMAGE` on an image that holds data (issue 33, item 11): it rewrote 840 KB of
//! a CMR image's data with exit 0 and no `--destroys-data`. Now an image whose data region
//! holds anything (a sector ever written) is refused without the flag, with nothing written
//! to it; a fresh image (nothing to destroy) and the flag still probe.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{fails, image, ok};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// What shows that a file was written: size, allocation and modification time (the images
/// are sparse and a dm-smr one is ~100 GiB apparent: not read whole).
fn stamp(path: &str) -> (u64, u64, i64, i64) {
    let m = std::fs::metadata(path).unwrap();
    (m.len(), m.blocks(), m.mtime(), m.mtime_nsec())
}

/// 840 KiB of data with a pattern.
fn data_file(dir: &Path) -> String {
    let data: Vec<u8> = (0..840u32 << 10).map(|i| (i % 253) as u8).collect();
    let p = dir.join("data.bin");
    std::fs::write(&p, data).unwrap();
    p.display().to_string()
}

#[test]
fn a_cmr_image_holding_data_needs_destroys_data_and_is_left_alone_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "cmr.img", "cmr-7200", "256MiB", &[]);
    let f = data_file(dir.path());
    ok(&["disk", "write", &img, "--lba", "1000", "--file", &f]);
    let before = stamp(&img);

    let e = fails(&["probe", &img, "--tests", "1"]);
    assert!(
        e.contains("holds data (written sectors, the first at LBA 1000)"),
        "{e}"
    );
    assert!(e.contains("--destroys-data"), "{e}");
    assert_eq!(stamp(&img), before, "the image changed");
    let back = dir.path().join("back").display().to_string();
    ok(&[
        "disk", "read", &img, "--lba", "1000", "--len", "840KiB", "--out", &back,
    ]);
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&f).unwrap());

    let o = ok(&["probe", &img, "--tests", "1", "--destroys-data"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("drive_type"));
}

#[test]
fn a_fresh_image_is_probed_without_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "fresh.img", "cmr-7200", "256MiB", &[]);
    let o = ok(&["probe", &img, "--tests", "1"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("cmr"));
}

#[test]
fn a_dm_smr_image_holding_data_needs_destroys_data() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "dm.img", "seagate-5tb-data", "8GiB", &[]);
    let f = data_file(dir.path());
    ok(&["disk", "write", &img, "--lba", "5000", "--file", &f]);
    let before = stamp(&img);
    let e = fails(&["probe", &img, "--tests", "1"]);
    assert!(
        e.contains("holds data (written sectors, the first at physical sector"),
        "{e}"
    );
    assert!(e.contains("--destroys-data"), "{e}");
    assert_eq!(stamp(&img), before, "the image changed");
}
