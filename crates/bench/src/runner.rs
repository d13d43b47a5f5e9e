//! Measures one benchmark phase: runs the per-thread bodies, records every operation's latency
//! in an HDR histogram, samples throughput (wall and device time) and compaction bytes over
//! time, reports progress to the [`Observer`], and turns it all into a [`BenchResult`].

use crate::error::{Error, Result};
use crate::latency::LatencyHist;
use crate::observer::Observer;
use crate::op_clock::OpClock;
use crate::report::{BenchResult, OpLatency, Sample};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tegula_kv::SyncPolicy;
use tegula_kv::{EngineFactory, KvEngine};

/// How often the monitor samples throughput for plots and the progress bar.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// Phases of fewer operations are over too soon for a progress bar to help.
pub const PROGRESS_MIN_OPS: u64 = 50_000;

/// Per-thread measurement state handed to a benchmark body.
///
/// Latency is measured as db_bench's `--histogram` measures it: the time since the thread's
/// previous operation completed (or since it started) — the operation plus the harness's own
/// per-operation work between two operations (formatting a key, a random draw: tens of
/// nanoseconds). [`ThreadCtx::done`] times every operation while they take more than a few
/// µs and a random sample once they are faster ([`crate::op_clock`]: reading the clock would
/// otherwise cost a tenth of a fast operation); [`ThreadCtx::record`] times from an explicit
/// start, every operation, for operations that are not back to back.
pub struct ThreadCtx<'a> {
    all: LatencyHist,
    kinds: Vec<LatencyHist>,
    ops: u64,
    bytes: u64,
    found: u64,
    lookups: u64,
    unreported: u64,
    clock: OpClock,
    stopped: bool,
    shared_ops: &'a AtomicU64,
    stop: &'a AtomicBool,
}

/// Operations a thread does between two updates of the shared progress counter (and two
/// looks at the stop flag).
const REPORT_EVERY: u64 = 64;

impl ThreadCtx<'_> {
    /// Counts one operation of kind `kind` (an index into the phase's kind names) that
    /// completed now, having moved `bytes` of keys and values, and records its latency if it
    /// is one of the timed ones: the time since the thread's previous operation (see
    /// [`ThreadCtx`]). Fails with [`Error::Interrupted`] once the run was asked to stop (seen
    /// every 64 operations).
    #[inline]
    pub fn done(&mut self, kind: usize, bytes: u64) -> Result<()> {
        if let Some(ns) = self.clock.completed() {
            self.latency(kind, ns);
        }
        self.count(bytes)
    }

    /// Records one completed operation of kind `kind` that started at `start`; like
    /// [`ThreadCtx::done`], but always timed.
    #[inline]
    pub fn record(&mut self, kind: usize, start: Instant, bytes: u64) -> Result<()> {
        let now = Instant::now();
        let ns = now.saturating_duration_since(start).as_nanos();
        self.clock.completed_at(now);
        self.record_ns(kind, ns.min(u64::MAX as u128) as u64, bytes)
    }

    /// Records one operation that took `ns` nanoseconds; like [`ThreadCtx::done`].
    #[inline]
    pub fn record_ns(&mut self, kind: usize, ns: u64, bytes: u64) -> Result<()> {
        self.latency(kind, ns);
        self.count(bytes)
    }

    #[inline]
    fn latency(&mut self, kind: usize, ns: u64) {
        self.all.record(ns);
        if let Some(h) = self.kinds.get_mut(kind) {
            h.record(ns);
        }
    }

    #[inline]
    fn count(&mut self, bytes: u64) -> Result<()> {
        self.ops += 1;
        self.bytes += bytes;
        self.unreported += 1;
        if self.unreported >= REPORT_EVERY {
            self.report();
        }
        if self.stopped {
            return Err(Error::Interrupted);
        }
        Ok(())
    }

    #[cold]
    fn report(&mut self) {
        self.shared_ops
            .fetch_add(self.unreported, Ordering::Relaxed);
        self.unreported = 0;
        if self.stop.load(Ordering::Relaxed) {
            self.stopped = true;
        }
    }

    /// Records a latency for kind `kind` only, without counting an operation (YCSB records
    /// the parts of a read-modify-write as well as the whole).
    pub fn record_part(&mut self, kind: usize, start: Instant) {
        let ns = start.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        if let Some(h) = self.kinds.get_mut(kind) {
            h.record(ns);
        }
    }

    /// Starts the next operation's latency now (after untimed work between operations).
    pub fn restart_clock(&mut self) {
        self.clock.restart();
    }

    /// Counts a lookup (a read, a seek, a scan), and whether it found its key.
    pub fn lookup(&mut self, hit: bool) {
        self.lookups += 1;
        self.found += u64::from(hit);
    }
}

