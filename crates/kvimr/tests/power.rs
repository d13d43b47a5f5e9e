//! Power cuts at every media write of a file write that needs read-modify-write, naive and
//! merged, under every allocation policy, with the write cache on (thousands of cuts per run).
//! After each cut the store reopens (restoring the backups of an interrupted RMW), every file
//! synced before reads back byte for byte, the new file is absent or whole, the map is
//! consistent, and the store keeps working. A negative test shows that skipping the sync
//! between writing the bottoms and restoring the tops is caught as a media error.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{DeviceError, Disk, MediaErrorCause};
use tegula_kvimr::{Error, NewFile, Options, Policy, RmwMode, Store};

const BOTTOM: u64 = 16;

fn opts(policy: Policy, rmw: RmwMode) -> Options {
    Options {
        policy,
        rmw,
        // Hot files on top tracks from the start, so that the cold file's bottoms have
        // valid neighbours.
        bottom_share: 0.0,
        ..Options::default()
    }
}

/// Sectors of all top tracks of the data region.
fn data_top_sectors(s: &Store) -> u64 {
    let l = s.layout();
    l.data
        .iter()
        .map(|&t| l.track(t))
        .filter(|t| !t.bottom)
        .map(|t| t.sectors as u64)
        .sum()
}

/// The drive after the base state: file 0 (level 0, as many bytes as the data tops hold)
/// written and synced.
fn base(
    policy: Policy,
    rmw: RmwMode,
    staging_tracks: u64,
) -> (Arc<Disk>, Store, BTreeMap<u32, Vec<u8>>) {
    let d = disk(config(BOTTOM, 4096, true));
    let s = format(
        &d,
        small_format(staging_tracks * BOTTOM, 4 << 20),
        opts(policy, rmw),
    );
    let a = content(1, (data_top_sectors(&s) * SS) as usize);
    put(&s, 0, Some(0), &a);
    s.sync().unwrap();
    let mut model = BTreeMap::new();
    model.insert(0, a);
    (d, s, model)
}

fn new_file() -> Vec<u8> {
    content(2, (3 * BOTTOM * SS) as usize)
}

/// The operation the cuts hit: a level-4 file of three bottom tracks' worth, synced.
fn op(s: &Store) -> tegula_kvimr::Result<()> {
    let id = s.create(1, NewFile::Data { level: Some(4) })?;
    s.append(id, &new_file())?;
    s.seal(id)?;
    s.sync()
}

/// Media writes of the operation without a cut, and its statistics.
fn dry_run(policy: Policy, rmw: RmwMode, staging_tracks: u64) -> (u64, tegula_kvimr::Stats) {
    let (d, s, mut model) = base(policy, rmw, staging_tracks);
    let before = d.stats().media_writes;
    op(&s).unwrap();
    model.insert(1, new_file());
    verify(&s, &model);
    (d.stats().media_writes - before, s.stats())
}

#[test]
fn every_cut_inside_naive_and_merged_rmw_loses_nothing() {
    let mut cuts = 0;
    let mut replays = 0;
    for policy in [Policy::CompactionAware, Policy::Seq, Policy::ThreePhase] {
        for (rmw, staging) in [
            (RmwMode::Naive, 1),
            (RmwMode::Merged, 1),
            (RmwMode::Merged, 4),
        ] {
            let (n, st) = dry_run(policy, rmw, staging);
            if policy == Policy::CompactionAware || (policy, rmw) == (Policy::Seq, RmwMode::Naive) {
                assert!(
                    st.rmw_ops > 0,
                    "{policy:?} {rmw:?}: the operation needs no RMW"
                );
            }
            for seed in 0..12 {
                for at in 1..=n {
                    let (d, s, mut model) = base(policy, rmw, staging);
                    d.arm_power_cut(at, seed);
                    let r = op(&s);
                    assert!(
                        r.is_err(),
                        "{policy:?} {rmw:?}: cut at write {at} of {n} missed"
                    );
                    drop(s);
                    d.power_on();
                    let s = reopen(&d, opts(policy, rmw));
                    replays += s.stats().recovered_rmw;
                    // The new file is absent, or created with nothing durable, or whole.
                    if let Some(f) = s.files().into_iter().find(|f| f.name == 1) {
                        let whole = f.len == new_file().len() as u64 && f.sealed;
                        assert!(f.len == 0 || whole, "{policy:?} {rmw:?} cut {at}: {f:?}");
                        model.insert(1, if whole { new_file() } else { Vec::new() });
                    }
                    verify(&s, &model);
                    // And it keeps working.
                    let more = content(3, (BOTTOM * SS) as usize);
                    put(&s, 2, Some(1), &more);
                    s.sync().unwrap();
                    model.insert(2, more);
                    verify(&s, &model);
                    cuts += 1;
                }
            }
        }
    }
    assert!(cuts >= 1000, "only {cuts} cuts");
    assert!(
        replays > 0,
        "no cut hit a read-modify-write between backup and restore"
    );
}

#[test]
fn the_cut_cases_really_need_read_modify_write() {
    let (_, naive) = dry_run(Policy::CompactionAware, RmwMode::Naive, 4);
    let (_, merged) = dry_run(Policy::CompactionAware, RmwMode::Merged, 4);
    let (_, split) = dry_run(Policy::CompactionAware, RmwMode::Merged, 1);
    // Three bottoms next to valid tops: naive does three RMWs, merged one (rewriting a top
    // between two of them once, not twice); with a staging area of about two tracks the
    // merged backup is split into groups.
    assert_eq!(naive.rmw_ops, 3);
    assert_eq!(merged.rmw_ops, 1);
    assert!(split.rmw_ops > 1, "{split:?}");
    assert!(merged.top_rewrites <= naive.top_rewrites);
    assert!(merged.rmw_syncs < naive.rmw_syncs);
}

/// Skipping the sync between "write bottoms" and "restore tops" with the write cache on: the
/// restores reach the cache while the bottoms still wait there, and the elevator destages a
/// restored top before the bottom next to it. The model catches it as a media error.
#[test]
fn skipping_the_sync_before_the_restore_is_caught_as_a_media_error() {
    for skip in [false, true] {
        let d = disk(config(BOTTOM, 2048, true));
        let o = Options {
            unsafe_skip_bottom_sync: skip,
            ..opts(Policy::CompactionAware, RmwMode::Merged)
        };
        let s = format(&d, small_format(4 * BOTTOM, 1 << 20), o);
        let a = content(1, (data_top_sectors(&s) * SS) as usize);
        let hot = put(&s, 0, Some(0), &a);
        s.sync().unwrap();
        let cold = put(&s, 1, Some(4), &new_file());
        s.sync().unwrap();
        assert_eq!(s.stats().rmw_ops, 1);
        assert_eq!(get(&s, cold).unwrap(), new_file());
        match get(&s, hot) {
            Ok(b) => {
                assert!(!skip, "the restored tops survived without the sync");
                assert_eq!(b, a);
            }
            Err(Error::Device(DeviceError::MediaError { cause, .. })) => {
                assert!(skip, "damage with the sync in place");
                assert_eq!(cause, MediaErrorCause::InterlaceDamage);
            }
            Err(e) => panic!("{e}"),
        }
    }
}
