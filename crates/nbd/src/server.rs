//! The NBD server: accept loop (one thread per connection, at most
//! [`ServerOptions::max_connections`] of them), fixed newstyle negotiation, and the transmission
//! phase over any [`BlockDevice`]. Hostile or stuck clients cannot take the server down: a
//! connection past the limit is closed at once, a client that does not finish negotiating
//! within [`ServerOptions::handshake_timeout`] or stops reading its replies for
//! [`ServerOptions::write_timeout`] is disconnected, reads are streamed in pieces of
//! [`READ_PIECE`](crate::READ_PIECE) bytes (a connection holds at most a few MiB whatever it asks), and a failing
//! `accept()` (out of file descriptors, say) is logged and retried, never fatal.

use crate::negotiate::negotiate;
use crate::transmission::transmission;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tegula_device::BlockDevice;

/// Largest READ or WRITE the server accepts (larger writes end the connection).
pub const MAX_REQUEST: u32 = 32 << 20;

/// The request reader's buffer (bytes): big enough for several small requests per `read`, small
/// enough that little of a large WRITE's payload goes through it (a copy more) rather than
/// straight into the payload buffer: with 256 KiB, a quarter of every 1 MiB payload did.
const READ_BUFFER: usize = 32 << 10;

/// Send buffer asked for on each connection (bytes).
const SEND_BUFFER: libc::c_int = 4 << 20;

/// What can go wrong setting up a server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NbdError {
    /// Binding or accepting failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// Only loopback TCP addresses are served.
    #[error("refusing to listen on {0}: only loopback addresses are allowed")]
    NotLoopback(String),
}

/// Server options.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Refuse writes, trims and write-zeroes (EPERM) and advertise a read-only export.
    /// Default: false.
    pub readonly: bool,
    /// Export name reported by NBD_OPT_LIST (any name is accepted). Default: empty.
    pub name: String,
    /// Connections served at once (each holds a thread, two descriptors and at most a few
    /// MiB); one more is closed as soon as it is accepted. Default: 128.
    pub max_connections: usize,
    /// A client must finish negotiating within this time. Default: 10 s.
    pub handshake_timeout: Duration,
    /// A connection with no request for this long is closed; `None` keeps idle connections
    /// (a mounted file system may idle for hours). Default: `None`.
    pub idle_timeout: Option<Duration>,
    /// A client that does not read its replies for this long is disconnected (its buffers
    /// are freed). Default: 30 s.
    pub write_timeout: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            readonly: false,
            name: String::new(),
            max_connections: 128,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: None,
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// A socket the server can put timeouts on.
trait Timeouts {
    fn set_timeouts(&self, read: Option<Duration>, write: Duration) -> io::Result<()>;
}

impl Timeouts for UnixStream {
    fn set_timeouts(&self, read: Option<Duration>, write: Duration) -> io::Result<()> {
        self.set_read_timeout(read)?;
        self.set_write_timeout(Some(write))
    }
}

impl Timeouts for TcpStream {
    fn set_timeouts(&self, read: Option<Duration>, write: Duration) -> io::Result<()> {
        self.set_read_timeout(read)?;
        self.set_write_timeout(Some(write))
    }
}

