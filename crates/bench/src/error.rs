//! Typed errors of the benchmark harness.
//!
//! The kinds the harness shares with the engine layer — the caller's mistakes, what this build
//! or machine lacks, host I/O, the emulated drive, the engine or layer under test, faults — are
//! `tegula_kv`'s ([`Error::Kv`]); bad data read back ([`Error::Corrupt`]), external programs
//! ([`Error::Tool`]), plots ([`Error::Plot`]), interruption and the engine a failure happened
//! in are the harness's own.
//! Every message names what failed and where; a wrapped error's text is part of the message
//! and also its [`std::error::Error::source`].

use std::path::PathBuf;

/// An error of a layer below the harness (an engine, a translation layer, a file system).
pub use tegula_kv::error::BoxError;

/// Everything the harness can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kinds the harness shares with the engine layer, and what that layer reports: a bad
    /// option ([`tegula_kv::Error::InvalidArgument`]), what this build or machine lacks, host
    /// I/O, the emulated drive, the engine or layer under test, a fault of the harness.
    #[error(transparent)]
    Kv(#[from] tegula_kv::Error),
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
    /// A bad option or argument ([`tegula_kv::Error::InvalidArgument`]); nothing ran.
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::Kv(tegula_kv::Error::invalid(msg))
    }

    /// An engine, feature or tool not in this build or on this machine.
    pub fn unavailable(msg: impl Into<String>) -> Self {
        Error::Kv(tegula_kv::Error::Unavailable(msg.into()))
    }

    /// Host I/O failed while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Kv(tegula_kv::Error::io(what, source))
    }

    /// The emulated drive failed while doing `what`.
    pub fn device(what: impl Into<String>, source: tegula_device::DeviceError) -> Self {
        Error::Kv(tegula_kv::Error::device(what, source))
    }

    /// The engine or layer under test failed while doing `what`.
    pub fn engine(what: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::Kv(tegula_kv::Error::engine(what, source))
    }

    /// A fault of the harness itself (a benchmark thread panicked); a bug to report.
    pub fn internal(msg: impl Into<String>) -> Self {
        Error::Kv(tegula_kv::Error::Internal(msg.into()))
    }

    /// Whether this is a bad option or argument.
    pub fn is_invalid_argument(&self) -> bool {
        matches!(self, Error::Kv(tegula_kv::Error::InvalidArgument(_)))
    }

    /// Whether this says something is not in this build or on this machine.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Kv(tegula_kv::Error::Unavailable(_)))
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
