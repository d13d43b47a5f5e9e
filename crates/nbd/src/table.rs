//! The accept loop's view of its connections: what each is doing ([`Activity`], updated by the
//! connection's threads) and the table of live connections that enforces the handshake and
//! idle timeouts, tells whether a slot is about to free (a connection whose client has
//! disconnected is still finishing), and closes the longest-idle connection to make room for
//! a new client when the server is full.

use crate::server::ServerOptions;
use crate::socket::Conn;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Negotiating (before NBD_OPT_GO / EXPORT_NAME has been answered).
const NEGOTIATING: u8 = 0;
/// In the transmission phase.
const TRANSMITTING: u8 = 1;
/// The client has gone (NBD_CMD_DISC, end of stream, an error): no request will come; the
/// connection finishes what it was doing and its thread ends.
const ENDING: u8 = 2;

/// What one connection is doing, shared between its threads and the accept loop. Times are
/// milliseconds since the connection was accepted.
#[derive(Debug)]
pub(crate) struct Activity {
    /// When the connection was accepted.
    start: Instant,
    /// [`NEGOTIATING`], [`TRANSMITTING`] or [`ENDING`].
    phase: AtomicU8,
    /// Requests received whose replies have not all been written.
    pending: AtomicU32,
    /// The last request received or reply completed.
    last: AtomicU64,
    /// The reader is taking a WRITE's payload off the socket.
    in_payload: AtomicBool,
    /// The server has shut the socket down (timeout or eviction).
    closed_by_server: AtomicBool,
}

