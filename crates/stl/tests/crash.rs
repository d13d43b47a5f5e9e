//! A killed host process (the server stopped by SIGKILL) emulated in process: the drive image
//! is dropped without closing — between commands, or in the middle of a media write with
//! `DmDrive::arm_crash`, which tears the write and then lets the drive persist nothing more —
//! and reopened from its file. Every write acknowledged with the volatile cache off or with FUA,
//! and every write a FLUSH covered, must read back exactly; any other write reads back as one
//! of the values written since, or the old one; never a media error, never garbage. After every
//! reopen the image checks clean (`DmDrive::check`).
//!
//! The real-process version (SIGKILL of `tegula serve nbd`) is
//! `crates/tegula/tests/kill9_nbd.rs`. `TEGULA_SOAK=1` runs ten times as many crashes.

mod common;

use common::crash_model::{pattern, Model};

use common::{soak, tiny_config, SS};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::Path;
use tegula_device::{BlockDevice, DeviceError, WriteFlags};
use tegula_stl::{DmConfig, DmDrive};

/// Reads every block back and settles it in the model; returns how many blocks it read.
fn verify(m: &mut Model, d: &DmDrive, what: &str) -> u64 {
    let mut buf = vec![0u8; 16 * SS];
    let n = m.cands.len() as u64;
    let mut lba = 0;
    while lba < n {
        let k = 16.min(n - lba);
        let b = &mut buf[..k as usize * SS];
        d.read(lba, b)
            .unwrap_or_else(|e| panic!("{what}: read of blocks {lba}..{}: {e}", lba + k));
        for i in 0..k {
            m.settle(lba + i, &b[i as usize * SS..(i as usize + 1) * SS], what);
        }
        lba += k;
    }
    n
}

/// Checks the image and fails on any error finding.
fn check_clean(path: &Path, what: &str) {
    let r = DmDrive::check(path).expect("check");
    assert!(r.is_clean(), "{what}: check found {:?}", r.findings);
}

/// Random writes (some FUA, some several blocks long), FLUSHes every few writes; stops when
/// the drive dies. Returns whether it died.
fn workload(d: &DmDrive, m: &mut Model, rng: &mut SmallRng, ops: usize, cache: bool) -> bool {
    let blocks = m.cands.len() as u64;
    for i in 0..ops {
        if i % 8 == 7 {
            match d.flush() {
                Ok(_) => m.flushed(),
                Err(DeviceError::PowerLoss | DeviceError::Poisoned(_)) => return true,
                Err(e) => panic!("flush: {e}"),
            }
            continue;
        }
        let n = if rng.gen_bool(0.1) {
            rng.gen_range(2..=64u64)
        } else {
            1
        };
        let first = rng.gen_range(0..blocks - n);
        let fua = rng.gen_bool(0.1);
        let versions: Vec<u32> = (0..n).map(|_| m.next_version()).collect();
        let mut data = Vec::with_capacity(n as usize * SS);
        for (k, &v) in versions.iter().enumerate() {
            data.extend_from_slice(&pattern(first + k as u64, v));
        }
        match d.write_with(first, &data, WriteFlags { fua }) {
            Ok(_) => m.written(first, &versions, true, fua || !cache),
            Err(DeviceError::PowerLoss | DeviceError::Poisoned(_)) => {
                m.written(first, &versions, false, false);
                return true;
            }
            Err(e) => panic!("write of {n} blocks at {first}: {e}"),
        }
    }
    false
}

/// Crashes at random media writes (and between commands), each followed by a reopen, a
/// check and a full comparison with the model.
fn crash_cycles(stl: &str, extra: &str, seed: u64, cycles: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("drive.img");
    let cfg = tiny_config("32MiB", stl, extra);
    let cache = cfg.volatile_cache;
    let d = DmDrive::create_image(&path, cfg).expect("create");
    let blocks = 2048usize;
    let mut m = Model::new(blocks);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut d = d;
    let (mut mid_write, mut between) = (0, 0);
    for cycle in 0..cycles {
        let mid = rng.gen_bool(0.7);
        if mid {
            d.arm_crash(rng.gen_range(1..60), seed ^ cycle as u64);
        }
        let ops = rng.gen_range(1..80);
        let died = workload(&d, &mut m, &mut rng, ops, cache);
        if died {
            mid_write += 1;
        } else {
            between += 1;
        }
        // The process is gone: nothing closes the drive.
        drop(d);
        let what = format!("{stl} {extra}: cycle {cycle}");
        check_clean(&path, &what);
        d = DmDrive::open_image(&path, false).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
        verify(&mut m, &d, &what);
    }
    assert!(
        mid_write > 0 && between > 0,
        "{stl}: {mid_write} crashes mid-write, {between} between commands"
    );
    d.close().expect("close");
    check_clean(&path, stl);
    let d = DmDrive::open_image(&path, true).expect("reopen");
    verify(&mut m, &d, &format!("{stl}: after close"));
}

