//! Power cuts at every media write of host writes that need read-modify-write, with the raw
//! drive's write cache on and off (over a thousand cuts per run). After each cut the drive
//! reopens (restoring the backup of an interrupted RMW): every sector written and flushed
//! before reads back exactly, each sector of the interrupted write holds its old or its new
//! contents, no top track holding data is left damaged, and the drive keeps working.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk};
use tegula_dmimr::DmImr;

const KIB: u64 = 2048;

/// The base state: the whole drive written in logical order and flushed (every top holds
/// data, so every bottom write needs an RMW).
fn base(cache: bool) -> (Arc<Disk>, DmImr, Model) {
    let (d, dm) = drive(KIB, cache);
    let cap = dm.info().capacity_sectors;
    let all = content(1, 0, cap);
    dm.write(0, &all).unwrap();
    dm.flush().unwrap();
    let mut m = Model::new(cap);
    m.write(0, &all);
    (d, dm, m)
}

/// The operations the cuts hit: a write over three bottom tracks (two RMW groups at most),
/// a write spanning the end of the bottoms and the first tops, then a flush.
fn ops(dm: &DmImr) -> Vec<(u64, Vec<u8>)> {
    let [bottoms, _] = dm.phase_ends();
    vec![
        (5, content(2, 5, 3 * BOTTOM)),
        (bottoms - 4, content(3, bottoms - 4, 10)),
    ]
}

fn run(dm: &DmImr) -> tegula_device::Result<()> {
    for (lba, data) in ops(dm) {
        dm.write(lba, &data)?;
    }
    dm.flush()?;
    Ok(())
}

#[test]
fn every_cut_inside_read_modify_write_loses_nothing_flushed() {
    let mut cuts = 0;
    let mut restored = 0;
    for cache in [true, false] {
        let (d, dm, _) = base(cache);
        let before = d.stats().media_writes;
        run(&dm).unwrap();
        let n = d.stats().media_writes - before;
        assert!(dm.stats().rmw_ops >= 2, "{:?}", dm.stats());
        for seed in 0..20 {
            for at in 1..=n {
                let (d, dm, mut m) = base(cache);
                d.arm_power_cut(at, seed);
                assert!(run(&dm).is_err(), "cut at write {at} of {n} missed");
                let pending = ops(&dm);
                drop(dm);
                d.power_on();
                let dm = DmImr::open(d.clone()).unwrap();
                restored += dm.stats().recovered_rmw;
                for (lba, data) in &pending {
                    m.maybe(*lba, data);
                }
                m.verify(
                    &dm,
                    &format!("cache {cache}, seed {seed}, cut at {at} of {n}"),
                );
                assert!(dm.damaged_valid_tops().is_empty(), "cut at {at}");
                // It keeps working: the operations again, flushed, read back exactly.
                m.settle(&dm);
                run(&dm).unwrap();
                for (lba, data) in ops(&dm) {
                    m.write(lba, &data);
                }
                m.verify(&dm, "after the rerun");
                cuts += 1;
            }
        }
    }
    assert!(cuts >= 1000, "only {cuts} cuts");
    assert!(
        restored > 0,
        "no cut hit a read-modify-write between backup and restore"
    );
}

#[test]
fn a_flushed_write_survives_a_cut_during_the_next_one() {
    let (d, dm, mut m) = base(true);
    let first = content(9, 40, 20);
    dm.write(40, &first).unwrap();
    dm.flush().unwrap();
    m.write(40, &first);
    d.arm_power_cut(3, 1);
    let second = content(10, 0, 30);
    assert!(dm.write(0, &second).and_then(|_| dm.flush()).is_err());
    drop(dm);
    d.power_on();
    let dm = DmImr::open(d).unwrap();
    m.maybe(0, &second);
    m.verify(&dm, "after the cut");
}
