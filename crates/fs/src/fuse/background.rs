//! The background cleaner: polls the triggers ([`crate::Triggers`]) and cleans in steps of
//! `step_bytes`, taking the file system's lock for one step at a time.
//!
//! * **Idle**: no request for `idle_after` → clean while no request arrives (a request
//!   cancels it: the next poll sees a fresh request and stops).
//! * **Low** (usable free space below `low_free`): clean, but only while no request is being
//!   served; a step waits for a moment with none.
//! * **High** (below `high_free`), or a writer that found no room: clean step after step;
//!   the writer thread waits for it ([`Control::wait_for_room`]).
//!
//! With [`super::FuseFs::device_idle`], the thread also lets an emulated drive's virtual
//! clock run through the periods in which nothing happens, so that idle time is device idle
//! time (the drive's own background work, such as destaging its write cache, runs then).

use super::Shared;
use crate::cleaner::CleanStep;
use crate::fs::zones::Stream;
use crate::triggers::Urgency;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How often the cleaner looks at the triggers when nothing wakes it.
const POLL: Duration = Duration::from_millis(50);
/// How many times in a row the cleaner must find nothing to clean before a writer waiting
/// for room gets `ENOSPC`.
const STUCK_TRIES: u32 = 3;
/// How long a low-priority step waits for a moment without requests.
const YIELD: Duration = Duration::from_millis(2);

/// Controls shared with the other threads.
#[derive(Default)]
pub(crate) struct Control {
    stop: AtomicBool,
    /// A writer found no room: clean with high priority.
    want_room: AtomicBool,
    /// Bumped when the cleaner found nothing to clean after a writer asked for room.
    stuck: AtomicU64,
    /// Run the drive's clock through idle periods.
    pub(super) device_idle: AtomicBool,
    /// Cleanings started by each trigger: idle, low, high (reports).
    pub(super) steps: [AtomicU64; 3],
    wake: Mutex<bool>,
    cv: Condvar,
}

impl Control {
    /// Stops the cleaner at its next poll.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.notify();
    }

    fn notify(&self) {
        let mut w = self.wake.lock().unwrap_or_else(|e| e.into_inner());
        *w = true;
        self.cv.notify_all();
    }

    fn sleep(&self, d: Duration) {
        let w = self.wake.lock().unwrap_or_else(|e| e.into_inner());
        let (mut w, _) = self
            .cv
            .wait_timeout_while(w, d, |w| !*w)
            .unwrap_or_else(|e| e.into_inner());
        *w = false;
    }

    /// Asks the cleaner to clean with high priority now.
    pub(super) fn ask(&self) {
        self.want_room.store(true, Ordering::Release);
        self.notify();
    }

    /// Asks the cleaner for room and waits until a zone has room (true), the cleaner found
    /// nothing to clean [`STUCK_TRIES`] times in a row (false), or `timeout` passed (false).
    pub(super) fn wait_for_room(&self, sh: &Shared, timeout: Duration) -> bool {
        let start = Instant::now();
        let mut stuck = self.stuck.load(Ordering::Acquire);
        let mut nothing = 0;
        self.want_room.store(true, Ordering::Release);
        self.notify();
        loop {
            if self.stop.load(Ordering::Acquire) {
                return false;
            }
            let seen = sh.progress.now();
            {
                let g = sh.r();
                match g.as_ref() {
                    Some(fs) => {
                        if fs.pick_zone(Stream::User, 1, false).is_some() {
                            return true;
                        }
                    }
                    None => return false,
                }
            }
            let now = self.stuck.load(Ordering::Acquire);
            if now != stuck {
                // The cleaner found nothing to clean just now. A zone held by a write in
                // flight, or one a stream is still filling, can be cleanable a moment later:
                // ask again, and give up only when it keeps finding nothing.
                nothing += 1;
                if nothing >= STUCK_TRIES {
                    return false;
                }
                stuck = now;
                self.want_room.store(true, Ordering::Release);
                self.notify();
            }
            if start.elapsed() > timeout {
                return false;
            }
            sh.progress.wait_past(seen, POLL);
        }
    }
}

