use super::*;

const ZONE: u64 = 1 << 20;
const SS: usize = 4096;

fn opts() -> ZoneFilesOptions {
    ZoneFilesOptions {
        zone_size: ZONE,
        capacity: Some(8 * ZONE),
        ..ZoneFilesOptions::default()
    }
}

fn reopen(dir: &Path) -> ZoneFiles {
    ZoneFiles::open(
        dir,
        ZoneFilesOptions {
            create: false,
            ..ZoneFilesOptions::default()
        },
    )
    .expect("reopen")
}

fn block(b: u8, sectors: usize) -> Vec<u8> {
    vec![b; sectors * SS]
}

/// LBA of sector `s` of zone `z`.
fn lba(z: u32, s: u64) -> u64 {
    u64::from(z) * (ZONE / SS as u64) + s
}

#[test]
fn zones_keep_their_data_and_write_pointers_across_a_reopen() {
    let t = tempfile::tempdir().expect("tmp");
    let dir = t.path().join("dev");
    {
        let d = ZoneFiles::open(&dir, opts()).expect("create");
        let i = d.info();
        assert_eq!(
            (i.zones, i.conventional_zones, i.kind.as_str()),
            (8, 1, "zone-files")
        );
        d.write(lba(0, 5), &block(1, 2))
            .expect("conventional write");
        d.write(lba(3, 0), &block(2, 3)).expect("sequential write");
        d.flush().expect("flush");
    }
    let d = reopen(&dir);
    let mut b = block(0, 2);
    d.read(lba(0, 5), &mut b).expect("read");
    assert_eq!(b, block(1, 2));
    let z = d.zone(3).expect("zone");
    assert_eq!(
        (z.index, z.start_lba, z.write_pointer_lba),
        (3, lba(3, 0), lba(3, 3))
    );
    let mut b = block(0, 3);
    d.read(lba(3, 0), &mut b).expect("read");
    assert_eq!(b, block(2, 3));
    assert_eq!(d.report_zones(ZoneFilter::All).len(), 8);
}

#[test]
fn zone_rules_are_reported_in_the_devices_own_numbers() {
    let t = tempfile::tempdir().expect("tmp");
    let d = ZoneFiles::open(&t.path().join("dev"), opts()).expect("create");
    d.write(lba(2, 0), &block(1, 1)).expect("write");
    match d.write(lba(2, 3), &block(1, 1)) {
        Err(DeviceError::UnalignedWrite {
            zone,
            write_pointer,
            lba: at,
        }) => assert_eq!((zone, write_pointer, at), (2, lba(2, 1), lba(2, 3))),
        other => panic!("{other:?}"),
    }
    match d.read(lba(2, 0), &mut block(0, 2)) {
        Err(DeviceError::ReadPastWritePointer { zone, .. }) => assert_eq!(zone, 2),
        other => panic!("{other:?}"),
    }
    let last = ZONE / SS as u64 - 1;
    d.write(lba(4, 0), &block(1, last as usize)).expect("fill");
    assert!(matches!(
        d.write(lba(4, last), &block(1, 2)),
        Err(DeviceError::ZoneBoundary { zone: 4, .. })
    ));
    assert!(matches!(
        d.reset_zone(0),
        Err(DeviceError::InvalidZoneOp { zone: 0, .. })
    ));
    assert!(matches!(
        d.reset_zone(8),
        Err(DeviceError::NoSuchZone { .. })
    ));
}