/// A bound listener.
pub enum Listener {
    /// A Unix socket (removed when the listener is dropped).
    Unix(UnixListener, PathBuf),
    /// A loopback TCP socket.
    Tcp(TcpListener),
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, p) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Listener {
    /// Binds a Unix socket at `path` (a stale socket file there is replaced).
    pub fn unix(path: &Path) -> Result<Self, NbdError> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            use std::os::unix::fs::FileTypeExt;
            if meta.file_type().is_socket() {
                let _ = std::fs::remove_file(path);
            }
        }
        let l = UnixListener::bind(path).map_err(|e| NbdError::Io {
            context: format!("binding {}", path.display()),
            source: e,
        })?;
        Ok(Listener::Unix(l, path.to_path_buf()))
    }

    /// Binds a loopback TCP address such as `127.0.0.1:10809`.
    pub fn tcp(addr: &str) -> Result<Self, NbdError> {
        let addrs: Vec<_> = addr
            .to_socket_addrs()
            .map_err(|e| NbdError::Io {
                context: format!("resolving {addr}"),
                source: e,
            })?
            .collect();
        if addrs.is_empty() || addrs.iter().any(|a| !a.ip().is_loopback()) {
            return Err(NbdError::NotLoopback(addr.to_string()));
        }
        let l = TcpListener::bind(&addrs[..]).map_err(|e| NbdError::Io {
            context: format!("binding {addr}"),
            source: e,
        })?;
        Ok(Listener::Tcp(l))
    }

    /// Local address, for logging.
    pub fn describe(&self) -> String {
        match self {
            Listener::Unix(_, p) => format!("nbd+unix:///?socket={}", p.display()),
            Listener::Tcp(l) => l
                .local_addr()
                .map(|a| format!("nbd://{a}"))
                .unwrap_or_else(|_| "tcp".into()),
        }
    }

    /// Serves connections until the process ends, one thread each, at most
    /// `opts.max_connections` at once. Errors of `accept()` are logged and retried.
    pub fn serve(&self, dev: Arc<dyn BlockDevice>, opts: ServerOptions) -> Result<(), NbdError> {
        self.serve_until(dev, opts, &AtomicBool::new(false))
    }

    /// Serves connections until `stop` is set (a signal handler sets it), then stops accepting,
    /// lets every connection finish the request it is serving (its reading side is shut
    /// down, so it sees the end of its stream next) and returns once all have ended: every
    /// write acknowledged to a client has then reached `dev`, and the caller can make the
    /// device durable and exit.
    pub fn serve_until(
        &self,
        dev: Arc<dyn BlockDevice>,
        opts: ServerOptions,
        stop: &AtomicBool,
    ) -> Result<(), NbdError> {
        self.set_nonblocking(true).map_err(|e| NbdError::Io {
            context: "making the listener non-blocking".into(),
            source: e,
        })?;
        let opts = Arc::new(opts);
        let active = Arc::new(AtomicUsize::new(0));
        let live: Arc<Mutex<HashMap<u64, Conn>>> = Arc::default();
        let mut threads: Vec<std::thread::JoinHandle<()>> = Vec::new();
        let mut next_id = 0u64;
        while !stop.load(Ordering::Relaxed) {
            threads.retain(|t| !t.is_finished());
            let accepted = match self {
                Listener::Unix(l, _) => l.accept().map(|(s, _)| Conn::Unix(s)),
                Listener::Tcp(l) => l.accept().map(|(s, _)| {
                    let _ = s.set_nodelay(true);
                    Conn::Tcp(s)
                }),
            };
            let conn = match accepted {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.wait_readable(Duration::from_millis(100));
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE, ENFILE, ECONNABORTED, ENOBUFS ...: transient for a server. Back
                    // off a little so that a descriptor shortage is not a busy loop.
                    tracing::warn!("nbd: accept failed ({e}); retrying");
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            conn.grow_send_buffer();
            if let Err(e) = conn.set_blocking() {
                tracing::warn!("nbd: cannot make a connection blocking ({e}); closing it");
                continue;
            }
            // Join the connection threads that ended (a thread nobody joins keeps its stack),
            // and count the rest: a connection's slot is free only once its thread is gone,
            // so the process never runs more than `max_connections` of them.
            let (ended, running): (Vec<_>, Vec<_>) =
                threads.drain(..).partition(|t| t.is_finished());
            for t in ended {
                let _ = t.join();
            }
            threads = running;
            if threads.len() >= opts.max_connections
                || active.load(Ordering::Acquire) >= opts.max_connections
            {
                tracing::warn!(
                    "nbd: {} connections already; closing a new one",
                    opts.max_connections
                );
                drop(conn);
                continue;
            }
            let id = next_id;
            next_id += 1;
            match conn.try_clone() {
                Ok(c) => {
                    live.lock().insert(id, c);
                }
                Err(e) => {
                    tracing::warn!("nbd: cannot track a connection ({e}); closing it");
                    continue;
                }
            }
            active.fetch_add(1, Ordering::AcqRel);
            let (dev, opts, slot) = (dev.clone(), opts.clone(), Slot(active.clone()));
            let live2 = live.clone();
            let spawned = std::thread::Builder::new()
                .name("nbd-conn".into())
                .spawn(move || {
                    let _slot = slot;
                    log_end(conn.serve(dev.as_ref(), &opts));
                    live2.lock().remove(&id);
                });
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    // The closure (and with it the slot and the connection) was dropped.
                    live.lock().remove(&id);
                    tracing::warn!("nbd: cannot start a connection thread: {e}");
                }
            }
        }
        for c in live.lock().values() {
            c.shutdown_read();
        }
        for t in threads {
            let _ = t.join();
        }
        Ok(())
    }

    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Listener::Unix(l, _) => l.set_nonblocking(on),
            Listener::Tcp(l) => l.set_nonblocking(on),
        }
    }

    /// Waits until a connection is pending or `timeout` passes.
    fn wait_readable(&self, timeout: Duration) {
        use std::os::unix::io::AsRawFd;
        let fd = match self {
            Listener::Unix(l, _) => l.as_raw_fd(),
            Listener::Tcp(l) => l.as_raw_fd(),
        };
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on a descriptor the listener owns, for the duration of the call.
        unsafe { libc::poll(&mut p, 1, timeout.as_millis() as libc::c_int) };
    }
}

