//! What both FUSE mounts (tegula's and the pass-through) share in serving a request: the
//! kernel configuration asked for at `init`, the two lanes a request runs in (inline on the
//! session thread, or as a job on a small worker pool), each counted in the profiler, and
//! the reply of an error.

use crate::error::FsError;
use crate::profile::{Op, Profiler};
use fuser::{KernelConfig, ReplyEmpty, ReplyXattr};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Asks the kernel for writes and read-ahead of `max_write` bytes and, when wanted, for its
/// writeback cache; returns whether the writeback cache is on.
pub(crate) fn configure(config: &mut KernelConfig, max_write: u32, want_writeback: bool) -> bool {
    // The kernel settles on what it supports.
    let _ = config.set_max_write(max_write);
    let _ = config.set_max_readahead(max_write);
    want_writeback
        && config
            .add_capabilities(fuser::consts::FUSE_WRITEBACK_CACHE)
            .is_ok()
}

/// The state a mount's requests run with, and the hooks around each request.
pub(crate) trait Served: Send + Sync + 'static {
    /// The profiler that counts the requests.
    fn profiler(&self) -> &Profiler;
    /// Called as a request arrives, after the profiler counted it.
    fn arrived(&self) {}
    /// Called after the profiler recorded a request's outcome.
    fn finished(&self) {}
}

/// A job for a worker: runs with the shared state.
type Job<S> = Box<dyn FnOnce(&S) + Send>;

/// The two lanes of a mount's requests: inline, or on one of its worker threads.
pub(crate) struct Lanes<S> {
    shared: Arc<S>,
    tx: Option<mpsc::Sender<Job<S>>>,
    workers: Vec<JoinHandle<()>>,
}

impl<S: Served> Lanes<S> {
    /// Starts `threads` workers (at least one) that run jobs with `shared`.
    pub(crate) fn new(shared: Arc<S>, threads: usize) -> Self {
        let (tx, rx) = mpsc::channel::<Job<S>>();
        let rx = Arc::new(Mutex::new(rx));
        let workers = (0..threads.max(1))
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
        Lanes {
            shared,
            tx: Some(tx),
            workers,
        }
    }

    /// The state the requests run with.
    pub(crate) fn shared(&self) -> &Arc<S> {
        &self.shared
    }

    fn begin(&self, op: Op) -> Instant {
        self.shared.profiler().arrive(op);
        self.shared.arrived();
        Instant::now()
    }

    /// Runs a request now, on the session thread, counting it in the profiler: `f` returns
    /// whether it succeeded and the bytes it moved.
    pub(crate) fn inline(&self, op: Op, f: impl FnOnce(&S) -> (bool, u64)) {
        let start = self.begin(op);
        let (ok, bytes) = f(&self.shared);
        self.shared
            .profiler()
            .record(op, ok, bytes, start.elapsed());
        self.shared.finished();
    }

    /// Runs a request on a worker (see [`Lanes::inline`]); on the calling thread once the
    /// workers are stopped.
    pub(crate) fn worker(&self, op: Op, f: impl FnOnce(&S) -> (bool, u64) + Send + 'static) {
        let start = self.begin(op);
        let job = move |sh: &S| {
            let (ok, bytes) = f(sh);
            sh.profiler().record(op, ok, bytes, start.elapsed());
            sh.finished();
        };
        match &self.tx {
            Some(tx) => {
                let job: Job<S> = Box::new(job);
                if let Err(mpsc::SendError(job)) = tx.send(job) {
                    job(&self.shared);
                }
            }
            None => job(&self.shared),
        }
    }

    /// Answers a request that needs nothing done with success, counting it.
    pub(crate) fn ok(&self, op: Op, reply: ReplyEmpty) {
        self.inline(op, |_| {
            reply.ok();
            (true, 0)
        });
    }

    /// Answers an extended-attribute request, counting it: not supported, and `ENOSYS`
    /// tells the kernel not to ask again.
    pub(crate) fn no_xattr(&self, op: Op, reply: ReplyXattr) {
        self.inline(op, |_| {
            reply.error(libc::ENOSYS);
            (false, 0)
        });
    }

    /// Lets the queued jobs finish and stops the workers (at `destroy`); `who` names a
    /// worker in the message about one that panicked.
    pub(crate) fn stop(&mut self, who: &str) {
        drop(self.tx.take());
        for w in self.workers.drain(..) {
            if w.join().is_err() {
                tracing::error!("a {who} panicked");
            }
        }
    }
}

/// An error a request replies with: its errno.
pub(crate) trait ReplyError {
    /// The errno to reply with (reporting on stderr an error that is not the caller's).
    fn reply_errno(self) -> i32;
}

impl ReplyError for i32 {
    fn reply_errno(self) -> i32 {
        self
    }
}

impl ReplyError for FsError {
    fn reply_errno(self) -> i32 {
        if self.is_io() {
            tracing::error!("{self}");
        }
        self.errno()
    }
}

/// Unwraps `$e`, or replies with its error and returns `(false, 0)` from the request's
/// closure.
macro_rules! try_reply {
    ($reply:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => {
                $reply.error($crate::serve::ReplyError::reply_errno(e));
                return (false, 0);
            }
        }
    };
}
pub(crate) use try_reply;
