//! The engine on a directory of one file per zone (`tegula_device::ZoneFiles`), where a flush
//! is scoped to zones and, with the log buffered in the process, a full log band is left
//! unflushed when the engine moves to the next (the device makes nothing durable without a
//! flush of its zone; written through, the log bands are flushed then): writes, compaction and
//! reopen, and crashes at random points after which every synced write survives and the
//! database holds a prefix of the writes.
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
