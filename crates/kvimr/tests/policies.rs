//! The allocation policies and read-modify-write schemes against a model: random files of
//! random levels are written, synced and deleted; every file always reads back byte for byte
//! (so no valid top track is ever left damaged), also after reopening; and each policy puts
//! data where it says it does.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use tegula_kvimr::{Options, Policy, RmwMode, Store};

const BOTTOM: u64 = 32;

fn schemes() -> Vec<(Policy, RmwMode)> {
    let mut v = Vec::new();
    for p in [Policy::Seq, Policy::ThreePhase, Policy::CompactionAware] {
        for r in [RmwMode::Naive, RmwMode::Merged] {
            v.push((p, r));
        }
    }
    v
}

fn opts(policy: Policy, rmw: RmwMode) -> Options {
    Options {
        policy,
        rmw,
        ..Options::default()
    }
}

/// A random workload of `steps` operations to about 85% space usage; returns the model.
fn workload(s: &Store, seed: u64, steps: usize, file_max: usize) -> BTreeMap<u32, Vec<u8>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut model: BTreeMap<u32, (u64, Vec<u8>)> = BTreeMap::new();
    let mut next_name = 0u32;
    for step in 0..steps {
        let r = rng.gen_range(0..10);
        if r < 6 && s.usage() < 0.8 {
            let len = rng.gen_range(1..=file_max);
            let level = match rng.gen_range(0..5) {
                0 => None,
                l => Some(l as u8 - 1),
            };
            let data = content(next_name as u64 + seed * 1000, len);
            let id = put(s, next_name, level, &data);
            model.insert(next_name, (id, data));
            next_name += 1;
        } else if r < 9 && !model.is_empty() {
            let k = *model.keys().nth(rng.gen_range(0..model.len())).unwrap();
            let (id, _) = model.remove(&k).unwrap();
            s.delete(id).unwrap();
        } else {
            s.sync().unwrap();
        }
        if step % 25 == 0 {
            let m = model.iter().map(|(k, v)| (*k, v.1.clone())).collect();
            verify(s, &m);
        }
    }
    s.sync().unwrap();
    model.into_iter().map(|(k, v)| (k, v.1)).collect()
}

#[test]
fn every_file_reads_back_under_every_scheme_and_after_reopening() {
    for (policy, rmw) in schemes() {
        for cache in [false, true] {
            let d = disk(config(BOTTOM, 8192, cache));
            let s = format(&d, small_format(BOTTOM, 96 * SS), opts(policy, rmw));
            let model = workload(&s, 7, 150, 96 * SS as usize);
            verify(&s, &model);
            let st = s.stats();
            assert!(
                st.data_bytes_top > 0 && st.data_bytes_bottom > 0,
                "{policy:?}"
            );
            drop(s);
            let s = reopen(&d, opts(policy, rmw));
            verify(&s, &model);
            assert!(
                d.stats().interlace_destroyed_sectors > 0 || policy == Policy::CompactionAware,
                "{policy:?} {rmw:?}: the workload never wrote a bottom next to a top"
            );
        }
    }
}

#[test]
fn the_cmr_twin_needs_no_read_modify_write() {
    let d = disk(config(BOTTOM, 8192, true).cmr_twin());
    let s = format(
        &d,
        small_format(BOTTOM, 96 * SS),
        opts(Policy::Seq, RmwMode::Naive),
    );
    let model = workload(&s, 3, 200, 96 * SS as usize);
    verify(&s, &model);
    assert_eq!(s.stats().rmw_ops, 0);
    assert_eq!(d.stats().interlace_destroyed_sectors, 0);
}

