//! Helpers shared by the device layer's integration tests: tiny drives and sector patterns.
#![allow(dead_code, clippy::unwrap_used)]

use tegula_device::{profile, DeviceError, Disk, DiskConfig};

/// Sector size of every built-in profile.
pub const SS: usize = 4096;

/// A tiny host-managed drive: 1 MiB zones (256 sectors), `capacity_mib` MiB, one conventional
/// zone, `max_open` open zones, write cache on.
pub fn tiny_hm_config(capacity_mib: u64, max_open: u32) -> DiskConfig {
    let mut c = profile("hm-smr").unwrap();
    c.set("capacity", &format!("\"{capacity_mib}MiB\""))
        .unwrap();
    c.set("zones.zone_size", "\"1MiB\"").unwrap();
    c.zones.max_open = max_open;
    c.cache.size = 256 << 10;
    c
}

/// A tiny host-managed drive in memory.
pub fn tiny_hm(capacity_mib: u64, max_open: u32) -> Disk {
    Disk::in_memory(tiny_hm_config(capacity_mib, max_open)).unwrap()
}

/// `sectors` sectors whose bytes identify `(lba, tag)`: every sector starts with its LBA and
/// the tag, then a fill byte derived from both.
pub fn pattern(lba: u64, sectors: u64, tag: u32) -> Vec<u8> {
    let mut v = vec![0u8; sectors as usize * SS];
    for i in 0..sectors {
        let s = &mut v[i as usize * SS..(i as usize + 1) * SS];
        sector_into(lba + i, tag, s);
    }
    v
}

/// Fills one sector with the pattern of `(lba, tag)`.
pub fn sector_into(lba: u64, tag: u32, s: &mut [u8]) {
    let fill = (lba as u8) ^ (tag as u8) ^ 0x5a;
    s.fill(fill);
    s[..8].copy_from_slice(&lba.to_le_bytes());
    s[8..12].copy_from_slice(&tag.to_le_bytes());
}

/// The tag of a sector written by [`pattern`], checking its LBA and fill; `None` for zeros.
pub fn tag_of(lba: u64, s: &[u8]) -> Option<u32> {
    if s.iter().all(|&b| b == 0) {
        return None;
    }
    let got = u64::from_le_bytes(s[..8].try_into().unwrap());
    assert_eq!(got, lba, "sector at LBA {lba} holds the data of LBA {got}");
    let tag = u32::from_le_bytes(s[8..12].try_into().unwrap());
    let mut want = vec![0u8; s.len()];
    sector_into(lba, tag, &mut want);
    assert!(
        s == &want[..],
        "sector at LBA {lba} (tag {tag}) is torn inside"
    );
    Some(tag)
}

/// A short name of an error variant, for assertions and messages.
pub fn kind(e: &DeviceError) -> &'static str {
    match e {
        DeviceError::UnalignedWrite { .. } => "UnalignedWrite",
        DeviceError::ZoneBoundary { .. } => "ZoneBoundary",
        DeviceError::ZoneFull { .. } => "ZoneFull",
        DeviceError::ReadPastWritePointer { .. } => "ReadPastWritePointer",
        DeviceError::ZoneReadOnly { .. } => "ZoneReadOnly",
        DeviceError::ZoneOffline { .. } => "ZoneOffline",
        DeviceError::TooManyOpenZones { .. } => "TooManyOpenZones",
        DeviceError::InvalidZoneOp { .. } => "InvalidZoneOp",
        DeviceError::NoSuchZone { .. } => "NoSuchZone",
        DeviceError::OutOfRange { .. } => "OutOfRange",
        DeviceError::BadLength { .. } => "BadLength",
        DeviceError::MediaError { .. } => "MediaError",
        DeviceError::PowerLoss => "PowerLoss",
        DeviceError::Poisoned(_) => "Poisoned",
        DeviceError::ReadOnlyHandle => "ReadOnlyHandle",
        DeviceError::Unsupported(_) => "Unsupported",
        DeviceError::Config(_) => "Config",
        DeviceError::Image { .. } => "Image",
        DeviceError::Io { .. } => "Io",
        DeviceError::NoSpace(_) => "NoSpace",
        _ => "other",
    }
}

/// Asserts that `r` failed with the named variant; returns the error.
#[track_caller]
pub fn expect_err<T: std::fmt::Debug>(r: Result<T, DeviceError>, want: &str) -> DeviceError {
    match r {
        Ok(v) => panic!("expected {want}, got Ok({v:?})"),
        Err(e) => {
            assert_eq!(kind(&e), want, "expected {want}, got {e}");
            e
        }
    }
}
