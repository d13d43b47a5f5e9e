//! The engine on a directory of one file per zone (`tegula_device::ZoneFiles`), where a flush
//! is scoped to zones and a full log band is left unflushed when the engine moves to the next
//! (the device makes nothing durable without a flush of its zone; the manifest records where
//! the band's chunks end): writes, compaction and reopen; crashes at random points after which
//! every synced write survives and the database holds a prefix of the writes; a killed process
//! that loses nothing acknowledged, and a power cut that lost such a band's chunks.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tegula_device::{
    BlockDevice, Completion, DeviceError, DeviceInfo, IoDone, Nanos, Request, WriteFlags, Zone,
    ZoneAction, ZoneFiles, ZoneFilesOptions, ZoneFilter, ZoneTarget, ZonedDevice,
};
use tegula_smrdb::manifest::Manifest;
use tegula_smrdb::superblock::Superblock;
use tegula_smrdb::{Db, Mode, Options, WriteBatch, WriteOptions};

fn files(dir: &Path) -> ZoneFiles {
    let opts = ZoneFilesOptions {
        zone_size: 1 << 20,
        capacity: Some(48 << 20),
        ..ZoneFilesOptions::default()
    };
    ZoneFiles::open(dir, opts).unwrap()
}

#[test]
fn runs_on_zone_files() {
    for mode in [Mode::Soc, Mode::Loc] {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("zones");
        let mut model = BTreeMap::new();
        let mut rng = Rng(5);
        {
            let dev = Arc::new(files(&dir));
            assert!(dev.durable_only_when_flushed());
            let db = Db::create(dev.clone(), format(mode), tiny_opts()).unwrap();
            for i in 0..6000u64 {
                let k = key(rng.below(2000));
                if i % 7 == 0 {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                } else {
                    let v = value(&mut rng, i, 400);
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
            assert!(db.stats().flushes > 0);
            db.compact_all().unwrap();
            db.close().unwrap();
        }
        let db = Db::open(Arc::new(files(&dir)), tiny_opts()).unwrap();
        assert_eq!(db.mode(), mode);
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(got, model, "{mode:?}");
        assert!(db.check().unwrap().is_ok());
        db.close().unwrap();
    }
}

/// A device that fails every command once cut: what the engine sees of a process killed at
/// that moment (its volatile state is gone; the zone files keep what their flushes saved).
struct Cut {
    dev: ZoneFiles,
    cut: AtomicBool,
}

impl Cut {
    fn check(&self) -> tegula_device::Result<()> {
        if self.cut.load(Ordering::Acquire) {
            Err(DeviceError::PowerLoss)
        } else {
            Ok(())
        }
    }
}

impl BlockDevice for Cut {
    fn info(&self) -> DeviceInfo {
        self.dev.info()
    }
    fn read(&self, lba: u64, buf: &mut [u8]) -> tegula_device::Result<IoDone> {
        self.check()?;
        self.dev.read(lba, buf)
    }
    fn write_with(&self, lba: u64, data: &[u8], f: WriteFlags) -> tegula_device::Result<IoDone> {
        self.check()?;
        self.dev.write_with(lba, data, f)
    }
    fn flush(&self) -> tegula_device::Result<IoDone> {
        self.check()?;
        self.dev.flush()
    }
    fn discard(&self, lba: u64, sectors: u64) -> tegula_device::Result<IoDone> {
        self.check()?;
        self.dev.discard(lba, sectors)
    }
    fn submit(&self, reqs: Vec<Request>) -> Vec<tegula_device::Result<Completion>> {
        tegula_device::api::submit_serially(self, reqs)
    }
    fn now(&self) -> Nanos {
        self.dev.now()
    }
    fn idle(&self, d: Nanos) {
        self.dev.idle(d)
    }
}

impl ZonedDevice for Cut {
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        self.dev.report_zones(filter)
    }
    fn zone(&self, index: u32) -> tegula_device::Result<Zone> {
        self.dev.zone(index)
    }
    fn zone_action(&self, a: ZoneAction, t: ZoneTarget) -> tegula_device::Result<IoDone> {
        self.check()?;
        self.dev.zone_action(a, t)
    }
    fn flush_zones(&self, zones: &[u32]) -> tegula_device::Result<IoDone> {
        self.check()?;
        self.dev.flush_zones(zones)
    }
    fn durable_only_when_flushed(&self) -> bool {
        self.dev.durable_only_when_flushed()
    }
    fn host_page_cache(&self) -> bool {
        self.dev.host_page_cache()
    }
}

type Op = (Vec<u8>, Option<Vec<u8>>);

fn apply(m: &mut BTreeMap<Vec<u8>, Vec<u8>>, (k, v): &Op) {
    match v {
        Some(v) => m.insert(k.clone(), v.clone()),
        None => m.remove(k),
    };
}

#[test]
fn crashes_keep_every_synced_write_and_a_prefix_of_the_rest() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("zones");
    let opts = Options {
        // Three log bands per memtable: full bands are left unflushed while their memtable
        // is still open, the case the scoped sync must order.
        memtable_bytes: Some(5 << 19),
        max_log_bands: 8,
        ..tiny_opts()
    };
    drop(Db::create(Arc::new(files(&dir)), format(Mode::Soc), opts.clone()).unwrap());
    let mut durable: BTreeMap<Vec<u8>, Vec<u8>> = {
        let db = Db::open(Arc::new(files(&dir)), opts.clone()).unwrap();
        db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect()
    };
    let mut rng = Rng(11);
    let mut log_bytes = 0;
    for round in 0..10u64 {
        let dev = Arc::new(Cut {
            dev: files(&dir),
            cut: AtomicBool::new(false),
        });
        let db = Db::open(dev.clone(), opts.clone()).unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(got, durable, "round {round}: the reopened state");
        let n = 1000 + rng.below(3000);
        let mut ops: Vec<Op> = Vec::new();
        let mut synced = 0; // ops[..synced] were acknowledged durable
        for i in 0..n {
            // Mostly fresh keys, so that a lost write is not hidden by a later overwrite.
            let k = key(if rng.below(4) == 0 {
                rng.below(400)
            } else {
                rng.below(1_000_000)
            });
            let v = (rng.below(8) != 0).then(|| value(&mut rng, round * 10_000 + i, 400));
            let sync = rng.below(40) == 0;
            let mut b = WriteBatch::new();
            match &v {
                Some(v) => b.put(&k, v),
                None => b.delete(&k),
            }
            db.write(
                b,
                WriteOptions {
                    sync,
                    ..WriteOptions::default()
                },
            )
            .unwrap();
            ops.push((k, v));
            if sync {
                synced = ops.len();
            }
        }
        log_bytes += db.stats().log_bytes;
        dev.cut.store(true, Ordering::Release);
        drop(db);
        drop(dev);
        let db = Db::open(Arc::new(files(&dir)), opts.clone()).unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
        let mut state = durable.clone();
        for op in &ops[..synced] {
            apply(&mut state, op);
        }
        let mut matched = state == got;
        for op in &ops[synced..] {
            if matched {
                break;
            }
            apply(&mut state, op);
            matched = state == got;
        }
        assert!(
            matched,
            "round {round}: the recovered state is no prefix of the writes at or after the \
             last synced one ({synced} of {})",
            ops.len()
        );
        assert!(db.check().unwrap().is_ok(), "round {round}");
        db.close().unwrap();
        durable = got;
    }
    // Several 1 MiB log bands were filled and left for the next one.
    assert!(log_bytes > 4 << 20, "only {log_bytes} bytes of log written");
}