#[test]
fn merged_rmw_needs_fewer_syncs_and_top_rewrites_than_naive() {
    let mut st = Vec::new();
    for rmw in [RmwMode::Naive, RmwMode::Merged] {
        let d = disk(config(BOTTOM, 8192, true));
        let s = format(&d, small_format(BOTTOM, 256 * SS), opts(Policy::Seq, rmw));
        let mut model = BTreeMap::new();
        let mut ids = Vec::new();
        for i in 0..6u32 {
            let data = content(i as u64, 230 * SS as usize);
            ids.push(put(&s, i, Some(2), &data));
            model.insert(i, data);
        }
        s.sync().unwrap();
        for i in (0..6u32).step_by(2) {
            s.delete(ids[i as usize]).unwrap();
            model.remove(&i);
        }
        s.sync().unwrap();
        for i in 6..9u32 {
            let data = content(i as u64, 230 * SS as usize);
            put(&s, i, Some(2), &data);
            model.insert(i, data);
        }
        s.sync().unwrap();
        verify(&s, &model);
        st.push(s.stats());
    }
    let (naive, merged) = (&st[0], &st[1]);
    // Seq gives each file alternating tracks: naive rewrites the file's own tops.
    assert!(
        naive.rmw_ops > 3 * merged.rmw_ops,
        "{merged:?} vs {naive:?}"
    );
    assert!(
        merged.top_rewrites * 3 < naive.top_rewrites,
        "{merged:?} vs {naive:?}"
    );
    assert!(
        merged.rmw_syncs * 2 < naive.rmw_syncs,
        "{merged:?} vs {naive:?}"
    );
    assert!(merged.syncs < naive.syncs);
}

#[test]
fn three_phase_writes_only_bottom_tracks_below_half_usage() {
    let d = disk(config(BOTTOM, 8192, false));
    let s = format(
        &d,
        small_format(BOTTOM, 96 * SS),
        opts(Policy::ThreePhase, RmwMode::Naive),
    );
    let layout = s.layout();
    let mut i = 0;
    while s.usage() < 0.45 {
        put(&s, i, Some(1), &content(i as u64, 40 * SS as usize));
        i += 1;
    }
    for f in s.files() {
        for t in f.tracks {
            assert!(
                layout.track(t).bottom,
                "track {t} of file {} is a top",
                f.name
            );
        }
    }
    assert_eq!(s.stats().rmw_ops, 0);
    assert_eq!(s.stats().data_bytes_top, 0);
}

#[test]
fn seq_takes_tracks_in_physical_order() {
    let d = disk(config(BOTTOM, 8192, false));
    let s = format(
        &d,
        small_format(BOTTOM, 96 * SS),
        opts(Policy::Seq, RmwMode::Naive),
    );
    let a = put(&s, 0, Some(3), &content(0, 80 * SS as usize));
    let b = put(&s, 1, Some(0), &content(1, 80 * SS as usize));
    let layout = s.layout();
    let ta = s.file(a).unwrap().tracks;
    let tb = s.file(b).unwrap().tracks;
    let pos: Vec<u32> = ta
        .iter()
        .chain(&tb)
        .map(|&t| layout.data_pos[t as usize])
        .collect();
    assert!(pos.windows(2).all(|w| w[1] == w[0] + 1), "{pos:?}");
    assert!(
        ta.iter().any(|&t| layout.track(t).bottom) && ta.iter().any(|&t| !layout.track(t).bottom)
    );
}

