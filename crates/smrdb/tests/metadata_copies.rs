//! No silent rollback (issue 33): one flipped byte anywhere in the superblock or in the newest
//! manifest copy either leaves the database exactly as it was (the twin copy is used, and
//! `check` reports the repair) or refuses the open as corruption; it never opens on an older
//! state. A flip campaign over every byte of those copies counts the outcomes.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk, ZonedDevice};
use tegula_smrdb::manifest::Manifest;
use tegula_smrdb::{Db, Error, Mode};

const SS: usize = 4096;

/// A database with bands, a deleted key and a later key, closed: the newest manifest differs
/// from the one before it (an older state would lose "late" and bring "k005" back).
fn setup() -> (Arc<Disk>, BTreeMap<Vec<u8>, Vec<u8>>) {
    let disk = tiny_disk(32);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let db = Db::create(dev, format(Mode::Soc), tiny_opts()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..200u64 {
        let v = format!("value-{i}").into_bytes();
        db.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    db.flush().unwrap();
    db.delete(&key(5)).unwrap();
    model.remove(&key(5));
    db.put(b"late", b"arrival").unwrap();
    model.insert(b"late".to_vec(), b"arrival".to_vec());
    db.flush().unwrap();
    db.close().unwrap();
    (disk, model)
}

/// Where SMRDB's metadata lives, as it sees the device: (superblock copies, the newest
/// manifest's copies with their encoded length).
fn layout(disk: &Arc<Disk>) -> (Vec<u64>, Vec<(u64, usize)>) {
    let seen = seen(disk.clone());
    let conv = u64::from(seen.info().conventional_zones) * seen.info().zone_sectors;
    let read = |lba: u64| {
        let mut b = vec![0u8; SS];
        seen.read(lba, &mut b).unwrap();
        b
    };
    let sb = tegula_smrdb::superblock::Superblock::decode(&read(0))
        .unwrap()
        .unwrap();
    let slot = sb.slot_sectors;
    let newest = (0..2u64)
        .filter_map(|s| {
            let b = read(1 + s * slot);
            Manifest::decode(&b).ok().map(|m| (m.generation, s))
        })
        .max()
        .unwrap();
    // The newest slot's two copies first, then the older slot's.
    let mut manifests = Vec::new();
    for s in [newest.1, 1 - newest.1] {
        let start = 1 + s * slot;
        for lba in [start, start + slot / 2] {
            if let Some(len) = Manifest::encoded_len(&read(lba)) {
                manifests.push((lba, len));
            }
        }
    }
    (vec![0, conv - 1], manifests)
}

/// Flips byte `at` of sector `lba` as SMRDB sees the device, on the media.
fn flip(disk: &Arc<Disk>, lba: u64, at: usize) {
    let raw = if test_profile() == "zns" {
        tegula_device::ConvZones::open(disk.clone(), 1)
            .unwrap()
            .device_lba(lba)
            .unwrap()
    } else {
        lba
    };
    let mut s = vec![0u8; SS];
    disk.read(raw, &mut s).unwrap();
    s[at] ^= 0x20;
    disk.with_media(|m| {
        m.write(raw, &s, true)?;
        m.shingling_mut().clear(raw + 1, 1 << 16);
        Ok::<_, tegula_device::DeviceError>(())
    })
    .unwrap();
}

#[derive(Debug, Default)]
struct Outcomes {
    intact: usize,
    repaired: usize,
    refused: usize,
    silent: Vec<String>,
}

/// Opens after the flip and sorts the outcome.
fn outcome(disk: &Arc<Disk>, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str, o: &mut Outcomes) {
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    match Db::open(dev, tiny_opts()) {
        Err(e) if e.is_corruption() => o.refused += 1,
        Err(e) => o
            .silent
            .push(format!("{what}: an error that is not corruption: {e}")),
        Ok(db) => {
            let got: BTreeMap<Vec<u8>, Vec<u8>> =
                db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
            let rep = db.check().unwrap();
            if got != *model {
                o.silent.push(format!(
                    "{what}: opened on another state ({} keys, late: {:?}, k005: {:?})",
                    got.len(),
                    got.contains_key(&b"late"[..]),
                    got.contains_key(&key(5))
                ));
            } else if !rep.problems.is_empty() {
                o.silent
                    .push(format!("{what}: check found problems {:?}", rep.problems));
            } else if rep.repaired.is_empty() {
                o.intact += 1;
            } else {
                o.repaired += 1;
            }
            db.close().unwrap();
        }
    }
}

#[test]
fn a_damaged_newest_manifest_copy_is_replaced_by_its_twin_and_reported() {
    let (disk, _) = setup();
    let (_, manifests) = layout(&disk);
    let (lba, _) = manifests[0];
    flip(&disk, lba, 30);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let db = Db::open(dev, tiny_opts()).unwrap();
    let rep = db.check().unwrap();
    assert!(rep.is_ok(), "{:?}", rep.problems);
    assert_eq!(rep.repaired.len(), 1, "{:?}", rep.repaired);
    assert!(
        rep.repaired[0].contains(&format!("LBA {lba}")),
        "{:?}",
        rep.repaired
    );
    assert_eq!(db.get(b"late").unwrap(), Some(b"arrival".to_vec()));
    assert_eq!(db.get(&key(5)).unwrap(), None);
    db.close().unwrap();
    // The copy was rewritten: the next open finds nothing to repair.
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let db = Db::open(dev, tiny_opts()).unwrap();
    assert!(db.check().unwrap().repaired.is_empty());
}

#[test]
fn a_superblock_with_a_flipped_magic_is_not_a_fresh_device() {
    let (disk, model) = setup();
    flip(&disk, 0, 0);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    assert!(matches!(
        Db::create(dev.clone(), format(Mode::Soc), tiny_opts()),
        Err(Error::AlreadyExists { .. })
    ));
    let db = Db::open(dev, tiny_opts()).unwrap();
    let rep = db.check().unwrap();
    assert!(rep.repaired.iter().any(|r| r.contains("copy A")), "{rep:?}");
    assert_eq!(db.scan(b"", None).unwrap().count(), model.len());
}

/// Every byte of both superblock copies and of both copies of the newest manifest, flipped
/// one at a time on a fresh database: no outcome is a silent rollback.
#[test]
fn flip_campaign_over_the_superblock_and_the_newest_manifest_finds_no_silent_outcome() {
    let (probe, _) = setup();
    let (sbs, manifests) = layout(&probe);
    drop(probe);
    let mut positions: Vec<(u64, usize)> = Vec::new();
    for lba in sbs {
        positions.extend((0..49).map(|b| (lba, b)));
    }
    // Every byte of each manifest copy's encoding, and 50 bytes of each copy's padding (the
    // rest of its sector, which no decoder reads), spread by a seeded generator.
    let mut rng = Rng(17);
    for (lba, len) in manifests {
        positions.extend((0..len.min(SS)).map(|b| (lba, b)));
        for _ in 0..50 {
            positions.push((lba, len + rng.below((SS - len) as u64) as usize));
        }
    }
    assert!(positions.len() >= 500, "{} positions", positions.len());
    let mut o = Outcomes::default();
    for (i, &(lba, at)) in positions.iter().enumerate() {
        let (disk, model) = setup();
        flip(&disk, lba, at);
        outcome(&disk, &model, &format!("#{i} LBA {lba} byte {at}"), &mut o);
    }
    eprintln!(
        "{} flips: {} intact, {} repaired from a twin, {} refused as corruption, {} silent",
        positions.len(),
        o.intact,
        o.repaired,
        o.refused,
        o.silent.len()
    );
    assert!(o.silent.is_empty(), "{:#?}", o.silent);
    assert!(o.repaired > 0);
}
