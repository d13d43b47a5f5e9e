//! Typed errors of the device layer.

use crate::slots::NoValidSlot;
use std::io;
use tegula_codec::FormatError;

/// Everything a device operation can fail with. Each variant names what and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// A sequential-write-required zone was written away from its write pointer.
    #[error("unaligned write to zone {zone}: write pointer is at LBA {write_pointer}, write at LBA {lba}")]
    UnalignedWrite {
        /// Zone index.
        zone: u32,
        /// Current write pointer of the zone.
        write_pointer: u64,
        /// LBA the write asked for.
        lba: u64,
    },
    /// A write would cross the end of a sequential zone.
    #[error("write at LBA {lba} of {sectors} sectors crosses the end of zone {zone} (ends at LBA {zone_end}; write pointer {write_pointer})")]
    ZoneBoundary {
        /// Zone index.
        zone: u32,
        /// First LBA of the write.
        lba: u64,
        /// Length of the write in sectors.
        sectors: u64,
        /// First LBA after the zone.
        zone_end: u64,
        /// Current write pointer of the zone.
        write_pointer: u64,
    },
    /// A write targeted a full zone.
    #[error("zone {zone} is full (write pointer {write_pointer}); write at LBA {lba} refused")]
    ZoneFull {
        /// Zone index.
        zone: u32,
        /// Write pointer (the zone end).
        write_pointer: u64,
        /// LBA the write asked for.
        lba: u64,
    },
    /// A read of a sequential zone went past its write pointer on a device without unrestricted reads.
    #[error("read at LBA {lba} of {sectors} sectors goes past the write pointer of zone {zone} (LBA {write_pointer})")]
    ReadPastWritePointer {
        /// Zone index.
        zone: u32,
        /// Write pointer of the zone.
        write_pointer: u64,
        /// First LBA of the read.
        lba: u64,
        /// Length of the read in sectors.
        sectors: u64,
    },
    /// The zone is read-only: writes and zone management fail.
    #[error("zone {zone} is read-only")]
    ZoneReadOnly {
        /// Zone index.
        zone: u32,
    },
    /// The zone is offline: every access fails.
    #[error("zone {zone} is offline")]
    ZoneOffline {
        /// Zone index.
        zone: u32,
    },
    /// Opening one more zone would exceed the device's max-open-zones limit and no implicitly
    /// open zone can be closed to make room.
    #[error("insufficient zone resources: {open} zones are explicitly open (max open zones {max_open}); cannot open zone {zone}")]
    TooManyOpenZones {
        /// Zone that could not be opened.
        zone: u32,
        /// Zones open now.
        open: u32,
        /// The limit.
        max_open: u32,
    },
    /// Opening one more zone would exceed the device's active-zone limit (open plus closed
    /// zones, NVMe ZNS's "max active resources"): a zone must be finished or reset first.
    #[error("too many active zones: {active} zones are open or closed (max active zones {max_active}); cannot open zone {zone} until one is finished or reset")]
    TooManyActiveZones {
        /// Zone that could not be opened.
        zone: u32,
        /// Zones open or closed now.
        active: u32,
        /// The limit.
        max_active: u32,
    },
    /// A zone operation does not apply to this zone (e.g. reset of a conventional zone).
    #[error("cannot {op} zone {zone}: zone is {condition}")]
    InvalidZoneOp {
        /// Zone index.
        zone: u32,
        /// The operation.
        op: &'static str,
        /// The zone's condition or type that forbids it.
        condition: String,
    },
    /// A zone index past the last zone.
    #[error("no zone {zone}: the device has {zones} zones")]
    NoSuchZone {
        /// Requested zone.
        zone: u64,
        /// Number of zones.
        zones: u32,
    },
    /// An access past the device's capacity.
    #[error("LBA range {lba}..{end} is outside the device (capacity {capacity} sectors)", end = lba.saturating_add(*sectors))]
    OutOfRange {
        /// First LBA.
        lba: u64,
        /// Length in sectors.
        sectors: u64,
        /// Capacity in sectors.
        capacity: u64,
    },
    /// A buffer whose length is zero or not a whole number of sectors.
    #[error("buffer of {len} bytes is not a positive multiple of the {sector_size}-byte sector")]
    BadLength {
        /// Buffer length in bytes.
        len: usize,
        /// Sector size in bytes.
        sector_size: u32,
    },
    /// A sector could not be read: destroyed by a shingled write, or an injected media error.
    #[error("unrecoverable read error at LBA {lba}: {cause}")]
    MediaError {
        /// First unreadable LBA of the request.
        lba: u64,
        /// Why the sector is unreadable.
        cause: MediaErrorCause,
    },
    /// The device lost power; it refuses every command until it is powered on again.
    #[error("device has lost power")]
    PowerLoss,
    /// The device refuses writes after an earlier failure to persist its state.
    #[error("device is read-only after an earlier failure: {0}")]
    Poisoned(String),
    /// A read-only handle was asked to write.
    #[error("device was opened read-only")]
    ReadOnlyHandle,
    /// A thin-provisioned device has no media left for the data written to a zone (see
    /// [`crate::api::ZoneSpace`]); nothing of that data was placed.
    #[error("no space: {0}")]
    NoSpace(String),
    /// The operation is not supported by this device (e.g. zone management on a block-only drive).
    #[error("{0} is not supported by this device")]
    Unsupported(&'static str),
    /// A configuration value is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A structure the device layer keeps on another device is damaged below its write
    /// pointer (not a torn tail): the device refuses to open rather than serve older data.
    #[error("corrupt {what} at LBA {lba}: {problem}")]
    Corrupt {
        /// The structure.
        what: &'static str,
        /// Where (an LBA of the device holding it).
        lba: u64,
        /// What is wrong.
        problem: String,
        /// The decoder's error, where the structure did not decode (its text ends `problem`).
        #[source]
        cause: Option<FormatError>,
    },
    /// A disk image is truncated, foreign, of an unknown version, or corrupt.
    #[error("disk image {path}: {problem}")]
    Image {
        /// Path of the image.
        path: String,
        /// What is wrong, with the offset where it applies.
        #[source]
        problem: ImageProblem,
    },
    /// Another process holds the image (or backing file) locked: writing it from two
    /// processes at once would lose data.
    #[error("{path} is in use by {holder}; wait for it to finish or stop it")]
    Locked {
        /// The locked file.
        path: String,
        /// Who holds it ("process 123 (tegula fs mount fs.img /mnt)" where it can be found).
        holder: String,
    },
    /// An I/O error of the host file or device backing the emulated disk.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// What is wrong with an image, or with a file the device layer keeps its metadata in (the
/// problem of [`DeviceError::Image`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageProblem {
    /// A structure did not decode: its frame, header, a field, or a value its format rules out.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// A named structure of the image (its descriptor) did not decode.
    #[error("{what}: {source}")]
    Structure {
        /// The structure.
        what: &'static str,
        /// Why it did not decode.
        #[source]
        source: FormatError,
    },
    /// Neither state slot holds a valid state; names both problems.
    #[error(transparent)]
    Slots(Box<NoValidSlot<ImageProblem>>),
    /// Reading back what a state record lists failed.
    #[error("{doing}: {source}")]
    Io {
        /// What was being read.
        doing: String,
        /// The host's error.
        #[source]
        source: io::Error,
    },
    /// The file disagrees with itself or with what was asked (a size, a zone count), worded
    /// for a person with the offset at fault.
    #[error("{0}")]
    Invalid(String),
}

impl From<NoValidSlot<ImageProblem>> for ImageProblem {
    fn from(e: NoValidSlot<ImageProblem>) -> Self {
        ImageProblem::Slots(Box::new(e))
    }
}

impl From<String> for ImageProblem {
    fn from(s: String) -> Self {
        ImageProblem::Invalid(s)
    }
}

impl From<&str> for ImageProblem {
    fn from(s: &str) -> Self {
        ImageProblem::Invalid(s.into())
    }
}

/// Why a sector reads back as a media error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaErrorCause {
    /// Overwritten by a shingled write to an earlier track of its band.
    ShingleDamage,
    /// A top track destroyed by a write to a neighbouring bottom track (interlaced media).
    InterlaceDamage,
    /// Injected by the fault plan.
    Injected,
}

impl std::fmt::Display for MediaErrorCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MediaErrorCause::ShingleDamage => {
                "sector destroyed by a shingled write to a preceding track"
            }
            MediaErrorCause::InterlaceDamage => {
                "top-track sector destroyed by a write to a neighbouring bottom track"
            }
            MediaErrorCause::Injected => "injected media error",
        })
    }
}

impl DeviceError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        DeviceError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Result alias of the device layer.
pub type Result<T, E = DeviceError> = std::result::Result<T, E>;