#[test]
fn compaction_aware_puts_hot_levels_on_tops_and_cold_levels_on_bottoms() {
    // The paper's allocation: cold files on lone clean bottoms.
    let d = disk(config(BOTTOM, 8192, false));
    let o = Options {
        cold_runs: false,
        ..opts(Policy::CompactionAware, RmwMode::Merged)
    };
    let s = format(&d, small_format(BOTTOM, 96 * SS), o);
    let layout = s.layout();
    // Below half usage everything goes to bottoms with free neighbours.
    let mut cold = Vec::new();
    let mut i = 0;
    while s.usage() < 0.5 {
        cold.push(put(&s, i, Some(3), &content(i as u64, 64 * SS as usize)));
        i += 1;
    }
    let early_hot = put(&s, 1000, Some(0), &content(1000, 40 * SS as usize));
    let mut hot = Vec::new();
    for j in 0..4 {
        hot.push(put(
            &s,
            100 + j,
            Some(j as u8 % 2),
            &content(100 + j as u64, 30 * SS as usize),
        ));
    }
    // The bottoms left (about 5% of the data) are kept for a cold file.
    cold.push(put(&s, 200, Some(3), &content(200, 60 * SS as usize)));
    let bottoms = |id| {
        s.file(id)
            .unwrap()
            .tracks
            .iter()
            .filter(|&&t| layout.track(t).bottom)
            .count()
    };
    let all = |id| s.file(id).unwrap().tracks.len();
    assert!(bottoms(early_hot) > 0 || s.usage() >= 0.5);
    for id in cold {
        assert_eq!(bottoms(id), all(id), "cold file {id} on tops");
        // Sequential: consecutive bottoms, one top apart.
        let t = s.file(id).unwrap().tracks;
        let pos: Vec<u32> = t.iter().map(|&t| layout.data_pos[t as usize]).collect();
        assert!(
            pos.windows(2).all(|w| w[1] > w[0] && w[1] - w[0] <= 3),
            "{pos:?}"
        );
    }
    for id in hot {
        assert_eq!(bottoms(id), 0, "hot file {id} on bottoms beyond half usage");
    }
    assert_eq!(s.stats().rmw_ops, 0);
    let l3 = s.stats().levels["L3"];
    assert_eq!(l3.top_bytes, 0);
}

#[test]
fn compaction_aware_cold_files_take_whole_runs_that_free_whole() {
    let d = disk(config(BOTTOM, 8192, false));
    let o = opts(Policy::CompactionAware, RmwMode::Merged);
    let s = format(&d, small_format(BOTTOM, 96 * SS), o);
    let layout = s.layout();
    let is_run = |id: u64| {
        // Consecutive track numbers on one surface, listed bottoms first, then tops.
        let t = s.file(id).unwrap().tracks;
        let mut sorted = t.clone();
        sorted.sort_unstable();
        let contiguous = sorted
            .windows(2)
            .all(|w| w[1] == w[0] + 1 && layout.track(w[0]).neighbours().any(|n| n == w[1]));
        let b = t.iter().filter(|&&x| layout.track(x).bottom).count();
        contiguous && t[..b].iter().all(|&x| layout.track(x).bottom)
    };
    let mut cold = Vec::new();
    let mut i = 0;
    while s.usage() < 0.6 {
        cold.push(put(&s, i, Some(3), &content(i as u64, 64 * SS as usize)));
        i += 1;
    }
    // In a fresh region a file that would start with a bottom next to the previous file's
    // last top goes to the far end of the free run instead (or, when no run is free of
    // victims, below half usage, to lone clean bottoms): most are runs.
    let n_runs = cold.iter().filter(|&&id| is_run(id)).count();
    assert!(
        n_runs * 4 >= cold.len() * 3,
        "{n_runs} of {} cold files are runs",
        cold.len()
    );
    let mut hot = Vec::new();
    for j in 0..4 {
        hot.push(put(
            &s,
            100 + j,
            Some(j as u8 % 2),
            &content(100 + j as u64, 30 * SS as usize),
        ));
    }
    for &id in &hot {
        let f = s.file(id).unwrap();
        assert!(
            f.tracks.iter().all(|&t| !layout.track(t).bottom),
            "hot file {id} on bottoms beyond half usage: {:?}",
            f.tracks
        );
    }
    // Every other cold file dies; the runs they free take new cold files whole, still
    // without damaging anything.
    for id in cold.iter().step_by(2) {
        s.delete(*id).unwrap();
    }
    s.sync().unwrap();
    for j in 0..cold.len() as u32 / 2 {
        let id = put(
            &s,
            500 + j,
            Some(2),
            &content(500 + j as u64, 60 * SS as usize),
        );
        assert!(
            is_run(id),
            "new cold file {j}: {:?}",
            s.file(id).unwrap().tracks
        );
    }
    assert_eq!(s.stats().rmw_ops, 0);
    assert_eq!(s.stats().top_rewrites, 0);
}
