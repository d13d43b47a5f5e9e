//! Model-based test: random sequences of zone operations, legal and illegal writes, reads and
//! flushes on a tiny host-managed drive, checked step by step against a small reference model
//! of ZBC written here (conditions, write pointers, open count, the bytes of every sector).
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use proptest::prelude::*;
use std::collections::HashMap;
use tegula_device::{
    BlockDevice, DeviceError, Disk, ZoneAction, ZoneCondition, ZoneFilter, ZoneTarget, ZonedDevice,
};

const ZS: u64 = 16; // 64 KiB zones
const ZONES: u32 = 16;
const MAX_OPEN: u32 = 3;

#[derive(Debug, Clone)]
enum Op {
    /// Write `n` sectors in zone `z`: at its write pointer, or at offset `off` from its start.
    Write {
        z: u32,
        at_wp: bool,
        off: u64,
        n: u64,
    },
    Read {
        lba: u64,
        n: u64,
    },
    Action {
        a: u8,
        z: Option<u32>,
    },
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..ZONES, any::<bool>(), 0..ZS + 2, 1u64..6).prop_map(|(z, at_wp, off, n)| Op::Write { z, at_wp, off, n }),
        4 => (0..ZONES as u64 * ZS, 1u64..8).prop_map(|(lba, n)| Op::Read { lba, n }),
        3 => (0u8..4, proptest::option::weighted(0.85, 0..ZONES + 1)).prop_map(|(a, z)| Op::Action { a, z }),
        1 => Just(Op::Flush),
    ]
}

/// What a command is expected to return: success or a named error with its key fields.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok,
    Unaligned { zone: u32, wp: u64, lba: u64 },
    Boundary { zone: u32 },
    Full { zone: u32 },
    ReadPast { zone: u32 },
    TooMany { zone: u32 },
    Invalid { zone: u32 },
    NoSuchZone,
    OutOfRange,
}

fn outcome<T>(r: &Result<T, DeviceError>) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok,
        Err(DeviceError::UnalignedWrite {
            zone,
            write_pointer,
            lba,
        }) => Outcome::Unaligned {
            zone: *zone,
            wp: *write_pointer,
            lba: *lba,
        },
        Err(DeviceError::ZoneBoundary { zone, .. }) => Outcome::Boundary { zone: *zone },
        Err(DeviceError::ZoneFull { zone, .. }) => Outcome::Full { zone: *zone },
        Err(DeviceError::ReadPastWritePointer { zone, .. }) => Outcome::ReadPast { zone: *zone },
        Err(DeviceError::TooManyOpenZones { zone, .. }) => Outcome::TooMany { zone: *zone },
        Err(DeviceError::InvalidZoneOp { zone, .. }) => Outcome::Invalid { zone: *zone },
        Err(DeviceError::NoSuchZone { .. }) => Outcome::NoSuchZone,
        Err(DeviceError::OutOfRange { .. }) => Outcome::OutOfRange,
        Err(e) => panic!("unexpected error {e}"),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MZone {
    seq: bool,
    cond: ZoneCondition,
    wp: u64,
}

/// The reference: ZBC as a few lines of plain code.
struct Model {
    zones: Vec<MZone>,
    /// Tag of the last write of each sector (absent: zeros).
    data: HashMap<u64, u32>,
}

impl Model {
    fn new(conventional: u32) -> Self {
        Model {
            zones: (0..ZONES)
                .map(|i| MZone {
                    seq: i >= conventional,
                    cond: if i >= conventional {
                        ZoneCondition::Empty
                    } else {
                        ZoneCondition::NotWritePointer
                    },
                    wp: if i >= conventional {
                        i as u64 * ZS
                    } else {
                        (i as u64 + 1) * ZS
                    },
                })
                .collect(),
            data: HashMap::new(),
        }
    }

    fn start(z: u32) -> u64 {
        z as u64 * ZS
    }

    fn open_count(&self) -> u32 {
        self.zones.iter().filter(|z| z.cond.is_open()).count() as u32
    }

    fn close_cond(&self, z: u32) -> ZoneCondition {
        if self.zones[z as usize].wp == Self::start(z) {
            ZoneCondition::Empty
        } else {
            ZoneCondition::Closed
        }
    }

