//! What an engine's data lives on ([`StorageLabel`]), as results print it.

use serde::{Deserialize, Serialize};

/// What an engine's data lived on during a result, as printed and written to JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageLabel {
    /// Process memory (an in-memory emulated drive, or the `memory` reference engine).
    Memory,
    /// A disk image file behind the drive emulator.
    Image,
    /// A banded plain file, no emulator.
    Banded,
    /// A directory of one file per zone, no emulator.
    #[serde(rename = "zone-files")]
    ZoneFiles,
    /// A Linux zoned block device, no emulator.
    #[serde(rename = "zoned-device")]
    ZonedDevice,
    /// A database directory of the host file system (RocksDB, LevelDB).
    Dir,
}

impl StorageLabel {
    /// `memory`, `image`, `banded`, `zone-files`, `zoned-device` or `dir`.
    pub fn name(self) -> &'static str {
        match self {
            StorageLabel::Memory => "memory",
            StorageLabel::Image => "image",
            StorageLabel::Banded => "banded",
            StorageLabel::ZoneFiles => "zone-files",
            StorageLabel::ZonedDevice => "zoned-device",
            StorageLabel::Dir => "dir",
        }
    }
}
