//! Model-based randomized tests against a `BTreeMap`: puts, deletes, batches (synced, logged
//! or unlogged), scans, snapshots, flushes, compactions and reopen, in both organisations.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::ZonedDevice;
use tegula_smrdb::{Db, Mode, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn verify(db: &Db, model: &Model, rng: &mut Rng, keys: u64) {
    for _ in 0..50 {
        let k = key(rng.below(keys));
        assert_eq!(
            db.get(&k).unwrap(),
            model.get(&k).cloned(),
            "get {:?}",
            String::from_utf8_lossy(&k)
        );
    }
    let a = key(rng.below(keys));
    let b = key(rng.below(keys));
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let got: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan(&lo, Some(&hi))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model
        .range(lo.clone()..hi.clone())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(got, want, "scan");
}

fn run_model(mode: Mode, seed: u64, ops: usize, keys: u64, max_value: u64) {
    let disk = tiny_disk(64);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let mut db = Db::create(dev.clone(), format(mode), tiny_opts()).unwrap();
    let mut model = Model::new();
    let mut rng = Rng(seed);
    let mut snaps: Vec<(tegula_smrdb::Snapshot, Model)> = Vec::new();
    for i in 0..ops {
        match rng.below(100) {
            0..=59 => {
                let k = key(rng.below(keys));
                let v = value(&mut rng, i as u64, max_value);
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            60..=74 => {
                let k = key(rng.below(keys));
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            75..=84 => {
                let mut b = WriteBatch::new();
                for _ in 0..rng.below(8) + 1 {
                    let k = key(rng.below(keys));
                    if rng.below(3) == 0 {
                        b.delete(&k);
                        model.remove(&k);
                    } else {
                        let v = value(&mut rng, i as u64, max_value);
                        b.put(&k, &v);
                        model.insert(k, v);
                    }
                }
                let sync = rng.below(4) == 0;
                let wo = WriteOptions {
                    sync,
                    disable_wal: !sync && rng.below(3) == 0,
                };
                db.write(b, wo).unwrap();
            }
            85..=89 => verify(&db, &model, &mut rng, keys),
            90..=92 => {
                if snaps.len() < 3 {
                    snaps.push((db.snapshot(), model.clone()));
                } else {
                    let (s, m) = snaps.remove(0);
                    let k = key(rng.below(keys));
                    assert_eq!(
                        db.get_at(&s, &k).unwrap(),
                        m.get(&k).cloned(),
                        "snapshot get"
                    );
                    let got: Vec<_> = db
                        .scan_at(&s, b"", None)
                        .unwrap()
                        .map(|r| r.unwrap())
                        .collect();
                    let want: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    assert_eq!(got, want, "snapshot scan");
                }
            }
            93 => db.flush().unwrap(),
            94 if rng.below(4) == 0 => db.compact_all().unwrap(),
            95 => {
                snaps.clear();
                db.close().unwrap();
                db = Db::open(dev.clone(), tiny_opts()).unwrap();
                assert_eq!(db.mode(), mode);
            }
            _ => {}
        }
    }
    verify(&db, &model, &mut rng, keys);
    let all: Vec<_> = db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, want);
    let rep = db.check().unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
    let st = db.stats();
    assert!(
        st.bands_per_level.iter().sum::<usize>() > 0,
        "workload should make bands: {st:?}"
    );
    snaps.clear();
    db.close().unwrap();
    // Reopen once more and compare everything.
    let db = Db::open(dev, tiny_opts()).unwrap();
    assert_eq!(db.mode(), mode);
    let all: Vec<_> = db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(all, want);
}

#[test]
fn soc_matches_model() {
    for seed in 1..=2 {
        run_model(Mode::Soc, seed * 7919, 4000, 1500, 300);
    }
}

#[test]
fn loc_matches_model() {
    for seed in 1..=2 {
        run_model(Mode::Loc, seed * 104_729, 4000, 1500, 300);
    }
}

#[test]
fn soc_compacts_and_keeps_l0_bounded() {
    let disk = tiny_disk(64);
    let db = Db::create(disk, format(Mode::Soc), tiny_opts()).unwrap();
    let mut rng = Rng(42);
    let mut model = Model::new();
    for i in 0..20_000u64 {
        let k = key(rng.below(5000));
        let v = value(&mut rng, i, 200);
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    let st = db.stats();
    assert!(st.compactions + st.trivial_moves > 0, "{st:?}");
    assert!(st.bands_per_level[0] < 12, "{st:?}");
    verify(&db, &model, &mut rng, 5000);
    db.compact_all().unwrap();
    let st = db.stats();
    assert_eq!(st.bands_per_level[0], 0);
    assert_eq!(st.overlap_count, 0, "{st:?}");
    verify(&db, &model, &mut rng, 5000);
    assert!(db.check().unwrap().is_ok());
}
