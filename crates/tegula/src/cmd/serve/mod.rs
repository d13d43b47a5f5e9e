//! `tegula serve …`: export a drive over a network protocol.

mod nbd;
mod resp;

use anyhow::Result;
use clap::Subcommand;

/// `tegula serve` subcommands.
// Parsed once per run: the size of the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum ServeCommand {
    /// Serve a drive over NBD (Unix socket or loopback TCP).
    Nbd(nbd::ServeNbd),
    /// Serve an SMRDB database (or RocksDB/LevelDB) over the Redis protocol (RESP2/RESP3).
    Resp(resp::ServeResp),
}

impl ServeCommand {
    /// Runs the server until it is stopped.
    pub fn run(self) -> Result<()> {
        match self {
            ServeCommand::Nbd(a) => nbd::run(&a),
            ServeCommand::Resp(a) => resp::run(&a),
        }
    }
}
