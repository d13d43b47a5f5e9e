//! HostBanded: a plain file with host-enforced zone rules, its write pointers saved in slots after
//! its zones (or, in the first layout, in a sidecar).
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use std::path::Path;
use tegula_device::{
    BlockDevice, HostBanded, HostBandedOptions, ZoneCondition, ZoneFilter, ZoneType, ZonedDevice,
};

const ZS: u64 = 256;

fn opts() -> HostBandedOptions {
    HostBandedOptions {
        zone_size: 1 << 20,
        conventional_zones: 2,
        capacity: Some(16 << 20),
        ..Default::default()
    }
}

fn open(p: &Path) -> HostBanded {
    HostBanded::open(p, opts()).unwrap()
}

fn sidecar(p: &Path) -> std::path::PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".zones");
    s.into()
}

#[test]
fn host_banded_file_enforces_the_zone_rules() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    let d = open(&p);
    let info = d.info();
    assert_eq!(info.zones, 16);
    assert_eq!(info.conventional_zones, 2);
    assert_eq!(d.zone(1).unwrap().zone_type, ZoneType::Conventional);
    assert_eq!(d.zone(2).unwrap().zone_type, ZoneType::SeqWriteRequired);
    // Conventional: anywhere, but not across into a sequential zone.
    d.write(5, &pattern(5, 2, 1)).unwrap();
    expect_err(d.write(2 * ZS - 1, &[0u8; 2 * SS]), "ZoneBoundary");
    // Sequential: at the write pointer only, never past the zone end or into a full zone.
    let s = 3 * ZS;
    d.write(s, &pattern(s, 4, 2)).unwrap();
    expect_err(d.write(s + 8, &[0u8; SS]), "UnalignedWrite");
    expect_err(d.write(s, &[0u8; SS]), "UnalignedWrite");
    let mut buf = vec![0u8; 5 * SS];
    expect_err(d.read(s, &mut buf), "ReadPastWritePointer");
    let mut four = vec![0u8; 4 * SS];
    d.read(s, &mut four).unwrap();
    assert_eq!(four, pattern(s, 4, 2));
    expect_err(d.write(s + ZS - 1, &[0u8; 2 * SS]), "ZoneBoundary");
    d.finish_zone(3).unwrap();
    expect_err(d.write(s + 4, &[0u8; SS]), "ZoneFull");
    d.reset_zone(3).unwrap();
    assert_eq!(d.zone(3).unwrap().condition, ZoneCondition::Empty);
    expect_err(d.reset_zone(0), "InvalidZoneOp");
    expect_err(d.write(16 * ZS, &[0u8; SS]), "OutOfRange");
    expect_err(d.write(0, &[0u8; 10]), "BadLength");
}

#[test]
fn host_banded_write_pointers_survive_reopen_via_the_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    {
        let d = open(&p);
        d.write(4 * ZS, &pattern(4 * ZS, 10, 3)).unwrap();
        d.write(6 * ZS, &pattern(6 * ZS, 3, 4)).unwrap();
        d.finish_zone(7).unwrap();
        d.flush().unwrap();
    }
    assert!(sidecar(&p).exists());
    let d = open(&p);
    assert_eq!(d.zone(4).unwrap().write_pointer_lba, 4 * ZS + 10);
    assert_eq!(d.zone(6).unwrap().write_pointer_lba, 6 * ZS + 3);
    assert_eq!(d.zone(7).unwrap().condition, ZoneCondition::Full);
    let mut buf = vec![0u8; 10 * SS];
    d.read(4 * ZS, &mut buf).unwrap();
    assert_eq!(buf, pattern(4 * ZS, 10, 3));
    d.write(4 * ZS + 10, &pattern(4 * ZS + 10, 1, 5)).unwrap();
    assert_eq!(
        d.report_zones(ZoneFilter::Condition(ZoneCondition::Full))
            .len(),
        1
    );
}

