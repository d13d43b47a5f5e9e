//! One drive's run: db_bench under the clock sampler, turned into the figures of the tables.

use super::db_bench::{self, Phase};
use super::probe::{Clock, Probe, MIB};
use super::sampler::{device_at, sample_after, Sample, Sampler};
use super::windows::{windows, Window};
use super::ZeafsOptions;
use crate::error::Result;
use crate::observer::Observer;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;
use tegula_device::Nanos;

/// Result of one drive.
pub(super) struct Run {
    /// The configuration's name (`tegula fs on hm-smr`).
    pub name: String,
    /// What the drive is, for the table.
    pub drive: String,
    /// The benchmarks.
    pub phases: Vec<Phase>,
    /// Device seconds of each benchmark (reporter start to result line).
    pub phase_device_s: Vec<f64>,
    /// Device seconds before each benchmark started (after the previous one or the process
    /// start).
    pub open_device_s: Vec<f64>,
    /// MiB the host read and wrote during each benchmark (sample resolution, 20 ms).
    pub phase_io: Vec<(f64, f64)>,
    /// Device seconds after the last db_bench ended (unmount, flush).
    pub unmount_device_s: f64,
    /// Device seconds from the first db_bench to the end of unmount.
    pub device_s: f64,
    /// Of which the drive was busy.
    pub busy_s: f64,
    /// Wall seconds.
    pub wall_s: f64,
    /// Throughput over device time.
    pub series: Vec<Window>,
    /// Device seconds from the run's start to each benchmark's start and end.
    pub phase_span: Vec<(f64, f64)>,
    /// Device counters over the run.
    pub counters: BTreeMap<String, f64>,
    /// Notes for the tables.
    pub notes: Vec<String>,
}

/// A db_bench run in progress: its phases and the sampler still sampling.
pub(super) struct Sampled {
    phases: Vec<Phase>,
    sampler: Sampler,
    t0: Instant,
    dev0: Nanos,
    busy0: u64,
}

/// Runs every benchmark on the mounted file system at `dir`, sampling the drive; the sampler
/// keeps sampling until [`finish`] (after the unmount).
pub(super) fn bench_all(
    name: &str,
    dir: &Path,
    probe: &Probe,
    a: &ZeafsOptions,
    tmp: &Path,
    obs: &dyn Observer,
) -> Result<Sampled> {
    let t0 = Instant::now();
    let Clock {
        now: dev0,
        busy: busy0,
        ..
    } = probe();
    let sampler = Sampler::start(probe.clone(), t0);
    let phases = match db_bench::run(&dir.join("db"), a, tmp, t0) {
        Ok(p) => p,
        Err(e) => {
            let _ = sampler.finish();
            return Err(e);
        }
    };
    for p in &phases {
        obs.note(&format!("{name}: {}", p.line));
    }
    Ok(Sampled {
        phases,
        sampler,
        t0,
        dev0,
        busy0,
    })
}

/// Turns the samples of a finished run into its figures.
pub(super) fn finish(
    name: &str,
    drive: String,
    run: Sampled,
    probe: &Probe,
    window: f64,
) -> Result<Run> {
    let Sampled {
        phases,
        sampler,
        t0,
        dev0,
        busy0,
    } = run;
    let samples: Vec<Sample> = sampler.finish()?;
    let Clock {
        now: dev1,
        busy: busy1,
        ..
    } = probe();
    let d0 = dev0 as f64;
    let series = windows(&phases, &samples, d0, window);
    let at = |t: f64| device_at(&samples, t);
    let phase_span = phases
        .iter()
        .map(|p| ((at(p.wall_origin) - d0) / 1e9, (at(p.wall_end) - d0) / 1e9))
        .collect();
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
    Ok(Run {
        name: name.into(),
        drive,
        phases,
        phase_device_s,
        open_device_s,
        phase_io,
        unmount_device_s: (dev1 as f64 - last) / 1e9,
        device_s: dev1.saturating_sub(dev0) as f64 / 1e9,
        busy_s: busy1.saturating_sub(busy0) as f64 / 1e9,
        wall_s: t0.elapsed().as_secs_f64(),
        series,
        phase_span,
        counters: BTreeMap::new(),
        notes: Vec::new(),
    })
}

/// `8 GiB`, `512 MiB`.
pub(super) fn size_text(b: u64) -> String {
    if b & ((1 << 30) - 1) == 0 {
        format!("{} GiB", b >> 30)
    } else {
        format!("{} MiB", b >> 20)
    }
}
