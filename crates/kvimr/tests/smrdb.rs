//! SMRDB's LevelDB-style mode (LOC) on the middleware through the zoned adapter: random puts
//! and deletes against a `BTreeMap`, every key read back, across a close and reopen, under
//! each scheme; the level hints reach the store (hot levels on top tracks, deeper levels on
//! bottom tracks under compaction-aware allocation) and the log lives in the safe region.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk};
use tegula_kvimr::{Options, Policy, RmwMode, ZonedAdapter};
use tegula_smrdb::{Db, FormatOptions};

fn value(k: u32, v: u32) -> Vec<u8> {
    let mut b = format!("value {k} {v} ").into_bytes();
    b.resize(200 + (k % 300) as usize, b'x');
    b
}

fn run(
    policy: Policy,
    rmw: RmwMode,
) -> (Arc<Disk>, BTreeMap<Vec<u8>, Vec<u8>>, tegula_kvimr::Stats) {
    run_with(Options {
        policy,
        rmw,
        ..Options::default()
    })
}

fn run_with(o: Options) -> (Arc<Disk>, BTreeMap<Vec<u8>, Vec<u8>>, tegula_kvimr::Stats) {
    let d = disk(config(64, 128 << 10, true));
    let dev: Arc<dyn BlockDevice> = d.clone();
    let a = Arc::new(ZonedAdapter::format(dev, &tracks(&d), zoned_1mib(), o.clone()).unwrap());
    let db = Db::create(a.clone(), FormatOptions::loc(), db_opts()).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(5);
    for i in 0..40_000u32 {
        let k = rng.gen_range(0..6_000u32);
        let key = format!("key{k:08}").into_bytes();
        if rng.gen_range(0..10) == 0 {
            db.delete(&key).unwrap();
            model.remove(&key);
        } else {
            let v = value(k, i);
            db.put(&key, &v).unwrap();
            model.insert(key, v);
        }
    }
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    db.close().unwrap();
    let stats = a.store().stats();
    drop(a);
    // Reopen: adapter (store recovery) and engine.
    let dev: Arc<dyn BlockDevice> = d.clone();
    let a = Arc::new(ZonedAdapter::open(dev, &tracks(&d), o).unwrap());
    let db = Db::open(a.clone(), db_opts()).unwrap();
    for (k, v) in &model {
        assert_eq!(
            db.get(k).unwrap().as_ref(),
            Some(v),
            "{}",
            String::from_utf8_lossy(k)
        );
    }
    assert_eq!(db.get(b"key99999999").unwrap(), None);
    let n = db.scan(b"", None).unwrap().count();
    assert_eq!(n, model.len());
    db.close().unwrap();
    (d, model, stats)
}

#[test]
fn smrdb_loc_runs_on_every_scheme_and_survives_a_reopen() {
    for (policy, rmw) in [
        (Policy::CompactionAware, RmwMode::Merged),
        (Policy::Seq, RmwMode::Naive),
        (Policy::ThreePhase, RmwMode::Naive),
    ] {
        let (_, _, st) = run(policy, rmw);
        assert!(st.files_created > 10, "{policy:?}: {st:?}");
        assert!(st.safe_bytes > 0, "the log went to safe files");
        assert!(st.levels.keys().any(|l| l == "L2"), "{:?}", st.levels);
    }
}

#[test]
fn compaction_aware_puts_level_zero_on_tops_and_deep_levels_on_bottoms() {
    // bottom_share 0: the level split from the first file on (by default every file takes
    // clean bottoms below half usage, which this small run never leaves); the paper's lone
    // bottoms for cold files (cold runs hold their own tops too).
    let (_, _, st) = run_with(Options {
        policy: Policy::CompactionAware,
        rmw: RmwMode::Merged,
        bottom_share: 0.0,
        cold_runs: false,
        ..Options::default()
    });
    let l0 = st.levels["L0"];
    assert!(
        l0.top_bytes > 0 && l0.bottom_bytes * 10 < l0.top_bytes,
        "{l0:?}"
    );
    let l2 = st.levels["L2"];
    assert!(
        l2.bottom_bytes > 0 && l2.top_bytes * 10 < l2.bottom_bytes,
        "{l2:?}"
    );
}
