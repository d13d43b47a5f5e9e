//! Queued submit: a batch of requests at one queue depth, served in order with each command's
//! processing overlapping the previous transfer, so that a sequential batch streams.

use super::io::Payload;
use super::{IoDone, Media};
use crate::error::{DeviceError, Result};

/// A request in a batch submitted at one queue depth.
#[derive(Debug, Clone)]
pub enum Request {
    /// Read `sectors` at `lba`.
    Read {
        /// First LBA.
        lba: u64,
        /// Sectors to read.
        sectors: u64,
    },
    /// Write `data` at `lba`.
    Write {
        /// First LBA.
        lba: u64,
        /// Whole sectors of data.
        data: Vec<u8>,
        /// Force unit access: durable on completion.
        fua: bool,
    },
    /// Flush the write cache.
    Flush,
}

/// Completion of a batched request.
#[derive(Debug, Clone)]
pub struct Completion {
    /// Timing.
    pub done: IoDone,
    /// Data of a read.
    pub data: Option<Vec<u8>>,
}

impl Media {
    /// Submits a batch at once (queue depth = batch size). Commands are served in order; each
    /// command's processing overlaps the previous transfer, so a sequential batch streams.
    pub fn submit(&mut self, reqs: Vec<Request>) -> Vec<Result<Completion>> {
        let mut out = Vec::with_capacity(reqs.len());
        let Ok(arrival) = self.arrive() else {
            return reqs.iter().map(|_| Err(DeviceError::PowerLoss)).collect();
        };
        let ready = arrival + self.mech.overhead();
        let mut prev = arrival;
        for (i, r) in reqs.into_iter().enumerate() {
            let start = if i == 0 { ready } else { prev.max(ready) };
            // While the host transfers queued commands, the heads destage cached writes (as
            // between single commands), so a queued stream is no slower than one at a time.
            if i > 0 {
                self.run_background(start);
            }
            if !self.powered {
                out.push(Err(DeviceError::PowerLoss));
                continue;
            }
            let res = match r {
                Request::Read { lba, sectors } => {
                    let len = (sectors * self.sector) as usize;
                    match self.check(lba, len) {
                        Err(e) => Err(e),
                        Ok(n) => {
                            let mut buf = vec![0u8; len];
                            self.read_inner(start, lba, n, &mut buf, true).map(|end| {
                                self.stats.reads += 1;
                                self.stats.bytes_read += len as u64;
                                (end, Some(buf))
                            })
                        }
                    }
                }
                Request::Write { lba, data, fua } => match self.check(lba, data.len()) {
                    Err(e) => Err(e),
                    Ok(n) => {
                        let len = data.len() as u64;
                        self.write_inner(start, lba, n, Payload::Owned(data), fua, true)
                            .map(|(end, _)| {
                                self.stats.writes += 1;
                                self.stats.bytes_written += len;
                                (end, None)
                            })
                    }
                },
                Request::Flush => self
                    .destage(start, |_| true)
                    .and_then(|end| {
                        self.store
                            .sync()
                            .map_err(|e| DeviceError::io("syncing the backing store", e))?;
                        Ok(end)
                    })
                    .map(|end| {
                        self.stats.flushes += 1;
                        // As a single flush: no earlier than the media writes it covers.
                        (end.max(self.media_free), None)
                    }),
            };
            out.push(res.map(|(end, data)| {
                prev = end;
                Completion {
                    done: IoDone {
                        start: arrival,
                        end,
                    },
                    data,
                }
            }));
        }
        self.complete(arrival, prev);
        out
    }
}
