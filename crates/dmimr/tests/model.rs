//! The drive-managed IMR drive against a reference model: random writes, flushes and
//! discards read back exactly, no top track holding data is ever left damaged, bottom writes
//! next to written tops are read-modify-writes, a sequential fill of the bottoms needs none,
//! and an image reopens with everything flushed.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use tegula_device::{profile, BlockDevice, DeviceError, Disk, MediaErrorCause, OpenOptions};
use tegula_dmimr::{DmImr, Error, Probe};

#[test]
fn random_writes_flushes_and_discards_read_back_exactly() {
    for cache in [false, true] {
        let (_d, dm) = drive(4096, cache);
        let cap = dm.info().capacity_sectors;
        let mut model = Model::new(cap);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for i in 0..600u64 {
            match rng.gen_range(0..20) {
                0 => {
                    dm.flush().unwrap();
                }
                1 => {
                    // Discard: the sectors may read as before or as zeros afterwards.
                    let lba = rng.gen_range(0..cap);
                    let n = rng.gen_range(1..=40).min(cap - lba);
                    dm.discard(lba, n).unwrap();
                    model.maybe(lba, &vec![0u8; (n * SS) as usize]);
                    model.verify(&dm, "after a discard");
                    model.settle(&dm);
                }
                _ => {
                    let lba = rng.gen_range(0..cap);
                    let n = rng.gen_range(1..=40).min(cap - lba);
                    let data = content(i + 1, lba, n);
                    dm.write(lba, &data).unwrap();
                    model.write(lba, &data);
                }
            }
            if i % 50 == 0 {
                model.verify(&dm, &format!("op {i}, cache {cache}"));
                assert!(dm.damaged_valid_tops().is_empty());
            }
        }
        model.verify(&dm, "the end");
        assert!(dm.damaged_valid_tops().is_empty());
        let s = dm.stats();
        assert!(s.rmw_ops > 10, "{s:?}");
        assert!(s.top_rewrites >= s.rmw_ops);
        assert!(s.rmw_syncs == 3 * s.rmw_ops, "{s:?}");
    }
}

#[test]
fn a_bottom_write_next_to_written_tops_is_a_read_modify_write() {
    let (d, dm) = drive(4096, true);
    let cap = dm.info().capacity_sectors;
    let everything = content(1, 0, cap);
    dm.write(0, &everything).unwrap();
    dm.flush().unwrap();
    assert_eq!(
        dm.stats().rmw_ops,
        0,
        "a fill in logical order needs no RMW"
    );
    let before = dm.stats();
    let new = content(2, 0, 3);
    dm.write(0, &new).unwrap();
    let s = dm.stats();
    assert_eq!(s.rmw_ops - before.rmw_ops, 1);
    assert_eq!(s.rmw_syncs - before.rmw_syncs, 3);
    assert!(s.top_rewrites - before.top_rewrites >= 1);
    let mut m = Model::new(cap);
    m.write(0, &everything);
    m.write(0, &new);
    m.verify(&dm, "after the RMW");
    // The same write straight to the raw media destroys the tops the layer protected.
    let tl = d.track_layout().unwrap().clone();
    let first_bottom = (0..tl.track_count())
        .filter_map(|i| tl.track(i))
        .filter(|t| t.kind == tegula_device::TrackKind::Bottom)
        .find(|t| !tl.damaged_by(t.lba, 3).is_empty())
        .unwrap();
    let (a, _) = tl.damaged_by(first_bottom.lba, 3)[0];
    d.write(first_bottom.lba, &new).unwrap();
    let mut one = vec![0u8; SS as usize];
    match d.read(a, &mut one) {
        Err(DeviceError::MediaError { cause, .. }) => {
            assert_eq!(cause, MediaErrorCause::InterlaceDamage)
        }
        other => panic!("the raw write should have destroyed LBA {a}: {other:?}"),
    }
}

#[test]
fn a_sequential_fill_of_the_first_phase_writes_only_bottoms() {
    let (_d, dm) = drive(4096, true);
    let [bottoms, _] = dm.phase_ends();
    let mut lba = 0;
    while lba < bottoms {
        let n = 7.min(bottoms - lba);
        dm.write(lba, &content(3, lba, n)).unwrap();
        lba += n;
    }
    dm.flush().unwrap();
    let s = dm.stats();
    assert_eq!((s.rmw_ops, s.top_bytes), (0, 0), "{s:?}");
    assert_eq!(s.bottom_bytes, bottoms * SS);
    let (b, t) = dm.tracks_in_use();
    assert!(b > 0 && t == 0);
}

