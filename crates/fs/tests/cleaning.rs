//! ShingledFS's cleaning (§6.2-6.3) through the core API: tail cleaning sets a write
//! pointer back after moving the live data behind the last hole; each placement policy keeps
//! a model's data and the file system consistent across remounts; the free-space triggers
//! fire at their thresholds; and cleaning keeps a drive at 90 % usage writable under a
//! steady overwrite workload.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use tegula_device::ZonedDevice;
use tegula_fs::{
    CleanKind, CleanPolicy, CleanStep, Fs, FsError, FsOptions, Placement, Triggers, Urgency, ROOT,
};

fn opts(placement: Placement, clean: CleanPolicy) -> FsOptions {
    FsOptions {
        placement: Some(placement),
        clean,
        ..small_opts()
    }
}

#[test]
fn tail_cleaning_moves_the_live_tail_and_sets_the_write_pointer_back() {
    let d = disk(8, 1); // 6 sequential zones of 1 MiB
    let o = opts(Placement::LastUsed, CleanPolicy::Tail);
    let mut fs = Fs::mkfs(zoned(&d), o.clone()).unwrap();
    // One zone: keep (head) | junk (a hole once deleted) | tail (live) | rest of zone.
    let keep = fs.create(ROOT, b"keep", 0o644, 0, 0).unwrap().ino;
    let junk = fs.create(ROOT, b"junk", 0o644, 0, 0).unwrap().ino;
    let tail = fs.create(ROOT, b"tail", 0o644, 0, 0).unwrap().ino;
    fs.write(keep, 0, &vec![1u8; 200_000], false).unwrap();
    fs.fsync(keep).unwrap();
    fs.write(junk, 0, &vec![2u8; 300_000], false).unwrap();
    fs.fsync(junk).unwrap();
    fs.write(tail, 0, &vec![3u8; 50_000], false).unwrap();
    fs.fsync(tail).unwrap();
    let zone = fs
        .zone_stats()
        .into_iter()
        .find(|z| z.live > 0)
        .unwrap()
        .zone;
    assert!(fs.zone_stats().iter().filter(|z| z.live > 0).count() == 1);
    // Fill the rest of the zone with another file so that it is no stream's current zone.
    let fill = fs.create(ROOT, b"fill", 0o644, 0, 0).unwrap().ino;
    let wp0 = d.zone(zone).unwrap().write_pointer_lba;
    let room = (d.zone(zone).unwrap().capacity_end_lba() - wp0 - 1) * 4096;
    let mut off = 0;
    while off < room {
        let n = (room - off).min(64 << 10);
        fs.write(fill, off, &vec![4u8; n as usize], false).unwrap();
        off += n;
    }
    fs.fsync(fill).unwrap();
    fs.unlink(ROOT, b"fill").unwrap();
    fs.unlink(ROOT, b"junk").unwrap();
    fs.fsync_dir(ROOT).unwrap();
    if !d.can_rewind() {
        // ZNS has no command to set a write pointer back: no tail is ever offered.
        assert!(
            fs.clean_candidates()
                .iter()
                .all(|c| c.kind != CleanKind::Tail),
            "{:?}",
            fs.clean_candidates()
        );
        return;
    }
    let c = fs
        .clean_candidates()
        .into_iter()
        .find(|c| c.zone == zone && c.kind == CleanKind::Tail)
        .unwrap_or_else(|| panic!("no tail candidate: {:?}", fs.clean_candidates()));
    // The last hole (junk, then fill's dead extents after tail) ... behind it only `tail`
    // is live: L = 50,000 bytes.
    assert!(c.profit() > 1.0, "{c:?}");
    let before = d.zone(zone).unwrap().write_pointer_lba;
    let r = fs.clean().unwrap().unwrap();
    assert_eq!((r.zone, r.kind), (zone, CleanKind::Tail));
    let after = d.zone(zone).unwrap().write_pointer_lba;
    assert!(after < before, "write pointer {before} -> {after}");
    assert_eq!(r.reclaimed, (before - after) * 4096);
    assert_eq!(fs.read(keep, 0, 200_001).unwrap(), vec![1u8; 200_000]);
    assert_eq!(fs.read(tail, 0, 50_001).unwrap(), vec![3u8; 50_000]);
    assert!(fs.check(true).unwrap().problems.is_empty());
    // The zone takes new data again at its new write pointer; all of it survives a crash.
    let more = fs.create(ROOT, b"more", 0o644, 0, 0).unwrap().ino;
    fs.write(more, 0, &vec![5u8; 100_000], false).unwrap();
    fs.fsync(more).unwrap();
    d.power_cut();
    drop(fs);
    d.power_on();
    let mut fs = Fs::open(zoned(&d), o).unwrap();
    assert_eq!(fs.read(keep, 0, 200_001).unwrap(), vec![1u8; 200_000]);
    assert_eq!(fs.read(tail, 0, 50_001).unwrap(), vec![3u8; 50_000]);
    assert_eq!(fs.read(more, 0, 100_001).unwrap(), vec![5u8; 100_000]);
    assert!(fs.check(true).unwrap().problems.is_empty());
}

