//! SMRDB (engines `tegula` = SMRDB-SOC and `tegula-loc` = SMRDB-LOC) on an emulated drive.
//! Reports the device's modelled time and byte counters, and SMRDB's own statistics.

use crate::engine::{BatchOp, DeviceCounters, EngineOptions, KvEngine};
use crate::error::{Error, Result};
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk, ZonedDevice};
use tegula_smrdb::{Db, Error as DbError, FormatOptions, Mode, Options, WriteBatch, WriteOptions};

/// An open SMRDB database and the emulated disk under it.
pub struct SmrdbEngine {
    db: Option<Db>,
    disk: Arc<Disk>,
    name: &'static str,
    /// Unsynced writes skip the log (`--disable_wal`).
    disable_wal: bool,
}

impl SmrdbEngine {
    /// Opens SMRDB on `disk`, or creates it on a device without one, in LOC mode if `loc` (a
    /// database of the other organisation already there is an error). The block
    /// cache and Bloom filter follow `o`; the memtable stays band-sized (SMRDB's default,
    /// which equals the other engines' 256 MiB write buffer on 256 MiB zones).
    pub fn open(disk: Disk, loc: bool, o: &EngineOptions) -> Result<Self> {
        let disk = Arc::new(disk);
        let dev: Arc<dyn ZonedDevice> = disk.clone();
        let d = Options::default();
        let mode = if loc { Mode::Loc } else { Mode::Soc };
        let opts = Options {
            block_cache_bytes: o.cache_size,
            bloom_bits_per_key: o.bloom_bits,
            l0_compaction_trigger: o.l0_compaction_trigger.unwrap_or(d.l0_compaction_trigger),
            l0_slowdown: o.l0_slowdown.unwrap_or(d.l0_slowdown),
            l0_stop: o.l0_stop.unwrap_or(d.l0_stop),
            ..d
        };
        let opts = with_overrides(opts, &o.smrdb_options)?;
        let db = match Db::open(dev.clone(), opts.clone()) {
            Err(DbError::NotFound(_)) => Db::create(dev, FormatOptions { mode }, opts)
                .map_err(|e| Error::engine("creating SMRDB", e))?,
            r => r.map_err(|e| Error::engine("opening SMRDB", e))?,
        };
        if db.mode() != mode {
            return Err(Error::invalid(format!(
                "the device holds an SMRDB-{:?} database, not SMRDB-{mode:?}",
                db.mode()
            )));
        }
        Ok(SmrdbEngine {
            db: Some(db),
            disk,
            name: if loc { "tegula-loc" } else { "tegula" },
            disable_wal: o.disable_wal,
        })
    }

    fn db(&self) -> Result<&Db> {
        self.db
            .as_ref()
            .ok_or_else(|| Error::Internal("SMRDB is closed".into()))
    }

    /// Write options of an unsynced write.
    fn unsynced(&self) -> WriteOptions {
        WriteOptions {
            sync: false,
            disable_wal: self.disable_wal,
        }
    }
}

/// Applies `NAME=VALUE` overrides to SMRDB's options through their serde form, refusing
/// unknown names and ill-typed values.
fn with_overrides(opts: Options, over: &[(String, serde_json::Value)]) -> Result<Options> {
    if over.is_empty() {
        return Ok(opts);
    }
    let mut v = serde_json::to_value(&opts)
        .map_err(|e| Error::Internal(format!("encoding SMRDB options: {e}")))?;
    let map = v
        .as_object_mut()
        .ok_or_else(|| Error::Internal("SMRDB options are not a JSON object".into()))?;
    for (k, val) in over {
        if !map.contains_key(k) {
            let known: Vec<&String> = map.keys().collect();
            return Err(Error::invalid(format!(
                "unknown SMRDB option {k:?} (one of {known:?})"
            )));
        }
        map.insert(k.clone(), val.clone());
    }
    serde_json::from_value(v).map_err(|e| {
        Error::invalid(format!(
            "an SMRDB option has a value of the wrong type: {e}"
        ))
    })
}

/// Maps an SMRDB error of operation `op` to an engine error naming it.
fn smrdb(op: &'static str) -> impl Fn(tegula_smrdb::Error) -> Error {
    move |e| Error::engine(format!("smrdb {op}"), e)
}

impl KvEngine for SmrdbEngine {
    fn name(&self) -> &str {
        self.name
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(key.len() + value.len() + 12);
        b.put(key, value);
        self.db()?.write(b, self.unsynced()).map_err(smrdb("put"))
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db()?.get(key).map_err(smrdb("get"))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.db()?
            .write(b, self.unsynced())
            .map_err(smrdb("delete"))
    }

    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        let mut b = WriteBatch::new();
        for op in ops {
            match op {
                BatchOp::Put(k, v) => b.put(k, v),
                BatchOp::Delete(k) => b.delete(k),
            }
        }
        let wo = if sync {
            WriteOptions {
                sync: true,
                disable_wal: false,
            }
        } else {
            self.unsynced()
        };
        self.db()?.write(b, wo).map_err(smrdb("write"))
    }

    fn scan(
        &self,
        start: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let mut n = 0;
        if limit == 0 {
            return Ok(0);
        }
        for item in self.db()?.scan(start, None).map_err(smrdb("scan"))? {
            let (k, v) = item.map_err(smrdb("scan"))?;
            n += 1;
            if !visit(&k, &v) || n >= limit {
                break;
            }
        }
        Ok(n)
    }

    fn flush(&self) -> Result<()> {
        self.db()?.flush().map_err(smrdb("flush"))
    }

    fn stats_json(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self.db.as_ref()?.stats()).ok()
    }

    fn device_counters(&self) -> Option<DeviceCounters> {
        let s = self.disk.stats();
        Some(DeviceCounters {
            now_ns: self.disk.now(),
            bytes_read: s.bytes_read,
            bytes_written: s.bytes_written,
        })
    }

    fn device_time_ns(&self) -> Option<u64> {
        Some(self.disk.now())
    }

    /// SMRDB's (flush + compaction bytes) / user bytes — the paper's measure, log excluded,
    /// as for RocksDB and LevelDB; the figure with the log is in the engine statistics.
    fn write_amp(&self) -> Option<f64> {
        Some(self.db.as_ref()?.stats().write_amplification_no_log)
    }

    fn compaction_bytes(&self) -> Option<u64> {
        Some(self.db.as_ref()?.stats().compaction_bytes_written)
    }

    fn wait_for_background(&self) -> Result<()> {
        self.db()?
            .wait_for_compactions()
            .map_err(smrdb("waiting for compactions"))
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        if let Some(db) = self.db.take() {
            db.close().map_err(smrdb("close"))?;
        }
        let SmrdbEngine { disk, .. } = *self;
        match Arc::try_unwrap(disk) {
            Ok(d) => d
                .close()
                .map_err(|e| Error::device("closing the disk", e))?,
            Err(d) => drop(d),
        }
        Ok(())
    }
}
