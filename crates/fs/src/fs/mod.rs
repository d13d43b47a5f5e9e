//! The file system core: a plain Rust API by inode number that the FUSE adapter, the CLI and
//! the tests call. Metadata changes are [`Op`]s applied to the in-memory [`State`] and
//! appended to a pending batch that `fsync` (or any commit) writes to the log. One file per
//! job: `mount`, `commit`, `namespace`, `attr`, `handles`, `space`; file data is in
//! `crate::io`.

mod attr;
mod commit;
pub(crate) mod cookies;
mod handles;
mod mount;
mod namespace;
mod space;

pub use attr::{Attr, SetAttr};
pub use namespace::{DirEntry, NAME_MAX};
pub use space::StatFs;

use crate::buffer::WriteBuf;
use crate::error::{FsError, Result};
use crate::journal::Journal;
use crate::pool::Pool;
use crate::state::{Inode, Kind, Op, State};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};
use tegula_device::ZonedDevice;

/// File-system options. `Default` is the one source of defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsOptions {
    /// Per-file write buffer (default 5 MiB, as ZEAFS): data is written as an extent when a
    /// file's buffer reaches this size, on fsync and on the last close.
    pub buffer_bytes: usize,
    /// Total buffered bytes across files before the largest buffer is written (default 64 MiB).
    pub dirty_limit: usize,
    /// Largest extent written (default 8 MiB); bigger buffers are split.
    pub max_extent: u64,
    /// ZEA back pointers per extent (default 8; persisted by mkfs).
    pub back_pointers: u16,
    /// Commit the pending metadata batch when it grows past this many bytes (default 1 MiB),
    /// even without an fsync.
    pub commit_bytes: usize,
    /// Mount read-only (default false): nothing is written, orphans are left for a
    /// read-write mount to free.
    pub read_only: bool,
}

impl Default for FsOptions {
    fn default() -> Self {
        FsOptions {
            buffer_bytes: 5 << 20,
            dirty_limit: 64 << 20,
            max_extent: 8 << 20,
            back_pointers: 8,
            commit_bytes: 1 << 20,
            read_only: false,
        }
    }
}
/// A file with buffered data or open handles.
#[derive(Debug, Default)]
pub(crate) struct OpenFile {
    pub(crate) buf: WriteBuf,
    pub(crate) size: u64,
    pub(crate) opens: u32,
}

/// A mounted file system.
pub struct Fs {
    pub(crate) dev: Arc<dyn ZonedDevice>,
    pub(crate) journal: Journal,
    pub(crate) state: State,
    pub(crate) pending: Vec<Op>,
    pub(crate) pending_bytes: usize,
    pub(crate) pool: Pool,
    pub(crate) files: HashMap<u64, OpenFile>,
    pub(crate) dirty: usize,
    pub(crate) opts: FsOptions,
    pub(crate) broken: Option<String>,
    pub(crate) active_user: Option<u32>,
    pub(crate) active_gc: Option<u32>,
    pub(crate) bad_zones: Vec<u32>,
    pub(crate) cleanings: u64,
    /// Readdir cookies of the directories listed since the mount (see `cookies.rs`).
    pub(crate) cookies: Mutex<HashMap<u64, cookies::DirCookies>>,
    /// The kernel's lookup count of each inode it holds (FUSE `lookup` minus `forget`): an
    /// unlinked inode lives until the kernel lets go of it.
    pub(crate) lookups: Mutex<HashMap<u64, u64>>,
}

/// Nanoseconds since the Unix epoch, from the host clock.
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}
impl Fs {
    /// The options in force.
    pub fn options(&self) -> &FsOptions {
        &self.opts
    }

    /// The device.
    pub fn device(&self) -> &Arc<dyn ZonedDevice> {
        &self.dev
    }

    pub(super) fn inode(&self, ino: u64) -> Result<&Inode> {
        self.state.get(ino).ok_or(FsError::NotFound)
    }

    /// The readdir cookies (a poisoned lock is still usable: every change is one call).
    pub(crate) fn cookie_map(&self) -> MutexGuard<'_, HashMap<u64, cookies::DirCookies>> {
        self.cookies.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The kernel's lookup counts (a poisoned lock is still usable: every change is one call).
    pub(crate) fn lookup_counts(&self) -> MutexGuard<'_, HashMap<u64, u64>> {
        self.lookups.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn dir(&self, ino: u64) -> Result<&Inode> {
        let d = self.inode(ino)?;
        if d.kind != Kind::Dir {
            return Err(FsError::NotDir);
        }
        Ok(d)
    }
}
