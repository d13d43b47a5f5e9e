//! The metadata decoders never panic on random or mutated bytes, and whatever decodes
//! round-trips (superblock, checkpoint payload, log record payload, per-zone logs).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use proptest::prelude::*;
use tegula_fs::{formats, Fs, ROOT};

/// A real checkpoint payload and log record of a small file system, read back from the
/// conventional zone, so mutations start from valid encodings.
fn samples() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let d = disk(8, 1);
    let mut fs = Fs::mkfs(zoned(&d), small_opts()).unwrap();
    let dir = fs.mkdir(ROOT, b"dir", 0o755, 1, 2).unwrap().ino;
    for i in 0..4u8 {
        let f = fs.create(dir, &[b'f', b'0' + i], 0o644, 1, 2).unwrap().ino;
        fs.write(f, 0, &vec![i; 70_000], false).unwrap();
        fs.fsync(f).unwrap();
    }
    fs.symlink(ROOT, b"ln", b"dir/f0", 0, 0).unwrap();
    fs.rename(dir, b"f1", ROOT, b"moved", false).unwrap();
    fs.commit().unwrap();
    let mut sector = vec![0u8; 4096];
    tegula_device::BlockDevice::read(&*seen(&d), 0, &mut sector).unwrap();
    let sb = sector.clone();
    // Records and checkpoints carry a 48-byte header before their payload.
    let mut log = vec![0u8; 64 * 4096];
    let lba = {
        let s = fs.meta_stats();
        s.log_lba
    };
    tegula_device::BlockDevice::read(&*seen(&d), lba, &mut log).unwrap();
    let len = u64::from_le_bytes(log[24..32].try_into().unwrap()) as usize;
    let record = log[48..48 + len].to_vec();
    fs.checkpoint().unwrap();
    let ckp_lba = fs.meta_stats().checkpoint_lba;
    let mut ckp = vec![0u8; 64 * 4096];
    tegula_device::BlockDevice::read(&*seen(&d), ckp_lba, &mut ckp).unwrap();
    let len = u64::from_le_bytes(ckp[24..32].try_into().unwrap()) as usize;
    let checkpoint = ckp[48..48 + len].to_vec();
    (sb, checkpoint, record)
}

/// The zone-log frame inside a checkpoint payload (it ends the payload).
fn zone_logs_of(ckp: &[u8]) -> Vec<u8> {
    let at = ckp
        .windows(8)
        .position(|w| w == b"TGLFSZLG")
        .expect("the checkpoint holds a zone-log frame");
    ckp[at..].to_vec()
}

#[test]
fn valid_samples_decode() {
    let (sb, ckp, rec) = samples();
    formats::superblock(&sb).unwrap();
    assert!(formats::checkpoint(&ckp).unwrap() >= 7);
    assert!(formats::log_record(&rec).unwrap() >= 1);
    // One zone log per zone the file system sees (8; on ZNS, its emulated conventional zone
    // and the sequential zones after the log).
    let zones = tegula_device::BlockDevice::info(&*seen(&disk(8, 1))).zones;
    assert_eq!(formats::zone_logs(&zone_logs_of(&ckp)), Ok(zones as _));
}

fn mutate(mut b: Vec<u8>, edits: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
    if !b.is_empty() {
        for &(i, v) in edits {
            let n = b.len();
            b[i % n] = v;
        }
    }
    if let Some(c) = cut {
        b.truncate(c % (b.len() + 1));
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = formats::superblock(&b);
        let _ = formats::checkpoint(&b);
        let _ = formats::log_record(&b);
        let _ = formats::zone_logs(&b);
    }

    #[test]
    fn mutated_encodings_never_panic(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        cut in proptest::option::of(any::<usize>()),
    ) {
        let (sb, ckp, rec) = samples_cached();
        let _ = formats::superblock(&mutate(sb.clone(), &edits, cut));
        let _ = formats::checkpoint(&mutate(ckp.clone(), &edits, cut));
        let _ = formats::log_record(&mutate(rec.clone(), &edits, cut));
        // Past the frame's checksum: the payload decoder itself, on mutated payloads.
        let zl = zone_logs_of(ckp);
        let _ = formats::zone_logs(&mutate(zl.clone(), &edits, cut));
        let payload = mutate(zl[24..zl.len() - 4].to_vec(), &edits, cut);
        let reframed = tegula_codec::frame::Format::slot("fs zone logs", b"TGLFSZLG", 1)
            .encode(0, 0, &payload);
        let _ = formats::zone_logs(&reframed);
    }
}

fn samples_cached() -> &'static (Vec<u8>, Vec<u8>, Vec<u8>) {
    static S: std::sync::OnceLock<(Vec<u8>, Vec<u8>, Vec<u8>)> = std::sync::OnceLock::new();
    S.get_or_init(samples)
}

/// Regression: a Map op whose extent offset plus length overflowed panicked in replay
/// (found by the `log_record` fuzz target).
#[test]
fn map_op_with_an_overflowing_extent_offset_is_an_error_not_a_panic() {
    let mut b = vec![7u8]; // Map
    b.extend_from_slice(&1u64.to_le_bytes()); // ino
    b.extend_from_slice(&0u64.to_le_bytes()); // file offset
    b.extend_from_slice(&2u64.to_le_bytes()); // piece len
    b.extend_from_slice(&3u32.to_le_bytes()); // zone
    b.extend_from_slice(&100u64.to_le_bytes()); // ext_lba
    b.extend_from_slice(&4096u64.to_le_bytes()); // ext_len
    b.extend_from_slice(&u64::MAX.to_le_bytes()); // ext_off
    b.extend_from_slice(&[0u8; 9]); // no mtime
    assert_eq!(formats::log_record(&b), Ok(1));
}
