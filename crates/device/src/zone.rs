//! Zones with T10 ZBC / T13 ZAC semantics: types, conditions, the write-pointer rules and the
//! open-zone resource limit. This module is pure state; the device applies it before touching
//! the media.

use crate::error::{DeviceError, Result};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Zone type (ZBC "ZONE TYPE").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneType {
    /// Random writes allowed; no write pointer.
    Conventional,
    /// Writes must start at the write pointer (host-managed).
    SeqWriteRequired,
    /// Sequential writes preferred; random writes accepted (host-aware).
    SeqWritePreferred,
}

impl ZoneType {
    /// Name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ZoneType::Conventional => "conventional",
            ZoneType::SeqWriteRequired => "seq-write-required",
            ZoneType::SeqWritePreferred => "seq-write-preferred",
        }
    }

    /// Short code as util-linux `blkzone` prints it.
    pub fn code(self) -> &'static str {
        match self {
            ZoneType::Conventional => "CONV",
            ZoneType::SeqWriteRequired => "SEQ_WRITE_REQUIRED",
            ZoneType::SeqWritePreferred => "SEQ_WRITE_PREFERRED",
        }
    }

    /// Whether the zone has a write pointer.
    pub fn is_sequential(self) -> bool {
        self != ZoneType::Conventional
    }
}

/// Zone condition (ZBC "ZONE CONDITION").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneCondition {
    /// Conventional zones have no write pointer.
    NotWritePointer,
    /// Write pointer at the zone start.
    Empty,
    /// Opened by a write.
    ImplicitOpen,
    /// Opened by an OPEN ZONE command.
    ExplicitOpen,
    /// Written but not open.
    Closed,
    /// Write pointer at the zone end (or finished).
    Full,
    /// Readable, not writable.
    ReadOnly,
    /// Not accessible.
    Offline,
}

impl ZoneCondition {
    /// Every condition, in report order.
    pub const ALL: [ZoneCondition; 8] = [
        ZoneCondition::NotWritePointer,
        ZoneCondition::Empty,
        ZoneCondition::ImplicitOpen,
        ZoneCondition::ExplicitOpen,
        ZoneCondition::Closed,
        ZoneCondition::Full,
        ZoneCondition::ReadOnly,
        ZoneCondition::Offline,
    ];

    /// Name used in reports, filters and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ZoneCondition::NotWritePointer => "not-write-pointer",
            ZoneCondition::Empty => "empty",
            ZoneCondition::ImplicitOpen => "implicit-open",
            ZoneCondition::ExplicitOpen => "explicit-open",
            ZoneCondition::Closed => "closed",
            ZoneCondition::Full => "full",
            ZoneCondition::ReadOnly => "read-only",
            ZoneCondition::Offline => "offline",
        }
    }

    /// Whether the zone counts against the open-zone limit.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            ZoneCondition::ImplicitOpen | ZoneCondition::ExplicitOpen
        )
    }

    /// Wire code stored in disk images.
    pub fn code(self) -> u8 {
        match self {
            ZoneCondition::NotWritePointer => 0,
            ZoneCondition::Empty => 1,
            ZoneCondition::ImplicitOpen => 2,
            ZoneCondition::ExplicitOpen => 3,
            ZoneCondition::Closed => 4,
            ZoneCondition::Full => 5,
            ZoneCondition::ReadOnly => 6,
            ZoneCondition::Offline => 7,
        }
    }

    /// Inverse of [`Self::code`].
    pub fn from_code(c: u8) -> Option<Self> {
        Self::ALL.get(c as usize).copied()
    }
}

impl fmt::Display for ZoneCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a zone condition (or a `--condition` filter) did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConditionParseError {
    /// `open` names two conditions.
    #[error("use implicit-open or explicit-open (or 'open' via the filter)")]
    Ambiguous,
    /// Not a condition name.
    #[error("unknown zone condition {0:?} (one of: empty, implicit-open, explicit-open, open, closed, full, read-only, offline, not-write-pointer)")]
    Unknown(String),
}

