//! ZBC / ZAC conformance of the emulated host-managed and host-aware drives, in the spirit of
//! libzbc's numbered test scripts: every zone rule, typed error and state transition.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use tegula_device::{
    Banded, BlockDevice, DeviceError, Disk, WriteFlags, ZoneAction, ZoneCondition, ZoneFilter,
    ZoneTarget, ZoneType, ZonedDevice, MS,
};

const ZS: u64 = 256; // sectors per 1 MiB zone

fn start(z: u32) -> u64 {
    z as u64 * ZS
}

fn cond(d: &Disk, z: u32) -> ZoneCondition {
    d.zone(z).unwrap().condition
}

fn wp(d: &Disk, z: u32) -> u64 {
    d.zone(z).unwrap().write_pointer_lba
}

#[test]
fn layout_has_conventional_zones_first_then_sequential_write_required() {
    let d = tiny_hm(64, 8);
    let info = d.info();
    assert_eq!(info.zones, 64);
    assert_eq!(info.conventional_zones, 1);
    assert_eq!(info.zone_sectors, ZS);
    assert_eq!(info.capacity_sectors, 64 * ZS);
    let zones = d.report_zones(ZoneFilter::All);
    assert_eq!(zones.len(), 64);
    assert_eq!(zones[0].zone_type, ZoneType::Conventional);
    assert_eq!(zones[0].condition, ZoneCondition::NotWritePointer);
    for (i, z) in zones.iter().enumerate().skip(1) {
        assert_eq!(z.index as usize, i);
        assert_eq!(z.zone_type, ZoneType::SeqWriteRequired);
        assert_eq!(z.condition, ZoneCondition::Empty);
        assert_eq!(z.start_lba, i as u64 * ZS);
        assert_eq!(z.write_pointer_lba, z.start_lba);
        assert_eq!(z.len_lba, ZS);
    }
}

#[test]
fn sequential_writes_at_the_write_pointer_advance_it_and_read_back() {
    let d = tiny_hm(64, 8);
    let z = 3;
    let (lba, _) = d.append(z, &pattern(start(z), 4, 1)).unwrap();
    assert_eq!(lba, start(z));
    let (lba2, _) = d.append(z, &pattern(start(z) + 4, 2, 1)).unwrap();
    assert_eq!(lba2, start(z) + 4);
    assert_eq!(wp(&d, z), start(z) + 6);
    assert_eq!(cond(&d, z), ZoneCondition::ImplicitOpen);
    let mut buf = vec![0u8; 6 * SS];
    d.read(start(z), &mut buf).unwrap();
    assert_eq!(buf, pattern(start(z), 6, 1));
}

#[test]
fn swr_write_away_from_the_write_pointer_is_unaligned_write_naming_zone_wp_and_lba() {
    let d = tiny_hm(64, 8);
    let z = 5;
    d.write(start(z), &pattern(start(z), 2, 0)).unwrap();
    for bad in [start(z) + 1, start(z) + 7, start(z)] {
        let e = expect_err(d.write(bad, &pattern(bad, 1, 0)), "UnalignedWrite");
        match e {
            DeviceError::UnalignedWrite {
                zone,
                write_pointer,
                lba,
            } => {
                assert_eq!((zone, write_pointer, lba), (z, start(z) + 2, bad));
            }
            other => panic!("{other}"),
        }
        let msg = e.to_string();
        assert!(msg.contains(&format!("zone {z}")), "{msg}");
    }
    // The failed writes changed nothing.
    assert_eq!(wp(&d, z), start(z) + 2);
    assert_eq!(cond(&d, z), ZoneCondition::ImplicitOpen);
}

#[test]
fn write_crossing_the_zone_end_is_zone_boundary_and_changes_nothing() {
    let d = tiny_hm(64, 8);
    let z = 2;
    d.write(start(z), &vec![1u8; (ZS as usize - 2) * SS])
        .unwrap();
    let e = expect_err(
        d.write(start(z) + ZS - 2, &vec![2u8; 4 * SS]),
        "ZoneBoundary",
    );
    match e {
        DeviceError::ZoneBoundary {
            zone,
            lba,
            sectors,
            zone_end,
            write_pointer,
        } => {
            assert_eq!(zone, z);
            assert_eq!(lba, start(z) + ZS - 2);
            assert_eq!(sectors, 4);
            assert_eq!(zone_end, start(z + 1));
            assert_eq!(write_pointer, start(z) + ZS - 2);
        }
        other => panic!("{other}"),
    }
    assert_eq!(wp(&d, z), start(z) + ZS - 2);
    assert_eq!(cond(&d, z + 1), ZoneCondition::Empty);
}

