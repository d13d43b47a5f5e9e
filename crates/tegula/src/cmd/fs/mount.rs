//! `tegula fs mount`: the file system (or a pass-through of a directory) under FUSE, in the
//! foreground or as a detached background process that the command waits for. The mount
//! process records itself in a registry file named after the mount point (its pid and
//! profile file), which `tegula fs profile` reads; SIGUSR1 appends a profile dump (one JSON
//! line) to the profile file and resets the counters.

use anyhow::{bail, Context};
use clap::Args;
use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tegula_device::{parse_size, SEC};
use tegula_fs::{CleanPolicy, Fs, FsOptions, MountEvent, MountOptions, Placement, Triggers};

/// `tegula fs mount` arguments.
#[derive(Debug, Clone, Args)]
pub struct MountArgs {
    /// Disk image (or, with --passthrough, the directory to pass through).
    image: PathBuf,
    /// Empty directory to mount on.
    mountpoint: PathBuf,
    /// Serve the directory IMAGE instead of a tegula file system: every request is
    /// forwarded to it and counted (the workload profiler and FUSE baseline).
    #[arg(long)]
    passthrough: bool,
    /// Stay in the foreground until unmounted.
    #[arg(long)]
    foreground: bool,
    /// Per-file write buffer.
    #[arg(long, default_value = "5MiB")]
    buffer: String,
    /// Log file of the background mount process (default: one per mount point,
    /// `$TMPDIR/tegula-fs-mounts/<hash of the mount point>.log`, replaced by the next mount
    /// there; a mount that fails removes it after showing it).
    #[arg(long)]
    log: Option<PathBuf>,
    /// Where profile dumps go, one JSON line each (default: the log file's name with
    /// `.profile.jsonl`).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Worker threads serving reads and fsyncs.
    #[arg(long, default_value_t = tegula_fs::fuse::DEFAULT_THREADS)]
    threads: usize,
    /// Do not use the kernel's writeback cache (every write call becomes a request, and
    /// pages written in pieces are not kept in the page cache).
    #[arg(long)]
    no_writeback_cache: bool,
    /// Let other users use the mount (FUSE allow_other; the kernel checks file modes).
    #[arg(long)]
    allow_other: bool,
    /// Placement policy for this mount (default: the one mkfs stored).
    #[arg(long)]
    placement: Option<Placement>,
    /// What the cleaner may do: whole, tail or auto.
    #[arg(long, default_value = "auto")]
    clean: CleanPolicy,
    /// Seconds without a request before the idle cleaner runs (0: no idle cleaning).
    #[arg(long, default_value_t = 1.0)]
    idle_after: f64,
    /// Usable free space (fraction) below which a low-priority cleaner runs.
    #[arg(long, default_value_t = 0.30)]
    low_free: f64,
    /// Usable free space (fraction) below which a high-priority cleaner makes writers wait.
    #[arg(long, default_value_t = 0.10)]
    high_free: f64,
    /// No background cleaner: a write that finds no room cleans in the foreground.
    #[arg(long)]
    no_background_cleaning: bool,
}

/// Runs `tegula fs mount`.
pub fn run(a: MountArgs) -> anyhow::Result<()> {
    if a.threads == 0 {
        bail!("--threads must be at least 1");
    }
    if !(0.0..=1.0).contains(&a.low_free)
        || !(0.0..=1.0).contains(&a.high_free)
        || a.high_free > a.low_free
    {
        bail!("--high-free and --low-free are fractions with --high-free <= --low-free");
    }
    if !(a.idle_after >= 0.0 && a.idle_after.is_finite()) {
        bail!("--idle-after must be a number of seconds >= 0");
    }
    if a.foreground {
        foreground(&a)
    } else {
        background(&a)
    }
}

/// Whether `mp` (canonical) is a mount point of this mount namespace.
pub fn is_mounted(mp: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = mp.to_string_lossy();
    text.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|p| p.replace("\\040", " ") == want)
}

/// The registry file of the mount at `mp` (canonical): `/tmp/tegula-fs-mounts/<hash>`.
pub fn registry(mp: &Path) -> PathBuf {
    // FNV-1a of the path: stable across runs, no file name rules to escape.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in mp.as_os_str().as_encoded_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    std::env::temp_dir()
        .join("tegula-fs-mounts")
        .join(format!("{h:016x}.json"))
}

/// What the registry file holds.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// The mount process.
    pub pid: u32,
    /// The mount point.
    pub mountpoint: PathBuf,
    /// Where its profile dumps go.
    pub profile: PathBuf,
}

/// Whether the registry file of `mp` names process `pid`.
fn registered_by(mp: &Path, pid: u32) -> bool {
    std::fs::read(registry(mp))
        .ok()
        .and_then(|b| serde_json::from_slice::<Entry>(&b).ok())
        .is_some_and(|e| e.pid == pid)
}

