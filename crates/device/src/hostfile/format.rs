//! The on-disk records of a host-banded device (spec: `docs/formats/host-banded.md`): the
//! descriptor kept in `PATH.zones` (written once, when the device is created) and the zone
//! state saved in two alternating slots after the last zone of the banded file itself, so that
//! one `fdatasync` of the file makes both a flush's data and its write pointers durable.
//!
//! A state record may list *unsynced runs*: ranges written since the previous save, with the
//! CRC-32C of their bytes. It is written before the `fdatasync` that makes them durable, so a
//! crash during that sync can leave the record on disk without all of its data; opening checks
//! the runs and takes a record whose runs do not match as a save that never completed (the
//! technique of ext4's `journal_async_commit`: a commit block that carries the checksum of the
//! blocks it commits needs no barrier before it).

use crate::zone::ZoneCondition;
use tegula_codec::frame::Format;
use tegula_codec::{Dec, Enc, FormatError};

/// Magic of the descriptor in `PATH.zones`.
pub const DESCRIPTOR_MAGIC: [u8; 8] = *b"TGLABDSC";
/// Magic of a zone state record in the banded file's slots.
pub const STATE_MAGIC: [u8; 8] = *b"TGLABSTA";
/// Version of both records.
pub const VERSION: u32 = 1;
/// The descriptor's frame.
pub const DESCRIPTOR_FORMAT: Format =
    Format::slot("banded-file descriptor", &DESCRIPTOR_MAGIC, VERSION);
/// The state record's frame.
pub const STATE_FORMAT: Format = Format::slot("banded zone state", &STATE_MAGIC, VERSION);

/// Where a banded file keeps its zones and state slots; fixed when the device is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// Bytes per sector (512 or 4096).
    pub sector_size: u32,
    /// Bytes per zone.
    pub zone_size: u64,
    /// Conventional zones at the start.
    pub conventional_zones: u32,
    /// Zones in all.
    pub zones: u32,
    /// Byte offset of state slot A in the banded file (slot B follows it).
    pub slot_offset: u64,
    /// Bytes of each state slot.
    pub slot_size: u64,
}

/// Bytes of each state slot for a device of `zones` zones: room for the zone table and a full
/// list of unsynced runs, rounded up to 4 KiB.
pub fn slot_size(zones: u64) -> u64 {
    (4096 + 10 * zones + 28 * MAX_RUNS as u64).div_ceil(4096) * 4096
}

/// Most unsynced runs one state record lists; a save with more syncs the data first.
pub const MAX_RUNS: usize = 1024;

/// Encodes a descriptor.
pub fn encode_descriptor(d: &Descriptor) -> Vec<u8> {
    let mut e = Enc::new();
    e.u32(d.sector_size);
    e.u64(d.zone_size);
    e.u32(d.conventional_zones);
    e.u32(d.zones);
    e.u64(d.slot_offset);
    e.u64(d.slot_size);
    DESCRIPTOR_FORMAT.encode(0, 0, e.as_bytes())
}

/// The geometry rules every banded layout shares (a banded file's descriptor, a zone-files
/// directory's): a 512- or 4096-byte sector, zones of a positive whole number of sectors, and
/// at least one sequential zone after the conventional ones.
pub fn check_geometry(
    sector_size: u32,
    zone_size: u64,
    conventional_zones: u32,
    zones: u32,
) -> Result<(), FormatError> {
    if sector_size != 512 && sector_size != 4096 {
        return Err(FormatError::invalid(format!(
            "sector size {sector_size} is not 512 or 4096"
        )));
    }
    if zone_size == 0 || !zone_size.is_multiple_of(u64::from(sector_size)) {
        return Err(FormatError::invalid(format!(
            "zone size {zone_size} is not a positive multiple of the sector size"
        )));
    }
    if conventional_zones >= zones {
        return Err(FormatError::invalid(format!(
            "{conventional_zones} conventional zones of {zones} leave no sequential zone"
        )));
    }
    Ok(())
}

/// Decodes a descriptor, checking its frame and that its layout is self-consistent.
pub fn decode_descriptor(b: &[u8]) -> Result<Descriptor, FormatError> {
    let f = DESCRIPTOR_FORMAT.decode(b)?;
    let mut d = Dec::new(f.payload);
    let s = Descriptor {
        sector_size: d.u32()?,
        zone_size: d.u64()?,
        conventional_zones: d.u32()?,
        zones: d.u32()?,
        slot_offset: d.u64()?,
        slot_size: d.u64()?,
    };
    check_geometry(s.sector_size, s.zone_size, s.conventional_zones, s.zones)?;
    let zones_end = u64::from(s.zones).checked_mul(s.zone_size);
    if zones_end.is_none_or(|e| e > s.slot_offset) {
        return Err(FormatError::invalid(format!(
            "the state slots at byte {} overlap the {} zones",
            s.slot_offset, s.zones
        )));
    }
    if s.slot_size < slot_size(u64::from(s.zones)) || !s.slot_size.is_multiple_of(4096) {
        return Err(FormatError::invalid(format!(
            "slot size {} is too small for {} zones",
            s.slot_size, s.zones
        )));
    }
    if s.slot_offset.checked_add(2 * s.slot_size).is_none() {
        return Err(FormatError::invalid(
            "the state slots end past the largest offset",
        ));
    }
    Ok(s)
}

/// Writes to a sequential zone since the previous save, with the checksum of their bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The zone.
    pub zone: u32,
    /// First LBA written.
    pub from: u64,
    /// LBA after the last one written.
    pub to: u64,
    /// CRC-32C of the bytes of `[from, to)`.
    pub crc: u32,
}