#[test]
fn filling_a_zone_makes_it_full_and_further_writes_are_zone_full() {
    let d = tiny_hm(64, 8);
    let z = 4;
    d.write(start(z), &vec![1u8; ZS as usize * SS]).unwrap();
    assert_eq!(cond(&d, z), ZoneCondition::Full);
    assert_eq!(wp(&d, z), start(z + 1));
    let e = expect_err(d.write(start(z), &[0u8; SS]), "ZoneFull");
    assert!(
        matches!(e, DeviceError::ZoneFull { zone, write_pointer, lba }
        if zone == z && write_pointer == start(z + 1) && lba == start(z))
    );
    // A full zone no longer counts as open.
    assert!(d.report_zones(ZoneFilter::Open).is_empty());
}

#[test]
fn read_past_the_write_pointer_is_refused() {
    let d = tiny_hm(64, 8);
    let z = 6;
    d.write(start(z), &pattern(start(z), 3, 0)).unwrap();
    let mut buf = vec![0u8; 4 * SS];
    let e = expect_err(d.read(start(z), &mut buf), "ReadPastWritePointer");
    assert!(
        matches!(e, DeviceError::ReadPastWritePointer { zone, write_pointer, lba, sectors }
        if zone == z && write_pointer == start(z) + 3 && lba == start(z) && sectors == 4)
    );
    let mut one = vec![0u8; SS];
    expect_err(d.read(start(z + 1), &mut one), "ReadPastWritePointer");
    // A read spanning a full zone into an empty one fails too.
    d.finish_zone(z).unwrap();
    let mut two = vec![0u8; 2 * SS];
    expect_err(d.read(start(z + 1) - 1, &mut two), "ReadPastWritePointer");
    d.read(start(z + 1) - 2, &mut two).unwrap();
}

#[test]
fn unrestricted_reads_return_zeros_past_the_write_pointer_at_command_cost_only() {
    let mut c = tiny_hm_config(64, 8);
    c.zones.unrestricted_reads = true;
    let d = Disk::in_memory(c).unwrap();
    let z = 7;
    d.write_with(
        start(z),
        &pattern(start(z), 2, 9),
        tegula_device::WriteFlags { fua: true },
    )
    .unwrap();
    let mut buf = vec![0xffu8; 5 * SS];
    d.read(start(z), &mut buf).unwrap();
    assert_eq!(&buf[..2 * SS], &pattern(start(z), 2, 9)[..]);
    assert!(buf[2 * SS..].iter().all(|&b| b == 0));
    // Entirely unwritten: zeros, no media access, only the command overhead.
    let media_reads = d.stats().media_reads;
    let mut one = vec![0xffu8; 8 * SS];
    let done = d.read(start(z + 3), &mut one).unwrap();
    assert!(one.iter().all(|&b| b == 0));
    assert_eq!(d.stats().media_reads, media_reads);
    assert_eq!(
        done.service(),
        MS / 5,
        "a read past the pointer costs the 0.2 ms overhead"
    );
}

#[test]
fn conventional_zone_takes_writes_anywhere_but_not_across_into_a_sequential_zone() {
    let d = tiny_hm(64, 8);
    for lba in [100u64, 3, 200, 3, 0] {
        d.write(lba, &pattern(lba, 2, lba as u32)).unwrap();
    }
    let mut buf = vec![0u8; 2 * SS];
    d.read(3, &mut buf).unwrap();
    assert_eq!(buf, pattern(3, 2, 3));
    let e = expect_err(d.write(ZS - 1, &vec![0u8; 2 * SS]), "ZoneBoundary");
    assert!(matches!(e, DeviceError::ZoneBoundary { zone: 0, zone_end, .. } if zone_end == ZS));
    assert_eq!(cond(&d, 1), ZoneCondition::Empty);
    // The last sector of the conventional zone is still writable on its own.
    d.write(ZS - 1, &pattern(ZS - 1, 1, 0)).unwrap();
    // Reads may cross from a conventional zone into written sequential sectors.
    d.write(ZS, &pattern(ZS, 1, 0)).unwrap();
    d.read(ZS - 1, &mut buf).unwrap();
    assert_eq!(&buf[SS..], &pattern(ZS, 1, 0)[..]);
}

