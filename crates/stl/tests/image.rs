//! Drive images: every layer's data and map survive close and reopen, and power cuts after
//! which the host process dies (the drive is dropped without closing and reopened from its
//! file); corrupt or foreign images give typed errors, never a panic; metadata-only
//! multi-terabyte images stay small and quick to reopen.
#![allow(clippy::unwrap_used)]

mod common;

use common::{check_clean_noting, tiny_config, verify_with, SS};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::os::unix::fs::FileExt;
use std::path::Path;
use tegula_device::{BlockDevice, DeviceError, SEC};
use tegula_stl::{DmConfig, DmDrive, StlError};

fn fill(rng: &mut SmallRng, n: u64) -> Vec<u8> {
    let tag: u64 = rng.gen();
    let mut v = vec![0u8; n as usize * SS];
    for (i, c) in v.chunks_mut(8).enumerate() {
        c.copy_from_slice(&(tag ^ i as u64).to_le_bytes());
    }
    v
}

/// Asserts that the whole drive reads back as `model`.
fn verify(d: &DmDrive, model: &[u8], what: &str) {
    verify_with(d, what, |lba, n| {
        model[lba as usize * SS..(lba + n) as usize * SS].to_vec()
    });
}

/// Random writes, idles and flushes; returns the writes in flight when power failed, if it did.
fn workload(
    d: &DmDrive,
    model: &mut [u8],
    rng: &mut SmallRng,
    ops: usize,
) -> Option<Vec<(u64, Vec<u8>)>> {
    let cap = d.info().capacity_sectors;
    for _ in 0..ops {
        let r: Result<(), DeviceError> = match rng.gen_range(0..100) {
            0..=79 => {
                let n = if rng.gen_bool(0.1) {
                    rng.gen_range(64..400u64)
                } else {
                    rng.gen_range(1..=8u64)
                };
                let lba = rng.gen_range(0..cap - n);
                let data = fill(rng, n);
                match d.write(lba, &data) {
                    Ok(_) => {
                        let o = lba as usize * SS;
                        model[o..o + data.len()].copy_from_slice(&data);
                        Ok(())
                    }
                    Err(DeviceError::PowerLoss) => return Some(vec![(lba, data)]),
                    Err(e) => Err(e),
                }
            }
            80..=89 => d.flush().map(|_| ()),
            _ => {
                d.idle(rng.gen_range(0..2 * SEC));
                Ok(())
            }
        };
        match r {
            Ok(()) => {}
            Err(DeviceError::PowerLoss) => return Some(Vec::new()),
            Err(e) => panic!("{e}"),
        }
    }
    None
}

fn settle(d: &DmDrive, model: &mut [u8], inflight: &[(u64, Vec<u8>)]) {
    for (lba, data) in inflight {
        for i in 0..data.len() / SS {
            let mut b = vec![0u8; SS];
            d.read(lba + i as u64, &mut b).unwrap();
            let new = &data[i * SS..(i + 1) * SS];
            let o = (*lba as usize + i) * SS;
            if b == new {
                model[o..o + SS].copy_from_slice(new);
            } else {
                assert!(
                    b == model[o..o + SS],
                    "sector {} neither old nor new",
                    lba + i as u64
                );
            }
        }
    }
}

fn reopen_cycle(stl: &str, extra: &str, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("drive.img");
    let cfg = tiny_config("48MiB", stl, extra);
    let d = DmDrive::create_image(&path, cfg).unwrap();
    let cap = d.info().capacity_sectors;
    let mut model = vec![0u8; cap as usize * SS];
    let mut rng = SmallRng::seed_from_u64(seed);
    assert!(workload(&d, &mut model, &mut rng, 200).is_none());
    let before = d.stl_stats();
    d.close().unwrap();
    let d = DmDrive::open_image(&path, false).unwrap();
    verify(&d, &model, &format!("{stl}: after reopen"));
    let after = d.stl_stats();
    assert_eq!(before.journal_entries, after.journal_entries, "{stl}");
    assert_eq!(before.bands_cleaned, after.bands_cleaned, "{stl}");
    assert_eq!(before.map_entries, after.map_entries, "{stl}");
    // Power cuts at random media writes; the process "dies" with the drive (no close).
    let mut d = d;
    let mut cuts = 0;
    // A flash cache writes the media only when cleaning: cut sooner.
    let max_cut = if extra.contains("flash") { 4 } else { 40 };
    for round in 0..4 {
        d.arm_power_cut(rng.gen_range(1..max_cut), seed + round);
        match workload(&d, &mut model, &mut rng, 150) {
            None => {
                d.close().unwrap();
            }
            Some(inflight) => {
                cuts += 1;
                drop(d);
                let again = DmDrive::open_image(&path, false).unwrap();
                settle(&again, &mut model, &inflight);
                d = again;
                verify(&d, &model, &format!("{stl}: after cut {cuts}"));
                continue;
            }
        }
        d = DmDrive::open_image(&path, false).unwrap();
        verify(&d, &model, &format!("{stl}: round {round}"));
    }
    assert!(cuts > 0, "{stl}: no power cut happened");
    // Cleaning after reopen still agrees with the reference.
    d.idle(60 * SEC);
    verify(&d, &model, &format!("{stl}: after idle cleaning"));
    d.close().unwrap();
}

