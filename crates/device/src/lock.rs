//! Advisory whole-file locks (`flock`) on disk images and the files or block devices behind
//! banded drives: a process that opens one for writing holds an exclusive lock, a read-only
//! opener a shared one, for as long as the handle lives. Two writers (two `tegula serve nbd`, a
//! mount and a `disk reset`, parallel `db put`s) would otherwise overwrite each other's state.
//! A conflicting opener waits up to [`default_wait`] (set by the command line), then fails with
//! [`DeviceError::Locked`] naming the holder where `/proc/locks` tells it. A reader that only
//! wants figures (`tegula disk info`) can instead pass a writer's lock at once
//! ([`read_past_writers`]) and read what the writer last saved.

use crate::error::{DeviceError, Result};
use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

static DEFAULT_WAIT_MS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Inside [`read_past_writers`] on this thread: `Some`, holding the writer passed over once
    /// one was.
    static PASSING: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

/// Restores the enclosing [`read_past_writers`] state when a call ends, also by a panic.
struct PassingScope(Option<Option<String>>);

impl Drop for PassingScope {
    fn drop(&mut self) {
        let outer = self.0.take();
        PASSING.with(|p| *p.borrow_mut() = outer);
    }
}

/// Runs `open` so that a shared (read-only) lock another process's exclusive lock blocks is
/// not waited for: the open goes on at once without the lock and reads the file as the writer
/// last saved it (for an image: its header and the state of its last flush). Returns what
/// `open` returned and the writer passed over, if one was (`process 42 (tegula serve nbd …)`).
/// Writers' (exclusive) locks inside `open` wait as usual.
pub fn read_past_writers<T>(open: impl FnOnce() -> T) -> (T, Option<String>) {
    let scope = PassingScope(PASSING.with(|p| p.replace(Some(None))));
    let out = open();
    let passed = PASSING.with(|p| p.borrow().clone()).flatten();
    drop(scope);
    (out, passed)
}

/// Inside [`read_past_writers`]: records that the lock on `file` was passed over and returns
/// true; outside, false.
fn pass_writer(file: &File) -> bool {
    if PASSING.with(|p| p.borrow().is_none()) {
        return false;
    }
    let who = holder(file).unwrap_or_else(|| "another process".into());
    PASSING.with(|p| *p.borrow_mut() = Some(Some(who)));
    true
}

/// How long a lock is retried at least (see [`lock`]).
const FORK_GRACE: Duration = Duration::from_millis(500);

/// How long an opener waits for a lock another process holds before it fails (default: not at
/// all beyond a half-second grace for forking children). The `tegula` binary sets it for its
/// commands.
pub fn default_wait() -> Duration {
    Duration::from_millis(DEFAULT_WAIT_MS.load(Ordering::Relaxed))
}

/// Sets [`default_wait`] for this process.
pub fn set_default_wait(d: Duration) {
    DEFAULT_WAIT_MS.store(d.as_millis() as u64, Ordering::Relaxed);
}

