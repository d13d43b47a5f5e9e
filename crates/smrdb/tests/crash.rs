//! Power-cut tests: a cut is armed at a random media write of a randomized workload (puts,
//! deletes, batches, synced writes, writes without the log, flushes, full compactions,
//! reopens, scans and snapshot reads checked against a `BTreeMap` while power is on). After
//! power-on and recovery every acknowledged synced write is present and the database equals
//! the model after some prefix of the operations that includes all synced ones.
//!
//! Writes made without the log (`disable_wal`) do not weaken that check: such a write is
//! durable once a flush, a synced write, a full compaction or a close after it completed,
//! which the check counts as making every earlier operation durable; when it is lost, every
//! later write is lost with it, so the state is still the model after a prefix (a state that
//! lacks the unlogged write but holds a logged write made after it fails the check).
//!
//! A quarter of the runs cut power a second time during recovery itself. Thousands of cuts
//! per run; `TEGULA_SOAK=1` runs 20× more, `TEGULA_SOAK=ci` 8× more (the soak `.ci/run` runs:
//! `TEGULA_SOAK=ci cargo test --release -p tegula-smrdb --test crash`).
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{BlockDevice, ZonedDevice};
use tegula_smrdb::{Db, Mode, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    /// A batch, synced (`true, false`), logged (`false, false`) or unlogged (`false, true`).
    Write(Vec<(Vec<u8>, Option<Vec<u8>>)>, bool, bool),
    Flush,
    Compact,
    /// Close (which makes everything durable) and open again.
    Reopen,
    /// Compare a scan of `[lo, hi)` and a GET with the model (power still on).
    Scan(Vec<u8>, Vec<u8>),
    /// Take a snapshot, write this batch over it, and read the snapshot back.
    Snapshot(Vec<(Vec<u8>, Option<Vec<u8>>)>),
}

const KEYS: u64 = 300;

fn workload(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = Rng(seed);
    let mut ops = Vec::new();
    for i in 0..n {
        let r = rng.below(100);
        if r < 2 {
            ops.push(Op::Flush);
        } else if r < 3 {
            ops.push(Op::Compact);
        } else if r < 4 {
            ops.push(Op::Reopen);
        } else if r < 7 {
            let a = key(rng.below(KEYS));
            let b = key(rng.below(KEYS));
            ops.push(Op::Scan(a.clone().min(b.clone()), a.max(b)));
        } else if r < 8 {
            let k = key(rng.below(KEYS));
            ops.push(Op::Snapshot(vec![(
                k,
                Some(value(&mut rng, i as u64, 100)),
            )]));
        } else {
            let m = if r < 80 { 1 } else { 1 + rng.below(5) };
            let mut b = Vec::new();
            for _ in 0..m {
                let k = key(rng.below(KEYS));
                if rng.below(5) == 0 {
                    b.push((k, None));
                } else {
                    b.push((k, Some(value(&mut rng, i as u64, 1200))));
                }
            }
            let sync = rng.below(6) == 0;
            let unlogged = !sync && UNLOGGED.with(|u| u.get()) && rng.below(3) == 0;
            ops.push(Op::Write(b, sync, unlogged));
        }
    }
    ops
}

fn opts() -> Options {
    Options {
        memtable_bytes: Some(24 << 10),
        log_buffer_bytes: 8 << 10,
        background_compaction: BACKGROUND.with(|b| b.get()),
        slowdown_factor: 0.05,
        ..tiny_opts()
    }
}

thread_local! {
    /// Whether this test thread runs flushes and compactions on the background thread.
    static BACKGROUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Whether this test thread's workloads make some writes without the log.
    static UNLOGGED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Applies `op` to the database in `slot` (empty after a failed reopen); `model` is the
/// state before it (for the read checks).
fn apply(
    slot: &mut Option<Db>,
    dev: &Arc<dyn ZonedDevice>,
    mode: Mode,
    op: &Op,
    model: &Model,
) -> tegula_smrdb::Result<()> {
    if let Op::Reopen = op {
        if let Some(old) = slot.take() {
            old.close()?;
        }
        let db = Db::open(dev.clone(), opts())?;
        assert_eq!(db.mode(), mode, "reopened without being told its mode");
        *slot = Some(db);
        return Ok(());
    }
    let db = slot.as_ref().expect("database open");
    match op {
        Op::Reopen => Ok(()),
        Op::Write(b, sync, unlogged) => {
            let mut wb = WriteBatch::new();
            for (k, v) in b {
                match v {
                    Some(v) => wb.put(k, v),
                    None => wb.delete(k),
                }
            }
            let wo = WriteOptions {
                sync: *sync,
                disable_wal: *unlogged,
            };
            db.write(wb, wo)
        }
        Op::Flush => db.flush(),
        Op::Compact => db.compact_all(),
        Op::Scan(lo, hi) => {
            let mut got = Vec::new();
            for kv in db.scan(lo, Some(hi))? {
                got.push(kv?);
            }
            let want: Vec<_> = model
                .range(lo.clone()..hi.clone())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "scan {lo:?}..{hi:?} while power is on");
            assert_eq!(db.get(lo)?, model.get(lo).cloned(), "get {lo:?}");
            Ok(())
        }
        Op::Snapshot(b) => {
            let snap = db.snapshot();
            let mut wb = WriteBatch::new();
            for (k, v) in b {
                match v {
                    Some(v) => wb.put(k, v),
                    None => wb.delete(k),
                }
            }
            db.write(wb, WriteOptions::default())?;
            let k = &b[0].0;
            assert_eq!(db.get_at(&snap, k)?, model.get(k).cloned(), "snapshot get");
            let mut n = 0;
            for kv in db.scan_at(&snap, b"", None)? {
                kv?;
                n += 1;
            }
            assert_eq!(n, model.len(), "snapshot scan");
            Ok(())
        }
    }
}

