//! `tegula bench paper smrdb`: scaled-down reproductions of the evaluation of the SMRDB paper
//! (seed 000, Pitchumani et al., SYSTOR 2015, section 5, Figures 7-15) on the modelled disks.
//!
//! Every figure runs SMRDB on a fresh in-memory emulated drive and reports **modelled device
//! time** (the drive's virtual clock, which advances by the service time of every I/O of the
//! foreground and the background threads): throughput = work / device seconds. Background
//! compaction is drained at the end of every write phase and its I/O counted, so that an
//! engine cannot look fast by leaving work behind. The paper's LevelDB runs on a file system on
//! the same disk; a file system is not modelled here, so SMRDB-LOC (the LevelDB-style
//! organisation of section 3, on the same device) stands in for it, as the issue asks.
//!
//! | figure | experiment | file |
//! | --- | --- | --- |
//! | 7 | raw sequential write bandwidth of the drive (1 MiB writes over the first bands) | `fig07.rs` |
//! | 8 | sequential puts, sync every 1 / 10 / 100 / 1000 puts or never, and without the log, per value size | `fig08.rs` |
//! | 9 | random puts (4 KiB values), SOC vs LOC; sequential read after them | `fig09_10.rs` |
//! | 10 | compaction bytes read / written and compaction device time of figure 9's puts | `fig09_10.rs` |
//! | 11 | L0 compaction-trigger sweep (slowdown = trigger + 4, stop = trigger + 8), SOC | `fig11.rs` |
//! | 12 | random reads after a sequential and after a random load, SOC vs LOC | `fig12.rs` |
//! | 13 | band-size sweep of random puts, SOC vs LOC | `fig13.rs` |
//! | 14 | YCSB load, A, B, D with 4 KiB values, SOC vs LOC | `fig14_15.rs` |
//! | 15 | throughput of figure 14's load phase over device time | `fig14_15.rs` |
//!
//! Figures 7-10 run on every profile given (`hm-smr` and `cmr-7200` by default; the
//! conventional drive is banded by SMRDB as in the paper: zones of the band size, a few
//! conventional ones at the start, sequential-write-required the rest, no shingling); figures
//! 11-15 on the first. The output directory receives `paper-smrdb.md` (the tables),
//! `results.json` (every run, in the JSON schema of `tegula bench db`) and one SVG per figure.

mod context;
mod fig07;
mod fig08;
mod fig09_10;
mod fig11;
mod fig12;
mod fig13;
mod fig14_15;

pub use fig07::raw_seq_write;

use crate::drive::{zoned_for_smrdb, BANDED_CONVENTIONAL_ZONES};
use crate::error::{Error, Result};
use crate::observer::Observer;
use crate::paper::PaperReport;
use crate::report::{write_json, write_text};
use context::Out;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;
use tegula_device::{profile, DiskConfig};
use tegula_kv::EngineOptions;

/// How much work each figure does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    /// Seconds: 1 MiB bands, a few MiB per figure (the tests use it).
    Tiny,
    /// About half a minute: 4 MiB bands, 256 MiB of random puts (the default).
    #[default]
    Small,
    /// About three minutes: 16 MiB bands, 1 GiB of random puts, the paper's 100 KiB values too.
    Full,
}

impl Scale {
    /// Every scale's name, smallest first.
    pub const NAMES: [&'static str; 3] = ["tiny", "small", "full"];

    /// Parses `tiny`, `small` or `full`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "tiny" => Ok(Scale::Tiny),
            "small" => Ok(Scale::Small),
            "full" => Ok(Scale::Full),
            o => Err(Error::invalid(format!(
                "unknown scale {o:?} (tiny, small, full)"
            ))),
        }
    }

    /// The name [`Scale::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Tiny => "tiny",
            Scale::Small => "small",
            Scale::Full => "full",
        }
    }
}

