//! What [`crate::open`] gives back: the device by what it is ([`Opened`]), and what the
//! caller should tell its user about the open ([`Opening`]).

use crate::error::{OpenError, Result};
use crate::kvimr::KvimrDrive;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk, HostBanded, Nanos, Zbd, ZoneFiles, ZonedDevice};
use tegula_dmimr::DmImr;
use tegula_stl::DmDrive;

/// An opened device, by what it is. Each variant holds the concrete handle so that commands
/// that need its extras (zone commands, translation-layer statistics, `close`) can have them.
// One value per command, moved once into an `Arc`: boxing the variants would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Opened {
    /// A zoned disk image or an in-memory disk from a configuration.
    Disk(Disk),
    /// A drive-managed SMR drive (image or in-memory configuration).
    Dm(DmDrive),
    /// A plain file or block device banded like SMR.
    Banded(HostBanded),
    /// A directory of one file per zone.
    ZoneFiles(ZoneFiles),
    /// A drive-managed IMR drive: an interlaced disk image formatted with
    /// `disk create --drive-managed`.
    DmImr(DmImr),
    /// A Linux zoned block device.
    Zbd(Zbd),
    /// An interlaced disk image holding a KVIMR store (`tegula db create` on an `imr`
    /// image): zoned through the store's adapter, whose zones are SSTable slots.
    Kvimr(KvimrDrive),
}

impl fmt::Debug for Opened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Opened::Disk(_) => "Disk",
            Opened::Dm(_) => "Dm",
            Opened::Banded(_) => "Banded",
            Opened::ZoneFiles(_) => "ZoneFiles",
            Opened::DmImr(_) => "DmImr",
            Opened::Zbd(_) => "Zbd",
            Opened::Kvimr(_) => "Kvimr",
        };
        write!(f, "Opened::{what}")
    }
}

impl Opened {
    /// The device behind the block interface (a KVIMR image's is its zoned view).
    pub fn block(self) -> Arc<dyn BlockDevice> {
        match self {
            Opened::Kvimr(k) => k.adapter().clone(),
            Opened::Disk(d) => Arc::new(d),
            Opened::Dm(d) => Arc::new(d),
            Opened::Banded(d) => Arc::new(d),
            Opened::ZoneFiles(d) => Arc::new(d),
            Opened::DmImr(d) => Arc::new(d),
            Opened::Zbd(d) => Arc::new(d),
        }
    }

    /// The device behind the zoned interface, or [`OpenError::NoZones`] for a drive-managed
    /// drive at `path`.
    pub fn zoned(self, path: &Path) -> Result<Arc<dyn ZonedDevice>> {
        let what = match self {
            Opened::Disk(d) => return Ok(Arc::new(d)),
            Opened::Banded(d) => return Ok(Arc::new(d)),
            Opened::ZoneFiles(d) => return Ok(Arc::new(d)),
            Opened::Zbd(d) => return Ok(Arc::new(d)),
            Opened::Kvimr(k) => return Ok(k.zoned()),
            Opened::Dm(_) => "SMR (dm-smr)",
            Opened::DmImr(_) => "IMR (dm-imr)",
        };
        Err(OpenError::NoZones {
            path: path.display().to_string(),
            what,
        })
    }

    /// The device's clock (virtual or wall time since it was opened).
    pub fn now(&self) -> Nanos {
        match self {
            Opened::Disk(d) => d.now(),
            Opened::Dm(d) => d.now(),
            Opened::Banded(d) => d.now(),
            Opened::ZoneFiles(d) => d.now(),
            Opened::DmImr(d) => d.now(),
            Opened::Zbd(d) => d.now(),
            Opened::Kvimr(k) => k.disk().now(),
        }
    }

    /// The device behind the zoned interface, borrowed, where it has zones.
    pub fn as_zoned(&self) -> Option<&dyn ZonedDevice> {
        match self {
            Opened::Disk(d) => Some(d),
            Opened::Banded(d) => Some(d),
            Opened::ZoneFiles(d) => Some(d),
            Opened::Zbd(d) => Some(d),
            Opened::Kvimr(k) => Some(&**k.adapter()),
            Opened::Dm(_) | Opened::DmImr(_) => None,
        }
    }

    /// The device behind the block interface, borrowed.
    pub fn as_block(&self) -> &dyn BlockDevice {
        match self {
            Opened::Disk(d) => d,
            Opened::Banded(d) => d,
            Opened::ZoneFiles(d) => d,
            Opened::Zbd(d) => d,
            Opened::Dm(d) => d,
            Opened::DmImr(d) => d,
            Opened::Kvimr(k) => &**k.adapter(),
        }
    }

    /// Makes everything acknowledged durable and releases the device (and its lock).
    pub fn close(self) -> Result<()> {
        match self {
            Opened::Disk(d) => d.close()?,
            Opened::Dm(d) => d.close()?,
            Opened::Banded(d) => {
                d.flush()?;
            }
            Opened::ZoneFiles(d) => {
                d.flush()?;
            }
            Opened::DmImr(d) => d.close()?,
            Opened::Zbd(d) => {
                d.flush()?;
            }
            Opened::Kvimr(k) => k.close()?,
        }
        Ok(())
    }
}

/// A problem found on open that did not stop it (a damaged state slot passed over), for the
/// caller to show; it prints as `PATH: what`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The device it concerns.
    pub path: PathBuf,
    /// What was found.
    pub text: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.text)
    }
}

/// An opened device with what the caller should tell its user about the open.
#[derive(Debug)]
pub struct Opening<D = Opened> {
    /// The device.
    pub device: D,
    /// Problems found that did not stop the open, in the order found.
    pub warnings: Vec<Warning>,
    /// With [`crate::Spec::read_past_writer`]: the process holding the device for writing
    /// (`process 42 (tegula fs mount …)`) when the open went on without waiting for it; what
    /// the device shows is then as of that process's last flush.
    pub held_by: Option<String>,
}

impl<D> Opening<D> {
    /// An opening of `device` with nothing to tell.
    pub fn new(device: D) -> Self {
        Opening {
            device,
            warnings: Vec::new(),
            held_by: None,
        }
    }

    /// The same opening of what `f` makes of the device.
    pub fn map<E>(self, f: impl FnOnce(D) -> E) -> Opening<E> {
        Opening {
            device: f(self.device),
            warnings: self.warnings,
            held_by: self.held_by,
        }
    }

    /// The same opening of what `f` makes of the device, or `f`'s error.
    pub fn try_map<E>(self, f: impl FnOnce(D) -> Result<E>) -> Result<Opening<E>> {
        Ok(Opening {
            device: f(self.device)?,
            warnings: self.warnings,
            held_by: self.held_by,
        })
    }
}
