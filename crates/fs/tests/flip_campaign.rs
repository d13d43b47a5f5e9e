//! No silent rollback (issue 33): one flipped bit in the newest copy of any metadata structure
//! of the file system — superblock copy A, the newest checkpoint, every log record of its
//! generation — either leaves every fsynced file as it was or fails the mount with an error
//! naming the damage; it never mounts an older state. A seeded campaign of more than 500
//! positions counts the outcomes.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk};
use tegula_fs::{Fs, ROOT};

const SS: usize = 4096;
/// Record header bytes (magic, generation, sequence, length, fs id, crcs).
const HDR: usize = 48;

/// Sector `lba` as the file system sees the device.
fn sector(d: &Arc<Disk>, lba: u64) -> Vec<u8> {
    let mut s = vec![0u8; SS];
    BlockDevice::read(&*seen(d), lba, &mut s).unwrap();
    s
}

/// Files with data, fsynced one at a time; a checkpoint; more files, one removed; a power
/// cut. Returns the drive, the newest checkpoint's LBA and every file's contents.
fn workload() -> (Arc<Disk>, u64, BTreeMap<String, Option<Vec<u8>>>) {
    let d = disk(8, 1);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let put = |fs: &mut Fs, name: &str, len: usize| {
        let e = fs.create(ROOT, name.as_bytes(), 0o644, 0, 0).unwrap();
        fs.open_file(e.ino).unwrap();
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + name.len()) as u8).collect();
        fs.write(e.ino, 0, &data, false).unwrap();
        fs.fsync(e.ino).unwrap();
        fs.release(e.ino).unwrap();
    };
    for (i, n) in ["a", "b", "c"].iter().enumerate() {
        put(&mut fs, n, 1000 * (i + 1));
    }
    fs.checkpoint().unwrap();
    let ckp = fs.meta_stats().checkpoint_lba;
    for (i, n) in ["keep", "doomed", "x1", "x2", "x3", "x4"]
        .iter()
        .enumerate()
    {
        put(&mut fs, n, 300 * (i + 1));
    }
    fs.unlink(ROOT, b"doomed").unwrap();
    fs.sync_all().unwrap();
    put(&mut fs, "last", 4000);
    let model = dump(&mut fs);
    d.power_cut();
    drop(fs);
    d.power_on();
    (d, ckp, model)
}

/// The structures' byte ranges as the file system sees the device: (what, LBA, bytes).
fn structures(d: &Arc<Disk>, ckp: u64) -> Vec<(String, u64, usize)> {
    let len_at = |lba: u64| u64::from_le_bytes(sector(d, lba)[24..32].try_into().unwrap());
    let mut out = vec![
        ("superblock copy A".to_string(), 0, 88),
        ("newest checkpoint".into(), ckp, HDR + len_at(ckp) as usize),
    ];
    let sb = sector(d, 0);
    let mut lba = u64::from_le_bytes(sb[56..64].try_into().unwrap());
    let mut last: Option<(u64, u64)> = None;
    loop {
        let s = sector(d, lba);
        if &s[..8] != b"TGLFSLOG" {
            break;
        }
        let gen = u64::from_le_bytes(s[8..16].try_into().unwrap());
        let seq = u64::from_le_bytes(s[16..24].try_into().unwrap());
        if last.is_some_and(|(g, q)| g != gen || q + 1 != seq) {
            break;
        }
        last = Some((gen, seq));
        let len = len_at(lba) as usize;
        out.push((format!("log record {seq}"), lba, 2 * HDR + len));
        lba += (2 * HDR + len).div_ceil(SS) as u64;
    }
    out
}

/// Flips bit `bit` of byte `at` of the structure at `lba` (spanning sectors) on the media.
fn flip(d: &Arc<Disk>, lba: u64, at: usize, bit: u32) {
    let lba = lba + (at / SS) as u64;
    let mut s = sector(d, lba);
    s[at % SS] ^= 1 << bit;
    let raw = raw_lba(d, lba);
    d.with_media(|m| m.write(raw, &s, true)).unwrap();
}

#[test]
fn no_single_flipped_bit_in_the_file_systems_metadata_is_a_silent_rollback() {
    let (d, ckp, model) = workload();
    assert!(model.contains_key("/last") && !model.contains_key("/doomed"));
    let structs = structures(&d, ckp);
    assert!(structs.len() >= 8, "{structs:?}");
    let mut rng = SmallRng::seed_from_u64(33);
    // Every byte of the superblock copy and of the last record's header and trailer; 128
    // positions in the checkpoint, 300 over the records.
    let mut positions = Vec::new();
    let (last, records) = structs[2..].split_last().unwrap();
    positions.extend((0..88).map(|k| (0usize, k)));
    positions.extend((0..128).map(|_| (1usize, rng.gen_range(0..structs[1].2))));
    let li = structs.len() - 1;
    positions.extend((0..HDR).map(|k| (li, k)));
    positions.extend((last.2 - HDR..last.2).map(|k| (li, k)));
    positions.extend((0..64).map(|_| (li, rng.gen_range(HDR..last.2 - HDR))));
    let rec_total: usize = records.iter().map(|r| r.2).sum();
    for _ in 0..300 {
        let mut at = rng.gen_range(0..rec_total);
        let mut i = 2;
        while at >= structs[i].2 {
            at -= structs[i].2;
            i += 1;
        }
        positions.push((i, at));
    }
    assert!(positions.len() >= 500, "{}", positions.len());
    let (mut same, mut refused) = (0, 0);
    let mut silent = Vec::new();
    for &(i, at) in &positions {
        let (d, ckp2, _) = workload();
        assert_eq!(ckp2, ckp, "the workload is deterministic");
        let (what, lba, _) = &structs[i];
        flip(&d, *lba, at, rng.gen_range(0..8));
        match Fs::open(zoned(&d), small_opts()) {
            Err(_) => refused += 1,
            Ok(mut fs) => {
                let got = dump(&mut fs);
                if got == model {
                    same += 1;
                } else {
                    silent.push(format!("{what} byte {at}: mounted {:?}", got.keys()));
                }
            }
        }
    }
    eprintln!(
        "fs flip campaign: {} flips over {} structures: {same} mounted with every fsynced \
         file, {refused} refused, {} silent",
        positions.len(),
        structs.len(),
        silent.len()
    );
    assert!(silent.is_empty(), "{silent:#?}");
}
