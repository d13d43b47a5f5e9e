//! Typed errors of the benchmark harness.
//!
//! The variants keep the caller's mistakes ([`Error::InvalidArgument`]), what this build or
//! machine lacks ([`Error::Unavailable`]), host I/O ([`Error::Io`]), the emulated drive
//! ([`Error::Device`]), the engine or layer under test ([`Error::Engine`]), bad data read back
//! ([`Error::Corrupt`]), external programs ([`Error::Tool`]) and plots ([`Error::Plot`]) apart.
//! Every message names what failed and where; a wrapped error's text is part of the message
//! and also its [`std::error::Error::source`].

use std::path::PathBuf;

/// An error of a layer below the harness (an engine, a translation layer, a file system).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything the harness can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option is unknown, out of range or inconsistent with another; nothing ran.
    #[error("{0}")]
    InvalidArgument(String),
    /// An engine, feature or tool is not in this build or on this machine.
    #[error("{0}")]
    Unavailable(String),
    /// A file or directory of the host could not be created, read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done (`writing out/results.json`).
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The emulated drive failed outside an engine (raw I/O of a figure, opening an image).
    #[error("{what}: {source}")]
    Device {
        /// What was being done.
        what: String,
        /// The device's error.
        #[source]
        source: tegula_device::DeviceError,
    },
    /// The engine or layer under test failed (SMRDB, RocksDB, LevelDB, ZEA, a translation
    /// layer, the file system).
    #[error("{what}: {source}")]
    Engine {
        /// What was being done (`rocksdb put`, `opening SMRDB`).
        what: String,
        /// The engine's error (for the C APIs: their message).
        #[source]
        source: BoxError,
    },
    /// Data read back differs from what was written or does not decode.
    #[error("{0}")]
    Corrupt(String),
    /// An external program (db_bench, mkfs.ext4, nbdfuse, …) failed.
    #[error("{tool}: {message}")]
    Tool {
        /// The program.
        tool: String,
        /// What went wrong, with its output.
        message: String,
    },
    /// A plot could not be drawn.
    #[error("plot {}: {source}", path.display())]
    Plot {
        /// The SVG file.
        path: PathBuf,
        /// The plotting library's error.
        #[source]
        source: BoxError,
    },
    /// The run was asked to stop (SIGINT, SIGTERM) before the benchmark finished; the
    /// results of the benchmarks that finished were reported already.
    #[error("interrupted")]
    Interrupted,
    /// A fault of the harness itself (a benchmark thread panicked); a bug to report.
    #[error("{0}")]
    Internal(String),
    /// An error while engine `engine` ran, in a run of several engines.
    #[error("engine {engine}: {source}")]
    InEngine {
        /// Engine name (`tegula`, `rocksdb`, …).
        engine: String,
        /// What failed.
        #[source]
        source: Box<Error>,
    },
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

    /// An [`Error::Tool`].
    pub fn tool(tool: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Tool {
            tool: tool.into(),
            message: message.into(),
        }
    }

    /// Whether this is (or wraps) [`Error::Interrupted`].
    pub fn is_interrupted(&self) -> bool {
        match self {
            Error::Interrupted => true,
            Error::InEngine { source, .. } => source.is_interrupted(),
            _ => false,
        }
    }

    /// This error, naming the engine it happened in.
    pub fn in_engine(self, engine: &str) -> Self {
        Error::InEngine {
            engine: engine.to_string(),
            source: Box::new(self),
        }
    }
}

impl From<tegula_kv::Error> for Error {
    /// The engine layer's errors keep their kind: a bad option stays
    /// [`Error::InvalidArgument`], a missing feature [`Error::Unavailable`].
    fn from(e: tegula_kv::Error) -> Self {
        use tegula_kv::Error as Kv;
        match e {
            Kv::InvalidArgument(m) => Error::InvalidArgument(m),
            Kv::Unavailable(m) => Error::Unavailable(m),
            Kv::Io { what, source } => Error::Io { what, source },
            Kv::Device { what, source } => Error::Device { what, source },
            Kv::Engine { what, source } => Error::Engine { what, source },
            Kv::Internal(m) => Error::Internal(m),
            other => Error::Internal(other.to_string()),
        }
    }
}

/// Result alias of the harness.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_their_cause_and_name_the_engine() {
        let e = Error::engine("opening SMRDB", "unsupported device: no zones").in_engine("tegula");
        assert_eq!(
            e.to_string(),
            "engine tegula: opening SMRDB: unsupported device: no zones"
        );
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = Error::io("writing x.json", io);
        assert_eq!(e.to_string(), "writing x.json: gone");
        assert!(std::error::Error::source(&e).is_some());
    }
}