/// The log of the mount at `mp` when `--log` is not given: beside its registry file, one per
/// mount point, so that mounts do not pile files up in the temporary directory.
fn default_log(mp: &Path) -> PathBuf {
    registry(mp).with_extension("log")
}

/// Mounts and serves until unmounted or a stop signal arrives.
fn foreground(a: &MountArgs) -> anyhow::Result<()> {
    let mp = a
        .mountpoint
        .canonicalize()
        .with_context(|| format!("mount point {}", a.mountpoint.display()))?;
    let opts = MountOptions {
        threads: a.threads,
        writeback_cache: !a.no_writeback_cache,
        allow_other: a.allow_other,
        background_cleaning: !a.no_background_cleaning,
        triggers: Triggers {
            idle_after: (a.idle_after * SEC as f64) as u64,
            low_free: a.low_free,
            high_free: a.high_free,
            ..Triggers::default()
        },
        device_idle: true,
    };
    let stop = crate::interrupt::install()?;
    let usr1 = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, usr1.clone())?;
    let mounted = if a.passthrough {
        tegula_fs::mount_passthrough(&a.image, &mp, &opts)?
    } else {
        let buffer = parse_size(&a.buffer).map_err(|e| anyhow::anyhow!("--buffer: {e}"))?;
        let dev = super::open_dev(&a.image, crate::device::Access::ReadWrite)?;
        let fs = Fs::open(
            dev,
            FsOptions {
                buffer_bytes: buffer as usize,
                placement: a.placement,
                clean: a.clean,
                ..FsOptions::default()
            },
        )
        .with_context(|| format!("mounting {}", a.image.display()))?;
        tegula_fs::mount(fs, &mp, &opts)?
    };
    let profile_path = a.profile.clone().unwrap_or_else(|| {
        let log = a.log.clone().unwrap_or_else(|| default_log(&mp));
        log.with_extension("profile.jsonl")
    });
    let reg = registry(&mp);
    if let Some(dir) = reg.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // Written whole under a temporary name and renamed: a reader never sees half of it.
    let tmp = reg.with_extension(format!("json.{}", std::process::id()));
    std::fs::write(
        &tmp,
        serde_json::to_vec(&Entry {
            pid: std::process::id(),
            mountpoint: mp.clone(),
            profile: profile_path.clone(),
        })?,
    )
    .and_then(|()| std::fs::rename(&tmp, &reg))
    .with_context(|| format!("writing {}", reg.display()))?;
    eprintln!(
        "tegula-fs: mounted {}{} at {} (profile dumps to {})",
        if a.passthrough {
            "pass-through of "
        } else {
            ""
        },
        a.image.display(),
        mp.display(),
        profile_path.display()
    );
    let profiler = mounted.profiler();
    let dump = || -> anyhow::Result<()> {
        let p = profiler.take();
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&profile_path)
            .with_context(|| format!("opening {}", profile_path.display()))?;
        writeln!(f, "{}", p.to_json())?;
        Ok(())
    };
    let res = loop {
        if usr1.swap(false, Ordering::Relaxed) {
            if let Err(e) = dump() {
                eprintln!("tegula-fs: profile dump: {e:#}");
            }
        }
        if let MountEvent::Unmounted(res) = mounted.wait(Duration::from_millis(100)) {
            eprintln!("tegula-fs: unmounted {}", mp.display());
            break res;
        }
        if stop.load(Ordering::Relaxed) {
            eprintln!("tegula-fs: signal received, unmounting {}", mp.display());
            let res = mounted.unmount(Duration::from_secs(600));
            eprintln!("tegula-fs: unmounted {}", mp.display());
            break res;
        }
    };
    // The last counts, for scripts that only look after the unmount.
    if let Err(e) = dump() {
        eprintln!("tegula-fs: profile dump: {e:#}");
    }
    let _ = std::fs::remove_file(&reg);
    Ok(res?)
}

/// Starts this same command again with `--foreground` as a detached process and waits until
/// the mount appears.
fn background(a: &MountArgs) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let mp = a
        .mountpoint
        .canonicalize()
        .with_context(|| format!("mount point {}", a.mountpoint.display()))?;
    let exe = std::env::current_exe().context("finding this executable")?;
    let log = a.log.clone().unwrap_or_else(|| default_log(&mp));
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let out = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(std::env::args_os().skip(1)).arg("--foreground");
    if a.log.is_none() {
        cmd.arg("--log").arg(&log);
    }
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .context("starting the mount process")?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        // Mounted, and registered by this child (so `tegula fs profile` finds it at once).
        if is_mounted(&mp) && registered_by(&mp, child.id()) {
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
            if a.log.is_none() {
                // Shown below in full; nothing is left behind for a mount that never was.
                let _ = std::fs::remove_file(&log);
            }
            bail!("mount process exited with {status}:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("mount did not appear within 60 s (log {})", log.display())
}
