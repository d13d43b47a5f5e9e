//! The transmission phase, pipelined over three threads per connection so that the socket and
//! the device work at the same time: a reader parses requests and takes write payloads off the
//! socket, the connection's own thread executes them on the device strictly in order (so a
//! FLUSH covers every write before it), and a writer sends the replies. Queues between them
//! are bounded, so a connection holds at most a few MiB whatever its client does: a client
//! that stops reading blocks the writer (until the write timeout ends the connection), then
//! the executor, then the reader. The connection's [`Activity`] follows the requests in flight
//! (the reader counts them in, the writer out once a reply's last byte is written), which is
//! what the idle timeout and the eviction of idle connections go by.

use crate::bytes::{dev_errno, read_bytes, write_buffer, write_bytes};
use crate::proto::{self, cmd, errno, RequestHeader};
use crate::server::{ServerOptions, MAX_REQUEST};
use crate::table::Activity;
use parking_lot::Mutex;
use std::io::{self, Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use tegula_device::BlockDevice;

/// READs are served in pieces of at most this many bytes.
pub const READ_PIECE: usize = 1 << 20;
/// WRITE payloads are taken off the socket and written in pieces of at most this many bytes.
pub const WRITE_PIECE: usize = 1 << 20;
/// Requests (or write pieces) queued between the reader and the executor, and replies (or
/// read pieces) between the executor and the writer.
const QUEUE: usize = 2;
/// Spare buffers kept for reuse per connection: as many as can be in flight (one being read,
/// two queued, one executing, two queued for the writer, one being written, and one more), so
/// that streaming never frees a buffer only to allocate (and fault in) another.
const SPARE_BUFFERS: usize = 8;

/// A request as the executor sees it.
enum Job {
    Read {
        handle: u64,
        offset: u64,
        length: usize,
    },
    /// One piece of a write's payload; `error` is decided before any piece is written
    /// (read-only export, out of range) and the reply goes out with the last piece.
    WritePiece {
        handle: u64,
        offset: u64,
        data: Vec<u8>,
        fua: bool,
        error: u32,
        last: bool,
    },
    Zeroes {
        handle: u64,
        offset: u64,
        length: u64,
        fua: bool,
        error: u32,
    },
    Trim {
        handle: u64,
        offset: u64,
        length: u64,
        error: u32,
    },
    Flush {
        handle: u64,
    },
    /// Any other request: reply with this error.
    Reject {
        handle: u64,
        error: u32,
    },
    /// NBD_CMD_DISC: flush and end the connection.
    Disconnect,
}

/// What the writer sends; `done` marks the last piece of a reply.
enum Out {
    /// A simple reply header.
    Reply { error: u32, handle: u64, done: bool },
    /// Data following a successful READ's header.
    Data { data: Vec<u8>, done: bool },
    /// End the connection now (a READ failed after its reply had started).
    Abort,
}

/// Buffers handed back by the writer for the reader and executor to reuse.
struct Pool(Mutex<Vec<Vec<u8>>>);

impl Pool {
    fn take(&self, len: usize) -> Vec<u8> {
        let mut b = self.0.lock().pop().unwrap_or_default();
        b.resize(len, 0);
        b
    }

    fn give(&self, b: Vec<u8>) {
        let mut g = self.0.lock();
        if g.len() < SPARE_BUFFERS {
            g.push(b);
        }
    }
}

/// Serves requests until NBD_CMD_DISC, the end of the stream, a protocol violation or an I/O
/// error. `wake_reader` is called when the executor stops so that a reader blocked on the
/// socket returns (it shuts the socket's reading side down).
pub(crate) fn transmission(
    r: impl Read + Send,
    w: impl Write + Send,
    dev: &dyn BlockDevice,
    opts: &ServerOptions,
    activity: &Activity,
    wake_reader: &dyn Fn(),
) -> io::Result<()> {
    let info = dev.info();
    let size = info.capacity_bytes();
    let ss = info.sector_size as u64;
    let pool = Pool(Mutex::new(Vec::new()));
    let (job_tx, job_rx) = sync_channel::<Job>(QUEUE);
    let (out_tx, out_rx) = sync_channel::<Out>(QUEUE);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let r = read_requests(r, job_tx, opts, size, &pool, activity);
            // No request comes any more: the connection is ending.
            activity.ending();
            r
        });
        let writer = s.spawn(|| write_replies(w, out_rx, &pool, activity));
        let executed = execute(job_rx, out_tx, dev, ss, &pool);
        wake_reader();
        let read = reader
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("reader panicked")));
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("writer panicked")));
        // The error that ended the connection: the writer's if it failed (the executor then
        // fails for want of a writer, and the reader sees its socket shut), else the
        // reader's; the executor only fails when the writer has.
        written.and(read).and(executed)
    })
}

