//! Drive-managed SMR (seed 004, Skylight): the latency signatures of the emulated translation
//! layers (`tegula bench paper stl-signatures`, [`signatures`]) and how fast the emulator runs
//! them (`tegula bench paper stl-speed`, [`speed`]). Both take drives by built-in profile name
//! (`seagate-5tb`, `emulated-smr-1`, ...: `crates/stl/profiles/`) or TOML file, and report
//! modelled device time; the speed also wall time.

pub mod signatures;
pub mod speed;

use crate::error::{Error, Result};
use std::path::Path;
use tegula_stl::{DmConfig, DmDrive};

/// The default drive: Skylight's Seagate ST5000AS0011, metadata only (a built-in profile).
pub const DEFAULT_CONFIG: &str = "seagate-5tb";

/// Reads a drive configuration: a built-in drive-managed profile's name, or a TOML file.
pub(crate) fn read_config(path: &Path) -> Result<DmConfig> {
    let builtin = path
        .to_str()
        .and_then(tegula_stl::profiles::dm_profile_toml)
        .filter(|_| !path.exists());
    let text = match builtin {
        Some(t) => t.to_string(),
        None => std::fs::read_to_string(path).map_err(|e| {
            Error::io(
                format!(
                    "reading {} (neither a file nor a built-in profile: {})",
                    path.display(),
                    tegula_stl::DM_PROFILES
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                e,
            )
        })?,
    };
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