/// What a phase is and how to run it.
pub struct Phase<'a> {
    /// The engine under test.
    pub engine: &'a dyn KvEngine,
    /// Benchmark name (`fillseq`, `ycsb-a-run`, …).
    pub name: String,
    /// Worker threads.
    pub threads: usize,
    /// Operations expected in total (for the progress bar).
    pub expected_ops: u64,
    /// Names of the operation kinds the body records (YCSB: READ, UPDATE, …); may be empty.
    pub kinds: Vec<&'static str>,
    /// Where progress goes.
    pub observer: &'a dyn Observer,
    /// Whether the phase counts found keys (readrandom) and reports them.
    pub counts_found: bool,
    /// Key and value sizes, reported with the result.
    pub key_size: usize,
    /// Value size in bytes.
    pub value_size: usize,
}

fn sample(engine: &dyn KvEngine, t0: Instant, ops: u64, dev0: Option<u64>) -> Sample {
    Sample {
        wall_s: t0.elapsed().as_secs_f64(),
        ops,
        device_s: match (engine.device_time_ns(), dev0) {
            (Some(now), Some(start)) => Some(now.saturating_sub(start) as f64 / 1e9),
            _ => None,
        },
        compaction_bytes: engine.compaction_bytes(),
    }
}

/// User + system CPU seconds of this process so far (all threads), from `/proc/self/stat`
/// (fields 14 and 15, in clock ticks of 1/100 s as on every Linux platform Rust supports).
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after it follow its ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, stime field 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// The peak resident set size of this process so far, in bytes: the kernel's high-water mark
/// (`VmHWM` in `/proc/self/status`, the same figure as `getrusage`'s `ru_maxrss`).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Highest anonymous RSS the sampler saw ([`start_anon_rss_sampler`]).
static ANON_PEAK: AtomicU64 = AtomicU64::new(0);
static ANON_SAMPLER: std::sync::Once = std::sync::Once::new();
/// Whether the sampler thread runs.
static ANON_SAMPLING: AtomicBool = AtomicBool::new(false);
/// How often the sampler reads `RssAnon`.
const ANON_SAMPLE_PERIOD: std::time::Duration = std::time::Duration::from_millis(10);

