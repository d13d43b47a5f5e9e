//! `tegula fs profile MOUNTPOINT`: asks a mount process for a profile dump (SIGUSR1), waits
//! for the new line in its profile file and prints it (the stable JSON of
//! `tegula_fs::Profile`). The counters restart from zero.

use super::mount::{registry, Entry};
use anyhow::{bail, Context};
use std::path::Path;
use std::time::{Duration, Instant};

fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |t| t.lines().count())
}

/// Runs `tegula fs profile`.
pub fn run(mountpoint: &Path, wait: f64) -> anyhow::Result<()> {
    let mp = mountpoint
        .canonicalize()
        .with_context(|| format!("mount point {}", mountpoint.display()))?;
    let reg = registry(&mp);
    let text = std::fs::read(&reg).with_context(|| {
        format!(
            "{} is not a tegula fs mount of this machine (no {})",
            mp.display(),
            reg.display()
        )
    })?;
    let e: Entry =
        serde_json::from_slice(&text).with_context(|| format!("reading {}", reg.display()))?;
    let before = lines(&e.profile);
    // SAFETY: kill with a valid signal number; the pid comes from the registry.
    if unsafe { libc::kill(e.pid as libc::pid_t, libc::SIGUSR1) } != 0 {
        bail!(
            "signalling mount process {}: {}",
            e.pid,
            std::io::Error::last_os_error()
        );
    }
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < wait {
        if lines(&e.profile) > before {
            let t = std::fs::read_to_string(&e.profile)?;
            if let Some(last) = t.lines().last() {
                println!("{last}");
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!(
        "mount process {} did not dump its profile to {} within {wait} s",
        e.pid,
        e.profile.display()
    )
}
