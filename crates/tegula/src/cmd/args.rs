//! Argument groups several command families share.

use crate::device::{Access, Spec};
use anyhow::Result;
use clap::Args;
use std::path::Path;
use tegula_device::parse_size;

/// `--banded` and `--capacity`: use a plain file or block device as a banded SMR drive.
#[derive(Debug, Clone, Default, Args)]
pub struct BandedArgs {
    /// Use IMAGE as a plain file or block device banded like a host-managed SMR drive, with
    /// bands (zones) of this size; the host keeps the write pointers in two slots after the
    /// last zone and the layout in `IMAGE.zones` (docs/formats/host-banded.md). Give it on
    /// every command. Without it IMAGE is a tegula disk image.
    #[arg(long, global = true, value_name = "ZONE_SIZE")]
    pub banded: Option<String>,
    /// Make IMAGE a directory with one file per zone of this size (each a banded file of one
    /// zone: a flush can be scoped to zones, docs/formats/zone-files.md) when it holds no such
    /// device yet; needs --capacity. An existing zone-files directory opens without it.
    #[arg(
        long = "zone-files",
        global = true,
        value_name = "ZONE_SIZE",
        conflicts_with = "banded"
    )]
    pub zone_files: Option<String>,
    /// With --banded or --zone-files, for a new device: this many bytes of zones (a plain
    /// file is created or grown to hold them and the state slots after them); default, for
    /// --banded, as many zones as fit the file or device. An existing device keeps the
    /// capacity it was created with.
    #[arg(long, global = true, value_name = "SIZE")]
    pub capacity: Option<String>,
}

impl BandedArgs {
    /// The device spec of `path` with these flags.
    pub fn spec(&self, path: &Path, access: Access) -> Result<Spec> {
        let mut spec = Spec::new(path, access);
        spec.offers_banded = true;
        spec.banded = size_flag("--banded", self.banded.as_deref())?;
        spec.zone_files = size_flag("--zone-files", self.zone_files.as_deref())?;
        spec.capacity = size_flag("--capacity", self.capacity.as_deref())?;
        Ok(spec)
    }
}

/// Parses an optional size flag such as `16MiB`, naming the flag in the error.
pub fn size_flag(flag: &str, v: Option<&str>) -> Result<Option<u64>> {
    v.map(|s| parse_size(s).map_err(|e| anyhow::anyhow!("{flag} {s:?}: {e}")))
        .transpose()
}