/// Bytes of each state slot for `opts()`'s 16 zones, and where slot A starts (after the
/// zones); see docs/formats/host-banded.md.
const SLOT: usize = 36864;
const SLOTS_AT: usize = 16 << 20;

#[test]
fn the_state_slots_sit_after_the_zones_and_the_sidecar_holds_the_descriptor() {
    use tegula_device::hostfile::format::{decode_descriptor, slot_size};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    drop(open(&p));
    assert_eq!(slot_size(16) as usize, SLOT);
    let d = decode_descriptor(&std::fs::read(sidecar(&p)).unwrap()).unwrap();
    assert_eq!((d.zones, d.slot_offset as usize), (16, SLOTS_AT));
    assert_eq!(
        std::fs::metadata(&p).unwrap().len() as usize,
        SLOTS_AT + 2 * SLOT
    );
    // Reopened without a capacity, the layout comes from the descriptor.
    let o = HostBandedOptions {
        capacity: None,
        ..opts()
    };
    assert_eq!(HostBanded::open(&p, o).unwrap().info().zones, 16);
    // With another capacity it is refused, naming both.
    let o = HostBandedOptions {
        capacity: Some(32 << 20),
        ..opts()
    };
    let e = expect_err(HostBanded::open(&p, o).map(|_| ()), "Image");
    assert!(e.to_string().contains("zones recorded"), "{e}");
    // A plain file given without a capacity gets as many zones as fit with the slots.
    let q = dir.path().join("sized.img");
    std::fs::File::create(&q)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let o = HostBandedOptions {
        capacity: None,
        ..opts()
    };
    assert_eq!(HostBanded::open(&q, o).unwrap().info().zones, 15);
}

#[test]
fn host_banded_corrupt_state_or_descriptor_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    drop(open(&p)); // creation saves sequence 1 (slot B), opening sequence 2 (slot A)
    let clean = std::fs::read(&p).unwrap();
    // Both slots damaged: no valid state, an error naming the file and the checksum.
    let mut bytes = clean.clone();
    bytes[SLOTS_AT + 64] ^= 0x55;
    bytes[SLOTS_AT + SLOT + 64] ^= 0x55;
    std::fs::write(&p, &bytes).unwrap();
    let e = expect_err(HostBanded::open(&p, opts()).map(|_| ()), "Image");
    let msg = e.to_string();
    assert!(
        msg.contains("plain.img") && msg.contains("checksum") && msg.contains("no valid"),
        "{msg}"
    );
    std::fs::write(&p, &clean).unwrap();
    let sc = sidecar(&p);
    let good = std::fs::read(&sc).unwrap();
    let mut bad = good.clone();
    bad[20] ^= 1;
    std::fs::write(&sc, &bad).unwrap();
    let e = expect_err(HostBanded::open(&p, opts()).map(|_| ()), "Image");
    assert!(e.to_string().contains(".zones"), "{e}");
    std::fs::write(&sc, b"hello, I am not a zone table").unwrap();
    let e = expect_err(HostBanded::open(&p, opts()).map(|_| ()), "Image");
    assert!(e.to_string().contains(".zones"), "{e}");
    // An empty sidecar is damage, not a new device.
    std::fs::write(&sc, b"").unwrap();
    expect_err(HostBanded::open(&p, opts()).map(|_| ()), "Image");
    // Another zone size than the device was created with is refused.
    std::fs::write(&sc, &good).unwrap();
    let mut o = opts();
    o.zone_size = 2 << 20;
    let e = expect_err(HostBanded::open(&p, o).map(|_| ()), "Image");
    assert!(e.to_string().contains("created with 16 zones"), "{e}");
    // A file cut short of its slots.
    std::fs::write(&p, &clean[..SLOTS_AT]).unwrap();
    let e = expect_err(HostBanded::open(&p, opts()).map(|_| ()), "Image");
    assert!(e.to_string().contains("truncated"), "{e}");
}

