//! An NBD export (`nbd://HOST[:PORT]` or `nbd+unix:///?socket=PATH`) in wall time, through
//! tegula's small NBD client: a latency is the time from sending a command to its reply, a
//! queued batch is pipelined, a pause is a sleep.

use super::{check_range, ClockKind, Op, Target};
use crate::error::{OpResult, TargetError};
use std::time::{Duration, Instant};
use tegula_device::Nanos;
use tegula_nbd::{ClientError, Command, NbdClient};

/// An NBD export.
pub struct NbdTarget {
    client: NbdClient,
    uri: String,
    block: u64,
    cap: u64,
    epoch: Instant,
    zeros: Vec<u8>,
    rbuf: Vec<u8>,
}

fn map_err(e: ClientError, offset: u64) -> TargetError {
    match e {
        // EIO from the server: the drive could not read or write those blocks.
        ClientError::Command(5) => TargetError::Media { offset },
        ClientError::Command(n) => TargetError::Io(format!("NBD errno {n} at byte {offset}")),
        other => TargetError::Io(other.to_string()),
    }
}

fn nanos(d: Duration) -> Nanos {
    d.as_nanos().min(u64::MAX as u128) as Nanos
}

impl NbdTarget {
    /// Connects to `uri`. The block size is 4096 bytes when the export size is a multiple of
    /// it, else 512.
    pub fn connect(uri: &str) -> Result<Self, TargetError> {
        let client = NbdClient::connect(uri).map_err(|e| TargetError::Io(e.to_string()))?;
        let cap = client.size();
        let block = if cap % 4096 == 0 { 4096 } else { 512 };
        if cap < block {
            return Err(TargetError::Invalid(format!(
                "the export holds {cap} bytes"
            )));
        }
        Ok(NbdTarget {
            client,
            uri: uri.to_string(),
            block,
            cap: cap / block * block,
            epoch: Instant::now(),
            zeros: Vec::new(),
            rbuf: Vec::new(),
        })
    }

    fn zeros(&mut self, len: u64) {
        if self.zeros.len() < len as usize {
            self.zeros.resize(len as usize, 0);
        }
    }
}

impl Target for NbdTarget {
    fn describe(&self) -> String {
        format!("NBD export {} (wall time)", self.uri)
    }

    fn block_size(&self) -> u64 {
        self.block
    }

    fn capacity(&self) -> u64 {
        self.cap
    }

    fn clock(&self) -> ClockKind {
        ClockKind::Wall
    }

    fn read(&mut self, offset: u64, len: u64) -> OpResult {
        check_range(offset, len, self.block, self.cap)?;
        if self.rbuf.len() < len as usize {
            self.rbuf.resize(len as usize, 0);
        }
        let t = Instant::now();
        self.client
            .read(offset, &mut self.rbuf[..len as usize])
            .map_err(|e| map_err(e, offset))?;
        Ok(nanos(t.elapsed()))
    }

    fn write(&mut self, offset: u64, len: u64, fua: bool) -> OpResult {
        check_range(offset, len, self.block, self.cap)?;
        self.zeros(len);
        let t = Instant::now();
        self.client
            .write(offset, &self.zeros[..len as usize], fua)
            .map_err(|e| map_err(e, offset))?;
        Ok(nanos(t.elapsed()))
    }

    fn flush(&mut self) -> OpResult {
        let t = Instant::now();
        self.client.flush().map_err(|e| map_err(e, 0))?;
        Ok(nanos(t.elapsed()))
    }

    fn submit(&mut self, ops: &[Op]) -> Vec<OpResult> {
        let mut max = 0;
        for op in ops {
            if let Op::Read { offset, len } | Op::Write { offset, len, .. } = *op {
                if let Err(e) = check_range(offset, len, self.block, self.cap) {
                    return ops.iter().map(|_| Err(e.clone())).collect();
                }
                if len > u32::MAX as u64 {
                    let e = TargetError::Invalid(format!("{len} bytes in one command"));
                    return ops.iter().map(|_| Err(e.clone())).collect();
                }
                max = max.max(len);
            }
        }
        self.zeros(max);
        let cmds: Vec<Command<'_>> = ops
            .iter()
            .map(|op| match *op {
                Op::Read { offset, len } => Command::Read {
                    offset,
                    len: len as u32,
                },
                Op::Write { offset, len, fua } => Command::Write {
                    offset,
                    data: &self.zeros[..len as usize],
                    fua,
                },
                Op::Flush => Command::Flush,
            })
            .collect();
        let t = Instant::now();
        let res = self.client.pipeline(&cmds);
        res.into_iter()
            .zip(ops)
            .map(|(r, op)| {
                let off = match *op {
                    Op::Read { offset, .. } | Op::Write { offset, .. } => offset,
                    Op::Flush => 0,
                };
                r.map(|at| nanos(at.saturating_duration_since(t)))
                    .map_err(|e| map_err(e, off))
            })
            .collect()
    }

    fn idle(&mut self, d: Nanos) {
        std::thread::sleep(Duration::from_nanos(d));
    }

    fn now(&self) -> Nanos {
        nanos(self.epoch.elapsed())
    }
}
