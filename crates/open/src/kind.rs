//! What a path names, before anything is opened: [`kind_of`].

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use tegula_device::zbd::{zoned_model_of, ZonedModel};
use tegula_device::ZoneFiles;

/// What a path names, before it is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// A tegula disk image (`TGLADISK`): a zoned (or conventional) emulated drive.
    ZonedImage,
    /// A drive-managed SMR image (`TGLADMSR`): a block device behind a translation layer.
    DmImage,
    /// A TOML drive configuration: a drive built in memory; nothing persists.
    Config,
    /// A directory holding a zone-files device (its `zones` descriptor).
    ZoneFiles,
    /// A Linux zoned block device (`queue/zoned` is host-managed or host-aware): a real
    /// HM-SMR drive, a ZNS namespace, a zoned null_blk.
    ZonedBlock,
    /// Anything else: a plain file or block device (zoned only with `--banded`), or nothing.
    Plain,
}

/// Classifies `path` by its magic bytes (or a `.toml` extension, a zone-files descriptor, a
/// block device's sysfs `queue/zoned`).
pub fn kind_of(path: &Path) -> PathKind {
    if matches!(
        zoned_model_of(path),
        Some(ZonedModel::HostManaged | ZonedModel::HostAware)
    ) {
        return PathKind::ZonedBlock;
    }
    if path.is_dir() && ZoneFiles::is_device(path) {
        return PathKind::ZoneFiles;
    }
    if path.extension().is_some_and(|e| e == "toml") {
        return PathKind::Config;
    }
    match magic(path) {
        Some(m) if m == tegula_stl::image::DM_MAGIC => PathKind::DmImage,
        Some(m) if m == tegula_device::image::IMAGE_MAGIC => PathKind::ZonedImage,
        _ => PathKind::Plain,
    }
}

/// The first 8 bytes of the file at `path`, if it can be read and has that many.
pub fn magic(path: &Path) -> Option<[u8; 8]> {
    let f = File::open(path).ok()?;
    let mut m = [0u8; 8];
    f.read_exact_at(&mut m, 0).ok()?;
    Some(m)
}
