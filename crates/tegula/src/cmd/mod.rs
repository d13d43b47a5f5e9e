//! Subcommands. To add a family (`db`, `bench`, `fs`, `serve`, `probe`, …): add a module with an
//! `Args` type deriving [`clap::Args`] (or a [`clap::Subcommand`] enum) and a `run` function,
//! then one variant to [`Command`] and one arm to [`Command::run`].

pub mod bench;
pub mod demo;
pub mod demo_stack;
pub mod disk;

use anyhow::Result;
use clap::Subcommand;

/// Top-level subcommands of `tegula`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, inspect and drive emulated disks (disk images).
    #[command(subcommand)]
    Disk(disk::DiskCommand),
    /// The SMRDB key-value engine on a zoned disk image.
    Db(tegula_smrdb::cli::DbArgs),
    /// Benchmarks: db_bench-style, YCSB, and the seed papers' figures, engine against engine.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Serve a drive to other programs.
    #[command(subcommand)]
    Serve(ServeCommand),
    /// The zoned file system (ZEAFS): mkfs, mount with FUSE, stats, check.
    #[command(subcommand)]
    Fs(tegula_fs::cli::FsCommand),
    /// A tour of an emulated host-managed SMR disk in a few seconds.
    Demo(demo::DemoArgs),
}

/// `tegula serve …`: export a drive over a network protocol.
#[derive(Debug, Subcommand)]
pub enum ServeCommand {
    /// Serve an emulated drive over NBD (Unix socket or loopback TCP).
    Nbd(tegula_nbd::cli::ServeNbd),
}

impl Command {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        match self {
            Command::Disk(c) => c.run(),
            Command::Db(a) => tegula_smrdb::cli::run_args(a),
            Command::Bench(c) => c.run(),
            Command::Serve(ServeCommand::Nbd(a)) => tegula_nbd::cli::run(&a),
            Command::Fs(c) => tegula_fs::cli::run(c),
            Command::Demo(a) => demo::run(a),
        }
    }
}
