//! Power cuts through the device at random points of random file operations: after the
//! remount every file's fsynced content is intact (a file extended since keeps its fsynced
//! prefix; the extension may or may not survive) and the check is clean. The second test
//! runs the mount's background work the way its threads do — flush jobs of closed files
//! written chunk by chunk while other operations go on, and cleaning in small steps with
//! whole-zone and tail cleaning — with power cuts in the middle of it.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{Disk, ZoneFilter, ZonedDevice};
use tegula_fs::{CleanPolicy, FlushJob, Fs, FsError, FsOptions, SetAttr, ROOT};

/// What survives a crash of a file fsynced as `prefix`: exactly that (`exact`), or, after
/// an extension or a truncation past it, that prefix followed by anything.
#[derive(Clone)]
struct Synced {
    prefix: Vec<u8>,
    exact: bool,
}

impl Synced {
    fn new(prefix: Vec<u8>) -> Self {
        Synced {
            prefix,
            exact: true,
        }
    }

    fn holds(&self, got: &[u8]) -> bool {
        if self.exact {
            got == self.prefix.as_slice()
        } else {
            got.len() >= self.prefix.len() && got[..self.prefix.len()] == self.prefix[..]
        }
    }
}

/// Updates `synced` for a write of `len` bytes at `off` to `n`: a write that leaves the
/// fsynced prefix alone keeps it (as the minimum to survive), one into it forgets it.
fn wrote(synced: &mut BTreeMap<String, Synced>, n: &str, off: u64, len: usize) {
    if let Some(s) = synced.get_mut(n) {
        if off >= s.prefix.len() as u64 {
            s.exact = false;
        } else {
            synced.remove(n);
        }
    }
    let _ = len;
}

/// Updates `synced` for a truncation of `n` to `size`.
fn truncated(synced: &mut BTreeMap<String, Synced>, n: &str, size: u64) {
    if let Some(s) = synced.get_mut(n) {
        if size >= s.prefix.len() as u64 {
            s.exact = false;
        } else {
            synced.remove(n);
        }
    }
}

/// Writes a random run of one random byte at a random offset of file `n`, updating `cur`
/// and `synced`; `Ok(false)` when the drive had no room for all of it.
fn write_some(
    fs: &mut Fs,
    rng: &mut SmallRng,
    cur: &mut BTreeMap<String, Vec<u8>>,
    synced: &mut BTreeMap<String, Synced>,
    n: &str,
) -> Result<bool, FsError> {
    let ino = fs.lookup(ROOT, n.as_bytes())?.ino;
    let c = cur.get_mut(n).unwrap();
    let len = rng.gen_range(1..90_000);
    let off = rng.gen_range(0..=c.len() as u64);
    let byte: u8 = rng.gen();
    match fs.write(ino, off, &vec![byte; len], false) {
        Err(FsError::NoSpace(_)) => {
            // Part of the data may be stored: take the file as it is.
            wrote(synced, n, off, len);
            let size = fs.getattr(ino)?.size as usize;
            *c = fs.read(ino, 0, size)?;
            return Ok(false);
        }
        r => r?,
    };
    wrote(synced, n, off, len);
    let end = off as usize + len;
    if c.len() < end {
        c.resize(end, 0);
    }
    c[off as usize..end].fill(byte);
    Ok(true)
}

/// Truncates file `n` to a random size no larger than it is, updating `cur` and `synced`.
fn truncate_some(
    fs: &mut Fs,
    rng: &mut SmallRng,
    cur: &mut BTreeMap<String, Vec<u8>>,
    synced: &mut BTreeMap<String, Synced>,
    n: &str,
) -> Result<(), FsError> {
    let ino = fs.lookup(ROOT, n.as_bytes())?.ino;
    let c = cur.get_mut(n).unwrap();
    let size = rng.gen_range(0..=c.len() as u64);
    fs.setattr(
        ino,
        &SetAttr {
            size: Some(size),
            ..SetAttr::default()
        },
    )?;
    truncated(synced, n, size);
    c.truncate(size as usize);
    Ok(())
}

/// Opens the file system on `d` after a power cut (`at` names the moment in messages),
/// asserts that every file holds what `synced` says survives and that the check is clean.
fn remount_and_check(
    d: &Arc<Disk>,
    opts: FsOptions,
    synced: &BTreeMap<String, Synced>,
    at: &str,
) -> Fs {
    let mut fs = Fs::open(zoned(d), opts).unwrap_or_else(|e| panic!("{at}: {e}"));
    for (n, want) in synced {
        let a = fs
            .lookup(ROOT, n.as_bytes())
            .unwrap_or_else(|e| panic!("{at}: {n}: {e}"));
        let got = fs.read(a.ino, 0, a.size as usize + 1).unwrap();
        assert!(
            want.holds(&got),
            "{at}: {n} differs ({} bytes, fsynced {}, exact {})",
            got.len(),
            want.prefix.len(),
            want.exact
        );
    }
    let r = fs.check(true).unwrap();
    assert!(r.problems.is_empty(), "{at}: {:?}", r.problems);
    fs
}

