//! The `tegula db` commands on a disk image.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

use smrdb::cli::{run, DbCommand};
use tegula_device::{profile, Disk};

#[test]
fn create_put_get_scan_compact_check_on_an_image() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("d.img");
    let mut cfg = profile("hm-smr").unwrap();
    cfg.zones.zone_size = 1 << 20;
    cfg.capacity = 32 << 20;
    Disk::create_image(&img, cfg).unwrap().close().unwrap();
    run(DbCommand::Create {
        image: img.clone(),
        loc: false,
    })
    .unwrap();
    assert!(run(DbCommand::Create {
        image: img.clone(),
        loc: false
    })
    .is_err());
    for i in 0..5 {
        run(DbCommand::Put {
            image: img.clone(),
            key: format!("k{i}"),
            value: format!("v{i}"),
        })
        .unwrap();
    }
    run(DbCommand::Del {
        image: img.clone(),
        key: "k2".into(),
    })
    .unwrap();
    run(DbCommand::Get {
        image: img.clone(),
        key: "k3".into(),
    })
    .unwrap();
    assert!(run(DbCommand::Get {
        image: img.clone(),
        key: "k2".into()
    })
    .is_err());
    run(DbCommand::Scan {
        image: img.clone(),
        from: "k1".into(),
        to: Some("k4".into()),
        limit: 10,
    })
    .unwrap();
    run(DbCommand::Compact { image: img.clone() }).unwrap();
    run(DbCommand::Stats {
        image: img.clone(),
        json: true,
    })
    .unwrap();
    run(DbCommand::Check { image: img.clone() }).unwrap();
    run(DbCommand::Get {
        image: img,
        key: "k4".into(),
    })
    .unwrap();
}
