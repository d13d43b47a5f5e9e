//! tegula's device layer: emulated disks with a mechanical timing model on a virtual clock,
//! T10 ZBC / T13 ZAC zones, shingled media physics, a volatile write cache, disk images, and
//! deterministic fault injection. Every other tegula component stands on [`BlockDevice`] and
//! [`ZonedDevice`].
//!
//! ```
//! use tegula_device::{profile, Disk, BlockDevice, ZonedDevice, ZoneFilter};
//! let mut cfg = profile("hm-smr").unwrap();
//! cfg.capacity = 1 << 30;
//! let disk = Disk::in_memory(cfg).unwrap();
//! let zone = disk.report_zones(ZoneFilter::All)[2].clone();
//! let done = disk.write(zone.start_lba, &vec![7u8; 4096]).unwrap();
//! assert!(done.service() > 0);
//! ```

pub mod api;
pub mod banded;
pub mod cache;
pub mod config;
pub mod conformance;
pub mod convzones;
pub mod disk;
pub mod error;
mod forward;
pub mod geometry;
pub mod hostfile;
pub mod image;
pub mod imagefile;
pub mod interlace;
pub mod lock;
pub mod mechanics;
pub mod media;
pub mod ranges;
mod readmap;
pub mod seek;
pub mod shingle;
pub mod slots;
pub mod stats;
pub mod store;
pub mod units;
pub mod zbd;
pub mod zone;
pub mod zonefiles;

pub use api::{BlockDevice, DeviceInfo, WriteFlags, ZoneHint, ZoneSpace, ZoneTarget, ZonedDevice};
pub use banded::Banded;
pub use config::{profile, DiskConfig, DriveKind, InterlaceParams, Span, PROFILES};
pub use convzones::ConvZones;
pub use disk::{Disk, OpenOptions};
pub use error::{DeviceError, ImageProblem, MediaErrorCause, Result};
pub use hostfile::{HostBanded, HostBandedOptions};
pub use interlace::{TrackInfo, TrackKind, TrackLayout};
pub use media::{ClockMode, Completion, IoDone, Media, MediaEvent, PowerOnReport, Request};
pub use ranges::RangeSet;
pub use stats::Stats;
pub use units::{format_size, parse_size, Nanos, SizeError, MS, SEC};
pub use zbd::{Zbd, ZbdOptions};
pub use zone::{ConditionParseError, Zone, ZoneAction, ZoneCondition, ZoneFilter, ZoneType};
pub use zonefiles::{ZoneFiles, ZoneFilesOptions};
