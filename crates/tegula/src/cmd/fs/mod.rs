//! `tegula fs …`: mkfs, mount (foreground or background; the file system or a
//! pass-through of a directory), profile, stats, check, clean.

mod experiment;
pub(crate) mod mount;
mod profile;
mod stats;

use crate::device::{self, Access, Spec};
use crate::{output, signature};
use anyhow::{Context, Result};
use clap::Subcommand;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tegula_device::{format_size, ZonedDevice};
use tegula_fs::{CleanPolicy, Fs, FsOptions, Placement};

/// `tegula fs` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum FsCommand {
    /// Create an empty file system on a host-managed (or host-aware) disk image; refuses an
    /// image that holds anything unless --force.
    Mkfs {
        /// Disk image (from `tegula disk create`).
        image: PathBuf,
        /// ZEA back pointers per extent.
        #[arg(long, default_value_t = 8)]
        back_pointers: u16,
        /// Placement policy stored as the default of every mount: last-used (the paper's
        /// default), first-fit, best-fit or age-fit.
        #[arg(long, default_value = "last-used")]
        placement: Placement,
        /// Erase whatever the image holds.
        #[arg(long)]
        force: bool,
    },
    /// Mount with FUSE. Runs in the background unless --foreground; unmount with
    /// `fusermount3 -u MOUNTPOINT` or SIGINT/SIGTERM to the mount process. SIGUSR1 (or
    /// `tegula fs profile MOUNTPOINT`) dumps the per-operation profile and resets it.
    Mount(mount::MountArgs),
    /// Dump (and reset) the per-operation profile of a mount as JSON (SIGUSR1 to its
    /// process).
    Profile {
        /// Mount point of a `tegula fs mount`.
        mountpoint: PathBuf,
        /// Seconds to wait for the mount process to dump.
        #[arg(long, default_value_t = 10.0)]
        wait: f64,
    },
    /// The cleaning experiment in device time: every placement policy, cleaning choice and
    /// trigger on a drive kept 70-90 % full by a workload that deletes and overwrites;
    /// table, JSON and plots.
    Experiment(experiment::ExperimentArgs),
    /// Live and dead bytes per zone (the analogue of ShingledFS's edistats).
    Stats {
        /// Disk image.
        image: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Workload write rate for the cleaning estimate, bytes per second (e.g. `40MiB`);
        /// default: the average since mkfs, idle time between writes included.
        #[arg(long)]
        write_rate: Option<String>,
    },
    /// Check metadata consistency and read every stored byte through its checksums.
    Check {
        /// Disk image.
        image: PathBuf,
        /// Skip reading file data (metadata and extent headers only).
        #[arg(long)]
        quick: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Rewrite a damaged superblock copy from the good one (as e2fsck does), then check.
        #[arg(long)]
        repair: bool,
    },
    /// Clean zones now.
    Clean {
        /// Disk image.
        image: PathBuf,
        /// How many zones to clean at most.
        #[arg(long, default_value_t = 1)]
        zones: u32,
        /// What the cleaner may do: whole (most dead bytes first), tail (best profit S/L
        /// behind the last hole) or auto (best profit of both).
        #[arg(long, default_value = "auto")]
        policy: CleanPolicy,
    },
}

/// Opens the zoned device of `image`.
fn open_dev(image: &Path, access: Access) -> Result<Arc<dyn ZonedDevice>> {
    device::open_zoned(&Spec::new(image, access))
}