impl std::str::FromStr for ZoneCondition {
    type Err = ConditionParseError;
    fn from_str(s: &str) -> std::result::Result<Self, ConditionParseError> {
        let s = s.to_ascii_lowercase();
        let alias = match s.as_str() {
            "open" => return Err(ConditionParseError::Ambiguous),
            "nwp" | "conventional" => "not-write-pointer",
            "ro" => "read-only",
            "iopen" | "imp-open" => "implicit-open",
            "eopen" | "exp-open" => "explicit-open",
            other => other,
        };
        Self::ALL
            .iter()
            .copied()
            .find(|c| c.name() == alias)
            .ok_or(ConditionParseError::Unknown(s))
    }
}

/// One zone as reported to the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Zone {
    /// Zone number.
    pub index: u32,
    /// Zone type.
    #[serde(rename = "type")]
    pub zone_type: ZoneType,
    /// Zone condition.
    pub condition: ZoneCondition,
    /// First LBA.
    pub start_lba: u64,
    /// Length in sectors.
    pub len_lba: u64,
    /// Sectors that can be written from the zone's start (NVMe ZNS's *zone capacity*; equal to
    /// `len_lba` on SMR drives and for conventional zones). The sectors between the capacity
    /// and the zone's end are never writable.
    #[serde(default)]
    pub capacity_lba: u64,
    /// Write pointer LBA (for conventional zones, the zone end; ZBC leaves it undefined). A
    /// full zone reports the zone end, as Linux does, even when its capacity ends earlier.
    pub write_pointer_lba: u64,
    /// Whether a non-sequential write hit this sequential-write-preferred zone.
    pub non_seq: bool,
}

impl Zone {
    /// First LBA after the zone.
    pub fn end_lba(&self) -> u64 {
        self.start_lba + self.len_lba
    }

    /// First LBA after the zone's writable sectors (its capacity); equal to [`Self::end_lba`]
    /// unless the device has a zone capacity smaller than its zone size.
    pub fn capacity_end_lba(&self) -> u64 {
        self.start_lba + self.capacity_lba
    }

    /// Sectors written from the zone's start that can hold data: up to the write pointer,
    /// never past the capacity (a full zone reports its write pointer at the zone end).
    pub fn written_sectors(&self) -> u64 {
        self.write_pointer_lba
            .min(self.capacity_end_lba())
            .saturating_sub(self.start_lba)
    }

    /// Sectors that can still be written at the write pointer (0 for a full or conventional
    /// zone, which has no write pointer).
    pub fn remaining_sectors(&self) -> u64 {
        if !self.zone_type.is_sequential() || self.condition == ZoneCondition::Full {
            return 0;
        }
        self.capacity_end_lba()
            .saturating_sub(self.write_pointer_lba)
    }

    /// Whether the zone counts against an active-zone limit (ZNS): open or closed.
    pub fn is_active(&self) -> bool {
        self.condition.is_open() || self.condition == ZoneCondition::Closed
    }
}

/// Filter of a REPORT ZONES request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZoneFilter {
    /// Every zone.
    #[default]
    All,
    /// Zones in this condition.
    Condition(ZoneCondition),
    /// Implicitly or explicitly open zones.
    Open,
}

impl ZoneFilter {
    /// Whether a zone passes.
    pub fn matches(&self, z: &Zone) -> bool {
        match self {
            ZoneFilter::All => true,
            ZoneFilter::Condition(c) => z.condition == *c,
            ZoneFilter::Open => z.condition.is_open(),
        }
    }
}

impl std::str::FromStr for ZoneFilter {
    type Err = ConditionParseError;
    fn from_str(s: &str) -> std::result::Result<Self, ConditionParseError> {
        match s.to_ascii_lowercase().as_str() {
            "all" => Ok(ZoneFilter::All),
            "open" => Ok(ZoneFilter::Open),
            other => other.parse().map(ZoneFilter::Condition),
        }
    }
}

/// A zone management action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneAction {
    /// RESET WRITE POINTER.
    Reset,
    /// OPEN ZONE (explicit).
    Open,
    /// CLOSE ZONE.
    Close,
    /// FINISH ZONE.
    Finish,
}

