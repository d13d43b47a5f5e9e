//! The FUSE adapter: translates kernel requests into calls on [`Fs`]. fuser's session loop
//! reads requests on one thread and hands each to a small pool of workers; the core sits
//! behind a reader-writer lock, so reads, lookups and getattr run in parallel while
//! operations that change the file system take it exclusively. One file per job: this one
//! holds the worker pool and the state the workers share, `ops` translates each request,
//! `convert` turns the core's attributes into fuser's.

mod convert;

use crate::error::FsError;
use crate::fs::Fs;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;
use std::time::Duration;

const TTL: Duration = Duration::from_secs(1);
/// Largest write the kernel is asked to send in one request.
pub const MAX_WRITE: u32 = 1 << 20;
/// Open flag that keeps the kernel's page cache of a file across opens. Every change to a
/// file's data goes through this mount (the kernel updates or drops its cached pages on
/// write and truncate), so cached pages never go stale; without it each open of a file
/// (RocksDB reopens every SST it just wrote) would send all reads to the drive.
const KEEP_CACHE: u32 = fuser::consts::FOPEN_KEEP_CACHE;
/// Worker threads that serve requests (default of [`FuseFs::with_threads`]).
pub const DEFAULT_THREADS: usize = 4;

struct Handle {
    ino: u64,
    append: bool,
}

/// A job for a worker: runs with the shared state.
type Job = Box<dyn FnOnce(&Shared) + Send>;

/// State the workers share.
struct Shared {
    fs: RwLock<Option<Fs>>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
    /// Largest write request the kernel sent (reported at unmount).
    max_write_seen: AtomicU64,
    /// Requests served.
    requests: AtomicU64,
    /// Whether the kernel runs its writeback cache for this mount (see
    /// [`FuseFs::writeback_cache`]): it then keeps written pages, sends page-sized writes at
    /// explicit offsets, and handles `O_APPEND` itself.
    writeback: AtomicBool,
}

impl Shared {
    // A worker that panicked while holding a lock has already failed its request; the file
    // system refuses writes after an error itself, so a poisoned lock is still usable.
    fn r(&self) -> RwLockReadGuard<'_, Option<Fs>> {
        self.fs.read().unwrap_or_else(|e| e.into_inner())
    }

    fn w(&self) -> RwLockWriteGuard<'_, Option<Fs>> {
        self.fs.write().unwrap_or_else(|e| e.into_inner())
    }

    fn handles(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Handle>> {
        self.handles.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handle(&self, ino: u64, flags: i32) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.handles().insert(
            fh,
            Handle {
                ino,
                // With the writeback cache the kernel turns appends into writes at its own
                // end of file, in whatever order it writes pages back.
                append: flags & libc::O_APPEND != 0 && !self.writeback.load(Ordering::Relaxed),
            },
        );
        fh
    }
}

fn unmounted() -> FsError {
    FsError::Broken("unmounted".into())
}

/// A mounted [`Fs`] as a fuser file system whose requests are served by worker threads.
/// When the session ends (unmount) it waits for the workers, writes every buffer,
/// checkpoints, and reports the outcome on the `done` channel.
pub struct FuseFs {
    shared: Arc<Shared>,
    tx: Option<mpsc::Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
    threads: usize,
    /// Ask the kernel for its writeback cache at `init`.
    want_writeback: bool,
    done: Option<mpsc::Sender<Result<(), String>>>,
}
impl FuseFs {
    /// Wraps a mounted file system with [`DEFAULT_THREADS`] workers; `done` receives the
    /// unmount's outcome.
    pub fn new(fs: Fs, done: mpsc::Sender<Result<(), String>>) -> Self {
        Self::with_threads(fs, done, DEFAULT_THREADS)
    }

    /// Wraps a mounted file system with `threads` workers (at least one).
    pub fn with_threads(fs: Fs, done: mpsc::Sender<Result<(), String>>, threads: usize) -> Self {
        let shared = Arc::new(Shared {
            fs: RwLock::new(Some(fs)),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            max_write_seen: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            writeback: AtomicBool::new(false),
        });
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let threads = threads.max(1);
        let workers = (0..threads)
            .map(|_| {
                let rx = rx.clone();
                let shared = shared.clone();
                std::thread::spawn(move || loop {
                    let job = match rx.lock() {
                        Ok(r) => r.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(&shared),
                        Err(_) => return,
                    }
                })
            })
            .collect();
        FuseFs {
            shared,
            tx: Some(tx),
            workers,
            threads,
            want_writeback: true,
            done: Some(done),
        }
    }

    /// Whether to ask the kernel for its writeback cache (default: yes). With it, `write`
    /// calls land in the kernel's page cache and reach the file system as page-aligned
    /// writes of up to [`MAX_WRITE`] bytes when the kernel writes back (at `fsync`, `close`,
    /// memory pressure or after its writeback delay), so small writes cost no request each
    /// and every written page stays cached; the kernel keeps file sizes and modification
    /// times while data is dirty. Without it, each `write` is a request and a page that no
    /// single write covered whole is not kept, so data written in small unaligned pieces
    /// (LevelDB's tables, RocksDB's log) is read back from the drive. `fsync` means the same
    /// either way: the kernel writes the file's dirty pages, then the file system makes them
    /// durable.
    pub fn writeback_cache(mut self, on: bool) -> Self {
        self.want_writeback = on;
        self
    }

    /// Queues a request for the workers (runs it here if they are gone).
    fn spawn(&self, job: impl FnOnce(&Shared) + Send + 'static) {
        self.shared.requests.fetch_add(1, Ordering::Relaxed);
        let job: Job = Box::new(job);
        match &self.tx {
            Some(tx) => {
                if let Err(mpsc::SendError(job)) = tx.send(job) {
                    job(&self.shared);
                }
            }
            None => job(&self.shared),
        }
    }
}

macro_rules! tryr {
    ($reply:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => {
                let e: FsError = e;
                if matches!(e, FsError::Corrupt(_) | FsError::Io(_) | FsError::Broken(_)) {
                    eprintln!("tegula-fs: {e}");
                }
                $reply.error(e.errno());
                return;
            }
        }
    };
}

/// Runs `$body` with `$fs` bound to the file system under a read lock.
macro_rules! with_read {
    ($self:ident, $reply:ident, |$fs:ident| $body:block) => {
        $self.spawn(move |sh: &Shared| {
            let g = sh.r();
            let $fs: &Fs = tryr!($reply, g.as_ref().ok_or_else(unmounted));
            $body
        })
    };
}

/// Runs `$body` with `$fs` bound to the file system under the write lock.
macro_rules! with_write {
    ($self:ident, $reply:ident, |$sh:ident, $fs:ident| $body:block) => {
        $self.spawn(move |$sh: &Shared| {
            let mut g = $sh.w();
            let $fs: &mut Fs = tryr!($reply, g.as_mut().ok_or_else(unmounted));
            $body
        })
    };
}
// Declared after the macros above, which the requests use.
mod ops;
