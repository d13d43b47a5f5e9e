//! tegula's Redis-protocol server: SMRDB (and, with the `compare` feature, RocksDB and
//! LevelDB) behind RESP2/RESP3, so that unmodified Redis clients and benchmarks
//! (redis-cli, redis-benchmark, YCSB's redis binding) run against it.
//!
//! Two threads: the network loop ([`Server`], one `mio` poll for every connection) parses
//! requests and writes replies; the engine thread owns the data and executes each poll
//! iteration's requests as one round whose writes are one engine batch, synced under
//! `appendfsync always` before any of the round's replies is sent (group commit). The data
//! model and key encoding are in [`keys`]; the command table in [`commands`]; the protocol in
//! [`resp`]; engines behind [`Backend`]. Clients that should not be served at all (HTTP
//! requests, outsiders in protected mode, large requests before `AUTH`) are turned away as
//! [`security`] describes; what the loop reports as it runs are [`ServerEvent`]s.
//! `docs/cli/serve-resp.md` describes the command line.
//!
//! ```no_run
//! use std::sync::{atomic::AtomicBool, Arc};
//! use tegula_server::{Server, ServerOptions, SmrdbBackend};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut cfg = tegula_device::profile("hm-smr")?;
//! cfg.capacity = 1 << 30;
//! let dev = Arc::new(tegula_device::Disk::in_memory(cfg)?);
//! let db = tegula_smrdb::Db::create(dev, Default::default(), Default::default())?;
//! let server = Server::bind("127.0.0.1:0", ServerOptions::default())?;
//! println!("listening on {}", server.local_addr());
//! let stop = AtomicBool::new(false); // set from a signal handler to stop
//! server.run(Box::new(SmrdbBackend::new(db)), &stop)?;
//! # Ok(()) }
//! ```

pub mod backend;
pub mod commands;
mod engine;
pub mod error;
pub mod events;
pub mod glob;
pub mod keys;
mod net;
pub mod options;
pub mod resp;
pub mod secret;
pub mod security;
pub mod stats;
pub mod store;

pub use backend::{Backend, SmrdbBackend};
#[cfg(feature = "compare")]
pub use backend::{CapiBackend, CapiEngine};
pub use commands::{CommandTable, RenameError};
pub use error::{BackendError, ServerError};
pub use events::{EventSink, ServerEvent};
pub use net::{ServeReport, Server};
pub use options::{AppendFsync, ServerOptions};
pub use secret::Password;
