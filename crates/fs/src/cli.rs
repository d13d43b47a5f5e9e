//! `tegula fs …`: mkfs, mount (foreground or background), stats, check, clean. The binary
//! wires [`FsCommand`] under its `fs` subcommand and calls [`run`].

use crate::fs::{Fs, FsOptions};
use crate::fuse::FuseFs;
use anyhow::{bail, Context};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tegula_device::{format_size, parse_size, Disk, OpenOptions, ZonedDevice};

/// `tegula fs` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum FsCommand {
    /// Create an empty file system on a host-managed (or host-aware) disk image.
    Mkfs {
        /// Disk image (from `tegula disk create`).
        image: PathBuf,
        /// ZEA back pointers per extent.
        #[arg(long, default_value_t = 8)]
        back_pointers: u16,
    },
    /// Mount with FUSE. Runs in the background unless --foreground; unmount with
    /// `fusermount3 -u MOUNTPOINT` or SIGINT/SIGTERM to the mount process.
    Mount {
        /// Disk image.
        image: PathBuf,
        /// Empty directory to mount on.
        mountpoint: PathBuf,
        /// Stay in the foreground until unmounted.
        #[arg(long)]
        foreground: bool,
        /// Per-file write buffer.
        #[arg(long, default_value = "5MiB")]
        buffer: String,
        /// Log file of the background mount process (default: `/tmp/tegula-fs-<pid>.log`).
        #[arg(long)]
        log: Option<PathBuf>,
        /// Worker threads serving FUSE requests.
        #[arg(long, default_value_t = crate::fuse::DEFAULT_THREADS)]
        threads: usize,
        /// Do not use the kernel's writeback cache (every write call becomes a request, and
        /// pages written in pieces are not kept in the page cache).
        #[arg(long)]
        no_writeback_cache: bool,
    },
    /// Live and dead bytes per zone (the analogue of ShingledFS's edistats).
    Stats {
        /// Disk image.
        image: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Check metadata consistency and read every stored byte through its checksums.
    Check {
        /// Disk image.
        image: PathBuf,
        /// Skip reading file data (metadata and extent headers only).
        #[arg(long)]
        quick: bool,
    },
    /// Clean zones now (most dead bytes first).
    Clean {
        /// Disk image.
        image: PathBuf,
        /// How many zones to clean at most.
        #[arg(long, default_value_t = 1)]
        zones: u32,
    },
}

fn open_dev(image: &Path, read_only: bool) -> anyhow::Result<Arc<dyn ZonedDevice>> {
    let disk = Disk::open_image(image, OpenOptions { read_only })
        .with_context(|| format!("opening disk image {}", image.display()))?;
    Ok(Arc::new(disk))
}

/// Opens the file system read-only for `stats` and `check`. The device layer's shared lock
/// waits (up to the command's lock wait) for a mount that is still writing, then refuses.
fn open_fs_read_only(image: &Path) -> anyhow::Result<Fs> {
    open_fs(image, true)
}

fn open_fs(image: &Path, read_only: bool) -> anyhow::Result<Fs> {
    let dev = open_dev(image, read_only)?;
    let opts = FsOptions {
        read_only,
        ..FsOptions::default()
    };
    Fs::open(dev, opts).with_context(|| format!("mounting {}", image.display()))
}

