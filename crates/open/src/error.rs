//! Typed errors of the opener.
//!
//! A refusal (the path holds something the spec cannot use, or a flag does not apply to it)
//! is its own variant with a message for a person; a failure of the layer below keeps that
//! layer's error as its [`std::error::Error::source`], and its text is part of the message
//! (`opening d.img as a banded device: …`).

use tegula_device::DeviceError;
use tegula_stl::StlError;

/// Everything opening (or closing) a device through this crate can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The device layer failed, and its message names the device already.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// A drive-managed SMR drive failed (closing it).
    #[error(transparent)]
    Stl(#[from] StlError),
    /// A drive-managed IMR drive failed (closing it).
    #[error(transparent)]
    DmImr(#[from] tegula_dmimr::Error),
    /// The device layer failed while doing `what` (`opening d.img as a banded device`).
    #[error("{what}: {source}")]
    DeviceAt {
        /// What was being done, naming the path.
        what: String,
        /// The device layer's error.
        #[source]
        source: DeviceError,
    },
    /// A drive-managed SMR image or configuration could not be opened or built.
    #[error("{what}: {source}")]
    StlAt {
        /// What was being done, naming the path.
        what: String,
        /// The translation layer's error.
        #[source]
        source: StlError,
    },
    /// A KVIMR store failed (closing it).
    #[error(transparent)]
    Kvimr(#[from] tegula_kvimr::Error),
    /// The KVIMR store of an interlaced image could not be formatted, opened or closed.
    #[error("{what}: {source}")]
    KvimrAt {
        /// What was being done, naming the path where known.
        what: String,
        /// The store's error.
        #[source]
        source: tegula_kvimr::Error,
    },
    /// The drive-managed IMR layer of an interlaced image could not be opened.
    #[error("{what}: {source}")]
    DmImrAt {
        /// What was being done, naming the path.
        what: String,
        /// The drive-managed IMR layer's error.
        #[source]
        source: tegula_dmimr::Error,
    },
    /// A file of the host could not be read or removed (a configuration, a device removed to
    /// start fresh).
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the path.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The path does not exist; `hint` says how to make one (may be empty).
    #[error("{path} does not exist{hint}")]
    Missing {
        /// The path as given.
        path: String,
        /// Text after the message: how to create one, or nothing.
        hint: &'static str,
    },
    /// The path is a plain file or block device, which opens only as a banded drive; `how`
    /// says whether and how the command takes `--banded`.
    #[error(
        "{path} is not a tegula disk image (no TGLADISK or TGLADMSR header); to use a plain \
         file or block device as a banded SMR drive, {how}"
    )]
    NotAnImage {
        /// The path as given.
        path: String,
        /// How to use it banded.
        how: &'static str,
    },
    /// The path is a banded plain file (it has a `.zones` file) opened without `--banded`.
    #[error("{path} is a banded plain file (it has a .zones file): {how}")]
    BandedWithoutFlag {
        /// The path as given.
        path: String,
        /// How to use it banded.
        how: &'static str,
    },
    /// A setting of the spec does not apply to what the path is (`--banded` on a tegula
    /// image, `--capacity` on an existing image, `--paced` on a real device); the message
    /// says which and what to do.
    #[error("{0}")]
    DoesNotApply(String),
    /// The device is drive-managed: a block device without zones, asked for as a zoned one.
    #[error(
        "{path} is a drive-managed {what} drive: a block device without zones; it cannot hold \
         a zoned database or file system (serve it with `tegula serve nbd`)"
    )]
    NoZones {
        /// The path as given.
        path: String,
        /// Which kind: `SMR (dm-smr)` or `IMR (dm-imr)`.
        what: &'static str,
    },
    /// A fault of the opener itself (a probe kept the drive it was given); a bug to report.
    #[error("{0}")]
    Internal(String),
}

/// Result alias of the opener.
pub type Result<T, E = OpenError> = std::result::Result<T, E>;