impl ZoneAction {
    /// Whether ZBC's ALL bit applies this action to zone `z`: the sequential zones it changes
    /// (a reset of every non-empty zone, an open of every closed one, a close of every open
    /// one, a finish of every open or closed one), never a read-only or offline zone.
    pub fn applies_to_all(self, z: &Zone) -> bool {
        z.zone_type.is_sequential()
            && match self {
                ZoneAction::Reset => !matches!(
                    z.condition,
                    ZoneCondition::Empty | ZoneCondition::ReadOnly | ZoneCondition::Offline
                ),
                ZoneAction::Open => z.condition == ZoneCondition::Closed,
                ZoneAction::Close => z.condition.is_open(),
                ZoneAction::Finish => matches!(
                    z.condition,
                    ZoneCondition::ImplicitOpen
                        | ZoneCondition::ExplicitOpen
                        | ZoneCondition::Closed
                ),
            }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ZoneAction::Reset => "reset",
            ZoneAction::Open => "open",
            ZoneAction::Close => "close",
            ZoneAction::Finish => "finish",
        }
    }
}

/// What a write did to the zone table, so the device can undo it if the media write fails.
#[derive(Debug, Clone, Copy)]
pub struct WriteGrant {
    /// Zone index, when the write went to a sequential zone.
    pub zone: Option<u32>,
    /// A zone that was implicitly closed to make room.
    pub closed_for_room: Option<u32>,
}

/// The zone table and its rules.
#[derive(Debug, Clone)]
pub struct ZoneTable {
    zones: Vec<Zone>,
    zone_sectors: u64,
    max_open: u32,
    /// Most zones open or closed at once (ZNS's active resources); 0 = no limit.
    max_active: u32,
    unrestricted_reads: bool,
}

impl ZoneTable {
    /// Zones of `zone_sectors` each over `capacity` sectors; the first `conventional` are
    /// conventional, the rest of `seq_type`.
    pub fn new(
        capacity: u64,
        zone_sectors: u64,
        conventional: u32,
        seq_type: ZoneType,
        max_open: u32,
        unrestricted_reads: bool,
    ) -> Self {
        let n = capacity.div_ceil(zone_sectors.max(1)) as u32;
        let zones = (0..n)
            .map(|i| {
                let start = i as u64 * zone_sectors;
                let len = zone_sectors.min(capacity - start);
                let t = if i < conventional {
                    ZoneType::Conventional
                } else {
                    seq_type
                };
                Zone {
                    index: i,
                    zone_type: t,
                    condition: if t.is_sequential() {
                        ZoneCondition::Empty
                    } else {
                        ZoneCondition::NotWritePointer
                    },
                    start_lba: start,
                    len_lba: len,
                    capacity_lba: len,
                    write_pointer_lba: if t.is_sequential() {
                        start
                    } else {
                        start + len
                    },
                    non_seq: false,
                }
            })
            .collect();
        ZoneTable {
            zones,
            zone_sectors,
            max_open,
            max_active: 0,
            unrestricted_reads,
        }
    }

    /// Gives every sequential zone `capacity` writable sectors (ZNS's zone capacity, at most
    /// the zone's length); the sectors after it up to the zone end are never writable.
    pub fn with_zone_capacity(mut self, capacity: u64) -> Self {
        for z in &mut self.zones {
            if z.zone_type.is_sequential() {
                z.capacity_lba = capacity.clamp(1, z.len_lba);
            }
        }
        self
    }

    /// Limits the zones that are open or closed at once to `max_active` (0 = no limit).
    pub fn with_max_active(mut self, max_active: u32) -> Self {
        self.max_active = max_active;
        self
    }

    /// Number of zones.
    pub fn len(&self) -> u32 {
        self.zones.len() as u32
    }

    /// Whether there are no zones.
    pub fn is_empty(&self) -> bool {
        self.zones.is_empty()
    }

    /// Nominal zone size in sectors.
    pub fn zone_sectors(&self) -> u64 {
        self.zone_sectors
    }

    /// The open-zone limit.
    pub fn max_open(&self) -> u32 {
        self.max_open
    }