/// Runs one `tegula fs` subcommand.
pub fn run(cmd: FsCommand) -> anyhow::Result<()> {
    match cmd {
        FsCommand::Mkfs {
            image,
            back_pointers,
        } => {
            let dev = open_dev(&image, false)?;
            let info = dev.info();
            let fs = Fs::mkfs(
                dev,
                FsOptions {
                    back_pointers,
                    ..FsOptions::default()
                },
            )
            .with_context(|| format!("mkfs on {}", image.display()))?;
            let s = fs.statfs();
            fs.close()?;
            println!(
                "mkfs {}: {} zones of {}, {} conventional (metadata), data capacity {}",
                image.display(),
                info.zones,
                format_size(info.zone_sectors * info.sector_size as u64),
                info.conventional_zones,
                format_size(s.blocks * s.block_size)
            );
            Ok(())
        }
        FsCommand::Mount {
            image,
            mountpoint,
            foreground,
            buffer,
            log,
            threads,
            no_writeback_cache,
        } => {
            let buffer = parse_size(&buffer).map_err(anyhow::Error::msg)? as usize;
            if foreground {
                mount_foreground(&image, &mountpoint, buffer, threads, !no_writeback_cache)
            } else {
                mount_background(&mountpoint, log)
            }
        }
        FsCommand::Stats { image, json } => stats(&image, json),
        FsCommand::Check { image, quick } => {
            let mut fs = open_fs_read_only(&image)?;
            let r = fs.check(!quick)?;
            println!(
                "check {}: {} files, {} directories, {} pieces, {} verified",
                image.display(),
                r.files,
                r.dirs,
                r.pieces,
                format_size(r.verified)
            );
            for p in &r.problems {
                println!("problem: {p}");
            }
            if !r.problems.is_empty() {
                bail!("{} inconsistencies found", r.problems.len());
            }
            println!("no inconsistencies");
            Ok(())
        }
        FsCommand::Clean { image, zones } => {
            let mut fs = open_fs(&image, false)?;
            for _ in 0..zones {
                match fs.clean()? {
                    Some(r) => println!(
                        "cleaned zone {}: moved {}, reclaimed {}",
                        r.zone,
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

fn stats(image: &Path, json: bool) -> anyhow::Result<()> {
    let fs = open_fs_read_only(image)?;
    let zs = fs.zone_stats();
    let m = fs.meta_stats();
    let s = fs.statfs();
    let (used, live, dead, free) = zs.iter().fold((0, 0, 0, 0), |a, z| {
        (a.0 + z.used, a.1 + z.live, a.2 + z.dead, a.3 + z.free)
    });
    if json {
        let zones: Vec<serde_json::Value> = zs
            .iter()
            .map(|z| {
                serde_json::json!({
                    "zone": z.zone, "role": z.role, "used": z.used, "live": z.live,
                    "dead": z.dead, "free": z.free,
                })
            })
            .collect();
        let v = serde_json::json!({
            "image": image.display().to_string(),
            "zones": zones,
            "total": {"used": used, "live": live, "dead": dead, "free": free},
            "statfs": {"block_size": s.block_size, "blocks": s.blocks, "free_blocks": s.free_blocks, "files": s.files},
            "meta": {"generation": m.generation, "log_used_sectors": m.log_used, "log_sectors": m.log_sectors, "inodes": m.inodes},
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{:>5} {:>6} {:>12} {:>12} {:>12} {:>12}",
        "zone", "role", "used", "live", "dead", "free"
    );
    for z in zs.iter().filter(|z| z.used > 0 || z.role != "empty") {
        println!(
            "{:>5} {:>6} {:>12} {:>12} {:>12} {:>12}",
            z.zone, z.role, z.used, z.live, z.dead, z.free
        );
    }
    let empty = zs.iter().filter(|z| z.role == "empty").count();
    println!(
        "total: used {}, live {}, dead {}, free {} ({} empty zones); {} inodes; log {}/{} sectors since checkpoint {}",
        format_size(used),
        format_size(live),
        format_size(dead),
        format_size(free),
        empty,
        m.inodes,
        m.log_used,
        m.log_sectors,
        m.generation
    );
    Ok(())
}

/// Whether `mp` (canonical) is a mount point of this mount namespace.
fn is_mounted(mp: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = mp.to_string_lossy();
    text.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|p| p.replace("\\040", " ") == want)
}

fn mount_foreground(
    image: &Path,
    mountpoint: &Path,
    buffer: usize,
    threads: usize,
    writeback: bool,
) -> anyhow::Result<()> {
    let dev = open_dev(image, false)?;
    let fs = Fs::open(
        dev,
        FsOptions {
            buffer_bytes: buffer,
            ..FsOptions::default()
        },
    )
    .with_context(|| format!("mounting {}", image.display()))?;
    let (tx, rx) = mpsc::channel();
    let options = [
        fuser::MountOption::FSName("tegula".into()),
        fuser::MountOption::Subtype("tegula".into()),
        fuser::MountOption::DefaultPermissions,
        fuser::MountOption::NoAtime,
    ];
    let fuse = FuseFs::with_threads(fs, tx, threads).writeback_cache(writeback);
    let session = fuser::Session::new(fuse, mountpoint, &options)
        .with_context(|| format!("FUSE mount on {}", mountpoint.display()))?;
    let bg = session.spawn()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    eprintln!(
        "tegula-fs: mounted {} at {}",
        image.display(),
        mountpoint.display()
    );
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(res) => {
                drop(bg);
                eprintln!("tegula-fs: unmounted {}", mountpoint.display());
                return res.map_err(anyhow::Error::msg);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!("FUSE session ended abnormally"),
        }
        if stop.load(Ordering::Relaxed) {
            eprintln!(
                "tegula-fs: signal received, unmounting {}",
                mountpoint.display()
            );
            drop(bg);
            let res = rx
                .recv_timeout(Duration::from_secs(600))
                .context("waiting for the file system to write its buffers")?;
            eprintln!("tegula-fs: unmounted {}", mountpoint.display());
            return res.map_err(anyhow::Error::msg);
        }
    }
}

/// Starts this same command again with `--foreground` as a detached process and waits until
/// the mount appears.
fn mount_background(mountpoint: &Path, log: Option<PathBuf>) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let mp = mountpoint
        .canonicalize()
        .with_context(|| format!("mount point {}", mountpoint.display()))?;
    let exe = std::env::current_exe().context("finding this executable")?;
    let log =
        log.unwrap_or_else(|| PathBuf::from(format!("/tmp/tegula-fs-{}.log", std::process::id())));
    let out = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    let mut child = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .arg("--foreground")
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .context("starting the mount process")?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if is_mounted(&mp) {
            println!(
                "mounted at {} (process {}, log {})",
                mp.display(),
                child.id(),
                log.display()
            );
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let mut text = String::new();
            if let Ok(mut f) = std::fs::File::open(&log) {
                let _ = f.read_to_string(&mut text);
            }
            bail!("mount process exited with {status}:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("mount did not appear within 60 s (log {})", log.display())
}