#[test]
fn an_image_reopens_with_everything_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dm.img");
    let disk = Disk::create_image(&p, config(4096, true)).unwrap();
    let dm = DmImr::format(Arc::new(disk), small()).unwrap();
    let cap = dm.info().capacity_sectors;
    let mut m = Model::new(cap);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    for i in 0..200 {
        let lba = rng.gen_range(0..cap);
        let n = rng.gen_range(1..=24).min(cap - lba);
        let data = content(i + 10, lba, n);
        dm.write(lba, &data).unwrap();
        m.write(lba, &data);
    }
    let rmw = dm.stats().rmw_ops;
    assert!(rmw > 0);
    dm.close().unwrap();
    let disk = Disk::open_image(&p, OpenOptions::default()).unwrap();
    assert!(DmImr::is_formatted(&disk));
    let dm = DmImr::open(Arc::new(disk)).unwrap();
    assert!(dm.open_warnings().is_empty(), "{:?}", dm.open_warnings());
    m.verify(&dm, "reopened");
    assert!(dm.damaged_valid_tops().is_empty());
    dm.close().unwrap();
    // Probing opens it too, reading no more than `open` does (one read of the superblock,
    // where `is_formatted` then `open` read it twice).
    let disk = Arc::new(Disk::open_image(&p, OpenOptions::default()).unwrap());
    let before = disk.stats().reads;
    let Ok(Probe::Opened(dm)) = DmImr::probe(disk.clone()) else {
        panic!("a formatted drive probed as raw");
    };
    let probe_reads = disk.stats().reads - before;
    m.verify(dm.as_ref(), "probed");
    drop(dm);
    let before = disk.stats().reads;
    drop(DmImr::open(disk.clone()).unwrap());
    let open_reads = disk.stats().reads - before;
    assert_eq!(probe_reads, open_reads);
    let before = disk.stats().reads;
    assert!(DmImr::is_formatted(&disk));
    assert_eq!(
        disk.stats().reads - before,
        1,
        "is_formatted reads the superblock"
    );
}

#[test]
fn unformatted_and_non_interlaced_drives_are_refused() {
    let d = Arc::new(Disk::in_memory(config(4096, false)).unwrap());
    assert!(!DmImr::is_formatted(&d));
    assert!(matches!(DmImr::open(d.clone()), Err(Error::NotFormatted)));
    let Ok(Probe::Raw(back)) = DmImr::probe(d.clone()) else {
        panic!("an unformatted drive probed as drive-managed");
    };
    assert!(Arc::ptr_eq(&back, &d));
    // A raw drive used as a plain disk: its first top track (where a superblock would be)
    // destroyed by writes to the bottoms around it. Still not drive-managed.
    d.write(0, &vec![5u8; (4 * BOTTOM * SS) as usize]).unwrap();
    assert!(!DmImr::is_formatted(&d));
    let mut c = profile("cmr-7200").unwrap();
    c.capacity = 512 << 20;
    let cmr = Arc::new(Disk::in_memory(c).unwrap());
    let e = DmImr::format(cmr, small()).unwrap_err();
    assert!(e.to_string().contains("interlaced"), "{e}");
    // A staging area too small for two tracks is refused with the reason.
    let d = Arc::new(Disk::in_memory(config(4096, false)).unwrap());
    let e = DmImr::format(
        d,
        tegula_dmimr::FormatOptions {
            staging_bytes: 8 * SS,
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("staging"), "{e}");
}

#[test]
fn writes_outside_the_drive_or_of_partial_sectors_are_refused() {
    let (_d, dm) = drive(4096, false);
    let cap = dm.info().capacity_sectors;
    assert!(matches!(
        dm.write(cap, &vec![0u8; SS as usize]),
        Err(DeviceError::OutOfRange { .. })
    ));
    assert!(matches!(
        dm.write(0, &[0u8; 100]),
        Err(DeviceError::BadLength { .. })
    ));
    // The drive still works.
    dm.write(0, &content(1, 0, 1)).unwrap();
}