/// The reader: requests off the socket into jobs, in order.
fn read_requests(
    mut r: impl Read,
    jobs: SyncSender<Job>,
    opts: &ServerOptions,
    size: u64,
    pool: &Pool,
    activity: &Activity,
) -> io::Result<()> {
    let send = |j: Job| jobs.send(j).is_ok();
    loop {
        let Some(RequestHeader {
            flags,
            kind,
            handle,
            offset,
            length,
        }) = proto::read_request(&mut r)?
        else {
            tracing::warn!("nbd: bad request magic, disconnecting");
            return Ok(());
        };
        if kind != cmd::DISC {
            activity.request_received();
        }
        let in_range = offset.checked_add(length as u64).is_some_and(|e| e <= size);
        let fua = flags & proto::CMD_FLAG_FUA != 0;
        let write_error = if opts.readonly {
            errno::EPERM
        } else if !in_range {
            errno::ENOSPC
        } else {
            0
        };
        let ok = match kind {
            cmd::READ if length > MAX_REQUEST || !in_range => send(Job::Reject {
                handle,
                error: errno::EINVAL,
            }),
            cmd::READ => send(Job::Read {
                handle,
                offset,
                length: length as usize,
            }),
            cmd::WRITE => {
                if length > MAX_REQUEST {
                    // The payload cannot be skipped safely: end the connection.
                    tracing::warn!("nbd: write of {length} bytes is too large, disconnecting");
                    return Ok(());
                }
                let mut done = 0usize;
                let mut sent = true;
                // The payload must keep coming (the stall timeout applies while it is read).
                activity.set_in_payload(true);
                // A zero-length write still gets its reply, with the "last" piece.
                loop {
                    let n = (length as usize - done).min(WRITE_PIECE);
                    let mut data = pool.take(n);
                    r.read_exact(&mut data)?;
                    let last = done + n >= length as usize;
                    sent = sent
                        && send(Job::WritePiece {
                            handle,
                            offset: offset + done as u64,
                            data,
                            fua,
                            error: write_error,
                            last,
                        });
                    done += n;
                    if last {
                        break;
                    }
                }
                activity.set_in_payload(false);
                sent
            }
            cmd::WRITE_ZEROES => send(Job::Zeroes {
                handle,
                offset,
                length: length as u64,
                fua,
                error: write_error,
            }),
            cmd::TRIM => send(Job::Trim {
                handle,
                offset,
                length: length as u64,
                error: write_error,
            }),
            cmd::FLUSH => send(Job::Flush { handle }),
            cmd::DISC => {
                let _ = send(Job::Disconnect);
                return Ok(());
            }
            _ => send(Job::Reject {
                handle,
                error: errno::EINVAL,
            }),
        };
        if !ok {
            // The executor has stopped; its error (if any) is reported there.
            return Ok(());
        }
    }
}