/// One saved state of a banded file's zones.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    /// Sequence number; the valid slot with the higher one wins.
    pub seq: u64,
    /// Per zone: condition, non-sequential flag, write pointer.
    pub zones: Vec<(ZoneCondition, bool, u64)>,
    /// Writes this save covers that were not yet durable when it was written (empty when the
    /// data was synced before the record).
    pub unsynced: Vec<Run>,
}

/// Encodes a state record.
pub fn encode_state(s: &State) -> Vec<u8> {
    let mut e = Enc::with_capacity(8 + 10 * s.zones.len() + 28 * s.unsynced.len());
    e.u32(s.zones.len() as u32);
    for &(c, ns, wp) in &s.zones {
        e.u8(c.code());
        e.u8(ns as u8);
        e.u64(wp);
    }
    e.u32(s.unsynced.len() as u32);
    for r in &s.unsynced {
        e.u32(r.zone);
        e.u64(r.from);
        e.u64(r.to);
        e.u32(r.crc);
    }
    STATE_FORMAT.encode(0, s.seq, e.as_bytes())
}

/// Decodes a state record, checking its frame, counts and that every run is a non-empty range
/// of a zone the record has, below that zone's write pointer.
pub fn decode_state(b: &[u8]) -> Result<State, FormatError> {
    let f = STATE_FORMAT.decode(b)?;
    let mut d = Dec::new(f.payload);
    let err = FormatError::field("corrupt zone state");
    let nz = d.u32().map_err(err)? as usize;
    if nz > d.remaining() / 10 {
        return Err(FormatError::invalid(format!(
            "corrupt zone state: {nz} zones do not fit"
        )));
    }
    let mut zones = Vec::with_capacity(nz);
    for i in 0..nz {
        let c = d.u8().map_err(err)?;
        let cond = ZoneCondition::from_code(c).ok_or_else(|| {
            FormatError::invalid(format!(
                "corrupt zone state: zone {i} has unknown condition {c}"
            ))
        })?;
        let ns = d.u8().map_err(err)? != 0;
        zones.push((cond, ns, d.u64().map_err(err)?));
    }
    let nr = d.u32().map_err(err)? as usize;
    if nr > MAX_RUNS || nr > d.remaining() / 24 {
        return Err(FormatError::invalid(format!(
            "corrupt zone state: {nr} unsynced runs do not fit"
        )));
    }
    let mut unsynced = Vec::with_capacity(nr);
    for _ in 0..nr {
        let r = Run {
            zone: d.u32().map_err(err)?,
            from: d.u64().map_err(err)?,
            to: d.u64().map_err(err)?,
            crc: d.u32().map_err(err)?,
        };
        let wp = zones.get(r.zone as usize).map(|z| z.2);
        if r.from >= r.to || wp.is_none_or(|wp| r.to > wp) {
            return Err(FormatError::invalid(format!(
                "corrupt zone state: unsynced run {}..{} of zone {} is not below its write \
                 pointer",
                r.from, r.to, r.zone
            )));
        }
        unsynced.push(r);
    }
    if !d.is_empty() {
        return Err(FormatError::invalid(format!(
            "corrupt zone state: {} bytes after the runs",
            d.remaining()
        )));
    }
    Ok(State {
        seq: f.header.seq,
        zones,
        unsynced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> State {
        State {
            seq: 9,
            zones: vec![
                (ZoneCondition::NotWritePointer, false, 256),
                (ZoneCondition::ImplicitOpen, false, 300),
                (ZoneCondition::Empty, false, 512),
            ],
            unsynced: vec![Run {
                zone: 1,
                from: 290,
                to: 300,
                crc: 0xdead_beef,
            }],
        }
    }

    #[test]
    fn records_round_trip_and_reject_damage() {
        let s = state();
        let b = encode_state(&s);
        assert_eq!(decode_state(&b).unwrap(), s);
        for i in 0..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 0x10;
            assert!(
                decode_state(&bad).is_err(),
                "flip at byte {i} went unnoticed"
            );
        }
        let d = Descriptor {
            sector_size: 4096,
            zone_size: 1 << 20,
            conventional_zones: 1,
            zones: 3,
            slot_offset: 3 << 20,
            slot_size: slot_size(3),
        };
        assert_eq!(decode_descriptor(&encode_descriptor(&d)).unwrap(), d);
        let overlap = Descriptor {
            slot_offset: 2 << 20,
            ..d
        };
        let e = decode_descriptor(&encode_descriptor(&overlap))
            .unwrap_err()
            .to_string();
        assert!(e.contains("overlap"), "{e}");
    }

    #[test]
    fn a_run_above_its_write_pointer_or_of_a_missing_zone_is_refused() {
        for run in [(1, 290, 301), (3, 0, 1), (1, 300, 300)] {
            let mut s = state();
            s.unsynced[0] = Run {
                zone: run.0,
                from: run.1,
                to: run.2,
                crc: 0,
            };
            let e = decode_state(&encode_state(&s)).unwrap_err().to_string();
            assert!(e.contains("unsynced run"), "{run:?}: {e}");
        }
    }

    #[test]
    fn a_full_record_fits_its_slot() {
        for n in [2u64, 16, 4096, 200_000] {
            let s = State {
                seq: u64::MAX,
                zones: vec![(ZoneCondition::Full, true, u64::MAX); n as usize],
                unsynced: vec![
                    Run {
                        zone: 0,
                        from: 0,
                        to: 1,
                        crc: 0
                    };
                    MAX_RUNS
                ],
            };
            assert!(encode_state(&s).len() as u64 <= slot_size(n), "{n} zones");
        }
    }
}