#[test]
fn implicit_opens_beyond_the_limit_implicitly_close_an_implicitly_open_zone() {
    let d = tiny_hm(64, 3);
    for z in 1..=3 {
        d.write(start(z), &[1u8; SS]).unwrap();
    }
    assert_eq!(d.report_zones(ZoneFilter::Open).len(), 3);
    d.write(start(4), &[1u8; SS]).unwrap();
    let open = d.report_zones(ZoneFilter::Open);
    assert_eq!(open.len(), 3, "the limit holds");
    assert_eq!(cond(&d, 4), ZoneCondition::ImplicitOpen);
    let closed = d.report_zones(ZoneFilter::Condition(ZoneCondition::Closed));
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0].write_pointer_lba, closed[0].start_lba + 1);
    // The closed zone takes writes again (reopening it implicitly).
    let c = closed[0].index;
    d.write(start(c) + 1, &[2u8; SS]).unwrap();
    assert_eq!(cond(&d, c), ZoneCondition::ImplicitOpen);
    assert_eq!(d.report_zones(ZoneFilter::Open).len(), 3);
}

#[test]
fn explicit_opens_beyond_the_limit_are_too_many_open_zones() {
    let d = tiny_hm(64, 3);
    for z in 1..=3 {
        d.open_zone(z).unwrap();
        assert_eq!(cond(&d, z), ZoneCondition::ExplicitOpen);
    }
    let e = expect_err(d.open_zone(4), "TooManyOpenZones");
    assert!(matches!(
        e,
        DeviceError::TooManyOpenZones {
            zone: 4,
            open: 3,
            max_open: 3
        }
    ));
    assert_eq!(cond(&d, 4), ZoneCondition::Empty);
    // No implicitly open zone can make room for a write either.
    expect_err(d.write(start(4), &[0u8; SS]), "TooManyOpenZones");
    assert_eq!(cond(&d, 4), ZoneCondition::Empty);
    assert_eq!(wp(&d, 4), start(4));
    // Writes to explicitly open zones still work.
    d.write(start(2), &[0u8; SS]).unwrap();
    assert_eq!(cond(&d, 2), ZoneCondition::ExplicitOpen);
    // Closing one frees a resource.
    d.close_zone(1).unwrap();
    assert_eq!(cond(&d, 1), ZoneCondition::Empty);
    d.open_zone(4).unwrap();
}

#[test]
fn explicit_open_at_the_limit_closes_an_implicitly_open_zone() {
    let d = tiny_hm(64, 2);
    d.write(start(1), &[1u8; SS]).unwrap();
    d.write(start(2), &[1u8; SS]).unwrap();
    d.open_zone(3).unwrap();
    assert_eq!(cond(&d, 3), ZoneCondition::ExplicitOpen);
    assert_eq!(d.report_zones(ZoneFilter::Open).len(), 2);
    assert_eq!(cond(&d, 1), ZoneCondition::Closed);
}

/// Puts zone `z` in `c` (one of empty, implicit open, explicit open with and without data,
/// closed, full); returns the write pointer it has then.
fn make(d: &Disk, z: u32, c: &str) -> u64 {
    match c {
        "empty" => {}
        "implicit-open" => {
            d.write(start(z), &[1u8; 3 * SS]).unwrap();
        }
        "explicit-open-empty" => {
            d.open_zone(z).unwrap();
        }
        "explicit-open" => {
            d.open_zone(z).unwrap();
            d.write(start(z), &[1u8; 3 * SS]).unwrap();
        }
        "closed" => {
            d.write(start(z), &[1u8; 3 * SS]).unwrap();
            d.close_zone(z).unwrap();
        }
        "full" => {
            d.write(start(z), &[1u8; 3 * SS]).unwrap();
            d.finish_zone(z).unwrap();
        }
        other => panic!("{other}"),
    }
    wp(d, z)
}

