//! Seed 001's Figure 4 in modelled device time: RocksDB's `db_bench` on three emulated drives,
//!
//! * tegula fs on the host-managed `hm-smr` drive (mounted with FUSE in this process),
//! * ext4 on the conventional `cmr-7200` drive, and
//! * ext4 on a drive-managed SMR drive (`crates/stl`'s journal translation layer, configured as
//!   `configs/dm-smr/seagate-5tb-data.toml` scaled to the same capacity),
//!
//! the two ext4 drives exported by `crates/nbd`'s server over a Unix socket, attached with
//! `nbdfuse` and a loop device, formatted with `mkfs.ext4`. Every drive is emulated in this
//! process in virtual time. A sampler reads each drive's clock every 20 ms while db_bench runs;
//! db_bench's own per-second report (`--report_interval_seconds=1`) gives the operations done
//! in each wall second; together they give operations against device time, and throughput
//! over time is operations per device second in fixed windows of device time (`--window`).
//! All benchmarks run in one db_bench process; its report file, rewritten at the start of
//! each benchmark, is read every 10 ms.
//!
//! ```text
//! cargo run --release -p tegula-fs --example figure4 -- [--num 200000] [--value-size 400]
//!     [--benchmarks fillrandom,overwrite,readrandom] [--drives tegula,cmr,dm] [--out DIR]
//!     [--plot FILE.svg] [--capacity 8GiB] [--dm-config FILE.toml] [--dm-set KEY=VALUE]...
//!     [--dirty-limit 64MiB] [--idle-before 60] [--window 0.25] [--db-bench-arg ARG]...
//! ```
//!
//! Needs root, /dev/fuse, fusermount3 and db_bench; the ext4 drives also nbdfuse, losetup,
//! mkfs.ext4 (a drive whose tools are missing is skipped with a message). Writes `figure4.md`,
//! `figure4.json` and the plot `figure4.svg` to DIR (default `target/figure4`).
#![allow(clippy::unwrap_used)]

use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tegula_device::{
    profile, BlockDevice, Completion, DeviceError, DeviceInfo, Disk, IoDone, Nanos, Request,
    WriteFlags, ZonedDevice,
};
use tegula_fs::fuse::FuseFs;
use tegula_fs::{Fs, FsOptions};
use tegula_nbd::{serve_connection, ServerOptions};
use tegula_stl::{DmConfig, DmDrive};

// ---------------------------------------------------------------------------------------------
// Arguments

struct Args {
    num: u64,
    value_size: u64,
    benchmarks: Vec<String>,
    drives: Vec<String>,
    out: PathBuf,
    plot: PathBuf,
    capacity: u64,
    dm_config: PathBuf,
    dm_set: Vec<(String, String)>,
    dirty_limit: u64,
    idle_before: f64,
    window: f64,
    extra: Vec<String>,
}

fn parse_size(s: &str) -> u64 {
    tegula_device::parse_size(s).unwrap_or_else(|e| panic!("bad size {s}: {e}"))
}

fn args() -> Args {
    let v: Vec<String> = std::env::args().collect();
    let get = |k: &str| {
        v.iter()
            .position(|a| a == k)
            .and_then(|i| v.get(i + 1))
            .cloned()
    };
    let all = |k: &str| -> Vec<String> {
        v.windows(2)
            .filter(|w| w[0] == k)
            .map(|w| w[1].clone())
            .collect()
    };
    let out = get("--out").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()))
            .join("figure4")
    });
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut drives: Vec<String> = get("--drives")
        .unwrap_or_else(|| "tegula,cmr,dm".into())
        .split(',')
        .map(str::to_string)
        .collect();
    if v.iter().any(|a| a == "--skip-ext4") {
        drives.retain(|d| d == "tegula");
    }
    Args {
        num: get("--num").map_or(200_000, |s| s.parse().unwrap()),
        value_size: get("--value-size").map_or(400, |s| s.parse().unwrap()),
        benchmarks: get("--benchmarks")
            .unwrap_or_else(|| "fillrandom,overwrite,readrandom".into())
            .split(',')
            .map(str::to_string)
            .collect(),
        drives,
        plot: get("--plot")
            .map(PathBuf::from)
            .unwrap_or_else(|| out.join("figure4.svg")),
        out,
        capacity: get("--capacity").map_or(8 << 30, |s| parse_size(&s)),
        dm_config: get("--dm-config")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace.join("configs/dm-smr/seagate-5tb-data.toml")),
        dm_set: all("--dm-set")
            .iter()
            .map(|kv| {
                let (k, v) = kv.split_once('=').expect("--dm-set KEY=VALUE");
                (k.to_string(), v.to_string())
            })
            .collect(),
        dirty_limit: get("--dirty-limit").map_or(64 << 20, |s| parse_size(&s)),
        idle_before: get("--idle-before").map_or(60.0, |s| s.parse().unwrap()),
        window: get("--window").map_or(0.25, |s| s.parse().unwrap()),
        extra: all("--db-bench-arg"),
    }
}

// ---------------------------------------------------------------------------------------------
// Drives

/// A drive's virtual clock, busy time (ns) and the bytes the host read and wrote.
#[derive(Clone, Copy, Default)]
struct Clock {
    now: Nanos,
    busy: u64,
    read: u64,
    written: u64,
}

/// Reads a drive's [`Clock`].
type Probe = Arc<dyn Fn() -> Clock + Send + Sync>;
/// Reads a drive's cumulative counters.
type Counters = Arc<dyn Fn() -> BTreeMap<String, f64> + Send + Sync>;

/// Counts what the host (the NBD client) asked of a block device.
struct Counted {
    inner: Arc<dyn BlockDevice>,
    reads: AtomicU64,
    writes: AtomicU64,
    flushes: AtomicU64,
    discards: AtomicU64,
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
}