#[test]
fn journal_image_survives_reopen_and_power_cuts() {
    reopen_cycle("journal", "", 1);
}

#[test]
fn set_associative_image_survives_reopen_and_power_cuts() {
    reopen_cycle("set-associative", "cleaning = \"lazy\"\n", 2);
}

#[test]
fn flash_set_associative_image_survives_reopen_and_power_cuts() {
    reopen_cycle(
        "set-associative",
        "cleaning = \"lazy\"\ncache_media = \"flash\"\n",
        3,
    );
}

#[test]
fn fully_associative_image_survives_reopen_and_power_cuts() {
    reopen_cycle("fully-associative", "", 4);
}

#[test]
fn read_only_images_refuse_writes_and_keep_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.img");
    let d = DmDrive::create_image(&path, tiny_config("48MiB", "journal", "")).unwrap();
    d.write(10, &[9u8; SS]).unwrap();
    d.close().unwrap();
    let d = DmDrive::open_image(&path, true).unwrap();
    let mut b = vec![0u8; SS];
    d.read(10, &mut b).unwrap();
    assert_eq!(b, vec![9u8; SS]);
    assert!(matches!(
        d.write(10, &[1u8; SS]),
        Err(DeviceError::ReadOnlyHandle)
    ));
}

#[test]
fn torn_in_place_band_writes_stay_media_errors_across_reopen() {
    // Skylight TEST 13: volatile cache on, a sequential stream bypasses the persistent cache
    // and overwrites its band in place; a power cut in the middle leaves destroyed tracks.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t13.img");
    let cfg = tiny_config(
        "48MiB",
        "journal",
        "volatile_cache = true\nvolatile_cache_size = \"2MiB\"\nbypass_min = \"256KiB\"\n",
    );
    let d = DmDrive::create_image(&path, cfg).unwrap();
    let mut rng = SmallRng::seed_from_u64(13);
    d.arm_power_cut(3, 5);
    let mut lba = 1024u64;
    loop {
        match d.write(lba, &fill(&mut rng, 256)) {
            Ok(_) => lba += 256,
            Err(DeviceError::PowerLoss) => break,
            Err(e) => panic!("{e}"),
        }
    }
    drop(d);
    let d = DmDrive::open_image(&path, false).unwrap();
    let cap = d.info().capacity_sectors;
    let errors = (0..cap)
        .filter(|&l| {
            let mut b = vec![0u8; SS];
            matches!(d.read(l, &mut b), Err(DeviceError::MediaError { .. }))
        })
        .count();
    assert!(errors > 0, "the torn band must read back as media errors");
}

fn open_err(path: &Path) -> StlError {
    match DmDrive::open_image(path, false) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(e) => e,
    }
}

