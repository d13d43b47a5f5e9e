//! Readers and writers on several threads with background flushes and compactions.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use tegula_smrdb::{Db, Mode, Options, WriteOptions};

fn bg_opts() -> Options {
    Options {
        background_compaction: true,
        slowdown_factor: 0.2,
        ..tiny_opts()
    }
}

fn run(mode: Mode) {
    let disk = tiny_disk(96);
    let db = Arc::new(Db::create(disk, format(mode), bg_opts()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    // Each writer owns a key prefix and writes increasing versions; readers check that a
    // key's version never goes backwards and scans are sorted.
    let mut hs = Vec::new();
    for w in 0..3u64 {
        let db = db.clone();
        hs.push(thread::spawn(move || {
            let mut rng = Rng(w + 1);
            for i in 0..3000u64 {
                let k = format!("w{w}-{:04}", rng.below(500));
                let v = format!("{i:08}-{}", "x".repeat(rng.below(300) as usize));
                if i % 97 == 0 {
                    let mut b = tegula_smrdb::WriteBatch::new();
                    b.put(k.as_bytes(), v.as_bytes());
                    db.write(
                        b,
                        WriteOptions {
                            sync: true,
                            ..WriteOptions::default()
                        },
                    )
                    .unwrap();
                } else {
                    db.put(k.as_bytes(), v.as_bytes()).unwrap();
                }
            }
        }));
    }
    let mut rs = Vec::new();
    for r in 0..2u64 {
        let db = db.clone();
        let stop = stop.clone();
        rs.push(thread::spawn(move || {
            let mut rng = Rng(100 + r);
            let mut seen = std::collections::HashMap::new();
            while !stop.load(Ordering::Relaxed) {
                let k = format!("w{}-{:04}", rng.below(3), rng.below(500));
                if let Some(v) = db.get(k.as_bytes()).unwrap() {
                    let ver: u64 = std::str::from_utf8(&v[..8]).unwrap().parse().unwrap();
                    let prev = seen.insert(k.clone(), ver).unwrap_or(0);
                    assert!(ver >= prev, "{k}: version went back from {prev} to {ver}");
                }
                if rng.below(20) == 0 {
                    let mut last: Option<Vec<u8>> = None;
                    for kv in db.scan(b"w1-", Some(b"w1-0200")).unwrap() {
                        let (k, _) = kv.unwrap();
                        assert!(last.as_ref().is_none_or(|l| *l < k));
                        last = Some(k);
                    }
                }
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for h in rs {
        h.join().unwrap();
    }
    db.wait_for_compactions().unwrap();
    let st = db.stats();
    assert!(st.flushes > 3, "{st:?}");
    assert!(db.check().unwrap().is_ok());
    let n = db.scan(b"", None).unwrap().count();
    assert!(n > 1000 && n <= 1500, "{n} keys");
    Arc::try_unwrap(db).unwrap().close().unwrap();
}

#[test]
fn concurrent_soc() {
    run(Mode::Soc);
}

#[test]
fn concurrent_loc() {
    run(Mode::Loc);
}

/// A writer overwriting random keys while background compactions rewrite several bands each:
/// the memtable that fills meanwhile is flushed beside the running compaction (by the flush
/// thread, or at one of the compaction's band boundaries), not after it, and every key reads
/// back its newest value, before and after a reopen.
fn flush_during_compaction(mode: Mode) {
    let disk = tiny_disk(96);
    let opts = Options {
        flush_during_compaction: true,
        ..bg_opts()
    };
    let db = Db::create(disk.clone(), format(mode), opts.clone()).unwrap();
    let mut rng = Rng(7);
    let mut model = std::collections::HashMap::new();
    for i in 0..60_000u64 {
        let k = key(rng.below(20_000));
        let v = value(&mut rng, i, 300);
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.wait_for_compactions().unwrap();
    let st = db.stats();
    assert!(
        st.flushes_in_compaction + st.flushes_beside_compaction > 0,
        "{st:?}"
    );
    assert!(db.check().unwrap().is_ok());
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()));
    }
    db.close().unwrap();
    let db = Db::open(disk, opts).unwrap();
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()));
    }
    assert_eq!(db.scan(b"", None).unwrap().count(), model.len());
}

#[test]
fn a_waiting_memtable_is_flushed_inside_a_long_compaction_soc() {
    flush_during_compaction(Mode::Soc);
}

#[test]
fn a_waiting_memtable_is_flushed_inside_a_long_compaction_loc() {
    flush_during_compaction(Mode::Loc);
}

/// The default L0 limits (RocksDB's 20 / 36, 12 bands per L0 compaction) and flushes inside
/// compactions on a drive far too small for them: the limits are fitted to the drive when it
/// opens, and overwrites of a third of the drive run without ever running out of bands.
#[test]
fn default_l0_limits_fit_a_small_drive() {
    let disk = tiny_disk(32);
    // The bands of the drive as SMRDB sees it (on ZNS, after the emulated conventional zone).
    let seen = tegula_device::ConvZones::wrap_if_needed(disk.clone()).unwrap();
    let bands = seen
        .report_zones(tegula_device::ZoneFilter::All)
        .iter()
        .filter(|z| z.zone_type.is_sequential())
        .count();
    drop(seen);
    let opts = bg_opts();
    assert!(opts.flush_during_compaction && opts.l0_stop == 36);
    let db = Db::create(disk, format(Mode::Soc), opts).unwrap();
    let o = db.options();
    assert!(o.l0_stop <= bands / 3, "{bands} bands: {o:?}");
    assert!(o.l0_slowdown < o.l0_stop && o.l0_compaction_max_bands <= o.l0_stop);
    let mut rng = Rng(11);
    let mut model = std::collections::HashMap::new();
    for i in 0..120_000u64 {
        let k = key(rng.below(12_000));
        let v = value(&mut rng, i, 300);
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.wait_for_compactions().unwrap();
    assert!(db.check().unwrap().is_ok());
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()));
    }
}