fn cycles(n: usize) -> usize {
    if soak() {
        n * 10
    } else {
        n
    }
}

#[test]
fn journal_crashes_lose_no_acknowledged_write() {
    crash_cycles("journal", "", 11, cycles(40));
}

#[test]
fn journal_with_the_volatile_cache_crashes_lose_no_flushed_write() {
    crash_cycles(
        "journal",
        "volatile_cache = true\nvolatile_cache_size = \"256KiB\"\nbypass_min = \"128KiB\"\n",
        12,
        cycles(40),
    );
}

#[test]
fn set_associative_crashes_lose_no_acknowledged_write() {
    crash_cycles("set-associative", "", 13, cycles(40));
}

#[test]
fn fully_associative_crashes_lose_no_acknowledged_write() {
    crash_cycles("fully-associative", "", 14, cycles(40));
}

/// Issue 11: with the journal and the volatile cache off, a server killed between FLUSHes
/// left acknowledged blocks reading back as "sector destroyed by a shingled write to a
/// preceding track" (the damage map saved at the last FLUSH marked the journal tracks written
/// since as destroyed), and every later write failed. The reported configuration: 256 MiB,
/// journal, data kept; rounds of random 4 KiB writes with a FLUSH every 8 and the last 4 not
/// flushed, then a kill.
#[test]
fn killed_between_flushes_the_journal_keeps_every_acknowledged_block_readable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("k.img");
    let cfg = DmConfig::from_toml(
        "kind = \"dm-smr\"\ncapacity = \"256MiB\"\nstl = \"journal\"\nstore_data = true\n",
    )
    .expect("config");
    let mut d = DmDrive::create_image(&path, cfg).expect("create");
    let cap = d.info().capacity_sectors;
    let mut written: std::collections::BTreeMap<u64, u32> = Default::default();
    let mut rng = SmallRng::seed_from_u64(11);
    let (rounds, writes) = if soak() { (6, 300) } else { (2, 32) };
    let mut version = 0;
    for round in 0..rounds {
        for i in 0..writes {
            let lba = rng.gen_range(0..cap);
            version += 1;
            d.write(lba, &pattern(lba, version)).expect("write");
            written.insert(lba, version);
            if i % 8 == 7 && i < writes - 4 {
                d.flush().expect("flush");
            }
        }
        drop(d);
        d = DmDrive::open_image(&path, false).unwrap_or_else(|e| panic!("round {round}: {e}"));
        for (&lba, &v) in &written {
            let mut b = vec![0u8; SS];
            d.read(lba, &mut b)
                .unwrap_or_else(|e| panic!("round {round}: LBA {lba}: {e}"));
            assert!(b == pattern(lba, v), "round {round}: LBA {lba} differs");
        }
        // Later writes still work (they failed after the defect's kill).
        d.write(0, &pattern(0, 1)).expect("a write after the kill");
        written.insert(0, 1);
    }
}

/// The damage rebuilt from the metadata log (checkpoint damage plus the events of every record
/// since) is exactly the media's own, after random writes, FLUSHes and idle cleaning on every
/// layer: what recovery builds after a crash is what the media would have had.
#[test]
fn the_damage_rebuilt_from_the_log_is_the_media_damage() {
    for (i, stl) in ["journal", "set-associative", "fully-associative"]
        .into_iter()
        .enumerate()
    {
        let d = DmDrive::new(tiny_config("32MiB", stl, "")).expect("drive");
        let mut m = Model::new(2048);
        let mut rng = SmallRng::seed_from_u64(40 + i as u64);
        for round in 0..6 {
            assert!(!workload(&d, &mut m, &mut rng, 60, false));
            d.idle(rng.gen_range(0..3) * tegula_device::SEC);
            // An injected error at the end of the media, outside the blocks the model reads.
            d.with_media(|m| {
                let at = m.capacity() - 8 - round;
                m.inject_media_error(at, 1);
            });
            let before = d.with_media(|m| {
                (
                    m.shingling().destroyed().clone(),
                    m.injected_errors().clone(),
                )
            });
            assert!(
                !before.0.is_empty(),
                "{stl}: no shingling damage to compare"
            );
            assert!(!before.1.is_empty(), "{stl}: no injected error to compare");
            d.power_cut();
            d.power_on().expect("power on");
            let after = d.with_media(|m| {
                (
                    m.shingling().destroyed().clone(),
                    m.injected_errors().clone(),
                )
            });
            assert_eq!(before, after, "{stl}: round {round}");
            verify(&mut m, &d, &format!("{stl}: round {round}"));
        }
    }
}