#[test]
fn corrupt_and_foreign_images_give_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.img");
    let d = DmDrive::create_image(&path, tiny_config("48MiB", "journal", "")).unwrap();
    d.write(0, &[1u8; SS]).unwrap();
    d.close().unwrap();
    let good = std::fs::read(&path).unwrap();
    let restore = || std::fs::write(&path, &good).unwrap();
    let f = || std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    // A flipped header byte.
    f().write_all_at(&[0xAA], 40).unwrap();
    assert!(matches!(open_err(&path), StlError::Image { .. }));
    restore();
    // Both drive-state slots destroyed.
    let slot = tegula_stl::image::DM_STATE_SLOT;
    f().write_all_at(&[0u8; 64], tegula_stl::image::DM_HEADER_REGION)
        .unwrap();
    f().write_all_at(&[0u8; 64], tegula_stl::image::DM_HEADER_REGION + slot)
        .unwrap();
    let e = open_err(&path);
    assert!(e.to_string().contains("no valid drive state"), "{e}");
    restore();
    // Both metadata checkpoints destroyed.
    let h = tegula_stl::image::decode_header(&good[..64 << 10]).unwrap();
    f().write_all_at(&[0xFFu8; 32], h.meta_offset).unwrap();
    f().write_all_at(&[0xFFu8; 32], h.meta_offset + h.meta_slot)
        .unwrap();
    let e = open_err(&path);
    assert!(e.to_string().contains("checkpoint"), "{e}");
    restore();
    // Truncated.
    f().set_len(100).unwrap();
    assert!(matches!(open_err(&path), StlError::Image { .. }));
    // Not an image at all.
    std::fs::write(&path, b"hello, world").unwrap();
    assert!(matches!(open_err(&path), StlError::Image { .. }));
    assert!(!tegula_stl::is_dm_image(&path));
    // Missing.
    assert!(matches!(
        open_err(&dir.path().join("missing.img")),
        StlError::Image { .. }
    ));
}

#[test]
fn random_bytes_in_the_metadata_region_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.img");
    let d = DmDrive::create_image(&path, tiny_config("48MiB", "set-associative", "")).unwrap();
    for i in 0..50 {
        d.write(i * 7, &[i as u8; SS]).unwrap();
    }
    d.close().unwrap();
    let good = std::fs::read(&path).unwrap();
    let h = tegula_stl::image::decode_header(&good[..64 << 10]).unwrap();
    let mut rng = SmallRng::seed_from_u64(99);
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    for _ in 0..40 {
        let off = h.meta_offset + rng.gen_range(0..4096) + rng.gen_range(0..2) * h.meta_slot;
        let junk: Vec<u8> = (0..rng.gen_range(1..64)).map(|_| rng.gen()).collect();
        f.write_all_at(&junk, off).unwrap();
        // Either a clean error or a drive whose reads work.
        if let Ok(d) = DmDrive::open_image(&path, true) {
            let mut b = vec![0u8; SS];
            let _ = d.read(0, &mut b);
        }
        let o = off as usize;
        f.write_all_at(&good[o..o + junk.len()], off).unwrap();
    }
}

