//! Why a mount did not end with a cleanly closed file system.

use crate::error::FsError;
use std::path::PathBuf;
use std::time::Duration;

/// Why an unmount (or the end of a FUSE session) did not leave the file system closed with
/// every buffer written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnmountError {
    /// Closing the file system failed: not everything was written.
    #[error(transparent)]
    Close(#[from] FsError),
    /// The FUSE session ended without closing the file system.
    #[error("the FUSE session ended abnormally")]
    Abnormal,
    /// The mount could not be unmounted; after detaching it, the file system did not close in
    /// time.
    #[error(
        "unmounting {} failed ({why}), and after detaching it the file system did not finish \
         within {timeout:?}",
        mountpoint.display()
    )]
    Detached {
        /// The mount point.
        mountpoint: PathBuf,
        /// Why the unmount failed (the system's or fusermount3's words).
        why: String,
        /// How long the close was waited for.
        timeout: Duration,
    },
    /// The file system did not finish writing its buffers in time.
    #[error("the file system did not finish writing its buffers within {timeout:?}")]
    Timeout {
        /// How long the close was waited for.
        timeout: Duration,
    },
}
