//! Seed 001's Figure 4 in modelled device time: RocksDB's `db_bench` on tegula fs on the
//! `hm-smr` drive against the same run on ext4 on the `cmr-7200` drive (ext4 on the drive's
//! NBD export through nbdfuse and a loop device). Both drives are emulated in this process in
//! virtual time; a sampler reads each drive's clock once a second while db_bench runs, and
//! db_bench's own per-second report gives the operations, so throughput per interval is
//! operations / device seconds of that interval.
//!
//! `cargo run --release -p tegula-fs --example figure4 -- [--num 200000] [--value-size 400]
//! [--benchmarks fillrandom,overwrite,readrandom] [--out DIR] [--skip-ext4]`
//! Needs root, /dev/fuse, fusermount3, db_bench; the ext4 run also nbdfuse, losetup,
//! mkfs.ext4. Writes `figure4.md` and `figure4.json` to DIR (default `target/figure4`).
#![allow(clippy::unwrap_used)]

mod nbd;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tegula_device::{profile, BlockDevice, Disk, Stats, ZonedDevice};
use tegula_fs::fuse::FuseFs;
use tegula_fs::{Fs, FsOptions};

struct Args {
    num: u64,
    value_size: u64,
    benchmarks: String,
    out: PathBuf,
    skip_ext4: bool,
}

fn args() -> Args {
    let v: Vec<String> = std::env::args().collect();
    let get = |k: &str| {
        v.iter()
            .position(|a| a == k)
            .and_then(|i| v.get(i + 1))
            .cloned()
    };
    Args {
        num: get("--num").map_or(200_000, |s| s.parse().unwrap()),
        value_size: get("--value-size").map_or(400, |s| s.parse().unwrap()),
        benchmarks: get("--benchmarks").unwrap_or_else(|| "fillrandom,overwrite,readrandom".into()),
        out: get("--out").map(PathBuf::from).unwrap_or_else(|| {
            PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()))
                .join("figure4")
        }),
        skip_ext4: v.iter().any(|a| a == "--skip-ext4"),
    }
}

/// One sample of a drive's clock.
#[derive(Clone, Copy)]
struct Sample {
    wall_s: f64,
    device_ns: u64,
    busy_ns: u64,
}

