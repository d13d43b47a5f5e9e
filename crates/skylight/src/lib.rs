//! Skylight (seed 004, Aghayev, Shafaei and Desnoyers): TESTs 1-14 as an automatic prober that
//! infers a drive-managed SMR drive's internals — drive type, persistent cache medium,
//! location, layout and sizes, journal entries, cleaning type and algorithm, band size,
//! mapping type, zone structure, torn writes — from latencies alone.
//!
//! The prober sees only what a host sees: it drives a [`Target`] through the block interface
//! (read, write, FUA, flush, queue depth, idle time) and reads latencies. It does not depend on
//! the emulator's translation layers; whatever it reports comes from measurements, and what it
//! cannot measure it reports as unknown with the reason.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use tegula_skylight::{probe, BlockTarget, ProbeOptions, Quiet};
//! # let dev: Arc<dyn tegula_device::BlockDevice> = unimplemented!();
//! let mut target = BlockTarget::new("drive", dev);
//! let done = probe::run(&mut target, &ProbeOptions::default(), &mut Quiet)?;
//! println!("{}", done.report.table());
//! # Ok(()) }
//! ```

pub mod error;
pub mod plot;
pub mod probe;
mod probes;
pub mod report;
mod session;
pub mod stats;
pub mod targets;

pub use error::{BoxError, ProbeError, Result, TargetError};
pub use probe::{parse_tests, plan, Budget, Probe, ProbeOptions};
pub use report::Report;
pub use session::{Observer, Quiet};
pub use targets::{
    check_not_mounted, BlockTarget, ClockKind, DirectTarget, Fresh, NbdTarget, Op, PowerControl,
    Target,
};
