//! Mounting an [`Fs`] with FUSE in a background session, so that callers (the `tegula fs
//! mount` command, tests) need not speak `fuser`: [`mount`] returns a [`Mounted`] that reports
//! when the kernel unmounted the file system and its buffers were written, or unmounts it.

use crate::error::{FsError, Result};
use crate::fs::Fs;
use crate::fuse::FuseFs;
use crate::profile::Profiler;
use crate::triggers::Triggers;
use crate::unmount_error::UnmountError;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// How [`mount`] mounts.
#[derive(Debug, Clone)]
pub struct MountOptions {
    /// Worker threads serving FUSE requests. Default: [`crate::fuse::DEFAULT_THREADS`].
    pub threads: usize,
    /// Use the kernel's writeback cache (small writes are gathered into pages). Default: on.
    pub writeback_cache: bool,
    /// Let users other than the one who mounted use the mount (FUSE `allow_other`; for a
    /// user other than root it needs `user_allow_other` in `/etc/fuse.conf`). Access is then
    /// checked against each file's mode by the kernel (`default_permissions`). Default: off.
    pub allow_other: bool,
    /// Clean on a background thread when a trigger fires (default: on); off, a write that
    /// finds no room cleans in the foreground.
    pub background_cleaning: bool,
    /// Triggers of the background cleaner (default [`Triggers::default`]).
    pub triggers: Triggers,
    /// Let an emulated drive's virtual clock run through idle periods, so that idle time is
    /// device idle time (default: off; `tegula fs mount` turns it on). Off, device time
    /// counts only the drive's work, as the benchmarks report it.
    pub device_idle: bool,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            threads: crate::fuse::DEFAULT_THREADS,
            writeback_cache: true,
            allow_other: false,
            background_cleaning: true,
            triggers: Triggers::default(),
            device_idle: false,
        }
    }
}

/// The FUSE mount options both mounts use.
pub(crate) fn fuse_options(name: &str, allow_other: bool) -> Vec<fuser::MountOption> {
    let mut options = vec![
        fuser::MountOption::FSName(name.into()),
        fuser::MountOption::Subtype("tegula".into()),
        fuser::MountOption::DefaultPermissions,
        fuser::MountOption::NoAtime,
    ];
    if allow_other {
        options.push(fuser::MountOption::AllowOther);
    }
    options
}

/// A mounted file system.
pub struct Mounted {
    session: Option<fuser::BackgroundSession>,
    mountpoint: PathBuf,
    done: mpsc::Receiver<std::result::Result<(), FsError>>,
    profiler: Arc<Profiler>,
}

/// Mounts `fs` on `mountpoint` (an empty directory) and serves it on background threads.
pub fn mount(fs: Fs, mountpoint: &Path, opts: &MountOptions) -> Result<Mounted> {
    let canonical = canonical(mountpoint);
    let (tx, rx) = mpsc::channel();
    let fuse = FuseFs::with_threads(fs, tx, opts.threads.max(1))
        .writeback_cache(opts.writeback_cache)
        .background_cleaning(opts.background_cleaning)
        .triggers(opts.triggers)
        .device_idle(opts.device_idle);
    let profiler = fuse.profiler();
    let io = |source: std::io::Error| FsError::Host {
        what: format!("FUSE mount on {}", mountpoint.display()),
        source,
    };
    let options = fuse_options("tegula", opts.allow_other);
    let session = fuser::Session::new(fuse, mountpoint, &options).map_err(io)?;
    Mounted::serve(session, canonical, rx, profiler).map_err(io)
}

/// Mounts a pass-through of directory `dir` on `mountpoint`: every request is counted by
/// the profiler and forwarded to `dir` (the FUSE baseline of ShingledFS's evaluation, and a
/// way to profile any workload).
pub fn mount_passthrough(dir: &Path, mountpoint: &Path, opts: &MountOptions) -> Result<Mounted> {
    let canonical = canonical(mountpoint);
    let (tx, rx) = mpsc::channel();
    let io = |source: std::io::Error| FsError::Host {
        what: format!(
            "pass-through of {} on {}",
            dir.display(),
            mountpoint.display()
        ),
        source,
    };
    let pt = crate::passthrough::Passthrough::new(dir, tx, opts.threads.max(1))
        .map_err(io)?
        .writeback_cache(opts.writeback_cache);
    let profiler = pt.profiler();
    let options = fuse_options("tegula-passthrough", opts.allow_other);
    let session = fuser::Session::new(pt, mountpoint, &options).map_err(io)?;
    Mounted::serve(session, canonical, rx, profiler).map_err(io)
}