/// The executor: jobs on the device, strictly in order; replies to the writer.
fn execute(
    jobs: Receiver<Job>,
    out: SyncSender<Out>,
    dev: &dyn BlockDevice,
    ss: u64,
    pool: &Pool,
) -> io::Result<()> {
    let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "the reply writer stopped");
    let send = |o: Out| out.send(o).map_err(|_| gone());
    let reply = |error: u32, handle: u64| {
        send(Out::Reply {
            error,
            handle,
            done: true,
        })
    };
    // The first device error of the write being received (its reply carries it).
    let mut write_error = 0u32;
    // This connection changed the device since its last FLUSH: NBD_CMD_DISC flushes then.
    // (A connection that wrote nothing ends at once: quick connect/disconnect cycles used to
    // queue a flush each, and their connections outlived their clients.)
    let mut dirty = false;
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Read {
                handle,
                offset,
                length,
            } => {
                let mut done = 0usize;
                while done < length {
                    let n = (length - done).min(READ_PIECE);
                    let mut buf = pool.take(n);
                    if let Err(e) = read_bytes(dev, ss, offset + done as u64, &mut buf) {
                        if done == 0 {
                            reply(dev_errno(&e), handle)?;
                            break;
                        }
                        tracing::warn!("nbd: read failed mid-reply, disconnecting: {e}");
                        send(Out::Abort)?;
                        return Ok(());
                    }
                    if done == 0 {
                        send(Out::Reply {
                            error: 0,
                            handle,
                            done: false,
                        })?;
                    }
                    done += n;
                    send(Out::Data {
                        data: buf,
                        done: done >= length,
                    })?;
                }
                if length == 0 {
                    reply(0, handle)?;
                }
            }
            Job::WritePiece {
                handle,
                offset,
                data,
                fua,
                error,
                last,
            } => {
                if error == 0 && write_error == 0 && !data.is_empty() {
                    dirty = true;
                    // The device may keep the buffer (a write cache's extent) and hand back
                    // another one: the payload is not copied again.
                    let (r, back) = write_buffer(dev, ss, offset, data, fua);
                    if let Err(e) = r {
                        write_error = dev_errno(&e);
                    }
                    if let Some(b) = back {
                        pool.give(b);
                    }
                } else {
                    pool.give(data);
                }
                if last {
                    let e = if error != 0 { error } else { write_error };
                    write_error = 0;
                    reply(e, handle)?;
                }
            }
            Job::Zeroes {
                handle,
                offset,
                length,
                fua,
                error,
            } => {
                let mut e = error;
                dirty |= error == 0;
                let mut pos = offset;
                let end = offset + length;
                let zeros = vec![0u8; (length.min(4 << 20)) as usize];
                while pos < end && e == 0 {
                    let n = (end - pos).min(zeros.len() as u64) as usize;
                    if let Err(err) = write_bytes(dev, ss, pos, &zeros[..n], fua) {
                        e = dev_errno(&err);
                    }
                    pos += n as u64;
                }
                reply(e, handle)?;
            }
            Job::Trim {
                handle,
                offset,
                length,
                error,
            } => {
                let e = if error != 0 {
                    error
                } else {
                    // Only whole sectors inside the range are discarded.
                    let a = offset.div_ceil(ss);
                    let b = (offset + length) / ss;
                    if b > a {
                        dirty = true;
                        dev.discard(a, b - a).map_or_else(|e| dev_errno(&e), |_| 0)
                    } else {
                        0
                    }
                };
                reply(e, handle)?;
            }
            Job::Flush { handle } => {
                let e = dev.flush().map_or_else(|e| dev_errno(&e), |_| 0);
                dirty = false;
                reply(e, handle)?;
            }
            Job::Reject { handle, error } => reply(error, handle)?,
            Job::Disconnect => {
                if dirty {
                    let _ = dev.flush();
                }
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The writer: replies onto the socket, flushed whenever no further reply is waiting.
fn write_replies(
    mut w: impl Write,
    out: Receiver<Out>,
    pool: &Pool,
    activity: &Activity,
) -> io::Result<()> {
    loop {
        let o = match out.try_recv() {
            Ok(o) => o,
            Err(TryRecvError::Empty) => {
                w.flush()?;
                match out.recv() {
                    Ok(o) => o,
                    Err(_) => return Ok(()),
                }
            }
            Err(TryRecvError::Disconnected) => return w.flush(),
        };
        match o {
            Out::Reply {
                error,
                handle,
                done,
            } => {
                proto::simple_reply(&mut w, error, handle)?;
                if done {
                    activity.reply_sent();
                }
            }
            Out::Data { data, done } => {
                w.write_all(&data)?;
                pool.give(data);
                if done {
                    activity.reply_sent();
                }
            }
            Out::Abort => {
                w.flush()?;
                return Err(io::Error::other("read failed mid-reply"));
            }
        }
    }
}
