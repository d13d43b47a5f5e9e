//! `--disk FILE` names a file the benchmark recreates when it starts a fresh database; like
//! mke2fs, it refuses a file that holds something that would be lost — a tegula image with a
//! database, a file system or written zones, a plain file with a signature or data — unless
//! `--force`, or `--use_existing_db` (which keeps what is there).

use crate::device::{self, Access, PathKind, Spec};
use crate::signature::{self, Found};
use anyhow::Result;
use std::path::Path;
use tegula_bench::{EngineSetup, Storage};

/// What `path` holds that a fresh benchmark on `storage` would destroy.
pub fn holds(path: &Path, storage: Storage) -> Result<Vec<Found>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    match (storage, device::kind_of(path)) {
        (_, PathKind::ZonedImage | PathKind::ZonedBlock) => {
            let dev = device::open_zoned(&Spec::new(path, Access::ReadOnly))?;
            let found = signature::of_zoned(&dev)?;
            Ok(found)
        }
        (_, PathKind::DmImage) => Ok(vec![Found::DmImage]),
        (_, PathKind::ZoneFiles) => {
            let dev = device::open_zoned(&Spec::new(path, Access::ReadOnly))?;
            signature::of_zoned(&dev)
        }
        (Storage::Banded(zone_size), _) => {
            let mut sidecar = path.as_os_str().to_owned();
            sidecar.push(".zones");
            if Path::new(&sidecar).exists() {
                let mut spec = Spec::new(path, Access::ReadOnly);
                spec.banded = Some(zone_size);
                if let Ok(dev) = device::open_zoned(&spec) {
                    return signature::of_zoned(&dev);
                }
            }
            signature::of_plain(path)
        }
        // A plain file given as an image: opening it fails before anything is written.
        _ => Ok(Vec::new()),
    }
}

/// Fails, naming what `--disk` holds, when the run would destroy it.
pub fn refuse_destroying(setup: &EngineSetup, use_existing_db: bool, force: bool) -> Result<()> {
    let Some(path) = &setup.disk else {
        return Ok(());
    };
    if use_existing_db || force || !setup.engines.iter().any(|k| k.on_device()) {
        return Ok(());
    }
    let found = holds(path, setup.storage)?;
    signature::refuse_unless_forced(
        path,
        &found,
        "a fresh benchmark database (keep what is there with --use_existing_db)",
        false,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tegula_device::{BlockDevice, Disk, ZoneFilter, ZonedDevice};

    fn image(path: &Path) -> Disk {
        let mut cfg = tegula_device::profile("hm-smr").unwrap();
        cfg.zones.zone_size = 1 << 20;
        cfg.capacity = 64 << 20;
        Disk::create_image(path, cfg).unwrap()
    }

    #[test]
    fn an_empty_image_is_fine_and_one_with_data_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.img");
        image(&p).close().unwrap();
        assert!(holds(&p, Storage::Image).unwrap().is_empty());
        let d = Disk::open_image(&p, Default::default()).unwrap();
        let z = d
            .report_zones(ZoneFilter::All)
            .into_iter()
            .find(|z| z.zone_type.is_sequential())
            .unwrap();
        d.write(z.start_lba, &[1u8; 4096]).unwrap();
        d.close().unwrap();
        let found = holds(&p, Storage::Image).unwrap();
        assert!(matches!(found.as_slice(), [Found::Data(_)]), "{found:?}");
        let setup = EngineSetup {
            disk: Some(p.clone()),
            ..EngineSetup::default()
        };
        let e = refuse_destroying(&setup, false, false).unwrap_err();
        assert!(e.to_string().contains("--force"), "{e}");
        refuse_destroying(&setup, true, false).unwrap();
        refuse_destroying(&setup, false, true).unwrap();
    }

    #[test]
    fn a_plain_file_with_a_file_system_is_refused_for_banded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plain");
        let mut b = vec![0u8; 1 << 20];
        b[1024 + 56] = 0x53;
        b[1024 + 57] = 0xEF;
        std::fs::write(&p, &b).unwrap();
        let found = holds(&p, Storage::Banded(1 << 20)).unwrap();
        assert_eq!(found, vec![Found::Ext4]);
        let zeros = dir.path().join("zeros");
        std::fs::write(&zeros, vec![0u8; 1 << 20]).unwrap();
        assert!(holds(&zeros, Storage::Banded(1 << 20)).unwrap().is_empty());
        assert!(holds(&dir.path().join("missing"), Storage::Image)
            .unwrap()
            .is_empty());
    }
}
