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
pub(crate) mod zones;

pub use attr::{Attr, SetAttr};
pub use namespace::{DirEntry, NAME_MAX};
pub use space::StatFs;

use crate::buffer::{InFlight, Spares, WriteBuf};
use crate::cleaner::{CleanJob, CleanPolicy};
use crate::error::{FsError, Result};
use crate::journal::Journal;
use crate::placement::Placement;
use crate::pool::Pool;
use crate::state::{Inode, Kind, Op, State};
use std::collections::{HashMap, HashSet};
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
    /// Placement policy (default `None`: the one mkfs chose, stored in the checkpoint; mkfs
    /// itself takes `None` as [`Placement::LastUsed`], the paper's default).
    pub placement: Option<Placement>,
    /// What the cleaner may do to a zone (default [`CleanPolicy::Auto`]: whole-zone or tail
    /// cleaning, whichever frees the most space per byte moved).
    pub clean: CleanPolicy,
    /// Clean inside a write when no zone has room (default true). A mount that runs the
    /// background cleaner turns it off: writers then wait for the cleaner instead.
    pub foreground_cleaning: bool,
    /// Leave writing buffers to a writer thread (default false): full buffers and closed
    /// files are queued ([`Fs::take_flush_queue`]) instead of written inside `write` and
    /// `release`. The FUSE mount turns it on (asynchronous close).
    pub write_behind: bool,
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
            placement: None,
            clean: CleanPolicy::Auto,
            foreground_cleaning: true,
            write_behind: false,
        }
    }
}
/// A file with buffered data, data in flight or open handles.
#[derive(Debug, Default)]
pub(crate) struct OpenFile {
    /// Data written and not yet handed to a flush job.
    pub(crate) buf: WriteBuf,
    /// Data of the file's flush jobs not yet finished (reads see it).
    pub(crate) inflight: InFlight,
    /// Flush jobs not yet finished.
    pub(crate) jobs: u32,
    /// Smallest size the file was truncated to while jobs were in flight: their bytes at or
    /// past it are not mapped.
    pub(crate) cut: Option<u64>,
    /// Size including buffered data.
    pub(crate) size: u64,
    /// Open handles.
    pub(crate) opens: u32,
    /// The modification time the mapping records of the file's flushes carry: when its data
    /// was last written, or the time a later setattr set explicitly (as `tar` sets it before
    /// the data reaches the drive; it outlives the flush of earlier writes).
    pub(crate) write_mtime: Option<i64>,
}

/// A mounted file system.
pub struct Fs {
    pub(crate) dev: Arc<dyn ZonedDevice>,
    pub(crate) journal: Journal,
    pub(crate) state: State,
    pub(crate) pending: Vec<Op>,
    pub(crate) pending_bytes: usize,
    pub(crate) pool: Arc<Pool>,
    pub(crate) files: HashMap<u64, OpenFile>,
    pub(crate) dirty: usize,
    pub(crate) opts: FsOptions,
    pub(crate) broken: Option<String>,
    /// Placement policy in force.
    pub(crate) placement: Placement,
    /// The zone each stream wrote last.
    pub(crate) streams: HashMap<zones::Stream, u32>,
    /// Zones a writer holds while it writes outside the lock (no one else writes them).
    pub(crate) leased: HashSet<u32>,
    /// The zone being cleaned, if a cleaning is under way.
    pub(crate) job: Option<CleanJob>,
    /// Files whose buffers await the writer thread (write-behind mode).
    pub(crate) flush_queue: Vec<u64>,
    /// Buffers of finished flush jobs' segments, for new segments of large writes.
    pub(crate) spares: Spares,
    /// Files a write failed for lack of space (reported by `getattr` with a handle, so that
    /// a program writing through the kernel's writeback cache learns of it at `write`).
    pub(crate) out_of_space: HashSet<u64>,
    pub(crate) bad_zones: Vec<u32>,
    /// Statistics since the mount.
    pub(crate) cleanings: u64,
    /// Tail cleanings since the mount.
    pub(crate) tail_cleanings: u64,
    /// Bytes of new file data written since the mount.
    pub(crate) user_bytes: u64,
    /// Bytes moved by the cleaner since the mount.
    pub(crate) moved_bytes: u64,
    /// Bytes freed by the cleaner since the mount.
    pub(crate) reclaimed_bytes: u64,
    /// The mount dropped the log's last record: its commit never completed.
    pub(crate) dropped_unacknowledged: bool,
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
