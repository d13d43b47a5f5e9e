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
        self.state
            .apply(&op)
            .map_err(|e| FsError::Invalid(e.to_string()))?;
        self.pending_bytes += 64;
        self.pending.push(op);
        Ok(())
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
        let res = match self.journal.append(e.as_bytes()) {
            Ok(true) => Ok(()),
            Ok(false) => self.journal.checkpoint(&self.state.encode()),
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
        let res = self.journal.checkpoint(&self.state.encode());
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