/// Settings of `tegula bench paper smrdb`. [`SmrdbOptions::default`] is the one source of the
/// defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct SmrdbOptions {
    /// Amount of work (default [`Scale::Small`]).
    pub scale: Scale,
    /// Output directory: markdown tables, JSON, SVG plots (default `paper-smrdb`).
    pub out: PathBuf,
    /// Drive profiles; figures 7-10 run on each, 11-15 on the first (default `hm-smr`,
    /// `cmr-7200`).
    pub profiles: Vec<String>,
    /// Figures to run, numbers 7-15 (default `None`: all).
    pub figures: Option<Vec<u32>>,
    /// Band (zone) size overriding the scale's; figure 13 still sweeps its own (default none).
    pub band: Option<u64>,
    /// Drive capacity overriding the scale's (default none).
    pub capacity: Option<u64>,
    /// SMRDB options for every run, by name (default none).
    pub smrdb_options: Vec<(String, serde_json::Value)>,
    /// Random seed (default 301).
    pub seed: u64,
}

impl Default for SmrdbOptions {
    fn default() -> Self {
        SmrdbOptions {
            scale: Scale::default(),
            out: PathBuf::from("paper-smrdb"),
            profiles: vec!["hm-smr".into(), "cmr-7200".into()],
            figures: None,
            band: None,
            capacity: None,
            smrdb_options: Vec::new(),
            seed: 301,
        }
    }
}

/// The sizes of one scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizes {
    /// Band (zone) size in bytes.
    pub band: u64,
    /// Emulated drive capacity in bytes.
    pub capacity: u64,
    /// Figure 7: bytes written sequentially.
    pub raw_bytes: u64,
    /// Figure 8: puts per run for each value size (100 B, 4 KiB, 100 KiB; 0 = skip).
    pub seq_puts: [(usize, u64); 3],
    /// Figures 9-13: random puts of 4 KiB values.
    pub rand_puts: u64,
    /// Figure 12: random reads.
    pub reads: u64,
    /// Figure 11: L0 compaction triggers.
    pub l0_triggers: Vec<usize>,
    /// Figure 13: band sizes.
    pub band_sizes: Vec<u64>,
    /// Figure 14: YCSB records and operations.
    pub ycsb_records: u64,
    /// Figure 14: YCSB run-phase operations.
    pub ycsb_ops: u64,
}

const MIB: u64 = 1 << 20;
/// Value size of figures 9-14.
const VALUE: usize = 4096;

impl Scale {
    /// The sizes of this scale.
    pub fn sizes(self) -> Sizes {
        match self {
            Scale::Tiny => Sizes {
                band: MIB,
                capacity: 256 * MIB,
                raw_bytes: 8 * MIB,
                seq_puts: [(100, 2000), (4096, 400), (102_400, 0)],
                rand_puts: 1536,
                reads: 200,
                l0_triggers: vec![2, 4],
                band_sizes: vec![MIB, 2 * MIB],
                ycsb_records: 768,
                ycsb_ops: 256,
            },
            Scale::Small => Sizes {
                band: 4 * MIB,
                capacity: 2048 * MIB,
                raw_bytes: 64 * MIB,
                seq_puts: [(100, 50_000), (4096, 4000), (102_400, 0)],
                rand_puts: 65_536,
                reads: 2000,
                l0_triggers: vec![4, 8, 12, 16],
                band_sizes: vec![2 * MIB, 4 * MIB, 8 * MIB, 16 * MIB],
                ycsb_records: 16_384,
                ycsb_ops: 4096,
            },
            Scale::Full => Sizes {
                band: 16 * MIB,
                capacity: 16384 * MIB,
                raw_bytes: 1024 * MIB,
                seq_puts: [(100, 500_000), (4096, 50_000), (102_400, 4000)],
                rand_puts: 262_144,
                reads: 20_000,
                l0_triggers: vec![4, 8, 12, 16, 20],
                band_sizes: vec![4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB, 64 * MIB],
                ycsb_records: 65_536,
                ycsb_ops: 200_000,
            },
        }
    }
}

/// The emulated drive of `profile_name` at `capacity` with bands of `band` bytes. A
/// conventional profile (`cmr-7200`) is banded by SMRDB as the paper does on its HDD
/// ([`zoned_for_smrdb`]); every drive gets the same few conventional zones.
pub fn drive(profile_name: &str, band: u64, capacity: u64) -> Result<DiskConfig> {
    let mut cfg = profile(profile_name).map_err(|e| Error::invalid(e.to_string()))?;
    zoned_for_smrdb(&mut cfg, profile_name)?;
    cfg.capacity = capacity;
    cfg.zones.zone_size = band;
    cfg.zones.conventional_zones = Some(BANDED_CONVENTIONAL_ZONES);
    cfg.validate()
        .map_err(|e| Error::invalid(format!("profile {profile_name}: {e}")))?;
    Ok(cfg)
}