    /// The active-zone limit (0 = none).
    pub fn max_active(&self) -> u32 {
        self.max_active
    }

    /// Writable sectors of the sequential zones (the zone size unless the device has a zone
    /// capacity; the smallest when the zones differ).
    pub fn zone_capacity(&self) -> u64 {
        self.zones
            .iter()
            .filter(|z| z.zone_type.is_sequential())
            .map(|z| z.capacity_lba)
            .min()
            .unwrap_or(self.zone_sectors)
    }

    /// Whether reads past write pointers are allowed (URSWRZ).
    pub fn unrestricted_reads(&self) -> bool {
        self.unrestricted_reads
    }

    /// All zones.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// Copies of the zones `filter` matches, in order (what a zone report returns).
    pub fn report(&self, filter: ZoneFilter) -> Vec<Zone> {
        self.zones
            .iter()
            .filter(|z| filter.matches(z))
            .cloned()
            .collect()
    }

    /// One zone.
    pub fn zone(&self, index: u64) -> Result<&Zone> {
        self.zones
            .get(index as usize)
            .ok_or(DeviceError::NoSuchZone {
                zone: index,
                zones: self.len(),
            })
    }

    /// Zone holding an LBA.
    pub fn zone_of(&self, lba: u64) -> u32 {
        (lba / self.zone_sectors) as u32
    }

    /// Sets the write pointer of sequential zone `i` back to `lba` (the T13 banded "set write
    /// pointer" extension; see `ZonedDevice::rewind_write_pointer`). Only backwards: `lba`
    /// must lie between the zone start and the current write pointer. An open zone stays
    /// open, a full one becomes closed, and a rewind to the zone start empties it. Returns the
    /// old write pointer.
    pub fn rewind(&mut self, i: u32, lba: u64) -> Result<u64> {
        let z = self.zone(i as u64)?.clone();
        let refuse = |why: &str| DeviceError::InvalidZoneOp {
            zone: i,
            op: "set the write pointer back",
            condition: why.to_string(),
        };
        if !z.zone_type.is_sequential() {
            return Err(refuse("conventional"));
        }
        match z.condition {
            ZoneCondition::ReadOnly => return Err(DeviceError::ZoneReadOnly { zone: i }),
            ZoneCondition::Offline => return Err(DeviceError::ZoneOffline { zone: i }),
            _ => {}
        }
        if lba < z.start_lba || lba > z.write_pointer_lba.min(z.capacity_end_lba()) {
            return Err(refuse(&format!(
                "a move to LBA {lba}, outside its start {} and write pointer {} (only backwards)",
                z.start_lba, z.write_pointer_lba
            )));
        }
        let cond = if lba == z.start_lba {
            ZoneCondition::Empty
        } else if z.condition.is_open() {
            z.condition
        } else {
            ZoneCondition::Closed
        };
        if let Some(zone) = self.zones.get_mut(i as usize) {
            zone.condition = cond;
            zone.write_pointer_lba = lba;
        }
        Ok(z.write_pointer_lba)
    }

    /// Replaces the state of zone `i` (loading an image, fault injection).
    pub fn set_state(&mut self, i: u32, condition: ZoneCondition, wp: u64, non_seq: bool) {
        if let Some(z) = self.zones.get_mut(i as usize) {
            z.condition = condition;
            z.write_pointer_lba = wp;
            z.non_seq = non_seq;
        }
    }

    fn open_count(&self) -> u32 {
        self.zones.iter().filter(|z| z.condition.is_open()).count() as u32
    }

    fn active_count(&self) -> u32 {
        self.zones.iter().filter(|z| z.is_active()).count() as u32
    }

    /// Refuses to make the empty zone `zone` active (open it) when the active-zone limit is
    /// reached: only a reset or a finish (or filling a zone) frees an active resource.
    fn check_active_room(&self, zone: u32) -> Result<()> {
        let active = self.active_count();
        if self.max_active > 0 && active >= self.max_active {
            return Err(DeviceError::TooManyActiveZones {
                zone,
                active,
                max_active: self.max_active,
            });
        }
        Ok(())
    }

