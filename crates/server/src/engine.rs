//! The engine: it owns the [`Store`] and executes requests in rounds. A round is every
//! request the network loop gathered in one poll iteration (or, at the engine thread, since
//! the previous round), from any number of connections; its writes become one engine batch
//! (synced under `appendfsync always`, so many clients share one sync: group commit), and its
//! replies go back only after that batch is written. Small rounds are executed by the
//! network loop itself while the engine thread is idle ([`Engine::try_inline`]); the others
//! by the engine thread ([`run`]). Under `everysec` a sync follows within a second of any
//! write, from the engine thread's timer.

use crate::backend::Backend;
use crate::commands::{self, ConnState, Ctx, Cursors};
use crate::error::BackendError;
use crate::options::AppendFsync;
use crate::resp::{Batch, Reply};
use crate::stats::{Shared, Stats};
use crate::store::{now_ms, Store};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// Requests of one connection.
#[derive(Debug)]
pub(crate) struct Job {
    /// The connection's slot.
    pub token: usize,
    /// The connection's generation (a reused slot has another).
    pub gen: u64,
    /// Its requests, in order.
    pub cmds: Batch,
    /// A buffer to write the replies into (the connection's spare one, empty).
    pub reply: Vec<u8>,
    /// Its session.
    pub state: ConnState,
}

/// The replies to a [`Job`].
#[derive(Debug)]
pub(crate) struct Done {
    /// The connection's slot.
    pub token: usize,
    /// Its generation.
    pub gen: u64,
    /// One reply per request executed.
    pub reply: Vec<u8>,
    /// The session after the requests.
    pub state: ConnState,
    /// Requests not executed because the replies passed the output limit: the connection is
    /// to be closed.
    pub overflow: bool,
    /// The job's request batch, emptied, for the connection to parse its next round into.
    pub cmds: Batch,
}

/// What the network loop sends.
#[derive(Debug)]
pub(crate) enum ToEngine {
    /// Execute these.
    Round(Vec<Job>),
    /// Make everything durable and stop.
    Stop,
}

/// The engine thread's state.
pub(crate) struct Engine {
    store: Store,
    shared: Arc<Shared>,
    cursors: Cursors,
    last_sync: Instant,
    last_save: u64,
}

const SYNC_PERIOD: Duration = Duration::from_secs(1);

/// A job's reply buffer starts with room for this much (short replies never grow it).
const REPLY_CAPACITY: usize = 256;

impl Engine {
    /// Opens the data (see [`Store::open`]).
    pub(crate) fn new(
        backend: Box<dyn Backend>,
        shared: Arc<Shared>,
    ) -> Result<Self, BackendError> {
        Ok(Engine {
            store: Store::open(backend)?,
            shared,
            cursors: Cursors::default(),
            last_sync: Instant::now(),
            last_save: now_ms() / 1000,
        })
    }

