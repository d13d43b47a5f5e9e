//! How an engine is named: [`EngineKind`] and its command-line names.

use crate::error::{Error, Result};

/// Which engine to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// SMRDB with sequential-organised compaction (SMRDB-SOC, the default).
    Tegula,
    /// SMRDB with LevelDB-style organisation (SMRDB-LOC).
    TegulaLoc,
    /// RocksDB through its C API.
    Rocksdb,
    /// LevelDB through its C API.
    Leveldb,
    /// The in-memory `BTreeMap` reference engine (measures the harness itself).
    Memory,
}

impl EngineKind {
    /// Every engine name accepted by `--engine`.
    pub const NAMES: [&'static str; 5] = ["tegula", "tegula-loc", "rocksdb", "leveldb", "memory"];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Tegula => "tegula",
            EngineKind::TegulaLoc => "tegula-loc",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::Leveldb => "leveldb",
            EngineKind::Memory => "memory",
        }
    }

    /// Parses one engine name.
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "tegula" | "smrdb" | "tegula-soc" => EngineKind::Tegula,
            "tegula-loc" | "smrdb-loc" => EngineKind::TegulaLoc,
            "rocksdb" => EngineKind::Rocksdb,
            "leveldb" => EngineKind::Leveldb,
            "memory" | "btreemap" => EngineKind::Memory,
            other => {
                return Err(Error::invalid(format!(
                    "unknown engine {other:?} (one of: {})",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }

    /// Parses a comma-separated list of engine names.
    pub fn parse_list(s: &str) -> Result<Vec<Self>> {
        let v = s
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(Self::parse)
            .collect::<Result<Vec<_>>>()?;
        if v.is_empty() {
            return Err(Error::invalid("no engine given"));
        }
        Ok(v)
    }

    /// Whether the engine keeps its data on an emulated zoned device.
    pub fn on_device(self) -> bool {
        matches!(self, EngineKind::Tegula | EngineKind::TegulaLoc)
    }
}
