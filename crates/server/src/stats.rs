//! Counters the network loop and the engine thread share, and the state `INFO` and `CONFIG`
//! report.

use crate::commands::CommandTable;
use crate::options::ServerOptions;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Server-wide counters (relaxed atomics; `INFO stats`).
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections accepted.
    pub connections_received: AtomicU64,
    /// Connections open now.
    pub connected_clients: AtomicU64,
    /// Connections refused at the `max_clients` limit.
    pub rejected_connections: AtomicU64,
    /// Commands executed.
    pub commands_processed: AtomicU64,
    /// Bytes read from clients.
    pub net_input_bytes: AtomicU64,
    /// Bytes written to clients.
    pub net_output_bytes: AtomicU64,
    /// Connections closed for a protocol error.
    pub protocol_errors: AtomicU64,
    /// Connections closed at the output buffer limit.
    pub output_limit_disconnections: AtomicU64,
    /// Connections closed after `idle_timeout`, or after their output stalled.
    pub timeout_disconnections: AtomicU64,
    /// Lookups that found their key.
    pub keyspace_hits: AtomicU64,
    /// Lookups that did not.
    pub keyspace_misses: AtomicU64,
    /// Engine rounds (groups of requests executed together).
    pub rounds: AtomicU64,
    /// Of those, rounds the network loop executed itself (no hand-off to the engine thread).
    pub inline_rounds: AtomicU64,
    /// Engine batches written.
    pub commits: AtomicU64,
    /// Engine syncs (synced batches and syncs on their own).
    pub syncs: AtomicU64,
    /// Engine failures seen by the engine thread.
    pub engine_errors: AtomicU64,
    /// Connections closed because they sent a `POST` or `Host:` line (an HTTP request).
    pub cross_protocol_disconnections: AtomicU64,
    /// Connections refused by protected mode (also counted in `rejected_connections`).
    pub protected_mode_rejections: AtomicU64,
    /// Connections closed because all clients' buffers passed `max_client_memory`.
    pub evicted_clients: AtomicU64,
    /// Bytes the buffers of all clients hold now (as the network loop last counted them).
    pub client_memory: AtomicU64,
}

impl Stats {
    /// Adds `n` to a counter.
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// Reads a counter.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

/// What both threads know about the server.
#[derive(Debug)]
pub struct Shared {
    /// The options it runs with.
    pub opts: ServerOptions,
    /// Counters.
    pub stats: Stats,
    /// When it started.
    pub started: Instant,
    /// The address it listens on.
    pub addr: std::net::SocketAddr,
    /// Set by `SHUTDOWN`: the network loop stops as on SIGTERM.
    pub shutdown: AtomicBool,
    /// The names commands answer to (after `rename-command`).
    pub commands: CommandTable,
}