/// The contents of every file, by name (flat namespace).
fn contents(fs: &mut Fs) -> BTreeMap<String, Vec<u8>> {
    dump(fs)
        .into_iter()
        .map(|(k, v)| (k.trim_start_matches('/').to_string(), v.unwrap_or_default()))
        .collect()
}

/// Every file as fsynced with its current contents.
fn all_synced(cur: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Synced> {
    cur.iter()
        .map(|(k, v)| (k.clone(), Synced::new(v.clone())))
        .collect()
}

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
        let mut synced: BTreeMap<String, Synced> = BTreeMap::new();
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
                            if !write_some(&mut fs, &mut rng, &mut cur, &mut synced, &n)? {
                                continue;
                            }
                        }
                        55..=59 if !names.is_empty() => {
                            let n = pick(&mut rng);
                            truncate_some(&mut fs, &mut rng, &mut cur, &mut synced, &n)?;
                        }
                        60..=79 if !names.is_empty() => {
                            let n = pick(&mut rng);
                            let ino = fs.lookup(ROOT, n.as_bytes())?.ino;
                            match fs.fsync(ino) {
                                Err(FsError::NoSpace(_)) => continue,
                                r => r?,
                            }
                            synced.insert(n.clone(), Synced::new(cur[&n].clone()));
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
            let at = format!("round {round} cycle {cycle}");
            fs = remount_and_check(&d, small_opts(), &synced, &at);
            // What survived is the new truth.
            cur = contents(&mut fs);
            synced = all_synced(&cur);
        }
    }
    assert!(cuts >= 60);
    assert!(mid_op >= 40, "cuts during an operation: {mid_op}");
    assert!(cleanings > 0, "the cleaner never ran");
    eprintln!("{cuts} power cuts, {mid_op} during an operation, {cleanings} zones cleaned");
}

/// The mount's writer thread as a queue of flush jobs advanced one chunk at a time between
/// other operations.
#[derive(Default)]
struct Writer {
    jobs: std::collections::VecDeque<FlushJob>,
}

impl Writer {
    /// Takes the buffers the file system queued.
    fn take_queued(&mut self, fs: &mut Fs) {
        for ino in fs.take_flush_queue() {
            // One job per file at a time, as the writer thread runs them in order.
            if self.jobs.iter().any(|j| j.ino == ino) {
                continue;
            }
            if let Some(j) = fs.take_flush(ino) {
                self.jobs.push_back(j);
            }
        }
    }

    /// Writes one chunk of the oldest job (finishing it when done).
    fn step(&mut self, fs: &mut Fs) -> Result<(), FsError> {
        let Some(mut job) = self.jobs.pop_front() else {
            return Ok(());
        };
        let res = match fs.flush_begin(&job) {
            Ok(Some(t)) => {
                let w = t.write(&fs.pool(), &job);
                fs.flush_end(&mut job, t, w)
            }
            Ok(None) => return fs.flush_finish(job),
            Err(e) => Err(e),
        };
        match res {
            Ok(()) => {
                self.jobs.push_front(job);
                Ok(())
            }
            Err(e) => {
                fs.flush_finish(job)?;
                Err(e)
            }
        }
    }

    /// Finishes every job of `ino`, then writes what it has buffered (an fsync).
    fn sync(&mut self, fs: &mut Fs, ino: u64) -> Result<(), FsError> {
        while let Some(i) = self.jobs.iter().position(|j| j.ino == ino) {
            let job = self.jobs.remove(i).expect("position is in range");
            run_job(fs, job)?;
        }
        if let Some(job) = fs.take_flush(ino) {
            run_job(fs, job)?;
        }
        fs.fsync(ino)
    }
}

