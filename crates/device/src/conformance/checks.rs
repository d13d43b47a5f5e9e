//! The checks of [`super::run`], one function per rule. Each returns the outcome, or a
//! [`ConformanceFailure`] when a command failed that the rule expects to succeed.

use super::failure::ConformanceFailure;
use super::Outcome;
use crate::api::{WriteFlags, ZoneTarget, ZonedDevice};
use crate::error::DeviceError;
use crate::zone::{Zone, ZoneAction, ZoneCondition, ZoneFilter, ZoneType};

type CheckFn = fn(&dyn ZonedDevice) -> Result<Outcome, ConformanceFailure>;

/// Every check: name, rule, function.
pub(super) const ALL: [(&str, &str, CheckFn); 12] = [
    (
        "report-covers-device",
        "the zone report covers the capacity with contiguous zones of the zone size, \
         conventional zones first, capacities no larger than the zones",
        report_covers_device,
    ),
    (
        "write-at-write-pointer",
        "a write at the write pointer advances it, implicitly opens the zone and reads back",
        write_at_write_pointer,
    ),
    (
        "unaligned-write",
        "a write away from a sequential-write-required zone's write pointer fails as \
         UnalignedWrite and moves nothing",
        unaligned_write,
    ),
    (
        "zone-capacity",
        "a zone takes exactly its capacity: a write past it fails as ZoneBoundary, the \
         write that reaches it makes the zone full, and a write to a full zone fails as ZoneFull",
        zone_capacity,
    ),
    (
        "read-past-write-pointer",
        "a read across a write pointer fails as ReadPastWritePointer or returns the written \
         sectors as written (what it returns past the pointer is reported)",
        read_past_write_pointer,
    ),
    (
        "zone-state-machine",
        "close, open, finish and reset move a zone through closed, explicitly open, full and \
         empty",
        zone_state_machine,
    ),
    (
        "explicit-open-limit",
        "explicitly opening one zone more than the open limit fails as TooManyOpenZones (or \
         TooManyActiveZones where the active limit is reached first)",
        explicit_open_limit,
    ),
    (
        "active-limit",
        "starting one zone more than the active limit fails as TooManyActiveZones until a \
         zone is finished",
        active_limit,
    ),
    (
        "conventional-zones",
        "conventional zones take writes anywhere, but not across into a sequential zone, and \
         refuse zone management",
        conventional_zones,
    ),
    (
        "no-such-zone",
        "a zone past the last one is NoSuchZone",
        no_such_zone,
    ),
    (
        "flush-and-fua",
        "a flush and a write with FUA succeed",
        flush_and_fua,
    ),
    (
        "reset-rewinds",
        "a reset empties a zone: the write pointer returns to its start and writing there works",
        reset_rewinds,
    ),
];

/// Resets every sequential zone and checks that each is empty afterwards.
pub(super) fn reset_all(dev: &dyn ZonedDevice) -> Result<(), ConformanceFailure> {
    dev.zone_action(ZoneAction::Reset, ZoneTarget::All)
        .map_err(ConformanceFailure::command("reset of every zone"))?;
    for z in dev.report_zones(ZoneFilter::All) {
        if z.zone_type.is_sequential()
            && !matches!(
                z.condition,
                ZoneCondition::ReadOnly | ZoneCondition::Offline
            )
            && (z.condition != ZoneCondition::Empty || z.write_pointer_lba != z.start_lba)
        {
            return Err(ConformanceFailure::State(format!(
                "after resetting every zone, zone {} is {} with its write pointer at {}",
                z.index, z.condition, z.write_pointer_lba
            )));
        }
    }
    Ok(())
}

/// The failure of a zone that a report left out.
fn missing() -> ConformanceFailure {
    ConformanceFailure::State("the zone is missing from the report".into())
}

fn ss(dev: &dyn ZonedDevice) -> usize {
    dev.info().sector_size as usize
}