impl Counted {
    fn new(inner: Arc<dyn BlockDevice>) -> Self {
        Counted {
            inner,
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            discards: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
        }
    }

    fn snapshot(&self, m: &mut BTreeMap<String, f64>) {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
        m.insert("host_reads".into(), g(&self.reads));
        m.insert("host_writes".into(), g(&self.writes));
        m.insert("host_flushes".into(), g(&self.flushes));
        m.insert("host_discards".into(), g(&self.discards));
        m.insert("host_mib_read".into(), g(&self.bytes_read) / MIB);
        m.insert("host_mib_written".into(), g(&self.bytes_written) / MIB);
    }
}

const MIB: f64 = (1u64 << 20) as f64;

impl BlockDevice for Counted {
    fn info(&self) -> DeviceInfo {
        self.inner.info()
    }
    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone, DeviceError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes_read
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.inner.read(lba, buf)
    }
    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone, DeviceError> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.bytes_written
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        self.inner.write_with(lba, data, flags)
    }
    fn flush(&self) -> Result<IoDone, DeviceError> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.inner.flush()
    }
    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone, DeviceError> {
        self.discards.fetch_add(1, Ordering::Relaxed);
        self.inner.discard(lba, sectors)
    }
    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion, DeviceError>> {
        self.inner.submit(reqs)
    }
    fn now(&self) -> Nanos {
        self.inner.now()
    }
    fn idle(&self, d: Nanos) {
        self.inner.idle(d)
    }
}

fn disk_counters(disk: &Disk, m: &mut BTreeMap<String, f64>) {
    let s = disk.stats();
    let f = |x: u64| x as f64;
    m.insert("reads".into(), f(s.reads));
    m.insert("writes".into(), f(s.writes));
    m.insert("flushes".into(), f(s.flushes));
    m.insert("zone_ops".into(), f(s.zone_ops));
    m.insert("mib_read".into(), f(s.bytes_read) / MIB);
    m.insert("mib_written".into(), f(s.bytes_written) / MIB);
    m.insert("media_mib_written".into(), f(s.media_bytes_written) / MIB);
    m.insert("seeks".into(), f(s.mech.seeks));
    m.insert("seek_s".into(), f(s.mech.seek_ns) / 1e9);
    m.insert("rotation_s".into(), f(s.mech.rotation_ns) / 1e9);
    m.insert("transfer_s".into(), f(s.mech.transfer_ns) / 1e9);
}

fn dm_counters(d: &DmDrive, m: &mut BTreeMap<String, f64>) {
    let s = d.media_stats();
    let t = d.stl_stats();
    let f = |x: u64| x as f64;
    m.insert("media_mib_read".into(), f(s.bytes_read) / MIB);
    m.insert("media_mib_written".into(), f(s.bytes_written) / MIB);
    m.insert("seeks".into(), f(s.mech.seeks));
    m.insert("seek_s".into(), f(s.mech.seek_ns) / 1e9);
    m.insert("rotation_s".into(), f(s.mech.rotation_ns) / 1e9);
    m.insert("transfer_s".into(), f(s.mech.transfer_ns) / 1e9);
    m.insert("journal_entries".into(), f(t.journal_entries));
    m.insert("map_merges".into(), f(t.map_merges));
    m.insert("cleaning_runs".into(), f(t.cleaning_runs));
    m.insert("bands_cleaned".into(), f(t.bands_cleaned));
    m.insert("cleaning_mib_read".into(), f(t.cleaning_bytes_read) / MIB);
    m.insert(
        "cleaning_mib_written".into(),
        f(t.cleaning_bytes_written) / MIB,
    );
    m.insert("cleaning_s".into(), f(t.cleaning_ns) / 1e9);
    m.insert("bypass_writes".into(), f(t.bypass_writes));
}

fn delta(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    b.iter()
        .map(|(k, v)| {
            let d = v - a.get(k).copied().unwrap_or(0.0);
            (k.clone(), (d * 1000.0).round() / 1000.0)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Sampling and db_bench

/// One sample of a drive's clock.
#[derive(Clone, Copy)]
struct Sample {
    wall_s: f64,
    device_ns: Nanos,
    read: u64,
    written: u64,
}

/// Samples a drive's clock every 20 ms until stopped.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Sample>>,
}

impl Sampler {
    fn start(probe: Probe, t0: Instant) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut out = Vec::new();
            loop {
                let c = probe();
                out.push(Sample {
                    wall_s: t0.elapsed().as_secs_f64(),
                    device_ns: c.now,
                    read: c.read,
                    written: c.written,
                });
                if s.load(Ordering::Relaxed) {
                    return out;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Sampler { stop, handle }
    }

    fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap()
    }
}

/// Device clock at wall time `t`, interpolated between samples.
fn device_at(samples: &[Sample], t: f64) -> f64 {
    let i = samples.partition_point(|s| s.wall_s < t);
    if i == 0 {
        return samples.first().map_or(0.0, |s| s.device_ns as f64);
    }
    if i >= samples.len() {
        return samples.last().map_or(0.0, |s| s.device_ns as f64);
    }
    let (a, b) = (samples[i - 1], samples[i]);
    if b.wall_s <= a.wall_s {
        return b.device_ns as f64;
    }
    a.device_ns as f64
        + (b.device_ns as f64 - a.device_ns as f64) * (t - a.wall_s) / (b.wall_s - a.wall_s)
}

/// The first sample taken at or after wall time `t` (the last one if none).
fn sample_after(samples: &[Sample], t: f64) -> Sample {
    let i = samples.partition_point(|s| s.wall_s < t);
    samples
        .get(i)
        .or(samples.last())
        .copied()
        .unwrap_or(Sample {
            wall_s: t,
            device_ns: 0,
            read: 0,
            written: 0,
        })
}

/// One benchmark of the db_bench process.
struct Phase {
    benchmark: String,
    /// db_bench's result line (wall-clock throughput).
    line: String,
    ops: u64,
    /// Wall seconds (from the run's start) when the previous benchmark ended (or the process
    /// started), when this benchmark's reporter started, and when its result line appeared.
    wall_start: f64,
    wall_origin: f64,
    wall_end: f64,
    /// (seconds since the reporter started, operations in the interval ending then).
    reports: Vec<(f64, f64)>,
}

fn parse_report(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut it = l.split(',');
            Some((
                it.next()?.trim().parse().ok()?,
                it.next()?.trim().parse().ok()?,
            ))
        })
        .collect()
}

