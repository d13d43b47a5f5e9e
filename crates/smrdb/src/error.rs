//! Typed errors of the engine.

use crate::options::Mode;
use tegula_codec::FormatError;
use tegula_device::DeviceError;

/// Everything a database operation can fail with. Each variant names what and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No free band is left for the write (the database stays readable).
    #[error("no space: {0}")]
    NoSpace(String),
    /// A checksum or structural check failed.
    #[error("corruption in band at zone {zone}, byte offset {offset}: {what}")]
    Corruption {
        /// Zone (band) holding the bad bytes.
        zone: u32,
        /// Byte offset inside the zone.
        offset: u64,
        /// What is wrong.
        what: String,
        /// The decoder's error, where a structure failed to decode (a log chunk's frame or
        /// record).
        #[source]
        cause: Option<FormatError>,
    },
    /// A band structure, a manifest copy or the superblock does not decode.
    #[error("corruption in band at zone {zone}, byte offset {offset}: {source}")]
    Malformed {
        /// Zone (band) holding the bad bytes.
        zone: u32,
        /// Byte offset inside the zone.
        offset: u64,
        /// Why the bytes do not decode.
        #[source]
        source: FormatError,
    },
    /// The device failed.
    #[error("device: {0}")]
    Device(#[from] DeviceError),
    /// An argument is out of range (key too long, value too large, bad option).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The database was closed, or refuses writes after an earlier I/O failure.
    #[error("database is closed: {0}")]
    Closed(String),
    /// The device does not suit the engine (no conventional zone, no sequential zones, …).
    #[error("unsupported device: {0}")]
    Unsupported(String),
    /// [`crate::Db::open`] found no database on the device (it wrote nothing); says why.
    #[error("no SMRDB database on the device: {0}")]
    NotFound(String),
    /// [`crate::Db::create`] found a database on the device already and left it untouched.
    #[error("the device already holds an SMRDB-{mode:?} database")]
    AlreadyExists {
        /// Organisation of the database that is there.
        mode: Mode,
    },
}

impl Error {
    /// A corruption error.
    pub fn corruption(zone: u32, offset: u64, what: impl Into<String>) -> Self {
        Error::Corruption {
            zone,
            offset,
            what: what.into(),
            cause: None,
        }
    }

    /// A corruption error whose cause is a structure that did not decode.
    pub fn corruption_from(
        zone: u32,
        offset: u64,
        what: impl Into<String>,
        cause: FormatError,
    ) -> Self {
        Error::Corruption {
            zone,
            offset,
            what: what.into(),
            cause: Some(cause),
        }
    }

    /// A [`Error::Malformed`] of the bytes at `offset` of zone `zone`.
    pub fn malformed(zone: u32, offset: u64, source: FormatError) -> Self {
        Error::Malformed {
            zone,
            offset,
            source,
        }
    }

    /// Whether the error is corruption: a checksum or structural check failed
    /// ([`Error::Corruption`], [`Error::Malformed`]).
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. } | Error::Malformed { .. })
    }

    /// Whether the error is a power loss reported by the device (crash tests use it).
    pub fn is_power_loss(&self) -> bool {
        matches!(self, Error::Device(DeviceError::PowerLoss))
            || matches!(self, Error::Closed(m) if m.contains("lost power"))
    }
}

/// Result alias of the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;