/// `sectors` sectors whose bytes depend on `lba` and `tag`.
fn data(dev: &dyn ZonedDevice, lba: u64, sectors: u64, tag: u8) -> Vec<u8> {
    let ss = ss(dev);
    let mut v = vec![0u8; sectors as usize * ss];
    for (i, s) in v.chunks_mut(ss).enumerate() {
        let l = lba + i as u64;
        s[..8].copy_from_slice(&l.to_le_bytes());
        s[8..].fill((l as u8) ^ tag ^ 0x5a);
    }
    v
}

/// Usable sequential zones (not read-only or offline), in order.
fn seq_zones(dev: &dyn ZonedDevice) -> Vec<Zone> {
    dev.report_zones(ZoneFilter::All)
        .into_iter()
        .filter(|z| {
            z.zone_type.is_sequential()
                && !matches!(
                    z.condition,
                    ZoneCondition::ReadOnly | ZoneCondition::Offline
                )
        })
        .collect()
}

fn first_seq(dev: &dyn ZonedDevice) -> Result<Zone, ConformanceFailure> {
    seq_zones(dev)
        .into_iter()
        .next()
        .ok_or_else(|| ConformanceFailure::State("the device has no usable sequential zone".into()))
}

fn zone(dev: &dyn ZonedDevice, i: u32) -> Result<Zone, ConformanceFailure> {
    dev.zone(i)
        .map_err(ConformanceFailure::command(format!("zone {i}")))
}

fn write(dev: &dyn ZonedDevice, lba: u64, sectors: u64, tag: u8) -> Result<(), ConformanceFailure> {
    dev.write(lba, &data(dev, lba, sectors, tag))
        .map(|_| ())
        .map_err(ConformanceFailure::command(format!(
            "write of {sectors} sectors at LBA {lba}"
        )))
}

/// Writes `sectors` sectors at zone `z`'s write pointer, in pieces of at most 1 MiB.
fn fill(dev: &dyn ZonedDevice, z: u32, mut sectors: u64) -> Result<(), ConformanceFailure> {
    let piece = ((1 << 20) / ss(dev) as u64).max(1);
    while sectors > 0 {
        let n = sectors.min(piece);
        let wp = zone(dev, z)?.write_pointer_lba;
        write(dev, wp, n, 1)?;
        sectors -= n;
    }
    Ok(())
}

/// Whether `r` failed with an error `want` accepts: its text when it did, the check's failed
/// outcome when it did not.
fn expect_err<T>(
    r: crate::Result<T>,
    what: &str,
    want: &str,
    ok: impl Fn(&DeviceError) -> bool,
) -> Result<String, Outcome> {
    match r {
        Ok(_) => Err(Outcome::Failed(format!(
            "{what} succeeded; expected {want}"
        ))),
        Err(e) if ok(&e) => Ok(e.to_string()),
        Err(e) => Err(Outcome::Failed(format!(
            "{what} failed as \"{e}\"; expected {want}"
        ))),
    }
}

fn report_covers_device(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let info = dev.info();
    let zones = dev.report_zones(ZoneFilter::All);
    if zones.len() as u32 != info.zones {
        return Ok(Outcome::Failed(format!(
            "{} zones reported, the device says {}",
            zones.len(),
            info.zones
        )));
    }
    let mut next = 0;
    let mut seen_seq = false;
    for (i, z) in zones.iter().enumerate() {
        let last = i + 1 == zones.len();
        let problem = if z.index as usize != i {
            Some(format!("numbered {}", z.index))
        } else if z.start_lba != next {
            Some(format!("starts at {}, not {next}", z.start_lba))
        } else if z.len_lba != info.zone_sectors && !(last && z.len_lba < info.zone_sectors) {
            Some(format!(
                "is {} sectors long, not {}",
                z.len_lba, info.zone_sectors
            ))
        } else if z.capacity_lba == 0 || z.capacity_lba > z.len_lba {
            Some(format!(
                "has capacity {} in a zone of {}",
                z.capacity_lba, z.len_lba
            ))
        } else if z.zone_type.is_sequential() && z.capacity_lba < info.zone_capacity_sectors {
            Some(format!(
                "has capacity {}, below the device's {}",
                z.capacity_lba, info.zone_capacity_sectors
            ))
        } else if z.zone_type == ZoneType::Conventional && seen_seq {
            Some("is conventional after a sequential zone".into())
        } else {
            None
        };
        if let Some(p) = problem {
            return Ok(Outcome::Failed(format!("zone {i} {p}")));
        }
        seen_seq |= z.zone_type.is_sequential();
        next = z.end_lba();
    }
    if next != info.capacity_sectors {
        return Ok(Outcome::Failed(format!(
            "the zones end at {next}, the capacity is {}",
            info.capacity_sectors
        )));
    }
    let conv = zones
        .iter()
        .filter(|z| z.zone_type == ZoneType::Conventional)
        .count();
    Ok(Outcome::Passed(format!(
        "{} zones of {} sectors ({} conventional), capacity {} sectors per zone",
        zones.len(),
        info.zone_sectors,
        conv,
        info.zone_capacity_sectors
    )))
}

