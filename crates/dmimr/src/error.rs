//! Typed errors of the drive-managed IMR layer (formatting and opening; the block interface
//! reports the device layer's errors).

use tegula_codec::FormatError;
use tegula_device::DeviceError;

/// Everything formatting or opening a drive-managed IMR drive can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The raw drive failed (a media error, a power loss, a range error).
    #[error("device: {0}")]
    Device(#[from] DeviceError),
    /// The raw drive is not interlaced (kind `imr`), or the options do not fit it.
    #[error("invalid: {0}")]
    Invalid(String),
    /// The safe-region layout shared with KVIMR refused the drive or the options.
    #[error("invalid: {0}")]
    Layout(#[source] tegula_kvimr::Error),
    /// The drive holds no drive-managed IMR superblock (format it first).
    #[error("no drive-managed IMR superblock on the drive (create it with `tegula disk create --profile imr --drive-managed`)")]
    NotFormatted,
    /// An on-media structure (superblock, metadata record) does not decode.
    #[error("corrupt {what}: {source}")]
    Malformed {
        /// Which structure.
        what: &'static str,
        /// Why it does not decode.
        #[source]
        source: FormatError,
    },
    /// On-media metadata (superblock, metadata slots, staging records) is damaged.
    #[error("corrupt {what}: {problem}")]
    Corruption {
        /// Which structure.
        what: &'static str,
        /// What is wrong with it.
        problem: String,
    },
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

impl From<tegula_kvimr::Error> for Error {
    fn from(e: tegula_kvimr::Error) -> Self {
        match e {
            tegula_kvimr::Error::Device(d) => Error::Device(d),
            other => Error::Layout(other),
        }
    }
}

impl From<Error> for DeviceError {
    fn from(e: Error) -> Self {
        match e {
            Error::Device(d) => d,
            other => DeviceError::Poisoned(other.to_string()),
        }
    }
}

/// Result alias of the layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;