#[test]
fn metadata_only_terabyte_images_stay_small_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("5tb.img");
    let text = std::fs::read_to_string(format!(
        "{}/profiles/seagate-5tb.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let d = DmDrive::create_image(&path, DmConfig::from_toml(&text).unwrap()).unwrap();
    let cap = d.info().capacity_sectors;
    assert!(cap * SS as u64 >= 4_900_000_000_000);
    let mut rng = SmallRng::seed_from_u64(5);
    for _ in 0..2000 {
        d.write(rng.gen_range(0..cap), &[0u8; SS]).unwrap();
    }
    let before = d.stl_stats();
    d.close().unwrap();
    use std::os::unix::fs::MetadataExt;
    let used = std::fs::metadata(&path).unwrap().blocks() * 512;
    assert!(used < 64 << 20, "a metadata-only image uses {used} bytes");
    let d = DmDrive::open_image(&path, false).unwrap();
    let after = d.stl_stats();
    assert_eq!(after.journal_entries, 2000);
    assert_eq!(after.map_entries, before.map_entries);
    assert_eq!(after.map_merges, before.map_merges);
}

/// The current metadata slot of `path` and the offsets of its frames (checkpoint first).
fn frames_of(path: &Path) -> (usize, Vec<u64>) {
    let bytes = std::fs::read(path).unwrap();
    let h = tegula_stl::image::decode_header(&bytes[..64 << 10]).unwrap();
    let scans = tegula_stl::image::scan_metadata(path, &h).unwrap();
    let slot = if scans[0].checkpoint.map(|c| c.0) > scans[1].checkpoint.map(|c| c.0) {
        0
    } else {
        1
    };
    let base = (h.meta_offset + slot as u64 * h.meta_slot) as usize;
    let mut offs = Vec::new();
    let mut off = 0usize;
    while let Ok((h, _, n)) = tegula_stl::metalog::decode_frame(&bytes[base + off..]) {
        if h.kind == tegula_stl::metalog::KIND_TAIL_COPY {
            break;
        }
        offs.push(off as u64);
        off += n;
    }
    assert_eq!(offs.len() as u64, 1 + scans[slot].records);
    (slot, offs)
}

/// Reported: one flipped byte in a metadata-log record was taken for a torn tail; every later
/// record was dropped, the drive returned wrong data with exit 0 and appended over them. Now a
/// damaged record followed by valid ones is corruption: typed, naming slot and offset, on a
/// writable and a read-only open alike, nothing written over it, and found by a check. Only a
/// damaged last record is a torn tail.
#[test]
fn a_flipped_byte_in_a_metadata_record_is_corruption_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.img");
    let d = DmDrive::create_image(&path, tiny_config("48MiB", "journal", "")).unwrap();
    for i in 0..12u64 {
        d.write(i * 9, &vec![i as u8 + 1; SS]).unwrap();
    }
    d.close().unwrap();
    let good = std::fs::read(&path).unwrap();
    let h = tegula_stl::image::decode_header(&good[..64 << 10]).unwrap();
    let (slot, offs) = frames_of(&path);
    assert!(offs.len() >= 8, "{offs:?}");
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let at = h.meta_offset + slot as u64 * h.meta_slot;
    // A byte in the middle of the payload of the fourth record.
    let rec = offs[4];
    f.write_all_at(&[good[(at + rec + 24) as usize] ^ 0x08], at + rec + 24)
        .unwrap();
    let flipped = std::fs::read(&path).unwrap();
    for read_only in [false, true] {
        match DmDrive::open_image(&path, read_only) {
            Err(StlError::LogCorrupt {
                slot: s,
                offset,
                image_offset,
                ..
            }) => {
                assert_eq!((s, offset, image_offset), (slot, rec, Some(at + rec)));
            }
            Err(e) => panic!("read_only {read_only}: {e}"),
            Ok(_) => panic!("read_only {read_only}: a corrupt log opened"),
        }
    }
    assert!(
        std::fs::read(&path).unwrap() == flipped,
        "the refused open wrote to the image"
    );
    let report = DmDrive::check(&path).unwrap();
    let errors: Vec<_> = report.errors().collect();
    assert_eq!(errors.len(), 1, "{:?}", report.findings);
    assert!(
        errors[0].message.contains(&format!("byte {rec}")),
        "{}",
        errors[0].message
    );
    // The same flip in the last record, whose tail copy follows it: recovered from the copy,
    // reported, every write there.
    std::fs::write(&path, &good).unwrap();
    let last = *offs.last().unwrap();
    f.write_all_at(&[good[(at + last + 24) as usize] ^ 0x08], at + last + 24)
        .unwrap();
    check_clean_noting(&path, "recovered from its tail copy");
    let d = DmDrive::open_image(&path, false).unwrap();
    for i in 0..12u64 {
        let mut b = vec![0u8; SS];
        d.read(i * 9, &mut b).unwrap();
        assert_eq!(b, vec![i as u8 + 1; SS], "write {i}");
    }
    assert!(
        d.open_warnings()
            .iter()
            .any(|w| w.contains("rewrote the damaged last metadata record")),
        "{:?}",
        d.open_warnings()
    );
    d.close().unwrap();
    // The writable open wrote the record back: nothing left to report.
    let report = DmDrive::check(&path).unwrap();
    assert!(
        !report
            .findings
            .iter()
            .any(|f| f.message.contains("tail copy")),
        "{:?}",
        report.findings
    );
    // A flip in the last record with its copy gone too (a write torn by a crash): a torn
    // tail, the drive opens without it.
    std::fs::write(&path, &good).unwrap();
    let (_, _, last_len) =
        tegula_stl::metalog::decode_frame(&good[(at + last) as usize..]).unwrap();
    f.write_all_at(&vec![0u8; last_len], at + last + last_len as u64)
        .unwrap();
    f.write_all_at(&[good[(at + last + 24) as usize] ^ 0x08], at + last + 24)
        .unwrap();
    check_clean_noting(&path, "torn by a crash");
    let d = DmDrive::open_image(&path, false).unwrap();
    let mut b = vec![0u8; SS];
    d.read(0, &mut b).unwrap();
    assert_eq!(b, vec![1u8; SS]);
}