fn write_at_write_pointer(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let z = first_seq(dev)?;
    write(dev, z.start_lba, 2, 7)?;
    write(dev, z.start_lba + 2, 3, 7)?;
    let after = zone(dev, z.index)?;
    if after.write_pointer_lba != z.start_lba + 5 {
        return Ok(Outcome::Failed(format!(
            "write pointer at {} after 5 sectors from {}",
            after.write_pointer_lba, z.start_lba
        )));
    }
    let reported = dev
        .report_zones(ZoneFilter::All)
        .into_iter()
        .find(|r| r.index == z.index)
        .ok_or_else(missing)?;
    if reported.write_pointer_lba != after.write_pointer_lba
        || !reported.condition.is_open() && reported.condition != ZoneCondition::Closed
    {
        return Ok(Outcome::Failed(format!(
            "report says {} at {}, the zone says {} at {}",
            reported.condition,
            reported.write_pointer_lba,
            after.condition,
            after.write_pointer_lba
        )));
    }
    let mut back = vec![0u8; 5 * ss(dev)];
    dev.read(z.start_lba, &mut back)
        .map_err(ConformanceFailure::command("read back"))?;
    let mut want = data(dev, z.start_lba, 2, 7);
    want.extend(data(dev, z.start_lba + 2, 3, 7));
    if back != want {
        return Ok(Outcome::Failed("the data read back differs".into()));
    }
    Ok(Outcome::Passed(format!(
        "zone {} {} with its write pointer at start + 5",
        z.index, reported.condition
    )))
}

fn unaligned_write(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let z = first_seq(dev)?;
    if z.zone_type != ZoneType::SeqWriteRequired {
        return Ok(Outcome::NotApplicable(
            "sequential-write-preferred zones take writes anywhere".into(),
        ));
    }
    write(dev, z.start_lba, 2, 3)?;
    let wp = z.start_lba + 2;
    for bad in [wp + 1, z.start_lba] {
        let msg = expect_err(
            dev.write(bad, &data(dev, bad, 1, 3)),
            &format!("a write at LBA {bad} (write pointer {wp})"),
            "UnalignedWrite",
            |e| {
                matches!(e, DeviceError::UnalignedWrite { zone, write_pointer, lba }
                    if *zone == z.index && *write_pointer == wp && *lba == bad)
            },
        );
        if let Err(f) = msg {
            return Ok(f);
        }
    }
    let after = zone(dev, z.index)?;
    if after.write_pointer_lba != wp {
        return Ok(Outcome::Failed(format!(
            "the refused writes moved the write pointer to {}",
            after.write_pointer_lba
        )));
    }
    Ok(Outcome::Passed(
        "writes one past the write pointer and at the zone start refused".into(),
    ))
}

