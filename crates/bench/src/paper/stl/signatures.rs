//! `tegula bench paper stl-signatures`: the Skylight signatures of configured drive-managed
//! drives in modelled time (the figures quoted in `docs/guides/drive-managed-smr.md`): QD1 random
//! 4 KiB write latency and its periodic map merges, packing at queue depth 31, when idle-time
//! cleaning starts, and a fragmented read before and after cleaning. Deterministic: the same
//! figures on any machine.
//!
//! Writes `stl-signatures.md` (one row per drive), `stl-signatures.json` (one object per drive,
//! with every QD1 latency) and `stl-signatures-qd1.svg` (QD1 latency per write, the signature
//! a prober sees).

use super::{drive_name, new_drive, read_config, DEFAULT_CONFIG};
use crate::error::{Error, Result};
use crate::observer::Observer;
use crate::paper::PaperReport;
use crate::plot::{LineChart, Series};
use crate::report::{write_json_value, write_text};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tegula_device::{BlockDevice, Request, MS, SEC};
use tegula_stl::{Cleaning, DmDrive};

/// QD1 random writes per drive.
pub const QD1_WRITES: usize = 720;
/// A QD1 write slower than this is a slow write (a map merge, a cleaning).
const SLOW_NS: u64 = 200 * MS;

/// Settings of `tegula bench paper stl-signatures`. [`SignatureOptions::default`] is the one
/// source of the defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct SignatureOptions {
    /// Drive configurations, one row each (default [`DEFAULT_CONFIG`]).
    pub configs: Vec<PathBuf>,
    /// Output directory (default `paper-stl-signatures`).
    pub out: PathBuf,
}

impl Default for SignatureOptions {
    fn default() -> Self {
        SignatureOptions {
            configs: vec![PathBuf::from(DEFAULT_CONFIG)],
            out: PathBuf::from("paper-stl-signatures"),
        }
    }
}

/// The signatures of one drive. Latencies are rounded as published (0.01 ms, 0.1 ms).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signature {
    /// The configuration file.
    pub config: String,
    /// The drive's name (the file name without `.toml`).
    pub drive: String,
    /// Whether the drive cleans only when it must (lazy) rather than in idle time.
    pub lazy_cleaning: bool,
    /// QD1 random 4 KiB writes issued.
    pub qd1_writes: usize,
    /// Mean QD1 latency of the writes that are not slow (the first excluded), ms.
    pub qd1_latency_ms_mean: f64,
    /// Their standard deviation, ms.
    pub qd1_latency_ms_sd: f64,
    /// Indices of the slow writes (over 200 ms).
    pub slow_writes_at: Vec<usize>,
    /// Their latencies, ms.
    pub slow_write_ms: Vec<f64>,
    /// Map merges during the QD1 writes.
    pub qd1_map_merges: u64,
    /// Modelled time of the first 256 QD1 writes, ms.
    pub qd1_256_writes_ms: f64,
    /// Modelled time of 256 writes queued 31 at a time (9 batches of 31), ms.
    pub qd31_256_writes_ms: f64,
    /// Internal (journal) writes those queued writes took.
    pub qd31_internal_writes: u64,
    /// Idle time after 50 writes until the first band was cleaned, ms (`None`: not within 10 s).
    pub first_idle_cleaning_after_ms: Option<u64>,
    /// Mean read time per 4 KiB block of a fragmented 4 MiB range, ms.
    pub fragmented_read_ms_per_block_before: f64,
    /// The same after 30 s of idle time, ms.
    pub fragmented_read_ms_per_block_after_30s_idle: f64,
    /// Bands cleaned in those 30 s.
    pub bands_cleaned_in_30s_idle: u64,
    /// Every QD1 write's latency, ms, in order.
    pub qd1_latency_ms: Vec<f64>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / MS as f64
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

fn write_err(e: tegula_device::DeviceError) -> Error {
    Error::device("write to the drive-managed drive", e)
}

