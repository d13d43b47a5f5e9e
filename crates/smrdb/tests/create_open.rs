//! `Db::create` formats, `Db::open` opens: create refuses a device that holds a database, open
//! refuses one that holds none, and open reads the organisation from the superblock.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::sync::Arc;
use tegula_device::{BlockDevice, ZonedDevice};
use tegula_smrdb::{Db, Error, Mode};

#[test]
fn create_on_a_device_with_a_database_refuses_and_keeps_it() {
    for mode in [Mode::Soc, Mode::Loc] {
        let disk = tiny_disk(32);
        let dev: Arc<dyn ZonedDevice> = disk.clone();
        let db = Db::create(dev.clone(), format(mode), tiny_opts()).unwrap();
        db.put(b"k", b"v").unwrap();
        db.close().unwrap();
        let before = disk.stats().bytes_written;
        for again in [Mode::Soc, Mode::Loc] {
            match Db::create(dev.clone(), format(again), tiny_opts()) {
                Err(Error::AlreadyExists { mode: there }) => assert_eq!(there, mode),
                Err(e) => panic!("{mode:?} then {again:?}: unexpected error {e}"),
                Ok(_) => panic!("{mode:?} then {again:?}: create formatted over a database"),
            }
        }
        assert_eq!(disk.stats().bytes_written, before, "a refused create wrote");
        let db = Db::open(dev, tiny_opts()).unwrap();
        assert_eq!(db.mode(), mode);
        assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
        db.close().unwrap();
    }
}

#[test]
fn create_on_a_device_with_a_damaged_superblock_refuses() {
    let disk = tiny_disk(32);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    Db::create(dev.clone(), format(Mode::Soc), tiny_opts())
        .unwrap()
        .close()
        .unwrap();
    // The superblock as SMRDB sees the device (on ZNS, in the emulated conventional zone):
    // copy A at LBA 0, copy B in the conventional area's last sector.
    let seen = seen(disk.clone());
    let ss = seen.info().sector_size as usize;
    let copy_b = u64::from(seen.info().conventional_zones) * seen.info().zone_sectors - 1;
    let flip = |lba: u64| {
        let mut sector = vec![0u8; ss];
        seen.read(lba, &mut sector).unwrap();
        sector[20] ^= 0x01;
        seen.write(lba, &sector).unwrap();
    };
    // Copy A damaged: copy B says a database is there.
    flip(0);
    match Db::create(dev.clone(), format(Mode::Soc), tiny_opts()) {
        Err(Error::AlreadyExists { .. }) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("create formatted over a damaged database"),
    }
    // Both damaged: corruption, and still no format over it.
    flip(copy_b);
    drop(seen);
    match Db::create(dev.clone(), format(Mode::Soc), tiny_opts()) {
        Err(Error::Corruption { zone: 0, .. }) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("create formatted over a damaged database"),
    }
}

#[test]
fn open_of_an_empty_device_fails_cleanly_with_not_found() {
    let disk = tiny_disk(32);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let before = disk.stats().bytes_written;
    match Db::open(dev.clone(), tiny_opts()) {
        Err(Error::NotFound(_)) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("open of an empty device gave a database"),
    }
    assert_eq!(disk.stats().bytes_written, before, "a failed open wrote");
    // The device is still empty: create works on it afterwards.
    let db = Db::create(dev, format(Mode::Soc), tiny_opts()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
}

#[test]
fn open_of_a_loc_database_without_being_told_opens_it_as_loc() {
    let disk = tiny_disk(64);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let db = Db::create(dev.clone(), format(Mode::Loc), tiny_opts()).unwrap();
    let mut rng = Rng(11);
    let mut model = std::collections::BTreeMap::new();
    for i in 0..6000u64 {
        let k = key(rng.below(3000));
        let v = value(&mut rng, i, 300);
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.compact_all().unwrap();
    db.close().unwrap();
    // Nothing here says LOC: the superblock does.
    let db = Db::open(dev, tiny_opts()).unwrap();
    assert_eq!(db.mode(), Mode::Loc);
    let st = db.stats();
    assert_eq!(st.mode, "loc");
    assert_eq!(st.bands_per_level.len(), 7, "LOC has seven levels: {st:?}");
    let got: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
        db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got, model);
    assert!(db.check().unwrap().is_ok());
    db.close().unwrap();
}