fn zone_capacity(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let z = first_seq(dev)?;
    let cap = z.capacity_lba;
    if cap < 2 {
        return Ok(Outcome::NotApplicable("zones of one sector".into()));
    }
    fill(dev, z.index, cap - 1)?;
    let wp = z.start_lba + cap - 1;
    if let Err(f) = expect_err(
        dev.write(wp, &data(dev, wp, 2, 4)),
        "a write of 2 sectors over the capacity's end",
        "ZoneBoundary",
        |e| matches!(e, DeviceError::ZoneBoundary { zone, zone_end, .. } if *zone == z.index && *zone_end == z.start_lba + cap),
    ) {
        return Ok(f);
    }
    write(dev, wp, 1, 4)?;
    let full = zone(dev, z.index)?;
    let reported = dev
        .report_zones(ZoneFilter::Condition(ZoneCondition::Full))
        .into_iter()
        .find(|r| r.index == z.index);
    if full.condition != ZoneCondition::Full || reported.is_none() {
        return Ok(Outcome::Failed(format!(
            "zone {} is {} after {cap} sectors",
            z.index, full.condition
        )));
    }
    if full.written_sectors() != cap {
        return Ok(Outcome::Failed(format!(
            "a full zone counts {} written sectors, not its capacity {cap}",
            full.written_sectors()
        )));
    }
    let at = full.write_pointer_lba.min(full.capacity_end_lba() - 1);
    if let Err(f) = expect_err(
        dev.write(at, &data(dev, at, 1, 4)),
        "a write to the full zone",
        "ZoneFull",
        |e| matches!(e, DeviceError::ZoneFull { zone, .. } if *zone == z.index),
    ) {
        return Ok(f);
    }
    let mut last = vec![0u8; ss(dev)];
    dev.read(wp, &mut last)
        .map_err(ConformanceFailure::command(
            "reading the zone's last sector",
        ))?;
    if last != data(dev, wp, 1, 4) {
        return Ok(Outcome::Failed(
            "the zone's last sector reads back wrong".into(),
        ));
    }
    Ok(Outcome::Passed(format!(
        "capacity {cap} of {} sectors; full zone reports its write pointer at {}",
        z.len_lba,
        if full.write_pointer_lba == full.end_lba() {
            "the zone end"
        } else {
            "the capacity end"
        }
    )))
}

fn read_past_write_pointer(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let z = first_seq(dev)?;
    write(dev, z.start_lba, 1, 5)?;
    let mut buf = vec![0xffu8; 3 * ss(dev)];
    match dev.read(z.start_lba, &mut buf) {
        Ok(_) => {
            let (head, tail) = buf.split_at(ss(dev));
            if head != data(dev, z.start_lba, 1, 5).as_slice() {
                Ok(Outcome::Failed(
                    "the written sector reads back wrong".into(),
                ))
            } else if tail.iter().any(|&b| b != 0) {
                // ZBC leaves the contents undefined; no tegula layer reads there.
                Ok(Outcome::Passed(
                    "reads past the write pointer return old contents, not zeros (undefined \
                     by ZBC; no layer reads there)"
                        .into(),
                ))
            } else {
                Ok(Outcome::Passed(
                    "reads past the write pointer return zeros".into(),
                ))
            }
        }
        Err(DeviceError::ReadPastWritePointer { zone, .. }) if zone == z.index => Ok(
            Outcome::Passed("reads past the write pointer are refused".into()),
        ),
        Err(e) => Ok(Outcome::Failed(format!(
            "a read past the write pointer failed as \"{e}\""
        ))),
    }
}

