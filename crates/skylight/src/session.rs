//! The state one probe carries from test to test: the target, the observer, a seeded random
//! generator, what earlier tests found, the report under construction and the plots.

use crate::error::{ProbeError, Result, TargetError};
use crate::plot::Plot;
use crate::report::Report;
use crate::targets::{ClockKind, Op, Target};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;
use tegula_device::{Nanos, MS, SEC};

/// Progress callbacks; the binary draws a progress bar per test.
pub trait Observer {
    /// A test starts; `total` is its number of steps (an estimate).
    fn begin(&mut self, _id: u8, _name: &str, _total: u64) {}
    /// `done` of the current test's steps are complete.
    fn progress(&mut self, _done: u64) {}
    /// A test ended with this verdict.
    fn finish(&mut self, _id: u8, _verdict: &str) {}
    /// Whether to go on (false stops the probe at the next command).
    fn keep_going(&mut self) -> bool {
        true
    }
}

/// An observer that ignores everything.
pub struct Quiet;

impl Observer for Quiet {}

/// Journal entry structure found by TEST 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Entries {
    pub min: u64,
    pub quantum: u64,
    pub oob: u64,
    /// Sustained media rate of the cache writes, bytes per millisecond.
    pub rate: f64,
    /// The largest data area of one entry, when the sweep saw a second entry: the largest
    /// batch that stayed one entry, to one block.
    pub max: Option<u64>,
}

/// What earlier tests found, for later ones.
#[derive(Debug, Clone, Default)]
pub(crate) struct Findings {
    /// TEST 1: shingled (fixed write latency).
    pub smr: Option<bool>,
    /// TEST 1: flash cache.
    pub flash: Option<bool>,
    /// TEST 1: a volatile write cache (plain writes complete before they are durable).
    pub volatile: Option<bool>,
    /// TEST 1: the fixed QD1 write latency, ms.
    pub write_ms: Option<f64>,
    /// TEST 1: queued writes pack into one internal write.
    pub packs: Option<bool>,
    /// TEST 1: journal entries.
    pub entries: Option<Entries>,
    /// TEST 1: typical random read latency over the whole drive, ms.
    pub random_read_ms: Option<f64>,
    /// TEST 3: aggressive (idle-time) cleaning.
    pub aggressive: Option<bool>,
    /// TEST 3: idle delay before cleaning, ns.
    pub idle_delay: Option<Nanos>,
    /// TEST 4: cleaning time of a one-block band, ns.
    pub band_clean: Option<Nanos>,
    /// TEST 6: small QD1 writes before cleaning starts.
    pub small_writes: Option<u64>,
    /// TEST 8: usable cache bytes.
    pub usable: Option<u64>,
    /// TEST 7: map entries.
    pub map_entries: Option<u64>,
    /// TEST 7: writes before cleaning started at QD31 (the map at its watermark).
    pub map_soft: Option<u64>,
    /// TESTs 9-10: the pool of blocks and its write size.
    pub pool: Vec<u64>,
    /// TESTs 9-10: the pool's write size.
    pub pool_unit: u64,
    /// TEST 9: whether cleaning started.
    pub t9_cleaned: Option<bool>,
    /// TEST 11: band sizes (offset, bytes).
    pub bands: Vec<(u64, u64)>,
    /// TEST 11: every region's band seen in three runs or more.
    pub bands_sure: bool,
}

/// One probe in progress.
pub(crate) struct Session<'a> {
    target: &'a mut dyn Target,
    obs: &'a mut dyn Observer,
    pub rng: SmallRng,
    /// Block size, bytes.
    pub bs: u64,
    /// Capacity, bytes.
    pub cap: u64,
    pub f: Findings,
    pub report: Report,
    pub plots: Vec<Plot>,
    test: u8,
    done: u64,
    started: Instant,
    /// Whether the cache may hold data written by earlier tests.
    pub dirty: bool,
    /// The current test's limits: a wall-clock deadline and a device-clock deadline (seconds).
    limit: Option<Limit>,
    /// What the current test is doing (named when it runs out of budget).
    pub stage: String,
    /// Tests that ran out of their budget, with what they spent.
    pub cut: Vec<(u8, String)>,
}