/// Samples `disk` every 250 ms until stopped.
fn sampler(disk: Arc<Disk>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Sample>> {
    std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut out = Vec::new();
        loop {
            let s = disk.stats();
            out.push(Sample {
                wall_s: t0.elapsed().as_secs_f64(),
                device_ns: disk.now(),
                busy_ns: s.busy_ns,
            });
            if stop.load(Ordering::Relaxed) {
                return out;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    })
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

/// Result of one configuration.
struct Run {
    name: String,
    /// (benchmark, ops/s in wall time as db_bench reports it).
    wall_lines: Vec<String>,
    /// Device seconds from mount to the end of unmount.
    device_s: f64,
    busy_s: f64,
    ops: u64,
    /// Per-interval throughput in device time (ops per device second).
    series: Vec<(f64, f64)>,
    bytes_written: u64,
    /// Device counters over the run.
    counters: serde_json::Value,
}

/// What the drive did between two snapshots of its counters.
fn delta(a: &Stats, b: &Stats) -> serde_json::Value {
    serde_json::json!({
        "reads": b.reads - a.reads,
        "writes": b.writes - a.writes,
        "flushes": b.flushes - a.flushes,
        "mib_read": (b.bytes_read - a.bytes_read) as f64 / (1 << 20) as f64,
        "mib_written": (b.bytes_written - a.bytes_written) as f64 / (1 << 20) as f64,
        "media_mib_written": (b.media_bytes_written - a.media_bytes_written) as f64 / (1 << 20) as f64,
        "seeks": b.mech.seeks - a.mech.seeks,
        "seek_s": (b.mech.seek_ns - a.mech.seek_ns) as f64 / 1e9,
        "rotation_s": (b.mech.rotation_ns - a.mech.rotation_ns) as f64 / 1e9,
        "transfer_s": (b.mech.transfer_ns - a.mech.transfer_ns) as f64 / 1e9,
        "read_ahead_hits": b.mech.read_ahead_hits - a.mech.read_ahead_hits,
    })
}

/// Runs db_bench on `dir` with per-second reports, sampling `disk`.
fn bench(name: &str, disk: &Arc<Disk>, dir: &Path, a: &Args, tmp: &Path) -> Run {
    let report = tmp.join(format!("{name}-report.csv"));
    let stop = Arc::new(AtomicBool::new(false));
    let s = sampler(disk.clone(), stop.clone());
    let t0 = Instant::now();
    let out = Command::new("db_bench")
        .arg(format!("--db={}", dir.join("db").display()))
        .arg(format!("--benchmarks={}", a.benchmarks))
        .arg(format!("--num={}", a.num))
        .arg(format!("--value_size={}", a.value_size))
        .arg("--threads=1")
        .arg("--progress_reports=0")
        .arg("--report_interval_seconds=1")
        .arg(format!("--report_file={}", report.display()))
        .output()
        .expect("db_bench runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "db_bench failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wall = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let samples = s.join().unwrap();
    let wall_lines: Vec<String> = text
        .lines()
        .filter(|l| l.contains("ops/sec"))
        .map(str::to_string)
        .collect();
    // db_bench's report: secs_elapsed,interval_qps — one line per wall second.
    let rep = std::fs::read_to_string(&report).unwrap_or_default();
    let per_sec: Vec<(f64, f64)> = rep
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut it = l.split(',');
            Some((
                it.next()?.trim().parse().ok()?,
                it.next()?.trim().parse().ok()?,
            ))
        })
        .collect();
    let dev_at = |t: f64| -> u64 {
        samples
            .iter()
            .min_by(|x, y| (x.wall_s - t).abs().total_cmp(&(y.wall_s - t).abs()))
            .map_or(0, |s| s.device_ns)
    };
    let mut series = Vec::new();
    let mut prev_t = 0.0;
    for &(t, qps) in &per_sec {
        let d = dev_at(t).saturating_sub(dev_at(prev_t)) as f64 / 1e9;
        let ops = qps * (t - prev_t);
        if d > 0.0 {
            series.push((t, ops / d));
        }
        prev_t = t;
    }
    let first = samples.first().copied().unwrap();
    let last = samples.last().copied().unwrap();
    eprintln!("{name}: db_bench took {wall:.1} s wall");
    Run {
        name: name.into(),
        wall_lines,
        device_s: (last.device_ns - first.device_ns) as f64 / 1e9,
        busy_s: (last.busy_ns - first.busy_ns) as f64 / 1e9,
        ops: a.num * a.benchmarks.split(',').count() as u64,
        series,
        bytes_written: 0,
        counters: serde_json::Value::Null,
    }
}

fn tegula_run(a: &Args, tmp: &Path) -> Run {
    let mut cfg = profile("hm-smr").unwrap();
    cfg.capacity = 8 << 30;
    let disk = Arc::new(Disk::in_memory(cfg).unwrap());
    let dev: Arc<dyn ZonedDevice> = disk.clone();
    let fs = Fs::mkfs(dev, FsOptions::default()).unwrap();
    let mp = tmp.join("tegula");
    std::fs::create_dir_all(&mp).unwrap();
    let (tx, rx) = mpsc::channel();
    let opts = [fuser::MountOption::FSName("tegula-figure4".into())];
    let session = fuser::Session::new(FuseFs::new(fs, tx), &mp, &opts)
        .unwrap()
        .spawn()
        .unwrap();
    let t_start = disk.now();
    let s0 = disk.stats();
    let busy0 = s0.busy_ns;
    let mut r = bench("tegula-fs on hm-smr", &disk, &mp, a, tmp);
    drop(session);
    rx.recv_timeout(Duration::from_secs(600)).unwrap().unwrap();
    // Include what the unmount wrote (buffers, checkpoint).
    r.device_s = (disk.now() - t_start) as f64 / 1e9;
    let s1 = disk.stats();
    r.busy_s = (s1.busy_ns - busy0) as f64 / 1e9;
    r.bytes_written = s1.bytes_written - s0.bytes_written;
    r.counters = delta(&s0, &s1);
    r
}

fn ext4_run(a: &Args, tmp: &Path) -> Result<Run, String> {
    let mut cfg = profile("cmr-7200").map_err(|e| e.to_string())?;
    cfg.capacity = 8 << 30;
    let disk = Arc::new(Disk::in_memory(cfg).map_err(|e| e.to_string())?);
    let sock = tmp.join("nbd.sock");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    nbd::serve(&sock, dev).map_err(|e| format!("NBD server: {e}"))?;
    let fuse_dir = tmp.join("nbdfuse");
    let mnt = tmp.join("ext4");
    std::fs::create_dir_all(&fuse_dir).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&mnt).map_err(|e| e.to_string())?;
    let mut fuse = Command::new("nbdfuse")
        .arg(&fuse_dir)
        .arg(format!("nbd+unix:///?socket={}", sock.display()))
        .spawn()
        .map_err(|e| format!("nbdfuse: {e}"))?;
    let file = fuse_dir.join("nbd");
    for _ in 0..200 {
        if file.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let lo = sh(&format!("losetup -f --show {}", file.display()))?
        .trim()
        .to_string();
    let cleanup = |lo: &str, fuse: &mut std::process::Child| {
        let _ = sh(&format!("umount {} 2>/dev/null", mnt.display()));
        let _ = sh(&format!("losetup -d {lo}"));
        let _ = sh(&format!("fusermount3 -u {}", fuse_dir.display()));
        let _ = fuse.wait();
    };
    let res = (|| {
        sh(&format!(
            "mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 {lo}"
        ))?;
        sh(&format!("mount {lo} {}", mnt.display()))?;
        let t_start = disk.now();
        let s0 = disk.stats();
        let busy0 = s0.busy_ns;
        let mut r = bench("ext4 on cmr-7200", &disk, &mnt, a, tmp);
        sh(&format!("umount {}", mnt.display()))?;
        sh(&format!("blockdev --flushbufs {lo}")).ok();
        r.device_s = (disk.now() - t_start) as f64 / 1e9;
        let s1 = disk.stats();
        r.busy_s = (s1.busy_ns - busy0) as f64 / 1e9;
        r.bytes_written = s1.bytes_written - s0.bytes_written;
        r.counters = delta(&s0, &s1);
        Ok(r)
    })();
    cleanup(&lo, &mut fuse);
    res
}

fn stats(xs: &[f64]) -> (f64, f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
    (mean, var.sqrt(), var.sqrt() / mean.max(1e-9))
}

fn main() {
    let a = args();
    std::fs::create_dir_all(&a.out).unwrap();
    let tmp = PathBuf::from(format!("/tmp/tegula-figure4-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let runs: Arc<Mutex<Vec<Run>>> = Arc::default();
    runs.lock().unwrap().push(tegula_run(&a, &tmp));
    if !a.skip_ext4 {
        match ext4_run(&a, &tmp) {
            Ok(r) => runs.lock().unwrap().push(r),
            Err(e) => eprintln!("SKIPPED ext4 on cmr-7200: {e}"),
        }
    }
    let runs = runs.lock().unwrap();
    let mut md = String::new();
    writeln!(
        md,
        "db_bench `--benchmarks={} --num={} --value_size={}` (threads 1); device time is the \
         drive's virtual clock from mount to the end of unmount.\n",
        a.benchmarks, a.num, a.value_size
    )
    .unwrap();
    writeln!(md, "| configuration | device s | busy s | ops / device s | host bytes written | per-interval ops/device-s: mean | std dev | CV |").unwrap();
    writeln!(
        md,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    .unwrap();
    let mut json = Vec::new();
    for r in runs.iter() {
        let ys: Vec<f64> = r.series.iter().map(|p| p.1).collect();
        let (mean, sd, cv) = stats(&ys);
        writeln!(
            md,
            "| {} | {:.1} | {:.1} | {:.0} | {:.1} MiB | {:.0} | {:.0} | {:.2} |",
            r.name,
            r.device_s,
            r.busy_s,
            r.ops as f64 / r.device_s.max(1e-9),
            r.bytes_written as f64 / (1 << 20) as f64,
            mean,
            sd,
            cv
        )
        .unwrap();
        json.push(serde_json::json!({
            "name": r.name, "device_s": r.device_s, "busy_s": r.busy_s, "ops": r.ops,
            "bytes_written": r.bytes_written, "db_bench": r.wall_lines,
            "series_wall_s_ops_per_device_s": r.series, "device_counters": r.counters,
        }));
    }
    for r in runs.iter() {
        writeln!(
            md,
            "\n{} device counters over the run: `{}`",
            r.name, r.counters
        )
        .unwrap();
        writeln!(md, "\n{} (db_bench's wall-clock lines):\n\n```", r.name).unwrap();
        for l in &r.wall_lines {
            writeln!(md, "{l}").unwrap();
        }
        writeln!(md, "```").unwrap();
    }
    std::fs::write(a.out.join("figure4.md"), &md).unwrap();
    std::fs::write(
        a.out.join("figure4.json"),
        serde_json::to_string_pretty(&json).unwrap(),
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&tmp);
    print!("{md}");
}