/// The drive-state slots: a damaged newest slot is passed over for the older one (a save torn
/// by a crash) but reported, on open and by a check; the data, kept by the metadata log, is
/// all there.
#[test]
fn a_damaged_newest_drive_state_slot_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.img");
    let d = DmDrive::create_image(&path, tiny_config("48MiB", "set-associative", "")).unwrap();
    for i in 0..20u64 {
        d.write(i * 5, &vec![i as u8 + 1; SS]).unwrap();
    }
    d.close().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let slot = tegula_stl::image::DM_STATE_SLOT as usize;
    let base = tegula_stl::image::DM_HEADER_REGION as usize;
    let seq = |i: usize| {
        tegula_stl::image::decode_drive_state(&bytes[base + i * slot..base + (i + 1) * slot])
            .map(|s| s.seq)
            .unwrap_or(0)
    };
    let newest = if seq(0) > seq(1) { 0 } else { 1 };
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(&[0x77], (base + newest * slot + 40) as u64)
        .unwrap();
    check_clean_noting(&path, "newer sequence");
    let d = DmDrive::open_image(&path, false).unwrap();
    assert_eq!(d.open_warnings().len(), 1, "{:?}", d.open_warnings());
    for i in 0..20u64 {
        let mut b = vec![0u8; SS];
        d.read(i * 5, &mut b).unwrap();
        assert_eq!(b, vec![i as u8 + 1; SS], "block {}", i * 5);
    }
}

/// Rebuilds the sparse image a fixture file describes (see its header).
fn image_from_fixture(text: &str, path: &Path) {
    let size: u64 = text
        .lines()
        .find_map(|l| l.split("File size: ").nth(1))
        .and_then(|s| s.trim().parse().ok())
        .unwrap();
    let f = std::fs::File::create(path).unwrap();
    f.set_len(size).unwrap();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (off, runs) = line.split_once(' ').unwrap();
        let mut page = Vec::new();
        for run in runs.split(',') {
            if let Some((n, b)) = run.split_once('*') {
                let n = usize::from_str_radix(n, 16).unwrap();
                page.extend(std::iter::repeat_n(u8::from_str_radix(b, 16).unwrap(), n));
            } else {
                for i in (0..run.len()).step_by(2) {
                    page.push(u8::from_str_radix(&run[i..i + 2], 16).unwrap());
                }
            }
        }
        f.write_all_at(&page, off.parse().unwrap()).unwrap();
    }
}

/// Images of format version 1 (damage only in the drive state) still open: read-only as they
/// are, and upgraded to version 2 (header rewritten, the damage moved into a new checkpoint)
/// when opened writable; their data reads back the same either way.
#[test]
fn version_1_images_open_and_are_upgraded_when_writable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.img");
    image_from_fixture(include_str!("fixtures/dm-smr-v1.txt"), &path);
    let version = |p: &Path| {
        let b = std::fs::read(p).unwrap();
        tegula_stl::image::decode_header(&b[..64 << 10])
            .unwrap()
            .version
    };
    assert_eq!(version(&path), 1);
    let expect = |d: &DmDrive| {
        for i in 0..12u64 {
            let mut b = vec![0u8; SS];
            d.read(i * 37, &mut b).unwrap();
            assert_eq!(b, vec![i as u8 + 1; SS], "block {}", i * 37);
        }
    };
    check_clean_noting(&path, "version 1");
    expect(&DmDrive::open_image(&path, true).unwrap());
    assert_eq!(version(&path), 1, "a read-only open changed the image");
    let d = DmDrive::open_image(&path, false).unwrap();
    assert_eq!(version(&path), 2);
    expect(&d);
    d.write(500, &[0xAB; SS]).unwrap();
    d.close().unwrap();
    let d = DmDrive::open_image(&path, false).unwrap();
    expect(&d);
    let mut b = vec![0u8; SS];
    d.read(500, &mut b).unwrap();
    assert_eq!(b, vec![0xAB; SS]);
    d.close().unwrap();
    let report = DmDrive::check(&path).unwrap();
    assert!(report.is_clean(), "{:?}", report.findings);
}
