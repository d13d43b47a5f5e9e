//! The `tegula db` commands on a disk image.
#![allow(clippy::unwrap_used)] // tests fail loudly on any error

use tegula_device::{profile, Disk};
use tegula_smrdb::cli::{run, run_args, DbArgs, DbCommand};

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

/// The same engine on a plain file banded like SMR (`--banded`), as SMRDB ran on a conventional
/// disk; the write pointers live in the `.zones` sidecar, so a second command finds the data.
#[test]
fn a_plain_file_banded_like_smr_holds_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain.bin");
    let banded = |cmd: DbCommand, capacity: Option<&str>| {
        run_args(DbArgs {
            banded: Some("1MiB".into()),
            capacity: capacity.map(str::to_string),
            cmd,
        })
    };
    banded(
        DbCommand::Create {
            image: file.clone(),
            loc: false,
        },
        Some("32MiB"),
    )
    .unwrap();
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 32 << 20);
    for i in 0..300 {
        banded(
            DbCommand::Put {
                image: file.clone(),
                key: format!("k{i:03}"),
                value: "v".repeat(2000),
            },
            None,
        )
        .unwrap();
    }
    banded(
        DbCommand::Compact {
            image: file.clone(),
        },
        None,
    )
    .unwrap();
    banded(
        DbCommand::Get {
            image: file.clone(),
            key: "k123".into(),
        },
        None,
    )
    .unwrap();
    banded(
        DbCommand::Check {
            image: file.clone(),
        },
        None,
    )
    .unwrap();
    // Without --banded the file is not a disk image; --capacity is for `create` only.
    let e = run(DbCommand::Check {
        image: file.clone(),
    })
    .unwrap_err();
    assert!(format!("{e:#}").contains("--banded"), "{e:#}");
    assert!(banded(
        DbCommand::Check {
            image: file.clone()
        },
        Some("64MiB")
    )
    .is_err());
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 32 << 20);
}
