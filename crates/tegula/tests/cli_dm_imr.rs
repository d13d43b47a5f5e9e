//! Drive-managed interlaced (dm-imr) drives from the command line: `disk create
//! --drive-managed` formats one, `disk info` and `disk stats` show the layer, `disk write`
//! and `disk read` go through it (a bottom write next to written tops is a read-modify-write:
//! both read back), other drives are refused, and `serve nbd` exports it to a real NBD client
//! (checked with `nbdcopy` when installed; a visible SKIPPED line otherwise).
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A 256 MiB drive-managed imr image in `dir`.
fn dm_image(dir: &Path) -> String {
    image(
        dir,
        "dm.img",
        "imr",
        "256MiB",
        &["--zone-size", "16MiB", "--drive-managed"],
    )
}

fn write_at(img: &str, lba: u64, data: &[u8], dir: &Path) {
    let f = dir.join(format!("w{lba}.bin"));
    std::fs::write(&f, data).unwrap();
    ok(&[
        "disk",
        "write",
        img,
        "--lba",
        &lba.to_string(),
        "--file",
        s(&f),
    ]);
}

fn read_at(img: &str, lba: u64, len: usize, dir: &Path) -> Vec<u8> {
    let f = dir.join("back.bin");
    ok(&[
        "disk",
        "read",
        img,
        "--lba",
        &lba.to_string(),
        "--len",
        &len.to_string(),
        "--out",
        s(&f),
    ]);
    std::fs::read(&f).unwrap()
}

fn pattern(seed: u32, len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(31) ^ seed) as u8)
        .collect()
}

#[test]
fn create_info_write_read_and_stats_go_through_the_layer() {
    let d = tempfile::tempdir().unwrap();
    let img = dm_image(d.path());
    let info = ok_json(&["disk", "info", &img, "--json"]);
    let dm = &info["drive_managed"];
    let cap = dm["host_capacity_bytes"].as_u64().unwrap();
    let [p1, p2] = [
        dm["phase_ends_bytes"][0].as_u64().unwrap(),
        dm["phase_ends_bytes"][1].as_u64().unwrap(),
    ];
    assert!(0 < p1 && p1 < p2 && p2 < cap && cap < 256 << 20, "{dm}");
    assert_eq!(dm["top_tracks_in_use"], 0);
    // Tops first (the second phase), then the bottoms under them: a read-modify-write.
    let tops = pattern(1, 4 << 20);
    write_at(&img, p1 / 4096, &tops, d.path());
    let top_bytes = |img: &str| {
        ok_json(&["disk", "stats", img, "--json"])["stats"]["top_bytes_written"]
            .as_u64()
            .unwrap()
    };
    let before = top_bytes(&img);
    let bottoms = pattern(2, 6 << 20);
    write_at(&img, 0, &bottoms, d.path());
    // The bottom write made the raw drive rewrite top sectors: the restores of its RMWs.
    assert!(top_bytes(&img) > before, "no top was restored");
    assert_eq!(read_at(&img, p1 / 4096, tops.len(), d.path()), tops);
    assert_eq!(read_at(&img, 0, bottoms.len(), d.path()), bottoms);
    let st = ok_json(&["disk", "stats", &img, "--json"]);
    let dm = &st["drive_managed"];
    assert!(dm["top_tracks_in_use"].as_u64().unwrap() >= 2, "{dm}");
    assert_eq!(dm["damaged_tops_in_use"], 0, "{dm}");
    let text = ok_out(&["disk", "info", &img]);
    assert!(
        text.contains("drive-managed") && text.contains("three-phase"),
        "{text}"
    );
    // Zone commands refuse it with the reason.
    fails_with(&["disk", "report", &img], "drive-managed IMR");
}

#[test]
fn drive_managed_is_refused_for_drives_that_are_not_interlaced() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("x.img");
    let err = fails(&[
        "disk",
        "create",
        "--profile",
        "hm-smr",
        "--capacity",
        "1GiB",
        "--drive-managed",
        s(&p),
    ]);
    assert!(err.contains("interlaced"), "{err}");
    assert!(!p.exists(), "nothing is left behind");
}

#[test]
fn serve_nbd_exports_a_drive_managed_imr_image() {
    if !have("nbdcopy") {
        return skip("nbdcopy not installed (apt install libnbd-bin)");
    }
    let d = tempfile::tempdir().unwrap();
    let img = dm_image(d.path());
    let info = ok_json(&["disk", "info", &img, "--json"]);
    let p1 = info["drive_managed"]["phase_ends_bytes"][0]
        .as_u64()
        .unwrap();
    let tops = pattern(3, 2 << 20);
    write_at(&img, p1 / 4096, &tops, d.path());
    let sock = d.path().join("dm.sock");
    let mut server = tegula_cmd()
        .args(["serve", "nbd", "--socket", s(&sock), &img])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&sock, 20);
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let src = d.path().join("src.bin");
    let data = pattern(4, 8 << 20);
    std::fs::write(&src, &data).unwrap();
    let copy = Command::new("nbdcopy")
        .args(["--flush", s(&src), &uri])
        .output()
        .unwrap();
    // Killed, not closed: what the client flushed is durable.
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        copy.status.success(),
        "{}",
        String::from_utf8_lossy(&copy.stderr)
    );
    assert_eq!(read_at(&img, 0, data.len(), d.path()), data);
    assert_eq!(read_at(&img, p1 / 4096, tops.len(), d.path()), tops);
}

/// Issue 33 item 3: one flipped byte in the newest metadata record used to make 1 MiB of
/// flushed data read as zeros with exit 0, and `disk check` said clean. Now `disk check` names
/// the damaged copy (exit 1), every flushed byte reads back (the twin record serves and the
/// copy is rewritten), and `disk check` is clean again.
#[test]
fn a_damaged_newest_metadata_record_loses_nothing_and_disk_check_names_it() {
    use tegula_device::{BlockDevice, Disk, OpenOptions};
    let dir = tempfile::tempdir().unwrap();
    let img = dm_image(dir.path());
    let data = pattern(7, 1 << 20);
    write_at(&img, 4096, &data, dir.path());
    // The newest metadata record's first copy, flipped on the raw drive.
    {
        let disk = Disk::open_image(Path::new(&img), OpenOptions::default()).unwrap();
        let loc = tegula_dmimr::DmImr::metadata_locations(&disk).unwrap();
        let seq = |lba: u64| {
            let mut b = vec![0u8; 4096 * loc.record_sectors as usize];
            disk.read(lba, &mut b).unwrap();
            tegula_dmimr::meta::MetaRecord::decode(&b).map_or(0, |m| m.seq)
        };
        let newest = if seq(loc.meta[0][0]) > seq(loc.meta[1][0]) {
            0
        } else {
            1
        };
        let lba = loc.meta[newest][0];
        let mut s = vec![0u8; 4096];
        disk.read(lba, &mut s).unwrap();
        s[40] ^= 0x01;
        disk.with_media(|m| m.write(lba, &s, true)).unwrap();
        disk.close().unwrap();
    }
    let e = fails_any(&["disk", "check", &img]);
    let o = run(&["disk", "check", &img]);
    assert_eq!(o.status.code(), Some(4), "fsck's errors left uncorrected");
    let out = stdout(&o);
    assert!(out.contains("metadata slot"), "{out}{e}");
    assert_eq!(read_at(&img, 4096, 1 << 20, dir.path()), data);
    ok(&["disk", "check", &img]);
}