/// The newest manifest copy on `dev` (its two slots follow the superblock at LBA 0).
fn newest_manifest(dev: &dyn ZonedDevice) -> Manifest {
    let ss = dev.info().sector_size as usize;
    let mut s0 = vec![0u8; ss];
    dev.read(0, &mut s0).unwrap();
    let sb = Superblock::decode(&s0).unwrap().unwrap();
    (0..2u64)
        .filter_map(|slot| {
            let mut b = vec![0u8; sb.slot_sectors as usize * ss];
            dev.read(1 + slot * sb.slot_sectors, &mut b).unwrap();
            Manifest::decode(&b).ok()
        })
        .max_by_key(|m| m.generation)
        .unwrap()
}

/// Options under which a memtable spans several 1 MiB log bands.
fn several_log_bands() -> Options {
    Options {
        memtable_bytes: Some(5 << 20),
        max_log_bands: 8,
        ..tiny_opts()
    }
}

/// Opens the database on a device that is then cut (a process killed), after `n` unsynced
/// puts of fresh keys, each acknowledged; returns them in order.
fn write_and_kill(dir: &Path, n: u64) -> Vec<Op> {
    let dev = Arc::new(Cut {
        dev: files(dir),
        cut: AtomicBool::new(false),
    });
    let db = Db::open(dev.clone(), several_log_bands()).unwrap();
    let mut rng = Rng(23);
    let mut ops = Vec::new();
    for i in 0..n {
        let (k, v) = (key(1_000_000 + i), value(&mut rng, i, 400));
        db.put(&k, &v).unwrap();
        ops.push((k, Some(v)));
    }
    assert_eq!(
        db.stats().flushes,
        0,
        "a memtable flush would save the log bands"
    );
    dev.cut.store(true, Ordering::Release);
    drop(db);
    ops
}

