//! Power-cut tests: a cut is armed at a random media write of a randomized workload; after
//! power-on and recovery every acknowledged synced write is present and the database equals
//! the model after some prefix of the operations that includes all synced ones.
//! `SMRDB_SOAK=1` runs many more cuts.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use smrdb::{Db, Mode, Options, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{Disk, ZonedDevice};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Write(Vec<(Vec<u8>, Option<Vec<u8>>)>, bool),
    Flush,
    Compact,
}

fn workload(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = Rng(seed);
    let mut ops = Vec::new();
    for i in 0..n {
        let r = rng.below(100);
        if r < 2 {
            ops.push(Op::Flush);
        } else if r < 3 {
            ops.push(Op::Compact);
        } else {
            let m = if r < 80 { 1 } else { 1 + rng.below(5) };
            let mut b = Vec::new();
            for _ in 0..m {
                let k = key(rng.below(300));
                if rng.below(5) == 0 {
                    b.push((k, None));
                } else {
                    b.push((k, Some(value(&mut rng, i as u64, 1200))));
                }
            }
            ops.push(Op::Write(b, rng.below(6) == 0));
        }
    }
    ops
}

fn opts(mode: Mode) -> Options {
    Options {
        memtable_bytes: Some(24 << 10),
        log_buffer_bytes: 8 << 10,
        ..tiny_opts(mode)
    }
}

fn apply(db: &Db, op: &Op) -> smrdb::Result<()> {
    match op {
        Op::Write(b, sync) => {
            let mut wb = WriteBatch::new();
            for (k, v) in b {
                match v {
                    Some(v) => wb.put(k, v),
                    None => wb.delete(k),
                }
            }
            db.write(wb, WriteOptions { sync: *sync })
        }
        Op::Flush => db.flush(),
        Op::Compact => db.compact_all(),
    }
}

fn apply_model(m: &mut Model, op: &Op) {
    if let Op::Write(b, _) = op {
        for (k, v) in b {
            match v {
                Some(v) => {
                    m.insert(k.clone(), v.clone());
                }
                None => {
                    m.remove(k);
                }
            }
        }
    }
}

fn media_writes(disk: &Disk) -> u64 {
    disk.stats().media_writes
}

/// Runs the workload with a cut at media write `at` and checks recovery.
fn one_cut(mode: Mode, seed: u64, ops: &[Op], at: u64) -> bool {
    let disk = tiny_disk(32);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let db = Db::open(dev.clone(), opts(mode)).unwrap();
    disk.arm_power_cut(at, seed ^ at);
    let mut done = 0usize; // operations acknowledged
    let mut synced = 0usize; // operations covered by an acknowledged sync
    let mut failed = false;
    for op in ops {
        match apply(&db, op) {
            Ok(()) => {
                done += 1;
                if matches!(op, Op::Write(_, true) | Op::Flush | Op::Compact) {
                    synced = done;
                }
            }
            Err(e) => {
                assert!(
                    e.is_power_loss(),
                    "seed {seed} cut {at}: unexpected error {e}"
                );
                failed = true;
                break;
            }
        }
    }
    if !failed {
        disk.power_cut();
    }
    drop(db);
    disk.power_on();
    let db = Db::open(dev.clone(), opts(mode))
        .unwrap_or_else(|e| panic!("seed {seed} cut {at}: reopen failed: {e}"));
    let got: Model = db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
    // The state must equal the model after some prefix p with synced <= p <= done + 1.
    let mut m = Model::new();
    let mut ok = false;
    for (i, op) in ops.iter().enumerate().take(done + 1) {
        if i >= synced && m == got {
            ok = true;
            break;
        }
        apply_model(&mut m, op);
    }
    if !ok && m == got {
        ok = true;
    }
    assert!(
        ok,
        "seed {seed} cut {at} ({mode:?}): recovered state matches no prefix in {synced}..={}",
        done + 1
    );
    let rep = db.check().unwrap();
    assert!(rep.is_ok(), "seed {seed} cut {at}: {:?}", rep.problems);
    // Still writable.
    db.put(b"after", b"crash").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(b"after").unwrap(), Some(b"crash".to_vec()));
    failed
}

fn cuts(mode: Mode, runs: u64, seed0: u64) {
    let soak = std::env::var("SMRDB_SOAK").is_ok_and(|v| v == "1");
    let runs = if soak { runs * 20 } else { runs };
    let mut rng = Rng(seed0);
    let mut seed = seed0;
    let mut checked = 0;
    let mut hit = 0;
    while checked < runs {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            | 1;
        let ops = workload(seed, 260);
        // Calibrate: how many media writes does the whole workload make?
        let disk = tiny_disk(32);
        let before = media_writes(&disk);
        {
            let db = Db::open(disk.clone(), opts(mode)).unwrap();
            for op in &ops {
                apply(&db, op).unwrap();
            }
            db.close().unwrap();
        }
        let total = media_writes(&disk) - before;
        for _ in 0..8 {
            let at = 1 + rng.below(total.max(1));
            hit += one_cut(mode, seed, &ops, at) as u64;
            checked += 1;
        }
    }
    eprintln!("{mode:?}: {checked} cuts, {hit} during the workload");
    assert!(
        hit * 2 >= checked,
        "most cuts should land inside the workload"
    );
}

#[test]
fn power_cuts_soc() {
    cuts(Mode::Soc, 200, 11);
}

#[test]
fn power_cuts_loc() {
    cuts(Mode::Loc, 96, 23);
}