    /// Room for one more open zone: implicitly close the lowest-numbered implicitly open zone.
    fn make_room(&mut self, z: u32) -> Outcome {
        if self.open_count() < MAX_OPEN {
            return Outcome::Ok;
        }
        match self
            .zones
            .iter()
            .position(|m| m.cond == ZoneCondition::ImplicitOpen)
        {
            Some(v) => {
                self.zones[v].cond = self.close_cond(v as u32);
                Outcome::Ok
            }
            None => Outcome::TooMany { zone: z },
        }
    }

    fn write(&mut self, lba: u64, n: u64, tag: u32) -> Outcome {
        let end = lba + n;
        if end > ZONES as u64 * ZS {
            return Outcome::OutOfRange;
        }
        let zi = (lba / ZS) as u32;
        let z = self.zones[zi as usize];
        if !z.seq {
            let last = ((end - 1) / ZS) as u32;
            if let Some(s) = (zi + 1..=last).find(|&i| self.zones[i as usize].seq) {
                let _ = s;
                return Outcome::Boundary { zone: zi };
            }
        } else {
            if z.cond == ZoneCondition::Full {
                return Outcome::Full { zone: zi };
            }
            if end > Self::start(zi + 1) {
                return Outcome::Boundary { zone: zi };
            }
            if lba != z.wp {
                return Outcome::Unaligned {
                    zone: zi,
                    wp: z.wp,
                    lba,
                };
            }
            if !z.cond.is_open() {
                let r = self.make_room(zi);
                if r != Outcome::Ok {
                    return r;
                }
                self.zones[zi as usize].cond = ZoneCondition::ImplicitOpen;
            }
            let m = &mut self.zones[zi as usize];
            m.wp = end;
            if end == Self::start(zi + 1) {
                m.cond = ZoneCondition::Full;
            }
        }
        for l in lba..end {
            self.data.insert(l, tag);
        }
        Outcome::Ok
    }

    fn read(&self, lba: u64, n: u64) -> (Outcome, Vec<Option<u32>>) {
        let end = lba + n;
        if end > ZONES as u64 * ZS {
            return (Outcome::OutOfRange, vec![]);
        }
        for zi in (lba / ZS) as u32..=((end - 1) / ZS) as u32 {
            let z = self.zones[zi as usize];
            if z.seq && end.min(Self::start(zi + 1)) > z.wp {
                return (Outcome::ReadPast { zone: zi }, vec![]);
            }
        }
        (
            Outcome::Ok,
            (lba..end).map(|l| self.data.get(&l).copied()).collect(),
        )
    }

    fn applies(&self, a: ZoneAction, z: u32) -> bool {
        let m = self.zones[z as usize];
        m.seq
            && match a {
                ZoneAction::Reset => m.cond != ZoneCondition::Empty,
                ZoneAction::Open => m.cond == ZoneCondition::Closed,
                ZoneAction::Close => m.cond.is_open(),
                ZoneAction::Finish => matches!(
                    m.cond,
                    ZoneCondition::ImplicitOpen
                        | ZoneCondition::ExplicitOpen
                        | ZoneCondition::Closed
                ),
            }
    }

    fn action_one(&mut self, a: ZoneAction, z: u32) -> Outcome {
        if z >= ZONES {
            return Outcome::NoSuchZone;
        }
        if !self.zones[z as usize].seq {
            return Outcome::Invalid { zone: z };
        }
        let c = self.zones[z as usize].cond;
        match a {
            ZoneAction::Reset => {
                let m = &mut self.zones[z as usize];
                m.wp = Self::start(z);
                m.cond = ZoneCondition::Empty;
                for l in Self::start(z)..Self::start(z + 1) {
                    self.data.remove(&l);
                }
            }
            ZoneAction::Open => match c {
                ZoneCondition::ExplicitOpen | ZoneCondition::Full => {}
                ZoneCondition::ImplicitOpen => {
                    self.zones[z as usize].cond = ZoneCondition::ExplicitOpen
                }
                _ => {
                    let r = self.make_room(z);
                    if r != Outcome::Ok {
                        return r;
                    }
                    self.zones[z as usize].cond = ZoneCondition::ExplicitOpen;
                }
            },
            ZoneAction::Close => {
                if c.is_open() {
                    self.zones[z as usize].cond = self.close_cond(z);
                }
            }
            ZoneAction::Finish => {
                let m = &mut self.zones[z as usize];
                m.wp = Self::start(z + 1);
                m.cond = ZoneCondition::Full;
            }
        }
        Outcome::Ok
    }

