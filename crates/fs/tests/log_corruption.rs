//! A damaged metadata log record is corruption, never the torn end of the log: a record with
//! valid records of its generation behind it fails the mount with `Corrupt` naming its LBA
//! (replay used to stop there, so a removed file came back and later files vanished), and
//! `Fs::check` reports it. A record a crash tore (nothing of its generation behind it) still
//! ends the log.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk};
use tegula_fs::{Fs, FsError, ROOT};

const SS: usize = 4096;
/// Record header bytes (magic, generation, sequence, length, fs id, crcs).
const HDR: usize = 48;

/// Sector `lba` as the file system sees the device.
fn sector(d: &Arc<Disk>, lba: u64) -> Vec<u8> {
    let mut s = vec![0u8; SS];
    BlockDevice::read(&*seen(d), lba, &mut s).unwrap();
    s
}

/// `(lba, generation, sequence)` of the log records of the current generation, in order.
fn records(d: &Arc<Disk>) -> Vec<(u64, u64, u64)> {
    let sb = sector(d, 0);
    let log_lba = u64::from_le_bytes(sb[56..64].try_into().unwrap());
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    let mut lba = log_lba;
    loop {
        let s = sector(d, lba);
        if &s[..8] != b"TGLFSLOG" {
            break;
        }
        let gen = u64::from_le_bytes(s[8..16].try_into().unwrap());
        let seq = u64::from_le_bytes(s[16..24].try_into().unwrap());
        let len = u64::from_le_bytes(s[24..32].try_into().unwrap());
        if out
            .last()
            .is_some_and(|&(_, g, q)| g != gen || q + 1 != seq)
        {
            break;
        }
        out.push((lba, gen, seq));
        // Header, payload and (format version 2) the trailer copy of the header.
        lba += (2 * HDR as u64 + len).div_ceil(SS as u64);
    }
    out
}

/// Flips a bit of byte `at` of sector `lba` (as the file system sees the device) on the media.
fn flip(d: &Arc<Disk>, lba: u64, at: usize) {
    let mut s = sector(d, lba);
    s[at] ^= 0x01;
    let raw = raw_lba(d, lba);
    d.with_media(|m| m.write(raw, &s, true)).unwrap();
}

/// Creates files one record at a time, removes one of them, creates more, and crashes (no
/// clean unmount, so the log holds it all).
fn workload() -> Arc<Disk> {
    let d = disk(8, 1);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    for n in ["keep", "doomed", "x1"] {
        fs.create(ROOT, n.as_bytes(), 0o644, 0, 0).unwrap();
        fs.sync_all().unwrap();
    }
    fs.unlink(ROOT, b"doomed").unwrap();
    fs.sync_all().unwrap();
    for i in 2..8 {
        fs.create(ROOT, format!("x{i}").as_bytes(), 0o644, 0, 0)
            .unwrap();
        fs.sync_all().unwrap();
    }
    d.power_cut();
    drop(fs);
    d.power_on();
    d
}

fn names(fs: &Fs) -> Vec<String> {
    let mut v: Vec<String> = fs
        .readdir(ROOT)
        .unwrap()
        .into_iter()
        .map(|(n, _, _)| String::from_utf8(n).unwrap())
        .filter(|n| n != "." && n != "..")
        .collect();
    v.sort();
    v
}

#[test]
fn damaged_log_record_followed_by_valid_ones_fails_the_mount() {
    let d = workload();
    let recs = records(&d);
    assert!(recs.len() >= 8, "{recs:?}");
    // The record that removed "doomed", then one in a payload and one in a header.
    for (which, at) in [(3usize, HDR + 2), (1, HDR + 1), (2, 20)] {
        let d = workload();
        let (lba, _, seq) = records(&d)[which];
        flip(&d, lba, at);
        match Fs::open(zoned(&d), small_opts()) {
            Err(e @ FsError::Corrupt(_)) => {
                let s = e.to_string();
                assert!(s.contains(&format!("LBA {lba}")), "{s}");
                assert!(s.contains(&format!("record {seq}")), "{s}");
                assert_eq!(e.errno(), libc::EIO);
            }
            Err(e) => panic!("record {which}: expected corruption, got {e}"),
            Ok(fs) => panic!(
                "record {which} damaged at byte {at} was taken for the end of the log: {:?}",
                names(&fs)
            ),
        }
    }
}

#[test]
fn check_reports_a_damaged_log_record_of_a_mounted_file_system() {
    let d = disk(8, 1);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    for i in 0..4 {
        fs.create(ROOT, format!("f{i}").as_bytes(), 0o644, 0, 0)
            .unwrap();
        fs.sync_all().unwrap();
    }
    assert!(fs.check(false).unwrap().problems.is_empty());
    let (lba, _, _) = records(&d)[1];
    flip(&d, lba, HDR + 1);
    let r = fs.check(false).unwrap();
    assert!(
        r.problems.iter().any(|p| p.contains(&format!("LBA {lba}"))),
        "{:?}",
        r.problems
    );
}

