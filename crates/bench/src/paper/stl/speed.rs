//! `tegula bench paper stl-speed`: how many emulated 4 KiB random writes per wall second the
//! journal STL sustains on a metadata-only drive (the 5 TB Seagate configuration by default),
//! in memory and on a drive image whose metadata log is appended to a file
//! (`docs/performance/stl.md`). Wall time, so the figures vary with the machine's load; the
//! modelled figures are deterministic.
//!
//! Writes `stl-speed.md` (one row per backing) and `stl-speed.json`.

use super::{new_drive, read_config, DEFAULT_CONFIG};
use crate::error::{Error, Result};
use crate::observer::Observer;
use crate::paper::PaperReport;
use crate::report::{write_json_value, write_text};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;
use tegula_device::BlockDevice;
use tegula_stl::DmDrive;

/// Settings of `tegula bench paper stl-speed`. [`SpeedOptions::default`] is the one source of
/// the defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedOptions {
    /// QD1 random 4 KiB writes per backing (default 20,000).
    pub writes: u64,
    /// Drive configuration (default [`DEFAULT_CONFIG`]).
    pub config: PathBuf,
    /// Output directory (default `paper-stl-speed`).
    pub out: PathBuf,
}

impl Default for SpeedOptions {
    fn default() -> Self {
        SpeedOptions {
            writes: 20_000,
            config: PathBuf::from(DEFAULT_CONFIG),
            out: PathBuf::from("paper-stl-speed"),
        }
    }
}

/// One backing's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Speed {
    /// What was measured.
    pub bench: &'static str,
    /// `memory` or `image`.
    pub backing: &'static str,
    /// Writes issued.
    pub writes: u64,
    /// Wall seconds.
    pub wall_s: f64,
    /// Emulated writes per wall second.
    pub writes_per_wall_s: f64,
    /// Modelled seconds.
    pub modelled_s: f64,
    /// Writes per modelled second.
    pub modelled_iops: f64,
    /// Modelled seconds per wall second.
    pub speedup_over_real_time: f64,
    /// Journal entries written.
    pub journal_entries: u64,
    /// Map entries at the end.
    pub map_entries: u64,
    /// Map merges written.
    pub map_merges: u64,
    /// Bands cleaned.
    pub bands_cleaned: u64,
}

fn measure(d: &DmDrive, n: u64, backing: &'static str) -> Result<Speed> {
    let cap = d.info().capacity_sectors;
    let mut rng = SmallRng::seed_from_u64(1);
    let buf = vec![0u8; 4096];
    let t0 = d.now();
    let t = Instant::now();
    for _ in 0..n {
        d.write(rng.gen_range(0..cap), &buf)
            .map_err(|e| Error::device("write to the drive-managed drive", e))?;
    }
    let wall = t.elapsed().as_secs_f64().max(1e-9);
    let modelled = (d.now() - t0) as f64 / 1e9;
    let s = d.stl_stats();
    Ok(Speed {
        bench: "stl_journal_randwrite_4k_metadata_only",
        backing,
        writes: n,
        wall_s: wall,
        writes_per_wall_s: n as f64 / wall,
        modelled_s: modelled,
        modelled_iops: n as f64 / modelled.max(1e-9),
        speedup_over_real_time: modelled / wall,
        journal_entries: s.journal_entries,
        map_entries: s.map_entries,
        map_merges: s.map_merges,
        bands_cleaned: s.bands_cleaned,
    })
}

/// The table of `docs/performance/stl.md`.
pub fn markdown(rows: &[Speed]) -> String {
    let mut md = String::from(
        "| writes | backing | wall s | writes / wall s | modelled s | modelled IOPS | map merges | bands cleaned |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {:.3} | {:.0} | {:.1} | {:.1} | {} | {} |",
            r.writes,
            r.backing,
            r.wall_s,
            r.writes_per_wall_s,
            r.modelled_s,
            r.modelled_iops,
            r.map_merges,
            r.bands_cleaned
        );
    }
    md
}

/// Measures the drive in memory and as an image in a temporary directory, and writes the
/// table and the JSON into `opts.out`.
pub fn run(opts: &SpeedOptions, obs: &dyn Observer) -> Result<PaperReport> {
    if opts.writes == 0 {
        return Err(Error::invalid("--writes must be positive"));
    }
    let cfg = read_config(&opts.config)?;
    crate::report::output_dir(&opts.out)?;
    obs.job_started("paper stl-speed", 2);
    let rows = (|| -> Result<Vec<Speed>> {
        obs.step("in memory");
        let memory = measure(&new_drive(&cfg)?, opts.writes, "memory")?;
        obs.step("drive image");
        let dir =
            tempfile::tempdir().map_err(|e| Error::io("creating a temporary directory", e))?;
        let img = dir.path().join("drive.img");
        let d = DmDrive::create_image(&img, cfg.clone())
            .map_err(|e| Error::engine(format!("creating {}", img.display()), e))?;
        let image = measure(&d, opts.writes, "image")?;
        d.close()
            .map_err(|e| Error::engine(format!("closing {}", img.display()), e))?;
        Ok(vec![memory, image])
    })();
    obs.job_finished();
    let rows = rows?;
    let md = markdown(&rows);
    let md_path = opts.out.join("stl-speed.md");
    write_text(&md_path, &md)?;
    let json_path = opts.out.join("stl-speed.json");
    write_json_value(&json_path, &rows)?;
    Ok(PaperReport {
        markdown: md,
        tables: vec![md_path, json_path],
        plots: Vec::new(),
        results: Vec::new(),
    })
}
