//! A full device gives `NoSpace`; the database stays readable and reopens intact.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use smrdb::{Db, Error, Mode};

#[test]
fn full_device_reports_nospace_and_stays_readable() {
    for mode in [Mode::Soc, Mode::Loc] {
        let disk = tiny_disk(16);
        let db = Db::open(disk.clone(), tiny_opts(mode)).unwrap();
        let mut rng = Rng(5);
        let mut written = Vec::new();
        let mut err = None;
        for i in 0..100_000u64 {
            let k = key(i);
            let v = value(&mut rng, i, 1000);
            match db.put(&k, &v) {
                Ok(()) => written.push((k, v)),
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        let e = err.expect("a 16 MiB device must fill up");
        assert!(matches!(e, Error::NoSpace(_)), "{mode:?}: {e}");
        // Readable: every acknowledged write is there.
        for (k, v) in written.iter().step_by(37) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        assert!(db.check().unwrap().is_ok());
        // A second attempt fails the same way rather than corrupting anything.
        assert!(matches!(db.put(b"more", b"data"), Err(Error::NoSpace(_))));
        db.close().unwrap();
        // Reopen: everything acknowledged is still there.
        let db = Db::open(disk.clone(), tiny_opts(mode)).unwrap();
        for (k, v) in written.iter().step_by(53) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        assert!(db.check().unwrap().is_ok());
        drop(db);
    }
}
