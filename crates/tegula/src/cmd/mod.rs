//! Subcommands: one family per component. To add a family (`probe`, …): add a module with an
//! `Args` type deriving [`clap::Args`] (or a [`clap::Subcommand`] enum) and a `run` function,
//! then one variant to [`Command`] and one arm to [`Command::run`].

pub mod args;
pub mod bench;
pub mod db;
pub mod demo;
pub mod demo_stack;
pub mod disk;
pub mod fs;
pub mod probe;
pub mod serve;

use anyhow::Result;
use clap::Subcommand;

/// Top-level subcommands of `tegula`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, inspect and drive emulated disks (disk images).
    #[command(subcommand)]
    Disk(disk::DiskCommand),
    /// The SMRDB key-value engine on a zoned disk image.
    Db(db::DbArgs),
    /// Benchmarks: db_bench-style, YCSB, and the seed papers' figures, engine against engine.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Serve a drive to other programs.
    #[command(subcommand)]
    Serve(serve::ServeCommand),
    /// The zoned file system (ZEAFS): mkfs, mount with FUSE, stats, check.
    #[command(subcommand)]
    Fs(fs::FsCommand),
    /// A tour of an emulated host-managed SMR disk in a few seconds.
    Demo(demo::DemoArgs),
    /// Skylight's TESTs 1-14: infer a drive-managed SMR drive's internals from latencies.
    Probe(probe::ProbeArgs),
}

impl Command {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        match self {
            Command::Disk(c) => c.run(),
            Command::Db(a) => db::run(a),
            Command::Bench(c) => c.run(),
            Command::Serve(c) => c.run(),
            Command::Fs(c) => fs::run(c),
            Command::Demo(a) => demo::run(a),
            Command::Probe(a) => probe::run(a),
        }
    }
}