/// Random creates, overwrites, truncates and deletes under each placement policy and each
/// cleaning policy, against a model, with remounts: data intact, check clean, the drive
/// never full of dead data.
#[test]
fn every_placement_and_cleaning_policy_keeps_the_model() {
    for placement in Placement::ALL {
        for clean in CleanPolicy::ALL {
            let seed = placement as u64 * 10 + clean as u64;
            let d = disk(12, 1);
            let o = opts(placement, clean);
            let mut fs = Fs::mkfs(zoned(&d), o.clone()).unwrap();
            assert_eq!(fs.placement(), placement);
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();
            let (mut cleanings, mut tails) = (0, 0);
            for step in 0..1500 {
                let names: Vec<String> = model.keys().cloned().collect();
                match rng.gen_range(0..10) {
                    0 | 1 if model.len() < 20 => {
                        let n = format!("f{}", rng.gen_range(0..100));
                        if model.contains_key(&n) {
                            continue;
                        }
                        fs.create(ROOT, n.as_bytes(), 0o644, 0, 0).unwrap();
                        model.insert(n, Vec::new());
                    }
                    2..=6 if !names.is_empty() => {
                        let n = &names[rng.gen_range(0..names.len())];
                        let ino = fs.lookup(ROOT, n.as_bytes()).unwrap().ino;
                        let m = model.get_mut(n).unwrap();
                        let off = rng.gen_range(0..=m.len().min(400_000));
                        let len = rng.gen_range(1..120_000);
                        let b: u8 = rng.gen();
                        match fs.write(ino, off as u64, &vec![b; len], false) {
                            Err(FsError::NoSpace(_)) => {
                                // A write that fails for lack of space may have stored part of
                                // its data: every byte in its range is the old or the new one.
                                let size = fs.getattr(ino).unwrap().size as usize;
                                let got = fs.read(ino, 0, size).unwrap();
                                for (i, &g) in got.iter().enumerate() {
                                    let old = m.get(i).copied().unwrap_or(0);
                                    let new = (off..off + len).contains(&i) && g == b;
                                    assert!(g == old || new, "{placement}/{clean}: {n} byte {i}");
                                }
                                *m = got;
                                continue;
                            }
                            r => r.unwrap(),
                        };
                        if m.len() < off + len {
                            m.resize(off + len, 0);
                        }
                        m[off..off + len].fill(b);
                    }
                    7 if !names.is_empty() => {
                        let n = &names[rng.gen_range(0..names.len())];
                        fs.unlink(ROOT, n.as_bytes()).unwrap();
                        model.remove(n);
                    }
                    8 if !names.is_empty() => {
                        let n = &names[rng.gen_range(0..names.len())];
                        let ino = fs.lookup(ROOT, n.as_bytes()).unwrap().ino;
                        match fs.fsync(ino) {
                            Err(FsError::NoSpace(_)) => continue,
                            r => r.unwrap(),
                        }
                    }
                    9 if step % 300 == 299 => {
                        cleanings += fs.meta_stats().cleanings;
                        tails += fs.meta_stats().tail_cleanings;
                        fs.close().unwrap();
                        fs = Fs::open(zoned(&d), o.clone()).unwrap();
                    }
                    _ => {}
                }
            }
            for (n, want) in &model {
                let ino = fs.lookup(ROOT, n.as_bytes()).unwrap().ino;
                assert!(
                    fs.read(ino, 0, want.len() + 1).unwrap() == *want,
                    "{placement}/{clean}: {n}"
                );
            }
            let r = fs.check(true).unwrap();
            assert!(
                r.problems.is_empty(),
                "{placement}/{clean}: {:?}",
                r.problems
            );
            cleanings += fs.meta_stats().cleanings;
            tails += fs.meta_stats().tail_cleanings;
            assert!(cleanings > 0, "{placement}/{clean}: the cleaner never ran");
            if clean == CleanPolicy::Tail && d.can_rewind() {
                // Whole zones only when no zone had room and no tail could be cleaned.
                assert!(tails > 0, "{placement}/{clean}");
            }
            if !d.can_rewind() {
                // A device without "set write pointer" (ZNS) gets whole-zone cleaning only.
                assert_eq!(tails, 0, "{placement}/{clean}");
            }
            if clean == CleanPolicy::Whole {
                assert_eq!(tails, 0, "{placement}/{clean}");
            }
        }
    }
}

