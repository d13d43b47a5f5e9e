//! Shingled media physics: a write to track t destroys the next k−1 tracks of its band until
//! they are rewritten; bands end in a guard; sequential band writes leave everything readable;
//! the zone rules of a host-managed drive keep sequential writers safe; injected media errors
//! read as errors until rewritten.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use tegula_device::{
    profile, BlockDevice, DeviceError, Disk, DriveKind, MediaErrorCause, ZonedDevice,
};

const BAND_TRACKS: u64 = 8;

/// Raw shingled media (no translation layer): 2 surfaces, runs of 32 tracks of at most 64
/// sectors, bands of 8 tracks, a head 3 tracks wide.
fn raw() -> Disk {
    let mut c = profile("smr-5900").unwrap();
    assert_eq!(c.kind, DriveKind::SmrRaw);
    c.capacity = 16 << 20;
    c.zones.zone_size = 1 << 20;
    c.media.heads = 2;
    c.media.od_track_bytes = 64 * 4096;
    c.media.strokes_per_surface = None;
    c.media.stroke_tracks = Some(32);
    c.shingle.band_tracks = Some(BAND_TRACKS);
    c.shingle.overlap_tracks = 3;
    Disk::in_memory(c).unwrap()
}

/// (first LBA, sectors) of track `i` of the first surface run.
fn track(d: &Disk, i: u64) -> (u64, u64) {
    d.with_media(|m| m.mechanics().geometry().run_track(0, i))
        .unwrap()
}

fn write_track(d: &Disk, i: u64, tag: u32) {
    let (lba, n) = track(d, i);
    d.write(lba, &pattern(lba, n, tag)).unwrap();
}

/// Reads track `i`: Ok(tags) or the media error's (LBA, cause).
fn read_track(d: &Disk, i: u64) -> Result<Vec<Option<u32>>, (u64, MediaErrorCause)> {
    let (lba, n) = track(d, i);
    let mut buf = vec![0u8; n as usize * SS];
    match d.read(lba, &mut buf) {
        Ok(_) => Ok(buf
            .chunks(SS)
            .enumerate()
            .map(|(k, s)| tag_of(lba + k as u64, s))
            .collect()),
        Err(DeviceError::MediaError { lba, cause }) => Err((lba, cause)),
        Err(e) => panic!("{e}"),
    }
}

fn readable(d: &Disk, i: u64, tag: u32) {
    let tags = read_track(d, i).unwrap_or_else(|e| panic!("track {i} unreadable: {e:?}"));
    assert!(tags.iter().all(|&t| t == Some(tag)), "track {i}: {tags:?}");
}

fn destroyed(d: &Disk, i: u64) {
    let (lba, _) = track(d, i);
    assert_eq!(
        read_track(d, i).map(|_| ()),
        Err((lba, MediaErrorCause::ShingleDamage)),
        "track {i} should be destroyed"
    );
}

#[test]
fn writing_a_band_sequentially_from_its_start_leaves_it_fully_readable() {
    let d = raw();
    for i in 0..2 * BAND_TRACKS {
        write_track(&d, i, 1);
    }
    for i in 0..2 * BAND_TRACKS {
        readable(&d, i, 1);
    }
    // Also in small sequential pieces.
    let d = raw();
    let (start, _) = track(&d, 0);
    let (end, n) = track(&d, BAND_TRACKS - 1);
    let mut lba = start;
    while lba < end + n {
        let k = (end + n - lba).min(3);
        d.write(lba, &pattern(lba, k, 2)).unwrap();
        lba += k;
    }
    for i in 0..BAND_TRACKS {
        readable(&d, i, 2);
    }
}

#[test]
fn rewriting_a_track_destroys_the_next_two_tracks_of_its_band_until_they_are_rewritten() {
    let d = raw();
    for i in 0..BAND_TRACKS {
        write_track(&d, i, 1);
    }
    write_track(&d, 2, 2);
    readable(&d, 0, 1);
    readable(&d, 1, 1);
    readable(&d, 2, 2);
    destroyed(&d, 3);
    destroyed(&d, 4);
    readable(&d, 5, 1);
    let e = d.read(track(&d, 3).0, &mut [0u8; SS]).unwrap_err();
    assert!(e.to_string().contains("shingled write"), "{e}");
    // Rewriting track 3 heals it and pushes the damage one track on.
    write_track(&d, 3, 3);
    readable(&d, 3, 3);
    destroyed(&d, 4);
    destroyed(&d, 5);
    readable(&d, 6, 1);
    for i in 4..BAND_TRACKS {
        write_track(&d, i, 4);
    }
    for i in 4..BAND_TRACKS {
        readable(&d, i, 4);
    }
}

#[test]
fn a_partial_track_write_destroys_only_the_same_angular_part_of_the_next_tracks() {
    let d = raw();
    for i in 0..BAND_TRACKS {
        write_track(&d, i, 1);
    }
    let (t2, n2) = track(&d, 2);
    let (t3, n3) = track(&d, 3);
    d.write(t2 + 10, &pattern(t2 + 10, 10, 2)).unwrap();
    let first = t3 + 10 * n3 / n2;
    let mut one = vec![0u8; SS];
    d.read(t3, &mut one).unwrap();
    d.read(t3 + n3 - 1, &mut one).unwrap();
    let mut all = vec![0u8; n3 as usize * SS];
    let e = d.read(t3, &mut all).unwrap_err();
    assert!(
        matches!(e, DeviceError::MediaError { lba, cause: MediaErrorCause::ShingleDamage } if lba == first),
        "{e}"
    );
}