    /// Makes room for one more open zone by implicitly closing an implicitly open zone (the
    /// least recently written is not tracked; the lowest-numbered is chosen, deterministically).
    fn make_room(&mut self, for_zone: u32) -> Result<Option<u32>> {
        if self.max_open == 0 || self.open_count() < self.max_open {
            return Ok(None);
        }
        let victim = self
            .zones
            .iter()
            .position(|z| z.condition == ZoneCondition::ImplicitOpen)
            .ok_or(DeviceError::TooManyOpenZones {
                zone: for_zone,
                open: self.open_count(),
                max_open: self.max_open,
            })?;
        let z = &mut self.zones[victim];
        z.condition = if z.write_pointer_lba == z.start_lba {
            ZoneCondition::Empty
        } else {
            ZoneCondition::Closed
        };
        Ok(Some(victim as u32))
    }

    /// Checks a read of `[lba, lba + sectors)`. Returns the part that lies past write pointers
    /// (served as zeros without media access when reads are unrestricted) as a list of ranges.
    pub fn check_read(&self, lba: u64, sectors: u64) -> Result<Vec<(u64, u64)>> {
        let end = lba + sectors;
        let mut unwritten = Vec::new();
        let mut z = self.zone_of(lba);
        while (z as usize) < self.zones.len() && self.zones[z as usize].start_lba < end {
            let zone = &self.zones[z as usize];
            if zone.condition == ZoneCondition::Offline {
                return Err(DeviceError::ZoneOffline { zone: z });
            }
            if zone.zone_type.is_sequential() {
                let a = lba.max(zone.start_lba);
                let b = end.min(zone.end_lba());
                if b > zone.write_pointer_lba {
                    if !self.unrestricted_reads {
                        return Err(DeviceError::ReadPastWritePointer {
                            zone: z,
                            write_pointer: zone.write_pointer_lba,
                            lba,
                            sectors,
                        });
                    }
                    unwritten.push((a.max(zone.write_pointer_lba), b));
                }
            }
            z += 1;
        }
        Ok(unwritten)
    }

    /// Applies the zone rules to a write and advances the write pointer.
    pub fn apply_write(&mut self, lba: u64, sectors: u64) -> Result<WriteGrant> {
        let end = lba + sectors;
        let zi = self.zone_of(lba);
        let zone = &self.zones[zi as usize];
        match zone.condition {
            ZoneCondition::Offline => return Err(DeviceError::ZoneOffline { zone: zi }),
            ZoneCondition::ReadOnly => return Err(DeviceError::ZoneReadOnly { zone: zi }),
            _ => {}
        }
        if !zone.zone_type.is_sequential() {
            // Conventional writes may continue into following conventional zones only.
            let mut z = zi as usize + 1;
            while z < self.zones.len() && self.zones[z].start_lba < end {
                let next = &self.zones[z];
                if next.zone_type.is_sequential() {
                    return Err(DeviceError::ZoneBoundary {
                        zone: zi,
                        lba,
                        sectors,
                        zone_end: next.start_lba,
                        write_pointer: zone.write_pointer_lba,
                    });
                }
                match next.condition {
                    ZoneCondition::Offline => {
                        return Err(DeviceError::ZoneOffline { zone: z as u32 })
                    }
                    ZoneCondition::ReadOnly => {
                        return Err(DeviceError::ZoneReadOnly { zone: z as u32 })
                    }
                    _ => {}
                }
                z += 1;
            }
            return Ok(WriteGrant {
                zone: None,
                closed_for_room: None,
            });
        }
        let wp = zone.write_pointer_lba;
        if zone.condition == ZoneCondition::Full {
            return Err(DeviceError::ZoneFull {
                zone: zi,
                write_pointer: wp,
                lba,
            });
        }
        if end > zone.capacity_end_lba() {
            return Err(DeviceError::ZoneBoundary {
                zone: zi,
                lba,
                sectors,
                zone_end: zone.capacity_end_lba(),
                write_pointer: wp,
            });
        }
        let required = zone.zone_type == ZoneType::SeqWriteRequired;
        if required && lba != wp {
            return Err(DeviceError::UnalignedWrite {
                zone: zi,
                write_pointer: wp,
                lba,
            });
        }
        let needs_open = !zone.condition.is_open();
        if zone.condition == ZoneCondition::Empty {
            self.check_active_room(zi)?;
        }
        let closed_for_room = if needs_open {
            self.make_room(zi)?
        } else {
            None
        };
        let zone = &mut self.zones[zi as usize];
        if needs_open {
            zone.condition = ZoneCondition::ImplicitOpen;
        }
        if lba == zone.write_pointer_lba {
            zone.write_pointer_lba = end;
        } else {
            // Host-aware zone written out of order: ZBC marks it non-sequential.
            zone.non_seq = true;
            zone.write_pointer_lba = zone.write_pointer_lba.max(end);
        }
        if zone.write_pointer_lba >= zone.capacity_end_lba() {
            zone.condition = ZoneCondition::Full;
            zone.write_pointer_lba = zone.end_lba();
        }
        Ok(WriteGrant {
            zone: Some(zi),
            closed_for_room,
        })
    }

