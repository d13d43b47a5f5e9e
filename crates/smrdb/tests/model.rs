//! Model-based randomized tests against a `BTreeMap`: puts, deletes, batches (synced, logged
//! or unlogged), scans, snapshots, flushes, compactions and reopen, in both organisations.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::ZonedDevice;
use tegula_smrdb::{Db, Mode, Options, WriteBatch, WriteOptions};

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
    seeks(db, model, rng, keys, 5);
}

/// Seeks (`scan(start, None)` cut after a few pairs, db_bench's `seekrandom`) from present
/// and absent keys, compared with the model.
fn seeks(db: &Db, model: &Model, rng: &mut Rng, keys: u64, n: usize) {
    for _ in 0..n {
        let mut start = key(rng.below(keys + 2));
        if rng.below(3) == 0 {
            start.push(b'~'); // between two keys
        }
        let take = 1 + rng.below(40) as usize;
        let got: Vec<(Vec<u8>, Vec<u8>)> = db
            .scan(&start, None)
            .unwrap()
            .take(take)
            .map(|r| r.unwrap())
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .range(start.clone()..)
            .take(take)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(
            got,
            want,
            "seek {:?} + {take}",
            String::from_utf8_lossy(&start)
        );
    }
}

fn run_model(mode: Mode, seed: u64, ops: usize, keys: u64, max_value: u64) {
    run_model_with(mode, seed, ops, keys, max_value, tiny_opts());
}

fn run_model_with(mode: Mode, seed: u64, ops: usize, keys: u64, max_value: u64, opts: Options) {
    let tiny_opts = || opts.clone();
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

/// Compaction inputs read in windows (`Options::compaction_read_ahead_bytes`), smaller than
/// the tiny bands and under a budget that runs out, give the same results.
#[test]
fn both_modes_match_model_with_compaction_read_ahead_windows() {
    for mode in [Mode::Soc, Mode::Loc] {
        let opts = Options {
            compaction_read_ahead_bytes: 64 << 10,
            compaction_read_ahead_budget: 128 << 10,
            read_ahead_bytes: 16 << 10,
            ..tiny_opts()
        };
        run_model_with(mode, 31_337, 4000, 1500, 300, opts);
    }
}

/// The RESP server's read options: with the memtable's point index, gets at the latest
/// snapshot take the index and gets at older snapshots the tree; with second-miss admission
/// to a block cache of four blocks, most band gets search blocks where they were read and the
/// rest through the cache. Both modes must agree with the model.
#[test]
fn both_modes_match_model_with_the_servers_read_options() {
    for mode in [Mode::Soc, Mode::Loc] {
        let opts = Options {
            memtable_point_index: true,
            block_cache_second_miss: true,
            block_cache_bytes: 16 << 10,
            ..tiny_opts()
        };
        run_model_with(mode, 77_773, 4000, 1500, 300, opts);
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

/// Many overlapping L0 bands (compaction held back), each holding puts and deletes of keys all
/// over the key space, then compactions into overlapping L1 bands: full scans, ranged scans,
/// seeks and snapshot scans see exactly the model at every step. Large values make bands of
/// many blocks, so that long scans go past the cached first blocks into read-ahead.
#[test]
fn scans_and_seeks_across_overlapping_bands_match_model() {
    overlapping_bands(700, 48 << 10, 400, 4242);
}

/// The same with values larger than a block (one entry per block): seeks then order most
/// bands by the first keys their indexes record and read a block only when they reach it.
#[test]
fn scans_and_seeks_across_overlapping_bands_of_large_values_match_model() {
    overlapping_bands(6000, 512 << 10, 150, 99);
}

fn overlapping_bands(max_value: u64, memtable: u64, per_round: u64, seed: u64) {
    let disk = tiny_disk(64);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let held = Options {
        memtable_bytes: Some(memtable),
        l0_compaction_trigger: 100,
        l0_slowdown: 100,
        l0_stop: 100,
        ..tiny_opts()
    };
    let mut db = Db::create(dev.clone(), format(Mode::Soc), held.clone()).unwrap();
    let mut model = Model::new();
    let mut rng = Rng(seed);
    let keys = 3000;
    let mut snap: Option<(tegula_smrdb::Snapshot, Model)> = None;
    for round in 0..16u64 {
        for i in 0..per_round {
            let k = key(rng.below(keys));
            if rng.below(4) == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = value(&mut rng, round * 1000 + i, max_value);
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        // Delete a whole run of keys: a seek into it must skip every tombstone.
        let lo = rng.below(keys);
        for k in lo..(lo + 30).min(keys) {
            db.delete(&key(k)).unwrap();
            model.remove(&key(k));
        }
        if round % 2 == 1 {
            db.flush().unwrap();
        }
        if round == 5 {
            snap = Some((db.snapshot(), model.clone()));
        }
        verify(&db, &model, &mut rng, keys);
        seeks(&db, &model, &mut rng, keys, 30);
        let all: Vec<_> = db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(all, want, "round {round}: full scan");
        if let Some((s, m)) = &snap {
            let got: Vec<_> = db
                .scan_at(s, b"", None)
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            let want: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(got, want, "round {round}: snapshot scan");
        }
    }
    let st = db.stats();
    // Random keys: every L0 band spans nearly the whole key space.
    assert!(
        st.bands_per_level[0] >= 6,
        "L0 should hold many bands: {st:?}"
    );
    snap = None;
    drop(snap);
    // Compactions into (overlapping, under SOC) L1 bands, then more writes on top.
    db.close().unwrap();
    db = Db::open(dev.clone(), tiny_opts()).unwrap();
    for i in 0..per_round * 8 {
        let k = key(rng.below(keys));
        if rng.below(5) == 0 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = value(&mut rng, 100_000 + i, max_value);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        if i % 500 == 0 {
            seeks(&db, &model, &mut rng, keys, 20);
        }
    }
    let st = db.stats();
    assert!(st.bands_per_level[1] > 0, "{st:?}");
    verify(&db, &model, &mut rng, keys);
    seeks(&db, &model, &mut rng, keys, 100);
    let all: Vec<_> = db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, want, "after compactions");
    assert!(db.check().unwrap().is_ok());
}