#[test]
fn the_last_track_of_a_band_does_not_damage_the_next_band() {
    let d = raw();
    for i in 0..2 * BAND_TRACKS {
        write_track(&d, i, 1);
    }
    write_track(&d, BAND_TRACKS - 1, 2);
    readable(&d, BAND_TRACKS, 1);
    readable(&d, BAND_TRACKS + 1, 1);
    write_track(&d, BAND_TRACKS - 2, 3);
    destroyed(&d, BAND_TRACKS - 1);
    readable(&d, BAND_TRACKS, 1);
}

/// A host-managed drive whose zones span several tracks of one surface run, so the shingling
/// rule can bite inside a zone.
fn shingled_zoned(kind: DriveKind) -> Disk {
    let mut c = tiny_hm_config(16, 64);
    c.kind = kind;
    c.media.heads = 2;
    c.media.od_track_bytes = 64 * 4096;
    c.media.strokes_per_surface = None;
    c.media.stroke_tracks = Some(32);
    c.cache.write_cache = false;
    Disk::in_memory(c).unwrap()
}

#[test]
fn zone_rules_keep_sequential_writers_free_of_media_errors() {
    let d = shingled_zoned(DriveKind::HmSmr);
    let mut x = 12345u64;
    for step in 0..400u32 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let z = 1 + (x >> 33) as u32 % 15;
        let zone = d.zone(z).unwrap();
        let n = 1 + (x >> 20) % 40;
        if zone.write_pointer_lba + n > zone.end_lba() {
            d.reset_zone(z).unwrap();
            continue;
        }
        d.append(z, &pattern(zone.write_pointer_lba, n, step))
            .unwrap();
        let len = zone.write_pointer_lba + n - zone.start_lba;
        let mut buf = vec![0u8; len as usize * SS];
        d.read(zone.start_lba, &mut buf).unwrap();
    }
}

#[test]
fn rewinding_a_write_pointer_and_rewriting_destroys_the_data_after_it() {
    let d = shingled_zoned(DriveKind::HmSmr);
    let zone = d.zone(3).unwrap();
    d.write(zone.start_lba, &pattern(zone.start_lba, 256, 1))
        .unwrap();
    d.set_write_pointer(3, zone.start_lba).unwrap();
    d.write(zone.start_lba, &pattern(zone.start_lba, 64, 2))
        .unwrap();
    d.finish_zone(3).unwrap();
    let mut buf = vec![0u8; 256 * SS];
    let e = d.read(zone.start_lba, &mut buf).unwrap_err();
    assert!(
        matches!(e, DeviceError::MediaError { lba, cause: MediaErrorCause::ShingleDamage } if lba > zone.start_lba + 60),
        "{e}"
    );
}

#[test]
fn host_aware_in_place_updates_damage_the_following_tracks() {
    let d = shingled_zoned(DriveKind::HaSmr);
    let zone = d.zone(2).unwrap();
    d.write(zone.start_lba, &pattern(zone.start_lba, 200, 1))
        .unwrap();
    d.write(zone.start_lba, &pattern(zone.start_lba, 8, 2))
        .unwrap();
    assert!(d.zone(2).unwrap().non_seq);
    let mut buf = vec![0u8; 200 * SS];
    expect_err(d.read(zone.start_lba, &mut buf), "MediaError");
}

#[test]
fn injected_media_errors_read_as_errors_until_rewritten() {
    let mut c = tiny_hm_config(16, 8);
    c.kind = DriveKind::Cmr;
    let d = Disk::in_memory(c).unwrap();
    d.write(100, &pattern(100, 16, 1)).unwrap();
    d.flush().unwrap();
    d.inject_media_error(105, 2).unwrap();
    let mut buf = vec![0u8; 16 * SS];
    let t0 = d.now();
    let e = d.read(100, &mut buf).unwrap_err();
    assert!(
        matches!(
            e,
            DeviceError::MediaError {
                lba: 105,
                cause: MediaErrorCause::Injected
            }
        ),
        "{e}"
    );
    assert!(d.now() > t0, "a failed read still takes time");
    let mut five = vec![0u8; 5 * SS];
    d.read(100, &mut five).unwrap();
    d.read(107, &mut five).unwrap();
    // Rewritten but still in the volatile cache: served from the cache.
    d.write(105, &pattern(105, 1, 2)).unwrap();
    expect_err(d.read(106, &mut [0u8; SS]), "MediaError");
    d.write(106, &pattern(106, 1, 2)).unwrap();
    d.flush().unwrap();
    d.read(100, &mut buf).unwrap();
    assert_eq!(tag_of(105, &buf[5 * SS..6 * SS]), Some(2));
    assert_eq!(tag_of(107, &buf[7 * SS..8 * SS]), Some(1));
    expect_err(
        d.inject_media_error(d.info().capacity_sectors, 1),
        "OutOfRange",
    );
}