#[test]
fn zone_actions_move_every_condition_to_the_specified_one() {
    use ZoneCondition::*;
    // (initial state, action, expected condition, expected write pointer offset; None = unchanged)
    let table: &[(&str, ZoneAction, ZoneCondition, Option<u64>)] = &[
        ("empty", ZoneAction::Reset, Empty, Some(0)),
        ("implicit-open", ZoneAction::Reset, Empty, Some(0)),
        ("explicit-open-empty", ZoneAction::Reset, Empty, Some(0)),
        ("explicit-open", ZoneAction::Reset, Empty, Some(0)),
        ("closed", ZoneAction::Reset, Empty, Some(0)),
        ("full", ZoneAction::Reset, Empty, Some(0)),
        ("empty", ZoneAction::Open, ExplicitOpen, None),
        ("implicit-open", ZoneAction::Open, ExplicitOpen, None),
        ("explicit-open-empty", ZoneAction::Open, ExplicitOpen, None),
        ("explicit-open", ZoneAction::Open, ExplicitOpen, None),
        ("closed", ZoneAction::Open, ExplicitOpen, None),
        ("full", ZoneAction::Open, Full, None),
        ("empty", ZoneAction::Close, Empty, None),
        ("implicit-open", ZoneAction::Close, Closed, None),
        ("explicit-open-empty", ZoneAction::Close, Empty, None),
        ("explicit-open", ZoneAction::Close, Closed, None),
        ("closed", ZoneAction::Close, Closed, None),
        ("full", ZoneAction::Close, Full, None),
        ("empty", ZoneAction::Finish, Full, Some(ZS)),
        ("implicit-open", ZoneAction::Finish, Full, Some(ZS)),
        ("explicit-open-empty", ZoneAction::Finish, Full, Some(ZS)),
        ("explicit-open", ZoneAction::Finish, Full, Some(ZS)),
        ("closed", ZoneAction::Finish, Full, Some(ZS)),
        ("full", ZoneAction::Finish, Full, Some(ZS)),
    ];
    for (i, &(initial, action, want, want_wp)) in table.iter().enumerate() {
        let d = tiny_hm(64, 8);
        let z = 1 + (i as u32 % 60);
        let before = make(&d, z, initial);
        d.zone_action(action, ZoneTarget::One(z)).unwrap();
        let zone = d.zone(z).unwrap();
        assert_eq!(
            zone.condition,
            want,
            "{} of a {initial} zone",
            action.name()
        );
        let want_wp = want_wp.map_or(before, |o| start(z) + o);
        assert_eq!(
            zone.write_pointer_lba,
            want_wp,
            "{} of {initial}",
            action.name()
        );
        let open = d.report_zones(ZoneFilter::Open).len();
        assert_eq!(
            open,
            usize::from(want.is_open()),
            "{} of {initial}",
            action.name()
        );
    }
}

#[test]
fn reset_zone_makes_old_data_unreadable_and_the_zone_writable_from_its_start() {
    let d = tiny_hm(64, 8);
    let z = 9;
    d.write(start(z), &pattern(start(z), 8, 1)).unwrap();
    d.flush().unwrap();
    d.reset_zone(z).unwrap();
    let mut buf = vec![0u8; SS];
    expect_err(d.read(start(z), &mut buf), "ReadPastWritePointer");
    d.write(start(z), &pattern(start(z), 1, 2)).unwrap();
    d.read(start(z), &mut buf).unwrap();
    assert_eq!(buf, pattern(start(z), 1, 2));
}

#[test]
fn zone_management_of_a_conventional_zone_or_a_missing_zone_fails() {
    let d = tiny_hm(64, 8);
    for a in [
        ZoneAction::Reset,
        ZoneAction::Open,
        ZoneAction::Close,
        ZoneAction::Finish,
    ] {
        let e = expect_err(d.zone_action(a, ZoneTarget::One(0)), "InvalidZoneOp");
        assert!(e.to_string().contains("conventional"), "{e}");
        let e = expect_err(d.zone_action(a, ZoneTarget::One(64)), "NoSuchZone");
        assert!(matches!(
            e,
            DeviceError::NoSuchZone {
                zone: 64,
                zones: 64
            }
        ));
    }
    expect_err(d.zone(1000), "NoSuchZone");
}

