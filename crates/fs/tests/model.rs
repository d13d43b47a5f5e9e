//! Random operations against an in-memory tree model, with remounts along the way.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use tegula_fs::{Fs, FsError, SetAttr, ROOT};

type Model = BTreeMap<String, Option<Vec<u8>>>;

fn parent_of(p: &str) -> (&str, &str) {
    let i = p.rfind('/').unwrap();
    (&p[..i], &p[i + 1..])
}

fn dirs(m: &Model) -> Vec<String> {
    let mut v: Vec<String> = m
        .iter()
        .filter(|(_, c)| c.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    v.push(String::new());
    v
}

fn files(m: &Model) -> Vec<String> {
    m.iter()
        .filter(|(_, c)| c.is_some())
        .map(|(p, _)| p.clone())
        .collect()
}

fn run(seed: u64, steps: usize) {
    let d = disk(32, 2);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let mut m: Model = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    for step in 0..steps {
        let ds = dirs(&m);
        let fl = files(&m);
        match rng.gen_range(0..100) {
            0..=9 => {
                let dir = &ds[rng.gen_range(0..ds.len())];
                let p = format!("{dir}/f{}", rng.gen_range(0..30));
                if m.contains_key(&p) {
                    continue;
                }
                let parent = resolve(&fs, dir).unwrap();
                fs.create(parent, parent_of(&p).1.as_bytes(), 0o644, 0, 0)
                    .unwrap();
                m.insert(p, Some(Vec::new()));
            }
            10..=13 => {
                let dir = &ds[rng.gen_range(0..ds.len())];
                if dir.matches('/').count() > 3 {
                    continue;
                }
                let p = format!("{dir}/d{}", rng.gen_range(0..5));
                if m.contains_key(&p) {
                    continue;
                }
                let parent = resolve(&fs, dir).unwrap();
                fs.mkdir(parent, parent_of(&p).1.as_bytes(), 0o755, 0, 0)
                    .unwrap();
                m.insert(p, None);
            }
            14..=49 if !fl.is_empty() => {
                let p = &fl[rng.gen_range(0..fl.len())];
                let ino = resolve(&fs, p).unwrap();
                let content = m.get_mut(p).unwrap().as_mut().unwrap();
                let len = if rng.gen_bool(0.1) {
                    rng.gen_range(100_000..400_000)
                } else {
                    rng.gen_range(1..20_000)
                };
                let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                let append = rng.gen_bool(0.4);
                let off = if append {
                    content.len() as u64
                } else {
                    rng.gen_range(0..=content.len() as u64 + 5000)
                };
                let at = fs.write(ino, off, &data, append).unwrap();
                assert_eq!(at, off);
                let end = off as usize + data.len();
                if content.len() < end {
                    content.resize(end, 0);
                }
                content[off as usize..end].copy_from_slice(&data);
            }
            50..=57 if !fl.is_empty() => {
                let p = &fl[rng.gen_range(0..fl.len())];
                let ino = resolve(&fs, p).unwrap();
                let content = m.get_mut(p).unwrap().as_mut().unwrap();
                let size = rng.gen_range(0..=content.len() as u64 + 10_000);
                fs.setattr(
                    ino,
                    &SetAttr {
                        size: Some(size),
                        ..SetAttr::default()
                    },
                )
                .unwrap();
                content.resize(size as usize, 0);
            }
            58..=67 if !fl.is_empty() => {
                let p = fl[rng.gen_range(0..fl.len())].clone();
                let (dir, name) = parent_of(&p);
                let parent = resolve(&fs, dir).unwrap();
                fs.unlink(parent, name.as_bytes()).unwrap();
                m.remove(&p);
            }
            68..=79 if !fl.is_empty() => {
                // Rename a file, possibly over another file.
                let p = fl[rng.gen_range(0..fl.len())].clone();
                let dir = &ds[rng.gen_range(0..ds.len())];
                let q = if rng.gen_bool(0.5) && fl.len() > 1 {
                    fl[rng.gen_range(0..fl.len())].clone()
                } else {
                    format!("{dir}/f{}", rng.gen_range(0..30))
                };
                if m.get(&q).is_some_and(|c| c.is_none()) {
                    continue;
                }
                let (a, an) = parent_of(&p);
                let (b, bn) = parent_of(&q);
                let pa = resolve(&fs, a).unwrap();
                let pb = resolve(&fs, b).unwrap();
                fs.rename(pa, an.as_bytes(), pb, bn.as_bytes(), false)
                    .unwrap();
                let c = m.remove(&p).unwrap();
                m.insert(q, c);
            }
            80..=83 => {
                // Rename a directory (not below itself), or remove an empty one.
                let cands: Vec<String> = ds.iter().filter(|d| !d.is_empty()).cloned().collect();
                if cands.is_empty() {
                    continue;
                }
                let p = cands[rng.gen_range(0..cands.len())].clone();
                let (a, an) = parent_of(&p);
                let pa = resolve(&fs, a).unwrap();
                let empty = !m.keys().any(|k| k.starts_with(&format!("{p}/")));
                if rng.gen_bool(0.5) {
                    let r = fs.rmdir(pa, an.as_bytes());
                    if empty {
                        r.unwrap();
                        m.remove(&p);
                    } else {
                        assert!(matches!(r, Err(FsError::NotEmpty)));
                    }
                } else {
                    let dir = &ds[rng.gen_range(0..ds.len())];
                    let q = format!("{dir}/d{}", rng.gen_range(0..5));
                    let pb = resolve(&fs, dir).unwrap();
                    let bn = parent_of(&q).1;
                    let r = fs.rename(pa, an.as_bytes(), pb, bn.as_bytes(), false);
                    let into_self = q == p || q.starts_with(&format!("{p}/"));
                    let target = m.get(&q).cloned();
                    if q == p {
                        r.unwrap();
                    } else if into_self {
                        assert!(r.is_err(), "{p} -> {q}");
                    } else {
                        match target {
                            Some(Some(_)) => assert!(r.is_err()),
                            Some(None) if m.keys().any(|k| k.starts_with(&format!("{q}/"))) => {
                                assert!(matches!(r, Err(FsError::NotEmpty)))
                            }
                            _ => {
                                r.unwrap();
                                m.remove(&q);
                                let moved: Vec<(String, Option<Vec<u8>>)> = m
                                    .iter()
                                    .filter(|(k, _)| *k == &p || k.starts_with(&format!("{p}/")))
                                    .map(|(k, v)| (k.clone(), v.clone()))
                                    .collect();
                                for (k, v) in moved {
                                    m.remove(&k);
                                    m.insert(format!("{q}{}", &k[p.len()..]), v);
                                }
                            }
                        }
                    }
                }
            }
            84..=89 if !fl.is_empty() => {
                let p = &fl[rng.gen_range(0..fl.len())];
                let ino = resolve(&fs, p).unwrap();
                fs.fsync(ino).unwrap();
            }
            90..=92 => {
                fs.close().unwrap();
                fs = Fs::open(zoned(&d), small_opts()).unwrap();
            }
            93..=99 if !fl.is_empty() => {
                let p = &fl[rng.gen_range(0..fl.len())];
                let ino = resolve(&fs, p).unwrap();
                let want = m[p].as_ref().unwrap();
                let off = rng.gen_range(0..=want.len());
                let n = rng.gen_range(0..50_000);
                let got = fs.read(ino, off as u64, n).unwrap();
                let end = (off + n).min(want.len());
                assert_eq!(got, &want[off..end], "seed {seed} step {step} {p}");
            }
            _ => {}
        }
        if step % 50 == 0 {
            assert_eq!(dump(&mut fs), m, "seed {seed} step {step}");
        }
    }
    assert_eq!(dump(&mut fs), m);
    let r = fs.check(true).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    fs.close().unwrap();
    let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
    assert_eq!(dump(&mut fs), m);
    let r = fs.check(true).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert!(fs.getattr(ROOT).is_ok());
}

#[test]
fn random_operations_match_the_model_across_remounts() {
    for seed in 0..4 {
        run(seed, 600);
    }
}
