//! Where an engine keeps its data: [`Target`].

use crate::storage_label::StorageLabel;
use std::path::{Path, PathBuf};
use tegula_device::DiskConfig;

/// Where an engine keeps its data.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A fresh in-memory emulated drive of this configuration (SMRDB).
    Emulated(DiskConfig),
    /// A disk image file (SMRDB); created with the given configuration if it does not exist.
    Image(PathBuf, Option<DiskConfig>),
    /// A plain file banded like host-managed SMR (SMRDB): zones of `zone_size` bytes, the
    /// file created (sparse) or grown to `capacity` bytes.
    Banded {
        /// The file; its write pointers go to `PATH.zones`.
        path: PathBuf,
        /// Zone (band) size in bytes.
        zone_size: u64,
        /// Size of the file.
        capacity: u64,
        /// A directory of one file per zone ([`tegula_device::ZoneFiles`]) instead of one
        /// banded file.
        zone_files: bool,
    },
    /// A Linux zoned block device (SMRDB): a host-managed SMR drive, a ZNS namespace; fresh
    /// means every zone reset.
    Zoned(PathBuf),
    /// A directory on the host file system (RocksDB, LevelDB); `None` means a temporary one.
    Dir(Option<PathBuf>),
    /// Nothing: the in-memory reference engine.
    Memory,
}

impl Target {
    /// What data on this target lives on.
    pub fn storage(&self) -> StorageLabel {
        match self {
            Target::Emulated(_) | Target::Memory => StorageLabel::Memory,
            Target::Image(..) => StorageLabel::Image,
            Target::Banded {
                zone_files: false, ..
            } => StorageLabel::Banded,
            Target::Banded {
                zone_files: true, ..
            } => StorageLabel::ZoneFiles,
            Target::Zoned(_) => StorageLabel::ZonedDevice,
            Target::Dir(_) => StorageLabel::Dir,
        }
    }

    /// The file or directory the target writes, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Target::Image(p, _)
            | Target::Banded { path: p, .. }
            | Target::Zoned(p)
            | Target::Dir(Some(p)) => Some(p),
            _ => None,
        }
    }
}
