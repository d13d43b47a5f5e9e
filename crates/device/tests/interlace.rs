//! Interlaced media (drive kind `imr`): top tracks are written freely; writing a bottom track
//! destroys the overlapping span of its neighbouring top tracks until they are rewritten; the
//! damage persists in disk images and survives power cuts; a torn bottom write has already
//! damaged the tops for the part it wrote; the CMR twin damages nothing; the write cache's
//! coalesced destage applies the rule in LBA order.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use tegula_device::{
    profile, BlockDevice, DeviceError, Disk, DiskConfig, MediaErrorCause, OpenOptions, TrackInfo,
    TrackKind,
};

/// A tiny imr drive: 2 heads, 40 cylinders of 64-sector bottom tracks (top tracks 51
/// sectors), one recording zone, 1 MiB zones.
fn tiny_config(cache: bool) -> DiskConfig {
    let mut c = profile("imr").unwrap();
    c.media.heads = 2;
    c.media.cylinders = 40;
    c.media.od_track_bytes = 64 * SS as u64;
    c.media.od_id_ratio = 1.0;
    c.media.recording_zones = 1;
    c.zones.zone_size = 1 << 20;
    c.capacity = 4 << 20;
    c.cache.write_cache = cache;
    c.cache.size = 1 << 20;
    c
}

fn tiny(cache: bool) -> Disk {
    Disk::in_memory(tiny_config(cache)).unwrap()
}

fn track(d: &Disk, i: u64) -> TrackInfo {
    d.track_layout().unwrap().track(i).unwrap()
}

/// A bottom track with two neighbouring top tracks.
fn inner_bottom(d: &Disk) -> TrackInfo {
    let l = d.track_layout().unwrap();
    (0..l.track_count())
        .map(|i| l.track(i).unwrap())
        .find(|t| t.kind == TrackKind::Bottom && t.neighbour_tracks().count() == 2)
        .unwrap()
}

fn write_track(d: &Disk, t: &TrackInfo, tag: u32) {
    d.write(t.lba, &pattern(t.lba, t.sectors, tag)).unwrap();
}

/// Reads a whole track: Ok(()) when every sector holds `tag`, or the media error.
fn read_track(d: &Disk, t: &TrackInfo, tag: u32) -> Result<(), (u64, MediaErrorCause)> {
    let mut buf = vec![0u8; t.sectors as usize * SS];
    match d.read(t.lba, &mut buf) {
        Ok(_) => {
            for (k, s) in buf.chunks(SS).enumerate() {
                assert_eq!(tag_of(t.lba + k as u64, s), Some(tag), "track {}", t.index);
            }
            Ok(())
        }
        Err(DeviceError::MediaError { lba, cause }) => Err((lba, cause)),
        Err(e) => panic!("{e}"),
    }
}

fn neighbours(d: &Disk, b: &TrackInfo) -> Vec<TrackInfo> {
    b.neighbour_tracks().map(|i| track(d, i)).collect()
}

#[test]
fn tracks_alternate_bottom_and_top_with_more_sectors_on_bottoms() {
    let d = tiny(false);
    let l = d.track_layout().unwrap();
    let (bottoms, tops) = l.kind_counts();
    assert_eq!(bottoms + tops, l.track_count());
    assert!(bottoms.abs_diff(tops) <= 1);
    let b = inner_bottom(&d);
    assert_eq!(b.sectors, 64);
    for t in neighbours(&d, &b) {
        assert_eq!(t.kind, TrackKind::Top);
        assert_eq!(t.sectors, 51);
    }
}

#[test]
fn writing_a_bottom_track_destroys_its_neighbouring_tops_until_they_are_rewritten() {
    let d = tiny(false);
    let b = inner_bottom(&d);
    let tops = neighbours(&d, &b);
    for t in &tops {
        write_track(&d, t, 1);
    }
    write_track(&d, &b, 2);
    read_track(&d, &b, 2).unwrap();
    for t in &tops {
        assert_eq!(
            read_track(&d, t, 1).unwrap_err().1,
            MediaErrorCause::InterlaceDamage
        );
    }
    let e = d.read(tops[0].lba, &mut vec![0u8; SS]).unwrap_err();
    assert!(e.to_string().contains("bottom track"), "{e}");
    // Rewriting a top track heals it and damages nothing.
    write_track(&d, &tops[0], 3);
    read_track(&d, &tops[0], 3).unwrap();
    read_track(&d, &b, 2).unwrap();
    assert!(read_track(&d, &tops[1], 1).is_err());
    let s = d.stats();
    assert_eq!(s.bottom_bytes_written, b.sectors * SS as u64);
    assert_eq!(
        s.top_bytes_written,
        (2 * tops[0].sectors + tops[1].sectors) * SS as u64
    );
    assert_eq!(
        s.interlace_destroyed_sectors,
        tops.iter().map(|t| t.sectors).sum::<u64>()
    );
}