/// Parses a comma-separated list of figure numbers (7-15).
pub fn parse_figures(list: &str) -> Result<Vec<u32>> {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.trim()
                .parse::<u32>()
                .map_err(|_| Error::invalid(format!("figure {p:?}: figure numbers are 7..15")))
        })
        .collect()
}

fn figures(list: &Option<Vec<u32>>) -> Result<Vec<u32>> {
    match list {
        None => Ok((7..=15).collect()),
        Some(v) => {
            if let Some(n) = v.iter().find(|n| !(7..=15).contains(*n)) {
                return Err(Error::invalid(format!("no figure {n} (7..15)")));
            }
            Ok(v.clone())
        }
    }
}

/// Runs the reproduction and writes `paper-smrdb.md`, `results.json` and the SVG plots into
/// `opts.out`; progress goes to `obs`. Returns the tables, the files and every result.
pub fn run(opts: &SmrdbOptions, obs: &dyn Observer) -> Result<PaperReport> {
    let mut sizes = opts.scale.sizes();
    if let Some(b) = opts.band {
        sizes.band = b;
    }
    if let Some(c) = opts.capacity {
        sizes.capacity = c;
    }
    let profiles: Vec<String> = opts
        .profiles
        .iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let Some(first) = profiles.first().cloned() else {
        return Err(Error::invalid("no profile given"));
    };
    for p in &profiles {
        drive(p, sizes.band, sizes.capacity)?;
    }
    let figs = figures(&opts.figures)?;
    crate::report::output_dir(&opts.out)?;

    obs.job_started("paper smrdb", count_steps(&figs, &sizes, profiles.len()));
    let mut out = Out::new(
        opts.out.clone(),
        obs,
        opts.seed,
        paper_engine_options(&opts.smrdb_options),
    );
    let t0 = Instant::now();
    let _ = writeln!(
        out.md,
        "# SMRDB (seed 000), Figures 7-15, scale {:?}\n\n\
         Generated by `{}`. Throughputs are per **modelled \
         device second** on an in-memory emulated drive (background compaction drained and \
         counted). Bands of {} (figure 13 varies them), drive capacity {}, 16-byte keys. \
         SMRDB-LOC, the LevelDB-style organisation on the same drive, stands in for the \
         paper's LevelDB.\n",
        opts.scale,
        command_line(opts),
        tegula_device::format_size(sizes.band),
        tegula_device::format_size(sizes.capacity),
    );
    let result = run_figures(&mut out, &figs, &sizes, &profiles, &first);
    obs.job_finished();
    result?;
    let _ = writeln!(
        out.md,
        "\nWall time of the whole reproduction: {:.1} s.",
        t0.elapsed().as_secs_f64()
    );
    let md = opts.out.join("paper-smrdb.md");
    write_text(&md, &out.md)?;
    let json = opts.out.join("results.json");
    write_json(&json, &out.results)?;
    Ok(PaperReport {
        markdown: out.md,
        tables: vec![md, json],
        plots: out.files,
        results: out.results,
    })
}

fn run_figures(
    out: &mut Out<'_>,
    figs: &[u32],
    sizes: &Sizes,
    profiles: &[String],
    first: &str,
) -> Result<()> {
    let mut raw = Vec::new();
    if figs.contains(&7) || figs.contains(&8) {
        for p in profiles {
            out.step(&format!("fig 7 {p}"));
            raw.push((
                p.clone(),
                raw_seq_write(&drive(p, sizes.band, sizes.capacity)?, sizes.raw_bytes)?,
            ));
        }
        fig07::table(out, sizes, &raw)?;
    }
    if figs.contains(&8) {
        fig08::run(out, sizes, profiles, &raw)?;
    }
    if figs.contains(&9) || figs.contains(&10) {
        fig09_10::run(out, sizes, profiles)?;
    }
    if figs.contains(&11) {
        fig11::run(out, sizes, first)?;
    }
    if figs.contains(&12) {
        fig12::run(out, sizes, first)?;
    }
    if figs.contains(&13) {
        fig13::run(out, sizes, first)?;
    }
    if figs.contains(&14) || figs.contains(&15) {
        fig14_15::run(out, sizes, first)?;
    }
    Ok(())
}