fn zone_state_machine(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let z = first_seq(dev)?;
    let i = z.index;
    let step =
        |action: ZoneAction, want: ZoneCondition| -> Result<Option<String>, ConformanceFailure> {
            dev.zone_action(action, ZoneTarget::One(i))
                .map_err(ConformanceFailure::command(format!(
                    "{} of zone {i}",
                    action.name()
                )))?;
            let got = dev
                .report_zones(ZoneFilter::All)
                .into_iter()
                .find(|r| r.index == i)
                .ok_or_else(missing)?;
            Ok((got.condition != want).then(|| {
                format!(
                    "after {}, zone {i} is {}, not {want}",
                    action.name(),
                    got.condition
                )
            }))
        };
    write(dev, z.start_lba, 1, 6)?;
    for (a, want) in [
        (ZoneAction::Close, ZoneCondition::Closed),
        (ZoneAction::Open, ZoneCondition::ExplicitOpen),
        (ZoneAction::Close, ZoneCondition::Closed),
        (ZoneAction::Finish, ZoneCondition::Full),
        (ZoneAction::Reset, ZoneCondition::Empty),
        (ZoneAction::Open, ZoneCondition::ExplicitOpen),
        (ZoneAction::Finish, ZoneCondition::Full),
        (ZoneAction::Reset, ZoneCondition::Empty),
    ] {
        if let Some(f) = step(a, want)? {
            return Ok(Outcome::Failed(f));
        }
    }
    Ok(Outcome::Passed(
        "implicit open → closed → explicit open → closed → full → empty → explicit open → \
         full → empty"
            .into(),
    ))
}

fn explicit_open_limit(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let info = dev.info();
    let max = info.max_open_zones;
    if max == 0 {
        return Ok(Outcome::NotApplicable("no open-zone limit".into()));
    }
    let zones = seq_zones(dev);
    if zones.len() <= max as usize {
        return Ok(Outcome::NotApplicable(format!(
            "{} sequential zones, open limit {max}",
            zones.len()
        )));
    }
    for z in &zones[..max as usize] {
        dev.open_zone(z.index)
            .map_err(ConformanceFailure::command(format!(
                "explicit open of zone {} within the limit",
                z.index
            )))?;
    }
    let extra = zones[max as usize].index;
    let active_first = info.max_active_zones > 0 && info.max_active_zones <= max;
    let want = if active_first {
        "TooManyActiveZones"
    } else {
        "TooManyOpenZones"
    };
    let r = expect_err(
        dev.open_zone(extra),
        &format!("explicit open of zone {extra}, one over the limit {max}"),
        want,
        |e| {
            if active_first {
                matches!(e, DeviceError::TooManyActiveZones { .. })
            } else {
                matches!(e, DeviceError::TooManyOpenZones { .. })
            }
        },
    );
    Ok(match r {
        Ok(msg) => Outcome::Passed(format!("{max} opened; the next: {msg}")),
        Err(f) => f,
    })
}

fn active_limit(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let max = dev.info().max_active_zones;
    if max == 0 {
        return Ok(Outcome::NotApplicable("no active-zone limit".into()));
    }
    let zones = seq_zones(dev);
    if zones.len() <= max as usize {
        return Ok(Outcome::NotApplicable(format!(
            "{} sequential zones, active limit {max}",
            zones.len()
        )));
    }
    for z in &zones[..max as usize] {
        write(dev, z.start_lba, 1, 8)?;
    }
    let extra = &zones[max as usize];
    if let Err(f) = expect_err(
        dev.write(extra.start_lba, &data(dev, extra.start_lba, 1, 8)),
        &format!(
            "a write starting zone {}, one over the limit {max}",
            extra.index
        ),
        "TooManyActiveZones",
        |e| matches!(e, DeviceError::TooManyActiveZones { .. }),
    ) {
        return Ok(f);
    }
    if zone(dev, extra.index)?.condition != ZoneCondition::Empty {
        return Ok(Outcome::Failed(
            "the refused write left its zone non-empty".into(),
        ));
    }
    dev.finish_zone(zones[0].index)
        .map_err(ConformanceFailure::command(format!(
            "finish of zone {}",
            zones[0].index
        )))?;
    write(dev, extra.start_lba, 1, 8)?;
    Ok(Outcome::Passed(format!(
        "{max} zones started; the next refused until one was finished"
    )))
}

