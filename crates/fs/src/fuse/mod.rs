//! The FUSE adapter: translates kernel requests into calls on [`Fs`].
//!
//! fuser's session loop reads requests on one thread. Requests that only touch memory
//! (lookups, attributes, the namespace, buffered writes, opens and closes) run right there:
//! handing each to another thread cost more than the request itself (a metadata-heavy
//! workload spent half its CPU in the scheduler). Requests that may wait for the drive
//! (reads, fsync) go to a small pool of workers, so they neither block the loop nor each
//! other. The core sits behind a reader-writer lock.
//!
//! Three background threads do the slow work outside any request:
//! * the **writer** (`writer.rs`) writes buffered data as extents, holding the lock only to
//!   choose a zone and to map what it wrote: a closed file's data is handed to it and the
//!   `release` returns at once (ShingledFS's asynchronous close), and an `fsync` waits only
//!   for that file's data;
//! * the **cleaner** (`background.rs`) cleans when the idle or a free-space trigger fires
//!   ([`crate::Triggers`]), in steps of a bounded size between which requests get the lock;
//! * the profiler counts every request ([`crate::profile`]).
//!
//! One file per job: this one holds the shared state and the dispatch, `ops` translates the
//! requests, `convert` turns the core's attributes into fuser's, `writer` and `background`
//! are the threads.

mod background;
mod convert;
mod writer;

use crate::error::FsError;
use crate::fs::Fs;
use crate::profile::Profiler;
use crate::serve::{Lanes, Served};
use crate::triggers::Triggers;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const TTL: Duration = Duration::from_secs(1);
/// Largest write the kernel is asked to send in one request.
pub const MAX_WRITE: u32 = 1 << 20;
/// Open flag that keeps the kernel's page cache of a file across opens. Every change to a
/// file's data goes through this mount (the kernel updates or drops its cached pages on
/// write and truncate), so cached pages never go stale; without it each open of a file
/// (RocksDB reopens every SST it just wrote) would send all reads to the drive.
const KEEP_CACHE: u32 = fuser::consts::FOPEN_KEEP_CACHE;
/// Worker threads that serve requests that may wait for the drive (default of
/// [`FuseFs::with_threads`]).
pub const DEFAULT_THREADS: usize = 4;
/// Longest a write waits for deleted files that are still open or being written to free
/// their space before it fails with `ENOSPC`.
const ORPHAN_WAIT: Duration = Duration::from_secs(10);

struct Handle {
    ino: u64,
    append: bool,
}

/// What the background threads tell waiters: a counter that grows with each finished flush
/// job or cleaning step.
#[derive(Default)]
struct Progress {
    ticks: Mutex<u64>,
    cv: Condvar,
}

impl Progress {
    fn tick(&self) {
        let mut t = self.ticks.lock().unwrap_or_else(|e| e.into_inner());
        *t += 1;
        self.cv.notify_all();
    }

    fn now(&self) -> u64 {
        *self.ticks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the counter passes `seen` or `timeout` passes.
    fn wait_past(&self, seen: u64, timeout: Duration) {
        let g = self.ticks.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self
            .cv
            .wait_timeout_while(g, timeout, |t| *t <= seen)
            .map(|(g, _)| drop(g));
    }
}

/// State the session thread, the workers and the background threads share.
pub(crate) struct Shared {
    fs: RwLock<Option<Fs>>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
    /// Largest write request the kernel sent (reported at unmount).
    max_write_seen: AtomicU64,
    /// Requests served.
    requests: AtomicU64,
    /// Requests being served now.
    busy: AtomicU64,
    /// When the last request arrived (ns since `epoch`).
    last_request: AtomicU64,
    epoch: Instant,
    /// Whether the kernel runs its writeback cache for this mount (see
    /// [`FuseFs::writeback_cache`]): it then keeps written pages, sends page-sized writes at
    /// explicit offsets, and handles `O_APPEND` itself.
    writeback: AtomicBool,
    /// Flush jobs for the writer thread.
    writer: Mutex<Option<mpsc::Sender<writer::Msg>>>,
    /// Ticks when the writer finishes a job or the cleaner a step.
    progress: Progress,
    /// The cleaner's controls.
    cleaner: background::Control,
    /// Cleaning triggers (set before the mount starts; a lock because the worker threads
    /// share this state from construction on).
    triggers: Mutex<Triggers>,
    /// Per-operation counters.
    profiler: Arc<Profiler>,
}

impl Shared {
    // A thread that panicked while holding a lock has already failed its request; the file
    // system refuses writes after an error itself, so a poisoned lock is still usable.
    fn r(&self) -> RwLockReadGuard<'_, Option<Fs>> {
        self.fs.read().unwrap_or_else(|e| e.into_inner())
    }