/// Frees a connection slot when its thread ends (however it ends).
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An accepted connection of either kind.
enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Conn {
    fn try_clone(&self) -> io::Result<Conn> {
        Ok(match self {
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
        })
    }

    /// Accepted sockets inherit nothing from the non-blocking listener on Linux, but say so.
    fn set_blocking(&self) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.set_nonblocking(false),
            Conn::Tcp(s) => s.set_nonblocking(false),
        }
    }

    /// Asks for a send buffer of [`SEND_BUFFER`] bytes (the kernel caps it at
    /// `net.core.wmem_max`; failure is harmless): a 1 MiB READ reply then goes out in one or
    /// two `sendmsg` calls instead of sleeping for the client five times on the default
    /// 208 KiB. Best effort.
    fn grow_send_buffer(&self) {
        use std::os::unix::io::AsRawFd;
        let fd = match self {
            Conn::Unix(s) => s.as_raw_fd(),
            Conn::Tcp(s) => s.as_raw_fd(),
        };
        let size: libc::c_int = SEND_BUFFER;
        // SAFETY: setsockopt on a socket this connection owns, with a c_int option value of
        // the size given.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }

    /// Ends the reading side: the connection's thread finishes its request, then sees EOF.
    fn shutdown_read(&self) {
        let _ = match self {
            Conn::Unix(s) => s.shutdown(std::net::Shutdown::Read),
            Conn::Tcp(s) => s.shutdown(std::net::Shutdown::Read),
        };
    }

    fn serve(self, dev: &dyn BlockDevice, opts: &ServerOptions) -> io::Result<()> {
        match self {
            Conn::Unix(s) => serve_socket(
                s,
                |s| s.try_clone(),
                |s| {
                    let _ = s.shutdown(std::net::Shutdown::Read);
                },
                dev,
                opts,
            ),
            Conn::Tcp(s) => serve_socket(
                s,
                |s| s.try_clone(),
                |s| {
                    let _ = s.shutdown(std::net::Shutdown::Read);
                },
                dev,
                opts,
            ),
        }
    }
}

/// Serves one socket: negotiation under the handshake timeout, then transmission under the
/// idle timeout; writes always under the write timeout.
fn serve_socket<S: Read + Write + Timeouts + Send>(
    s: S,
    clone: impl Fn(&S) -> io::Result<S>,
    shutdown_read: impl Fn(&S),
    dev: &dyn BlockDevice,
    opts: &ServerOptions,
) -> io::Result<()> {
    s.set_timeouts(Some(opts.handshake_timeout), opts.write_timeout)?;
    let control = clone(&s)?;
    let w = clone(&s)?;
    let mut r = BufReader::with_capacity(READ_BUFFER, s);
    let mut w = BufWriter::with_capacity(256 << 10, w);
    if negotiate(&mut r, &mut w, dev, opts)? {
        control.set_timeouts(opts.idle_timeout, opts.write_timeout)?;
        transmission(r, w, dev, opts, &|| shutdown_read(&control))?;
    }
    Ok(())
}

fn log_end(r: io::Result<()>) {
    match r {
        Ok(()) => tracing::debug!("nbd connection closed"),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            tracing::debug!("nbd client went away")
        }
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            tracing::info!("nbd: connection timed out (idle, or not reading its replies)")
        }
        Err(e) => tracing::warn!("nbd connection ended: {e}"),
    }
}

/// Serves one connection over a reader and a writer (the two halves of a socket): negotiation,
/// then transmission until NBD_CMD_DISC, end of stream, or a protocol violation. (Should the
/// client stop reading its replies, the connection ends at its next request; over a socket
/// the server ends it at once.)
pub fn serve_connection(
    r: impl Read + Send,
    w: impl Write + Send,
    dev: &dyn BlockDevice,
    opts: &ServerOptions,
) -> io::Result<()> {
    let mut r = BufReader::with_capacity(READ_BUFFER, r);
    let mut w = BufWriter::with_capacity(256 << 10, w);
    if negotiate(&mut r, &mut w, dev, opts)? {
        transmission(r, w, dev, opts, &|| {})?;
    }
    Ok(())
}
