//! Accepted sockets and their I/O. [`Conn`] is an accepted Unix or TCP socket; [`Sock`] reads
//! and writes one with `MSG_DONTWAIT` plus `poll`, so that a stall is measured from the last
//! byte the client took rather than from the start of a system call: a blocking `send` of
//! 1 MiB under `SO_SNDTIMEO` returns a partial count at the first timeout and only fails at
//! the second, which let a client that stopped reading keep its connection for twice the write
//! timeout (60-67 s instead of 30 s). Over TCP, what the kernel accepts into a full send
//! buffer is not progress either (it trickles in as the buffer's memory is compacted, with the
//! client reading nothing): there progress is data the client acknowledged.

use crate::table::Activity;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a blocked write looks whether the client has taken more of its replies.
const PROGRESS_CHECK: Duration = Duration::from_millis(200);

/// Send buffer asked for on each connection (bytes).
const SEND_BUFFER: libc::c_int = 4 << 20;

/// An accepted connection of either kind.
pub(crate) enum Conn {
    /// A Unix stream socket.
    Unix(UnixStream),
    /// A loopback TCP socket.
    Tcp(TcpStream),
}

impl Conn {
    /// Another handle on the same socket.
    pub(crate) fn try_clone(&self) -> io::Result<Conn> {
        Ok(match self {
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
        })
    }

    /// The socket's descriptor (owned by this handle).
    pub(crate) fn fd(&self) -> RawFd {
        match self {
            Conn::Unix(s) => s.as_raw_fd(),
            Conn::Tcp(s) => s.as_raw_fd(),
        }
    }

