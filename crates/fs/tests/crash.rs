//! Power cuts through the device at random points of random file operations: after the
//! remount every file fsynced (and not changed since) is intact and the check is clean.

mod common;

use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use tegula_fs::{Fs, FsError, SetAttr, ROOT};

#[test]
fn fsynced_files_survive_power_cuts_at_random_points() {
    let mut rng = SmallRng::seed_from_u64(7);
    let mut cuts = 0;
    let mut mid_op = 0;
    let mut cleanings = 0;
    // TEGULA_SOAK=1 runs a long soak (thousands of cuts) instead of the quick default.
    let rounds = if std::env::var_os("TEGULA_SOAK").is_some() {
        400
    } else {
        12
    };
    for round in 0..rounds {
        let d = disk(14, 1); // 12 sequential zones of 1 MiB: the cleaner has work
        let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
        // Current contents by name (flat namespace), and what was fsynced since last change.
        let mut cur: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut synced: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for cycle in 0..6u64 {
            d.arm_power_cut(rng.gen_range(1..150), round * 100 + cycle);
            let res: Result<(), FsError> = (|| {
                for _ in 0..400 {
                    let names: Vec<String> = cur.keys().cloned().collect();
                    let pick = |rng: &mut SmallRng| names[rng.gen_range(0..names.len())].clone();
                    match rng.gen_range(0..100) {
                        0..=14 if cur.len() < 12 => {
                            let n = format!("f{}", rng.gen_range(0..40));
                            if cur.contains_key(&n) {
                                continue;
                            }
                            fs.create(ROOT, n.as_bytes(), 0o644, 0, 0)?;
                            cur.insert(n, Vec::new());
                        }
                        15..=54 if !names.is_empty() => {
                            let n = pick(&mut rng);
                            let ino = fs.lookup(ROOT, n.as_bytes())?.ino;
                            let c = cur.get_mut(&n).unwrap();
                            let len = rng.gen_range(1..90_000);
                            let off = rng.gen_range(0..=c.len() as u64);
                            let byte: u8 = rng.gen();
                            match fs.write(ino, off, &vec![byte; len], false) {
                                Err(FsError::NoSpace(_)) => continue,
                                r => r?,
                            };
                            synced.remove(&n);
                            let end = off as usize + len;
                            if c.len() < end {
                                c.resize(end, 0);
                            }
                            c[off as usize..end].fill(byte);
                        }
                        55..=59 if !names.is_empty() => {
                            let n = pick(&mut rng);
                            let ino = fs.lookup(ROOT, n.as_bytes())?.ino;
                            let c = cur.get_mut(&n).unwrap();
                            let size = rng.gen_range(0..=c.len() as u64);
                            fs.setattr(
                                ino,
                                &SetAttr {
                                    size: Some(size),
                                    ..SetAttr::default()
                                },
                            )?;
                            synced.remove(&n);
                            c.truncate(size as usize);
                        }
                        60..=79 if !names.is_empty() => {
                            let n = pick(&mut rng);
                            let ino = fs.lookup(ROOT, n.as_bytes())?.ino;
                            match fs.fsync(ino) {
                                Err(FsError::NoSpace(_)) => continue,
                                r => r?,
                            }
                            synced.insert(n.clone(), cur[&n].clone());
                        }
                        80..=89 if !names.is_empty() => {
                            let n = pick(&mut rng);
                            fs.unlink(ROOT, n.as_bytes())?;
                            synced.remove(&n);
                            cur.remove(&n);
                        }
                        90..=99 if !names.is_empty() => {
                            let a = pick(&mut rng);
                            let b = format!("f{}", rng.gen_range(0..40));
                            fs.rename(ROOT, a.as_bytes(), ROOT, b.as_bytes(), false)?;
                            if a != b {
                                synced.remove(&a);
                                synced.remove(&b);
                                let c = cur.remove(&a).unwrap();
                                cur.insert(b, c);
                            }
                        }
                        _ => {}
                    }
                }
                Ok(())
            })();
            if res.is_ok() {
                d.power_cut();
            } else {
                mid_op += 1;
            }
            cleanings += fs.meta_stats().cleanings;
            cuts += 1;
            drop(fs);
            d.power_on();
            fs = Fs::open(zoned(&d), small_opts())
                .unwrap_or_else(|e| panic!("round {round} cycle {cycle}: {e}"));
            for (n, want) in &synced {
                let a = fs
                    .lookup(ROOT, n.as_bytes())
                    .unwrap_or_else(|e| panic!("round {round} cycle {cycle}: {n}: {e}"));
                let got = fs.read(a.ino, 0, want.len() + 1).unwrap();
                assert!(
                    got == *want,
                    "round {round} cycle {cycle}: {n} differs ({} vs {} bytes)",
                    got.len(),
                    want.len()
                );
            }
            let r = fs.check(true).unwrap();
            assert!(
                r.problems.is_empty(),
                "round {round} cycle {cycle}: {:?}",
                r.problems
            );
            // What survived is the new truth.
            cur = dump(&mut fs)
                .into_iter()
                .map(|(k, v)| (k.trim_start_matches('/').to_string(), v.unwrap_or_default()))
                .collect();
            synced = cur.clone();
        }
    }
    assert!(cuts >= 60);
    assert!(mid_op >= 40, "cuts during an operation: {mid_op}");
    assert!(cleanings > 0, "the cleaner never ran");
    eprintln!("{cuts} power cuts, {mid_op} during an operation, {cleanings} zones cleaned");
}