#[test]
fn a_torn_save_falls_back_to_the_previous_one_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    {
        let d = open(&p); // sequence 2, slot A
        d.write(4 * ZS, &pattern(4 * ZS, 2, 1)).unwrap();
        d.flush().unwrap(); // sequence 3, slot B
        d.write(4 * ZS + 2, &pattern(4 * ZS + 2, 3, 2)).unwrap();
        d.flush().unwrap(); // sequence 4, slot A
        assert!(d.open_warnings().is_empty());
    }
    let clean = std::fs::read(&p).unwrap();
    assert_eq!(open(&p).zone(4).unwrap().write_pointer_lba, 4 * ZS + 5);
    // Tear slot A's record (sequence 4) as a crash while it was written would.
    let mut bytes = clean.clone();
    bytes[SLOTS_AT + 100] ^= 0xff;
    std::fs::write(&p, &bytes).unwrap();
    let d = open(&p);
    assert_eq!(d.zone(4).unwrap().write_pointer_lba, 4 * ZS + 2);
    let w = d.open_warnings().join("; ");
    assert!(
        w.contains("claims the newer sequence 4") && w.contains("slot A"),
        "{w}"
    );
    // Saves go on alternating: after a write and a flush, a reopen is clean again.
    d.write(4 * ZS + 2, &pattern(4 * ZS + 2, 1, 3)).unwrap();
    d.flush().unwrap();
    drop(d);
    let d = open(&p);
    assert!(d.open_warnings().is_empty(), "{:?}", d.open_warnings());
    assert_eq!(d.zone(4).unwrap().write_pointer_lba, 4 * ZS + 3);
}

#[test]
fn a_flush_after_small_writes_is_one_fdatasync_and_after_many_megabytes_two() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    let d = open(&p);
    let s0 = d.syncs();
    for i in 0..10u64 {
        d.write(3 * ZS + i, &pattern(3 * ZS + i, 1, 1)).unwrap();
        d.flush().unwrap();
    }
    assert_eq!(d.syncs() - s0, 10, "one sync per synced write");
    // Conventional writes ride along (no write pointer to check).
    d.write(7, &pattern(7, 1, 1)).unwrap();
    d.flush().unwrap();
    assert_eq!(d.syncs() - s0, 11);
    // 5 MiB across five zones is past what a save lists: the data is synced first.
    for z in 5..10u64 {
        d.write(z * ZS, &pattern(z * ZS, ZS, 2)).unwrap();
    }
    let s1 = d.syncs();
    d.flush().unwrap();
    assert_eq!(d.syncs() - s1, 2);
    // A write with FUA is a save too.
    let s2 = d.syncs();
    d.write_with(
        3 * ZS + 10,
        &pattern(3 * ZS + 10, 1, 3),
        tegula_device::WriteFlags { fua: true },
    )
    .unwrap();
    assert_eq!(d.syncs() - s2, 1);
    drop(d);
    let d = open(&p);
    assert_eq!(d.zone(3).unwrap().write_pointer_lba, 3 * ZS + 11);
    assert_eq!(d.zone(9).unwrap().write_pointer_lba, 10 * ZS);
}

