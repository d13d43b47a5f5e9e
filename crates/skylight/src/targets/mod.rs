//! What the prober drives: a block target seen from the host (read, write, FUA, flush, queued
//! commands, idle time) whose only outputs are completions and their latencies. Adapters:
//! [`BlockTarget`] (an emulated drive on a virtual clock), [`NbdTarget`] (an NBD export, wall
//! time) and [`DirectTarget`] (a file or block device opened with `O_DIRECT`, wall time).

mod direct;
mod emulated;
mod nbd;

pub use direct::{check_not_mounted, DirectTarget};
pub use emulated::{BlockTarget, Fresh};
pub use nbd::NbdTarget;

use crate::error::{OpResult, TargetError};
use tegula_device::Nanos;

/// Which clock a target's latencies and pauses are measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockKind {
    /// The emulator's modelled time: a pause is `idle(d)`, free in wall time.
    Virtual,
    /// Real time: a pause is a sleep.
    Wall,
}

/// One command of a queued batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Read `len` bytes at `offset`.
    Read {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// Write `len` bytes at `offset`; with `fua` durable on completion.
    Write {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u64,
        /// Force unit access.
        fua: bool,
    },
    /// Flush the volatile cache.
    Flush,
}

/// Power control of a target (TEST 13): the emulator's fault injection, or a relay.
pub trait PowerControl: Send + Sync {
    /// Power fails during the `after`-th media write from now (a torn write); `seed` picks the
    /// point inside that write.
    fn arm_cut(&self, after: u64, seed: u64);
    /// Cuts power now.
    fn cut_now(&self);
    /// Restores power (the drive recovers as it would at power-on).
    fn power_on(&self) -> std::result::Result<(), crate::error::BoxError>;
    /// Whether the target has power.
    fn is_powered(&self) -> bool;
}

/// A block target as a host sees it. Offsets and lengths are bytes, multiples of
/// [`Target::block_size`]; every command returns its latency (completion minus submission).
pub trait Target: Send {
    /// A one-line description (what was opened).
    fn describe(&self) -> String;
    /// Logical block size in bytes.
    fn block_size(&self) -> u64;
    /// Capacity in bytes.
    fn capacity(&self) -> u64;
    /// The clock latencies and pauses are measured on.
    fn clock(&self) -> ClockKind;
    /// Reads `len` bytes at `offset`.
    fn read(&mut self, offset: u64, len: u64) -> OpResult;
    /// Writes `len` bytes at `offset` (a fixed pattern); with `fua` it is durable on completion.
    fn write(&mut self, offset: u64, len: u64, fua: bool) -> OpResult;
    /// Makes every completed write durable.
    fn flush(&mut self) -> OpResult;
    /// Submits `ops` together (queue depth = their number); each result is that command's
    /// latency from the batch's submission.
    fn submit(&mut self, ops: &[Op]) -> Vec<OpResult>;
    /// Leaves the target idle for `d` nanoseconds (background work such as cleaning runs).
    fn idle(&mut self, d: Nanos);
    /// The target's clock now, in nanoseconds (virtual time, or wall time since opening).
    fn now(&self) -> Nanos;
    /// Power control, when the target offers it (TEST 13).
    fn power(&self) -> Option<&dyn PowerControl> {
        None
    }
    /// Secure erase: returns the drive to its factory state (empty persistent cache, default
    /// band mapping). `Ok(false)` when the target cannot (the default).
    fn secure_erase(&mut self) -> std::result::Result<bool, TargetError> {
        Ok(false)
    }
}

/// Checks that `[offset, offset + len)` is a non-empty, aligned range inside a target.
pub(crate) fn check_range(offset: u64, len: u64, block: u64, cap: u64) -> Result<(), TargetError> {
    if len == 0 || !offset.is_multiple_of(block) || !len.is_multiple_of(block) {
        return Err(TargetError::Invalid(format!(
            "{len} bytes at {offset} are not whole {block}-byte blocks"
        )));
    }
    if offset.checked_add(len).is_none_or(|e| e > cap) {
        return Err(TargetError::Invalid(format!(
            "{len} bytes at {offset} end past the capacity {cap}"
        )));
    }
    Ok(())
}