/// What [`Mounted::wait`] saw.
#[derive(Debug)]
pub enum MountEvent {
    /// Still mounted after the wait.
    Mounted,
    /// Unmounted, and the file system closed cleanly (or with this error).
    Unmounted(std::result::Result<(), UnmountError>),
}

impl Mounted {
    /// Serves `session` (mounted at `mountpoint`) on a background thread.
    fn serve<FS: fuser::Filesystem + Send + 'static>(
        session: fuser::Session<FS>,
        mountpoint: PathBuf,
        done: mpsc::Receiver<std::result::Result<(), FsError>>,
        profiler: Arc<Profiler>,
    ) -> std::io::Result<Mounted> {
        Ok(Mounted {
            session: Some(session.spawn()?),
            mountpoint,
            done,
            profiler,
        })
    }

    /// The profiler counting the mount's requests.
    pub fn profiler(&self) -> Arc<Profiler> {
        self.profiler.clone()
    }

    /// Waits up to `timeout` for the file system to be unmounted (by `fusermount3 -u`, say)
    /// and closed.
    pub fn wait(&self, timeout: Duration) -> MountEvent {
        match self.done.recv_timeout(timeout) {
            Ok(r) => MountEvent::Unmounted(r.map_err(UnmountError::Close)),
            Err(mpsc::RecvTimeoutError::Timeout) => MountEvent::Mounted,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                MountEvent::Unmounted(Err(UnmountError::Abnormal))
            }
        }
    }

    /// Unmounts, then waits up to `timeout` for the file system to write its buffers and
    /// close.
    pub fn unmount(mut self, timeout: Duration) -> std::result::Result<(), UnmountError> {
        // fuser's own unmount (when the session is dropped) tries once and gives up if the
        // mount is busy, leaving it mounted and this wait to time out: a file closed a moment
        // ago is released asynchronously, and a child another thread is forking holds the
        // process's files until it execs. So: a plain unmount, retried while busy; failing
        // that for long, a lazy one, which ends the session once the last user is gone.
        let start = std::time::Instant::now();
        let mut last = String::new();
        while start.elapsed() < timeout.min(Duration::from_secs(30)) {
            match unmount_now(&self.mountpoint) {
                // Done, or not busy (not mounted any more, say): nothing to wait for.
                Ok(()) | Err(Unmount { busy: false, .. }) => {
                    last.clear();
                    break;
                }
                Err(Unmount { why, .. }) => last = why,
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if !last.is_empty() {
            if let Err(e) = unmount_lazily(&self.mountpoint) {
                last = format!("{last}; lazily: {}", e.why);
            }
        }
        drop(self.session.take());
        match self.done.recv_timeout(timeout) {
            Ok(r) => r.map_err(UnmountError::Close),
            Err(_) if !last.is_empty() => Err(UnmountError::Detached {
                mountpoint: self.mountpoint.clone(),
                why: last,
                timeout,
            }),
            Err(_) => Err(UnmountError::Timeout { timeout }),
        }
    }
}

/// The mount point as the mount table will name it (resolved before mounting, as resolving
/// it afterwards would ask the mount itself).
fn canonical(mp: &Path) -> PathBuf {
    mp.canonicalize().unwrap_or_else(|_| mp.to_path_buf())
}

/// Why an unmount failed.
struct Unmount {
    /// The mount is in use (EBUSY): worth trying again.
    busy: bool,
    why: String,
}

/// Unmounts `mp` now (not lazily): `umount2` as root, `fusermount3 -u` otherwise.
fn unmount_now(mp: &Path) -> std::result::Result<(), Unmount> {
    unmount_with(mp, 0, &["-u"])
}

/// Detaches `mp` (`MNT_DETACH`, `fusermount3 -u -z`): the kernel ends the session once the
/// last user of the mount is gone.
fn unmount_lazily(mp: &Path) -> std::result::Result<(), Unmount> {
    unmount_with(mp, libc::MNT_DETACH, &["-u", "-z"])
}

fn unmount_with(mp: &Path, flags: i32, fusermount: &[&str]) -> std::result::Result<(), Unmount> {
    let other = |why: String| Unmount { busy: false, why };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let c = std::ffi::CString::new(mp.as_os_str().as_encoded_bytes())
            .map_err(|e| other(e.to_string()))?;
        // SAFETY: `c` is a valid C string that outlives the call.
        if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        return Err(Unmount {
            busy: e.raw_os_error() == Some(libc::EBUSY),
            why: e.to_string(),
        });
    }
    let out = std::process::Command::new("fusermount3")
        .args(fusermount)
        .arg("--")
        .arg(mp)
        .output()
        .map_err(|e| other(format!("running fusermount3: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    // fusermount3 says why only in words ("Device or resource busy").
    let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(Unmount {
        busy: why.contains("busy"),
        why,
    })
}
