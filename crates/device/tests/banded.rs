//! The T13 banded view and its "set write pointer" extension (seed 003 §4.3.2): only
//! backwards, the blocks given up are discarded, everything before the new pointer stays
//! readable while the band is rewritten from there (shingling damages only the tracks after a
//! write), and the new pointer survives a power cut and a reopen of the image.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use tegula_device::{
    Banded, BlockDevice, DeviceError, Disk, DriveKind, OpenOptions, ZoneCondition, ZonedDevice,
};

/// A shingled host-managed drive with tracks of 64 sectors, so a band holds four tracks.
fn shingled_config() -> tegula_device::DiskConfig {
    let mut c = tiny_hm_config(16, 64);
    c.kind = DriveKind::HmSmr;
    c.media.heads = 2;
    c.media.od_track_bytes = 64 * 4096;
    c.media.strokes_per_surface = None;
    c.media.stroke_tracks = Some(32);
    c
}

fn write_band(b: &Banded<Disk>, band: u32, rba: u64, n: u64, tag: u32) {
    let lba = b.device().zone(band + 1).unwrap().start_lba + rba;
    b.write(band, rba, &pattern(lba, n, tag)).unwrap();
}

fn check_band(b: &Banded<Disk>, band: u32, rba: u64, n: u64, tag: u32) {
    let lba = b.device().zone(band + 1).unwrap().start_lba + rba;
    let mut buf = vec![0u8; n as usize * SS];
    b.read(band, rba, &mut buf).unwrap();
    assert_eq!(buf, pattern(lba, n, tag), "band {band} rba {rba}");
}

#[test]
fn setting_a_write_pointer_back_discards_only_what_follows_it() {
    let b = Banded::new(Disk::in_memory(shingled_config()).unwrap());
    write_band(&b, 2, 0, 200, 1);
    assert_eq!(b.write_pointer(2).unwrap(), 200);
    b.set_write_pointer(2, 90).unwrap();
    assert_eq!(b.write_pointer(2).unwrap(), 90);
    // The blocks given up read as past the write pointer.
    let mut buf = vec![0u8; SS];
    assert!(matches!(
        b.read(2, 90, &mut buf),
        Err(DeviceError::ReadPastWritePointer { .. })
    ));
    // Writes continue at the new pointer only.
    let lba = b.device().zone(3).unwrap().start_lba;
    assert!(b.write(2, 150, &pattern(lba + 150, 1, 9)).is_err());
    write_band(&b, 2, 90, 166, 2);
    b.device().flush().unwrap();
    // Rewriting from the middle of a track re-shingled everything after it, and nothing
    // before: the first 90 blocks are the old data, the rest the new.
    check_band(&b, 2, 0, 90, 1);
    check_band(&b, 2, 90, 166, 2);
    assert_eq!(b.device().zone(3).unwrap().condition, ZoneCondition::Full);
}

#[test]
fn a_write_pointer_only_moves_backwards_and_only_in_sequential_zones() {
    let b = Banded::new(Disk::in_memory(shingled_config()).unwrap());
    write_band(&b, 0, 0, 10, 1);
    let e = b.set_write_pointer(0, 11).unwrap_err();
    assert!(matches!(e, DeviceError::InvalidZoneOp { .. }), "{e}");
    assert_eq!(b.write_pointer(0).unwrap(), 10);
    // The same pointer is a no-op; the band start empties the band.
    b.set_write_pointer(0, 10).unwrap();
    b.set_write_pointer(0, 0).unwrap();
    assert_eq!(b.device().zone(1).unwrap().condition, ZoneCondition::Empty);
    let e = b.device().rewind_write_pointer(0, 0).unwrap_err();
    assert!(matches!(e, DeviceError::InvalidZoneOp { .. }), "{e}");
    assert!(matches!(
        b.set_write_pointer(99, 0),
        Err(DeviceError::NoSuchZone { .. })
    ));
    // A full band becomes closed, an open one stays open.
    write_band(&b, 1, 0, 256, 1);
    b.set_write_pointer(1, 100).unwrap();
    assert_eq!(b.device().zone(2).unwrap().condition, ZoneCondition::Closed);
    write_band(&b, 3, 0, 20, 1);
    let open = b.device().zone(4).unwrap().condition;
    b.set_write_pointer(3, 5).unwrap();
    assert_eq!(b.device().zone(4).unwrap().condition, open);
}

#[test]
fn a_write_pointer_set_back_survives_a_power_cut_and_a_reopen() {
    let d = Disk::in_memory(shingled_config()).unwrap();
    let b = Banded::new(d);
    write_band(&b, 4, 0, 120, 1);
    b.device().flush().unwrap();
    b.set_write_pointer(4, 64).unwrap();
    // Cached writes after the new pointer are lost with the power; the pointer is not.
    write_band(&b, 4, 64, 8, 2);
    b.device().power_cut();
    b.device().power_on();
    assert_eq!(b.write_pointer(4).unwrap(), 64);
    check_band(&b, 4, 0, 64, 1);

    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("b.img");
    let d = Disk::create_image(&img, shingled_config()).unwrap();
    let b = Banded::new(d);
    write_band(&b, 1, 0, 50, 3);
    b.set_write_pointer(1, 20).unwrap();
    drop(b);
    let b = Banded::new(Disk::open_image(&img, OpenOptions::default()).unwrap());
    assert_eq!(b.write_pointer(1).unwrap(), 20);
    check_band(&b, 1, 0, 20, 3);
}
