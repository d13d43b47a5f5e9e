//! Typed errors of the file system, each with its POSIX errno.

use tegula_device::DeviceError;
use tegula_zea::ZeaError;

/// Everything a file-system operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// No such file or directory.
    #[error("not found")]
    NotFound,
    /// The name exists already.
    #[error("already exists")]
    Exists,
    /// A directory was expected.
    #[error("not a directory")]
    NotDir,
    /// A non-directory was expected.
    #[error("is a directory")]
    IsDir,
    /// The directory is not empty.
    #[error("directory not empty")]
    NotEmpty,
    /// A name longer than 255 bytes or containing '/' or NUL.
    #[error("invalid name")]
    BadName,
    /// An invalid argument (e.g. renaming a directory into itself).
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// The device has no room for the data or the metadata.
    #[error("no space left: {0}")]
    NoSpace(String),
    /// Stored data or metadata failed its checksum; names the zone and offset.
    #[error("checksum failure: {0}")]
    Corrupt(String),
    /// The device or the allocator failed.
    #[error("I/O error: {0}")]
    Io(String),
    /// The device failed.
    #[error("I/O error: {0}")]
    Device(#[source] DeviceError),
    /// The extent allocator failed (other than a checksum, bad metadata or no space).
    #[error("I/O error: {0}")]
    Zea(#[source] ZeaError),
    /// The host failed (a FUSE mount, a directory served through).
    #[error("I/O error: {what}: {source}")]
    Host {
        /// What was being done.
        what: String,
        /// The host's error.
        #[source]
        source: std::io::Error,
    },
    /// The image does not hold this file system (or an unknown version of it).
    #[error("not a tegula file system: {0}")]
    NotFs(String),
    /// The file system refuses writes after an earlier failed write or flush.
    #[error("file system is read-only after an earlier failure: {0}")]
    Broken(String),
}

impl FsError {
    /// Whether the error is a failure below the file system or damage (logged where a request
    /// fails with it).
    pub fn is_io(&self) -> bool {
        matches!(
            self,
            FsError::Corrupt(_)
                | FsError::Io(_)
                | FsError::Device(_)
                | FsError::Zea(_)
                | FsError::Host { .. }
                | FsError::Broken(_)
        )
    }

    /// The errno a POSIX caller should see.
    pub fn errno(&self) -> i32 {
        match self {
            FsError::NotFound => libc::ENOENT,
            FsError::Exists => libc::EEXIST,
            FsError::NotDir => libc::ENOTDIR,
            FsError::IsDir => libc::EISDIR,
            FsError::NotEmpty => libc::ENOTEMPTY,
            FsError::BadName => libc::ENAMETOOLONG,
            FsError::Invalid(_) => libc::EINVAL,
            FsError::NoSpace(_) => libc::ENOSPC,
            FsError::Corrupt(_)
            | FsError::Io(_)
            | FsError::Device(_)
            | FsError::Zea(_)
            | FsError::Host { .. }
            | FsError::NotFs(_) => libc::EIO,
            FsError::Broken(_) => libc::EROFS,
        }
    }
}

impl From<DeviceError> for FsError {
    fn from(e: DeviceError) -> Self {
        FsError::Device(e)
    }
}

impl From<ZeaError> for FsError {
    fn from(e: ZeaError) -> Self {
        match e {
            ZeaError::Checksum { .. } | ZeaError::BadMeta { .. } => {
                let s = e.to_string();
                tracing::error!("{s}");
                FsError::Corrupt(s)
            }
            ZeaError::NoSpace { .. } => FsError::NoSpace(e.to_string()),
            other => FsError::Zea(other),
        }
    }
}

/// Result alias of the file system.
pub type Result<T, E = FsError> = std::result::Result<T, E>;
