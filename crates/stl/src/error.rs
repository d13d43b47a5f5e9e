//! Typed errors of the translation layers.

use tegula_device::DeviceError;

/// What building or running a drive-managed SMR drive can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StlError {
    /// A configuration value is invalid.
    #[error("invalid dm-smr configuration: {0}")]
    Config(String),
    /// The media cannot hold the requested capacity plus the cache and metadata regions.
    #[error("layout: {0}")]
    Layout(String),
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
            StlError::Config(m) | StlError::Layout(m) => DeviceError::Config(m),
        }
    }
}
