//! tegula's key-value benchmark harness (issue 3, "Benchmarks"): db_bench-style named
//! benchmarks and YCSB's core workloads, run over SMRDB (feature `smrdb`), RocksDB and LevelDB
//! (feature `compare`, through their C APIs) and an in-memory reference engine, side by side in
//! one run, with db_bench-like output lines, JSON results, HDR latency percentiles, modelled
//! device time for engines on an emulated drive, and throughput-over-time plots.
//!
//! The entry point for the `tegula` binary is [`cli::run`]; `docs/bench.md` describes how
//! to run it and how the engines are configured.

pub mod cli;
pub mod dbbench;
pub mod engine;
pub mod engines;
pub mod generators;
pub mod keys;
pub mod paper;
pub mod plot;
pub mod report;
pub mod runner;
pub mod ycsb;

pub use engine::{
    BatchOp, DeviceCounters, EngineFactory, EngineKind, EngineOptions, KvEngine, Target,
};
pub use report::BenchResult;