/// What a crash during the `fdatasync` of a save can leave: the record on disk with only some
/// of the data it lists. Opening must then take the previous save (whose data the previous
/// sync made durable), warn, and keep both the previous data and later saves intact.
#[test]
fn a_save_whose_listed_writes_did_not_reach_the_disk_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    {
        let d = open(&p);
        d.write(4 * ZS, &pattern(4 * ZS, 3, 1)).unwrap();
        d.flush().unwrap();
        d.write(4 * ZS + 3, &pattern(4 * ZS + 3, 2, 2)).unwrap();
        d.write(6 * ZS, &pattern(6 * ZS, 1, 2)).unwrap();
        d.flush().unwrap();
    }
    let full = std::fs::read(&p).unwrap();
    // Every listed sector lost in turn: the save is passed over.
    for lost in [4 * ZS + 3, 4 * ZS + 4, 6 * ZS] {
        let mut bytes = full.clone();
        let at = lost as usize * SS;
        bytes[at..at + SS].fill(0);
        std::fs::write(&p, &bytes).unwrap();
        let d = open(&p);
        let w = d.open_warnings().join("; ");
        assert!(
            w.contains("did not complete") && w.contains("claims the newer"),
            "{w}"
        );
        assert_eq!(d.zone(4).unwrap().write_pointer_lba, 4 * ZS + 3);
        assert_eq!(d.zone(6).unwrap().write_pointer_lba, 6 * ZS);
        let mut b = vec![0u8; 3 * SS];
        d.read(4 * ZS, &mut b).unwrap();
        assert_eq!(b, pattern(4 * ZS, 3, 1));
        // Writing on and saving works, and a reopen sees the new save without warnings.
        d.write(4 * ZS + 3, &pattern(4 * ZS + 3, 1, 9)).unwrap();
        d.flush().unwrap();
        drop(d);
        let d = open(&p);
        assert!(d.open_warnings().is_empty(), "{:?}", d.open_warnings());
        assert_eq!(d.zone(4).unwrap().write_pointer_lba, 4 * ZS + 4);
        drop(d);
    }
    // Nothing lost: the newest save stands.
    std::fs::write(&p, &full).unwrap();
    let d = open(&p);
    assert!(d.open_warnings().is_empty(), "{:?}", d.open_warnings());
    assert_eq!(d.zone(4).unwrap().write_pointer_lba, 4 * ZS + 5);
    assert_eq!(d.zone(6).unwrap().write_pointer_lba, 6 * ZS + 1);
}

/// Random writes, resets and flushes; then every crash a sync can leave of the last save
/// (any subset of its data sectors and its record reverted to what the previous save left):
/// the device reopens at the last save or the one before, with exactly that save's data.
#[test]
fn crashes_during_the_last_save_leave_one_of_the_last_two_saves_whole() {
    use rand::{Rng, SeedableRng};
    for seed in 0..24u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plain.img");
        let d = open(&p);
        // Model: per sequential zone, the pattern tags of its sectors.
        let mut model: Vec<Vec<u32>> = vec![Vec::new(); 16];
        let mut saved: Vec<Vec<u32>> = model.clone();
        let rounds = rng.gen_range(2..6);
        for round in 0..rounds {
            // What the last completed sync left: the crash images revert to it.
            let mut snapshot = std::fs::read(&p).unwrap();
            let mut prev = saved.clone();
            for _ in 0..rng.gen_range(1..6) {
                let z = rng.gen_range(2..16usize);
                if rng.gen_bool(0.15) && !model[z].is_empty() {
                    // A reset is saved (and synced) before it returns.
                    d.reset_zone(z as u32).unwrap();
                    model[z].clear();
                    snapshot = std::fs::read(&p).unwrap();
                    prev = model.clone();
                    continue;
                }
                let n = rng.gen_range(1..4u64).min(ZS - model[z].len() as u64);
                if n == 0 {
                    continue;
                }
                let lba = z as u64 * ZS + model[z].len() as u64;
                let tag = (round * 100 + z) as u32 + 1;
                d.write(lba, &pattern(lba, n, tag)).unwrap();
                model[z].extend(std::iter::repeat_n(tag, n as usize));
            }
            d.flush().unwrap();
            saved = model.clone();
            if round + 1 == rounds {
                // Crash images of the last save against the state before it.
                drop(d);
                let after = std::fs::read(&p).unwrap();
                for trial in 0..8 {
                    let mut img = after.clone();
                    for sector in 0..(SLOTS_AT / SS) {
                        let r = sector * SS..(sector + 1) * SS;
                        if img[r.clone()] != snapshot[r.clone()] && rng.gen_bool(0.5) {
                            img[r.clone()].copy_from_slice(&snapshot[r]);
                        }
                    }
                    if rng.gen_bool(0.3) {
                        let r = SLOTS_AT..SLOTS_AT + 2 * SLOT;
                        img[r.clone()].copy_from_slice(&snapshot[r]);
                    }
                    std::fs::write(&p, &img).unwrap();
                    let d = open(&p);
                    let which = if (2..16).all(|z| {
                        d.zone(z as u32).unwrap().write_pointer_lba - z as u64 * ZS
                            == saved[z].len() as u64
                    }) {
                        &saved
                    } else {
                        &prev
                    };
                    for (z, tags) in which.iter().enumerate().skip(2) {
                        let wp = d.zone(z as u32).unwrap().write_pointer_lba;
                        assert_eq!(
                            wp - z as u64 * ZS,
                            tags.len() as u64,
                            "seed {seed} trial {trial} zone {z}: at neither save"
                        );
                        for (i, &tag) in tags.iter().enumerate() {
                            let lba = z as u64 * ZS + i as u64;
                            let mut b = vec![0u8; SS];
                            d.read(lba, &mut b).unwrap();
                            assert_eq!(b, pattern(lba, 1, tag), "seed {seed} zone {z} lba {lba}");
                        }
                    }
                    drop(d);
                    std::fs::write(&p, &after).unwrap();
                }
                break;
            }
        }
    }
}