/// The cleaner thread's loop.
pub(super) fn run(sh: &Shared) {
    let c = &sh.cleaner;
    let t = sh.triggers();
    let mut last_seen = (sh.requests.load(Ordering::Relaxed), Instant::now());
    let mut dev_mark = None;
    while !c.stop.load(Ordering::Acquire) {
        let now_req = sh.requests.load(Ordering::Relaxed);
        if now_req != last_seen.0 {
            last_seen = (now_req, Instant::now());
            dev_mark = None;
        }
        let idle_for = last_seen.1.elapsed();
        if c.device_idle.load(Ordering::Relaxed) && sh.busy.load(Ordering::Acquire) == 0 {
            advance_device_clock(sh, &mut dev_mark);
        }
        let want_room = c.want_room.load(Ordering::Acquire);
        let urgency = {
            let g = sh.r();
            let Some(fs) = g.as_ref() else { break };
            let u = fs.urgency(&t, idle_for.as_nanos() as u64);
            if want_room && (fs.cleaning_zone().is_some() || fs.clean_victim().is_some()) {
                Urgency::High
            } else {
                u
            }
        };
        match urgency {
            Urgency::None => {
                if want_room {
                    // A writer waits for room the cleaner cannot make.
                    c.want_room.store(false, Ordering::Release);
                    c.stuck.fetch_add(1, Ordering::AcqRel);
                    sh.progress.tick();
                }
                c.sleep(POLL);
                continue;
            }
            Urgency::Low if sh.busy.load(Ordering::Acquire) > 0 => {
                c.sleep(YIELD);
                continue;
            }
            _ => {}
        }
        let step = {
            let mut g = sh.w();
            let Some(fs) = g.as_mut() else { break };
            fs.clean_step(t.step_bytes)
        };
        let slot = match urgency {
            Urgency::Idle => 0,
            Urgency::Low => 1,
            _ => 2,
        };
        match step {
            Ok(CleanStep::Nothing) => {
                if want_room {
                    c.want_room.store(false, Ordering::Release);
                    c.stuck.fetch_add(1, Ordering::AcqRel);
                }
                sh.progress.tick();
                c.sleep(POLL);
            }
            Ok(CleanStep::Moved(_)) => {
                c.steps[slot].fetch_add(1, Ordering::Relaxed);
                sh.progress.tick();
            }
            Ok(CleanStep::Done(_)) => {
                c.steps[slot].fetch_add(1, Ordering::Relaxed);
                c.want_room.store(false, Ordering::Release);
                sh.progress.tick();
            }
            Err(e) => {
                tracing::error!("background cleaning: {e}");
                if want_room {
                    c.want_room.store(false, Ordering::Release);
                    c.stuck.fetch_add(1, Ordering::AcqRel);
                }
                sh.progress.tick();
                c.sleep(POLL);
            }
        }
    }
    // Let writers waiting for room go.
    c.stuck.fetch_add(1, Ordering::AcqRel);
    sh.progress.tick();
}

/// Lets a drive with a virtual clock idle for as long as wall time passed since the last
/// look (a drive whose clock follows wall time on its own is left alone).
fn advance_device_clock(sh: &Shared, mark: &mut Option<(Instant, u64)>) {
    let g = sh.r();
    let Some(fs) = g.as_ref() else { return };
    let dev = fs.device().clone();
    drop(g);
    let now = dev.now();
    if let Some((wall, dev_then)) = *mark {
        let wall_gap = wall.elapsed().as_nanos() as u64;
        let dev_gap = now.saturating_sub(dev_then);
        if dev_gap < wall_gap / 2 {
            dev.idle(wall_gap - dev_gap);
        }
    }
    *mark = Some((Instant::now(), dev.now()));
}
