//! Drive-managed SMR (seed 004, Skylight): the latency signatures of the emulated translation
//! layers (`tegula bench paper stl-signatures`, [`signatures`]) and how fast the emulator runs
//! them (`tegula bench paper stl-speed`, [`speed`]). Both read drive configurations
//! (`configs/dm-smr/*.toml`) and report modelled device time; the speed also wall time.

pub mod signatures;
pub mod speed;

use crate::error::{Error, Result};
use std::path::Path;
use tegula_stl::{DmConfig, DmDrive};

/// The default drive: Skylight's Seagate ST5000AS0011, metadata only.
pub const DEFAULT_CONFIG: &str = "configs/dm-smr/seagate-5tb.toml";

/// Reads a drive configuration file.
pub(crate) fn read_config(path: &Path) -> Result<DmConfig> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    DmConfig::from_toml(&text).map_err(|e| Error::invalid(format!("{}: {e}", path.display())))
}

/// A drive-managed drive of `cfg`, in memory.
pub(crate) fn new_drive(cfg: &DmConfig) -> Result<DmDrive> {
    DmDrive::new(cfg.clone()).map_err(|e| Error::engine("creating the drive-managed drive", e))
}

/// The drive's name: the configuration's file name without `.toml`.
pub(crate) fn drive_name(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}