    fn action(&mut self, a: ZoneAction, target: ZoneTarget) -> Outcome {
        match target {
            ZoneTarget::One(z) => self.action_one(a, z),
            ZoneTarget::All => {
                let targets: Vec<u32> = (0..ZONES).filter(|&z| self.applies(a, z)).collect();
                for z in targets {
                    let r = self.action_one(a, z);
                    if r != Outcome::Ok {
                        return r;
                    }
                }
                Outcome::Ok
            }
        }
    }
}

fn check_invariants(d: &Disk, m: &Model, step: usize) -> Result<(), TestCaseError> {
    let zones = d.report_zones(ZoneFilter::All);
    let mut open = 0;
    for z in &zones {
        let mz = m.zones[z.index as usize];
        prop_assert_eq!(
            (z.condition, z.write_pointer_lba),
            (mz.cond, mz.wp),
            "step {}: zone {} differs from the model",
            step,
            z.index
        );
        prop_assert!(z.write_pointer_lba >= z.start_lba && z.write_pointer_lba <= z.end_lba());
        match z.condition {
            ZoneCondition::Empty => prop_assert_eq!(z.write_pointer_lba, z.start_lba),
            ZoneCondition::Full | ZoneCondition::NotWritePointer => {
                prop_assert_eq!(z.write_pointer_lba, z.end_lba())
            }
            ZoneCondition::Closed => {
                prop_assert!(z.write_pointer_lba > z.start_lba && z.write_pointer_lba < z.end_lba())
            }
            ZoneCondition::ImplicitOpen => {
                prop_assert!(z.write_pointer_lba > z.start_lba && z.write_pointer_lba < z.end_lba())
            }
            ZoneCondition::ExplicitOpen => prop_assert!(z.write_pointer_lba < z.end_lba()),
            other => prop_assert!(false, "unexpected condition {}", other),
        }
        if z.condition.is_open() {
            open += 1;
        }
    }
    prop_assert!(open <= MAX_OPEN, "step {}: {} zones open", step, open);
    prop_assert_eq!(open, m.open_count());
    Ok(())
}

fn run(ops: Vec<Op>, cache: bool) -> Result<(), TestCaseError> {
    let mut c = tiny_hm_config(1, MAX_OPEN);
    c.zones.zone_size = ZS * SS as u64;
    c.zones.conventional_zones = Some(2);
    c.cache.write_cache = cache;
    c.cache.size = 8 * SS as u64;
    let d = Disk::in_memory(c).unwrap();
    assert_eq!(d.info().zones, ZONES);
    let mut m = Model::new(2);
    for (step, op) in ops.into_iter().enumerate() {
        let tag = step as u32 + 1;
        match op {
            Op::Write { z, at_wp, off, n } => {
                let lba = if at_wp {
                    m.zones[z as usize].wp.min(Model::start(z + 1) - 1)
                } else {
                    Model::start(z) + off
                };
                let got = outcome(&d.write(lba, &pattern(lba, n, tag)));
                let want = m.write(lba, n, tag);
                prop_assert_eq!(got, want, "step {}: write {}+{}", step, lba, n);
            }
            Op::Read { lba, n } => {
                let mut buf = vec![0u8; n as usize * SS];
                let got = outcome(&d.read(lba, &mut buf));
                let (want, tags) = m.read(lba, n);
                prop_assert_eq!(&got, &want, "step {}: read {}+{}", step, lba, n);
                if got == Outcome::Ok {
                    for (i, t) in tags.iter().enumerate() {
                        let l = lba + i as u64;
                        let s = &buf[i * SS..(i + 1) * SS];
                        prop_assert_eq!(tag_of(l, s), *t, "step {}: sector {}", step, l);
                    }
                }
            }
            Op::Action { a, z } => {
                let a = [
                    ZoneAction::Reset,
                    ZoneAction::Open,
                    ZoneAction::Close,
                    ZoneAction::Finish,
                ][a as usize];
                let target = z.map_or(ZoneTarget::All, ZoneTarget::One);
                let got = outcome(&d.zone_action(a, target));
                let want = m.action(a, target);
                prop_assert_eq!(got, want, "step {}: {} {:?}", step, a.name(), target);
            }
            Op::Flush => {
                d.flush().unwrap();
            }
        }
        check_invariants(&d, &m, step)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn zoned_drive_with_write_cache_agrees_with_the_reference_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(ops, true)?;
    }

    #[test]
    fn zoned_drive_without_write_cache_agrees_with_the_reference_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(ops, false)?;
    }
}
