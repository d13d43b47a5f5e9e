//! The writer thread: writes the buffered data of files as extents, one file's job at a
//! time in the order they were queued (so a file's older data is always mapped before its
//! newer data). It takes the file system's lock only to take a job, to choose the zone of
//! each chunk and to map the chunk once written; the extent writes themselves run without
//! it, so other requests go on meanwhile. When no zone has room it asks the cleaner and
//! waits; when the cleaner can free nothing the file's data stays buffered and the file is
//! marked out of space (its writer sees `ENOSPC`).

use super::Shared;
use crate::error::{FsError, Result};
use std::sync::mpsc;
use std::time::Duration;

/// A request to the writer.
pub(super) enum Msg {
    /// Write the buffered data of this file (a full buffer, a close).
    Flush(u64),
    /// Write it and report when done (fsync).
    Sync(u64, mpsc::Sender<Result<()>>),
}

/// Serves requests until the channel closes.
pub(super) fn run(sh: &Shared, rx: mpsc::Receiver<Msg>) {
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Flush(ino) => {
                if let Err(e) = write_file(sh, ino) {
                    if !matches!(e, FsError::NoSpace(_)) {
                        tracing::error!("writing inode {ino}: {e}");
                    }
                }
            }
            Msg::Sync(ino, done) => {
                let _ = done.send(write_file(sh, ino));
            }
        }
        sh.progress.tick();
    }
}

/// Writes the buffered data of `ino`, chunk by chunk.
pub(super) fn write_file(sh: &Shared, ino: u64) -> Result<()> {
    let (mut job, pool) = {
        let mut g = sh.w();
        let fs = g.as_mut().ok_or_else(super::unmounted)?;
        match fs.take_flush(ino) {
            Some(j) => (j, fs.pool()),
            None => return Ok(()),
        }
    };
    let res = loop {
        let begun = {
            let mut g = sh.w();
            let fs = g.as_mut().ok_or_else(super::unmounted)?;
            fs.flush_begin(&job)
        };
        let t = match begun {
            Ok(Some(t)) => t,
            Ok(None) => break Ok(()),
            Err(FsError::NoSpace(why)) => {
                if sh.cleaner.wait_for_room(sh, Duration::from_secs(600)) {
                    continue;
                }
                break Err(FsError::NoSpace(why));
            }
            Err(e) => break Err(e),
        };
        // The slow part, without the lock.
        let written = t.write(&pool, &job);
        let mut g = sh.w();
        let fs = g.as_mut().ok_or_else(super::unmounted)?;
        if let Err(e) = fs.flush_end(&mut job, t, written) {
            break Err(e);
        }
    };
    let mut g = sh.w();
    let fs = g.as_mut().ok_or_else(super::unmounted)?;
    if matches!(res, Err(FsError::NoSpace(_))) {
        fs.out_of_space.insert(ino);
    }
    let fin = fs.flush_finish(job);
    res.and(fin)
}
