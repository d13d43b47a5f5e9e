//! The engine interface: what every key-value engine offers the benchmarks and the server.
//!
//! Every engine — SMRDB (SOC and LOC), RocksDB, LevelDB, and the in-memory reference — is
//! reached through [`KvEngine`], so that a benchmark or a server runs the same code path over
//! all of them.

use crate::durability::{Durability, SyncPolicy};
use crate::error::Result;
use crate::kind::EngineKind;
use crate::storage_label::StorageLabel;
use serde::Serialize;

/// One operation of an atomic write batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOp {
    /// Insert or overwrite `key` with `value`.
    Put(Vec<u8>, Vec<u8>),
    /// Delete `key` (a tombstone in an LSM engine).
    Delete(Vec<u8>),
}

/// Host-visible counters of the device under an engine.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeviceCounters {
    /// Modelled device time in nanoseconds (the emulated drive's virtual clock); `None` on a
    /// device without a model (a banded plain file).
    pub now_ns: Option<u64>,
    /// Bytes the host read from the device.
    pub bytes_read: u64,
    /// Bytes the host wrote to the device.
    pub bytes_written: u64,
    /// Bytes written to each zone so far (emulated drives; empty elsewhere): which zones a
    /// benchmark wrote, for the media-rate check.
    pub zone_bytes_written: Vec<u64>,
}

/// A key-value engine as the benchmarks see it. Implementations must be usable from several
/// benchmark threads at once.
pub trait KvEngine: Send + Sync {
    /// Engine name as printed and written to JSON (`tegula`, `rocksdb`, …).
    fn name(&self) -> &str;
    /// Inserts or overwrites one key, without asking for durability.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Reads one key.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Reads one key into `out` (replacing its contents, reusing its allocation where the
    /// engine can); whether the key exists. The benchmarks' read loops use this.
    fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        match self.get(key)? {
            Some(v) => {
                *out = v;
                Ok(true)
            }
            None => {
                out.clear();
                Ok(false)
            }
        }
    }
    /// Reads one key and hands its value to `f` (where the engine can, without copying it out
    /// first: RocksDB's pinned slice); whether the key exists. db_bench's `readrandom` reads
    /// this way: it looks at the value's length only.
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        match self.get(key)? {
            Some(v) => {
                f(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    /// Called in each benchmark thread before its first operation, for per-thread engine
    /// settings (RocksDB's perf level is thread-local).
    fn thread_started(&self) {}
    /// Deletes one key, without asking for durability.
    fn delete(&self, key: &[u8]) -> Result<()>;
    /// Applies `ops` atomically; with `sync` the batch is durable when this returns.
    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()>;
    /// Visits up to `limit` pairs in key order starting at the first key `>= start`; `visit`
    /// returns false to stop early. Returns the number of pairs visited.
    fn scan(
        &self,
        start: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize>;
    /// Writes everything buffered in memory to persistent structures (a memtable flush).
    fn flush(&self) -> Result<()>;
    /// The engine's own statistics as JSON, if it reports any.
    fn stats_json(&self) -> Option<serde_json::Value> {
        None
    }
    /// The device's modelled time in nanoseconds, for engines on an emulated device.
    fn device_time_ns(&self) -> Option<u64> {
        self.device_counters().and_then(|c| c.now_ns)
    }
    /// Device counters, for engines on a device the harness can see (an emulated drive, a
    /// banded file).
    fn device_counters(&self) -> Option<DeviceCounters> {
        None
    }
    /// The fastest rate, in bytes per second, at which the media can transfer data in any
    /// zone written since `since` (the raw media rate at those LBAs, track switches ignored):
    /// an upper bound on user bytes per device second once they are durable. `None` without
    /// a drive model.
    fn media_limit(&self, _since: &DeviceCounters) -> Option<f64> {
        None
    }
    /// What the engine's data lives on.
    fn storage(&self) -> StorageLabel {
        StorageLabel::Memory
    }
    /// What a crash loses of the writes this engine acknowledges under `sync`.
    fn durability(&self, sync: SyncPolicy) -> Durability {
        Durability::of(EngineKind::Memory, self.storage(), sync, false, None, false)
    }
    /// Write amplification since the database was opened, if the engine can tell.
    fn write_amp(&self) -> Option<f64> {
        None
    }
    /// Bytes written by compaction since the database was opened, if the engine can tell.
    fn compaction_bytes(&self) -> Option<u64> {
        None
    }
    /// Waits until background flushes and compactions have finished and none is due
    /// (`--settle`; engines without background work return at once).
    fn wait_for_background(&self) -> Result<()> {
        Ok(())
    }
    /// Closes the engine, making everything durable.
    fn close(self: Box<Self>) -> Result<()>;
}
