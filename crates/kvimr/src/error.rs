//! Typed errors of the middleware.

use tegula_codec::FormatError;
use tegula_device::DeviceError;

/// Everything a middleware operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The device failed (a media error, a power loss, a range error).
    #[error("device: {0}")]
    Device(#[from] DeviceError),
    /// No free track (or safe slot) is left for the data; deleting files frees space.
    #[error("no space: {0}")]
    NoSpace(String),
    /// On-media metadata (superblock, map, staging record) is damaged or inconsistent.
    #[error("corrupt {what}: {problem}")]
    Corruption {
        /// Which structure.
        what: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// An on-media structure (superblock, map, staging record) does not decode.
    #[error("corrupt {what}: {source}")]
    Malformed {
        /// Which structure.
        what: &'static str,
        /// Why it does not decode.
        #[source]
        source: FormatError,
    },
    /// The device holds no KVIMR superblock (format it first).
    #[error("no KVIMR superblock on the device (format it first)")]
    NotFormatted,
    /// A file id that does not exist.
    #[error("no file {0}")]
    NoSuchFile(u64),
    /// A call that does not fit the file or the device: a read past the end, an append to a
    /// sealed file, a device that is not interlaced, options out of range.
    #[error("invalid: {0}")]
    Invalid(String),
    /// A previous write failed: the handle refuses further writes (reopen to recover).
    #[error("refusing writes after an earlier failure: {0}")]
    Poisoned(String),
}

impl Error {
    /// A [`Error::Corruption`] of `what`.
    pub fn corrupt(what: &'static str, problem: impl Into<String>) -> Self {
        Error::Corruption {
            what,
            problem: problem.into(),
        }
    }
}

/// Result alias of the middleware.
pub type Result<T, E = Error> = std::result::Result<T, E>;