#[test]
fn target_all_applies_each_action_only_to_the_zones_it_fits() {
    let d = tiny_hm(64, 8);
    let states = [
        (1, "empty"),
        (2, "implicit-open"),
        (3, "explicit-open"),
        (4, "closed"),
        (5, "full"),
    ];
    let setup = |d: &Disk| {
        d.zone_action(ZoneAction::Reset, ZoneTarget::All).unwrap();
        d.zone_action(ZoneAction::Close, ZoneTarget::All).unwrap();
        for (z, s) in states {
            make(d, z, s);
        }
    };
    use ZoneCondition::*;
    let conds = |d: &Disk| (1..=5).map(|z| cond(d, z)).collect::<Vec<_>>();

    setup(&d);
    d.zone_action(ZoneAction::Reset, ZoneTarget::All).unwrap();
    assert_eq!(conds(&d), vec![Empty; 5]);

    setup(&d);
    d.zone_action(ZoneAction::Close, ZoneTarget::All).unwrap();
    assert_eq!(conds(&d), vec![Empty, Closed, Closed, Closed, Full]);

    setup(&d);
    d.zone_action(ZoneAction::Finish, ZoneTarget::All).unwrap();
    assert_eq!(conds(&d), vec![Empty, Full, Full, Full, Full]);

    setup(&d);
    d.zone_action(ZoneAction::Open, ZoneTarget::All).unwrap();
    assert_eq!(
        conds(&d),
        vec![Empty, ImplicitOpen, ExplicitOpen, ExplicitOpen, Full]
    );
    // The conventional zone is never touched.
    assert_eq!(cond(&d, 0), NotWritePointer);
}

#[test]
fn read_only_zones_read_but_refuse_writes_and_zone_management() {
    let d = tiny_hm(64, 8);
    let z = 10;
    d.write(start(z), &pattern(start(z), 4, 3)).unwrap();
    d.set_zone_condition(z, ZoneCondition::ReadOnly).unwrap();
    assert_eq!(cond(&d, z), ZoneCondition::ReadOnly);
    let mut buf = vec![0u8; 4 * SS];
    d.read(start(z), &mut buf).unwrap();
    assert_eq!(buf, pattern(start(z), 4, 3));
    let e = expect_err(d.write(start(z) + 4, &[0u8; SS]), "ZoneReadOnly");
    assert!(matches!(e, DeviceError::ZoneReadOnly { zone } if zone == z));
    for a in [
        ZoneAction::Reset,
        ZoneAction::Open,
        ZoneAction::Close,
        ZoneAction::Finish,
    ] {
        expect_err(d.zone_action(a, ZoneTarget::One(z)), "ZoneReadOnly");
    }
    // ALL skips it.
    d.zone_action(ZoneAction::Reset, ZoneTarget::All).unwrap();
    assert_eq!(cond(&d, z), ZoneCondition::ReadOnly);
    // A read-only conventional zone refuses writes too.
    d.set_zone_condition(0, ZoneCondition::ReadOnly).unwrap();
    expect_err(d.write(0, &[0u8; SS]), "ZoneReadOnly");
    d.read(0, &mut buf).unwrap();
    // Only read-only and offline can be forced.
    expect_err(d.set_zone_condition(z, ZoneCondition::Empty), "Config");
}

#[test]
fn offline_zones_refuse_every_command() {
    let d = tiny_hm(64, 8);
    let z = 11;
    d.write(start(z), &[1u8; 4 * SS]).unwrap();
    d.set_zone_condition(z, ZoneCondition::Offline).unwrap();
    let mut buf = vec![0u8; SS];
    let e = expect_err(d.read(start(z), &mut buf), "ZoneOffline");
    assert!(matches!(e, DeviceError::ZoneOffline { zone } if zone == z));
    // A read that merely crosses into it fails too.
    d.finish_zone(z - 1).unwrap();
    let mut two = vec![0u8; 2 * SS];
    expect_err(d.read(start(z) - 1, &mut two), "ZoneOffline");
    expect_err(d.write(start(z) + 4, &[0u8; SS]), "ZoneOffline");
    for a in [
        ZoneAction::Reset,
        ZoneAction::Open,
        ZoneAction::Close,
        ZoneAction::Finish,
    ] {
        expect_err(d.zone_action(a, ZoneTarget::One(z)), "ZoneOffline");
    }
    d.zone_action(ZoneAction::Finish, ZoneTarget::All).unwrap();
    assert_eq!(cond(&d, z), ZoneCondition::Offline);
    assert_eq!(
        d.report_zones(ZoneFilter::Condition(ZoneCondition::Offline))
            .len(),
        1
    );
}

