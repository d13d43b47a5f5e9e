//! Typed errors of the engine layer.
//!
//! The variants keep the caller's mistakes ([`Error::InvalidArgument`]), what this build
//! lacks ([`Error::Unavailable`]), host I/O ([`Error::Io`]), the device under an engine
//! ([`Error::Device`]; [`Error::Open`] when opening it from its path failed), the engine
//! itself ([`Error::Engine`]) and faults of an adapter ([`Error::Internal`]) apart. Every
//! message names what failed; a wrapped error's text is part of the message and also its
//! [`std::error::Error::source`].

/// An error of an engine (SMRDB's typed error, or a C API's message).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything opening or running an engine can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option or target is unknown, out of range or does not suit the engine.
    #[error("{0}")]
    InvalidArgument(String),
    /// The engine is not in this build (features `smrdb`, `compare`).
    #[error("{0}")]
    Unavailable(String),
    /// A file or directory of the host could not be created, read or removed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done (`creating /tmp/db`).
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The device under the engine failed outside the engine (opening an image, a reset).
    #[error("{what}: {source}")]
    Device {
        /// What was being done.
        what: String,
        /// The device's error.
        #[source]
        source: tegula_device::DeviceError,
    },
    /// The device could not be opened from its path (`tegula_open`: a missing or foreign
    /// file, a lock another process holds, the device's own error).
    #[error(transparent)]
    Open(#[from] tegula_open::OpenError),
    /// The engine failed (SMRDB, RocksDB, LevelDB).
    #[error("{what}: {source}")]
    Engine {
        /// What was being done (`rocksdb put`, `opening SMRDB`).
        what: String,
        /// The engine's error (for the C APIs: their message).
        #[source]
        source: BoxError,
    },
    /// A fault of an adapter (an engine returned what its API rules out); a bug to report.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// An [`Error::InvalidArgument`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }

    /// An [`Error::Io`] while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }

    /// An [`Error::Device`] while doing `what`.
    pub fn device(what: impl Into<String>, source: tegula_device::DeviceError) -> Self {
        Error::Device {
            what: what.into(),
            source,
        }
    }

    /// An [`Error::Engine`] while doing `what`.
    pub fn engine(what: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::Engine {
            what: what.into(),
            source: source.into(),
        }
    }
}

/// Result alias of the engine layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_their_cause() {
        let e = Error::engine("opening SMRDB", "unsupported device: no zones");
        assert_eq!(e.to_string(), "opening SMRDB: unsupported device: no zones");
        assert!(std::error::Error::source(&e).is_some());
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        assert_eq!(Error::io("creating d", io).to_string(), "creating d: gone");
    }
}