/// Locks `file` (the open image at `path`): exclusively when `exclusive`, else shared. The lock
/// belongs to the open file: it holds while `file` or any handle cloned from it is open.
pub fn lock(file: &File, path: &Path, exclusive: bool, wait: Duration) -> Result<()> {
    let how = if exclusive {
        libc::LOCK_EX
    } else {
        libc::LOCK_SH
    };
    // A lock just released can stay held for a moment by a child some thread of a process is
    // forking (the child holds the process's descriptors until it execs and drops the
    // close-on-exec ones): whatever the wait, retry for that long before calling it taken.
    let wait = wait.max(FORK_GRACE);
    let start = Instant::now();
    let mut told = false;
    loop {
        // SAFETY: flock on a descriptor `file` owns for the duration of the call.
        let r = unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) };
        if r == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(DeviceError::io(format!("locking {}", path.display()), err));
        }
        // A shared lock is refused only while a writer holds the file.
        if !exclusive && pass_writer(file) {
            return Ok(());
        }
        if start.elapsed() >= wait {
            return Err(DeviceError::Locked {
                path: path.display().to_string(),
                holder: holder(file).unwrap_or_else(|| "another process".into()),
            });
        }
        // Past the grace, a wait is a real wait: say so instead of hanging silently.
        if !told && start.elapsed() >= FORK_GRACE {
            told = true;
            let secs = wait.as_secs_f64();
            tracing::warn!(
                "waiting up to {} s for {} to release {}",
                if secs.fract() == 0.0 {
                    format!("{secs:.0}")
                } else {
                    format!("{secs:.1}")
                },
                holder(file).unwrap_or_else(|| "another process".into()),
                path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The process holding a lock on `file`, from `/proc/locks` (`ID: FLOCK ADVISORY WRITE PID
/// MAJ:MIN:INODE START END`), with its command line.
pub fn holder(file: &File) -> Option<String> {
    let meta = file.metadata().ok()?;
    let (dev, ino) = (meta.dev(), meta.ino());
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let me = std::process::id();
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    for line in locks.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // A blocked waiter's line has "->" after the id.
        let f: Vec<&str> = f.into_iter().filter(|x| *x != "->").collect();
        if f.len() < 6 || f[1] != "FLOCK" {
            continue;
        }
        let mut id = f[5].split(':');
        let (Some(ma), Some(mi), Some(i)) = (id.next(), id.next(), id.next()) else {
            continue;
        };
        let same = u32::from_str_radix(ma, 16).ok() == Some(major)
            && u32::from_str_radix(mi, 16).ok() == Some(minor)
            && i.parse::<u64>().ok() == Some(ino);
        let Ok(pid) = f[4].parse::<u32>() else {
            continue;
        };
        if !same || pid == me {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                b.split(|&c| c == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        return Some(if cmd.is_empty() {
            format!("process {pid}")
        } else {
            format!("process {pid} ({cmd})")
        });
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_second_exclusive_lock_waits_then_fails_and_shared_locks_coexist() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, b"x").unwrap();
        let a = File::open(&p).unwrap();
        let b = File::open(&p).unwrap();
        lock(&a, &p, false, Duration::ZERO).unwrap();
        lock(&b, &p, false, Duration::ZERO).unwrap();
        drop(b);
        let c = File::open(&p).unwrap();
        let t0 = Instant::now();
        let e = lock(&c, &p, true, Duration::from_millis(100)).unwrap_err();
        assert!(t0.elapsed() >= Duration::from_millis(100));
        assert!(matches!(e, DeviceError::Locked { .. }), "{e}");
        drop(a);
        lock(&c, &p, true, Duration::ZERO).unwrap();
    }

    #[test]
    fn a_reader_passes_a_writer_at_once_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, b"x").unwrap();
        let writer = File::open(&p).unwrap();
        lock(&writer, &p, true, Duration::ZERO).unwrap();
        let reader = File::open(&p).unwrap();
        let t0 = Instant::now();
        let (r, passed) = read_past_writers(|| lock(&reader, &p, false, Duration::from_secs(5)));
        assert!(r.is_ok());
        assert!(passed.is_some());
        assert!(t0.elapsed() < FORK_GRACE, "waited {:?}", t0.elapsed());
        // A writer inside still waits; outside, a reader waits and fails as before.
        let other = File::open(&p).unwrap();
        let (r, _) = read_past_writers(|| lock(&other, &p, true, Duration::ZERO));
        assert!(matches!(r, Err(DeviceError::Locked { .. })));
        assert!(lock(&other, &p, false, Duration::ZERO).is_err());
        // Nothing to pass: nothing reported.
        drop(writer);
        let (r, passed) = read_past_writers(|| lock(&other, &p, false, Duration::ZERO));
        assert!(r.is_ok() && passed.is_none());
    }
}
