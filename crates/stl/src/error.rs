//! Typed errors of the translation layers and drive images.

use tegula_codec::FormatError;
use tegula_device::{DeviceError, ImageProblem};

/// What building, opening or running a drive-managed SMR drive can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StlError {
    /// A configuration value is invalid.
    #[error("invalid dm-smr configuration: {0}")]
    Config(String),
    /// The media cannot hold the requested capacity plus the cache and metadata regions.
    #[error("layout: {0}")]
    Layout(String),
    /// The translation layer's metadata log could not be written or read.
    #[error("metadata log: {0}")]
    Meta(String),
    /// The host file or memory holding the metadata log failed.
    #[error("metadata log: {what}: {source}")]
    MetaIo {
        /// What was being done (`appending a metadata record`).
        what: &'static str,
        /// The host's error.
        #[source]
        source: std::io::Error,
    },
    /// Persistent metadata failed a check (checksum, version, bounds).
    #[error("corrupt metadata: {0}")]
    Corrupt(String),
    /// A metadata checkpoint or record passed its checksum but does not decode, or names a band
    /// or sector outside the drive.
    #[error("corrupt metadata: {what}: {source}")]
    CorruptMeta {
        /// Which checkpoint or record.
        what: String,
        /// What is wrong with it.
        #[source]
        source: FormatError,
    },
    /// The metadata log holds a damaged frame with a valid frame of its generation after it:
    /// corruption, not a torn tail. The drive refuses to open rather than replay a prefix of
    /// the log and append over the records after the damage.
    #[error(
        "corrupt metadata log: slot {slot}, byte {offset}{}: {problem}",
        image_offset.map_or(String::new(), |o| format!(" (image offset {o})"))
    )]
    LogCorrupt {
        /// Metadata slot (0 or 1).
        slot: usize,
        /// Byte offset of the damaged frame in its slot.
        offset: u64,
        /// Its byte offset in the image file, for an image.
        image_offset: Option<u64>,
        /// What is damaged, and what follows it.
        problem: String,
    },
    /// A drive image is unusable (names the file and the problem).
    #[error("drive image {path}: {problem}")]
    Image {
        /// The image file.
        path: String,
        /// What is wrong, and where.
        #[source]
        problem: ImageProblem,
    },
    /// The underlying media failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Result of translation-layer operations.
pub type Result<T> = std::result::Result<T, StlError>;

impl From<StlError> for DeviceError {
    fn from(e: StlError) -> Self {
        match e {
            StlError::Device(d) => d,
            StlError::Image { path, problem } => DeviceError::Image { path, problem },
            StlError::Config(m) | StlError::Layout(m) => DeviceError::Config(m),
            // The drive refuses further work after its metadata failed.
            other => DeviceError::Poisoned(other.to_string()),
        }
    }
}
