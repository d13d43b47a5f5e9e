//! A real block device or a plain file opened with `O_DIRECT` (the page cache bypassed), in
//! wall time. FUA writes use `RWF_DSYNC`, a flush is `fdatasync`, a queued batch is one thread
//! per command, a pause is a sleep. Probing writes: only for a device nobody uses — a mounted
//! or swapping device is refused ([`check_not_mounted`]); the binary asks for
//! `--destroys-data` before it gets here.

use super::{check_range, ClockKind, Op, Target};
use crate::error::{OpResult, TargetError};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tegula_device::Nanos;

/// Alignment of `O_DIRECT` buffers, offsets and lengths.
const ALIGN: usize = 4096;

/// A zeroed buffer aligned for `O_DIRECT`.
struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain memory owned by this value; it is only shared read-only.
unsafe impl Send for AlignedBuf {}
// SAFETY: as above; no interior mutability through `&AlignedBuf`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    fn new(len: usize) -> Result<Self, TargetError> {
        let len = len.max(ALIGN).div_ceil(ALIGN) * ALIGN;
        let layout = std::alloc::Layout::from_size_align(len, ALIGN)
            .map_err(|e| TargetError::Invalid(e.to_string()))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(TargetError::Io(format!("cannot allocate {len} bytes")));
        }
        Ok(AlignedBuf { ptr, len })
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if let Ok(layout) = std::alloc::Layout::from_size_align(self.len, ALIGN) {
            // SAFETY: allocated in `new` with this very layout.
            unsafe { std::alloc::dealloc(self.ptr, layout) }
        }
    }
}

/// A file or block device opened with `O_DIRECT`.
pub struct DirectTarget {
    file: File,
    path: PathBuf,
    cap: u64,
    block: u64,
    epoch: Instant,
    bufs: Vec<AlignedBuf>,
}

fn io_err(e: std::io::Error, offset: u64) -> TargetError {
    if e.raw_os_error() == Some(libc::EIO) {
        TargetError::Media { offset }
    } else {
        TargetError::Io(format!("at byte {offset}: {e}"))
    }
}

fn nanos(d: Duration) -> Nanos {
    d.as_nanos().min(u64::MAX as u128) as Nanos
}

