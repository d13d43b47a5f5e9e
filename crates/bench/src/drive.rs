//! Emulated drives for the engines: which profiles SMRDB can run on, and how a conventional
//! drive is banded for it the way the SMRDB paper used its HDD.

use crate::error::{Error, Result};
use tegula_device::{DiskConfig, DriveKind};

/// Conventional zones of a banded conventional drive: SMRDB keeps only a superblock and the
/// band manifest there, so a handful suffice.
pub const BANDED_CONVENTIONAL_ZONES: u32 = 4;

/// Makes `cfg` a drive SMRDB can run on. A conventional drive (`cmr-7200`) is banded as the
/// SMRDB paper banded its HDD: the same media and mechanics, zones of the configured zone
/// size, the first [`BANDED_CONVENTIONAL_ZONES`] conventional and the rest
/// sequential-write-required, nothing shingled. Zoned drives are left as they are; raw
/// shingled media without zones (`smr-5900`) is refused with what to use instead.
pub fn zoned_for_smrdb(cfg: &mut DiskConfig, profile_name: &str) -> Result<()> {
    match cfg.kind {
        DriveKind::Cmr => {
            cfg.kind = DriveKind::HmSmr;
            cfg.shingle.overlap_tracks = 1;
            cfg.zones.conventional_zones = Some(BANDED_CONVENTIONAL_ZONES);
            Ok(())
        }
        DriveKind::SmrRaw => Err(Error::invalid(format!(
            "profile {profile_name} is raw shingled media without zones (the media under a \
             drive-managed drive); SMRDB needs zones: use a zoned profile (hm-smr, ha-smr) or a \
             conventional one (cmr-7200), which the harness bands into zones of its zone size"
        ))),
        DriveKind::HmSmr | DriveKind::HaSmr => Ok(()),
        DriveKind::Imr => Err(Error::invalid(format!(
            "profile {profile_name} is interlaced media (IMR) managed at track level; SMRDB \
             runs on it through the KVIMR middleware: use `tegula bench paper kvimr`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tegula_device::profile;

    #[test]
    fn a_conventional_drive_is_banded_and_raw_media_refused() {
        let mut c = profile("cmr-7200").expect("profile");
        zoned_for_smrdb(&mut c, "cmr-7200").expect("banded");
        c.capacity = 16 << 30;
        c.validate().expect("valid");
        assert_eq!(c.conventional_zones(), BANDED_CONVENTIONAL_ZONES);
        assert!(c.zone_count() > BANDED_CONVENTIONAL_ZONES + 6);
        let mut h = profile("hm-smr").expect("profile");
        let before = h.clone();
        zoned_for_smrdb(&mut h, "hm-smr").expect("zoned");
        assert_eq!(h, before);
        let mut r = profile("smr-5900").expect("profile");
        let e = zoned_for_smrdb(&mut r, "smr-5900").expect_err("raw media");
        assert!(e.to_string().contains("hm-smr"), "{e}");
    }
}