/// Writes a flush job to its end and finishes it.
fn run_job(fs: &mut Fs, mut job: FlushJob) -> Result<(), FsError> {
    let mut r: Result<(), FsError> = Ok(());
    loop {
        match fs.flush_begin(&job) {
            Ok(Some(t)) => {
                let w = t.write(&fs.pool(), &job);
                if let Err(e) = fs.flush_end(&mut job, t, w) {
                    r = Err(e);
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                r = Err(e);
                break;
            }
        }
    }
    fs.flush_finish(job)?;
    r
}

#[test]
fn fsynced_files_survive_power_cuts_during_flush_jobs_and_background_cleaning() {
    let mut rng = SmallRng::seed_from_u64(11);
    let rounds = if std::env::var_os("TEGULA_SOAK").is_some() {
        300
    } else {
        8
    };
    let (mut cuts, mut tails, mut wholes) = (0, 0u64, 0u64);
    for round in 0..rounds {
        let clean = [CleanPolicy::Tail, CleanPolicy::Auto, CleanPolicy::Whole][round % 3];
        let opts = FsOptions {
            write_behind: true,
            clean,
            ..small_opts()
        };
        let d = disk(14, 1);
        let mut fs = Fs::mkfs(zoned(&d), opts.clone()).unwrap();
        let mut cur: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut synced: BTreeMap<String, Synced> = BTreeMap::new();
        for cycle in 0..6u64 {
            d.arm_power_cut(rng.gen_range(1..200), round as u64 * 100 + cycle);
            let mut w = Writer::default();
            let res: Result<(), FsError> = (|| {
                for _ in 0..400 {
                    let names: Vec<String> = cur.keys().cloned().collect();
                    let pick = |rng: &mut SmallRng| names[rng.gen_range(0..names.len())].clone();
                    match rng.gen_range(0..100) {
                        0..=9 if cur.len() < 10 => {
                            let n = format!("f{}", rng.gen_range(0..30));
                            if cur.contains_key(&n) {
                                continue;
                            }
                            let ino = fs.create(ROOT, n.as_bytes(), 0o644, 0, 0)?.ino;
                            fs.open_file(ino)?;
                            cur.insert(n, Vec::new());
                        }
                        10..=44 if !names.is_empty() => {
                            let n = pick(&mut rng);
                            if !write_some(&mut fs, &mut rng, &mut cur, &mut synced, &n)? {
                                continue;
                            }
                        }
                        45..=49 if !names.is_empty() => {
                            // A close and a reopen: the buffer goes to the writer.
                            let n = pick(&mut rng);
                            let ino = fs.lookup(ROOT, n.as_bytes())?.ino;
                            fs.release(ino)?;
                            fs.open_file(ino)?;
                        }
                        50..=54 if !names.is_empty() => {
                            let n = pick(&mut rng);
                            truncate_some(&mut fs, &mut rng, &mut cur, &mut synced, &n)?;
                        }
                        55..=64 if !names.is_empty() => {
                            let n = pick(&mut rng);
                            let ino = fs.lookup(ROOT, n.as_bytes())?.ino;
                            match w.sync(&mut fs, ino) {
                                Err(FsError::NoSpace(_)) => continue,
                                r => r?,
                            }
                            synced.insert(n.clone(), Synced::new(cur[&n].clone()));
                        }
                        65..=69 if !names.is_empty() => {
                            let n = pick(&mut rng);
                            let ino = fs.lookup(ROOT, n.as_bytes())?.ino;
                            fs.unlink(ROOT, n.as_bytes())?;
                            fs.release(ino)?;
                            synced.remove(&n);
                            cur.remove(&n);
                        }
                        70..=84 => match fs.clean_step(rng.gen_range(1..200_000)) {
                            Err(FsError::NoSpace(_)) => {}
                            r => {
                                if let tegula_fs::CleanStep::Done(r) = r? {
                                    match r.kind {
                                        tegula_fs::CleanKind::Tail => tails += 1,
                                        tegula_fs::CleanKind::Whole => wholes += 1,
                                    }
                                }
                            }
                        },
                        _ => {}
                    }
                    w.take_queued(&mut fs);
                    if rng.gen_bool(0.5) {
                        match w.step(&mut fs) {
                            Err(FsError::NoSpace(_)) => {
                                // The writer waits for the cleaner, as the mount's does.
                                let _ = fs.clean_step(u64::MAX);
                            }
                            r => r?,
                        }
                    }
                }
                Ok(())
            })();
            if res.is_ok() {
                d.power_cut();
            }
            cuts += 1;
            drop(w);
            drop(fs);
            d.power_on();
            let at = format!("round {round} cycle {cycle}");
            fs = remount_and_check(&d, opts.clone(), &synced, &at);
            cur = contents(&mut fs);
            for n in cur.keys() {
                let ino = fs.lookup(ROOT, n.as_bytes()).unwrap().ino;
                fs.open_file(ino).unwrap();
            }
            synced = all_synced(&cur);
        }
    }
    eprintln!("{cuts} power cuts; {tails} tail and {wholes} whole-zone cleanings finished");
    // ZNS (no "set write pointer") cleans whole zones only.
    let tails_possible = !common::zns();
    assert!(
        (tails > 0) == tails_possible && wholes > 0,
        "tail {tails}, whole {wholes}"
    );
}

/// A commit is one log record and one flush, so a power cut inside that flush can leave the
/// record on the media without the data it maps (the drive destages in its own order). Such
/// a record was never acknowledged: the mount drops it, the file reads as last fsynced, and
/// the next commit takes the record's place. First the state a drive that destaged the log
/// first leaves, then the emulator's own destage order cut at each media write of a commit.
#[test]
fn a_record_whose_data_never_reached_the_media_is_dropped_not_replayed() {
    let first: Vec<u8> = (0..64 << 10).map(|i| (i % 251) as u8).collect();
    let more = vec![0x5au8; 192 << 10];
    let mut both = first.clone();
    both.extend_from_slice(&more);
    let check_again = |d: &Arc<Disk>, fs: &mut Fs, a: u64, at: &str| {
        let r = fs.check(true).unwrap();
        assert!(r.problems.is_empty(), "{at}: {:?}", r.problems);
        // The next commit takes the dropped record's place, and the file system mounts again.
        fs.write(a, 0, b"again", false).unwrap();
        fs.fsync(a).unwrap();
        let fs = Fs::open(zoned(d), small_opts()).unwrap_or_else(|e| panic!("{at}: {e}"));
        assert_eq!(&fs.read(a, 0, 5).unwrap(), b"again", "{at}");
        assert!(!fs.meta_stats().dropped_unacknowledged, "{at}");
        fs.close().unwrap();
    };

    // The state a power cut leaves when the drive destaged the log record and not the data:
    // the record on the media, the data zones' write pointers where they were before the
    // commit's extents (a drive's write pointer rolls back to the first sector it lost).
    let mut cfg = hm_smr(256, 16, 2);
    cfg.zones.set_write_pointer = true;
    let d = Arc::new(Disk::in_memory(cfg).unwrap());
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let a = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
    fs.write(a, 0, &first, false).unwrap();
    fs.fsync(a).unwrap();
    let wps = |d: &Arc<Disk>| -> Vec<(u32, u64)> {
        seen(d)
            .report_zones(ZoneFilter::All)
            .iter()
            .map(|z| (z.index, z.write_pointer_lba))
            .collect()
    };
    let before = wps(&d);
    fs.write(a, first.len() as u64, &more, false).unwrap();
    fs.fsync(a).unwrap();
    drop(fs);
    let mut lost = 0;
    for ((zone, was), (_, now)) in before.iter().zip(wps(&d)) {
        if now > *was && seen(&d).zone(*zone).unwrap().zone_type.is_sequential() {
            seen(&d).rewind_write_pointer(*zone, *was).unwrap();
            lost += 1;
        }
    }
    assert!(lost > 0, "the commit wrote no extent");
    d.power_cut();
    d.power_on();
    let mut fs = Fs::open(zoned(&d), small_opts()).unwrap();
    assert!(
        fs.meta_stats().dropped_unacknowledged,
        "the record's data is not on the media"
    );
    assert_eq!(fs.read(a, 0, 1 << 20).unwrap(), first);
    check_again(&d, &mut fs, a, "log written first");

    let mut completed = 0;
    for cut in 1..=8u64 {
        let d = disk(16, 16);
        let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
        let a = fs.create(ROOT, b"a", 0o644, 0, 0).unwrap().ino;
        fs.write(a, 0, &first, false).unwrap();
        fs.fsync(a).unwrap();
        fs.write(a, first.len() as u64, &more, false).unwrap();
        d.arm_power_cut(cut, cut);
        let acked = fs.fsync(a).is_ok();
        d.power_cut();
        drop(fs);
        d.power_on();
        let at = format!("cut at media write {cut}");
        let mut fs = Fs::open(zoned(&d), small_opts()).unwrap_or_else(|e| panic!("{at}: {e}"));
        let got = fs.read(a, 0, 1 << 20).unwrap();
        if acked {
            completed += 1;
            assert_eq!(got, both, "{at}: the acknowledged fsync was lost");
        } else {
            assert!(got == first || got == both, "{at}: {} bytes", got.len());
        }
        if fs.meta_stats().dropped_unacknowledged {
            assert_eq!(got, first, "{at}: the dropped record's data is visible");
        }
        check_again(&d, &mut fs, a, &at);
    }
    assert!(completed > 0, "no cut came after the commit's flush");
}