#[test]
fn host_aware_zones_accept_non_sequential_writes_and_flag_them() {
    let mut c = tiny_hm_config(64, 8);
    c.kind = tegula_device::DriveKind::HaSmr;
    let d = Disk::in_memory(c).unwrap();
    let z = 2;
    assert_eq!(d.zone(z).unwrap().zone_type, ZoneType::SeqWritePreferred);
    d.write(start(z), &pattern(start(z), 4, 1)).unwrap();
    assert!(!d.zone(z).unwrap().non_seq);
    // Ahead of the pointer: accepted, pointer jumps past it.
    d.write(start(z) + 10, &pattern(start(z) + 10, 2, 1))
        .unwrap();
    let zone = d.zone(z).unwrap();
    assert!(zone.non_seq);
    assert_eq!(zone.write_pointer_lba, start(z) + 12);
    // Behind the pointer: an in-place update, pointer unchanged.
    d.write(start(z) + 1, &pattern(start(z) + 1, 1, 2)).unwrap();
    assert_eq!(wp(&d, z), start(z) + 12);
    let mut buf = vec![0u8; 12 * SS];
    d.read(start(z), &mut buf).unwrap();
    assert_eq!(tag_of(start(z) + 1, &buf[SS..2 * SS]), Some(2));
    assert_eq!(tag_of(start(z) + 5, &buf[5 * SS..6 * SS]), None);
    assert_eq!(tag_of(start(z) + 11, &buf[11 * SS..]), Some(1));
    // Crossing the zone end is still refused; reset clears the flag.
    expect_err(d.write(start(z + 1) - 1, &[0u8; 2 * SS]), "ZoneBoundary");
    d.reset_zone(z).unwrap();
    assert!(!d.zone(z).unwrap().non_seq);
}

#[test]
fn report_zones_filters_by_condition() {
    let d = tiny_hm(64, 8);
    make(&d, 1, "implicit-open");
    make(&d, 2, "explicit-open");
    make(&d, 3, "closed");
    make(&d, 4, "full");
    make(&d, 5, "full");
    d.set_zone_condition(6, ZoneCondition::ReadOnly).unwrap();
    d.set_zone_condition(7, ZoneCondition::Offline).unwrap();
    let n = |f: ZoneFilter| d.report_zones(f).len();
    use ZoneCondition::*;
    assert_eq!(n(ZoneFilter::All), 64);
    assert_eq!(n(ZoneFilter::Condition(NotWritePointer)), 1);
    assert_eq!(n(ZoneFilter::Condition(ImplicitOpen)), 1);
    assert_eq!(n(ZoneFilter::Condition(ExplicitOpen)), 1);
    assert_eq!(n(ZoneFilter::Open), 2);
    assert_eq!(n(ZoneFilter::Condition(Closed)), 1);
    assert_eq!(n(ZoneFilter::Condition(Full)), 2);
    assert_eq!(n(ZoneFilter::Condition(ReadOnly)), 1);
    assert_eq!(n(ZoneFilter::Condition(Offline)), 1);
    assert_eq!(n(ZoneFilter::Condition(Empty)), 64 - 1 - 7);
    for z in d.report_zones(ZoneFilter::Condition(Full)) {
        assert_eq!(z.write_pointer_lba, z.end_lba());
    }
    assert_eq!("open".parse::<ZoneFilter>(), Ok(ZoneFilter::Open));
    assert_eq!(
        "closed".parse::<ZoneFilter>(),
        Ok(ZoneFilter::Condition(Closed))
    );
    assert!("sideways".parse::<ZoneFilter>().is_err());
}

