//! No silent rollback in the drive-managed IMR drive (issue 33 items 3 and 4): one flipped
//! byte in either superblock copy or in either copy of the newest metadata record leaves
//! every flushed write readable and the drive drive-managed (the twin serves and opening
//! rewrites the damaged copy, reporting it), or refuses the open as corruption. It used to
//! read 1 MiB of flushed data as zeros (a damaged newest record taken for a torn write), and to
//! open a drive whose superblock magic had a flipped bit as a raw interlaced drive.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;
use common::*;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk};
use tegula_dmimr::meta::MetaRecord;
use tegula_dmimr::{DmImr, Error, Probe};

/// A drive with 256 KiB of flushed random writes (tops and bottoms, so with read-modify-
/// writes and valid flags that matter): the raw disk and what the host reads back.
fn setup() -> (Arc<Disk>, Model) {
    let (d, dm) = drive(4096, true);
    let cap = dm.info().capacity_sectors;
    let mut m = Model::new(cap);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
    for i in 0..64u64 {
        let lba = rng.gen_range(0..cap - 16);
        let data = content(i + 1, lba, 16);
        dm.write(lba, &data).unwrap();
        m.write(lba, &data);
    }
    dm.flush().unwrap();
    drop(dm);
    (d, m)
}

/// The LBAs to flip: superblock copies and metadata copies, the newest slot first.
fn targets(d: &Disk) -> (Vec<u64>, Vec<(u64, usize)>) {
    let loc = DmImr::metadata_locations(d).unwrap();
    assert_eq!(
        loc.superblock.len(),
        2,
        "a new format keeps superblock copy B"
    );
    let seq_of = |lba: u64| {
        let mut b = vec![0u8; (loc.record_sectors * SS) as usize];
        d.read(lba, &mut b).unwrap();
        MetaRecord::decode(&b).map(|m| m.seq).unwrap_or(0)
    };
    let newest = if seq_of(loc.meta[0][0]) > seq_of(loc.meta[1][0]) {
        0
    } else {
        1
    };
    let len = {
        let mut b = vec![0u8; SS as usize];
        d.read(loc.meta[newest][0], &mut b).unwrap();
        MetaRecord::frame_len(&b).unwrap()
    };
    let mut meta = Vec::new();
    for k in [newest, 1 - newest] {
        for &lba in &loc.meta[k] {
            meta.push((lba, len));
        }
    }
    (loc.superblock, meta)
}

fn flip(d: &Disk, lba: u64, at: usize) {
    let mut s = vec![0u8; SS as usize];
    d.read(lba, &mut s).unwrap();
    s[at] ^= 0x08;
    d.with_media(|m| m.write(lba, &s, true)).unwrap();
}

/// Opens after a flip: `Ok(repaired)` when the drive opened drive-managed with every flushed
/// write intact, an error naming the silent outcome otherwise; `Err(None)` for a refusal as
/// corruption.
fn outcome(d: Arc<Disk>, m: &Model) -> Result<bool, Option<String>> {
    match DmImr::probe(d) {
        Ok(Probe::Opened(dm)) => {
            let n = m.allowed.len() as u64;
            let mut buf = vec![0u8; (n * SS) as usize];
            let bad = match dm.read(0, &mut buf) {
                Err(e) => Some(format!("reading back: {e}")),
                Ok(_) => buf
                    .chunks(SS as usize)
                    .enumerate()
                    .find(|(i, c)| !m.allowed[*i].iter().any(|a| a == c))
                    .map(|(i, _)| format!("sector {i} reads differently")),
            };
            let repaired = !dm.repaired_at_open().is_empty();
            match bad {
                Some(b) => Err(Some(b)),
                None => Ok(repaired),
            }
        }
        Ok(Probe::Raw(_)) => Err(Some("opened as a raw interlaced drive".into())),
        Err(Error::Corruption { .. } | Error::Malformed { .. }) => Err(None),
        Err(e) => Err(Some(format!("an error that is not corruption: {e}"))),
    }
}

#[test]
fn a_damaged_newest_record_is_replaced_by_its_twin_and_nothing_flushed_is_lost() {
    let (d, m) = setup();
    let (_, meta) = targets(&d);
    flip(&d, meta[0].0, 40);
    let dm = DmImr::open(d.clone()).unwrap();
    let r = dm.repaired_at_open();
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("metadata slot"), "{r:?}");
    m.verify(&dm, "after a damaged newest record");
    drop(dm);
    // Rewritten: nothing left to repair.
    assert!(DmImr::open(d).unwrap().repaired_at_open().is_empty());
}

#[test]
fn a_flipped_superblock_magic_still_opens_drive_managed() {
    let (d, m) = setup();
    let (sbs, _) = targets(&d);
    flip(&d, sbs[0], 0);
    assert!(DmImr::is_formatted(&d));
    let Ok(Probe::Opened(dm)) = DmImr::probe(d.clone()) else {
        panic!("a drive-managed drive with a damaged superblock magic probed as raw");
    };
    assert!(
        dm.repaired_at_open()[0].contains("copy A"),
        "{:?}",
        dm.repaired_at_open()
    );
    m.verify(dm.as_ref(), "after a flipped magic");
}

#[test]
fn flip_campaign_over_the_superblocks_and_metadata_records_finds_no_silent_outcome() {
    let (probe, _) = setup();
    let (sbs, meta) = targets(&probe);
    drop(probe);
    let mut pos: Vec<(u64, usize)> = Vec::new();
    let sb_len = tegula_dmimr::superblock::SUPERBLOCK_FORMAT.frame_len(44);
    for lba in sbs {
        pos.extend((0..sb_len).map(|b| (lba, b)));
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
    for (lba, len) in meta {
        pos.extend((0..len).map(|b| (lba, b)));
        for _ in 0..40 {
            pos.push((lba, rng.gen_range(len..SS as usize)));
        }
    }
    assert!(pos.len() >= 500, "{} positions", pos.len());
    let (mut intact, mut repaired, mut refused, mut silent) = (0, 0, 0, Vec::new());
    for &(lba, at) in &pos {
        let (d, m) = setup();
        flip(&d, lba, at);
        match outcome(d, &m) {
            Ok(false) => intact += 1,
            Ok(true) => repaired += 1,
            Err(None) => refused += 1,
            Err(Some(why)) => silent.push(format!("LBA {lba} byte {at}: {why}")),
        }
    }
    eprintln!(
        "{} flips: {intact} intact, {repaired} repaired from a twin, {refused} refused as \
         corruption, {} silent",
        pos.len(),
        silent.len()
    );
    assert!(silent.is_empty(), "{silent:#?}");
    assert!(repaired > 0);
}