/// This process's anonymous resident memory now, in bytes (`RssAnon` in `/proc/self/status`:
/// heap, stacks, private mappings). Unlike `VmHWM` it leaves out the page-cache pages a
/// shared mapping of a file holds (SMRDB's mapped reads of a banded file, LevelDB's mapped
/// tables), which are the kernel's cache, dropped under memory pressure, not the engine's.
pub fn anon_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Starts, once per process, a thread that samples [`anon_rss_bytes`] every 10 ms: the kernel
/// keeps a high-water mark of the whole RSS only, so the peak of the anonymous part is sampled
/// (a spike shorter than the period can be missed).
pub fn start_anon_rss_sampler() {
    ANON_SAMPLER.call_once(|| {
        if anon_rss_bytes().is_none() {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("rss-sampler".into())
            .spawn(|| loop {
                if let Some(b) = anon_rss_bytes() {
                    ANON_PEAK.fetch_max(b, Ordering::Relaxed);
                }
                std::thread::sleep(ANON_SAMPLE_PERIOD);
            });
        // Without the thread there is no peak to report (`peak_anon_rss_bytes` says `None`).
        ANON_SAMPLING.store(spawned.is_ok(), Ordering::Release);
    });
}

/// The highest anonymous RSS sampled since [`start_anon_rss_sampler`] (now included), in
/// bytes; `None` if the sampler was never started or `/proc` cannot tell.
pub fn peak_anon_rss_bytes() -> Option<u64> {
    if !ANON_SAMPLING.load(Ordering::Acquire) {
        return None;
    }
    let now = anon_rss_bytes()?;
    Some(ANON_PEAK.fetch_max(now, Ordering::Relaxed).max(now))
}

/// Completes the result `r` of a benchmark or phase with what the open `engine` knows (its
/// statistics, its durability under `sync`, and the peak RSS when it ran alone in this
/// process), then reports it to `obs` and appends it to `out`.
pub(crate) fn report_result(
    factory: &EngineFactory,
    engine: &dyn KvEngine,
    sync: SyncPolicy,
    mut r: BenchResult,
    obs: &dyn Observer,
    out: &mut Vec<BenchResult>,
) {
    r.engine_stats = engine.stats_json();
    r.durability = Some(engine.durability(sync));
    if factory.alone_in_process() {
        r.peak_rss_bytes = peak_rss_bytes();
        r.peak_anon_rss_bytes = peak_anon_rss_bytes();
    }
    obs.result(&r);
    out.push(r);
}

/// One benchmark thread of a phase: its measurement state, then `body`. Never inlined, so
/// that it has a name a profiler can start and stop at: the harness's validation against
/// db_bench counts instructions per benchmark from its entry (`--dump-before=*run_worker*`
/// of callgrind, `crates/bench/tests/vs_db_bench.rs`).
#[inline(never)]
fn run_worker<'a, F>(
    engine: &dyn KvEngine,
    t: usize,
    kinds_len: usize,
    shared: &'a AtomicU64,
    stop: &'a AtomicBool,
    body: &F,
) -> Result<ThreadCtx<'a>>
where
    F: Fn(usize, &mut ThreadCtx<'_>) -> Result<()> + Sync,
{
    engine.thread_started();
    let mut ctx = ThreadCtx {
        all: LatencyHist::default(),
        kinds: vec![LatencyHist::default(); kinds_len],
        ops: 0,
        bytes: 0,
        found: 0,
        lookups: 0,
        unreported: 0,
        clock: OpClock::new(0x5eed_0c10_c000 + t as u64),
        stopped: false,
        shared_ops: shared,
        stop,
    };
    body(t, &mut ctx)?;
    shared.fetch_add(ctx.unreported, Ordering::Relaxed);
    ctx.unreported = 0;
    Ok(ctx)
}

/// Runs `body(thread_index, ctx)` on `phase.threads` threads and measures it.
pub fn run_phase<F>(phase: &Phase<'_>, body: F) -> Result<BenchResult>
where
    F: Fn(usize, &mut ThreadCtx<'_>) -> Result<()> + Sync,
{
    let engine = phase.engine;
    let obs = phase.observer;
    let threads = phase.threads.max(1);
    let shared_ops = AtomicU64::new(0);
    let stop = AtomicBool::new(obs.should_stop());
    let dev_before = engine.device_counters();
    let dev0 = dev_before.as_ref().and_then(|c| c.now_ns);
    obs.phase_started(engine.name(), &phase.name, phase.expected_ops);

    let cpu0 = process_cpu_seconds();
    let t0 = Instant::now();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let body = &body;
    let shared = &shared_ops;
    let stop_flag = &stop;
    let kinds_len = phase.kinds.len();
    let (results, timeline) = std::thread::scope(|s| {
        let monitor = s.spawn(move || {
            let mut tl = vec![Sample {
                wall_s: 0.0,
                ops: 0,
                device_s: dev0.map(|_| 0.0),
                compaction_bytes: engine.compaction_bytes(),
            }];
            while let Err(mpsc::RecvTimeoutError::Timeout) = stop_rx.recv_timeout(SAMPLE_INTERVAL) {
                let ops = shared.load(Ordering::Relaxed);
                tl.push(sample(engine, t0, ops, dev0));
                obs.phase_progress(ops);
                if obs.should_stop() {
                    stop_flag.store(true, Ordering::Relaxed);
                }
            }
            tl
        });
        let workers: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || run_worker(engine, t, kinds_len, shared, stop_flag, body)))
            .collect();
        let results: Vec<Result<ThreadCtx<'_>>> = workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(Error::internal("a benchmark thread panicked")))
            })
            .collect();
        let _ = stop_tx.send(());
        let timeline = monitor.join().unwrap_or_default();
        (results, timeline)
    });
    let wall = t0.elapsed().as_secs_f64();
    obs.phase_finished();

    let mut all = LatencyHist::default();
    let mut kinds = vec![LatencyHist::default(); kinds_len];
    let (mut ops, mut bytes, mut found, mut lookups) = (0u64, 0u64, 0u64, 0u64);
    for r in results {
        let ctx = match r {
            Err(Error::Interrupted) => return Err(Error::Interrupted),
            r => r?,
        };
        all.add(&ctx.all);
        for (k, h) in kinds.iter_mut().zip(ctx.kinds.iter()) {
            k.add(h);
        }
        ops += ctx.ops;
        bytes += ctx.bytes;
        found += ctx.found;
        lookups += ctx.lookups;
    }
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
    let mut timeline = timeline;
    timeline.push(sample(engine, t0, ops, dev0));

    let dev_after = engine.device_counters();
    let us = |h: &LatencyHist, q: f64| h.quantile(q) as f64 / 1000.0;
    let mut latency_by_op = BTreeMap::new();
    for (name, h) in phase.kinds.iter().zip(kinds.iter()) {
        if !h.is_empty() {
            latency_by_op.insert(
                (*name).to_string(),
                OpLatency {
                    count: h.len(),
                    mean_us: h.mean_ns() / 1000.0,
                    p50_us: us(h, 0.5),
                    p99_us: us(h, 0.99),
                    p999_us: us(h, 0.999),
                    max_us: h.max_ns() as f64 / 1000.0,
                },
            );
        }
    }
    let device = match (&dev_before, &dev_after) {
        (Some(a), Some(b)) => Some((
            a.now_ns
                .zip(b.now_ns)
                .map(|(a, b)| b.saturating_sub(a) as f64 / 1e9),
            b.bytes_read.saturating_sub(a.bytes_read),
            b.bytes_written.saturating_sub(a.bytes_written),
        )),
        _ => None,
    };
    let wall_pos = wall.max(1e-9);
    Ok(BenchResult {
        engine: engine.name().to_string(),
        benchmark: phase.name.clone(),
        ops,
        ops_per_sec: ops as f64 / wall_pos,
        mb_per_sec: bytes as f64 / 1_048_576.0 / wall_pos,
        p50_us: us(&all, 0.5),
        p99_us: us(&all, 0.99),
        p999_us: us(&all, 0.999),
        device_seconds: device.and_then(|d| d.0),
        device_ops_per_sec: device
            .and_then(|d| d.0)
            .and_then(|d| (d > 0.0).then(|| ops as f64 / d)),
        device_bytes_read: device.map(|d| d.1),
        device_bytes_written: device.map(|d| d.2),
        write_amp: engine.write_amp(),
        wall_seconds: wall,
        cpu_seconds: match (cpu0, process_cpu_seconds()) {
            (Some(a), Some(b)) => Some((b - a).max(0.0)),
            _ => None,
        },
        micros_per_op: wall * 1e6 / ops.max(1) as f64,
        threads,
        key_size: phase.key_size,
        value_size: phase.value_size,
        bytes,
        found: phase.counts_found.then_some(found),
        lookups: phase.counts_found.then_some(lookups),
        mean_us: all.mean_ns() / 1000.0,
        max_us: all.max_ns() as f64 / 1000.0,
        latency_samples: all.len(),
        latency_by_op,
        compaction_bytes: engine.compaction_bytes(),
        engine_stats: None,
        storage: Some(engine.storage()),
        durability: None,
        device_time_durable: None,
        media_check: None,
        peak_rss_bytes: None,
        peak_anon_rss_bytes: None,
        timeline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::Quiet;
    use tegula_kv::engines::memory::MemoryEngine;

    #[test]
    fn a_phase_counts_every_operation_of_every_thread() {
        let e = MemoryEngine::new();
        let phase = Phase {
            engine: &e,
            name: "t".into(),
            threads: 3,
            expected_ops: 300,
            kinds: vec!["PUT"],
            observer: &Quiet,
            counts_found: true,
            key_size: 16,
            value_size: 8,
        };
        let r = run_phase(&phase, |t, ctx| {
            for i in 0..100u64 {
                let s = Instant::now();
                e.put(&[t as u8, i as u8], b"12345678")?;
                ctx.record(0, s, 10)?;
                ctx.lookup(i % 2 == 0);
            }
            Ok(())
        })
        .expect("run");
        assert_eq!(r.ops, 300);
        assert_eq!(r.bytes, 3000);
        assert_eq!(r.found, Some(150));
        assert_eq!(r.lookups, Some(300));
        assert_eq!(e.len(), 300);
        assert_eq!(r.latency_by_op["PUT"].count, 300);
        assert!(r.p50_us <= r.p99_us && r.p99_us <= r.p999_us);
        assert_eq!(r.timeline.last().map(|s| s.ops), Some(300));
        assert!(r.device_seconds.is_none());
    }

    #[test]
    fn fast_operations_are_all_counted_and_a_sample_of_them_timed() {
        let e = MemoryEngine::new();
        let phase = Phase {
            engine: &e,
            name: "t".into(),
            threads: 1,
            expected_ops: 200_000,
            kinds: vec![],
            observer: &Quiet,
            counts_found: false,
            key_size: 16,
            value_size: 8,
        };
        let r = run_phase(&phase, |_, ctx| {
            for _ in 0..200_000 {
                ctx.done(0, 24)?;
            }
            Ok(())
        })
        .expect("run");
        assert_eq!(r.ops, 200_000);
        assert_eq!(r.bytes, 200_000 * 24);
        // Back-to-back completions take nanoseconds: after the first epoch, few are timed.
        assert!(
            r.latency_samples >= crate::op_clock::EPOCH as u64 && r.latency_samples < r.ops / 4,
            "{} of {} timed",
            r.latency_samples,
            r.ops
        );
        assert!(r.p50_us <= r.p99_us && r.p99_us <= r.max_us);
    }

    #[test]
    fn the_anonymous_peak_covers_memory_touched_after_the_sampler_started() {
        start_anon_rss_sampler();
        let before = peak_anon_rss_bytes().expect("/proc/self/status has RssAnon");
        let v = vec![1u8; 64 << 20];
        std::hint::black_box(&v);
        std::thread::sleep(ANON_SAMPLE_PERIOD * 3);
        drop(v);
        std::thread::sleep(ANON_SAMPLE_PERIOD * 3);
        let after = peak_anon_rss_bytes().expect("sampled");
        assert!(after >= before + (60 << 20), "{before} -> {after}");
        assert!(anon_rss_bytes().expect("now") + (32 << 20) < after);
    }

    #[test]
    fn peak_rss_covers_memory_touched_and_never_falls() {
        let before = peak_rss_bytes().expect("/proc/self/status");
        let v = vec![1u8; 64 << 20];
        std::hint::black_box(&v);
        let during = peak_rss_bytes().expect("/proc/self/status");
        drop(v);
        let after = peak_rss_bytes().expect("/proc/self/status");
        assert!(during >= before + (60 << 20), "{before} -> {during}");
        // The kernel counts RSS in per-CPU batches: its high-water mark is exact to a few
        // hundred KiB, not to the page.
        assert!(after + (1 << 20) >= during, "{before} {during} -> {after}");
    }

    #[test]
    fn process_cpu_time_grows_with_work() {
        let a = process_cpu_seconds().expect("/proc/self/stat");
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(200) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let b = process_cpu_seconds().expect("/proc/self/stat");
        assert!(b >= a, "{a} -> {b}");
    }

    #[test]
    fn an_error_in_a_thread_fails_the_phase() {
        let e = MemoryEngine::new();
        let phase = Phase {
            engine: &e,
            name: "t".into(),
            threads: 2,
            expected_ops: 2,
            kinds: vec![],
            observer: &Quiet,
            counts_found: false,
            key_size: 16,
            value_size: 8,
        };
        let r = run_phase(&phase, |t, _| {
            if t == 1 {
                return Err(Error::invalid("boom"));
            }
            Ok(())
        });
        assert!(r.is_err());
    }
}