/// The command that reproduces this run.
fn command_line(opts: &SmrdbOptions) -> String {
    let d = SmrdbOptions::default();
    let mut c = format!("tegula bench paper smrdb --scale {}", opts.scale.name());
    if let Some(b) = opts.band {
        let _ = write!(c, " --band {}", b);
    }
    if let Some(b) = opts.capacity {
        let _ = write!(c, " --capacity {}", b);
    }
    if opts.profiles != d.profiles {
        let _ = write!(c, " --profiles {}", opts.profiles.join(","));
    }
    if let Some(f) = &opts.figures {
        let list: Vec<String> = f.iter().map(|n| n.to_string()).collect();
        let _ = write!(c, " --figures {}", list.join(","));
    }
    for (k, v) in &opts.smrdb_options {
        let _ = write!(c, " --smrdb_option {k}={v}");
    }
    if opts.seed != d.seed {
        let _ = write!(c, " --seed {}", opts.seed);
    }
    c
}

fn count_steps(figs: &[u32], s: &Sizes, profiles: usize) -> u64 {
    let p = profiles as u64;
    let seq = s.seq_puts.iter().filter(|v| v.1 > 0).count() as u64;
    let mut n = 0;
    if figs.contains(&7) || figs.contains(&8) {
        n += p;
    }
    if figs.contains(&8) {
        n += p * seq * fig08::SYNCS.len() as u64;
    }
    if figs.contains(&9) || figs.contains(&10) {
        n += p * 2;
    }
    if figs.contains(&11) {
        n += s.l0_triggers.len() as u64;
    }
    if figs.contains(&12) {
        n += 4;
    }
    if figs.contains(&13) {
        n += 2 * s.band_sizes.len() as u64;
    }
    if figs.contains(&14) || figs.contains(&15) {
        n += 2;
    }
    n
}

/// The engine options of every figure: LevelDB's L0 limits (the paper's SMRDB was built on
/// LevelDB; `tegula_smrdb::Options::with_leveldb_l0_limits`), the log buffered in the process
/// until 1 MiB or a synced write (the paper's log buffer; handing each record to the drive
/// would add a write to the conventional area per put to the modelled device time), the
/// memtable's tree (no point index), then the `--smrdb_option`s.
fn paper_engine_options(smrdb_options: &[(String, serde_json::Value)]) -> EngineOptions {
    let leveldb = tegula_smrdb::Options::default().with_leveldb_l0_limits();
    let mut pinned = vec![
        (
            "l0_compaction_max_bands".to_string(),
            serde_json::json!(leveldb.l0_compaction_max_bands),
        ),
        (
            "flush_during_compaction".to_string(),
            serde_json::json!(leveldb.flush_during_compaction),
        ),
        ("log_write_through".to_string(), serde_json::json!(false)),
        // The figures were measured with the memtable's tree on the write path.
        ("memtable_point_index".to_string(), serde_json::json!(false)),
        // And with every block a read missed entering the cache.
        (
            "block_cache_second_miss".to_string(),
            serde_json::json!(false),
        ),
    ];
    pinned.extend(smrdb_options.iter().cloned());
    EngineOptions {
        l0_slowdown: Some(leveldb.l0_slowdown),
        l0_stop: Some(leveldb.l0_stop),
        smrdb_options: pinned,
        ..EngineOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_lists_are_checked() {
        assert_eq!(parse_figures("7, 9,").expect("list"), vec![7, 9]);
        assert!(parse_figures("seven").is_err());
        assert!(figures(&Some(vec![16])).is_err());
        assert_eq!(figures(&None).expect("all").len(), 9);
    }

    #[test]
    fn the_command_line_names_only_what_differs_from_the_defaults() {
        let o = SmrdbOptions {
            scale: Scale::Tiny,
            seed: 7,
            ..SmrdbOptions::default()
        };
        assert_eq!(
            command_line(&o),
            "tegula bench paper smrdb --scale tiny --seed 7"
        );
        assert_eq!(Scale::parse("full").expect("scale"), Scale::Full);
        assert!(Scale::parse("huge").is_err());
    }
}
