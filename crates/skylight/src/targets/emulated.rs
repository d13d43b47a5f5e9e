//! An emulated drive behind `tegula_device::BlockDevice`, on its virtual clock: a command's
//! latency is its modelled service time and a pause is `idle(d)`, so hours of probing take
//! seconds of wall time.

use super::{check_range, ClockKind, Op, PowerControl, Target};
use crate::error::{BoxError, OpResult, TargetError};
use std::sync::Arc;
use tegula_device::media::Request;
use tegula_device::{BlockDevice, DeviceError, Nanos, WriteFlags};

/// Builds a factory-fresh copy of the drive (the emulator's secure erase): the device and its
/// power control.
pub type Fresh = Box<
    dyn FnMut() -> std::result::Result<
            (Arc<dyn BlockDevice>, Option<Arc<dyn PowerControl>>),
            BoxError,
        > + Send,
>;

/// An emulated drive in virtual time.
pub struct BlockTarget {
    dev: Arc<dyn BlockDevice>,
    power: Option<Arc<dyn PowerControl>>,
    fresh: Option<Fresh>,
    name: String,
    block: u64,
    cap: u64,
    zeros: Vec<u8>,
    rbuf: Vec<u8>,
    /// Device time of the drives replaced by secure erases (the clock runs on across them).
    base: Nanos,
    /// When the host ends a pause: the next command is issued then, so a drive still busy
    /// with background work past it shows the wait in that command's latency.
    resume: Option<Nanos>,
}

impl BlockTarget {
    /// Wraps `dev`, described as `name`.
    pub fn new(name: impl Into<String>, dev: Arc<dyn BlockDevice>) -> Self {
        large_allocations_from_mmap();
        let info = dev.info();
        BlockTarget {
            block: info.sector_size as u64,
            cap: info.capacity_bytes(),
            dev,
            power: None,
            fresh: None,
            name: name.into(),
            zeros: Vec::new(),
            rbuf: Vec::new(),
            base: 0,
            resume: None,
        }
    }

    /// Adds power control (TEST 13).
    pub fn with_power(mut self, power: Arc<dyn PowerControl>) -> Self {
        self.power = Some(power);
        self
    }

    /// Adds a secure erase: `fresh` builds a factory-fresh drive of the same configuration.
    pub fn with_fresh(mut self, fresh: Fresh) -> Self {
        self.fresh = Some(fresh);
        self
    }

    /// Latency of a command the device says ran `[start, end]`: from the host's issue time.
    fn latency(&mut self, start: Nanos, end: Nanos) -> Nanos {
        let issued = self.resume.take().map_or(start, |r| r.min(start));
        end.saturating_sub(issued)
    }

    fn buf(&mut self, len: u64) -> &[u8] {
        let n = len as usize;
        if self.zeros.len() < n {
            self.zeros.resize(n, 0);
        }
        &self.zeros[..n]
    }
}

/// Queued writes hand the drive owned buffers (`Request::Write`), one per command. glibc's
/// adaptive threshold soon serves 1 MiB buffers from the heap, where `calloc` must clear
/// them: that clearing was 90% of a probe's time. A fixed threshold keeps them on fresh
/// zero pages, which a metadata-only drive never touches.
fn large_allocations_from_mmap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets an allocator parameter; 128 KiB is glibc's default
        // threshold, made fixed.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        }
    }
}

/// The prober's view of a device error.
pub(crate) fn map_err(e: DeviceError, offset: u64, block: u64) -> TargetError {
    match e {
        DeviceError::MediaError { lba, .. } => TargetError::Media {
            offset: lba.saturating_mul(block),
        },
        DeviceError::PowerLoss => TargetError::PowerLoss,
        DeviceError::OutOfRange { .. } | DeviceError::BadLength { .. } => {
            TargetError::Invalid(format!("at {offset}: {e}"))
        }
        other => TargetError::Io(other.to_string()),
    }
}

impl Target for BlockTarget {
    fn describe(&self) -> String {
        format!("{} ({}, virtual time)", self.name, self.dev.info().model)
    }

    fn block_size(&self) -> u64 {
        self.block
    }

    fn capacity(&self) -> u64 {
        self.cap
    }

    fn clock(&self) -> ClockKind {
        ClockKind::Virtual
    }

    fn read(&mut self, offset: u64, len: u64) -> OpResult {
        check_range(offset, len, self.block, self.cap)?;
        let b = self.block;
        let n = len as usize;
        if self.rbuf.len() < n {
            self.rbuf.resize(n, 0);
        }
        let r = self.dev.read(offset / b, &mut self.rbuf[..n]);
        r.map(|d| self.latency(d.start, d.end))
            .map_err(|e| map_err(e, offset, b))
    }

    fn write(&mut self, offset: u64, len: u64, fua: bool) -> OpResult {
        check_range(offset, len, self.block, self.cap)?;
        let b = self.block;
        let dev = Arc::clone(&self.dev);
        let data = self.buf(len);
        let r = dev.write_with(offset / b, data, WriteFlags { fua });
        r.map(|d| self.latency(d.start, d.end))
            .map_err(|e| map_err(e, offset, b))
    }

    fn flush(&mut self) -> OpResult {
        let b = self.block;
        let r = self.dev.flush();
        r.map(|d| self.latency(d.start, d.end))
            .map_err(|e| map_err(e, 0, b))
    }

    fn submit(&mut self, ops: &[Op]) -> Vec<OpResult> {
        let b = self.block;
        let mut reqs = Vec::with_capacity(ops.len());
        for op in ops {
            let bad = match *op {
                Op::Read { offset, len } | Op::Write { offset, len, .. } => {
                    check_range(offset, len, b, self.cap).err()
                }
                Op::Flush => None,
            };
            if let Some(e) = bad {
                return ops.iter().map(|_| Err(e.clone())).collect();
            }
            reqs.push(match *op {
                Op::Read { offset, len } => Request::Read {
                    lba: offset / b,
                    sectors: len / b,
                },
                // calloc'd pages: a metadata-only drive never touches them.
                Op::Write { offset, len, fua } => Request::Write {
                    lba: offset / b,
                    data: vec![0u8; len as usize],
                    fua,
                },
                Op::Flush => Request::Flush,
            });
        }
        let t0 = self.resume.take().unwrap_or_else(|| self.dev.now());
        self.dev
            .submit(reqs)
            .into_iter()
            .zip(ops)
            .map(|(r, op)| {
                let off = match *op {
                    Op::Read { offset, .. } | Op::Write { offset, .. } => offset,
                    Op::Flush => 0,
                };
                r.map(|c| c.done.end.saturating_sub(t0))
                    .map_err(|e| map_err(e, off, b))
            })
            .collect()
    }

    fn idle(&mut self, d: Nanos) {
        let target = self.resume.unwrap_or_else(|| self.dev.now()) + d;
        self.dev.idle(d);
        self.resume = Some(target);
    }

    fn now(&self) -> Nanos {
        self.base + self.dev.now()
    }

    fn power(&self) -> Option<&dyn PowerControl> {
        self.power.as_deref()
    }

    fn secure_erase(&mut self) -> std::result::Result<bool, TargetError> {
        let Some(fresh) = &mut self.fresh else {
            return Ok(false);
        };
        // The per-command error keeps failures as text (it is cloned into the report).
        let (dev, power) = fresh().map_err(|e| TargetError::Io(e.to_string()))?;
        self.base += self.resume.take().unwrap_or_else(|| self.dev.now());
        self.base = self.base.saturating_sub(dev.now());
        self.dev = dev;
        self.power = power;
        self.resume = None;
        Ok(true)
    }
}