fn apply_model(m: &mut Model, op: &Op) {
    if let Op::Write(b, ..) | Op::Snapshot(b) = op {
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

fn durable(op: &Op) -> bool {
    matches!(
        op,
        Op::Write(_, true, _) | Op::Flush | Op::Compact | Op::Reopen
    )
}

/// Runs the workload with a cut at media write `at` and checks recovery. Returns whether
/// the cut landed inside the workload.
fn one_cut(mode: Mode, seed: u64, ops: &[Op], at: u64, recovery_cut: bool) -> bool {
    let disk = tiny_disk(32);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let mut db = Some(Db::create(dev.clone(), format(mode), opts()).unwrap());
    disk.arm_power_cut(at, seed ^ at);
    let mut done = 0usize; // operations acknowledged
    let mut synced = 0usize; // operations covered by an acknowledged sync
    let mut failed = false;
    let mut model = Model::new();
    for op in ops {
        match apply(&mut db, &dev, mode, op, &model) {
            Ok(()) => {
                done += 1;
                apply_model(&mut model, op);
                if durable(op) {
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
    if recovery_cut {
        // Cut again somewhere in recovery (log replay, zone resets, the first manifest write).
        disk.arm_power_cut(1 + (seed ^ at) % 6, seed.rotate_left(7) ^ at);
        match Db::open(dev.clone(), opts()) {
            Ok(db) => {
                disk.power_cut();
                drop(db);
            }
            Err(e) => assert!(e.is_power_loss(), "seed {seed} cut {at}: recovery: {e}"),
        }
        disk.power_on();
    }
    let db = Db::open(dev.clone(), opts())
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
        "seed {seed} cut {at} ({mode:?}, recovery cut {recovery_cut}): recovered state matches \
         no prefix in {synced}..={}",
        done + 1
    );
    let case = format!("seed {seed} cut {at} ({mode:?}, recovery cut {recovery_cut})");
    let ok = |r: tegula_smrdb::Result<()>, what: &str| {
        if let Err(e) = r {
            panic!("{case}: {what} after recovery: {e}");
        }
    };
    for (k, v) in got.iter().take(20) {
        assert_eq!(
            db.get(k).unwrap().as_ref(),
            Some(v),
            "{case}: get after recovery"
        );
    }
    let rep = db
        .check()
        .unwrap_or_else(|e| panic!("{case}: check after recovery: {e}"));
    assert!(rep.is_ok(), "{case}: {:?}", rep.problems);
    // Still writable.
    ok(db.put(b"after", b"crash"), "put");
    ok(db.flush(), "flush");
    assert_eq!(db.get(b"after").unwrap(), Some(b"crash".to_vec()), "{case}");
    failed
}

/// How many times the default number of runs: `TEGULA_SOAK=1` (or `SMRDB_SOAK=1`) is the long
/// soak (20×), `TEGULA_SOAK=ci` the soak CI runs (8×).
fn soak_factor() -> u64 {
    let v = ["TEGULA_SOAK", "SMRDB_SOAK"]
        .iter()
        .find_map(|v| std::env::var(v).ok());
    match v.as_deref() {
        Some("1") => 20,
        Some("ci") => 8,
        _ => 1,
    }
}

/// `TEGULA_CRASH_CASE=SEED,CUT,RECOVERY_CUT` (as a failure prints them: `123,45,false`)
/// replays one case of the tests that use the same mode and flags, instead of the runs.
fn one_case() -> Option<(u64, u64, bool)> {
    let v = std::env::var("TEGULA_CRASH_CASE").ok()?;
    let mut it = v.split(',').map(str::trim);
    let seed = it.next()?.parse().ok()?;
    let at = it.next()?.parse().ok()?;
    let rc = it.next().is_some_and(|s| s == "true");
    Some((seed, at, rc))
}

fn cuts(mode: Mode, runs: u64, seed0: u64) {
    if let Some((seed, at, rc)) = one_case() {
        let ops = workload(seed, 200);
        one_cut(mode, seed, &ops, at, rc);
        return;
    }
    let runs = runs * soak_factor();
    let mut rng = Rng(seed0);
    let mut seed = seed0;
    let mut checked = 0;
    let mut hit = 0;
    while checked < runs {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            | 1;
        let ops = workload(seed, 200);
        // Calibrate: how many media writes does the whole workload make?
        let disk = tiny_disk(32);
        let dev: Arc<dyn ZonedDevice> = disk.clone();
        let before = disk.stats().media_writes;
        {
            let mut db = Some(Db::create(dev.clone(), format(mode), opts()).unwrap());
            let mut model = Model::new();
            for op in &ops {
                apply(&mut db, &dev, mode, op, &model).unwrap();
                apply_model(&mut model, op);
            }
            db.take().unwrap().close().unwrap();
        }
        let total = disk.stats().media_writes - before;
        for _ in 0..16 {
            let at = 1 + rng.below(total.max(1));
            let recovery_cut = rng.below(4) == 0;
            hit += one_cut(mode, seed, &ops, at, recovery_cut) as u64;
            checked += 1;
        }
    }
    eprintln!("{mode:?}: {checked} power cuts, {hit} during the workload");
    assert!(
        hit * 2 >= checked,
        "most cuts should land inside the workload"
    );
}

#[test]
fn power_cuts_soc() {
    cuts(Mode::Soc, 1600, 11);
}

#[test]
fn power_cuts_loc() {
    cuts(Mode::Loc, 800, 23);
}

/// The same with flushes and compactions on the background thread (not deterministic: the
/// cut lands wherever the threads happen to be).
#[test]
fn power_cuts_with_background_compaction() {
    BACKGROUND.with(|b| b.set(true));
    cuts(Mode::Soc, 160, 37);
    cuts(Mode::Loc, 80, 41);
}

/// Workloads where a third of the unsynced writes skip the log (`disable_wal`), mixed with
/// logged and synced writes, flushes, compactions and reopens.
#[test]
fn power_cuts_with_unlogged_writes() {
    UNLOGGED.with(|u| u.set(true));
    cuts(Mode::Soc, 800, 53);
    cuts(Mode::Loc, 320, 59);
}

/// Unlogged writes with flushes on the background thread: a memtable holding unlogged writes
/// may be in flight to a band while logged writes go to the next one (the gap marker must then
/// precede them in the new memtable's log).
#[test]
fn power_cuts_with_unlogged_writes_and_background_compaction() {
    UNLOGGED.with(|u| u.set(true));
    BACKGROUND.with(|b| b.set(true));
    cuts(Mode::Soc, 240, 61);
}

fn put_batch(k: &[u8], v: &[u8]) -> WriteBatch {
    let mut b = WriteBatch::new();
    b.put(k, v);
    b
}

const UNLOGGED_WRITE: WriteOptions = WriteOptions {
    sync: false,
    disable_wal: true,
};

/// Writes `a` (synced), `b` (unlogged, or logged when `b_unlogged` is false), then enough
/// logged writes `c…` that their log records reach the media (the drive's cache is flushed
/// by hand, as it may destage at any time), then cuts power and recovers.
fn unlogged_then_logged(b_unlogged: bool) -> Model {
    let disk = tiny_disk(32);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let db = Db::create(dev.clone(), format(Mode::Soc), opts()).unwrap();
    let synced = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    db.write(put_batch(b"a", b"1"), synced).unwrap();
    let wo = if b_unlogged {
        UNLOGGED_WRITE
    } else {
        WriteOptions::default()
    };
    db.write(put_batch(b"b", b"2"), wo).unwrap();
    // Twice the log buffer: at least one log write holds `c` records.
    for i in 0..20u32 {
        db.put(format!("c{i:02}").as_bytes(), &[b'x'; 1000])
            .unwrap();
    }
    disk.flush().unwrap();
    disk.power_cut();
    drop(db);
    disk.power_on();
    let db = Db::open(dev.clone(), opts()).unwrap();
    let got: Model = db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
    assert!(db.check().unwrap().is_ok());
    // Writable, and the discarded records are gone for good (a second recovery agrees).
    db.put(b"d", b"4").unwrap();
    db.close().unwrap();
    let db = Db::open(dev, opts()).unwrap();
    let again: Model = db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
    let mut want = got.clone();
    want.insert(b"d".to_vec(), b"4".to_vec());
    assert_eq!(again, want, "state after the second recovery");
    got
}

/// A lost unlogged write takes the logged writes made after it with it: recovery stops at
/// the log's gap marker, so the state is the prefix before the lost write (without the
/// marker it would hold `a` and the `c…` writes but not `b`: no prefix at all).
#[test]
fn lost_unlogged_write_discards_the_logged_writes_after_it() {
    let got = unlogged_then_logged(true);
    let keys: Vec<&[u8]> = got.keys().map(|k| k.as_slice()).collect();
    assert_eq!(keys, vec![&b"a"[..]]);
    // The control: the same writes all logged survive (the `c…` records reached the media).
    let got = unlogged_then_logged(false);
    assert!(
        got.contains_key(&b"b"[..]) && got.len() > 3,
        "{:?}",
        got.keys()
    );
}

/// A synced write after unlogged ones makes them durable too (by flushing the memtable), a
/// flush and a close make unlogged writes durable, and a synced write cannot skip the log.
#[test]
fn unlogged_writes_are_durable_after_a_sync_flush_or_close() {
    for how in ["sync", "flush", "close"] {
        let disk = tiny_disk(32);
        let dev: Arc<dyn ZonedDevice> = disk.clone();
        let db = Db::create(dev.clone(), format(Mode::Soc), opts()).unwrap();
        for i in 0..30u32 {
            db.write(
                put_batch(format!("u{i:02}").as_bytes(), b"v"),
                UNLOGGED_WRITE,
            )
            .unwrap();
        }
        let synced = WriteOptions {
            sync: true,
            ..WriteOptions::default()
        };
        match how {
            "sync" => db.write(put_batch(b"s", b"v"), synced).unwrap(),
            "flush" => db.flush().unwrap(),
            _ => {
                db.close().unwrap();
                disk.power_cut();
                disk.power_on();
                let db = Db::open(dev.clone(), opts()).unwrap();
                assert_eq!(db.scan(b"", None).unwrap().count(), 30, "{how}");
                continue;
            }
        }
        let both = WriteOptions {
            sync: true,
            disable_wal: true,
        };
        assert!(matches!(
            db.write(put_batch(b"x", b"y"), both),
            Err(tegula_smrdb::Error::InvalidArgument(_))
        ));
        disk.power_cut();
        drop(db);
        disk.power_on();
        let db = Db::open(dev.clone(), opts()).unwrap();
        let n = db.scan(b"", None).unwrap().count();
        assert_eq!(n, if how == "sync" { 31 } else { 30 }, "{how}");
    }
}

/// Regression (soak failure "recovered state matches no prefix"): an unlogged write `u1` and a
/// logged one (gap marker for `u1`) in a memtable that then becomes immutable; the write that
/// switched memtables is unlogged (`u2`), the next one logged (`l2`). The marker before `l2`
/// named `u1`, still pending in the immutable memtable, instead of `u2`; once the background
/// flush had put `u1` in a band, recovery replayed `l2` although `u2` was lost. Recovery must
/// stop before `l2`. (Whether the flush is still running when `l2` is written depends on the
/// background thread; the check holds either way.)
#[test]
fn logged_write_after_a_lost_unlogged_one_in_the_next_memtable_is_not_replayed() {
    for round in 0..20 {
        let disk = tiny_disk(32);
        let dev: Arc<dyn ZonedDevice> = disk.clone();
        let o = Options {
            background_compaction: true,
            ..opts()
        };
        let db = Db::create(dev.clone(), format(Mode::Soc), o.clone()).unwrap();
        db.write(put_batch(b"u1", b"1"), UNLOGGED_WRITE).unwrap();
        db.put(b"l1", b"1").unwrap();
        // Fill the memtable (24 KiB) with logged writes: the next write switches it.
        let mut i = 0u32;
        while db.stats().memtable_bytes < 24 << 10 {
            db.put(format!("f{i:04}").as_bytes(), &[b'f'; 500]).unwrap();
            i += 1;
        }
        db.write(put_batch(b"u2", b"2"), UNLOGGED_WRITE).unwrap();
        db.put(b"l2", b"2").unwrap();
        // The immutable memtable reaches its band; `l2`'s record reaches the media.
        db.wait_for_compactions().unwrap();
        for j in 0..20u32 {
            db.put(format!("l3-{j:02}").as_bytes(), &[b'l'; 1000])
                .unwrap();
        }
        disk.flush().unwrap();
        disk.power_cut();
        drop(db);
        disk.power_on();
        let db = Db::open(dev, o).unwrap();
        let u2_lost = db.get(b"u2").unwrap().is_none();
        if u2_lost {
            assert_eq!(
                db.get(b"l2").unwrap(),
                None,
                "round {round}: l2 replayed although the unlogged write before it was lost"
            );
        }
        assert_eq!(db.get(b"u1").unwrap(), Some(b"1".to_vec()), "round {round}");
    }
}
