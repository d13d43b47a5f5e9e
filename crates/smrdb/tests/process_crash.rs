//! A crash of the process, not of the machine: every write the device took is kept, what the
//! engine held in memory is gone. With `Options::log_write_through` (asked for here: on the
//! in-memory emulated drive the default is off, since a crash of the process takes the drive
//! with it; `kill9.rs` runs the default on files) nothing acknowledged is lost, the records
//! short of a log band chunk coming back from the log tail slots; with it off, up to the log
//! buffer is lost. Checked against a model across repeated
//! crashes, in both organisations.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{Disk, ZonedDevice};
use tegula_smrdb::{Db, Mode, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Ends the engine as a `kill -9` would: no close, no flush, its memory dropped (the device
/// keeps every write it took).
fn crash(db: Db) {
    std::mem::forget(db);
}

/// A buffer far larger than any test writes, so that only the hand-over can save a record.
fn opts(write_through: bool) -> Options {
    Options {
        log_buffer_bytes: 1 << 20,
        log_write_through: Some(write_through),
        ..tiny_opts()
    }
}

fn open_or_create(disk: &Arc<Disk>, mode: Mode, o: &Options, first: bool) -> Db {
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    if first {
        Db::create(dev, format(mode), o.clone()).unwrap()
    } else {
        Db::open(dev, o.clone()).unwrap()
    }
}

/// Writes `n` random operations (puts of 1 B to 9 KiB, deletes, batches, now and then a synced
/// write), each recorded in the model once acknowledged.
fn write_some(db: &Db, model: &mut Model, rng: &mut Rng, n: u64, keys: u64) {
    for i in 0..n {
        let k = key(rng.below(keys));
        match rng.below(10) {
            0 => {
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            1 => {
                let mut b = WriteBatch::default();
                let k2 = key(rng.below(keys));
                let v = value(rng, i, 300);
                b.put(&k, &v);
                b.delete(&k2);
                let sync = rng.below(4) == 0;
                db.write(
                    b,
                    WriteOptions {
                        sync,
                        ..WriteOptions::default()
                    },
                )
                .unwrap();
                // The batch's operations apply in order: a delete of the same key wins.
                model.insert(k, v);
                model.remove(&k2);
            }
            2 => {
                let v = value(rng, i, 9000);
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            _ => {
                let v = value(rng, i, 120);
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
    }
}

fn lost(db: &Db, model: &Model, keys: u64) -> Vec<String> {
    let mut lost = Vec::new();
    for i in 0..keys {
        let k = key(i);
        let got = db.get(&k).unwrap();
        if got != model.get(&k).cloned() {
            lost.push(format!(
                "{} (read {:?} bytes, wrote {:?})",
                String::from_utf8_lossy(&k),
                got.map(|v| v.len()),
                model.get(&k).map(Vec::len)
            ));
        }
    }
    lost
}

#[test]
fn a_process_crash_loses_no_acknowledged_write() {
    for mode in [Mode::Soc, Mode::Loc] {
        let disk = tiny_disk(64);
        let o = opts(true);
        let (mut model, mut rng, keys) = (Model::new(), Rng(0x5eed + mode as u64), 400);
        for round in 0..8 {
            let db = open_or_create(&disk, mode, &o, round == 0);
            let l = lost(&db, &model, keys);
            assert!(l.is_empty(), "{mode:?} round {round}: lost {l:?}");
            // From a few writes (all in a tail slot) to enough for chunks and flushes.
            write_some(&db, &mut model, &mut rng, [3, 40, 700][round % 3], keys);
            let l = lost(&db, &model, keys);
            assert!(
                l.is_empty(),
                "{mode:?} round {round}, before the crash: {l:?}"
            );
            crash(db);
        }
        let db = open_or_create(&disk, mode, &o, false);
        let l = lost(&db, &model, keys);
        assert!(l.is_empty(), "{mode:?} after the last crash: lost {l:?}");
        assert!(db.check().unwrap().repaired.is_empty());
        assert!(db.stats().log_tail_bytes > 0 || db.stats().puts == 0);
        db.close().unwrap();
    }
}

/// The test above can fail: with the records kept in the process, the crash loses them.
#[test]
fn with_the_log_buffered_in_the_process_a_crash_loses_writes() {
    let disk = tiny_disk(64);
    let o = opts(false);
    let (mut model, mut rng, keys) = (Model::new(), Rng(7), 200);
    let db = open_or_create(&disk, Mode::Soc, &o, true);
    for i in 0..50 {
        let v = value(&mut rng, i, 100);
        db.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    crash(db);
    let db = open_or_create(&disk, Mode::Soc, &o, false);
    assert_eq!(lost(&db, &model, keys).len(), 50);
    db.close().unwrap();
}

/// The LBAs of the two log tail slots on the device as SMRDB sees it: the two sectors before
/// superblock copy B, the conventional area's last sector (slot `g mod 2` holds generation `g`).
fn tail_slot_lbas(dev: &dyn ZonedDevice) -> [u64; 2] {
    let info = dev.info();
    let last = info.conventional_zones as u64 * info.zone_sectors - 1;
    [last - 2, last - 1]
}

/// A damaged newest tail slot is reported by `Db::check` and not used; the records it alone
/// held are lost (it was never synced), those of the older slot for the same place are kept.
#[test]
fn a_damaged_tail_slot_is_reported_and_passed_over() {
    let disk = tiny_disk(64);
    let o = opts(true);
    let db = open_or_create(&disk, Mode::Soc, &o, true);
    // A synced write puts a chunk in the log band; the next three go to the tail slots only.
    db.write(
        {
            let mut b = WriteBatch::default();
            b.put(b"synced", b"1");
            b
        },
        WriteOptions {
            sync: true,
            ..WriteOptions::default()
        },
    )
    .unwrap();
    for k in [&b"a"[..], b"b", b"c"] {
        db.put(k, b"value").unwrap();
    }
    crash(db);
    // The slots sit before superblock copy B, the conventional area's last sector; the third
    // put's slot is generation 3, at the second of the two.
    let dev = seen(disk.clone());
    let info = dev.info();
    let newest = tail_slot_lbas(dev.as_ref())[3 % 2];
    let mut b = vec![0u8; info.sector_size as usize];
    dev.read(newest, &mut b).unwrap();
    assert_eq!(&b[..4], b"SLT1", "the newest slot is where the layout says");
    b[60] ^= 0x20;
    dev.write(newest, &b).unwrap();
    drop(dev);
    let db = open_or_create(&disk, Mode::Soc, &o, false);
    assert_eq!(db.get(b"synced").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"value"[..]));
    assert_eq!(
        db.get(b"c").unwrap(),
        None,
        "the damaged slot's record came back"
    );
    let rep = db.check().unwrap();
    assert!(
        rep.repaired
            .iter()
            .any(|n| n.contains("log tail slot") && n.contains("damaged")),
        "{:?}",
        rep.repaired
    );
    db.close().unwrap();
}

/// Concurrent writers are applied in groups (one log hand-off for a writer and those queued
/// behind it); every write a group acknowledged survives a crash of the process, and each
/// writer's keys hold its last value.
#[test]
fn concurrent_writers_grouped_lose_nothing_in_a_process_crash() {
    for mode in [Mode::Soc, Mode::Loc] {
        let disk = tiny_disk(64);
        let o = opts(true);
        let db = Arc::new(open_or_create(&disk, mode, &o, true));
        let writers = 4u64;
        let per = 1500u64;
        let models: Vec<Model> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..writers)
                .map(|t| {
                    let db = db.clone();
                    s.spawn(move || {
                        let mut rng = Rng(0xa11 + t);
                        let mut m = Model::new();
                        for i in 0..per {
                            // Each writer owns the keys congruent to it modulo `writers`.
                            let k = key(t + writers * rng.below(100));
                            let v = value(&mut rng, i, 200);
                            db.put(&k, &v).unwrap();
                            m.insert(k, v);
                        }
                        m
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let model: Model = models.into_iter().flatten().collect();
        let st = db.stats();
        assert_eq!(
            st.write_groups + st.grouped_writes,
            writers * per,
            "every write is a group's leader or one of its followers"
        );
        assert!(
            st.grouped_writes > 0,
            "{writers} writers of {per} puts each never shared a group"
        );
        let db = Arc::into_inner(db).unwrap();
        crash(db);
        let db = open_or_create(&disk, mode, &o, false);
        let l = lost(&db, &model, writers * 100);
        assert!(l.is_empty(), "{mode:?}: lost {l:?}");
        db.close().unwrap();
    }
}

/// A well-formed newest tail slot that names a sector past its log band's end (damage its
/// checksum missed, or bytes not written by the engine) is passed over and reported; the
/// database opens from the older slot.
#[test]
fn a_tail_slot_naming_a_sector_past_the_band_is_passed_over() {
    let disk = tiny_disk(64);
    let o = opts(true);
    let db = open_or_create(&disk, Mode::Soc, &o, true);
    for k in [&b"a"[..], b"b"] {
        db.put(k, b"value").unwrap();
    }
    crash(db);
    let dev = seen(disk.clone());
    let info = dev.info();
    let ss = info.sector_size as u64;
    // Generation 2 is the newest slot, at the first of the two.
    let mut b = vec![0u8; ss as usize];
    dev.read(tail_slot_lbas(dev.as_ref())[0], &mut b).unwrap();
    let t = tegula_smrdb::log::tail::decode(&b).unwrap().unwrap();
    assert_eq!(t.generation, 2);
    let forged =
        tegula_smrdb::log::tail::encode(t.zone, info.zone_sectors * 4, 3, t.payload, ss).unwrap();
    dev.write(tail_slot_lbas(dev.as_ref())[1], &forged).unwrap();
    drop(dev);
    let db = open_or_create(&disk, Mode::Soc, &o, false);
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"value"[..]));
    let rep = db.check().unwrap();
    assert!(
        rep.repaired.iter().any(|n| n.contains("past its end")),
        "{:?}",
        rep.repaired
    );
    db.close().unwrap();
}

/// Sectors written in the sequential zones of the device as SMRDB sees it that start with
/// `magic`.
fn sectors_with_magic(disk: &Arc<Disk>, magic: &[u8]) -> Vec<u64> {
    let dev = seen(disk.clone());
    let info = dev.info();
    let ss = info.sector_size as usize;
    let mut found = Vec::new();
    for z in info.conventional_zones..info.zones {
        let zi = dev.zone(z).unwrap();
        let n = zi.written_sectors();
        if n == 0 {
            continue;
        }
        let mut b = vec![0u8; ss * n as usize];
        dev.read(zi.start_lba, &mut b).unwrap();
        for i in 0..n {
            if b[i as usize * ss..].starts_with(magic) {
                found.push(zi.start_lba + i);
            }
        }
    }
    found
}

/// Values larger than a sector go to the log band as continued chunks ("SLC2") holding their
/// bytes, the rest of the last one in a tail slot: about one sector of log per 4 KiB put, not
/// two. Each put is recovered after a crash of the process.
#[test]
fn records_larger_than_a_sector_cost_their_bytes_in_the_log_band() {
    let disk = tiny_disk(64);
    let o = opts(true);
    let db = open_or_create(&disk, Mode::Soc, &o, true);
    let ss = seen(disk.clone()).info().sector_size as u64;
    let (mut model, mut rng) = (Model::new(), Rng(11));
    let n = 60;
    for i in 0..n {
        let v = (0..ss).map(|j| (rng.next() ^ j) as u8).collect::<Vec<_>>();
        db.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    let s = db.stats();
    // Each record is a sector's worth of value plus its key and framing: a little over one
    // sector each in the band (two sectors each without continued chunks).
    assert!(
        s.log_bytes <= n * ss * 11 / 10,
        "{} log bytes for {n} puts of {ss} bytes",
        s.log_bytes
    );
    crash(db);
    assert!(
        !sectors_with_magic(&disk, b"SLC2").is_empty(),
        "no continued chunk was written"
    );
    let db = open_or_create(&disk, Mode::Soc, &o, false);
    assert!(lost(&db, &model, n).is_empty());
    assert!(db.check().unwrap().repaired.is_empty());
    db.close().unwrap();
}

/// A crash between a continued chunk and the tail slot holding the rest of its last record
/// (simulated by wiping the slot) leaves a record cut short at the end of the log: that put
/// never returned, so it is not recovered, every earlier one is, the log starts over (nothing
/// is appended behind half a record) and later crashes recover as before.
#[test]
fn a_record_cut_short_at_the_end_of_the_log_was_never_acknowledged() {
    let disk = tiny_disk(64);
    let o = opts(true);
    let db = open_or_create(&disk, Mode::Soc, &o, true);
    let ss = seen(disk.clone()).info().sector_size as usize;
    let (mut model, mut rng) = (Model::new(), Rng(12));
    // Few enough writes that one memtable (128 KiB) and one log band hold them all.
    for i in 0..6 {
        let v = value(&mut rng, i, 3 * ss as u64);
        db.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    // The last put: two and a half sectors, its last half sector in the newest slot.
    db.put(&key(99), &vec![7u8; ss * 5 / 2]).unwrap();
    crash(db);
    let dev = seen(disk.clone());
    let slots = tail_slot_lbas(dev.as_ref());
    let generation = |b: &[u8]| u64::from_le_bytes(b[16..24].try_into().unwrap());
    let mut bufs = slots.map(|lba| {
        let mut b = vec![0u8; ss];
        dev.read(lba, &mut b).unwrap();
        assert_eq!(&b[..4], b"SLT1");
        b
    });
    let newest = if generation(&bufs[0]) > generation(&bufs[1]) {
        0
    } else {
        1
    };
    bufs[newest].fill(0);
    dev.write(slots[newest], &bufs[newest]).unwrap();
    drop(dev);
    let db = open_or_create(&disk, Mode::Soc, &o, false);
    assert!(lost(&db, &model, 6).is_empty());
    assert_eq!(db.get(&key(99)).unwrap(), None, "half a record came back");
    // A few writes that stay in one log band, then a crash: they must not be read as the
    // rest of the record cut short.
    for i in 20..24 {
        let v = value(&mut rng, i, 2 * ss as u64);
        db.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    crash(db);
    let mut db = open_or_create(&disk, Mode::Soc, &o, false);
    assert!(lost(&db, &model, 100).is_empty());
    for round in 0..3 {
        write_some(&db, &mut model, &mut rng, 200, 400);
        crash(db);
        db = open_or_create(&disk, Mode::Soc, &o, false);
        assert!(lost(&db, &model, 400).is_empty(), "round {round}");
    }
    assert!(db.check().unwrap().repaired.is_empty());
    db.close().unwrap();
}