/// Runs every benchmark in one db_bench process, as one would by hand. db_bench rewrites its
/// report file (`--report_file`) at the start of each benchmark, so the file is read every
/// 10 ms and a new benchmark is recognised by the file getting shorter; each benchmark's end
/// is the moment its result line appears on db_bench's standard output.
fn db_bench(db: &Path, a: &Args, tmp: &Path, t0: Instant) -> Result<Vec<Phase>, String> {
    let report = tmp.join("report.csv");
    let _ = std::fs::remove_file(&report);
    let mut cmd = Command::new("db_bench");
    cmd.arg(format!("--db={}", db.display()))
        .arg(format!("--benchmarks={}", a.benchmarks.join(",")))
        .arg(format!("--num={}", a.num))
        .arg(format!("--value_size={}", a.value_size))
        .arg("--threads=1")
        .arg("--progress_reports=0")
        .arg("--report_interval_seconds=1")
        .arg(format!("--report_file={}", report.display()))
        .args(&a.extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = t0.elapsed().as_secs_f64();
    let mut child = cmd.spawn().map_err(|e| format!("db_bench: {e}"))?;
    let stdout = child.stdout.take().ok_or("db_bench: no stdout")?;
    let stderr = child.stderr.take().ok_or("db_bench: no stderr")?;
    let lines = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(|l| l.ok())
            .map(|l| (t0.elapsed().as_secs_f64(), l))
            .collect::<Vec<_>>()
    });
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::BufReader::new(stderr), &mut s);
        s
    });
    // (time the generation was first seen, its latest contents)
    let mut gens: Vec<(f64, String)> = Vec::new();
    let status = loop {
        let done = child.try_wait().map_err(|e| e.to_string())?;
        if let Ok(text) = std::fs::read_to_string(&report) {
            let now = t0.elapsed().as_secs_f64();
            match gens.last_mut() {
                Some((_, old)) if text.len() >= old.len() => *old = text,
                _ => gens.push((now, text)),
            }
        }
        if let Some(st) = done {
            break st;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let lines = lines
        .join()
        .map_err(|_| "db_bench output reader panicked")?;
    let errors = errors.join().unwrap_or_default();
    if !status.success() {
        let out: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
        return Err(format!("db_bench failed:\n{}\n{errors}", out.join("\n")));
    }
    let mut phases = Vec::new();
    let mut prev_end = start;
    let mut results = lines
        .iter()
        .filter(|(_, l)| l.contains("ops/sec") && l.contains(" : "));
    for (k, b) in a.benchmarks.iter().enumerate() {
        let (t_end, line) = results
            .next()
            .ok_or_else(|| format!("no result line for {b} from db_bench"))?;
        if !line.starts_with(b.as_str()) {
            return Err(format!("expected {b}, db_bench printed: {line}"));
        }
        let ops = line
            .split(" operations")
            .next()
            .and_then(|s| s.split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or(a.num);
        let (origin, reports) = match gens.get(k) {
            Some((t, text)) if *t <= *t_end => (*t, parse_report(text)),
            _ => (prev_end, Vec::new()),
        };
        phases.push(Phase {
            benchmark: b.clone(),
            line: line.clone(),
            ops,
            wall_start: prev_end,
            wall_origin: origin.max(prev_end),
            wall_end: *t_end,
            reports,
        });
        prev_end = *t_end;
    }
    Ok(phases)
}

/// Throughput in one window of device time.
#[derive(Clone, Debug)]
struct Window {
    /// Device seconds from the start of the run to the window's start and end.
    device_start_s: f64,
    device_end_s: f64,
    /// Operations done while the drive's clock crossed the window (interpolated).
    ops: f64,
    ops_per_device_s: f64,
}

/// Operations done by wall time `t`: db_bench's one-second reports give the count at each
/// report; between reports (and from the last report to the end of the process) the count is
/// interpolated linearly; before a process's benchmark starts it is the previous total.
fn ops_at(phases: &[Phase], t: f64) -> f64 {
    let mut done = 0.0;
    for p in phases {
        if t <= p.wall_origin {
            return done;
        }
        let mut pts = vec![(p.wall_origin, 0.0)];
        let mut cum = 0.0;
        for &(s, ops) in &p.reports {
            cum += ops;
            pts.push(((p.wall_origin + s).min(p.wall_end), cum.min(p.ops as f64)));
        }
        pts.push((p.wall_end, p.ops as f64));
        if t < p.wall_end {
            let i = pts.partition_point(|q| q.0 < t).clamp(1, pts.len() - 1);
            let (a, b) = (pts[i - 1], pts[i]);
            let f = if b.0 > a.0 {
                (t - a.0) / (b.0 - a.0)
            } else {
                1.0
            };
            return done + a.1 + (b.1 - a.1) * f.clamp(0.0, 1.0);
        }
        done += p.ops as f64;
    }
    done
}

/// Throughput over device time: windows of `width` device seconds from the start of the first
/// db_bench to the end of the last; each window's operations are the cumulative count
/// (`ops_at`, per 20 ms clock sample) interpolated at the window's edges. The gaps between
/// benchmarks (db_bench opening the database) are windows with few or no operations.
fn windows(phases: &[Phase], samples: &[Sample], dev0: f64, width: f64) -> Vec<Window> {
    let Some(last) = phases.last() else {
        return Vec::new();
    };
    let pts: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.wall_s <= last.wall_end)
        .map(|s| ((s.device_ns as f64 - dev0) / 1e9, ops_at(phases, s.wall_s)))
        .chain(std::iter::once((
            (device_at(samples, last.wall_end) - dev0) / 1e9,
            ops_at(phases, last.wall_end),
        )))
        .collect();
    let end = pts.last().map_or(0.0, |p| p.0);
    // Operations done by device time `d`: the count at the first sample that reached `d`,
    // interpolated from the one before (the drive's clock only moves while it works).
    let at = |d: f64| -> f64 {
        let i = pts.partition_point(|p| p.0 < d);
        if i == 0 {
            return pts.first().map_or(0.0, |p| p.1);
        }
        if i >= pts.len() {
            return pts.last().map_or(0.0, |p| p.1);
        }
        let (a, b) = (pts[i - 1], pts[i]);
        if b.0 <= a.0 {
            b.1
        } else {
            a.1 + (b.1 - a.1) * (d - a.0) / (b.0 - a.0)
        }
    };
    let mut out = Vec::new();
    let mut t = 0.0;
    while t < end {
        let e = (t + width).min(end);
        if e - t >= width * 0.5 {
            let ops = at(e) - at(t);
            out.push(Window {
                device_start_s: t,
                device_end_s: e,
                ops,
                ops_per_device_s: ops / (e - t),
            });
        }
        t += width;
    }
    out
}

/// Result of one drive.
struct Run {
    name: String,
    /// What the drive is, for the table.
    drive: String,
    phases: Vec<Phase>,
    /// Device seconds of each benchmark (reporter start to result line).
    phase_device_s: Vec<f64>,
    /// Device seconds before each benchmark started (after the previous one or the process start).
    open_device_s: Vec<f64>,
    /// MiB the host read and wrote during each benchmark (sample resolution, 20 ms).
    phase_io: Vec<(f64, f64)>,
    /// Device seconds after the last db_bench ended (unmount, flush).
    unmount_device_s: f64,
    /// Device seconds from the first db_bench to the end of unmount.
    device_s: f64,
    /// Of which the drive was busy.
    busy_s: f64,
    wall_s: f64,
    series: Vec<Window>,
    /// Device seconds from the run's start to each benchmark's start and end.
    phase_span: Vec<(f64, f64)>,
    counters: BTreeMap<String, f64>,
    notes: Vec<String>,
}

/// Runs every benchmark on the mounted file system at `dir`, sampling the drive.
fn bench_all(
    name: &str,
    dir: &Path,
    probe: &Probe,
    a: &Args,
    tmp: &Path,
) -> Result<(Vec<Phase>, Sampler, Instant, Nanos, u64), String> {
    let t0 = Instant::now();
    let Clock {
        now: dev0,
        busy: busy0,
        ..
    } = probe();
    let sampler = Sampler::start(probe.clone(), t0);
    let phases = match db_bench(&dir.join("db"), a, tmp, t0) {
        Ok(p) => p,
        Err(e) => {
            sampler.finish();
            return Err(e);
        }
    };
    for p in &phases {
        eprintln!("{name}: {}", p.line);
    }
    Ok((phases, sampler, t0, dev0, busy0))
}

/// Turns the samples of a finished run into its figures.
#[allow(clippy::too_many_arguments)]
fn finish_run(
    name: &str,
    drive: String,
    phases: Vec<Phase>,
    samples: Vec<Sample>,
    t0: Instant,
    dev0: Nanos,
    busy0: u64,
    probe: &Probe,
    window: f64,
) -> Run {
    let Clock {
        now: dev1,
        busy: busy1,
        ..
    } = probe();
    let d0 = dev0 as f64;
    let series = windows(&phases, &samples, d0, window);
    let phase_span = phases
        .iter()
        .map(|p| {
            (
                (device_at(&samples, p.wall_origin) - d0) / 1e9,
                (device_at(&samples, p.wall_end) - d0) / 1e9,
            )
        })
        .collect();
    let at = |t: f64| device_at(&samples, t);
    let phase_device_s = phases
        .iter()
        .map(|p| (at(p.wall_end) - at(p.wall_origin)) / 1e9)
        .collect();
    let open_device_s = phases
        .iter()
        .map(|p| (at(p.wall_origin) - at(p.wall_start)) / 1e9)
        .collect();
    let last = phases.last().map_or(0.0, |p| at(p.wall_end));
    let phase_io = phases
        .iter()
        .map(|p| {
            let (a, b) = (
                sample_after(&samples, p.wall_origin),
                sample_after(&samples, p.wall_end),
            );
            (
                b.read.saturating_sub(a.read) as f64 / MIB,
                b.written.saturating_sub(a.written) as f64 / MIB,
            )
        })
        .collect();
    Run {
        name: name.into(),
        drive,
        phases,
        phase_device_s,
        open_device_s,
        phase_io,
        unmount_device_s: (dev1 as f64 - last) / 1e9,
        device_s: (dev1 - dev0) as f64 / 1e9,
        busy_s: (busy1 - busy0) as f64 / 1e9,
        wall_s: t0.elapsed().as_secs_f64(),
        series,
        phase_span,
        counters: BTreeMap::new(),
        notes: Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// The three configurations

fn tegula_run(a: &Args, tmp: &Path) -> Result<Run, String> {
    let mut cfg = profile("hm-smr").map_err(|e| e.to_string())?;
    cfg.capacity = a.capacity;
    let disk = Arc::new(Disk::in_memory(cfg).map_err(|e| e.to_string())?);
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let fs = Fs::mkfs(dev.clone(), FsOptions::default()).map_err(|e| e.to_string())?;
    let mp = tmp.join("tegula");
    std::fs::create_dir_all(&mp).map_err(|e| e.to_string())?;
    let (tx, rx) = mpsc::channel();
    let opts = [fuser::MountOption::FSName("tegula-figure4".into())];
    let session = fuser::Session::new(FuseFs::new(fs, tx), &mp, &opts)
        .map_err(|e| format!("FUSE mount: {e}"))?
        .spawn()
        .map_err(|e| format!("FUSE mount: {e}"))?;
    let d = disk.clone();
    let probe: Probe = Arc::new(move || {
        let s = d.stats();
        Clock {
            now: d.now(),
            busy: s.busy_ns,
            read: s.bytes_read,
            written: s.bytes_written,
        }
    });
    let mut c0 = BTreeMap::new();
    disk_counters(&disk, &mut c0);
    let name = "tegula fs on hm-smr";
    let res = bench_all(name, &mp, &probe, a, tmp);
    drop(session);
    rx.recv_timeout(Duration::from_secs(600))
        .map_err(|e| format!("unmount: {e}"))??;
    let (phases, sampler, t0, dev0, busy0) = res?;
    let samples = sampler.finish();
    let mut r = finish_run(
        name,
        format!("hm-smr, {}", size_text(a.capacity)),
        phases,
        samples,
        t0,
        dev0,
        busy0,
        &probe,
        a.window,
    );
    let mut c1 = BTreeMap::new();
    disk_counters(&disk, &mut c1);
    r.counters = delta(&c0, &c1);
    // What the run left on the drive.
    let fs = Fs::open(
        dev,
        FsOptions {
            read_only: true,
            ..FsOptions::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let zs = fs.zone_stats();
    let used = zs.iter().filter(|z| z.used > 0).count();
    let dead: u64 = zs.iter().map(|z| z.dead).sum();
    let live: u64 = zs.iter().map(|z| z.live).sum();
    r.notes.push(format!(
        "zones in use at the end: {used} of {} ({:.0} MiB live, {:.0} MiB dead); zone resets \
         by the cleaner are among the `zone_ops`",
        zs.len(),
        live as f64 / MIB,
        dead as f64 / MIB
    ));
    Ok(r)
}

fn size_text(b: u64) -> String {
    if b & ((1 << 30) - 1) == 0 {
        format!("{} GiB", b >> 30)
    } else {
        format!("{} MiB", b >> 20)
    }
}

fn sh(cmd: &str) -> Result<String, String> {
    let o = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(format!(
            "{cmd}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// `crates/nbd`'s server on a Unix socket: an accept loop that can be stopped, each
/// connection served by [`tegula_nbd::serve_connection`] on its own thread.
struct NbdExport {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl NbdExport {
    fn start(path: &Path, dev: Arc<dyn BlockDevice>) -> Result<NbdExport, String> {
        let _ = std::fs::remove_file(path);
        let l = UnixListener::bind(path).map_err(|e| format!("binding {}: {e}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            for c in l.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(c) = c else { continue };
                let dev = dev.clone();
                conns.push(std::thread::spawn(move || {
                    let opts = ServerOptions::default();
                    if let Ok(w) = c.try_clone() {
                        if let Err(e) = serve_connection(c, w, dev.as_ref(), &opts) {
                            if e.kind() != std::io::ErrorKind::UnexpectedEof {
                                eprintln!("nbd connection ended: {e}");
                            }
                        }
                    }
                }));
            }
            conns
        });
        Ok(NbdExport {
            path: path.to_path_buf(),
            stop,
            accept: Some(accept),
        })
    }

    /// Stops accepting and waits for every connection to end (the client disconnected).
    fn stop(&mut self) {
        if let Some(h) = self.accept.take() {
            self.stop.store(true, Ordering::Relaxed);
            let _ = UnixStream::connect(&self.path);
            if let Ok(conns) = h.join() {
                for c in conns {
                    let _ = c.join();
                }
            }
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for NbdExport {
    fn drop(&mut self) {
        self.stop();
    }
}

/// ext4 on `dev` through NBD, nbdfuse and a loop device; everything set up here is torn
/// down by `Drop`, in reverse order, also when a step fails.
struct Ext4Stack {
    export: NbdExport,
    fuse_dir: PathBuf,
    nbdfuse: Option<std::process::Child>,
    lo: Option<String>,
    /// The loop device's writeback settings to restore: (directory, max_ratio_fine,
    /// strict_limit).
    bdi: Option<(PathBuf, String, String)>,
    mnt: PathBuf,
    mounted: bool,
}

impl Ext4Stack {
    fn new(tag: &str, dev: Arc<dyn BlockDevice>, a: &Args, tmp: &Path) -> Result<Self, String> {
        for tool in ["nbdfuse", "losetup", "mkfs.ext4"] {
            if sh(&format!("command -v {tool}")).is_err() {
                return Err(format!("{tool} is not installed"));
            }
        }
        let sock = tmp.join(format!("{tag}.sock"));
        let export = NbdExport::start(&sock, dev)?;
        let fuse_dir = tmp.join(format!("{tag}-nbdfuse"));
        let mnt = tmp.join(format!("{tag}-ext4"));
        std::fs::create_dir_all(&fuse_dir).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&mnt).map_err(|e| e.to_string())?;
        let mut s = Ext4Stack {
            export,
            fuse_dir: fuse_dir.clone(),
            nbdfuse: None,
            lo: None,
            bdi: None,
            mnt: mnt.clone(),
            mounted: false,
        };
        s.nbdfuse = Some(
            Command::new("nbdfuse")
                .arg(&fuse_dir)
                .arg(format!("nbd+unix:///?socket={}", sock.display()))
                .spawn()
                .map_err(|e| format!("nbdfuse: {e}"))?,
        );
        let file = fuse_dir.join("nbd");
        for _ in 0..400 {
            if file.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        // Direct I/O: no second page cache (nbdfuse's file) under the loop device.
        let lo = sh(&format!(
            "losetup -f --show --direct-io=on {}",
            file.display()
        ))
        .or_else(|_| sh(&format!("losetup -f --show {}", file.display())))?
        .trim()
        .to_string();
        s.lo = Some(lo.clone());
        if a.dirty_limit > 0 {
            // Bound the dirty page cache of the loop device to the file system's write
            // buffer limit, so that ext4 writes back while db_bench runs, as tegula fs does.
            let name = lo.trim_start_matches("/dev/");
            let bdi = PathBuf::from(format!("/sys/block/{name}/bdi"));
            let rd = |f: &str| std::fs::read_to_string(bdi.join(f)).map(|s| s.trim().to_string());
            if let (Ok(mb), Ok(sl)) = (rd("max_ratio_fine"), rd("strict_limit")) {
                s.bdi = Some((bdi.clone(), mb, sl));
                std::fs::write(bdi.join("strict_limit"), "1").map_err(|e| e.to_string())?;
                std::fs::write(bdi.join("max_bytes"), a.dirty_limit.to_string())
                    .map_err(|e| e.to_string())?;
            }
        }
        sh(&format!(
            "mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 {lo}"
        ))?;
        sh(&format!("mount {lo} {}", mnt.display()))?;
        s.mounted = true;
        Ok(s)
    }

    /// Unmounts and detaches everything (idempotent).
    fn teardown(&mut self) {
        if self.mounted {
            if let Err(e) = sh(&format!("umount {}", self.mnt.display())) {
                eprintln!("{e}");
            }
            self.mounted = false;
        }
        if let Some(lo) = self.lo.take() {
            let _ = sh(&format!("blockdev --flushbufs {lo}"));
            if let Some((bdi, mb, sl)) = self.bdi.take() {
                let _ = std::fs::write(bdi.join("max_ratio_fine"), mb);
                let _ = std::fs::write(bdi.join("strict_limit"), sl);
            }
            if let Err(e) = sh(&format!("losetup -d {lo}")) {
                eprintln!("{e}");
            }
        }
        if let Some(mut c) = self.nbdfuse.take() {
            let _ = sh(&format!("fusermount3 -u {}", self.fuse_dir.display()));
            let _ = c.wait();
        }
        self.export.stop();
    }
}

impl Drop for Ext4Stack {
    fn drop(&mut self) {
        self.teardown();
    }
}

#[allow(clippy::too_many_arguments)]
fn ext4_run(
    tag: &str,
    name: &str,
    drive: String,
    dev: Arc<dyn BlockDevice>,
    probe: Probe,
    counters: Counters,
    a: &Args,
    tmp: &Path,
) -> Result<Run, String> {
    let mut stack = Ext4Stack::new(tag, dev.clone(), a, tmp)?;
    // A drive that sat idle for a while after mkfs (the drive-managed drive cleans meanwhile).
    dev.idle((a.idle_before * 1e9) as Nanos);
    let c0 = counters();
    let res = bench_all(name, &stack.mnt.clone(), &probe, a, tmp);
    // The run ends when everything is on the drive: unmount, flush, detach.
    stack.teardown();
    let (phases, sampler, t0, dev0, busy0) = res?;
    let samples = sampler.finish();
    let mut r = finish_run(
        name, drive, phases, samples, t0, dev0, busy0, &probe, a.window,
    );
    r.counters = delta(&c0, &counters());
    Ok(r)
}

/// Wraps a drive for an ext4 run: the byte-counting device the NBD server serves, the clock
/// probe the sampler reads, and the end-of-run counters.
fn instrument<D: BlockDevice + Send + Sync + 'static>(
    dev: Arc<D>,
    busy: fn(&D) -> u64,
    drive_counters: fn(&D, &mut BTreeMap<String, f64>),
) -> (Arc<Counted>, Probe, Counters) {
    let inner: Arc<dyn BlockDevice> = dev.clone();
    let counted = Arc::new(Counted::new(inner));
    let (d, c) = (dev.clone(), counted.clone());
    let probe: Probe = Arc::new(move || Clock {
        now: d.now(),
        busy: busy(&d),
        read: c.bytes_read.load(Ordering::Relaxed),
        written: c.bytes_written.load(Ordering::Relaxed),
    });
    let c = counted.clone();
    let counters: Counters = Arc::new(move || {
        let mut m = BTreeMap::new();
        drive_counters(&dev, &mut m);
        c.snapshot(&mut m);
        m
    });
    (counted, probe, counters)
}

fn cmr_run(a: &Args, tmp: &Path) -> Result<Run, String> {
    let mut cfg = profile("cmr-7200").map_err(|e| e.to_string())?;
    cfg.capacity = a.capacity;
    let disk = Arc::new(Disk::in_memory(cfg).map_err(|e| e.to_string())?);
    let (counted, probe, counters) = instrument(disk, |d: &Disk| d.stats().busy_ns, disk_counters);
    ext4_run(
        "cmr",
        "ext4 on cmr-7200",
        format!("cmr-7200, {}", size_text(a.capacity)),
        counted,
        probe,
        counters,
        a,
        tmp,
    )
}

/// The drive-managed SMR drive: `--dm-config` (the Seagate ST5000AS0011 journal STL with
/// data) at `--capacity`, its persistent cache scaled by the same factor as the capacity, the
/// volatile write cache on (as on the other two drives) and `--dm-set` overrides applied last.
fn dm_config(a: &Args) -> Result<(DmConfig, Vec<String>), String> {
    let text = std::fs::read_to_string(&a.dm_config)
        .map_err(|e| format!("{}: {e}", a.dm_config.display()))?;
    let mut cfg = DmConfig::from_toml(&text).map_err(|e| e.to_string())?;
    let mut changes = Vec::new();
    let full = cfg.capacity;
    if a.capacity != full {
        let cache = ((cfg.cache_size as f64 * a.capacity as f64 / full as f64) as u64) >> 20 << 20;
        changes.push(format!(
            "capacity {} (from {:.1} TB), cache_size {} MiB (from {} GiB, the same fraction)",
            size_text(a.capacity),
            full as f64 / 1e12,
            cache >> 20,
            cfg.cache_size >> 30
        ));
        cfg.capacity = a.capacity;
        cfg.cache_size = cache;
    }
    if !cfg.volatile_cache {
        let wc = profile("cmr-7200").map_err(|e| e.to_string())?.cache.size;
        cfg.volatile_cache = true;
        cfg.volatile_cache_size = wc;
        changes.push(format!(
            "volatile_cache on, {} MiB (as the other drives' write caches)",
            wc >> 20
        ));
    }
    for (k, v) in &a.dm_set {
        cfg.set(k, v)
            .map_err(|e| format!("--dm-set {k}={v}: {e}"))?;
        changes.push(format!("{k} = {v}"));
    }
    cfg.validate().map_err(|e| e.to_string())?;
    Ok((cfg, changes))
}

fn dm_run(a: &Args, tmp: &Path) -> Result<Run, String> {
    let (cfg, changes) = dm_config(a)?;
    let drive = Arc::new(DmDrive::new(cfg.clone()).map_err(|e| e.to_string())?);
    let (counted, probe, counters) = instrument(
        drive.clone(),
        |d: &DmDrive| d.media_stats().busy_ns,
        dm_counters,
    );
    let file = a
        .dm_config
        .file_name()
        .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
    let mut r = ext4_run(
        "dm",
        "ext4 on dm-smr",
        format!("dm-smr ({file}: {})", changes.join("; ")),
        counted,
        probe,
        counters,
        a,
        tmp,
    )?;
    let s = drive.stl_stats();
    r.notes.push(format!(
        "drive-managed SMR at the end: cache {} of {} MiB used, map {} of {} entries",
        s.cache_used_bytes >> 20,
        s.cache_bytes >> 20,
        s.map_entries,
        s.map_entries_max
    ));
    Ok(r)
}

// ---------------------------------------------------------------------------------------------
// Report

/// (mean, standard deviation, coefficient of variation, min, max).
fn moments(xs: &[f64]) -> (f64, f64, f64, f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0, 0.0, 0.0, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, var.sqrt(), var.sqrt() / mean.max(1e-9), min, max)
}

fn plot(path: &Path, runs: &[Run], title: &str) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let pts: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .map(|r| {
            r.series
                .iter()
                .map(|i| {
                    (
                        (i.device_start_s + i.device_end_s) / 2.0,
                        i.ops_per_device_s,
                    )
                })
                .collect()
        })
        .collect();
    let xmax = pts.iter().flatten().map(|p| p.0).fold(1.0f64, f64::max) * 1.02;
    let ys = || pts.iter().flatten().map(|p| p.1).filter(|y| *y > 0.0);
    let ymax = ys().fold(1.0f64, f64::max) * 2.0;
    let ymin = (ys().fold(f64::INFINITY, f64::min) / 2.0).clamp(1.0, ymax / 10.0);
    let mut c = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..xmax, (ymin..ymax).log_scale())?;
    c.configure_mesh()
        .y_label_formatter(&|y| {
            if *y >= 1e6 {
                format!("{}M", y / 1e6)
            } else if *y >= 1e3 {
                format!("{}k", y / 1e3)
            } else {
                format!("{y}")
            }
        })
        .x_desc("device time since the first db_bench started (s)")
        .y_desc("operations per device second (log; 0 drawn at the bottom)")
        .draw()?;
    let colors = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
    ];
    for (k, r) in runs.iter().enumerate() {
        let color = colors[k % colors.len()];
        let line: Vec<(f64, f64)> = pts[k].iter().map(|&(x, y)| (x, y.max(ymin))).collect();
        c.draw_series(LineSeries::new(line.clone(), color.stroke_width(1)))?
            .label(r.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        c.draw_series(line.iter().map(|&p| Circle::new(p, 2, color.filled())))?;
        // The end of each benchmark, as a faint vertical line in the drive's colour.
        c.draw_series(r.phase_span.iter().map(|&(_, e)| {
            PathElement::new(vec![(e, ymin), (e, ymax)], color.mix(0.35).stroke_width(1))
        }))?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}

fn report(a: &Args, runs: &[Run], skipped: &[String]) -> (String, serde_json::Value) {
    let mut md = String::new();
    let w = &mut md;
    writeln!(
        w,
        "db_bench `--benchmarks={} --num={} --value_size={}` `--threads=1`{} (one process). \
         Device time is \
         each drive's virtual clock from the start of the first db_bench to the end of the \
         unmount (ext4: `umount`, loop device flushed and detached). Throughput over time: \
         operations per device second in windows of {} device s from the start of the first \
         db_bench to the end of the last (the operations of db_bench's one-second reports \
         spread over the drive's clock samples).\n",
        a.benchmarks.join(","),
        a.num,
        a.value_size,
        if a.extra.is_empty() {
            String::new()
        } else {
            format!(" `{}`", a.extra.join(" "))
        },
        a.window
    )
    .unwrap();
    writeln!(
        w,
        "| configuration | device s | of which unmount | busy s | wall s | ops | ops / device s | \
         windows | per-window ops / device s: mean | std dev | CV | min | max |"
    )
    .unwrap();
    writeln!(
        w,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    .unwrap();
    let mut json = Vec::new();
    for r in runs {
        let ops: u64 = r.phases.iter().map(|p| p.ops).sum();
        let ys: Vec<f64> = r.series.iter().map(|i| i.ops_per_device_s).collect();
        let (mean, sd, cv, min, max) = moments(&ys);
        writeln!(
            w,
            "| {} | {:.1} | {:.1} | {:.1} | {:.0} | {} | {:.0} | {} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} |",
            r.name,
            r.device_s,
            r.unmount_device_s,
            r.busy_s,
            r.wall_s,
            ops,
            ops as f64 / r.device_s.max(1e-9),
            ys.len(),
            mean,
            sd,
            cv,
            min,
            max
        )
        .unwrap();
        json.push(serde_json::json!({
            "name": r.name, "drive": r.drive, "device_s": r.device_s, "busy_s": r.busy_s,
            "unmount_device_s": r.unmount_device_s,
            "wall_s": r.wall_s, "ops": ops,
            "window_stats": {"mean": mean, "sd": sd, "cv": cv, "min": min, "max": max,
                               "n": ys.len()},
            "phases": r.phases.iter().zip(&r.phase_device_s).zip(&r.open_device_s)
                .map(|((p, d), o)| serde_json::json!({
                "benchmark": p.benchmark, "ops": p.ops, "device_s": d, "open_device_s": o,
                "db_bench": p.line, "reports": p.reports,
            })).collect::<Vec<_>>(),
            "window_s": a.window,
            "windows": r.series.iter().map(|i| serde_json::json!({
                "device_start_s": i.device_start_s, "device_end_s": i.device_end_s,
                "ops": i.ops, "ops_per_device_s": i.ops_per_device_s,
            })).collect::<Vec<_>>(),
            "device_counters": r.counters, "notes": r.notes,
        }));
    }
    writeln!(
        w,
        "\nPer benchmark: device seconds before the benchmark started (the first: opening the \
         database; the others: from the end of the previous one) and from its start to its \
         result line; \
         the windows inside the benchmark; db_bench's wall-clock ops/sec for reference:\n"
    )
    .unwrap();
    writeln!(
        w,
        "| configuration | benchmark | before device s | device s | ops / device s | MiB read / written | windows | CV | min | max | db_bench wall ops/s |"
    )
    .unwrap();
    writeln!(
        w,
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    .unwrap();
    for r in runs {
        for ((((p, d), o), span), io) in r
            .phases
            .iter()
            .zip(&r.phase_device_s)
            .zip(&r.open_device_s)
            .zip(&r.phase_span)
            .zip(&r.phase_io)
        {
            let ys: Vec<f64> = r
                .series
                .iter()
                .filter(|i| i.device_start_s >= span.0 - 1e-9 && i.device_end_s <= span.1 + 1e-9)
                .map(|i| i.ops_per_device_s)
                .collect();
            let (_, _, cv, min, max) = moments(&ys);
            let wall = p
                .line
                .split(" ops/sec")
                .next()
                .and_then(|s| s.split_whitespace().last())
                .unwrap_or("-");
            let (cv, min, max) = if ys.is_empty() {
                ("-".to_string(), "-".to_string(), "-".to_string())
            } else {
                (format!("{cv:.2}"), format!("{min:.0}"), format!("{max:.0}"))
            };
            let tput = if *d < 1e-3 {
                "no device time".to_string()
            } else {
                format!("{:.0}", p.ops as f64 / d)
            };
            writeln!(
                w,
                "| {} | {} | {:.2} | {:.2} | {tput} | {:.0} / {:.0} | {} | {cv} | {min} | {max} | {wall} |",
                r.name,
                p.benchmark,
                o,
                d,
                io.0,
                io.1,
                ys.len()
            )
            .unwrap();
        }
    }
    writeln!(w, "\nDrives:\n").unwrap();
    for r in runs {
        writeln!(w, "* {}: {}", r.name, r.drive).unwrap();
    }
    for r in runs {
        writeln!(
            w,
            "\n{}: device counters over the run: `{}`",
            r.name,
            serde_json::to_string(&r.counters).unwrap()
        )
        .unwrap();
        for n in &r.notes {
            writeln!(w, "{}: {n}", r.name).unwrap();
        }
        writeln!(w, "\n```").unwrap();
        for p in &r.phases {
            writeln!(w, "{}", p.line).unwrap();
        }
        writeln!(w, "```").unwrap();
    }
    for s in skipped {
        writeln!(w, "\nSKIPPED {s}").unwrap();
    }
    (md, serde_json::Value::Array(json))
}

fn main() {
    let a = args();
    if let Err(e) = sh("command -v db_bench") {
        eprintln!("SKIPPED: db_bench is not installed (Debian rocksdb-tools): {e}");
        return;
    }
    std::fs::create_dir_all(&a.out).unwrap();
    let tmp = PathBuf::from(format!("/tmp/tegula-figure4-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let runs: Mutex<Vec<Run>> = Mutex::default();
    let mut skipped = Vec::new();
    for d in &a.drives {
        let r = match d.as_str() {
            "tegula" => tegula_run(&a, &tmp),
            "cmr" => cmr_run(&a, &tmp),
            "dm" => dm_run(&a, &tmp),
            other => Err(format!("unknown drive {other} (tegula, cmr, dm)")),
        };
        match r {
            Ok(r) => {
                eprintln!(
                    "{}: {:.1} device s, {:.0} s wall",
                    r.name, r.device_s, r.wall_s
                );
                runs.lock().unwrap().push(r);
            }
            Err(e) => {
                eprintln!("SKIPPED {d}: {e}");
                skipped.push(format!("{d}: {e}"));
            }
        }
    }
    let runs = runs.into_inner().unwrap();
    let (md, json) = report(&a, &runs, &skipped);
    std::fs::write(a.out.join("figure4.md"), &md).unwrap();
    std::fs::write(
        a.out.join("figure4.json"),
        serde_json::to_string_pretty(&json).unwrap(),
    )
    .unwrap();
    if !runs.is_empty() {
        let title = format!(
            "db_bench {} (num {}, value {} B): throughput over device time",
            a.benchmarks.join(","),
            a.num,
            a.value_size
        );
        if let Err(e) = plot(&a.plot, &runs, &title) {
            eprintln!("plot: {e}");
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    print!("{md}");
    let _ = std::io::stdout().flush();
}
