//! Typed errors of the prober.

use tegula_device::Nanos;

/// What a single command on a target can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// The medium could not return the data (a hard read error, e.g. a torn write).
    #[error("media error at byte {offset}")]
    Media {
        /// Byte offset of the failed command.
        offset: u64,
    },
    /// The target has no power (after a power cut, until it is powered on again).
    #[error("the target lost power")]
    PowerLoss,
    /// The command is outside the target or badly aligned.
    #[error("invalid command: {0}")]
    Invalid(String),
    /// Any other failure (connection, system call), with its description.
    #[error("{0}")]
    Io(String),
}

/// Why a probe failed as a whole.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// A command failed where the test cannot continue.
    #[error("TEST {test}: {source}")]
    Target {
        /// Test number.
        test: u8,
        /// The failure.
        #[source]
        source: TargetError,
    },
    /// The target is too small or otherwise unsuited to a test.
    #[error("TEST {test}: {reason}")]
    Unsuited {
        /// Test number.
        test: u8,
        /// Why.
        reason: String,
    },
    /// Opening or preparing a target failed.
    #[error("{0}")]
    Open(String),
    /// Writing a plot or report file failed.
    #[error("writing {path}: {source}")]
    Output {
        /// The file.
        path: String,
        /// Why (the host's or the plotting library's error).
        #[source]
        source: BoxError,
    },
    /// The caller asked to stop (the observer returned `false`).
    #[error("stopped after {after_s:.1} s")]
    Stopped {
        /// Elapsed wall time in seconds.
        after_s: f64,
    },
    /// A test ran past its budget of wall or modelled time; the probe goes on without it.
    #[error("TEST {test} did not conclude within its budget: {spent}")]
    OutOfBudget {
        /// Test number.
        test: u8,
        /// What was spent, against which limit, and what the test was doing.
        spent: String,
    },
    /// An argument is out of range.
    #[error("invalid argument: {0}")]
    Invalid(String),
}

/// An error of something outside the prober: rebuilding an emulated drive, restoring a
/// target's power.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Result of one target command: its latency in nanoseconds.
pub type OpResult = std::result::Result<Nanos, TargetError>;

/// Result alias of the prober.
pub type Result<T> = std::result::Result<T, ProbeError>;
