//! tegula's key-value engine layer: one interface ([`KvEngine`]) over SMRDB (feature `smrdb`,
//! on by default), RocksDB and LevelDB (feature `compare`, through their C APIs from Debian's
//! librocksdb-dev and libleveldb-dev) and an in-memory reference engine; how an engine is
//! named ([`EngineKind`]), where it keeps its data ([`Target`]), the settings every engine
//! gets alike ([`EngineOptions`]), the one place that opens an engine on a target
//! ([`EngineFactory`]), and what a crash loses of what it acknowledged ([`Durability`]).
//!
//! The benchmark harness (`tegula-bench`) and the network server (`tegula-server`) both stand
//! on this crate, so that a comparison runs the same adapters a user serves. The library
//! parses no command line and prints nothing; errors are typed ([`Error`]).

pub mod durability;
pub mod engine;
pub mod engines;
pub mod error;
pub mod factory;
pub mod kind;
pub mod options;
pub mod storage_label;
pub mod target;

pub use durability::{Durability, Loss, SyncPolicy};
pub use engine::{BatchOp, DeviceCounters, KvEngine};
pub use error::{Error, Result};
pub use factory::EngineFactory;
pub use kind::EngineKind;
pub use options::EngineOptions;
pub use storage_label::StorageLabel;
pub use target::Target;