#[test]
fn a_first_layout_sidecar_is_still_read_and_saved() {
    use tegula_device::image::{encode_state, ImageState};
    for seq in [6u64, 7] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plain.img");
        std::fs::File::create(&p)
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
        let mut zones = vec![(ZoneCondition::Empty, false, 0u64); 16];
        for (i, z) in zones.iter_mut().enumerate() {
            z.2 = i as u64 * ZS;
        }
        zones[0].0 = ZoneCondition::NotWritePointer;
        zones[1].0 = ZoneCondition::NotWritePointer;
        zones[0].2 = ZS;
        zones[1].2 = 2 * ZS;
        zones[5] = (ZoneCondition::ImplicitOpen, false, 5 * ZS + 7);
        let st = ImageState {
            seq,
            zones,
            ..Default::default()
        };
        // The very first version: the record alone, replaced by rename.
        std::fs::write(sidecar(&p), encode_state(&st)).unwrap();
        let d = open(&p);
        assert_eq!(
            d.info().zones,
            16,
            "the first layout has zones over the whole file"
        );
        assert_eq!(d.zone(5).unwrap().write_pointer_lba, 5 * ZS + 7);
        assert_eq!(
            std::fs::metadata(sidecar(&p)).unwrap().len(),
            2 * LEGACY_SLOT as u64
        );
        // Writes and flushes save to the sidecar (two syncs: data, then sidecar).
        let s0 = d.syncs();
        d.write(5 * ZS + 7, &pattern(5 * ZS + 7, 1, 1)).unwrap();
        d.flush().unwrap();
        assert_eq!(d.syncs() - s0, 2);
        drop(d);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 16 << 20);
        let d = open(&p);
        assert_eq!(d.zone(5).unwrap().write_pointer_lba, 5 * ZS + 8);
        assert!(d.open_warnings().is_empty(), "{:?}", d.open_warnings());
    }
}

/// Bytes of each slot of a first-layout sidecar for 16 zones (16 KiB + 10 bytes per zone,
/// rounded up to 4 KiB).
const LEGACY_SLOT: usize = 20480;

#[test]
fn the_largest_zone_tables_fit_their_first_layout_sidecar_slots() {
    use tegula_device::image::{encode_state, ImageState};
    for n in [1usize, 16, 4096, 200_000] {
        let st = ImageState {
            seq: u64::MAX,
            zones: vec![(ZoneCondition::Full, true, u64::MAX); n],
            ..Default::default()
        };
        let slot = (16384 + 10 * n).div_ceil(4096) * 4096;
        assert!(encode_state(&st).len() <= slot, "{n} zones");
    }
}

