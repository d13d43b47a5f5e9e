//! A full device gives `NoSpace`; the database stays readable and reopens intact.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

mod common;

use common::*;
use tegula_smrdb::{Db, Error, Mode};

#[test]
fn full_device_reports_nospace_and_stays_readable() {
    for mode in [Mode::Soc, Mode::Loc] {
        let disk = tiny_disk(16);
        let db = Db::create(disk.clone(), format(mode), tiny_opts()).unwrap();
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
        let db = Db::open(disk.clone(), tiny_opts()).unwrap();
        for (k, v) in written.iter().step_by(53) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        assert!(db.check().unwrap().is_ok());
        drop(db);
    }
}

#[test]
fn usable_again_after_deletes_and_compaction() {
    for mode in [Mode::Soc, Mode::Loc] {
        let disk = tiny_disk(16);
        let db = Db::create(disk.clone(), format(mode), tiny_opts()).unwrap();
        let mut rng = Rng(9);
        let mut n = 0u64;
        loop {
            let v = value(&mut rng, n, 1000);
            match db.put(&key(n), &v) {
                Ok(()) => n += 1,
                Err(Error::NoSpace(_)) => break,
                Err(e) => panic!("{mode:?}: {e}"),
            }
        }
        // Delete three quarters of the keys, then compact: the space comes back.
        for i in (0..n).filter(|i| i % 4 != 0) {
            db.delete(&key(i))
                .unwrap_or_else(|e| panic!("{mode:?}: delete {i} of {n}: {e} {:?}", db.stats()));
        }
        db.compact_all()
            .unwrap_or_else(|e| panic!("{mode:?}: compact after deletes: {e}"));
        let st = db.stats();
        for i in 0..n / 2 {
            db.put(&key(n + i), b"fresh")
                .unwrap_or_else(|e| panic!("{mode:?}: put after compaction: {e} {st:?}"));
        }
        for i in (0..n).step_by(7) {
            let want = (i % 4 == 0).then_some(());
            assert_eq!(
                db.get(&key(i)).unwrap().map(|_| ()),
                want,
                "{mode:?} key {i}"
            );
        }
        assert!(db.check().unwrap().is_ok());
    }
}
