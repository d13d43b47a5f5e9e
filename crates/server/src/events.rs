//! What the network loop reports while it runs: [`ServerEvent`]s, handed to an
//! [`EventSink`] given with [`crate::Server::with_events`] (the binary logs them on stderr;
//! the library prints nothing). No event carries a request's arguments or the password.

use std::net::SocketAddr;

/// Something an operator should hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// A client sent a request named `POST` or `Host:`, as an HTTP request does: most likely
    /// a web page making the browser post to this port (cross-protocol scripting). Its
    /// connection was closed before anything it sent was executed.
    CrossProtocol {
        /// The client's address.
        peer: SocketAddr,
    },
    /// A client from outside the loopback interface was refused: protected mode is on and no
    /// password is set.
    ProtectedModeDenied {
        /// The client's address.
        peer: SocketAddr,
    },
    /// A client was closed because the buffers of all clients together passed
    /// `maxmemory-clients`: it held the most.
    ClientEvicted {
        /// The client's address.
        peer: SocketAddr,
        /// Bytes its buffers held.
        client_bytes: usize,
        /// Bytes all clients' buffers held.
        total_bytes: usize,
        /// The limit.
        limit: usize,
    },
}

impl ServerEvent {
    /// A short name of the kind of event (`cross-protocol`, `protected-mode`, `evicted`),
    /// for rate-limited logging.
    pub fn kind(&self) -> &'static str {
        match self {
            ServerEvent::CrossProtocol { .. } => "cross-protocol",
            ServerEvent::ProtectedModeDenied { .. } => "protected-mode",
            ServerEvent::ClientEvicted { .. } => "evicted",
        }
    }
}

impl std::fmt::Display for ServerEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerEvent::CrossProtocol { peer } => write!(
                f,
                "possible SECURITY ATTACK: the client at {peer} sent a POST or Host: line, as an \
                 HTTP request does (cross-protocol scripting: a web page posting to this port); \
                 its connection was closed before anything it sent was executed"
            ),
            ServerEvent::ProtectedModeDenied { peer } => write!(
                f,
                "refused the client at {peer}: protected mode is on (no password is set and the \
                 client is not on the loopback interface)"
            ),
            ServerEvent::ClientEvicted {
                peer,
                client_bytes,
                total_bytes,
                limit,
            } => write!(
                f,
                "closed the client at {peer}, which held {client_bytes} bytes of buffers: all \
                 clients together held {total_bytes} bytes, past maxmemory-clients ({limit})"
            ),
        }
    }
}

/// Receives [`ServerEvent`]s, from the network loop's thread: it must return quickly.
pub trait EventSink: Send + Sync {
    /// One event.
    fn event(&self, e: &ServerEvent);
}