/// Opens the file system; read-only takes a shared lock, which waits (up to `--lock-wait`)
/// for a mount that is still writing its buffers, then refuses.
fn open_fs(image: &Path, read_only: bool) -> Result<Fs> {
    let access = if read_only {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let dev = open_dev(image, access)?;
    let opts = FsOptions {
        read_only,
        ..FsOptions::default()
    };
    Fs::open(dev, opts).with_context(|| format!("mounting {}", image.display()))
}

/// Runs one `tegula fs` subcommand.
pub fn run(cmd: FsCommand) -> Result<()> {
    match cmd {
        FsCommand::Mkfs {
            image,
            back_pointers,
            placement,
            force,
        } => mkfs(&image, back_pointers, placement, force),
        FsCommand::Mount(args) => mount::run(args),
        FsCommand::Profile { mountpoint, wait } => profile::run(&mountpoint, wait),
        FsCommand::Experiment(args) => experiment::run(args),
        FsCommand::Stats {
            image,
            json,
            write_rate,
        } => {
            let rate = write_rate
                .map(|r| {
                    tegula_device::parse_size(r.trim_end_matches("/s"))
                        .map_err(|e| anyhow::anyhow!("--write-rate: {e}"))
                })
                .transpose()?;
            stats::run(&image, json, rate)
        }
        FsCommand::Check {
            image,
            quick,
            json,
            repair,
        } => check(&image, quick, json, repair),
        FsCommand::Clean {
            image,
            zones,
            policy,
        } => {
            let dev = open_dev(&image, Access::ReadWrite)?;
            let mut fs = Fs::open(
                dev,
                FsOptions {
                    clean: policy,
                    ..FsOptions::default()
                },
            )
            .with_context(|| format!("mounting {}", image.display()))?;
            for _ in 0..zones {
                match fs.clean()? {
                    Some(r) => println!(
                        "cleaned zone {} ({}): moved {}, reclaimed {}",
                        r.zone,
                        r.kind.name(),
                        format_size(r.moved),
                        format_size(r.reclaimed)
                    ),
                    None => {
                        println!("nothing to clean");
                        break;
                    }
                }
            }
            fs.close()?;
            Ok(())
        }
    }
}

fn mkfs(image: &Path, back_pointers: u16, placement: Placement, force: bool) -> Result<()> {
    let dev = open_dev(image, Access::ReadWrite)?;
    let found = signature::of_zoned(&dev)?;
    signature::refuse_unless_forced(image, &found, "mkfs", force)?;
    if !found.is_empty() {
        signature::wipe(dev.as_ref())?;
    }
    let info = dev.info();
    let fs = Fs::mkfs(
        dev,
        FsOptions {
            back_pointers,
            placement: Some(placement),
            ..FsOptions::default()
        },
    )
    .with_context(|| format!("mkfs on {}", image.display()))?;
    let s = fs.statfs();
    fs.close()?;
    let meta = if info.conventional_zones > 0 {
        format!("{} conventional (metadata)", info.conventional_zones)
    } else {
        format!(
            "no conventional zone (the metadata is in one emulated in the first {} zones)",
            tegula_device::convzones::log_zones_for(info.zone_sectors, info.zone_capacity_sectors)
        )
    };
    println!(
        "mkfs {}: {} zones of {}, {meta}, data capacity {}, placement {placement}",
        image.display(),
        info.zones,
        format_size(info.zone_sectors * info.sector_size as u64),
        format_size(s.blocks * s.block_size)
    );
    Ok(())
}

#[derive(Serialize)]
struct CheckJson {
    image: String,
    repaired: Vec<String>,
    files: u64,
    dirs: u64,
    pieces: u64,
    verified_bytes: u64,
    /// Unlinked inodes the next read-write mount frees (not a problem).
    orphans: u64,
    problems: Vec<String>,
}

fn check(image: &Path, quick: bool, json: bool, repair: bool) -> Result<()> {
    let mut fs = open_fs(image, !repair)?;
    let repaired = if repair {
        fs.repair_superblocks()?
    } else {
        Vec::new()
    };
    let r = fs.check(!quick)?;
    if repair {
        fs.close()?;
    }
    if json {
        output::print_json(&CheckJson {
            image: image.display().to_string(),
            repaired: repaired.clone(),
            files: r.files,
            dirs: r.dirs,
            pieces: r.pieces,
            verified_bytes: r.verified,
            orphans: r.orphans,
            problems: r.problems.clone(),
        })?;
    } else {
        for line in &repaired {
            println!("repaired: {line}");
        }
        println!(
            "check {}: {} files, {} directories, {} pieces, {} verified",
            image.display(),
            r.files,
            r.dirs,
            r.pieces,
            format_size(r.verified)
        );
        if r.orphans > 0 {
            println!(
                "{} unlinked inodes still allocated (freed by the next read-write mount)",
                r.orphans
            );
        }
        for p in &r.problems {
            println!("problem: {p}");
        }
    }
    if !json && r.problems.is_empty() && repaired.is_empty() {
        println!("no inconsistencies");
    }
    output::CheckExit::of(r.problems.len(), repaired.len())
}
