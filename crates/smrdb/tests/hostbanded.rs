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
