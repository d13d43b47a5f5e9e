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

#[test]
fn host_banded_corrupt_sidecar_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.img");
    drop(open(&p));
    let sc = sidecar(&p);
    let mut bytes = std::fs::read(&sc).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&sc, &bytes).unwrap();
    let e = expect_err(HostBanded::open(&p, opts()).map(|_| ()), "Image");
    let msg = e.to_string();
    assert!(msg.contains(".zones") && msg.contains("checksum"), "{msg}");
    std::fs::write(&sc, b"hello, I am not a zone table").unwrap();
    let e = expect_err(HostBanded::open(&p, opts()).map(|_| ()), "Image");
    assert!(e.to_string().contains(".zones"), "{e}");
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