#[test]
fn tracks_far_from_the_written_bottom_are_untouched() {
    let d = tiny(false);
    let l = d.track_layout().unwrap().clone();
    for i in 0..l.track_count() {
        write_track(&d, &l.track(i).unwrap(), 7);
    }
    // The sequential pass damaged tops written before their next bottom; rewrite the tops.
    for i in 0..l.track_count() {
        let t = l.track(i).unwrap();
        if t.kind == TrackKind::Top {
            write_track(&d, &t, 7);
        }
    }
    let b = inner_bottom(&d);
    write_track(&d, &b, 8);
    for i in 0..l.track_count() {
        let t = l.track(i).unwrap();
        let hit = b.neighbour_tracks().any(|n| n == i);
        let tag = if i == b.index { 8 } else { 7 };
        assert_eq!(read_track(&d, &t, tag).is_err(), hit, "track {i}");
    }
}

#[test]
fn the_cmr_twin_has_the_same_geometry_and_damages_nothing() {
    let d = Disk::in_memory(tiny_config(false).cmr_twin()).unwrap();
    let imr = tiny(false);
    assert_eq!(
        d.track_layout().unwrap().track_count(),
        imr.track_layout().unwrap().track_count()
    );
    let b = inner_bottom(&d);
    for t in neighbours(&d, &b) {
        write_track(&d, &t, 1);
    }
    write_track(&d, &b, 2);
    for t in neighbours(&d, &b) {
        read_track(&d, &t, 1).unwrap();
    }
    assert_eq!(d.stats().interlace_destroyed_sectors, 0);
}

#[test]
fn damage_persists_in_the_image_and_across_a_power_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("imr.img");
    let d = Disk::create_image(&path, tiny_config(true)).unwrap();
    let b = inner_bottom(&d);
    let tops = neighbours(&d, &b);
    for t in &tops {
        write_track(&d, t, 1);
    }
    d.flush().unwrap();
    write_track(&d, &b, 2);
    d.flush().unwrap();
    d.power_cut();
    d.power_on();
    assert!(read_track(&d, &tops[0], 1).is_err());
    drop(d);
    let d = Disk::open_image(&path, OpenOptions::default()).unwrap();
    for t in &tops {
        assert_eq!(
            read_track(&d, t, 1).unwrap_err().1,
            MediaErrorCause::InterlaceDamage
        );
    }
    read_track(&d, &b, 2).unwrap();
    assert!(d.stats().bottom_bytes_written > 0);
}

#[test]
fn a_torn_bottom_write_has_already_damaged_the_tops_for_the_part_it_wrote() {
    let mut damaged_some = false;
    for seed in 0..16 {
        let d = tiny(false);
        let b = inner_bottom(&d);
        let tops = neighbours(&d, &b);
        for t in &tops {
            write_track(&d, t, 1);
        }
        d.arm_power_cut(1, seed);
        let r = d.write(b.lba, &pattern(b.lba, b.sectors, 2));
        assert!(matches!(r, Err(DeviceError::PowerLoss)));
        let lost = d.power_on().lost;
        let persisted = lost.iter().next().map_or(b.sectors, |(a, _)| a - b.lba);
        let destroyed = d.stats().interlace_destroyed_sectors;
        if persisted == 0 {
            assert_eq!(destroyed, 0);
        } else {
            damaged_some = true;
            assert!(destroyed > 0, "seed {seed}: {persisted} sectors written");
            assert!(tops.iter().any(|t| read_track(&d, t, 1).is_err()));
        }
    }
    assert!(damaged_some);
}

/// With the write cache on, writes that reach the cache while the heads are busy are destaged
/// in elevator order, coalesced: a top-track write queued behind a bottom write it neighbours
/// is destroyed again when both are destaged in one pass (why a read-modify-write must sync
/// between "write bottoms" and "restore tops").
#[test]
fn a_coalesced_destage_of_top_bottom_top_destroys_the_first_top() {
    let d = tiny(true);
    let t: Vec<TrackInfo> = (2..6).map(|i| track(&d, i)).collect();
    let kinds: Vec<TrackKind> = t.iter().map(|t| t.kind).collect();
    use TrackKind::{Bottom, Top};
    assert_eq!(kinds, [Bottom, Top, Bottom, Top]);
    assert!(t[2].neighbour_tracks().any(|n| n == t[1].index));
    // Bottoms first, tops after, all into the cache: the first bottom starts destaging at
    // once; the rest wait and go to the media as one run (top, bottom, top) in LBA order.
    write_track(&d, &t[0], 2);
    write_track(&d, &t[2], 2);
    write_track(&d, &t[1], 1);
    write_track(&d, &t[3], 1);
    d.flush().unwrap();
    assert_eq!(
        read_track(&d, &t[1], 1).unwrap_err().1,
        MediaErrorCause::InterlaceDamage
    );
    read_track(&d, &t[0], 2).unwrap();
    read_track(&d, &t[2], 2).unwrap();
    read_track(&d, &t[3], 1).unwrap();
    // With a flush between the bottoms and the tops, nothing is lost.
    let d = tiny(true);
    write_track(&d, &t[0], 2);
    write_track(&d, &t[2], 2);
    d.flush().unwrap();
    write_track(&d, &t[1], 1);
    write_track(&d, &t[3], 1);
    d.flush().unwrap();
    for (x, tag) in t.iter().zip([2, 1, 2, 1]) {
        read_track(&d, x, tag).unwrap();
    }
}
