//! HostBanded: a plain file with host-enforced zone rules and a sidecar of write pointers.
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

/// Bytes of each of the sidecar's two slots for `opts()`'s 16 zones (16 KiB + 10 bytes per
/// zone, rounded up to 4 KiB).
const SLOT: usize = 20480;

#[test]
fn host_banded_corrupt_sidecar_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    drop(open(&p));
    let sc = sidecar(&p);
    let mut bytes = std::fs::read(&sc).unwrap();
    assert_eq!(bytes.len(), 2 * SLOT, "two slots");
    // Opening saved sequence 1, to slot B; slot A was never written. A flipped byte in B's
    // record leaves no valid state: an error naming the sidecar and the checksum.
    assert!(bytes[..SLOT].iter().all(|&b| b == 0));
    bytes[SLOT + 64] ^= 0x55;
    std::fs::write(&sc, &bytes).unwrap();
    let e = expect_err(HostBanded::open(&p, opts()).map(|_| ()), "Image");
    let msg = e.to_string();
    assert!(
        msg.contains(".zones") && msg.contains("checksum") && msg.contains("never written"),
        "{msg}"
    );
    std::fs::write(&sc, b"hello, I am not a zone table").unwrap();
    let e = expect_err(HostBanded::open(&p, opts()).map(|_| ()), "Image");
    assert!(e.to_string().contains(".zones"), "{e}");
    // An empty sidecar is damage, not a new device.
    std::fs::write(&sc, b"").unwrap();
    expect_err(HostBanded::open(&p, opts()).map(|_| ()), "Image");
    // A sidecar for another layout is refused too.
    std::fs::remove_file(&sc).unwrap();
    drop(open(&p));
    let mut o = opts();
    o.zone_size = 2 << 20;
    let e = expect_err(HostBanded::open(&p, o).map(|_| ()), "Image");
    assert!(e.to_string().contains("zones recorded"), "{e}");
}

#[test]
fn a_torn_save_of_the_sidecar_falls_back_to_the_previous_one_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    {
        let d = open(&p); // saves sequence 1 (slot B)
        d.write(4 * ZS, &pattern(4 * ZS, 2, 1)).unwrap();
        d.flush().unwrap(); // sequence 2, slot A
        d.write(4 * ZS + 2, &pattern(4 * ZS + 2, 3, 2)).unwrap();
        d.flush().unwrap(); // sequence 3, slot B
        assert!(d.open_warnings().is_empty());
    }
    let sc = sidecar(&p);
    let clean = std::fs::read(&sc).unwrap();
    // Both saves are there: reopening sees the newer one.
    assert_eq!(open(&p).zone(4).unwrap().write_pointer_lba, 4 * ZS + 5);
    // Reopening saved sequence 4 (slot A) with the same pointers; restore the file as it was
    // after the second flush, then tear slot B's record (sequence 3) as a crash would.
    let mut bytes = clean.clone();
    bytes[SLOT + 100] ^= 0xff;
    std::fs::write(&sc, &bytes).unwrap();
    let d = open(&p);
    assert_eq!(d.zone(4).unwrap().write_pointer_lba, 4 * ZS + 2);
    let w = d.open_warnings().join("; ");
    assert!(
        w.contains("claims the newer sequence 3") && w.contains("slot B"),
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
fn a_first_version_sidecar_is_read_and_extended_to_two_slots() {
    use tegula_device::image::{encode_state, ImageState};
    for seq in [6u64, 7] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plain.img");
        drop(open(&p));
        let mut zones = vec![(ZoneCondition::Empty, false, 0u64); 16];
        for (i, z) in zones.iter_mut().enumerate() {
            z.2 = i as u64 * ZS;
        }
        zones[0].0 = ZoneCondition::NotWritePointer;
        zones[1].0 = ZoneCondition::NotWritePointer;
        zones[5] = (ZoneCondition::ImplicitOpen, false, 5 * ZS + 7);
        let st = ImageState {
            seq,
            zones,
            ..Default::default()
        };
        // The first version: the record alone, replaced by rename.
        std::fs::write(sidecar(&p), encode_state(&st)).unwrap();
        let d = open(&p);
        assert_eq!(d.zone(5).unwrap().write_pointer_lba, 5 * ZS + 7);
        assert_eq!(
            std::fs::metadata(sidecar(&p)).unwrap().len(),
            2 * SLOT as u64
        );
        drop(d);
        // Whichever slot the open's save went to, the other still holds a valid state.
        let d = open(&p);
        assert_eq!(d.zone(5).unwrap().write_pointer_lba, 5 * ZS + 7);
        assert!(d.open_warnings().is_empty(), "{:?}", d.open_warnings());
    }
}

#[test]
fn the_largest_zone_tables_fit_their_sidecar_slots() {
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
