//! SMRDB-LOC on the zoned adapter loads the drive to high space usage under every scheme:
//! the adapter's zones are thin-provisioned (a zone takes the tracks its bytes need when they
//! are persisted) and the engine counts its free space in the tracks the store reports, so
//! random inserts run until the live SSTables hold at least 90% of the data tracks. Then a
//! write fails with a typed `NoSpace`, nothing acknowledged is lost, the map and the
//! database are consistent, both reopen intact, and deletes make the database usable again.
//! The store's own `NoSpace` is tested at the end: a persist with no track left fails and
//! changes nothing.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{BlockDevice, DeviceError, Disk, ZonedDevice};
use tegula_kvimr::{Error, NewFile, Options, Policy, RmwMode, ZonedAdapter, ZonedOptions};
use tegula_smrdb::{Db, Error as DbError, FormatOptions, Options as DbOptions};

const ZONE: u64 = 512 << 10;

fn db_opts() -> DbOptions {
    DbOptions {
        background_compaction: false,
        log_buffer_bytes: 64 << 10,
        loc_level1_bands: 2,
        loc_level_multiplier: 4,
        l0_compaction_trigger: 2,
        block_cache_bytes: 1 << 20,
        ..DbOptions::default()
    }
}

fn zoned() -> ZonedOptions {
    ZonedOptions {
        zone_bytes: ZONE,
        conventional_zones: 1,
        log_zones: 3,
        staging_bytes: 2 << 20,
    }
}

/// A 64 MiB drive of 128 KiB bottom tracks (≈ 100 KiB tops): about 58 MiB of data tracks,
/// SSTables of four to five tracks.
fn drive(damage: bool) -> Arc<Disk> {
    let mut c = config(32, 64 << 10, true);
    if !damage {
        c = c.cmr_twin();
    }
    disk(c)
}

fn key(k: u64) -> Vec<u8> {
    format!("user{:016x}", k.wrapping_mul(0x9e37_79b9_7f4a_7c15)).into_bytes()
}

fn open(d: &Arc<Disk>, o: &Options) -> (Arc<ZonedAdapter>, Db) {
    let dev: Arc<dyn BlockDevice> = d.clone();
    let a = Arc::new(ZonedAdapter::open(dev, &tracks(d), o.clone()).unwrap());
    let db = Db::open(a.clone(), db_opts()).unwrap();
    (a, db)
}

fn load_to_full(name: &str, damage: bool, o: Options) {
    let d = drive(damage);
    let dev: Arc<dyn BlockDevice> = d.clone();
    let a = Arc::new(ZonedAdapter::format(dev, &tracks(&d), zoned(), o.clone()).unwrap());
    let zones = a.info().zones as u64;
    let data_bytes = {
        let l = a.store().layout();
        l.data_sectors * l.ss
    };
    // Thin provisioning: far more zones than the data tracks could fill at once.
    assert!(zones * ZONE > 4 * data_bytes, "{name}: {zones} zones");
    let db = Db::create(a.clone(), FormatOptions::loc(), db_opts()).unwrap();
    let mut rng = SmallRng::seed_from_u64(11);
    let mut model = BTreeMap::new();
    let mut err = None;
    for k in 0..1_000_000u64 {
        let mut v = vec![0u8; 1000];
        rng.fill(&mut v[..]);
        match db.put(&key(k), &v) {
            Ok(()) => {
                model.insert(key(k), v);
            }
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    let e = err.expect("the drive must fill up");
    assert!(matches!(e, DbError::NoSpace(_)), "{name}: {e}");
    let live = a.store().live_usage();
    let inserted = model.len() as f64 * 1020.0 / data_bytes as f64;
    assert!(
        live >= 0.9,
        "{name}: live SSTables hold {live:.3} of the data tracks ({inserted:.3} inserted): {e}; {:?}",
        db.stats()
    );
    assert!(inserted > 0.75, "{name}: {inserted:.3} inserted");
    // Nothing lost, nothing damaged, and a second attempt fails the same way.
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{name}");
    }
    assert!(db.check().unwrap().is_ok(), "{name}");
    a.store().check().unwrap();
    assert!(matches!(
        db.put(b"one more", &[1u8; 1000]),
        Err(DbError::NoSpace(_))
    ));
    db.close().unwrap();
    drop(a);
    // Reopen: the map and the manifest agree, every record reads back.
    let (a, db) = open(&d, &o);
    a.store().check().unwrap();
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{name} after reopen");
    }
    assert!(db.check().unwrap().is_ok(), "{name}");
    // Usable again: delete three quarters of the records, compact, write new ones.
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    for (i, k) in keys.iter().enumerate() {
        if i % 4 != 0 {
            db.delete(k)
                .unwrap_or_else(|e| panic!("{name}: delete {i}: {e}"));
            model.remove(k);
        }
    }
    db.compact_all()
        .unwrap_or_else(|e| panic!("{name}: compact after deletes: {e}"));
    for k in 0..5_000u64 {
        let v = vec![(k % 251) as u8; 1000];
        let key = format!("fresh{k:06}").into_bytes();
        db.put(&key, &v)
            .unwrap_or_else(|e| panic!("{name}: put {k} after the deletes: {e}"));
        model.insert(key, v);
    }
    db.close().unwrap();
    drop(a);
    let (a, db) = open(&d, &o);
    a.store().check().unwrap();
    for (k, v) in model.iter().step_by(3) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{name} at the end");
    }
    assert_eq!(db.scan(b"", None).unwrap().count(), model.len(), "{name}");
    db.close().unwrap();
}

