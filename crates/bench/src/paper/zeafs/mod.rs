//! `tegula bench paper zeafs`: seed 001's Figure 4 in modelled device time: RocksDB's own
//! `db_bench` on three emulated drives,
//!
//! * tegula fs on the host-managed `hm-smr` drive (mounted with FUSE in this process),
//! * ext4 on the conventional `cmr-7200` drive, and
//! * ext4 on a drive-managed SMR drive (`crates/stl`'s journal translation layer, configured as
//!   the built-in `seagate-5tb-data` profile scaled to the same capacity),
//!
//! the two ext4 drives exported by `crates/nbd`'s server over a Unix socket, attached with
//! `nbdfuse` and a loop device, formatted with `mkfs.ext4`. Every drive is emulated in this
//! process in virtual time. A sampler reads each drive's clock every 20 ms while db_bench runs;
//! db_bench's own per-second report (`--report_interval_seconds=1`) gives the operations done
//! in each wall second; together they give operations against device time, and throughput
//! over time is operations per device second in fixed windows of device time (`window`).
//! All benchmarks run in one db_bench process; its report file, rewritten at the start of
//! each benchmark, is read every 10 ms.
//!
//! Needs db_bench (Debian rocksdb-tools), /dev/fuse and fusermount3; the ext4 drives also root,
//! nbdfuse, losetup and mkfs.ext4 (a drive whose tools are missing is skipped with a note).
//! Writes `figure4.md`, `figure4.json` and the plot `figure4.svg`.
//!
//! | file | role |
//! | --- | --- |
//! | `probe.rs` | a drive's clock and counters, and the byte-counting device the NBD server serves |
//! | `sampler.rs` | samples a drive's clock every 20 ms |
//! | `db_bench.rs` | runs db_bench and reads its result lines and per-second reports |
//! | `windows.rs` | operations against device time, in windows of device time |
//! | `run.rs` | one drive's run: db_bench under the sampler, turned into figures |
//! | `tegula_fs.rs` | tegula fs on `hm-smr`, mounted with FUSE |
//! | `nbd_export.rs`, `ext4.rs` | ext4 on an NBD export through nbdfuse and a loop device |
//! | `drives.rs` | the `cmr-7200` and drive-managed SMR drives under ext4 |
//! | `report.rs` | the tables, the JSON and the plot |

mod db_bench;
mod drives;
mod ext4;
mod nbd_export;
mod probe;
mod report;
mod run;
mod sampler;
mod tegula_fs;
mod windows;

use crate::error::{Error, Result};
use crate::observer::Observer;
use crate::paper::PaperReport;
use run::Run;
use std::path::PathBuf;
use std::process::Command;

/// The drives Figure 4 compares, as `drives` names them.
pub const DRIVES: [&str; 3] = ["tegula", "cmr", "dm"];

/// Settings of `tegula bench paper zeafs`. [`ZeafsOptions::default`] is the one source of the
/// defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct ZeafsOptions {
    /// db_bench's `--num` (default 200,000; the published figure used 1,000,000).
    pub num: u64,
    /// db_bench's `--value_size` (default 400).
    pub value_size: u64,
    /// db_bench's benchmarks, in one process (default fillrandom, overwrite, readrandom).
    pub benchmarks: Vec<String>,
    /// Drives, of [`DRIVES`] (default all three).
    pub drives: Vec<String>,
    /// Output directory (default `paper-zeafs`).
    pub out: PathBuf,
    /// The plot (default `None`: `figure4.svg` in `out`).
    pub plot: Option<PathBuf>,
    /// Capacity of each drive in bytes (default 8 GiB).
    pub capacity: u64,
    /// Configuration of the drive-managed drive (default
    /// the built-in `seagate-5tb-data` profile, or a TOML file), scaled to `capacity`.
    pub dm_config: PathBuf,
    /// `KEY=VALUE` overrides of the drive-managed configuration, applied last (default none).
    pub dm_set: Vec<(String, String)>,
    /// Dirty page-cache limit of the ext4 loop devices in bytes, 0 for none (default 64 MiB,
    /// tegula fs's own dirty limit).
    pub dirty_limit: u64,
    /// Device seconds each ext4 drive idles after mkfs, before db_bench (default 60).
    pub idle_before: f64,
    /// Width of the throughput windows in device seconds (default 0.25).
    pub window: f64,
    /// Further db_bench arguments (default none).
    pub db_bench_args: Vec<String>,
}

impl Default for ZeafsOptions {
    fn default() -> Self {
        ZeafsOptions {
            num: 200_000,
            value_size: 400,
            benchmarks: ["fillrandom", "overwrite", "readrandom"]
                .map(String::from)
                .to_vec(),
            drives: DRIVES.map(String::from).to_vec(),
            out: PathBuf::from("paper-zeafs"),
            plot: None,
            capacity: 8 << 30,
            dm_config: PathBuf::from("seagate-5tb-data"),
            dm_set: Vec::new(),
            dirty_limit: 64 << 20,
            idle_before: 60.0,
            window: 0.25,
            db_bench_args: Vec::new(),
        }
    }
}

/// Whether `tool` can be found on `PATH`.
pub fn have_tool(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

fn check(opts: &ZeafsOptions) -> Result<()> {
    if let Some(d) = opts.drives.iter().find(|d| !DRIVES.contains(&d.as_str())) {
        return Err(Error::invalid(format!(
            "unknown drive {d:?} (one of: {})",
            DRIVES.join(", ")
        )));
    }
    if opts.drives.is_empty() || opts.benchmarks.is_empty() || opts.num == 0 {
        return Err(Error::invalid(
            "figure 4 needs at least one drive, one benchmark and --num > 0",
        ));
    }
    if !(opts.window > 0.0 && opts.idle_before >= 0.0) {
        return Err(Error::invalid(
            "--window must be positive and --idle-before at least 0",
        ));
    }
    if !have_tool("db_bench") {
        return Err(Error::unavailable(
            "db_bench is not installed (Debian rocksdb-tools)",
        ));
    }
    Ok(())
}

/// Runs db_bench on every drive of `opts` and writes the tables, JSON and plot. A drive whose
/// set-up fails (a missing tool, no root for the loop device) is skipped with a note and named
/// in the tables.
pub fn run(opts: &ZeafsOptions, obs: &dyn Observer) -> Result<PaperReport> {
    check(opts)?;
    crate::report::output_dir(&opts.out)?;
    let tmp = tempfile::Builder::new()
        .prefix("tegula-zeafs-")
        .tempdir()
        .map_err(|e| Error::io("creating a temporary directory", e))?;
    obs.job_started("paper zeafs", opts.drives.len() as u64);
    let mut runs: Vec<Run> = Vec::new();
    let mut skipped = Vec::new();
    for d in &opts.drives {
        obs.step(d);
        let r = match d.as_str() {
            "tegula" => tegula_fs::run(opts, tmp.path(), obs),
            "cmr" => drives::cmr(opts, tmp.path(), obs),
            _ => drives::dm(opts, tmp.path(), obs),
        };
        match r {
            Ok(r) => {
                obs.note(&format!(
                    "{}: {:.1} device s, {:.0} s wall",
                    r.name, r.device_s, r.wall_s
                ));
                runs.push(r);
            }
            Err(e) => {
                obs.note(&format!("SKIPPED {d}: {e}"));
                skipped.push(format!("{d}: {e}"));
            }
        }
    }
    obs.job_finished();
    report::write(opts, &runs, &skipped)
}
