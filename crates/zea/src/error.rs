//! Typed errors of ZEA.

use tegula_device::DeviceError;

/// Why a sector is not a valid ZEA metadata block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// The block is shorter than the fixed header.
    #[error("block of {0} bytes is too short for metadata")]
    Short(usize),
    /// The marker is missing: this sector is not metadata.
    #[error("no metadata marker")]
    NoMarker,
    /// An unknown format version.
    #[error("unknown metadata version {0}")]
    Version(u16),
    /// The block's checksum does not match its contents.
    #[error("metadata checksum mismatch")]
    Checksum,
    /// The block records another LBA than the one it was read from.
    #[error("metadata records LBA {recorded} but was read at LBA {at}")]
    Misplaced {
        /// LBA recorded in the block.
        recorded: u64,
        /// LBA it was read from.
        at: u64,
    },
    /// The fields contradict each other.
    #[error("inconsistent metadata: {0}")]
    Layout(&'static str),
    /// The block's frame did not open for another reason than its checksum.
    #[error(transparent)]
    Frame(#[from] tegula_codec::frame::FrameError),
}

/// Everything a ZEA operation can fail with; each variant names the zone and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ZeaError {
    /// The extent and its metadata do not fit in the rest of the zone.
    #[error("zone {zone}: no space for {need} sectors ({free} free)")]
    NoSpace {
        /// Zone index.
        zone: u32,
        /// Sectors needed (data and metadata).
        need: u64,
        /// Sectors left before the zone end.
        free: u64,
    },
    /// `get` was asked for a range that is not exactly an extent ZEA placed.
    #[error("zone {zone}: LBA {lba} length {len} is not an extent placed by ZEA: {why}")]
    NotAnExtent {
        /// Zone index.
        zone: u32,
        /// Requested LBA.
        lba: u64,
        /// Requested length in bytes.
        len: u64,
        /// What did not match.
        why: String,
    },
    /// Data read back does not match the checksum in its metadata.
    #[error("zone {zone}: data checksum mismatch at LBA {lba} (byte offset {offset} in the zone)")]
    Checksum {
        /// Zone index.
        zone: u32,
        /// First LBA of the bad piece.
        lba: u64,
        /// Byte offset of that LBA from the zone start.
        offset: u64,
    },
    /// A metadata block could not be decoded.
    #[error("zone {zone}: bad metadata at LBA {lba}: {source}")]
    BadMeta {
        /// Zone index.
        zone: u32,
        /// LBA of the block.
        lba: u64,
        /// Why.
        #[source]
        source: MetaError,
    },
    /// An argument out of range (empty extent, range outside the extent, …).
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// The zone is conventional or otherwise unusable by ZEA.
    #[error("zone {zone} cannot hold ZEA extents: {why}")]
    BadZone {
        /// Zone index.
        zone: u32,
        /// Why.
        why: String,
    },
    /// An earlier write or flush failed; reopen the zone (after power-on) to continue.
    #[error("zone {zone}: allocator refuses work after an earlier write failure")]
    Broken {
        /// Zone index.
        zone: u32,
    },
    /// The device failed.
    #[error("zone {zone}: device error: {source}")]
    Device {
        /// Zone index.
        zone: u32,
        /// The device error.
        #[source]
        source: DeviceError,
    },
}

/// Result alias of ZEA.
pub type Result<T, E = ZeaError> = std::result::Result<T, E>;