    fn w(&self) -> RwLockWriteGuard<'_, Option<Fs>> {
        self.fs.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The cleaning triggers in force.
    fn triggers(&self) -> Triggers {
        *self.triggers.lock().unwrap_or_else(|e| e.into_inner())
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

    fn since_epoch(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Waits while new writes must (see [`Fs::writers_must_wait`]): for the writer to catch
    /// up, or for the cleaner to make room (not when it cannot).
    fn wait_until_writable(&self) {
        let start = Instant::now();
        loop {
            let (wait, dirty_high) = {
                let g = self.r();
                match g.as_ref() {
                    Some(fs) => (
                        fs.writers_must_wait(&self.triggers()),
                        fs.dirty_bytes() > 2 * fs.options().dirty_limit,
                    ),
                    None => return,
                }
            };
            // A cleaner that makes no headway must not hold writers forever.
            if !wait || start.elapsed() > Duration::from_secs(600) {
                return;
            }
            if !dirty_high {
                self.cleaner.ask();
            }
            let seen = self.progress.now();
            self.progress.wait_past(seen, Duration::from_millis(100));
        }
    }

    /// Waits (up to [`ORPHAN_WAIT`]) while a write of `len` bytes fits only once unlinked
    /// files are freed: the kernel sends a file's last release in the background, so a
    /// program that closes, deletes and writes again can see its `unlink` and `write` arrive
    /// before the release, and the writer thread may still be writing the deleted data.
    fn wait_for_orphans(&self, len: u64) {
        let start = Instant::now();
        while start.elapsed() < ORPHAN_WAIT {
            let seen = self.progress.now();
            let wait = self
                .r()
                .as_ref()
                .is_some_and(|fs| fs.fits_after_orphans(len));
            if !wait {
                return;
            }
            self.progress.wait_past(seen, Duration::from_millis(20));
        }
    }

    /// Hands the files the core queued for writing to the writer thread.
    fn send_flushes(&self, fs: &mut Fs) {
        let q = fs.take_flush_queue();
        if q.is_empty() {
            return;
        }
        let w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        match w.as_ref() {
            Some(tx) => {
                for ino in q {
                    let _ = tx.send(writer::Msg::Flush(ino));
                }
            }
            // No writer (unmounting): write them here.
            None => {
                for ino in q {
                    if let Err(e) = fs.flush_file(ino) {
                        tracing::error!("writing inode {ino}: {e}");
                    }
                }
            }
        }
    }
}

impl Served for Shared {
    fn profiler(&self) -> &Profiler {
        &self.profiler
    }

    fn arrived(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.busy.fetch_add(1, Ordering::AcqRel);
        self.last_request
            .store(self.since_epoch(), Ordering::Relaxed);
    }

    fn finished(&self) {
        self.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

fn unmounted() -> FsError {
    FsError::Broken("unmounted".into())
}

/// A mounted [`Fs`] as a fuser file system. When the session ends (unmount) it stops the
/// background threads, writes every buffer, checkpoints, and reports the outcome on the
/// `done` channel.
pub struct FuseFs {
    shared: Arc<Shared>,
    lanes: Lanes<Shared>,
    threads: usize,
    /// Ask the kernel for its writeback cache at `init`.
    want_writeback: bool,
    /// Run the background cleaner.
    clean_in_background: bool,
    background: Vec<JoinHandle<()>>,
    done: Option<mpsc::Sender<Result<(), FsError>>>,
}

impl FuseFs {
    /// Wraps a mounted file system with [`DEFAULT_THREADS`] workers; `done` receives the
    /// unmount's outcome.
    pub fn new(fs: Fs, done: mpsc::Sender<Result<(), FsError>>) -> Self {
        Self::with_threads(fs, done, DEFAULT_THREADS)
    }

    /// Wraps a mounted file system with `threads` workers (at least one).
    pub fn with_threads(
        mut fs: Fs,
        done: mpsc::Sender<Result<(), FsError>>,
        threads: usize,
    ) -> Self {
        // Buffers are written by the writer thread (asynchronous close).
        fs.opts.write_behind = true;
        let shared = Arc::new(Shared {
            fs: RwLock::new(Some(fs)),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            max_write_seen: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            last_request: AtomicU64::new(0),
            epoch: Instant::now(),
            writeback: AtomicBool::new(false),
            writer: Mutex::new(None),
            progress: Progress::default(),
            cleaner: background::Control::default(),
            triggers: Mutex::new(Triggers::default()),
            profiler: Arc::new(Profiler::new("tegula")),
        });
        let threads = threads.max(1);
        let lanes = Lanes::new(shared.clone(), threads);
        FuseFs {
            shared,
            lanes,
            threads,
            want_writeback: true,
            clean_in_background: true,
            background: Vec::new(),
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

    /// Cleaning triggers of the background cleaner (default [`Triggers::default`]).
    pub fn triggers(self, t: Triggers) -> Self {
        *self
            .shared
            .triggers
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = t;
        self
    }

    /// Whether a background thread cleans when a trigger fires (default: yes). Without it
    /// the file system cleans inside a write that finds no room, as the library does.
    pub fn background_cleaning(mut self, on: bool) -> Self {
        self.clean_in_background = on;
        self
    }

    /// Whether to let an emulated drive's virtual clock run through idle periods (default:
    /// no; see [`crate::MountOptions::device_idle`]).
    pub fn device_idle(self, on: bool) -> Self {
        self.shared.cleaner.device_idle.store(on, Ordering::Relaxed);
        self
    }

    /// The profiler that counts this mount's requests.
    pub fn profiler(&self) -> Arc<Profiler> {
        self.shared.profiler.clone()
    }

    /// Starts the writer and cleaner threads (at `init`).
    fn start_background(&mut self) {
        let (tx, rx) = mpsc::channel();
        *self.shared.writer.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        let sh = self.shared.clone();
        self.background
            .push(std::thread::spawn(move || writer::run(&sh, rx)));
        if self.clean_in_background {
            if let Some(fs) = self.shared.w().as_mut() {
                fs.opts.foreground_cleaning = false;
            }
            let sh = self.shared.clone();
            self.background
                .push(std::thread::spawn(move || background::run(&sh)));
        }
    }

    /// Stops the background threads; the writer finishes the jobs queued first.
    fn stop_background(&mut self) {
        self.shared.cleaner.stop();
        let tx = self
            .shared
            .writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(tx);
        for h in self.background.drain(..) {
            if h.join().is_err() {
                tracing::error!("a background thread panicked");
            }
        }
    }
}

/// Runs `$body` with `$fs` bound to the file system under the read lock, `inline` or on a
/// `worker`.
macro_rules! with_read {
    ($self:ident, $lane:ident, $op:expr, $reply:ident, |$fs:ident| $body:block) => {
        $self.lanes.$lane($op, move |sh: &Shared| {
            let g = sh.r();
            let $fs: &Fs = $crate::serve::try_reply!($reply, g.as_ref().ok_or_else(unmounted));
            $body
        })
    };
}

/// Runs `$body` with `$fs` bound to the file system under the write lock, `inline` or on
/// a `worker`, then hands the buffers it queued to the writer.
macro_rules! with_write {
    ($self:ident, $lane:ident, $op:expr, $reply:ident, |$sh:ident, $fs:ident| $body:block) => {
        $self.lanes.$lane($op, move |$sh: &Shared| {
            let mut g = $sh.w();
            let $fs: &mut Fs = $crate::serve::try_reply!($reply, g.as_mut().ok_or_else(unmounted));
            #[allow(clippy::redundant_closure_call)]
            let out = (|| $body)();
            $sh.send_flushes($fs);
            out
        })
    };
}
// Declared after the macros above, which the requests use.
mod ops;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FsOptions;
    use tegula_device::{profile, Disk, ZonedDevice};

    /// The triggers a mount is given are the ones its cleaner and writers use (they were
    /// dropped when the worker threads already shared the state).
    #[test]
    fn the_triggers_given_are_the_triggers_in_force() {
        let mut cfg = profile("hm-smr").unwrap();
        cfg.capacity = 64 << 20;
        cfg.zones.zone_size = 16 << 20;
        cfg.zones.conventional_zones = Some(1);
        let dev: Arc<dyn ZonedDevice> = Arc::new(Disk::in_memory(cfg).unwrap());
        let fs = Fs::mkfs(dev, FsOptions::default()).unwrap();
        let (tx, _rx) = mpsc::channel();
        let t = Triggers {
            idle_after: 0,
            low_free: 0.5,
            high_free: 0.25,
            step_bytes: 4096,
        };
        let f = FuseFs::with_threads(fs, tx, 2).triggers(t);
        assert_eq!(f.shared.triggers(), t);
    }
}
