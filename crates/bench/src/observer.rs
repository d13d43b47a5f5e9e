//! How a run reports progress and results while it goes: the harness calls an [`Observer`];
//! the `tegula` binary implements it with progress bars and db_bench-like printed lines, a
//! test with counters, a library user with nothing at all ([`Quiet`]).
//!
//! Calls come from the thread that runs the benchmark, except [`Observer::phase_progress`],
//! which comes from a monitor thread while the workers run: hence `Send + Sync`.

use crate::report::BenchResult;

/// Receives a run's progress and results. Every method has an empty default.
pub trait Observer: Send + Sync {
    /// Engine `engine` begins its share of a run of several engines.
    fn engine_started(&self, _engine: &str) {}
    /// A measured phase (`fillseq`, `ycsb-a-run`, …) of about `expected_ops` operations
    /// begins on `engine`.
    fn phase_started(&self, _engine: &str, _phase: &str, _expected_ops: u64) {}
    /// `ops` operations of the current phase are done (about every
    /// [`crate::runner::SAMPLE_INTERVAL`]).
    fn phase_progress(&self, _ops: u64) {}
    /// The current phase ended (successfully or not).
    fn phase_finished(&self) {}
    /// A benchmark (or YCSB phase) finished with this result.
    fn result(&self, _result: &BenchResult) {}
    /// A job of `steps` steps begins (a paper reproduction named `name`).
    fn job_started(&self, _name: &str, _steps: u64) {}
    /// The next step of the job begins.
    fn step(&self, _message: &str) {}
    /// The job ended.
    fn job_finished(&self) {}
    /// A line for a person: a skipped drive, an external tool's result line.
    fn note(&self, _message: &str) {}
    /// Whether the run should stop (a user pressed Ctrl-C): polled before each benchmark
    /// and, while one runs, every [`crate::runner::SAMPLE_INTERVAL`]; a benchmark that is
    /// stopped ends with [`crate::Error::Interrupted`] and reports no result.
    fn should_stop(&self) -> bool {
        false
    }
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Observer for Quiet {}