/// A new database in `dir` whose process is killed after 14,000 unsynced puts spread over
/// several log bands; returns the puts in order.
fn create_write_and_kill(dir: &Path) -> Vec<Op> {
    Db::create(Arc::new(files(dir)), format(Mode::Soc), several_log_bands())
        .unwrap()
        .close()
        .unwrap();
    write_and_kill(dir, 14000)
}

/// The log bands the newest manifest records as left without a flush whose chunks run past
/// their saved write pointers: (zone, saved write pointer, end), oldest first.
fn unflushed_log_bands(dir: &Path) -> (usize, Vec<(u32, u64, u64)>) {
    let dev = files(dir);
    let m = newest_manifest(&dev);
    let behind = m
        .log_zones
        .iter()
        .filter_map(|z| {
            let end = *m.log_ends.get(z)?;
            let wp = dev.zone(*z).unwrap().written_sectors();
            (wp < end).then_some((*z, wp, end))
        })
        .collect();
    (m.log_zones.len(), behind)
}

/// With the log written through on zone files, a full log band is left without a flush when
/// the engine moves to the next (a flush would write the whole band to the disk, while a
/// band whose memtable reaches a band first is dropped unwritten); the manifest records where
/// its chunks end. A killed process loses none of its acknowledged writes.
#[test]
fn a_killed_process_loses_nothing_from_log_bands_left_unflushed() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("zones");
    let ops = create_write_and_kill(&dir);
    let (logs, behind) = unflushed_log_bands(&dir);
    assert!(logs >= 3, "{logs} log bands");
    assert!(
        behind.len() >= 2,
        "log bands past their saved write pointers: {behind:?}"
    );
    let db = Db::open(Arc::new(files(&dir)), several_log_bands()).unwrap();
    let mut model = BTreeMap::new();
    for op in &ops {
        apply(&mut model, op);
    }
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got.len(), model.len());
    assert!(got == model, "acknowledged writes lost");
    let rep = db.check().unwrap();
    assert!(rep.is_ok() && rep.repaired.is_empty(), "{rep:?}");
    db.close().unwrap();
}

/// A power cut can lose the unflushed chunks of a log band the engine moved on from while a
/// later band's reached the disk: recovery then stops the log at the loss (a prefix of the
/// writes, none of them synced), says so, and never replays the later bands.
#[test]
fn a_power_cut_that_lost_an_unflushed_log_band_stops_the_log_there() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("zones");
    let ops = create_write_and_kill(&dir);
    let (_, behind) = unflushed_log_bands(&dir);
    let &(z, wp, end) = behind.last().expect("a log band left unflushed");
    // The page cache never wrote the band's sectors past its saved write pointer.
    {
        use std::io::{Seek, SeekFrom, Write};
        let ss = files(&dir).info().sector_size as u64;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join(format!("zone-{z:05}")))
            .unwrap();
        f.seek(SeekFrom::Start(wp * ss)).unwrap();
        f.write_all(&vec![0u8; ((end - wp) * ss) as usize]).unwrap();
    }
    let recovered = |db: &Db| -> BTreeMap<Vec<u8>, Vec<u8>> {
        db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect()
    };
    let db = Db::open(Arc::new(files(&dir)), several_log_bands()).unwrap();
    let got = recovered(&db);
    let mut state = BTreeMap::new();
    let mut prefix = None;
    for (i, op) in ops.iter().enumerate() {
        if state == got {
            prefix = Some(i);
            break;
        }
        apply(&mut state, op);
    }
    let k = prefix.expect("the recovered state is no prefix of the writes");
    assert!(
        k > 0 && k < ops.len(),
        "{k} of {} writes recovered",
        ops.len()
    );
    let rep = db.check().unwrap();
    assert!(rep.problems.is_empty(), "{rep:?}");
    assert!(
        rep.repaired
            .iter()
            .any(|r| r.contains(&format!("log band {z}")) && r.contains("not all there")),
        "{rep:?}"
    );
    // Reopened, the same prefix: the later log bands were dropped, not kept for a replay.
    db.close().unwrap();
    let db = Db::open(Arc::new(files(&dir)), several_log_bands()).unwrap();
    assert!(recovered(&db) == got);
    db.close().unwrap();
}