/// Measures the signatures of the drive configured in `path`.
pub fn measure(path: &Path) -> Result<Signature> {
    let cfg = read_config(path)?;
    let buf = vec![0u8; 4096];

    // QD1 random writes.
    let d = new_drive(&cfg)?;
    let cap = d.info().capacity_sectors;
    let mut rng = SmallRng::seed_from_u64(1);
    let lat: Vec<u64> = (0..QD1_WRITES)
        .map(|_| d.write(rng.gen_range(0..cap), &buf).map(|x| x.service()))
        .collect::<std::result::Result<_, _>>()
        .map_err(write_err)?;
    let slow: Vec<usize> = (0..lat.len()).filter(|&i| lat[i] > SLOW_NS).collect();
    let normal: Vec<f64> = (1..lat.len())
        .filter(|i| !slow.contains(i))
        .map(|i| ms(lat[i]))
        .collect();
    let n = normal.len().max(1) as f64;
    let mean = normal.iter().sum::<f64>() / n;
    let sd = (normal.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let qd1_map_merges = d.stl_stats().map_merges;

    // QD31: 256 writes in batches of 31.
    let q = new_drive(&cfg)?;
    let t0 = q.now();
    for _ in 0..256usize.div_ceil(31) {
        let reqs = (0..31)
            .map(|_| Request::Write {
                lba: rng.gen_range(0..cap),
                data: buf.clone(),
                fua: false,
            })
            .collect();
        for r in q.submit(reqs) {
            r.map_err(write_err)?;
        }
    }
    let qd31_ms = ms(q.now() - t0);
    let qd31_entries = q.stl_stats().journal_entries;

    // Idle-time cleaning: when does the first band get cleaned after 50 writes?
    let c = new_drive(&cfg)?;
    for _ in 0..50 {
        c.write(rng.gen_range(0..cap), &buf).map_err(write_err)?;
    }
    let mut first_clean_ms = None;
    for step in 1..=100u64 {
        c.idle(100 * MS);
        if c.stl_stats().bands_cleaned > 0 {
            first_clean_ms = Some(step * 100);
            break;
        }
    }

    // Fragmented read: every other 4 KiB block of 4 MiB rewritten, then read block by block.
    let f = new_drive(&cfg)?;
    let start = cap / 2;
    for i in 0..512 {
        f.write(start + 2 * i, &buf).map_err(write_err)?;
    }
    let read_ms = |d: &DmDrive| -> Result<f64> {
        let mut b = vec![0u8; 4096];
        let t = d.now();
        for i in 0..1024 {
            d.read(start + i, &mut b)
                .map_err(|e| Error::device("read from the drive-managed drive", e))?;
        }
        Ok(ms(d.now() - t) / 1024.0)
    };
    let before = read_ms(&f)?;
    f.idle(30 * SEC);
    let after = read_ms(&f)?;

    Ok(Signature {
        config: path.display().to_string(),
        drive: drive_name(path),
        lazy_cleaning: cfg.cleaning == Cleaning::Lazy,
        qd1_writes: lat.len(),
        qd1_latency_ms_mean: round(mean, 2),
        qd1_latency_ms_sd: round(sd, 2),
        slow_write_ms: slow.iter().map(|&i| round(ms(lat[i]), 1)).collect(),
        slow_writes_at: slow,
        qd1_map_merges,
        qd1_256_writes_ms: round(ms(lat[..256.min(lat.len())].iter().sum::<u64>()), 1),
        qd31_256_writes_ms: round(qd31_ms, 1),
        qd31_internal_writes: qd31_entries,
        first_idle_cleaning_after_ms: first_clean_ms,
        fragmented_read_ms_per_block_before: round(before, 2),
        fragmented_read_ms_per_block_after_30s_idle: round(after, 2),
        bands_cleaned_in_30s_idle: f.stl_stats().bands_cleaned,
        qd1_latency_ms: lat.iter().map(|&l| round(ms(l), 3)).collect(),
    })
}

/// The table of `docs/guides/drive-managed-smr.md`, one row per drive.
pub fn markdown(sigs: &[Signature]) -> String {
    let mut md = String::from(
        "| drive | QD1 latency mean ± sd | slow writes (index: latency) | 256 writes QD1 → QD31 | \
         internal writes at QD31 | first idle cleaning | fragmented read per block, before → \
         after 30 s idle |\n| --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for s in sigs {
        let slow = if s.slow_writes_at.is_empty() {
            "none".to_string()
        } else {
            let at: Vec<String> = s.slow_writes_at.iter().map(|i| i.to_string()).collect();
            let lat: Vec<String> = s.slow_write_ms.iter().map(|l| format!("{l:.1}")).collect();
            let merges = if s.qd1_map_merges as usize == s.slow_writes_at.len() {
                " (map merges)"
            } else {
                ""
            };
            format!("{}: {} ms{merges}", at.join(", "), lat.join(", "))
        };
        let clean = match (s.first_idle_cleaning_after_ms, s.lazy_cleaning) {
            (Some(t), _) => format!("after {:.1} s", t as f64 / 1000.0),
            (None, true) => "never (lazy)".into(),
            (None, false) => "not within 10 s".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {:.2} ± {:.2} ms | {slow} | {:.0} → {:.0} ms | {} | {clean} | {:.2} → {:.2} ms |",
            s.drive,
            s.qd1_latency_ms_mean,
            s.qd1_latency_ms_sd,
            // Half up, as the published table rounds (4820.5 → 4821).
            s.qd1_256_writes_ms.round(),
            s.qd31_256_writes_ms.round(),
            s.qd31_internal_writes,
            s.fragmented_read_ms_per_block_before,
            s.fragmented_read_ms_per_block_after_30s_idle,
        );
    }
    md
}

/// Measures every configured drive and writes the table, the JSON and the QD1 plot into
/// `opts.out`.
pub fn run(opts: &SignatureOptions, obs: &dyn Observer) -> Result<PaperReport> {
    if opts.configs.is_empty() {
        return Err(Error::invalid("no drive configuration given"));
    }
    crate::report::output_dir(&opts.out)?;
    obs.job_started("paper stl-signatures", opts.configs.len() as u64);
    let sigs: Result<Vec<Signature>> = opts
        .configs
        .iter()
        .map(|p| {
            obs.step(&drive_name(p));
            measure(p)
        })
        .collect();
    obs.job_finished();
    let sigs = sigs?;
    let md = markdown(&sigs);
    let md_path = opts.out.join("stl-signatures.md");
    write_text(&md_path, &md)?;
    let json_path = opts.out.join("stl-signatures.json");
    write_json_value(&json_path, &sigs)?;
    let plot = opts.out.join("stl-signatures-qd1.svg");
    let series: Vec<Series> = sigs
        .iter()
        .map(|s| Series {
            name: s.drive.clone(),
            points: s
                .qd1_latency_ms
                .iter()
                .enumerate()
                .map(|(i, &l)| (i as f64, l))
                .collect(),
        })
        .collect();
    LineChart {
        log_y: true,
        stroke: 1,
        ..LineChart::new(
            "QD1 random 4 KiB writes: latency of each write, per drive (modelled)",
            "write number",
            "latency (ms, log scale)",
        )
    }
    .draw(&plot, &series)?;
    Ok(PaperReport {
        markdown: md,
        tables: vec![md_path, json_path],
        plots: vec![plot],
        results: Vec::new(),
    })
}