fn scheme(policy: Policy, rmw: RmwMode) -> Options {
    Options {
        policy,
        rmw,
        ..Options::default()
    }
}

#[test]
fn seq_loads_to_high_usage() {
    load_to_full("seq", true, scheme(Policy::Seq, RmwMode::Naive));
}

#[test]
fn three_phase_loads_to_high_usage() {
    load_to_full(
        "three-phase",
        true,
        scheme(Policy::ThreePhase, RmwMode::Naive),
    );
}

#[test]
fn kvimr_n_loads_to_high_usage() {
    load_to_full(
        "kvimr-n",
        true,
        scheme(Policy::CompactionAware, RmwMode::Naive),
    );
}

#[test]
fn kvimr_m_loads_to_high_usage() {
    load_to_full(
        "kvimr-m",
        true,
        scheme(Policy::CompactionAware, RmwMode::Merged),
    );
}

#[test]
fn the_cmr_twin_loads_to_high_usage() {
    load_to_full("cmr", false, scheme(Policy::ThreePhase, RmwMode::Naive));
}

#[test]
fn a_persist_with_no_track_left_fails_with_nospace_and_changes_nothing() {
    let d = disk(config(32, 8 << 10, true));
    let fmt = small_format(32, 1 << 20);
    let s = format(&d, fmt, Options::default());
    let data_bytes = {
        let l = s.layout();
        l.data_sectors * l.ss
    };
    // Fill the data tracks with files of 1 MiB until one does not fit.
    let mut model = BTreeMap::new();
    let mut name = 0u32;
    let failed = loop {
        let data = content(name as u64, 1 << 20);
        let id = s.create(name, NewFile::Data { level: Some(3) }).unwrap();
        s.append(id, &data).unwrap();
        let before = s.room();
        match s.persist(id) {
            Ok(()) => {
                s.sync().unwrap();
                model.insert(name, data);
                name += 1;
            }
            Err(e) => {
                assert!(matches!(e, Error::NoSpace(_)), "{e}");
                assert!(before < 256, "room {before} sectors, yet no space");
                break id;
            }
        }
    };
    assert!(model.len() as u64 * (1 << 20) > data_bytes * 3 / 4);
    // The failed file can be deleted; everything else is intact, the store keeps working.
    s.delete(failed).unwrap();
    s.sync().unwrap();
    verify(&s, &model);
    let gone = *model.keys().next().unwrap();
    let id = s.files().iter().find(|f| f.name == gone).unwrap().id;
    s.delete(id).unwrap();
    model.remove(&gone);
    let data = content(1000, 1 << 20);
    put(&s, 1000, Some(3), &data);
    model.insert(1000, data);
    s.sync().unwrap();
    verify(&s, &model);
    drop(s);
    let s = reopen(&d, Options::default());
    verify(&s, &model);
}

#[test]
fn the_adapter_reports_its_room_and_refuses_a_zone_it_cannot_place() {
    let d = drive(true);
    let dev: Arc<dyn BlockDevice> = d.clone();
    let a = ZonedAdapter::format(dev, &tracks(&d), zoned(), Options::default()).unwrap();
    let ss = a.store().layout().ss;
    let space = a.zone_space().unwrap();
    assert_eq!(space.free_sectors, a.store().layout().data_sectors);
    let zs = ZONE / ss;
    // Fill zones until the room runs out: the room shrinks by what each zone took.
    let first = a.info().conventional_zones;
    let data = vec![5u8; ZONE as usize];
    let mut z = first;
    loop {
        let before = a.zone_space().unwrap().free_sectors;
        match a.write(z as u64 * zs, &data) {
            Ok(_) => {
                let after = a.zone_space().unwrap().free_sectors;
                assert!(before - after >= zs && before - after < zs + space.zone_overhead_sectors);
                z += 1;
            }
            Err(e) => {
                assert!(matches!(e, DeviceError::NoSpace(_)), "{e}");
                assert!(before < zs + space.zone_overhead_sectors, "{before}");
                break;
            }
        }
    }
    // The refused zone resets, and the full ones read back.
    a.reset_zone(z).unwrap();
    a.flush().unwrap();
    let mut b = vec![0u8; ZONE as usize];
    a.read(first as u64 * zs, &mut b).unwrap();
    assert_eq!(b, data);
    // Resetting a full zone gives its tracks back once the map records it.
    a.reset_zone(first).unwrap();
    assert!(a.zone_space().unwrap().free_sectors >= zs);
    a.write(z as u64 * zs, &data).unwrap();
    a.flush().unwrap();
}
