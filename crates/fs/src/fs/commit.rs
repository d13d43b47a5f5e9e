//! Making metadata durable: ops applied to the state and queued, then written as one log
//! record at a commit, or as a checkpoint when the log is full.

use super::Fs;
use crate::error::{FsError, Result};
use crate::state::Op;
use tegula_codec::Enc;

impl Fs {
    pub(crate) fn writable(&self) -> Result<()> {
        match &self.broken {
            Some(b) => Err(FsError::Broken(b.clone())),
            None => Ok(()),
        }
    }

    /// Applies an op to the state and queues it for the log.
    pub(crate) fn log(&mut self, op: Op) -> Result<()> {
        self.writable()?;
        if let Err(e) = self.state.apply(&op) {
            // Every caller checks before it logs: an op that does not apply is a bug, and
            // the state may be part-changed, so nothing more is written.
            self.broken = Some(format!("internal error: {e}"));
            return Err(FsError::Invalid(e.to_string()));
        }
        self.track_names(&op);
        self.pending_bytes += 64;
        self.pending.push(op);
        Ok(())
    }

    /// Keeps the readdir cookies of listed directories in step with a namespace op: each
    /// name the op touched gets a cookie if it exists now and loses it otherwise.
    fn track_names(&self, op: &Op) {
        let mut c = self.cookie_map();
        if c.is_empty() {
            return;
        }
        let touched: [Option<(u64, &[u8])>; 2] = match op {
            Op::Create { parent, name, .. }
            | Op::Link { parent, name, .. }
            | Op::Unlink { parent, name, .. } => [Some((*parent, name)), None],
            Op::Rename {
                parent,
                name,
                new_parent,
                new_name,
                ..
            } => [Some((*parent, name)), Some((*new_parent, new_name))],
            Op::Free { ino } => {
                c.remove(ino);
                [None, None]
            }
            _ => [None, None],
        };
        for (dir, name) in touched.into_iter().flatten() {
            if let Some(d) = c.get_mut(&dir) {
                if self.state.lookup(dir, name).is_some() {
                    d.insert(name);
                } else {
                    d.remove(name);
                }
            }
        }
    }

    /// Makes every applied op durable: one log record (or a checkpoint when the log is full).
    pub fn commit(&mut self) -> Result<()> {
        self.writable()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut e = Enc::new();
        for op in &self.pending {
            op.encode(&mut e);
        }
        // One flush, the log's after the record, makes the record and the extents it maps
        // durable together: they were written before it. A power cut before that flush
        // completes can leave the record on the media without its extents; the record was
        // then never acknowledged, and the mount drops it (`Fs::open`). A checkpoint, the
        // newest copy of everything, is written only over durable extents.
        let mark = self.pool.written_mark();
        let res = match self.journal.append(e.as_bytes()) {
            Ok(true) => {
                self.pool.flushed_through(mark);
                Ok(())
            }
            Ok(false) => self
                .pool
                .flush_data()
                .and_then(|_| self.journal.checkpoint(&self.state.encode())),
            Err(err) => Err(err),
        };
        if let Err(err) = res {
            if !matches!(err, FsError::NoSpace(_)) {
                self.broken = Some(err.to_string());
            }
            return Err(err);
        }
        self.pending.clear();
        self.pending_bytes = 0;
        Ok(())
    }

    /// Writes a checkpoint now (shortens the next mount's replay).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.writable()?;
        let res = self
            .pool
            .flush_data()
            .and_then(|_| self.journal.checkpoint(&self.state.encode()));
        if let Err(e) = &res {
            self.broken = Some(e.to_string());
        }
        res?;
        self.pending.clear();
        self.pending_bytes = 0;
        Ok(())
    }

    pub(crate) fn maybe_commit(&mut self) -> Result<()> {
        if self.pending_bytes >= self.opts.commit_bytes {
            self.commit()?;
        }
        Ok(())
    }
}
