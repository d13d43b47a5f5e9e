//! The engine on a plain file banded like an SMR drive (`tegula_device::HostBanded`), the way
//! the paper ran SMRDB on a conventional disk: writes, compaction, reopen, check.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{HostBanded, HostBandedOptions, ZonedDevice};
use tegula_smrdb::{Db, Mode};

fn open(path: &std::path::Path) -> Arc<dyn ZonedDevice> {
    let opts = HostBandedOptions {
        zone_size: 1 << 20,
        capacity: Some(32 << 20),
        ..HostBandedOptions::default()
    };
    Arc::new(HostBanded::open(path, opts).unwrap())
}

#[test]
fn runs_on_a_banded_plain_file() {
    for mode in [Mode::Soc, Mode::Loc] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("banded.img");
        let mut model = BTreeMap::new();
        let mut rng = Rng(3);
        {
            let db = Db::create(open(&path), format(mode), tiny_opts()).unwrap();
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
        // Reopen from the file and its zone sidecar.
        let db = Db::open(open(&path), tiny_opts()).unwrap();
        assert_eq!(db.mode(), mode, "the mode comes from the superblock");
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            db.scan(b"", None).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(got, model, "{mode:?}");
        assert!(db.check().unwrap().is_ok());
        db.close().unwrap();
    }
}

/// The chunks a crashed process left past a saved write pointer are read back in pieces of
/// any size (a chunk longer than a piece whole), and only while they lie back to back up to
/// exactly the sector a tail slot names.
#[test]
fn chunks_past_the_write_pointer_read_back_in_pieces() {
    use std::os::unix::fs::FileExt;
    use tegula_smrdb::io::Dev;
    use tegula_smrdb::log;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("banded.img");
    let dev = open(&path);
    let info = dev.info();
    let ss = info.sector_size as u64;
    let zone = info.conventional_zones; // the first sequential zone: write pointer at 0
                                        // Chunks of 1, 3, 1 and 2 sectors, written into the file behind the device's back (as a
                                        // crashed process's writes past the saved write pointer are).
    let mut payloads = Vec::new();
    let mut bytes = Vec::new();
    for (i, len) in [100usize, 2 * ss as usize + 50, 10, ss as usize + 7]
        .iter()
        .enumerate()
    {
        let p = log::encode_batch(
            i as u64 + 1,
            &[(format!("k{i}").into_bytes(), Some(vec![b'v'; *len]))],
        );
        bytes.extend(log::frame(&p, ss));
        payloads.extend(p);
    }
    let sectors = bytes.len() as u64 / ss;
    assert_eq!(sectors, 1 + 3 + 1 + 2);
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(&bytes, zone as u64 * info.zone_sectors * ss)
        .unwrap();
    let d = Dev::new(dev.clone());
    for piece in [1, 2, 3, 4, 7, 2048] {
        let got = log::chunks_beyond_write_pointer_in_pieces(&d, zone, 0, sectors, piece).unwrap();
        assert_eq!(got.as_deref(), Some(&payloads[..]), "pieces of {piece}");
        // A slot naming a sector inside the last chunk, or past it, matches nothing.
        for to in [sectors - 1, sectors + 1] {
            let got = log::chunks_beyond_write_pointer_in_pieces(&d, zone, 0, to, piece).unwrap();
            assert_eq!(got, None, "pieces of {piece}, up to {to}");
        }
    }
}
