//! Subcommands. To add a family (`db`, `bench`, `fs`, `serve`, `probe`, …): add a module with an
//! `Args` type deriving [`clap::Args`] (or a [`clap::Subcommand`] enum) and a `run` function,
//! then one variant to [`Command`] and one arm to [`Command::run`].

pub mod demo;
pub mod disk;

use anyhow::Result;
use clap::Subcommand;

/// Top-level subcommands of `tegula`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, inspect and drive emulated disks (disk images).
    #[command(subcommand)]
    Disk(disk::DiskCommand),
    /// A tour of an emulated host-managed SMR disk in a few seconds.
    Demo(demo::DemoArgs),
}

impl Command {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        match self {
            Command::Disk(c) => c.run(),
            Command::Demo(a) => demo::run(a),
        }
    }
}
