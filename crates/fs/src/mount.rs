//! Mounting an [`Fs`] with FUSE in a background session, so that callers (the `tegula fs
//! mount` command, tests) need not speak `fuser`: [`mount`] returns a [`Mounted`] that reports
//! when the kernel unmounted the file system and its buffers were written, or unmounts it.

use crate::error::{FsError, Result};
use crate::fs::Fs;
use crate::fuse::FuseFs;
use std::path::Path;
use std::sync::mpsc;
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
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            threads: crate::fuse::DEFAULT_THREADS,
            writeback_cache: true,
            allow_other: false,
        }
    }
}

/// A mounted file system.
pub struct Mounted {
    session: Option<fuser::BackgroundSession>,
    done: mpsc::Receiver<std::result::Result<(), String>>,
}

/// Mounts `fs` on `mountpoint` (an empty directory) and serves it on background threads.
pub fn mount(fs: Fs, mountpoint: &Path, opts: &MountOptions) -> Result<Mounted> {
    let (tx, rx) = mpsc::channel();
    let mut options = vec![
        fuser::MountOption::FSName("tegula".into()),
        fuser::MountOption::Subtype("tegula".into()),
        fuser::MountOption::DefaultPermissions,
        fuser::MountOption::NoAtime,
    ];
    if opts.allow_other {
        options.push(fuser::MountOption::AllowOther);
    }
    let fuse =
        FuseFs::with_threads(fs, tx, opts.threads.max(1)).writeback_cache(opts.writeback_cache);
    let io =
        |e: std::io::Error| FsError::Io(format!("FUSE mount on {}: {e}", mountpoint.display()));
    let session = fuser::Session::new(fuse, mountpoint, &options).map_err(io)?;
    let bg = session.spawn().map_err(io)?;
    Ok(Mounted {
        session: Some(bg),
        done: rx,
    })
}

/// What [`Mounted::wait`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum MountEvent {
    /// Still mounted after the wait.
    Mounted,
    /// Unmounted, and the file system closed cleanly (or with this error).
    Unmounted(std::result::Result<(), String>),
}

impl Mounted {
    /// Waits up to `timeout` for the file system to be unmounted (by `fusermount3 -u`, say)
    /// and closed.
    pub fn wait(&self, timeout: Duration) -> MountEvent {
        match self.done.recv_timeout(timeout) {
            Ok(r) => MountEvent::Unmounted(r),
            Err(mpsc::RecvTimeoutError::Timeout) => MountEvent::Mounted,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                MountEvent::Unmounted(Err("the FUSE session ended abnormally".into()))
            }
        }
    }

    /// Unmounts, then waits up to `timeout` for the file system to write its buffers and
    /// close.
    pub fn unmount(mut self, timeout: Duration) -> std::result::Result<(), String> {
        drop(self.session.take());
        match self.done.recv_timeout(timeout) {
            Ok(r) => r,
            Err(_) => Err(format!(
                "the file system did not finish writing its buffers within {timeout:?}"
            )),
        }
    }
}