/// The budget of the test in progress.
#[derive(Debug, Clone, Copy)]
struct Limit {
    wall_start: Instant,
    wall_s: f64,
    dev_start: f64,
    dev_s: f64,
}

impl<'a> Session<'a> {
    /// A session over `target`.
    pub fn new(target: &'a mut dyn Target, obs: &'a mut dyn Observer, seed: u64) -> Self {
        let report = Report::new(
            target.describe(),
            target.clock(),
            target.capacity(),
            target.block_size(),
        );
        Session {
            bs: target.block_size().max(4096),
            cap: target.capacity(),
            target,
            obs,
            rng: SmallRng::seed_from_u64(seed),
            f: Findings::default(),
            report,
            plots: Vec::new(),
            test: 0,
            done: 0,
            started: Instant::now(),
            dirty: false,
            limit: None,
            stage: String::new(),
            cut: Vec::new(),
        }
    }

    /// Limits the current test to `wall_s` seconds of wall time and `dev_s` seconds of the
    /// target's clock from now: a command past either fails with
    /// [`ProbeError::OutOfBudget`].
    pub fn limit(&mut self, wall_s: f64, dev_s: f64) {
        self.limit = Some(Limit {
            wall_start: Instant::now(),
            wall_s,
            dev_start: self.now_s(),
            dev_s,
        });
        self.stage.clear();
    }

    /// Lifts the current test's limits.
    pub fn unlimit(&mut self) {
        self.limit = None;
    }

    /// Names what the current test is doing, for the reason given if it runs out of budget.
    pub fn stage(&mut self, what: impl Into<String>) {
        self.stage = what.into();
    }

    /// Why the current test is over its budget, if it is.
    fn over_budget(&self) -> Option<String> {
        let l = self.limit?;
        let wall = l.wall_start.elapsed().as_secs_f64();
        let dev = self.now_s() - l.dev_start;
        if wall <= l.wall_s && dev <= l.dev_s {
            return None;
        }
        let doing = if self.stage.is_empty() {
            String::new()
        } else {
            format!(", while {}", self.stage)
        };
        Some(if wall > l.wall_s {
            format!(
                "{wall:.0} s of wall time (budget {:.0} s), {:.1} h on the drive's clock{doing}",
                l.wall_s,
                dev / 3600.0
            )
        } else {
            format!(
                "{:.1} h on the drive's clock (budget {:.1} h), {wall:.0} s of wall time{doing}",
                dev / 3600.0,
                l.dev_s / 3600.0
            )
        })
    }

    /// Starts test `id`.
    pub fn begin(&mut self, id: u8, name: &str, total: u64) {
        self.test = id;
        self.done = 0;
        self.obs.begin(id, name, total);
    }

    /// Ends the current test.
    pub fn finish(&mut self, verdict: &str) {
        self.obs.finish(self.test, verdict);
    }

    /// Advances the current test's progress by `n` steps.
    pub fn tick(&mut self, n: u64) {
        self.done += n;
        self.obs.progress(self.done);
    }

    fn fail(&self, e: TargetError) -> ProbeError {
        ProbeError::Target {
            test: self.test,
            source: e,
        }
    }

    fn check_stop(&mut self) -> Result<()> {
        if !self.obs.keep_going() {
            return Err(ProbeError::Stopped {
                after_s: self.started.elapsed().as_secs_f64(),
            });
        }
        match self.over_budget() {
            Some(spent) => Err(ProbeError::OutOfBudget {
                test: self.test,
                spent,
            }),
            None => Ok(()),
        }
    }

    /// Whether pauses are free (virtual time).
    pub fn virtual_time(&self) -> bool {
        self.target.clock() == ClockKind::Virtual
    }

    /// Reads `len` bytes at `off`; latency in ms.
    pub fn read(&mut self, off: u64, len: u64) -> Result<f64> {
        self.check_stop()?;
        let r = self.target.read(off, len);
        r.map(ms).map_err(|e| self.fail(e))
    }