/// The mounted (or swapping) devices as `major:minor`, from `/proc/self/mountinfo` and
/// `/proc/swaps`.
fn busy_devices() -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    if let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in text.lines() {
            let mut f = line.split_whitespace();
            if let Some(mm) = f.nth(2) {
                if let Some((a, b)) = mm.split_once(':') {
                    if let (Ok(a), Ok(b)) = (a.parse(), b.parse()) {
                        out.push((a, b));
                    }
                }
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string("/proc/swaps") {
        for line in text.lines().skip(1) {
            if let Some(p) = line.split_whitespace().next() {
                if let Ok(m) = std::fs::metadata(p) {
                    if m.file_type().is_block_device() {
                        out.push(dev_pair(m.rdev()));
                    }
                }
            }
        }
    }
    out
}

fn dev_pair(rdev: u64) -> (u32, u32) {
    (libc::major(rdev), libc::minor(rdev))
}

/// The whole disk a partition `major:minor` belongs to, from sysfs (`None` for a whole disk).
fn parent_disk(dev: (u32, u32)) -> Option<(u32, u32)> {
    let link = std::fs::canonicalize(format!("/sys/dev/block/{}:{}", dev.0, dev.1)).ok()?;
    if !link.join("partition").exists() {
        return None;
    }
    let text = std::fs::read_to_string(link.parent()?.join("dev")).ok()?;
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Refuses a block device that is mounted, holds a mounted partition, or is used for swap.
/// A plain file passes (probing overwrites only the file).
pub fn check_not_mounted(path: &Path) -> Result<(), TargetError> {
    let meta =
        std::fs::metadata(path).map_err(|e| TargetError::Io(format!("{}: {e}", path.display())))?;
    if !meta.file_type().is_block_device() {
        return Ok(());
    }
    let dev = dev_pair(meta.rdev());
    for busy in busy_devices() {
        if busy == dev || parent_disk(busy) == Some(dev) {
            return Err(TargetError::Invalid(format!(
                "{} is in use (device {}:{} is mounted or used for swap): refusing to write to it",
                path.display(),
                busy.0,
                busy.1
            )));
        }
    }
    Ok(())
}

fn blockdev_size(file: &File) -> Result<u64, TargetError> {
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer, which points at `size`.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64 as _, &mut size as *mut u64) };
    if r != 0 {
        return Err(TargetError::Io(format!(
            "BLKGETSIZE64: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(size)
}

impl DirectTarget {
    /// Opens `path` (an existing file or block device) for reading and writing with
    /// `O_DIRECT`, after [`check_not_mounted`].
    pub fn open(path: &Path) -> Result<Self, TargetError> {
        check_not_mounted(path)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .map_err(|e| {
                TargetError::Io(format!("opening {} with O_DIRECT: {e}", path.display()))
            })?;
        let meta = file
            .metadata()
            .map_err(|e| TargetError::Io(e.to_string()))?;
        let size = if meta.file_type().is_block_device() {
            blockdev_size(&file)?
        } else {
            meta.len()
        };
        let block = ALIGN as u64;
        let cap = size / block * block;
        if cap < 64 * block {
            return Err(TargetError::Invalid(format!(
                "{} holds {size} bytes: too small to probe",
                path.display()
            )));
        }
        Ok(DirectTarget {
            file,
            path: path.to_path_buf(),
            cap,
            block,
            epoch: Instant::now(),
            bufs: Vec::new(),
        })
    }

    /// Makes sure `n` buffers of at least `len` bytes exist.
    fn ensure_bufs(&mut self, n: usize, len: u64) -> Result<(), TargetError> {
        let len = len as usize;
        for b in &mut self.bufs {
            if b.len < len {
                *b = AlignedBuf::new(len)?;
            }
        }
        while self.bufs.len() < n {
            self.bufs.push(AlignedBuf::new(len)?);
        }
        Ok(())
    }
}

/// One command on `fd` with buffer `buf`.
fn run_op(fd: i32, op: Op, buf: &AlignedBuf) -> Result<(), TargetError> {
    match op {
        Op::Read { offset, len } => {
            let mut done = 0u64;
            while done < len {
                // SAFETY: `buf` holds at least `len` bytes; the kernel writes at most
                // `len - done` bytes past `done`.
                let n = unsafe {
                    libc::pread(
                        fd,
                        buf.ptr.add(done as usize) as *mut libc::c_void,
                        (len - done) as usize,
                        (offset + done) as libc::off_t,
                    )
                };
                if n < 0 {
                    return Err(io_err(std::io::Error::last_os_error(), offset));
                }
                if n == 0 {
                    return Err(TargetError::Invalid(format!("short read at {offset}")));
                }
                done += n as u64;
            }
            Ok(())
        }
        Op::Write { offset, len, fua } => {
            let mut done = 0u64;
            while done < len {
                let iov = libc::iovec {
                    iov_base: buf.ptr.wrapping_add(done as usize) as *mut libc::c_void,
                    iov_len: (len - done) as usize,
                };
                let flags = if fua { libc::RWF_DSYNC } else { 0 };
                // SAFETY: one iovec over `len - done` initialized bytes of `buf`.
                let n =
                    unsafe { libc::pwritev2(fd, &iov, 1, (offset + done) as libc::off_t, flags) };
                if n < 0 {
                    return Err(io_err(std::io::Error::last_os_error(), offset));
                }
                if n == 0 {
                    return Err(TargetError::Io(format!("short write at {offset}")));
                }
                done += n as u64;
            }
            Ok(())
        }
        Op::Flush => {
            // SAFETY: fdatasync on an open descriptor.
            if unsafe { libc::fdatasync(fd) } != 0 {
                return Err(io_err(std::io::Error::last_os_error(), 0));
            }
            Ok(())
        }
    }
}

impl Target for DirectTarget {
    fn describe(&self) -> String {
        format!("{} (O_DIRECT, wall time)", self.path.display())
    }

    fn block_size(&self) -> u64 {
        self.block
    }

    fn capacity(&self) -> u64 {
        self.cap
    }

    fn clock(&self) -> ClockKind {
        ClockKind::Wall
    }

    fn read(&mut self, offset: u64, len: u64) -> OpResult {
        check_range(offset, len, self.block, self.cap)?;
        self.ensure_bufs(1, len)?;
        let t = Instant::now();
        run_op(
            self.file.as_raw_fd(),
            Op::Read { offset, len },
            &self.bufs[0],
        )?;
        Ok(nanos(t.elapsed()))
    }

    fn write(&mut self, offset: u64, len: u64, fua: bool) -> OpResult {
        check_range(offset, len, self.block, self.cap)?;
        self.ensure_bufs(1, len)?;
        let t = Instant::now();
        run_op(
            self.file.as_raw_fd(),
            Op::Write { offset, len, fua },
            &self.bufs[0],
        )?;
        Ok(nanos(t.elapsed()))
    }

    fn flush(&mut self) -> OpResult {
        let t = Instant::now();
        self.file.sync_data().map_err(|e| io_err(e, 0))?;
        Ok(nanos(t.elapsed()))
    }

    fn submit(&mut self, ops: &[Op]) -> Vec<OpResult> {
        let mut max = self.block;
        for op in ops {
            if let Op::Read { offset, len } | Op::Write { offset, len, .. } = *op {
                if let Err(e) = check_range(offset, len, self.block, self.cap) {
                    return ops.iter().map(|_| Err(e.clone())).collect();
                }
                max = max.max(len);
            }
        }
        if let Err(e) = self.ensure_bufs(ops.len(), max) {
            return ops.iter().map(|_| Err(e.clone())).collect();
        }
        let fd = self.file.as_raw_fd();
        let barrier = std::sync::Barrier::new(ops.len() + 1);
        let bufs = &self.bufs;
        std::thread::scope(|s| {
            let handles: Vec<_> = ops
                .iter()
                .zip(bufs)
                .map(|(&op, buf)| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        run_op(fd, op, buf).map(|_| Instant::now())
                    })
                })
                .collect();
            barrier.wait();
            let t = Instant::now();
            handles
                .into_iter()
                .map(|h| match h.join() {
                    Ok(r) => r.map(|at| nanos(at.saturating_duration_since(t))),
                    Err(_) => Err(TargetError::Io("an I/O thread panicked".into())),
                })
                .collect()
        })
    }

    fn idle(&mut self, d: Nanos) {
        std::thread::sleep(Duration::from_nanos(d));
    }

    fn now(&self) -> Nanos {
        nanos(self.epoch.elapsed())
    }
}