#[test]
fn mapped_reads_see_what_was_written_before_and_after_the_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mapped.img");
    {
        let d = open(&p);
        d.write(0, &[7u8; 4096]).unwrap();
        d.flush().unwrap();
    }
    let d = HostBanded::open(
        &p,
        HostBandedOptions {
            mmap_reads: true,
            ..opts()
        },
    )
    .unwrap();
    let mut b = vec![0u8; 8192];
    d.read(0, &mut b).unwrap();
    assert_eq!(&b[..4096], &[7u8; 4096][..]);
    // A hole reads as zeros.
    assert!(b[4096..].iter().all(|&x| x == 0));
    // Written after the mapping was made: the same page cache.
    let lba = 2 * ZS;
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 31) as u8).collect();
    d.write(lba, &data).unwrap();
    let mut back = vec![0u8; 8192];
    d.read(lba, &mut back).unwrap();
    assert_eq!(back, data);
    // Past the capacity is refused as before.
    assert!(d
        .read(d.info().capacity_sectors, &mut back[..4096])
        .is_err());
}

#[test]
fn a_reset_zone_gives_its_blocks_back_to_the_file_system() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    let d = open(&p);
    let blocks = || std::fs::metadata(&p).unwrap().blocks() * 512;
    for z in [3u64, 4] {
        d.write(z * ZS, &pattern(z * ZS, ZS, 1)).unwrap();
    }
    d.flush().unwrap();
    let full = blocks();
    assert!(full >= 2 << 20, "two written zones hold {full} bytes");
    d.reset_zone(3).unwrap();
    let after = blocks();
    assert!(
        full - after >= 1 << 20,
        "a reset zone keeps its blocks: {full} -> {after} bytes"
    );
    // Zone 4 is untouched; zone 3 takes writes again and reads them back.
    let mut b = vec![0u8; SS];
    d.read(4 * ZS + 7, &mut b).unwrap();
    assert_eq!(b, pattern(4 * ZS + 7, 1, 1));
    d.write(3 * ZS, &pattern(3 * ZS, 2, 2)).unwrap();
    d.flush().unwrap();
    drop(d);
    let d = open(&p);
    d.read(3 * ZS + 1, &mut b).unwrap();
    assert_eq!(b, pattern(3 * ZS + 1, 1, 2));
    // Asked not to, it keeps them.
    drop(d);
    let d = HostBanded::open(
        &p,
        HostBandedOptions {
            punch_on_reset: false,
            ..opts()
        },
    )
    .unwrap();
    let before = blocks();
    d.reset_zone(4).unwrap();
    assert!(blocks() >= before, "punched though asked not to");
}

#[test]
fn without_create_a_file_with_no_descriptor_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.bin");
    let before: Vec<u8> = (0..(4u32 << 20)).map(|i| (i % 253) as u8).collect();
    std::fs::write(&p, &before).unwrap();
    let no_create = HostBandedOptions {
        create: false,
        ..opts()
    };
    let e = HostBanded::open(&p, no_create.clone()).err().unwrap();
    assert!(e.to_string().contains("not a banded device"), "{e}");
    assert!(std::fs::read(&p).unwrap() == before);
    assert!(!sidecar(&p).exists());
    // A missing path is not created either, even with a capacity.
    let missing = dir.path().join("missing.bin");
    let with_capacity = HostBandedOptions {
        capacity: Some(8 << 20),
        ..no_create.clone()
    };
    assert!(HostBanded::open(&missing, with_capacity).is_err());
    assert!(!missing.exists());
    // Once created, the same options open it.
    std::fs::remove_file(&p).unwrap();
    drop(open(&p));
    HostBanded::open(&p, no_create).unwrap();
}