    /// Reads, keeping a media error as a value (`Ok(Err(..))`).
    pub fn try_read(
        &mut self,
        off: u64,
        len: u64,
    ) -> Result<std::result::Result<f64, TargetError>> {
        self.check_stop()?;
        match self.target.read(off, len) {
            Ok(l) => Ok(Ok(ms(l))),
            Err(e @ TargetError::Media { .. }) => Ok(Err(e)),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// A durable (FUA) write of `len` bytes at `off`; latency in ms.
    pub fn write(&mut self, off: u64, len: u64) -> Result<f64> {
        self.check_stop()?;
        self.dirty = true;
        let r = self.target.write(off, len, true);
        r.map(ms).map_err(|e| self.fail(e))
    }

    /// A write that may complete into a volatile cache; the raw result (power loss is a value
    /// here, TEST 13 provokes it).
    pub fn write_cached(
        &mut self,
        off: u64,
        len: u64,
    ) -> Result<std::result::Result<f64, TargetError>> {
        self.check_stop()?;
        self.dirty = true;
        match self.target.write(off, len, false) {
            Ok(l) => Ok(Ok(ms(l))),
            Err(e @ (TargetError::PowerLoss | TargetError::Media { .. })) => Ok(Err(e)),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// FLUSH; latency in ms.
    pub fn flush(&mut self) -> Result<f64> {
        self.check_stop()?;
        let r = self.target.flush();
        r.map(ms).map_err(|e| self.fail(e))
    }

    /// A queued batch; each command's latency from submission, in ms.
    pub fn batch(&mut self, ops: &[Op]) -> Result<Vec<f64>> {
        self.check_stop()?;
        if ops.iter().any(|o| matches!(o, Op::Write { .. })) {
            self.dirty = true;
        }
        let res = self.target.submit(ops);
        let mut out = Vec::with_capacity(res.len());
        for r in res {
            out.push(r.map(ms).map_err(|e| self.fail(e))?);
        }
        Ok(out)
    }

    /// A queued batch of durable writes of `len` bytes at `offs`; each one's latency until
    /// it is durable, ms.
    pub fn write_batch(&mut self, offs: &[u64], len: u64) -> Result<Vec<f64>> {
        let ops = self.durable_batch(offs.iter().map(|&o| (o, len)));
        let flush = matches!(ops.last(), Some(Op::Flush));
        let lat = self.batch(&ops)?;
        Ok(if flush {
            // Durable at the FLUSH.
            let end = lat.last().copied().unwrap_or(0.0);
            vec![end; ops.len() - 1]
        } else {
            lat
        })
    }

    /// The commands of a queued batch of durable writes. Skylight disabled the volatile cache
    /// (hdparm) so that FUA-free queued writes reach the persistent cache together; here a
    /// drive with a volatile cache (TEST 1) takes a FUA write by itself, through to the
    /// persistent cache, so a batch of small writes is sent plain and made durable by a FLUSH
    /// in the same queue: the drive destages them together, as it would pack them. Writes of
    /// 512 KiB and more stay FUA: with a volatile cache a drive may write long runs to their
    /// bands directly (section 4.11), bypassing the cache the tests measure.
    pub fn durable_batch(&self, writes: impl Iterator<Item = (u64, u64)>) -> Vec<Op> {
        let writes: Vec<(u64, u64)> = writes.collect();
        let plain = self.f.volatile == Some(true)
            && writes.len() > 1
            && writes.iter().all(|w| w.1 < 512 << 10);
        let mut ops: Vec<Op> = writes
            .iter()
            .map(|&(offset, len)| Op::Write {
                offset,
                len,
                fua: !plain,
            })
            .collect();
        if plain {
            ops.push(Op::Flush);
        }
        ops
    }

    /// Leaves the target idle for `s` seconds.
    pub fn idle(&mut self, s: f64) -> Result<()> {
        self.check_stop()?;
        self.target.idle((s.max(0.0) * SEC as f64) as Nanos);
        Ok(())
    }

    /// The target's clock in seconds.
    pub fn now_s(&self) -> f64 {
        self.target.now() as f64 / SEC as f64
    }

    /// A random block-aligned offset of a `len`-byte command inside `[lo, hi)`.
    pub fn rand_off(&mut self, lo: u64, hi: u64, len: u64) -> u64 {
        let bs = self.bs;
        let lo = lo.div_ceil(bs) * bs;
        let hi = hi.min(self.cap);
        if hi <= lo + len {
            return lo.min(self.cap.saturating_sub(len)) / bs * bs;
        }
        let blocks = (hi - lo - len) / bs;
        lo + self.rng.gen_range(0..=blocks) * bs
    }

    /// Rounds `x` down to a block.
    pub fn align(&self, x: u64) -> u64 {
        x / self.bs * self.bs
    }

    /// The power control of the target.
    pub fn power(&self) -> Option<&dyn crate::targets::PowerControl> {
        self.target.power()
    }

    /// Pauses `pause` seconds between reading a block and reading the next one, and tells
    /// whether the drive stayed quiet: the second read comes from the look-ahead buffer (a
    /// fraction of a millisecond) unless the drive used its heads meanwhile (cleaning), which
    /// costs it a seek. Returns (quiet, latency of the second read in ms).
    pub fn quiet_after(&mut self, pause: f64) -> Result<(bool, f64)> {
        let (q, l, _) = self.quiet_gap(pause)?;
        Ok((q, l))
    }

    /// [`Session::quiet_after`], also returning the idle time measured on the target's clock
    /// between the first read's completion and the second read's submission, seconds (what
    /// the pause really was: a sleep on a busy host overshoots).
    pub fn quiet_gap(&mut self, pause: f64) -> Result<(bool, f64, f64)> {
        let off = self.rand_off(self.cap / 4, self.cap / 4 * 3, 2 * self.bs);
        self.read(off, self.bs)?;
        let t0 = self.now_s();
        self.idle(pause)?;
        let gap = self.now_s() - t0;
        let l = self.read(off + self.bs, self.bs)?;
        Ok((l < self.hit_ms(), l, gap))
    }

    /// Latency below which a read came from the drive's buffer, ms.
    pub fn hit_ms(&self) -> f64 {
        (0.25 * self.f.random_read_ms.unwrap_or(16.0)).clamp(0.5, 5.0)
    }

    /// Brings the drive to an empty persistent cache before a test that needs one: a secure
    /// erase when the target offers it, else idle time until background cleaning has nothing
    /// left (aggressive drives). Returns how, or why not.
    pub fn clean_slate(&mut self) -> Result<String> {
        if !self.dirty {
            return Ok("the cache holds nothing yet".into());
        }
        match self.target.secure_erase() {
            Ok(true) => {
                self.dirty = false;
                return Ok("secure erase".into());
            }
            Ok(false) => {}
            Err(e) => return Err(self.fail(e)),
        }
        if self.f.aggressive != Some(true) {
            return Ok("the cache may hold earlier tests' data (no secure erase; cleaning is not idle-time)".into());
        }
        self.stage("idling until cleaning has emptied the cache");
        let delay = self.f.idle_delay.unwrap_or(SEC) as f64 / SEC as f64;
        match self.idle_until_quiet(delay + 2.0)? {
            Ok(spent) => {
                self.dirty = false;
                Ok(format!("{spent:.0} s idle: cleaning finished"))
            }
            Err(spent) => Ok(format!("still cleaning after {spent:.0} s idle")),
        }
    }

    /// Idles in doubling steps from `first_step` seconds (at most 600 s each) until the drive
    /// stays quiet over one ([`Session::quiet_after`]), within a budget (10^6 s of modelled
    /// time, 300 s of wall time): `Ok(seconds idled)`, or `Err(seconds idled)` when the
    /// drive was still busy at the end of the budget.
    pub fn idle_until_quiet(&mut self, first_step: f64) -> Result<std::result::Result<f64, f64>> {
        let budget = if self.virtual_time() { 1e6 } else { 300.0 };
        let mut spent = 0.0;
        let mut step = first_step;
        while spent < budget {
            let (quiet, _) = self.quiet_after(step)?;
            spent += step;
            if quiet {
                return Ok(Ok(spent));
            }
            step = (step * 2.0).min(600.0);
        }
        Ok(Err(spent))
    }
}

/// Extra latency (ms) above which a read waited for background work.
pub(crate) fn busy_threshold(typical: f64) -> f64 {
    (typical * 2.0).max(40.0)
}

/// Nanoseconds to milliseconds.
pub(crate) fn ms(ns: Nanos) -> f64 {
    ns as f64 / MS as f64
}