#[test]
fn a_zone_flush_makes_only_that_zone_durable() {
    let t = tempfile::tempdir().expect("tmp");
    let dir = t.path().join("dev");
    {
        let d = ZoneFiles::open(&dir, opts()).expect("create");
        d.write(lba(1, 0), &block(1, 4)).expect("write");
        d.write(lba(2, 0), &block(2, 4)).expect("write");
        let (s1, s2) = (d.zone_syncs(1).expect("1"), d.zone_syncs(2).expect("2"));
        d.flush_zones(&[1]).expect("flush zone 1");
        assert!(d.zone_syncs(1).expect("1") > s1, "zone 1 was not synced");
        assert_eq!(d.zone_syncs(2).expect("2"), s2, "zone 2 was synced");
        // A second flush of a clean zone syncs nothing.
        let s1 = d.zone_syncs(1).expect("1");
        d.flush_zones(&[1]).expect("flush zone 1 again");
        assert_eq!(d.zone_syncs(1).expect("1"), s1);
        // Dropped without a flush: what a crash of the process leaves.
    }
    let d = reopen(&dir);
    assert_eq!(d.zone(1).expect("1").write_pointer_lba, lba(1, 4));
    assert_eq!(
        d.zone(2).expect("2").write_pointer_lba,
        lba(2, 0),
        "zone 2's unflushed writes survived"
    );
}

#[test]
fn a_reset_is_durable_and_drops_the_zones_unwritten_pages() {
    let t = tempfile::tempdir().expect("tmp");
    let dir = t.path().join("dev");
    let d = ZoneFiles::open(&dir, opts()).expect("create");
    let io = || -> Option<u64> {
        std::fs::read_to_string("/proc/self/io")
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("cancelled_write_bytes:"))?
            .trim()
            .parse()
            .ok()
    };
    let before = io();
    d.write(lba(5, 0), &block(7, 128)).expect("write 512 KiB");
    d.reset_zone(5).expect("reset");
    let z = d.zone(5).expect("5");
    assert_eq!(
        (z.condition, z.write_pointer_lba),
        (ZoneCondition::Empty, lba(5, 0))
    );
    match (before, io()) {
        (Some(a), Some(b)) => assert!(
            b - a >= 512 << 10,
            "the reset zone's 512 KiB of dirty pages were written back ({} bytes cancelled)",
            b - a
        ),
        _ => println!("SKIPPED the page-cache check: no /proc/self/io on this kernel"),
    }
    d.write(lba(5, 0), &block(8, 1)).expect("write after reset");
    d.flush().expect("flush");
    drop(d);
    let d = reopen(&dir);
    assert_eq!(d.zone(5).expect("5").write_pointer_lba, lba(5, 1));
    let mut b = block(0, 1);
    d.read(lba(5, 0), &mut b).expect("read");
    assert_eq!(b, block(8, 1));
}

#[test]
fn a_reset_cut_short_leaves_the_zone_as_it_was() {
    let t = tempfile::tempdir().expect("tmp");
    let dir = t.path().join("dev");
    {
        let d = ZoneFiles::open(&dir, opts()).expect("create");
        d.write(lba(6, 0), &block(3, 2)).expect("write");
        d.flush().expect("flush");
    }
    // What a crash between building the empty file and the rename leaves.
    std::fs::write(dir.join("zone-00006.new"), b"partial").expect("leftover");
    std::fs::write(dir.join("zone-00006.new.zones"), b"partial").expect("leftover");
    let d = reopen(&dir);
    assert!(!dir.join("zone-00006.new").exists());
    assert!(!dir.join("zone-00006.new.zones").exists());
    assert_eq!(d.zone(6).expect("6").write_pointer_lba, lba(6, 2));
}

#[test]
fn creation_and_opening_refuse_what_is_not_theirs() {
    let t = tempfile::tempdir().expect("tmp");
    let dir = t.path().join("dev");
    std::fs::create_dir(&dir).expect("dir");
    std::fs::write(dir.join("precious"), b"data").expect("file");
    assert!(matches!(
        ZoneFiles::open(&dir, opts()),
        Err(DeviceError::Image { .. })
    ));
    assert_eq!(std::fs::read(dir.join("precious")).expect("kept"), b"data");
    let none = t.path().join("none");
    assert!(ZoneFiles::open(
        &none,
        ZoneFilesOptions {
            create: false,
            ..opts()
        }
    )
    .is_err());
    assert!(!none.exists());
    let dev = t.path().join("dev2");
    let d = ZoneFiles::open(&dev, opts()).expect("create");
    assert!(matches!(
        ZoneFiles::open(&dev, opts()),
        Err(DeviceError::Locked { .. })
    ));
    drop(d);
    let mut desc = std::fs::read(dev.join("zones")).expect("descriptor");
    desc[20] ^= 1;
    std::fs::write(dev.join("zones"), desc).expect("corrupt");
    assert!(matches!(
        ZoneFiles::open(&dev, opts()),
        Err(DeviceError::Image { .. })
    ));
}

