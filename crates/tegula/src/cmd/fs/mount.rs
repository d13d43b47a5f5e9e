//! `tegula fs mount`: the file system under FUSE, in the foreground or as a detached
//! background process that the command waits for.

use anyhow::{bail, Context};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tegula_fs::{Fs, FsOptions, MountEvent, MountOptions};

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

/// Mounts `image` on `mountpoint` and serves it until it is unmounted or a signal arrives.
pub fn foreground(
    image: &Path,
    mountpoint: &Path,
    buffer: usize,
    threads: usize,
    writeback: bool,
) -> anyhow::Result<()> {
    let dev = super::open_dev(image, crate::device::Access::ReadWrite)?;
    let fs = Fs::open(
        dev,
        FsOptions {
            buffer_bytes: buffer,
            ..FsOptions::default()
        },
    )
    .with_context(|| format!("mounting {}", image.display()))?;
    let stop = crate::interrupt::install()?;
    let mounted = tegula_fs::mount(
        fs,
        mountpoint,
        &MountOptions {
            threads,
            writeback_cache: writeback,
            ..MountOptions::default()
        },
    )?;
    eprintln!(
        "tegula-fs: mounted {} at {}",
        image.display(),
        mountpoint.display()
    );
    loop {
        if let MountEvent::Unmounted(res) = mounted.wait(Duration::from_millis(100)) {
            eprintln!("tegula-fs: unmounted {}", mountpoint.display());
            return res.map_err(anyhow::Error::msg);
        }
        if stop.load(Ordering::Relaxed) {
            eprintln!(
                "tegula-fs: signal received, unmounting {}",
                mountpoint.display()
            );
            let res = mounted.unmount(Duration::from_secs(600));
            eprintln!("tegula-fs: unmounted {}", mountpoint.display());
            return res.map_err(anyhow::Error::msg);
        }
    }
}

/// Starts this same command again with `--foreground` as a detached process and waits until
/// the mount appears.
pub fn background(mountpoint: &Path, log: Option<PathBuf>) -> anyhow::Result<()> {
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
