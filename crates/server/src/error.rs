//! Typed errors of the server.

/// What starting or running the server can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Binding the listening socket failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The event loop failed (poll, registration, waker).
    #[error("event loop: {0}")]
    Io(#[from] std::io::Error),
    /// The storage engine failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// An option is out of range.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// A `rename-command` option is refused.
    #[error(transparent)]
    RenameCommand(#[from] crate::commands::RenameError),
    /// The engine thread stopped unexpectedly.
    #[error("engine thread: {0}")]
    EngineThread(String),
}

/// What a storage backend operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// SMRDB failed.
    #[error("smrdb: {0}")]
    Smrdb(#[from] tegula_smrdb::Error),
    /// Another engine (RocksDB, LevelDB) failed.
    #[error("{engine}: {message}")]
    Engine {
        /// The engine's name.
        engine: String,
        /// Its message.
        message: String,
    },
    /// The engine refused an argument (a key or value too large, ...).
    #[error("{0}")]
    InvalidArgument(String),
    /// The data is not in a format this server reads (see `docs/formats/resp-keys.md`).
    #[error("data format: {0}")]
    Format(String),
}

/// Result alias of backend operations.
pub type BackendResult<T> = std::result::Result<T, BackendError>;