#[test]
fn out_of_range_and_partial_sector_buffers_are_refused() {
    let d = tiny_hm(64, 8);
    let cap = d.info().capacity_sectors;
    let e = expect_err(d.write(cap, &[0u8; SS]), "OutOfRange");
    assert!(
        matches!(e, DeviceError::OutOfRange { lba, sectors: 1, capacity } if lba == cap && capacity == cap)
    );
    expect_err(d.write(u64::MAX, &[0u8; SS]), "OutOfRange");
    let mut b = vec![0u8; SS];
    expect_err(d.read(cap - 1 + 1, &mut b), "OutOfRange");
    expect_err(d.write(0, &[0u8; 100]), "BadLength");
    expect_err(d.write(0, &[]), "BadLength");
    let mut odd = vec![0u8; SS + 1];
    expect_err(d.read(0, &mut odd), "BadLength");
    // The same refusals for writes from an owned buffer, and a zone rule broken by one: the
    // write pointer stays where it was.
    let f = WriteFlags::default();
    expect_err(d.write_owned(cap, vec![0u8; SS], f), "OutOfRange");
    expect_err(d.write_owned(0, vec![0u8; 100], f), "BadLength");
    expect_err(d.write_owned(0, Vec::new(), f), "BadLength");
    let z = d.zone(1).unwrap();
    expect_err(
        d.write_owned(z.start_lba + 1, vec![0u8; 256 << 10], f),
        "UnalignedWrite",
    );
    assert_eq!(d.zone(1).unwrap().write_pointer_lba, z.write_pointer_lba);
}

#[test]
fn banded_view_numbers_bands_after_the_conventional_zones() {
    let d = std::sync::Arc::new(tiny_hm(64, 8));
    let b = Banded::new(d.clone());
    let ms = b.mode_sense();
    assert_eq!(ms.bands, 63);
    assert_eq!(ms.band_blocks, ZS);
    assert_eq!(ms.sector_size, SS as u32);
    assert_eq!(b.write_pointer(0).unwrap(), 0);
    b.write(0, 0, &pattern(start(1), 3, 4)).unwrap();
    b.write(5, 0, &pattern(start(6), 1, 4)).unwrap();
    assert_eq!(b.write_pointer(0).unwrap(), 3);
    assert_eq!(b.write_pointer(5).unwrap(), 1);
    // Band 0 is zone 1, band 5 is zone 6.
    assert_eq!(wp(&d, 1), start(1) + 3);
    assert_eq!(wp(&d, 6), start(6) + 1);
    let mut buf = vec![0u8; 2 * SS];
    b.read(0, 1, &mut buf).unwrap();
    assert_eq!(buf, pattern(start(1) + 1, 2, 4));
    let e = expect_err(b.read(0, 2, &mut buf), "ReadPastWritePointer");
    assert!(matches!(
        e,
        DeviceError::ReadPastWritePointer { zone: 1, .. }
    ));
    expect_err(b.write(0, 7, &[0u8; SS]), "UnalignedWrite");
    expect_err(b.write_pointer(63), "NoSuchZone");
    expect_err(b.write(63, 0, &[0u8; SS]), "NoSuchZone");
    b.reset(0).unwrap();
    assert_eq!(b.write_pointer(0).unwrap(), 0);
    b.reset_all().unwrap();
    assert_eq!(b.write_pointer(5).unwrap(), 0);
}

#[test]
fn set_write_pointer_moves_it_and_sets_the_matching_condition() {
    let d = tiny_hm(64, 8);
    let z = 12;
    d.write(start(z), &pattern(start(z), 8, 1)).unwrap();
    d.set_write_pointer(z, start(z) + 4).unwrap();
    assert_eq!(wp(&d, z), start(z) + 4);
    assert_eq!(cond(&d, z), ZoneCondition::Closed);
    let mut buf = vec![0u8; 5 * SS];
    expect_err(d.read(start(z), &mut buf), "ReadPastWritePointer");
    let mut four = vec![0u8; 4 * SS];
    d.read(start(z), &mut four).unwrap();
    assert_eq!(four, pattern(start(z), 4, 1));
    d.write(start(z) + 4, &pattern(start(z) + 4, 1, 2)).unwrap();
    d.set_write_pointer(z, start(z)).unwrap();
    assert_eq!(cond(&d, z), ZoneCondition::Empty);
    d.set_write_pointer(z, start(z + 1)).unwrap();
    assert_eq!(cond(&d, z), ZoneCondition::Full);
    expect_err(d.set_write_pointer(z, start(z + 1) + 1), "OutOfRange");
    expect_err(d.set_write_pointer(0, 5), "InvalidZoneOp");
}