/// The last record damaged after it was written whole (its trailer is there), nothing of its
/// generation behind it: it used to be taken for the torn end and dropped quietly; it is
/// corruption naming its LBA. A flip in its payload or in its header.
#[test]
fn a_damaged_last_log_record_written_whole_fails_the_mount() {
    for at in [HDR + 1, 20] {
        let d = workload();
        let (lba, _, seq) = *records(&d).last().unwrap();
        flip(&d, lba, at);
        match Fs::open(zoned(&d), small_opts()) {
            Err(e @ FsError::Corrupt(_)) => {
                let s = e.to_string();
                assert!(s.contains(&format!("LBA {lba}")), "{s}");
                assert!(s.contains(&format!("record {seq}")), "{s}");
            }
            Err(e) => panic!("byte {at}: expected corruption, got {e}"),
            Ok(fs) => panic!(
                "byte {at}: the damaged last record was dropped: {:?}",
                names(&fs)
            ),
        }
    }
}

/// A last record a power cut tore: its last sector (with the trailer) never reached the
/// media. That is the end of the log; everything before it is there.
#[test]
fn a_torn_last_log_record_is_the_end_of_the_log() {
    let d = disk(8, 1);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    fs.create(ROOT, b"keep", 0o644, 0, 0).unwrap();
    fs.sync_all().unwrap();
    // One record of many operations: several sectors.
    for i in 0..80 {
        let name = format!("file-with-a-rather-long-name-to-fill-the-record-{i:03}");
        fs.create(ROOT, name.as_bytes(), 0o644, 0, 0).unwrap();
    }
    fs.sync_all().unwrap();
    d.power_cut();
    drop(fs);
    d.power_on();
    let recs = records(&d);
    let (lba, _, _) = *recs.last().unwrap();
    let len = {
        let s = sector(&d, lba);
        u64::from_le_bytes(s[24..32].try_into().unwrap())
    };
    let sectors = (2 * HDR as u64 + len).div_ceil(SS as u64);
    assert!(sectors >= 2, "the last record has {sectors} sector(s)");
    // The tear: the record's last sector as it was before (never written: zeros).
    let last = lba + sectors - 1;
    let raw = raw_lba(&d, last);
    d.with_media(|m| m.write(raw, &vec![0u8; SS], true))
        .unwrap();
    let fs = Fs::open(zoned(&d), small_opts()).unwrap();
    let n = names(&fs);
    assert!(n.contains(&"keep".to_string()), "{n:?}");
    assert!(!n.iter().any(|x| x.starts_with("file-with")), "{n:?}");
}

/// Files created and synced, a checkpoint, more files synced (log records of the checkpoint's
/// generation); returns the drive and the LBA of that newest checkpoint.
fn checkpoint_then_more() -> (Arc<Disk>, u64) {
    let d = disk(8, 1);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    for n in ["a", "b"] {
        fs.create(ROOT, n.as_bytes(), 0o644, 0, 0).unwrap();
        fs.sync_all().unwrap();
    }
    fs.checkpoint().unwrap();
    let ckp = fs.meta_stats().checkpoint_lba;
    for n in ["c", "d", "e"] {
        fs.create(ROOT, n.as_bytes(), 0o644, 0, 0).unwrap();
        fs.sync_all().unwrap();
    }
    d.power_cut();
    drop(fs);
    d.power_on();
    (d, ckp)
}

/// One byte flipped in the newest checkpoint, with log records written after it: the mount
/// used to take the older checkpoint, ignore the newer records and lose the synced files
/// without a word; it fails with `Corrupt` naming the damaged checkpoint instead.
#[test]
fn a_damaged_newest_checkpoint_with_records_after_it_fails_the_mount() {
    for at in [HDR + 3, 20, 40] {
        let (d, ckp) = checkpoint_then_more();
        flip(&d, ckp, at);
        match Fs::open(zoned(&d), small_opts()) {
            Err(e @ FsError::Corrupt(_)) => {
                let s = e.to_string();
                assert!(s.contains(&format!("LBA {ckp}")), "{s}");
                assert!(s.contains("would lose"), "{s}");
            }
            Err(e) => panic!("byte {at}: expected corruption, got {e}"),
            Ok(fs) => panic!(
                "byte {at}: mounted on the older checkpoint: {:?}",
                names(&fs)
            ),
        }
    }
}

/// The newest checkpoint damaged with nothing written after it (a clean unmount's checkpoint,
/// or one a power cut tore): the older checkpoint and its records, still in the log, give the
/// same files.
#[test]
fn a_damaged_newest_checkpoint_with_nothing_after_it_loses_nothing() {
    let d = disk(8, 1);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    for n in ["a", "b", "c"] {
        fs.create(ROOT, n.as_bytes(), 0o644, 0, 0).unwrap();
        fs.sync_all().unwrap();
    }
    fs.checkpoint().unwrap();
    let ckp = fs.meta_stats().checkpoint_lba;
    d.power_cut();
    drop(fs);
    d.power_on();
    flip(&d, ckp, HDR + 3);
    let fs = Fs::open(zoned(&d), small_opts()).unwrap();
    assert_eq!(names(&fs), vec!["a", "b", "c"]);
}