impl Activity {
    /// A connection accepted now.
    pub(crate) fn new() -> Activity {
        Activity {
            start: Instant::now(),
            phase: AtomicU8::new(NEGOTIATING),
            pending: AtomicU32::new(0),
            last: AtomicU64::new(0),
            in_payload: AtomicBool::new(false),
            closed_by_server: AtomicBool::new(false),
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn touch(&self) {
        self.last.store(self.now_ms(), Ordering::Release);
    }

    /// Negotiation is over: requests follow.
    pub(crate) fn transmitting(&self) {
        self.touch();
        let _ = self.phase.compare_exchange(
            NEGOTIATING,
            TRANSMITTING,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// No request will come any more.
    pub(crate) fn ending(&self) {
        self.phase.store(ENDING, Ordering::Release);
    }

    /// A request was received (before it is queued).
    pub(crate) fn request_received(&self) {
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.touch();
    }

    /// The last byte of a reply was written.
    pub(crate) fn reply_sent(&self) {
        self.touch();
        let _ = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| p.checked_sub(1));
    }

    /// The reader starts (`true`) or ends (`false`) taking a WRITE's payload off the socket.
    pub(crate) fn set_in_payload(&self, on: bool) {
        self.in_payload.store(on, Ordering::Release);
    }

    /// Whether the reader is inside a WRITE's payload.
    pub(crate) fn in_payload(&self) -> bool {
        self.in_payload.load(Ordering::Acquire)
    }

    /// Whether the server closed this connection (it then logs why; the connection's own
    /// end is not news).
    pub(crate) fn closed_by_server(&self) -> bool {
        self.closed_by_server.load(Ordering::Acquire)
    }

    /// How long the connection has been idle: in the transmission phase, no request in
    /// flight, nothing received or sent since. `None` when it is not idle.
    fn idle_for(&self) -> Option<Duration> {
        if self.phase.load(Ordering::Acquire) != TRANSMITTING
            || self.pending.load(Ordering::Acquire) != 0
        {
            return None;
        }
        let last = self.last.load(Ordering::Acquire);
        Some(Duration::from_millis(self.now_ms().saturating_sub(last)))
    }

    /// Whether the connection is negotiating and has been for `limit` or longer.
    fn negotiating_past(&self, limit: Duration) -> bool {
        self.phase.load(Ordering::Acquire) == NEGOTIATING && self.start.elapsed() >= limit
    }

    /// Whether the connection will end without anything more from its client.
    fn is_ending(&self) -> bool {
        self.phase.load(Ordering::Acquire) == ENDING || self.closed_by_server()
    }
}

/// A live connection: a handle on its socket (to shut it down) and its activity.
struct Entry {
    conn: Conn,
    activity: Arc<Activity>,
}

/// The live connections, by id.
#[derive(Default)]
pub(crate) struct Table(Mutex<HashMap<u64, Entry>>);

impl Table {
    /// Records a connection (`conn` is another handle on its socket).
    pub(crate) fn insert(&self, id: u64, conn: Conn, activity: Arc<Activity>) {
        self.0.lock().insert(id, Entry { conn, activity });
    }

    /// Forgets a connection whose thread is ending.
    pub(crate) fn remove(&self, id: u64) {
        self.0.lock().remove(&id);
    }

    /// How many connections are in the table.
    pub(crate) fn len(&self) -> usize {
        self.0.lock().len()
    }

    /// Closes the connections that have not finished negotiating within
    /// `opts.handshake_timeout`, and those idle for `opts.idle_timeout`.
    pub(crate) fn close_expired(&self, opts: &ServerOptions) {
        for (id, e) in self.0.lock().iter() {
            if e.activity.closed_by_server() {
                continue;
            }
            if e.activity.negotiating_past(opts.handshake_timeout) {
                tracing::info!(
                    "nbd: connection {id} did not finish negotiating within {:?}; closing it",
                    opts.handshake_timeout
                );
                close(e);
            } else if let (Some(limit), Some(idle)) = (opts.idle_timeout, e.activity.idle_for()) {
                if idle >= limit {
                    tracing::info!(
                        "nbd: connection {id} idle for {:.1} s (--idle-timeout {} s); closing it",
                        idle.as_secs_f64(),
                        limit.as_secs()
                    );
                    close(e);
                }
            }
        }
    }

    /// Whether some connection is ending: its client sent NBD_CMD_DISC or closed its socket
    /// (seen from the socket too, before the connection's reader has got to it: a client
    /// that disconnects and connects again at once must not find its old connection still
    /// counted as live), or the server closed it. Its slot frees as soon as it has finished
    /// the requests it had.
    pub(crate) fn any_ending(&self) -> bool {
        let table = self.0.lock();
        if table.values().any(|e| e.activity.is_ending()) {
            return true;
        }
        let mut fds: Vec<libc::pollfd> = table
            .values()
            .map(|e| libc::pollfd {
                fd: e.conn.fd(),
                events: libc::POLLRDHUP,
                revents: 0,
            })
            .collect();
        // SAFETY: poll on descriptors the table owns (it holds the lock: none is closed
        // meanwhile), with the array's length, without waiting.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        n > 0
            && fds
                .iter()
                .any(|p| p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0)
    }

    /// Closes the connection idle the longest if it has been idle for `min_idle` or more and
    /// the table holds `max` connections (none has left since the caller saw the server full:
    /// one that has is freeing its slot, and closing another would close two for one new
    /// client); returns whether one was closed.
    pub(crate) fn evict_longest_idle(&self, min_idle: Duration, max: usize) -> bool {
        let table = self.0.lock();
        if table.len() < max {
            return false;
        }
        let victim = table
            .iter()
            .filter(|(_, e)| !e.activity.closed_by_server())
            .filter_map(|(id, e)| e.activity.idle_for().map(|d| (d, *id, e)))
            .max_by_key(|(d, id, _)| (*d, std::cmp::Reverse(*id)));
        match victim {
            Some((idle, id, e)) if idle >= min_idle => {
                tracing::warn!(
                    "nbd: {} connections, a new client waiting: closing connection {id}, idle \
                     for {:.1} s",
                    table.len(),
                    idle.as_secs_f64()
                );
                close(e);
                true
            }
            _ => false,
        }
    }

    /// Shuts the reading side of every connection: each finishes the request it is serving,
    /// then sees the end of its stream.
    pub(crate) fn shutdown_reads(&self) {
        for e in self.0.lock().values() {
            e.conn.shutdown_read();
        }
    }
}

/// Shuts a connection down on the server's initiative.
fn close(e: &Entry) {
    e.activity.closed_by_server.store(true, Ordering::Release);
    e.conn.shutdown_both();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_only_between_requests_in_transmission() {
        let a = Activity::new();
        assert_eq!(a.idle_for(), None, "negotiating is not idle");
        a.transmitting();
        assert!(a.idle_for().is_some());
        a.request_received();
        assert_eq!(a.idle_for(), None, "a request in flight is not idle");
        a.reply_sent();
        assert!(a.idle_for().is_some());
        a.reply_sent(); // never below zero
        a.request_received();
        assert_eq!(a.idle_for(), None);
        a.ending();
        assert_eq!(a.idle_for(), None);
        assert!(a.is_ending());
    }
}
