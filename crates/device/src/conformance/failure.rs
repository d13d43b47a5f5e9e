//! Why a conformance check stopped before its verdict.

use crate::error::DeviceError;

/// A check stopped before its verdict: a command the rule expects to succeed failed, or the
/// device could not be brought to the check's starting point. [`super::run`] reports it as the
/// check's failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConformanceFailure {
    /// A command the rule expects to succeed failed.
    #[error("{doing}: {source}")]
    Command {
        /// The command (`write of 2 sectors at LBA 524288`).
        doing: String,
        /// The device's error.
        #[source]
        source: DeviceError,
    },
    /// The device is not in the state the check needs (no usable sequential zone, a zone
    /// missing from the report, a zone not empty after a reset).
    #[error("{0}")]
    State(String),
}

impl ConformanceFailure {
    /// A function for `map_err` that names the command that failed.
    pub fn command(doing: impl Into<String>) -> impl FnOnce(DeviceError) -> Self {
        let doing = doing.into();
        move |source| ConformanceFailure::Command { doing, source }
    }
}