/// Sectors whose every byte tells where it is (the low bytes of its device offset, mixed).
fn patterned(first_lba: u64, sectors: usize) -> Vec<u8> {
    (0..sectors * SS)
        .map(|i| {
            let at = first_lba * SS as u64 + i as u64;
            (at ^ (at >> 8) ^ (at >> 16)) as u8
        })
        .collect()
}

/// The device with only `read` of its own: reads bytes the default way (whole sectors).
struct SectorsOnly {
    dev: std::sync::Arc<ZoneFiles>,
}

impl BlockDevice for SectorsOnly {
    crate::forward!(dev: info, read, write_with, flush, discard, submit, now, idle);
}

/// Reads of byte ranges (in the conventional zone, inside a sequential zone, across two
/// zones, ending at a write pointer) copy exactly the bytes a read of the sectors around
/// them finds, directly and through an `Arc`; a range past a write pointer is refused with
/// the zone's number, as a sector read is; an empty range is refused.
#[test]
fn byte_reads_return_what_the_sectors_around_them_hold() {
    let t = tempfile::tempdir().expect("tmp");
    let d = ZoneFiles::open(&t.path().join("dev"), opts()).expect("create");
    let zone_sectors = (ZONE / SS as u64) as usize;
    d.write(lba(0, 0), &patterned(lba(0, 0), 16))
        .expect("conventional");
    d.write(lba(2, 0), &patterned(lba(2, 0), zone_sectors))
        .expect("fill zone 2");
    d.write(lba(3, 0), &patterned(lba(3, 0), 5))
        .expect("zone 3");
    let ss = SS as u64;
    let plain = SectorsOnly {
        dev: std::sync::Arc::new(d),
    };
    let zone3 = lba(3, 0) * ss;
    let cases = [
        (100, 5000),
        (3 * ss - 1, 2),
        (lba(2, 7) * ss + 13, 4096),
        (zone3 - 3000, 6000),
        (zone3 + 5 * ss - 77, 77),
        (zone3, 5 * SS),
    ];
    for (offset, len) in cases {
        let mut want = vec![0u8; len];
        plain
            .read_bytes(offset, &mut want)
            .expect("default byte read");
        let first = offset / ss;
        let skip = (offset - first * ss) as usize;
        let sectors = patterned(first, (skip + len).div_ceil(SS));
        assert_eq!(
            want,
            sectors[skip..skip + len],
            "default read of {offset}+{len}"
        );
        let mut got = vec![0u8; len];
        (*plain.dev)
            .read_bytes(offset, &mut got)
            .expect("byte read");
        assert_eq!(got, want, "{offset}+{len}");
        let mut via = vec![0u8; len];
        plain
            .dev
            .read_bytes(offset, &mut via)
            .expect("through an Arc");
        assert_eq!(via, want, "{offset}+{len} through an Arc");
    }
    for dev in [&plain as &dyn BlockDevice, &*plain.dev] {
        match dev.read_bytes(zone3 + 5 * ss - 10, &mut [0u8; 11]) {
            Err(DeviceError::ReadPastWritePointer { zone, .. }) => assert_eq!(zone, 3),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            dev.read_bytes(100, &mut []),
            Err(DeviceError::BadLength { .. })
        ));
        assert!(matches!(
            dev.read_bytes(8 * ZONE - 10, &mut [0u8; 11]),
            Err(DeviceError::OutOfRange { .. })
        ));
    }
}
