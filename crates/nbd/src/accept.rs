//! The accept loop: one thread per connection (plus its reader and writer in the transmission
//! phase), at most [`ServerOptions::max_connections`] at once, with the connection table's
//! timeouts checked every [`TICK`].
//!
//! When every slot is taken and a client is waiting, the loop
//! 1. waits while some connection is ending (its client sent NBD_CMD_DISC or closed, or the
//!    server closed it): its slot frees once it has finished the requests it had, and the
//!    waiting client is then served — so quick connect/disconnect cycles are never turned away
//!    because the connections they ended are still finishing;
//! 2. else closes the connection idle the longest, if it has been idle for
//!    [`ServerOptions::evict_idle`], and serves the new client once its slot is free;
//! 3. else accepts the new connection and closes it at once (the client sees the end of the
//!    stream before the greeting).

use crate::negotiate::negotiate;
use crate::server::{Listener, NbdError, ServerOptions, READ_BUFFER};
use crate::socket::{Conn, Sock};
use crate::table::{Activity, Table};
use crate::transmission::transmission;
use std::io::{self, BufReader, BufWriter};
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tegula_device::BlockDevice;

/// How often the timeouts are checked (and the longest the loop sleeps on the listener).
const TICK: Duration = Duration::from_millis(50);

/// While a slot is about to free, the loop looks again after this long.
const ENDING_POLL: Duration = Duration::from_millis(1);

/// Frees a connection slot when its thread ends (however it ends).
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves `l` until `stop` is set; see [`Listener::serve_until`].
pub(crate) fn run(
    l: &Listener,
    dev: Arc<dyn BlockDevice>,
    opts: ServerOptions,
    stop: &AtomicBool,
) -> Result<(), NbdError> {
    set_nonblocking(l).map_err(|e| NbdError::Io {
        context: "making the listener non-blocking".into(),
        source: e,
    })?;
    let opts = Arc::new(opts);
    let active = Arc::new(AtomicUsize::new(0));
    let table = Arc::new(Table::default());
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 0u64;
    let mut last_check = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        join_ended(&mut threads);
        if last_check.elapsed() >= TICK {
            table.close_expired(&opts);
            last_check = Instant::now();
        }
        if !wait_readable(l, TICK) {
            continue;
        }
        let full = || active.load(Ordering::Acquire) >= opts.max_connections;
        if full() {
            // A connection whose thread has left the table is closing its socket and about
            // to free its slot.
            if table.any_ending() || table.len() < active.load(Ordering::Acquire) {
                std::thread::sleep(ENDING_POLL);
                continue;
            }
            if opts
                .evict_idle
                .is_some_and(|d| table.evict_longest_idle(d, opts.max_connections))
            {
                continue;
            }
        }
        let conn = match accept(l) {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // EMFILE, ENFILE, ECONNABORTED, ENOBUFS ...: transient for a server. Back
                // off a little so that a descriptor shortage is not a busy loop.
                tracing::warn!("nbd: accept failed ({e}); retrying");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if full() {
            tracing::warn!(
                "nbd: {} connections, none of them ending or idle for long enough; closing a \
                 new one",
                opts.max_connections
            );
            continue;
        }
        conn.grow_send_buffer();
        if let Err(e) = conn.set_blocking() {
            tracing::warn!("nbd: cannot make a connection blocking ({e}); closing it");
            continue;
        }
        let id = next_id;
        next_id += 1;
        let activity = Arc::new(Activity::new());
        match conn.try_clone() {
            Ok(c) => table.insert(id, c, activity.clone()),
            Err(e) => {
                tracing::warn!("nbd: cannot track a connection ({e}); closing it");
                continue;
            }
        }
        active.fetch_add(1, Ordering::AcqRel);
        let slot = Slot(active.clone());
        let (dev, opts, table2) = (dev.clone(), opts.clone(), table.clone());
        let spawned = std::thread::Builder::new()
            .name("nbd-conn".into())
            .spawn(move || {
                // Dropped last: the slot frees once the socket is closed and forgotten.
                let _slot = slot;
                let conn = conn;
                let r = serve_socket(&conn, &activity, dev.as_ref(), &opts);
                activity.ending();
                if r.as_ref()
                    .is_err_and(|e| e.kind() == io::ErrorKind::TimedOut)
                {
                    conn.abort_on_close();
                }
                log_end(id, r, &activity);
                table2.remove(id);
                drop(conn);
            });
        match spawned {
            Ok(t) => threads.push(t),
            Err(e) => {
                // The closure (and with it the slot and the connection) was dropped.
                table.remove(id);
                tracing::warn!("nbd: cannot start a connection thread: {e}");
            }
        }
    }
    table.shutdown_reads();
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

/// Joins the connection threads that ended (a thread nobody joins keeps its stack).
fn join_ended(threads: &mut Vec<JoinHandle<()>>) {
    let (ended, running): (Vec<_>, Vec<_>) = threads.drain(..).partition(|t| t.is_finished());
    for t in ended {
        let _ = t.join();
    }
    *threads = running;
}

/// Serves one accepted socket: negotiation (the table closes it after the handshake timeout),
/// then transmission; every write and every read of a WRITE's data under the stall timeout.
fn serve_socket(
    conn: &Conn,
    activity: &Arc<Activity>,
    dev: &dyn BlockDevice,
    opts: &ServerOptions,
) -> io::Result<()> {
    let r = Sock::new(conn, opts.write_timeout, activity.clone())?;
    let w = Sock::new(conn, opts.write_timeout, activity.clone())?;
    let mut r = BufReader::with_capacity(READ_BUFFER, r);
    let mut w = BufWriter::with_capacity(256 << 10, w);
    if negotiate(&mut r, &mut w, dev, opts)? {
        activity.transmitting();
        transmission(r, w, dev, opts, activity, &|| conn.shutdown_read())?;
    }
    Ok(())
}

fn log_end(id: u64, r: io::Result<()>, activity: &Activity) {
    match r {
        Ok(()) => tracing::debug!("nbd: connection {id} closed"),
        // The table logged why it closed the connection.
        Err(_) if activity.closed_by_server() => {
            tracing::debug!("nbd: connection {id} closed by the server")
        }
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            tracing::debug!("nbd: connection {id}: the client went away")
        }
        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
            tracing::warn!("nbd: connection {id}: {e}; disconnected")
        }
        Err(e) => tracing::warn!("nbd: connection {id} ended: {e}"),
    }
}

fn accept(l: &Listener) -> io::Result<Conn> {
    match l {
        Listener::Unix(l, _) => l.accept().map(|(s, _)| Conn::Unix(s)),
        Listener::Tcp(l) => l.accept().map(|(s, _)| {
            let _ = s.set_nodelay(true);
            Conn::Tcp(s)
        }),
    }
}

fn set_nonblocking(l: &Listener) -> io::Result<()> {
    match l {
        Listener::Unix(l, _) => l.set_nonblocking(true),
        Listener::Tcp(l) => l.set_nonblocking(true),
    }
}

/// Waits until a connection is pending (true) or `timeout` passes (false).
fn wait_readable(l: &Listener, timeout: Duration) -> bool {
    let fd = match l {
        Listener::Unix(l, _) => l.as_raw_fd(),
        Listener::Tcp(l) => l.as_raw_fd(),
    };
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd on a descriptor the listener owns, for the duration of the call.
    let n = unsafe { libc::poll(&mut p, 1, timeout.as_millis() as libc::c_int) };
    n > 0
}