#[test]
fn age_fit_keeps_old_and_young_files_in_zones_of_their_own() {
    let d = disk(16, 1);
    let mut fs = Fs::mkfs(zoned(&d), opts(Placement::AgeFit, CleanPolicy::Auto)).unwrap();
    let old = fs.create(ROOT, b"old", 0o644, 0, 0).unwrap().ino;
    // Thousands of files later, `old` is in the oldest age class.
    for i in 0..5000u32 {
        fs.create(ROOT, format!("n{i}").as_bytes(), 0o644, 0, 0)
            .unwrap();
    }
    let young = fs.create(ROOT, b"young", 0o644, 0, 0).unwrap().ino;
    fs.write(old, 0, &vec![1u8; 100_000], false).unwrap();
    fs.write(young, 0, &vec![2u8; 100_000], false).unwrap();
    fs.sync_all().unwrap();
    let zones = |fs: &Fs| {
        fs.zone_stats()
            .into_iter()
            .filter(|z| z.live > 0)
            .map(|z| (z.zone, z.role))
            .collect::<Vec<_>>()
    };
    let z = zones(&fs);
    assert_eq!(z.len(), 2, "{z:?}");
    assert!(
        z.iter().any(|(_, r)| r == "age0") && z.iter().any(|(_, r)| r == "age3"),
        "{z:?}"
    );
}

#[test]
fn free_space_triggers_fire_below_their_thresholds_and_only_with_something_to_clean() {
    let d = disk(12, 1); // 10 sequential zones, 9 usable
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let t = Triggers::default();
    assert_eq!(fs.urgency(&t, 0), Urgency::None);
    let f = fs.create(ROOT, b"f", 0o644, 0, 0).unwrap().ino;
    let mut off = 0u64;
    // Fill to ~75 % of the capacity, then delete half: usable free space below 30 %.
    while fs.usable_free_fraction() > 0.25 {
        fs.write(f, off, &vec![7u8; 60_000], false).unwrap();
        off += 60_000;
        fs.fsync(f).unwrap();
    }
    // Nothing is dead yet: no trigger, however low the space.
    assert_eq!(fs.urgency(&t, u64::MAX), Urgency::None);
    fs.setattr(
        f,
        &tegula_fs::SetAttr {
            size: Some(off / 2),
            ..Default::default()
        },
    )
    .unwrap();
    fs.fsync(f).unwrap();
    assert!(fs.usable_free_fraction() < t.low_free);
    let u = fs.urgency(&t, 0);
    assert!(u == Urgency::Low || u == Urgency::High, "{u:?}");
    // Cleaning step by step raises usable free space above the low threshold.
    let mut steps = 0;
    while fs.urgency(&t, 0) >= Urgency::Low {
        match fs.clean_step(t.step_bytes).unwrap() {
            CleanStep::Nothing => break,
            _ => steps += 1,
        }
        assert!(steps < 1000);
    }
    assert!(steps > 0);
    assert!(
        fs.usable_free_fraction() >= t.low_free,
        "{}",
        fs.usable_free_fraction()
    );
    // The idle trigger fires after `idle_after` without requests.
    let idle = Triggers {
        low_free: 0.0,
        high_free: 0.0,
        ..t
    };
    let f2 = fs.create(ROOT, b"g", 0o644, 0, 0).unwrap().ino;
    fs.write(f2, 0, &vec![1u8; 300_000], false).unwrap();
    fs.fsync(f2).unwrap();
    fs.unlink(ROOT, b"g").unwrap();
    fs.fsync_dir(ROOT).unwrap();
    if fs.clean_victim().is_some() {
        assert_eq!(fs.urgency(&idle, idle.idle_after - 1), Urgency::None);
        assert_eq!(fs.urgency(&idle, idle.idle_after), Urgency::Idle);
    }
    assert!(fs.check(true).unwrap().problems.is_empty());
}

