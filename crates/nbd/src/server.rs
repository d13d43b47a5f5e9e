//! The NBD server's public face: options ([`ServerOptions`], whose `Default` is the one source
//! of the limits), binding a Unix or loopback TCP [`Listener`], and [`serve_connection`] for a
//! connection over any reader and writer. The accept loop, the per-connection threads and the
//! timeouts are in `accept.rs`, `table.rs` and `socket.rs`.
//!
//! Hostile or stuck clients cannot take the server down: at most
//! [`ServerOptions::max_connections`] connections are served at once; a client that does not
//! finish negotiating within [`ServerOptions::handshake_timeout`], stays idle for
//! [`ServerOptions::idle_timeout`] or stops reading its replies for
//! [`ServerOptions::write_timeout`] is disconnected; reads are streamed in pieces of
//! [`READ_PIECE`](crate::READ_PIECE) bytes (a connection holds at most a few MiB whatever it
//! asks); and a failing `accept()` (out of file descriptors, say) is logged and retried, never
//! fatal.

use crate::negotiate::negotiate;
use crate::table::Activity;
use crate::transmission::transmission;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, ToSocketAddrs};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tegula_device::BlockDevice;

/// Largest READ or WRITE the server accepts (larger writes end the connection).
pub const MAX_REQUEST: u32 = 32 << 20;

/// The request reader's buffer (bytes): big enough for several small requests per `read`, small
/// enough that little of a large WRITE's payload goes through it (a copy more) rather than
/// straight into the payload buffer: with 256 KiB, a quarter of every 1 MiB payload did.
pub(crate) const READ_BUFFER: usize = 32 << 10;

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
    /// Connections served at once (each holds three threads, a few descriptors and at most a
    /// few MiB). When they are all taken and a new client connects, the server waits for a
    /// connection whose client has disconnected to finish, else closes the connection idle
    /// the longest if it has been idle for [`ServerOptions::evict_idle`], else closes the new
    /// connection. Default: 128.
    pub max_connections: usize,
    /// A client must finish negotiating within this time of connecting. Default: 10 s.
    pub handshake_timeout: Duration,
    /// A connection with no request in flight and none received for this long is closed;
    /// `None` keeps idle connections. Default: 300 s (a client that keeps a connection idle
    /// longer, a mounted file system say, needs `None`: `--idle-timeout 0`).
    pub idle_timeout: Option<Duration>,
    /// When every connection slot is taken and a new client connects, the connection idle the
    /// longest is closed for it if it has been idle for this long; `None` never closes one
    /// (the new client is then turned away). Default: 10 s.
    pub evict_idle: Option<Duration>,
    /// A client that does not read its replies for this long (no byte of them moves) is
    /// disconnected, its buffers freed; the same holds for a client that stops sending a
    /// WRITE's data. Default: 30 s.
    pub write_timeout: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            readonly: false,
            name: String::new(),
            max_connections: 128,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(300)),
            evict_idle: Some(Duration::from_secs(10)),
            write_timeout: Duration::from_secs(30),
        }
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
        // Bound and listening under a temporary name, then renamed into place: a client that
        // waits for the path to appear never finds a socket that refuses it (the file exists
        // from bind(2) on, and connections are refused until listen(2)).
        let name = path
            .file_name()
            .map_or_else(|| "nbd.sock".into(), |n| n.to_string_lossy().into_owned());
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let l = UnixListener::bind(&tmp).map_err(|e| NbdError::Io {
            context: format!("binding {}", path.display()),
            source: e,
        })?;
        if let Err(e) = std::fs::rename(&tmp, path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(NbdError::Io {
                context: format!("binding {}", path.display()),
                source: e,
            });
        }
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
        crate::accept::run(self, dev, opts, stop)
    }
}

/// Serves one connection over a reader and a writer (the two halves of a socket): negotiation,
/// then transmission until NBD_CMD_DISC, end of stream, or a protocol violation. No timeout
/// applies here (a writer that blocks holds the connection); the connections a [`Listener`]
/// serves have the timeouts of [`ServerOptions`].
pub fn serve_connection(
    r: impl Read + Send,
    w: impl Write + Send,
    dev: &dyn BlockDevice,
    opts: &ServerOptions,
) -> io::Result<()> {
    let mut r = BufReader::with_capacity(READ_BUFFER, r);
    let mut w = BufWriter::with_capacity(256 << 10, w);
    if negotiate(&mut r, &mut w, dev, opts)? {
        let activity = Activity::new();
        activity.transmitting();
        transmission(r, w, dev, opts, &activity, &|| {})?;
    }
    Ok(())
}
