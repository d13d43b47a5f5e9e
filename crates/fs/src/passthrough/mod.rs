//! The pass-through mount (`tegula fs mount --passthrough DIR MNT`): a FUSE file system
//! that forwards every request to a directory of the host and counts it in the profiler.
//! It is ShingledFS's profiler (§5.5.2, a FUSE file system that "simply executes the VFS
//! system call") and the FUSE baseline of its evaluation: the same FUSE configuration as the
//! tegula mount (writeback cache, `default_permissions`, requests that only touch metadata
//! served on the session thread, data on workers), with the host's file system behind it.
//!
//! Like libfuse's `passthrough_ll`, every inode the kernel knows holds an `O_PATH`
//! descriptor of the host file (so renames need no bookkeeping), inodes are found by the
//! host's (device, inode) pair (so hard links share one), and a `forget` that drops the last
//! reference closes the descriptor. One file per job: this one holds the inode table and the
//! dispatch, `ops` the requests, `sys` the system calls.

mod ops;
mod sys;

use crate::error::FsError;
use crate::profile::Profiler;
use crate::serve::{Lanes, Served};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};

/// One host file the kernel knows.
struct Node {
    fd: OwnedFd,
    key: (u64, u64),
    lookups: u64,
}

/// The inode table.
struct Inodes {
    nodes: HashMap<u64, Node>,
    by_key: HashMap<(u64, u64), u64>,
    next: u64,
}

impl Inodes {
    fn fd(&self, ino: u64) -> Result<RawFd, i32> {
        self.nodes
            .get(&ino)
            .map(|n| n.fd.as_raw_fd())
            .ok_or(libc::ESTALE)
    }
}

/// An open directory stream.
struct Dir(*mut libc::DIR);

// The stream is used by one request at a time, under the table's lock.
unsafe impl Send for Dir {}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: the pointer came from fdopendir and is closed once, here.
        unsafe {
            libc::closedir(self.0);
        }
    }
}

/// State the session thread and the workers share.
struct PtShared {
    inodes: Mutex<Inodes>,
    files: Mutex<HashMap<u64, OwnedFd>>,
    dirs: Mutex<HashMap<u64, Dir>>,
    next_fh: AtomicU64,
    root: OwnedFd,
    writeback: AtomicBool,
    profiler: Arc<Profiler>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every change under these locks is a single insert or remove.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PtShared {
    fn file(&self, fh: u64) -> Result<RawFd, i32> {
        lock(&self.files)
            .get(&fh)
            .map(|f| f.as_raw_fd())
            .ok_or(libc::EBADF)
    }

    fn add_file(&self, fd: OwnedFd) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.files).insert(fh, fd);
        fh
    }
}

impl Served for PtShared {
    fn profiler(&self) -> &Profiler {
        &self.profiler
    }
}

/// The pass-through file system.
pub struct Passthrough {
    lanes: Lanes<PtShared>,
    want_writeback: bool,
    done: Option<mpsc::Sender<Result<(), FsError>>>,
}

impl Passthrough {
    /// Serves directory `dir` with `threads` workers for data requests; `done` receives
    /// the unmount's outcome.
    pub fn new(
        dir: &Path,
        done: mpsc::Sender<Result<(), FsError>>,
        threads: usize,
    ) -> std::io::Result<Self> {
        let limit = sys::raise_fd_limit();
        tracing::info!(
            "pass-through: up to {limit} open descriptors, one per inode the kernel knows (the \
             hard limit, or fs.nr_open when privileged)"
        );
        let root = sys::open_path(dir)?;
        let st0 = sys::stat(root.as_raw_fd()).map_err(std::io::Error::from_raw_os_error)?;
        if st0.st_mode & libc::S_IFMT != libc::S_IFDIR {
            return Err(std::io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        let root_node = sys::open_path(dir)?;
        let key = (st0.st_dev, st0.st_ino);
        let mut nodes = HashMap::new();
        nodes.insert(
            fuser::FUSE_ROOT_ID,
            Node {
                fd: root_node,
                key,
                lookups: 2,
            },
        );
        let st = Arc::new(PtShared {
            inodes: Mutex::new(Inodes {
                nodes,
                by_key: HashMap::from([(key, fuser::FUSE_ROOT_ID)]),
                next: fuser::FUSE_ROOT_ID + 1,
            }),
            files: Mutex::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            root,
            writeback: AtomicBool::new(false),
            profiler: Arc::new(Profiler::new("passthrough")),
        });
        Ok(Passthrough {
            lanes: Lanes::new(st, threads),
            want_writeback: true,
            done: Some(done),
        })
    }

    /// Whether to ask the kernel for its writeback cache (default: yes, as the tegula
    /// mount does).
    pub fn writeback_cache(mut self, on: bool) -> Self {
        self.want_writeback = on;
        self
    }

    /// The profiler counting the requests.
    pub fn profiler(&self) -> Arc<Profiler> {
        self.lanes.shared().profiler.clone()
    }
}