/// A drive kept at 90 % usage by live data, overwritten steadily in random places, with the
/// mount's division of labour: writes only fill buffers, a writer writes them out and, when
/// no zone has room, waits for the cleaner; the cleaner runs at high priority (until usable
/// free space is back above 10 %) and at low priority (one step between writes). No write
/// and no fsync fails for lack of space over five times the drive's capacity of overwrites.
#[test]
fn cleaning_keeps_a_drive_at_ninety_percent_writable_under_steady_overwrites() {
    let d = disk(22, 1); // 20 sequential zones of 1 MiB; 19 usable
    let o = FsOptions {
        buffer_bytes: 256 << 10,
        max_extent: 256 << 10,
        foreground_cleaning: false,
        write_behind: true,
        ..small_opts()
    };
    let mut fs = Fs::mkfs(zoned(&d), o).unwrap();
    let t = Triggers::default();
    let cap = fs.statfs().blocks * fs.statfs().block_size;
    let per = (cap as f64 * 0.9) as u64 / 4;
    let files: Vec<u64> = (0..4)
        .map(|i| {
            fs.create(ROOT, format!("f{i}").as_bytes(), 0o644, 0, 0)
                .unwrap()
                .ino
        })
        .collect();
    let mut rng = SmallRng::seed_from_u64(90);
    let (mut written, mut ops, mut waits) = (0u64, 0u64, 0u64);
    // The writer: write every queued buffer, waiting for the cleaner when there is no room.
    let write_out = |fs: &mut Fs, ino: Option<u64>, waits: &mut u64| {
        let mut queue = fs.take_flush_queue();
        queue.extend(ino);
        for ino in queue {
            let Some(mut job) = fs.take_flush(ino) else {
                continue;
            };
            loop {
                match fs.flush_begin(&job) {
                    Ok(Some(c)) => {
                        let w = c.write(&fs.pool(), &job);
                        fs.flush_end(&mut job, c, w).unwrap();
                    }
                    Ok(None) => break,
                    Err(FsError::NoSpace(e)) => {
                        *waits += 1;
                        assert!(
                            fs.clean_step(t.step_bytes).unwrap() != CleanStep::Nothing,
                            "no room and nothing to clean: {e}"
                        );
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            fs.flush_finish(job).unwrap();
        }
    };
    let cleaner = |fs: &mut Fs| loop {
        match fs.urgency(&t, 0) {
            Urgency::High => {
                if fs.clean_step(t.step_bytes).unwrap() == CleanStep::Nothing {
                    break;
                }
            }
            Urgency::Low => {
                fs.clean_step(t.step_bytes).unwrap();
                break;
            }
            _ => break,
        }
    };
    for &f in &files {
        let mut off = 0;
        while off < per {
            let n = (per - off).min(64 << 10);
            fs.write(f, off, &vec![1u8; n as usize], false).unwrap();
            off += n;
            write_out(&mut fs, None, &mut waits);
            cleaner(&mut fs);
        }
        write_out(&mut fs, Some(f), &mut waits);
        fs.fsync(f).unwrap();
    }
    let live: u64 = fs.zone_stats().iter().map(|z| z.live).sum();
    assert!(live as f64 >= 0.89 * cap as f64, "{live} of {cap}");
    while written < 5 * cap {
        let f = files[rng.gen_range(0..files.len())];
        let len = rng.gen_range(4096..128 << 10);
        let off = rng.gen_range(0..per - len);
        fs.write(f, off, &vec![rng.gen(); len as usize], false)
            .unwrap_or_else(|e| panic!("write {ops} after {written} bytes: {e}"));
        written += len;
        ops += 1;
        write_out(&mut fs, None, &mut waits);
        if ops % 8 == 0 {
            write_out(&mut fs, Some(f), &mut waits);
            fs.fsync(f)
                .unwrap_or_else(|e| panic!("fsync {ops} after {written} bytes: {e}"));
        }
        cleaner(&mut fs);
    }
    let m = fs.meta_stats();
    assert!(m.cleanings > 50, "{m:?}");
    let live: u64 = fs.zone_stats().iter().map(|z| z.live).sum();
    assert!(live as f64 >= 0.89 * cap as f64, "{live} of {cap}");
    assert!(fs.check(false).unwrap().problems.is_empty());
    eprintln!(
        "{} MiB overwritten on a {} MiB drive at 90 %: {} cleanings ({} tail), {} MiB moved, the writer waited for the cleaner {waits} times",
        written >> 20,
        cap >> 20,
        m.cleanings,
        m.tail_cleanings,
        m.moved_bytes >> 20
    );
}