    /// Applies a zone management action to one zone.
    pub fn apply(&mut self, action: ZoneAction, index: u64) -> Result<()> {
        let n = self.len();
        let zone = self
            .zones
            .get(index as usize)
            .ok_or(DeviceError::NoSuchZone {
                zone: index,
                zones: n,
            })?;
        let zi = index as u32;
        let invalid = |why: &str| DeviceError::InvalidZoneOp {
            zone: zi,
            op: action.name(),
            condition: why.to_string(),
        };
        if !zone.zone_type.is_sequential() {
            return Err(invalid("conventional"));
        }
        match zone.condition {
            ZoneCondition::Offline => return Err(DeviceError::ZoneOffline { zone: zi }),
            ZoneCondition::ReadOnly => return Err(DeviceError::ZoneReadOnly { zone: zi }),
            _ => {}
        }
        let cond = zone.condition;
        match action {
            ZoneAction::Reset => {
                let z = &mut self.zones[zi as usize];
                z.write_pointer_lba = z.start_lba;
                z.condition = ZoneCondition::Empty;
                z.non_seq = false;
            }
            ZoneAction::Open => match cond {
                ZoneCondition::ExplicitOpen | ZoneCondition::Full => {}
                ZoneCondition::ImplicitOpen => {
                    self.zones[zi as usize].condition = ZoneCondition::ExplicitOpen
                }
                _ => {
                    if cond == ZoneCondition::Empty {
                        self.check_active_room(zi)?;
                    }
                    self.make_room(zi)?;
                    self.zones[zi as usize].condition = ZoneCondition::ExplicitOpen;
                }
            },
            ZoneAction::Close => {
                if cond.is_open() {
                    let z = &mut self.zones[zi as usize];
                    z.condition = if z.write_pointer_lba == z.start_lba {
                        ZoneCondition::Empty
                    } else {
                        ZoneCondition::Closed
                    };
                }
            }
            ZoneAction::Finish => {
                let z = &mut self.zones[zi as usize];
                z.write_pointer_lba = z.end_lba();
                z.condition = ZoneCondition::Full;
            }
        }
        Ok(())
    }

    /// After a power cycle: open zones become closed (or empty), and write pointers roll back
    /// to the first sector that did not reach the media.
    pub fn power_on(&mut self, lost: &crate::ranges::RangeSet) {
        for z in &mut self.zones {
            if !z.zone_type.is_sequential() {
                continue;
            }
            if let Some(first_lost) = lost.first_in(z.start_lba, z.write_pointer_lba) {
                z.write_pointer_lba = first_lost;
                if z.condition == ZoneCondition::Full {
                    z.condition = ZoneCondition::Closed;
                }
            }
            if z.condition.is_open() || z.condition == ZoneCondition::Closed {
                z.condition = if z.write_pointer_lba == z.start_lba {
                    ZoneCondition::Empty
                } else {
                    ZoneCondition::Closed
                };
            }
        }
    }
}
