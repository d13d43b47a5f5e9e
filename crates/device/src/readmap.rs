//! A shared read-only mapping of a file, for reads without a system call each (as LevelDB
//! reads its table files): used by the host-banded device and by disk images when asked. A
//! host I/O error under a mapping kills the process with `SIGBUS` instead of failing a read,
//! which is why callers make it an option.

use crate::error::{DeviceError, Result};
use std::fs::File;
use std::path::Path;

/// A shared read-only mapping of the first `len` bytes of a file, unmapped on drop.
pub(crate) struct ReadMap {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and only read through raw-pointer copies; the pointer is
// valid until `drop` unmaps it, which needs `&mut self` (no reader left).
unsafe impl Send for ReadMap {}
unsafe impl Sync for ReadMap {}

impl ReadMap {
    pub(crate) fn new(file: &File, len: u64, path: &Path) -> Result<Self> {
        use std::os::unix::io::AsRawFd;
        let len = usize::try_from(len)
            .map_err(|_| DeviceError::Config(format!("{} is too large to map", path.display())))?;
        // SAFETY: a fresh shared read-only mapping of an open descriptor; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(DeviceError::io(
                format!("mapping {}", path.display()),
                std::io::Error::last_os_error(),
            ));
        }
        // Random access: a fault reads the page it needs, not a window of read-ahead around
        // it (which, with the data larger than memory, evicts what the next reads need).
        // SAFETY: advice on the mapping just made; failure only loses the hint.
        unsafe {
            libc::madvise(ptr, len, libc::MADV_RANDOM);
        }
        Ok(ReadMap { ptr, len })
    }

    /// Copies `buf.len()` bytes at byte offset `off` (checked against the mapping).
    pub(crate) fn read(&self, off: u64, buf: &mut [u8]) -> Result<()> {
        let end = off.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.len as u64) {
            return Err(DeviceError::io(
                format!("reading byte {off} of a {}-byte mapping", self.len),
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            ));
        }
        // SAFETY: `off..off + len` lies inside the mapping (checked above), which lives as long
        // as `self`; a raw copy, as the file's pages may change under it (another pwrite), as
        // they may under a pread.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (self.ptr as *const u8).add(off as usize),
                buf.as_mut_ptr(),
                buf.len(),
            );
        }
        Ok(())
    }
}

impl Drop for ReadMap {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}
