//! No flipped byte in the KVIMR store's metadata or in SMRDB's structures on it loses data
//! silently (issue 32 item 5, the rule of issue 33): SMRDB-LOC on the zoned adapter of a small
//! interlaced drive takes puts and deletes and closes; then, on a fresh copy each time, one
//! byte is flipped in the store's superblock, in either map slot, in the staging area, in the
//! raw area (SMRDB's superblock and manifest copies, in the adapter's conventional zone) or in
//! the first safe files (SMRDB's log), and the drive is opened again. Each flip must leave
//! every key as it was, or make the open (or a read) fail as corruption; never open with a key
//! missing, changed or come back.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk};
use tegula_kvimr::layout::Layout;
use tegula_kvimr::{Options, Policy, RmwMode, ZonedAdapter};
use tegula_smrdb::{Db, FormatOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A closed database with a few thousand keys (some deleted), and what it holds.
fn setup() -> (Arc<Disk>, Model) {
    let d = disk(config(64, 128 << 10, true));
    let dev: Arc<dyn BlockDevice> = d.clone();
    let opts = Options {
        policy: Policy::CompactionAware,
        rmw: RmwMode::Merged,
        ..Options::default()
    };
    let a = Arc::new(ZonedAdapter::format(dev, &tracks(&d), zoned_1mib(), opts).unwrap());
    let db = Db::create(a.clone(), FormatOptions::loc(), db_opts()).unwrap();
    let mut model = Model::new();
    let mut rng = SmallRng::seed_from_u64(3);
    for i in 0..12_000u32 {
        let k = rng.gen_range(0..3_000u32);
        let key = format!("key{k:08}").into_bytes();
        if rng.gen_range(0..10) == 0 {
            db.delete(&key).unwrap();
            model.remove(&key);
        } else {
            let mut v = format!("value {k} {i} ").into_bytes();
            v.resize(200 + (k % 300) as usize, b'x');
            db.put(&key, &v).unwrap();
            model.insert(key, v);
        }
    }
    db.close().unwrap();
    drop(a);
    (d, model)
}

/// The sectors to damage and where in them: (name, LBA, byte offsets).
fn targets(d: &Disk) -> Vec<(String, u64, Vec<usize>)> {
    let ss = u64::from(d.info().sector_size);
    let layout = Layout::new(&tracks(d), ss, &zoned_1mib().format()).unwrap();
    let r = layout.regions;
    let at = |off: u64| layout.safe_extents(off, 1)[0].0;
    let mut t = vec![("superblock".to_string(), at(0))];
    for (slot, &m) in ["A", "B"].iter().zip(&r.map) {
        for k in 0..r.map_sectors {
            t.push((format!("map slot {slot} sector {k}"), at(m + k)));
        }
    }
    t.push(("staging area".into(), at(r.staging)));
    for k in 0..r.raw_sectors.min(64) {
        t.push((format!("raw area sector {k}"), at(r.raw + k)));
    }
    for f in 0..u64::from(r.safe_files).min(4) {
        for k in 0..2 {
            t.push((
                format!("safe file {f} sector {k}"),
                at(r.files + f * r.file_sectors + k),
            ));
        }
    }
    // Only bytes that hold something: a flip in a never-written sector tests nothing.
    t.into_iter()
        .map(|(name, lba)| {
            let at = used_bytes(d, lba);
            (name, lba, at)
        })
        .filter(|(_, _, at)| !at.is_empty())
        .collect()
}

/// Up to six byte offsets of sector `lba` that are not zero, spread over the sector.
fn used_bytes(d: &Disk, lba: u64) -> Vec<usize> {
    let mut s = vec![0u8; SS as usize];
    d.read(lba, &mut s).unwrap();
    let nz: Vec<usize> = (0..s.len()).filter(|&i| s[i] != 0).collect();
    let n = nz.len();
    if n == 0 {
        return Vec::new();
    }
    let mut pick: Vec<usize> = (0..6).map(|k| nz[k * n / 6]).collect();
    pick.dedup();
    pick
}

fn flip(d: &Disk, lba: u64, at: usize) {
    let mut s = vec![0u8; SS as usize];
    d.read(lba, &mut s).unwrap();
    s[at] ^= 0x08;
    d.with_media(|m| m.write(lba, &s, true)).unwrap();
}

enum Outcome {
    Whole,
    Refused(String),
    Silent(String),
}

fn open_and_compare(d: &Arc<Disk>, model: &Model) -> Outcome {
    let dev: Arc<dyn BlockDevice> = d.clone();
    let a = match ZonedAdapter::open_stored(dev, &tracks(d)) {
        Ok(a) => Arc::new(a),
        Err(e) => return Outcome::Refused(format!("store: {e}")),
    };
    let db = match Db::open(a.clone(), db_opts()) {
        Ok(db) => db,
        Err(e) => return Outcome::Refused(format!("engine: {e}")),
    };
    for (k, v) in model {
        match db.get(k) {
            Ok(Some(got)) if &got == v => {}
            Ok(got) => {
                return Outcome::Silent(format!(
                    "{} reads {:?}",
                    String::from_utf8_lossy(k),
                    got.map(|g| g.len())
                ))
            }
            Err(e) if e.is_corruption() => return Outcome::Refused(format!("read: {e}")),
            Err(e) => return Outcome::Silent(format!("read failed, not as corruption: {e}")),
        }
    }
    let scanned = match db.scan(b"", None) {
        Ok(it) => it.count(),
        Err(e) => return Outcome::Refused(format!("scan: {e}")),
    };
    if scanned != model.len() {
        return Outcome::Silent(format!("{scanned} keys scanned, {} held", model.len()));
    }
    Outcome::Whole
}

#[test]
fn no_flipped_byte_in_the_store_or_the_engine_loses_data_silently() {
    let (probe, model) = setup();
    let targets = targets(&probe);
    drop(probe);
    let (mut whole, mut refused, mut silent) = (0, 0, Vec::new());
    let mut by_place: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    assert!(
        targets.iter().any(|(n, ..)| n.starts_with("map"))
            && targets.iter().any(|(n, ..)| n.starts_with("raw"))
            && targets.iter().any(|(n, ..)| n.starts_with("safe")),
        "{targets:?}"
    );
    for (name, lba, offsets) in &targets {
        for &at in offsets {
            let (d, m) = setup();
            assert_eq!(m, model, "the set-up is deterministic");
            flip(&d, *lba, at);
            let place = name.split(" sector").next().unwrap_or(name).to_string();
            let e = by_place.entry(place).or_default();
            match open_and_compare(&d, &model) {
                Outcome::Whole => {
                    whole += 1;
                    e.0 += 1;
                }
                Outcome::Refused(why) => {
                    refused += 1;
                    e.1 += 1;
                    eprintln!("  refused, {name} byte {at}: {why}");
                }
                Outcome::Silent(why) => silent.push(format!("{name} (LBA {lba}) byte {at}: {why}")),
            }
        }
    }
    eprintln!(
        "kvimr flip campaign: {} flips, {whole} whole, {refused} refused, {} silent",
        whole + refused + silent.len(),
        silent.len()
    );
    for (place, (w, r)) in &by_place {
        eprintln!("  {place}: {w} whole, {r} refused");
    }
    assert!(silent.is_empty(), "silent outcomes:\n{}", silent.join("\n"));
    assert!(whole > 0 && refused > 0, "{whole} whole, {refused} refused");
}