fn conventional_zones(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let zones = dev.report_zones(ZoneFilter::All);
    let Some(conv) = zones
        .iter()
        .rev()
        .find(|z| z.zone_type == ZoneType::Conventional)
        .cloned()
    else {
        return Ok(Outcome::NotApplicable("no conventional zones".into()));
    };
    // Anywhere, out of order, and over itself.
    let a = conv.start_lba + conv.len_lba / 2;
    write(dev, a, 2, 9)?;
    write(dev, conv.start_lba, 1, 9)?;
    write(dev, a, 1, 10)?;
    let mut back = vec![0u8; 2 * ss(dev)];
    dev.read(a, &mut back)
        .map_err(ConformanceFailure::command("read back"))?;
    let mut want = data(dev, a, 1, 10);
    want.extend(data(dev, a + 1, 1, 9));
    if back != want {
        return Ok(Outcome::Failed(
            "data rewritten in place reads back wrong".into(),
        ));
    }
    let next_is_seq = zones
        .get(conv.index as usize + 1)
        .is_some_and(|n| n.zone_type.is_sequential());
    if next_is_seq {
        let at = conv.end_lba() - 1;
        if let Err(f) = expect_err(
            dev.write(at, &data(dev, at, 2, 9)),
            "a write from the last conventional zone into a sequential zone",
            "ZoneBoundary",
            |e| matches!(e, DeviceError::ZoneBoundary { .. }),
        ) {
            return Ok(f);
        }
    }
    if let Err(f) = expect_err(
        dev.reset_zone(conv.index),
        "a reset of a conventional zone",
        "InvalidZoneOp",
        |e| matches!(e, DeviceError::InvalidZoneOp { .. }),
    ) {
        return Ok(f);
    }
    Ok(Outcome::Passed(format!(
        "zone {} rewritten in place{}; reset refused",
        conv.index,
        if next_is_seq {
            ", a write across into the sequential zones refused"
        } else {
            ""
        }
    )))
}

fn no_such_zone(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let n = dev.info().zones;
    let r1 = expect_err(dev.zone(n), &format!("zone {n}"), "NoSuchZone", |e| {
        matches!(e, DeviceError::NoSuchZone { .. })
    });
    let r2 = expect_err(
        dev.reset_zone(n),
        &format!("a reset of zone {n}"),
        "NoSuchZone",
        |e| matches!(e, DeviceError::NoSuchZone { .. }),
    );
    Ok(match (r1, r2) {
        (Ok(_), Ok(_)) => Outcome::Passed(format!("zone {n} of {n} refused")),
        (Err(f), _) | (_, Err(f)) => f,
    })
}

fn flush_and_fua(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let z = first_seq(dev)?;
    write(dev, z.start_lba, 1, 11)?;
    dev.flush().map_err(ConformanceFailure::command("flush"))?;
    let lba = z.start_lba + 1;
    dev.write_with(lba, &data(dev, lba, 1, 11), WriteFlags { fua: true })
        .map_err(ConformanceFailure::command("write with FUA"))?;
    Ok(Outcome::Passed("flush and FUA write completed".into()))
}

fn reset_rewinds(dev: &dyn ZonedDevice) -> Result<Outcome, ConformanceFailure> {
    let z = first_seq(dev)?;
    write(dev, z.start_lba, 4, 12)?;
    dev.reset_zone(z.index)
        .map_err(ConformanceFailure::command(format!(
            "reset of zone {}",
            z.index
        )))?;
    let after = zone(dev, z.index)?;
    if after.condition != ZoneCondition::Empty || after.write_pointer_lba != z.start_lba {
        return Ok(Outcome::Failed(format!(
            "after the reset zone {} is {} at {}",
            z.index, after.condition, after.write_pointer_lba
        )));
    }
    write(dev, z.start_lba, 1, 13)?;
    let mut back = vec![0u8; ss(dev)];
    dev.read(z.start_lba, &mut back)
        .map_err(ConformanceFailure::command("read back"))?;
    if back != data(dev, z.start_lba, 1, 13) {
        return Ok(Outcome::Failed(
            "the sector written after the reset reads back wrong".into(),
        ));
    }
    Ok(Outcome::Passed(
        "empty at its start after the reset; rewritten from there".into(),
    ))
}
