//! ext4 on an emulated drive: the drive exported over NBD, attached with `nbdfuse` and a loop
//! device, formatted with `mkfs.ext4` and mounted; and db_bench on it.

use super::nbd_export::NbdExport;
use super::probe::{delta, Counters, Probe};
use super::run::{bench_all, finish, Run};
use super::{have_tool, ZeafsOptions};
use crate::error::{Error, Result};
use crate::observer::Observer;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tegula_device::{BlockDevice, Nanos};

/// Runs a shell command; its standard output, or an error with everything it printed.
pub(super) fn sh(cmd: &str) -> Result<String> {
    let o = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .map_err(|e| Error::tool(cmd, e.to_string()))?;
    if !o.status.success() {
        return Err(Error::tool(
            cmd,
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
            .trim()
            .to_string(),
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

fn io(what: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(what, e)
}

/// ext4 on `dev` through NBD, nbdfuse and a loop device; everything set up here is torn
/// down by `Drop`, in reverse order, also when a step fails.
struct Ext4Stack {
    export: NbdExport,
    fuse_dir: PathBuf,
    nbdfuse: Option<std::process::Child>,
    lo: Option<String>,
    /// The loop device's writeback settings to restore: (directory, max_ratio_fine,
    /// strict_limit).
    bdi: Option<(PathBuf, String, String)>,
    mnt: PathBuf,
    mounted: bool,
}

impl Ext4Stack {
    fn new(tag: &str, dev: Arc<dyn BlockDevice>, a: &ZeafsOptions, tmp: &Path) -> Result<Self> {
        for tool in ["nbdfuse", "losetup", "mkfs.ext4"] {
            if !have_tool(tool) {
                return Err(Error::unavailable(format!("{tool} is not installed")));
            }
        }
        let sock = tmp.join(format!("{tag}.sock"));
        let export = NbdExport::start(&sock, dev)?;
        let fuse_dir = tmp.join(format!("{tag}-nbdfuse"));
        let mnt = tmp.join(format!("{tag}-ext4"));
        std::fs::create_dir_all(&fuse_dir).map_err(io("creating the nbdfuse directory"))?;
        std::fs::create_dir_all(&mnt).map_err(io("creating the ext4 mount point"))?;
        let mut s = Ext4Stack {
            export,
            fuse_dir: fuse_dir.clone(),
            nbdfuse: None,
            lo: None,
            bdi: None,
            mnt: mnt.clone(),
            mounted: false,
        };
        s.nbdfuse = Some(
            Command::new("nbdfuse")
                .arg(&fuse_dir)
                .arg(format!("nbd+unix:///?socket={}", sock.display()))
                .spawn()
                .map_err(|e| Error::tool("nbdfuse", e.to_string()))?,
        );
        let file = fuse_dir.join("nbd");
        for _ in 0..400 {
            if file.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        // Direct I/O: no second page cache (nbdfuse's file) under the loop device.
        let lo = sh(&format!(
            "losetup -f --show --direct-io=on {}",
            file.display()
        ))
        .or_else(|_| sh(&format!("losetup -f --show {}", file.display())))?
        .trim()
        .to_string();
        s.lo = Some(lo.clone());
        if a.dirty_limit > 0 {
            // Bound the dirty page cache of the loop device to the file system's write
            // buffer limit, so that ext4 writes back while db_bench runs, as tegula fs does.
            let name = lo.trim_start_matches("/dev/");
            let bdi = PathBuf::from(format!("/sys/block/{name}/bdi"));
            let rd = |f: &str| std::fs::read_to_string(bdi.join(f)).map(|s| s.trim().to_string());
            if let (Ok(mb), Ok(sl)) = (rd("max_ratio_fine"), rd("strict_limit")) {
                s.bdi = Some((bdi.clone(), mb, sl));
                std::fs::write(bdi.join("strict_limit"), "1")
                    .map_err(io("setting the loop device's strict_limit"))?;
                std::fs::write(bdi.join("max_bytes"), a.dirty_limit.to_string())
                    .map_err(io("setting the loop device's max_bytes"))?;
            }
        }
        sh(&format!(
            "mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 {lo}"
        ))?;
        sh(&format!("mount {lo} {}", mnt.display()))?;
        s.mounted = true;
        Ok(s)
    }

    /// Unmounts and detaches everything (idempotent); the first failure is returned after
    /// every step was tried.
    fn teardown(&mut self) -> Result<()> {
        let mut first = None;
        if self.mounted {
            if let Err(e) = sh(&format!("umount {}", self.mnt.display())) {
                first.get_or_insert(e);
            }
            self.mounted = false;
        }
        if let Some(lo) = self.lo.take() {
            let _ = sh(&format!("blockdev --flushbufs {lo}"));
            if let Some((bdi, mb, sl)) = self.bdi.take() {
                let _ = std::fs::write(bdi.join("max_ratio_fine"), mb);
                let _ = std::fs::write(bdi.join("strict_limit"), sl);
            }
            if let Err(e) = sh(&format!("losetup -d {lo}")) {
                first.get_or_insert(e);
            }
        }
        if let Some(mut c) = self.nbdfuse.take() {
            let _ = sh(&format!("fusermount3 -u {}", self.fuse_dir.display()));
            let _ = c.wait();
        }
        self.export.stop();
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Ext4Stack {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// ext4 on `dev`: set up, idle `idle_before` device seconds, run db_bench, tear down (the run
/// ends when everything is on the drive), and take the counters' difference.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    tag: &str,
    name: &str,
    drive: String,
    dev: Arc<dyn BlockDevice>,
    probe: Probe,
    counters: Counters,
    a: &ZeafsOptions,
    tmp: &Path,
    obs: &dyn Observer,
) -> Result<Run> {
    let mut stack = Ext4Stack::new(tag, dev.clone(), a, tmp)?;
    // A drive that sat idle for a while after mkfs (the drive-managed drive cleans meanwhile).
    dev.idle((a.idle_before * 1e9) as Nanos);
    let c0 = counters();
    let res = bench_all(name, &stack.mnt.clone(), &probe, a, tmp, obs);
    // The run ends when everything is on the drive: unmount, flush, detach.
    if let Err(e) = stack.teardown() {
        obs.note(&format!("{name}: tearing down: {e}"));
    }
    let sampled = res?;
    let mut r = finish(name, drive, sampled, &probe, a.window)?;
    r.counters = delta(&c0, &counters());
    Ok(r)
}
