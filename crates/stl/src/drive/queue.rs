//! Queued submit: a batch of requests at one queue depth; consecutive writes go to the
//! translation layer as one batch so that it may pack them together, at most
//! [`NCQ_DEPTH`] of them (a SATA drive holds no more commands at once).

use super::{DevResult, Inner};
use crate::layer::WriteReq;
use tegula_device::media::{Completion, IoDone, Request};
use tegula_device::{DeviceError, Nanos};

/// Commands a drive holds at once (SATA native command queuing: 32 tags). A longer run of
/// queued writes reaches the translation layer in batches of this many, so that no journal
/// entry packs more writes than a real drive could see together.
pub const NCQ_DEPTH: usize = 32;

impl Inner {
    /// The completion of a request served on its own from `start`, with the `data` it read;
    /// a failure goes through [`Inner::after_error`] first.
    fn completed(
        &mut self,
        r: DevResult<IoDone>,
        start: Nanos,
        data: Option<Vec<u8>>,
    ) -> DevResult<Completion> {
        if let Err(e) = &r {
            self.after_error(e);
        }
        r.map(|d| Completion {
            done: IoDone { start, end: d.end },
            data,
        })
    }

    /// Serves a batch on a drive of `cap` sectors: reads, FLUSHes and (with the volatile
    /// cache) writes one at a time; runs of consecutive writes as one batch to the layer.
    pub(super) fn submit(&mut self, cap: u64, reqs: Vec<Request>) -> Vec<DevResult<Completion>> {
        let mut out: Vec<DevResult<Completion>> = Vec::with_capacity(reqs.len());
        let start = self.arrive();
        let mut i = 0;
        while i < reqs.len() {
            match &reqs[i] {
                Request::Write { lba, data, fua } if self.vcache.is_some() => {
                    let r = self.write(cap, *lba, data, *fua);
                    out.push(self.completed(r, start, None));
                    i += 1;
                }
                Request::Write { .. } if self.writable().is_err() => {
                    out.push(self.writable().map(|_| Completion {
                        done: IoDone { start, end: start },
                        data: None,
                    }));
                    i += 1;
                }
                Request::Write { .. } => {
                    // Consecutive writes form one batch: the layer may pack them together.
                    let mut j = i;
                    while j < reqs.len()
                        && j - i < NCQ_DEPTH
                        && matches!(reqs[j], Request::Write { .. })
                    {
                        j += 1;
                    }
                    let mut res: Vec<Option<DevResult<Completion>>> =
                        (i..j).map(|_| None).collect();
                    let mut batch = Vec::new();
                    let mut idx = Vec::new();
                    for (k, r) in reqs[i..j].iter().enumerate() {
                        if let Request::Write { lba, data, .. } = r {
                            match self.check(cap, *lba, data.len()) {
                                Ok(_) => {
                                    batch.push(WriteReq { lba: *lba, data });
                                    idx.push(k);
                                }
                                Err(e) => res[k] = Some(Err(e)),
                            }
                        }
                    }
                    let fua = reqs[i..j]
                        .iter()
                        .any(|r| matches!(r, Request::Write { fua: true, .. }));
                    if !batch.is_empty() {
                        let written = self.layer.write(&mut self.media, &batch).and_then(|ends| {
                            if fua && self.image.is_some() {
                                self.layer.log().sync()?;
                            }
                            Ok(ends)
                        });
                        match written {
                            Ok(ends) => {
                                for (k, end) in idx.iter().zip(ends) {
                                    res[*k] = Some(Ok(Completion {
                                        done: IoDone { start, end },
                                        data: None,
                                    }));
                                }
                            }
                            Err(e) => {
                                let e: DeviceError = e.into();
                                self.after_error(&e);
                                for k in &idx {
                                    res[*k] = Some(Err(clone_err(&e)));
                                }
                            }
                        }
                    }
                    out.extend(
                        res.into_iter()
                            .map(|r| r.unwrap_or(Err(DeviceError::PowerLoss))),
                    );
                    i = j;
                }
                Request::Read { lba, sectors } => {
                    let mut buf = vec![0u8; (*sectors * self.ss()) as usize];
                    let r = self.read(cap, *lba, &mut buf);
                    out.push(self.completed(r, start, Some(buf)));
                    i += 1;
                }
                Request::Flush => {
                    let r = self.flush();
                    out.push(self.completed(r, start, None));
                    i += 1;
                }
            }
        }
        self.finish(start);
        out
    }
}

/// A copy of an error for each write of a failed batch (`DeviceError` is not `Clone`).
fn clone_err(e: &DeviceError) -> DeviceError {
    match e {
        DeviceError::PowerLoss => DeviceError::PowerLoss,
        DeviceError::MediaError { lba, cause } => DeviceError::MediaError {
            lba: *lba,
            cause: *cause,
        },
        other => DeviceError::Config(other.to_string()),
    }
}