    /// Executes `jobs` in the calling thread (the network loop) if the engine is free,
    /// without a sync (the engine thread's timer makes `everysec` writes durable); gives the
    /// jobs back if the engine thread holds the engine.
    pub(crate) fn try_inline(
        engine: &Mutex<Engine>,
        jobs: Vec<Job>,
    ) -> Result<Vec<Done>, Vec<Job>> {
        match engine.try_lock() {
            Ok(mut e) => Ok(e.round(jobs, false)),
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner().round(jobs, false)),
            Err(TryLockError::WouldBlock) => Err(jobs),
        }
    }

    /// The `everysec` timer: syncs writes older than a second.
    fn tick(&mut self) {
        if self.shared.opts.appendfsync == AppendFsync::Everysec
            && self.store.needs_sync()
            && self.last_sync.elapsed() >= SYNC_PERIOD
        {
            if self.store.commit(true).is_err() {
                Stats::add(&self.shared.stats.engine_errors, 1);
            }
            Stats::add(&self.shared.stats.syncs, 1);
            self.last_sync = Instant::now();
        }
    }

    /// Executes one round and commits its writes (synced as the policy asks if `may_sync`);
    /// returns the replies.
    fn round(&mut self, jobs: Vec<Job>, may_sync: bool) -> Vec<Done> {
        Stats::add(&self.shared.stats.rounds, 1);
        let now = now_ms();
        let max_output = self.shared.opts.max_output;
        let mut done = Vec::with_capacity(jobs.len());
        // Which jobs wrote, so that a failed commit turns their replies into errors.
        let mut wrote = Vec::with_capacity(jobs.len());
        for job in jobs {
            let Job {
                token,
                gen,
                mut cmds,
                mut state,
                reply: mut out,
            } = job;
            out.clear();
            out.reserve(REPLY_CAPACITY);
            let mut overflow = false;
            let mut executed = 0;
            let before = self.store.write_count();
            // One argument list, reused by every request of the job.
            let mut argv: Vec<&[u8]> = Vec::new();
            for i in 0..cmds.len() {
                cmds.args_into(i, &mut argv);
                let mut ctx = Ctx {
                    store: &mut self.store,
                    out: &mut out,
                    conn: &mut state,
                    shared: &self.shared,
                    cursors: &mut self.cursors,
                    last_save: &mut self.last_save,
                    now,
                };
                commands::execute(&mut ctx, &argv);
                executed += 1;
                if out.len() > max_output {
                    overflow = true;
                    break;
                }
                if state.close {
                    break;
                }
            }
            drop(argv);
            cmds.clear(crate::net::KEEP_SPARE);
            wrote.push((self.store.write_count() != before, executed));
            done.push(Done {
                token,
                gen,
                reply: out,
                state,
                overflow,
                cmds,
            });
        }
        if let Err(e) = self.finish_round(may_sync) {
            Stats::add(&self.shared.stats.engine_errors, 1);
            let msg = format!("ERR engine: {e} (the write was not applied)");
            for (d, (w, n)) in done.iter_mut().zip(wrote) {
                if w {
                    d.reply.clear();
                    let mut r = Reply {
                        out: &mut d.reply,
                        proto: d.state.proto,
                    };
                    for _ in 0..n {
                        r.error(&msg);
                    }
                }
            }
        }
        done
    }

    /// Hands the round's writes to the engine, synced as the policy asks (`may_sync` false:
    /// an `everysec` sync is left to the timer).
    fn finish_round(&mut self, may_sync: bool) -> Result<(), BackendError> {
        let sync = match self.shared.opts.appendfsync {
            AppendFsync::Always => true,
            AppendFsync::Everysec => may_sync && self.last_sync.elapsed() >= SYNC_PERIOD,
            AppendFsync::No => false,
        };
        if !(self.store.is_dirty() || sync && self.store.needs_sync()) {
            return Ok(());
        }
        let dirty = self.store.is_dirty();
        self.store.commit(sync)?;
        if dirty {
            Stats::add(&self.shared.stats.commits, 1);
        }
        if sync {
            Stats::add(&self.shared.stats.syncs, 1);
            self.last_sync = Instant::now();
        }
        Ok(())
    }
}

/// The engine thread: serves rounds until [`ToEngine::Stop`] (or the network loop goes
/// away), then commits, syncs and closes the backend. The network loop must have dropped its
/// handle on `engine` before it sends `Stop`.
pub(crate) fn run(
    engine: Arc<Mutex<Engine>>,
    rx: Receiver<ToEngine>,
    tx: Sender<Vec<Done>>,
    wake: impl Fn(),
) -> Result<(), BackendError> {
    loop {
        let wait = {
            let e = lock(&engine);
            match e.shared.opts.appendfsync {
                AppendFsync::Everysec if e.store.needs_sync() => {
                    SYNC_PERIOD.saturating_sub(e.last_sync.elapsed())
                }
                _ => SYNC_PERIOD,
            }
        };
        let msg = match rx.recv_timeout(wait) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                lock(&engine).tick();
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let ToEngine::Round(mut jobs) = msg else {
            break;
        };
        let mut stop = false;
        // Everything that queued while the previous round was syncing joins this one.
        while let Ok(m) = rx.try_recv() {
            match m {
                ToEngine::Round(more) => jobs.extend(more),
                ToEngine::Stop => {
                    stop = true;
                    break;
                }
            }
        }
        let done = lock(&engine).round(jobs, true);
        if tx.send(done).is_err() {
            break;
        }
        wake();
        if stop {
            break;
        }
    }
    let mut e = match Arc::try_unwrap(engine) {
        Ok(m) => m.into_inner().unwrap_or_else(PoisonError::into_inner),
        Err(shared) => {
            // Still shared (the network loop ended abnormally): make everything durable; the
            // backend closes when the last handle goes.
            return lock(&shared).store.commit(true);
        }
    };
    let r = e.store.commit(true);
    let backend = e.store.into_backend();
    let closed = backend.close();
    r.and(closed)
}

/// Locks the engine. A panic in the network loop's inline round poisons the lock; the data is
/// as the last committed round left it, so serving (and closing) goes on.
fn lock(e: &Mutex<Engine>) -> MutexGuard<'_, Engine> {
    e.lock().unwrap_or_else(PoisonError::into_inner)
}
