//! tegula's benchmark harness (issue 3, "Benchmarks"): db_bench-style named benchmarks and
//! YCSB's core workloads, run over SMRDB (feature `smrdb`), RocksDB and LevelDB (feature
//! `compare`) and an in-memory reference engine (the engines of `tegula-kv`, which the server
//! also stands on), side by side in one run,
//! with db_bench-like result lines, JSON results, HDR latency percentiles, modelled device
//! time for engines on an emulated drive, and throughput-over-time plots; and the seed
//! papers' figures and experiments ([`paper`]), the cleaning experiment of tegula fs among them
//! ([`paper::shingledfs`]).
//!
//! The library parses no command line and prints nothing. A caller fills in options structs
//! whose `Default` is the one source of the defaults ([`EngineSetup`], [`DbBenchConfig`],
//! [`YcsbConfig`], the paper options), runs ([`Lineup`], [`paper`]), and receives progress
//! and results through an [`Observer`]; errors are typed ([`Error`]). The `tegula` binary's
//! `tegula bench` is that caller; `docs/guides/bench.md` describes the commands.

pub mod dbbench;
pub mod drive;
pub mod error;
pub mod generators;
pub mod keys;
pub mod latency;
pub mod media;
pub mod observer;
pub mod op_clock;
pub mod paper;
pub mod plot;
pub mod report;
pub mod runner;
pub mod setup;
pub mod side_by_side;
pub mod storage;
pub mod ycsb;

pub use dbbench::DbBenchConfig;
pub use error::{Error, Result};
pub use observer::{Observer, Quiet};
pub use report::BenchResult;
pub use setup::EngineSetup;
pub use side_by_side::Lineup;
pub use storage::{RunDir, Storage};
pub use tegula_kv::{
    BatchOp, DeviceCounters, Durability, EngineFactory, EngineKind, EngineOptions, KvEngine, Loss,
    StorageLabel, SyncPolicy, Target,
};
pub use ycsb::YcsbConfig;
