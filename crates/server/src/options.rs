//! Server configuration. `Default` is the one source of every default; each field says its
//! default and the trade-off it controls.

use crate::secret::Password;
use std::time::Duration;

/// When acknowledged writes reach stable storage (Redis's `appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AppendFsync {
    /// Every write is durable before it is acknowledged. Writes that arrive together (from
    /// many clients, or pipelined) share one synced engine batch: group commit.
    Always,
    /// Writes are acknowledged at once and made durable at least once a second: a crash
    /// loses at most about the last second. The default, as in Redis.
    #[default]
    Everysec,
    /// Writes are made durable only when the engine decides (its buffers fill), at `SAVE`
    /// and at shutdown: a crash may lose the engine's unwritten buffers.
    No,
}

impl AppendFsync {
    /// The name Redis uses (`always`, `everysec`, `no`).
    pub fn name(self) -> &'static str {
        match self {
            AppendFsync::Always => "always",
            AppendFsync::Everysec => "everysec",
            AppendFsync::No => "no",
        }
    }

    /// Parses a Redis name.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "always" => Some(AppendFsync::Always),
            "everysec" => Some(AppendFsync::Everysec),
            "no" => Some(AppendFsync::No),
            _ => None,
        }
    }
}

/// Options of [`crate::Server`].
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Durability policy. Default [`AppendFsync::Everysec`].
    pub appendfsync: AppendFsync,
    /// Most client connections at once (Redis's `maxclients`); one more is told
    /// `ERR max number of clients reached` and closed. Default 10,000. Each idle connection
    /// costs a few hundred bytes and a file descriptor; raise `ulimit -n` to match.
    pub max_clients: usize,
    /// Close a connection that sent nothing and has nothing to receive for this long (Redis's
    /// `timeout`). Default `None`: never, as Redis.
    pub idle_timeout: Option<Duration>,
    /// Close a connection whose pending replies made no progress for this long (a client that
    /// stopped reading). Default 60 s.
    pub output_stall_timeout: Duration,
    /// Longest argument (bulk string) accepted (Redis's `proto-max-bulk-len`); a longer one is
    /// a protocol error that closes the connection before its bytes are read. Default 16 MiB.
    pub max_bulk: usize,
    /// Most arguments in one request. Default 1,048,576 (Redis's limit).
    pub max_args: usize,
    /// Largest request (Redis's `client-query-buffer-limit`): a connection whose unparsed
    /// input grows past it is closed. Default 64 MiB; must exceed `max_bulk`.
    pub max_request: usize,
    /// Hard limit of a connection's pending replies (Redis's `client-output-buffer-limit`
    /// for normal clients): a connection past it is closed. Default 64 MiB. Memory held for a
    /// client that stops reading is bounded by this plus one request's replies.
    pub max_output: usize,
    /// A connection's requests are not read while more than this many reply bytes wait to
    /// be sent (back-pressure on pipelining clients that read slowly). Default 256 KiB.
    pub output_pause: usize,
    /// Most requests of one connection executed in one round (pipelining depth served at
    /// once; more wait for the next round). Default 1,024.
    pub max_pipeline: usize,
    /// Password clients must give with `AUTH` (or `HELLO ... AUTH`) before anything else
    /// (Redis's `requirepass`). Default `None`: no authentication. Until a client has
    /// authenticated, its requests may hold at most 10 arguments of at most 16 KiB each
    /// (Redis 7's limits; past them the connection is closed with a protocol error).
    pub requirepass: Option<Password>,
    /// Protected mode (Redis's `protected-mode`): while no password is set, clients that do
    /// not connect from the loopback interface are told `-DENIED ...` and closed. Default on.
    pub protected_mode: bool,
    /// Most bytes the buffers of all clients together may hold (Redis's
    /// `maxmemory-clients`): query buffers (requests being received), pending replies and
    /// each connection's spare buffers, counted as allocated. Past it the client holding the
    /// most is closed, until the total is back under the limit. Default 256 MiB; 0: no limit
    /// (each client is still held to `max_request` and `max_output`). It may be exceeded by
    /// at most one read of one client (up to `max_request`) before that client's next check.
    pub max_client_memory: usize,
    /// Commands renamed (Redis's `rename-command NAME NEWNAME`), applied in order: the
    /// command answers to NEWNAME only; an empty NEWNAME disables it. Default none.
    pub rename_commands: Vec<(String, String)>,
    /// A round of at most this many requests is executed by the network loop itself when the
    /// engine thread is idle (under `appendfsync everysec` and `no`), as Redis's one event
    /// loop does: no hand-off, no thread wake-ups. Larger rounds (pipelining clients), and
    /// every round under `always` (whose sync the network loop should not wait for), go to
    /// the engine thread, so that reading and parsing the next round overlaps them. 0: every
    /// round goes to the engine thread. Default 64.
    pub inline_round_max: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            appendfsync: AppendFsync::default(),
            max_clients: 10_000,
            idle_timeout: None,
            output_stall_timeout: Duration::from_secs(60),
            max_bulk: 16 << 20,
            max_args: 1 << 20,
            max_request: 64 << 20,
            max_output: 64 << 20,
            output_pause: 256 << 10,
            max_pipeline: 1024,
            requirepass: None,
            protected_mode: true,
            max_client_memory: 256 << 20,
            rename_commands: Vec::new(),
            inline_round_max: 64,
        }
    }
}