    /// Accepted sockets inherit nothing from the non-blocking listener on Linux, but say so.
    pub(crate) fn set_blocking(&self) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.set_nonblocking(false),
            Conn::Tcp(s) => s.set_nonblocking(false),
        }
    }

    /// Asks for a send buffer of [`SEND_BUFFER`] bytes (the kernel caps it at
    /// `net.core.wmem_max`; failure is harmless): a 1 MiB READ reply then goes out in one or
    /// two `sendmsg` calls instead of sleeping for the client five times on the default
    /// 208 KiB. Best effort.
    pub(crate) fn grow_send_buffer(&self) {
        let size: libc::c_int = SEND_BUFFER;
        // SAFETY: setsockopt on a socket this connection owns, with a c_int option value of
        // the size given.
        unsafe {
            libc::setsockopt(
                self.fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }

    /// Ends the reading side: the connection's thread finishes its request, then sees EOF.
    pub(crate) fn shutdown_read(&self) {
        let _ = match self {
            Conn::Unix(s) => s.shutdown(std::net::Shutdown::Read),
            Conn::Tcp(s) => s.shutdown(std::net::Shutdown::Read),
        };
    }

    /// Ends both sides: the connection's reader sees EOF and its writer fails at once.
    pub(crate) fn shutdown_both(&self) {
        let _ = match self {
            Conn::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Conn::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }

    /// Makes the last close of a TCP socket reset the connection (`SO_LINGER` 0), so that the
    /// kernel drops the replies a client never read instead of keeping them (and retrying to
    /// send them) for minutes. Nothing for a Unix socket.
    pub(crate) fn abort_on_close(&self) {
        if let Conn::Tcp(s) = self {
            let l = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: setsockopt on a socket this connection owns, with a `linger` value of
            // the size given.
            unsafe {
                libc::setsockopt(
                    s.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&l as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                )
            };
        }
    }
}

/// One direction of a connection's I/O: reads and writes that never block inside the kernel,
/// with a stall timeout measured from the last byte moved.
pub(crate) struct Sock {
    conn: Conn,
    /// Bytes the kernel accepted from [`Write::write`].
    written: u64,
    /// Since when writing has been blocked without the client taking anything, and how much
    /// it had taken then (see [`Sock::taken`]).
    blocked: Option<(Instant, u64)>,
    /// A write (and a read of a WRITE's payload) that moves no byte for this long fails with
    /// `TimedOut`.
    stall: Duration,
    /// Says whether the reader is inside a WRITE's payload (where the stall timeout applies
    /// to reads too; between requests a client may be silent as long as it likes).
    activity: Arc<Activity>,
}

impl Sock {
    /// A reader or writer on another handle of `conn`.
    pub(crate) fn new(conn: &Conn, stall: Duration, activity: Arc<Activity>) -> io::Result<Sock> {
        Ok(Sock {
            conn: conn.try_clone()?,
            written: 0,
            blocked: None,
            stall,
            activity,
        })
    }

    /// How many bytes the client has taken of what was written: over a Unix socket everything
    /// the kernel accepted (it accepts more only as the client reads), over TCP what the
    /// client acknowledged (written minus what the send queue still holds, `SIOCOUTQ`).
    fn taken(&self) -> u64 {
        match &self.conn {
            Conn::Unix(_) => self.written,
            Conn::Tcp(s) => {
                let mut queued: libc::c_int = 0;
                // SAFETY: SIOCOUTQ (TIOCOUTQ) stores one c_int, on a socket this Sock owns.
                let r = unsafe { libc::ioctl(s.as_raw_fd(), libc::TIOCOUTQ, &mut queued) };
                if r < 0 {
                    return self.written;
                }
                self.written.saturating_sub(queued.max(0) as u64)
            }
        }
    }

    /// Waits until the socket is ready for `events`, `deadline` passes (`TimedOut`, with
    /// `what` as the message) or `slice` has passed.
    fn wait(
        &self,
        events: libc::c_short,
        deadline: Option<Instant>,
        slice: Option<Duration>,
        what: &str,
    ) -> io::Result<()> {
        let timeout_ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("{what} for {} s", self.stall.as_secs_f64()),
                    ));
                }
                let left = slice.map_or(left, |s| s.min(left));
                // Round up so that the deadline has passed when poll returns empty-handed.
                left.as_millis().saturating_add(1).min(i32::MAX as u128) as libc::c_int
            }
        };
        let mut p = libc::pollfd {
            fd: self.conn.fd(),
            events,
            revents: 0,
        };
        // SAFETY: one pollfd on a descriptor this Sock owns, for the duration of the call.
        let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let deadline = self
            .activity
            .in_payload()
            .then(|| Instant::now() + self.stall);
        loop {
            // SAFETY: recv into a buffer of the length given, on a descriptor this Sock owns.
            let n = unsafe {
                libc::recv(
                    self.conn.fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => self.wait(
                    libc::POLLIN,
                    deadline,
                    None,
                    "the client sent no byte of a write's data",
                )?,
                io::ErrorKind::Interrupted => {}
                _ => return Err(e),
            }
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            // SAFETY: send from a buffer of the length given, on a descriptor this Sock owns.
            let n = unsafe {
                libc::send(
                    self.conn.fd(),
                    buf.as_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if n >= 0 {
                self.written += n as u64;
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => {
                    // The stall clock starts when a write first blocks and restarts whenever
                    // the client has taken more since; it is not reset by a write the kernel
                    // accepted meanwhile (over TCP that is no sign of the client reading).
                    let taken = self.taken();
                    let since = match self.blocked {
                        Some((since, before)) if taken <= before => since,
                        _ => {
                            self.blocked = Some((Instant::now(), taken));
                            Instant::now()
                        }
                    };
                    // Look again every [`PROGRESS_CHECK`]: acknowledgements that free too
                    // little of the send buffer to make it writable are progress all the same.
                    self.wait(
                        libc::POLLOUT,
                        Some(since + self.stall),
                        Some(PROGRESS_CHECK),
                        "the client read none of its replies",
                    )?
                }
                io::ErrorKind::Interrupted => {}
                _ => return Err(e),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
