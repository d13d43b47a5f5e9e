//! RocksDB and LevelDB behind the server, through tegula-kv's engine adapter (its
//! [`KvEngine`] over the engines' C APIs), with the same memory budget tegula-kv gives every
//! engine ([`EngineOptions`]' defaults: a 256 MiB write buffer, an 8 MiB block cache, 10 Bloom
//! bits per key, no compression).

use super::{Backend, Op, SYNC_KEY};
use crate::error::{BackendError, BackendResult};
use std::path::Path;
use tegula_kv::{BatchOp, EngineFactory, EngineKind, EngineOptions, KvEngine, Target};

/// Which C-API engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapiEngine {
    /// RocksDB (Debian librocksdb-dev).
    Rocksdb,
    /// LevelDB (Debian libleveldb-dev).
    Leveldb,
}

impl CapiEngine {
    fn kind(self) -> EngineKind {
        match self {
            CapiEngine::Rocksdb => EngineKind::Rocksdb,
            CapiEngine::Leveldb => EngineKind::Leveldb,
        }
    }

    fn name(self) -> &'static str {
        match self {
            CapiEngine::Rocksdb => "rocksdb",
            CapiEngine::Leveldb => "leveldb",
        }
    }
}

/// RocksDB or LevelDB in a directory, as a [`Backend`].
pub struct CapiBackend {
    engine: Box<dyn KvEngine>,
    name: &'static str,
    // Keeps the factory (and any temporary directory it owns) alive as long as the engine.
    _factory: EngineFactory,
}

impl std::fmt::Debug for CapiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapiBackend")
            .field("engine", &self.name)
            .finish()
    }
}

impl CapiBackend {
    /// Opens (creating if missing) the database of `engine` in directory `dir`.
    pub fn open(engine: CapiEngine, dir: &Path) -> BackendResult<Self> {
        let err = |e: &dyn std::fmt::Display| BackendError::Engine {
            engine: engine.name().into(),
            message: e.to_string(),
        };
        let factory = EngineFactory::new(
            engine.kind(),
            Target::Dir(Some(dir.to_path_buf())),
            EngineOptions::default(),
        )
        .map_err(|e| err(&e))?;
        let kv = factory.open(false).map_err(|e| err(&e))?;
        Ok(CapiBackend {
            engine: kv,
            name: engine.name(),
            _factory: factory,
        })
    }

    fn err(&self, e: impl std::fmt::Display) -> BackendError {
        BackendError::Engine {
            engine: self.name.into(),
            message: e.to_string(),
        }
    }
}

impl Backend for CapiBackend {
    fn name(&self) -> &str {
        self.name
    }

    fn get(&self, key: &[u8]) -> BackendResult<Option<Vec<u8>>> {
        self.engine.get(key).map_err(|e| self.err(e))
    }

    fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> BackendResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.engine
            .scan(start, limit, &mut |k, v| {
                if end.is_some_and(|e| k >= e) {
                    return false;
                }
                out.push((k.to_vec(), v.to_vec()));
                true
            })
            .map_err(|e| self.err(e))?;
        Ok(out)
    }

    fn write(&self, ops: &[Op], sync: bool) -> BackendResult<()> {
        let batch: Vec<BatchOp> = ops
            .iter()
            .map(|(k, v)| match v {
                Some(v) => BatchOp::Put(k.clone(), v.clone()),
                None => BatchOp::Delete(k.clone()),
            })
            .collect();
        self.engine
            .write_batch(&batch, sync)
            .map_err(|e| self.err(e))
    }

    fn sync(&self) -> BackendResult<()> {
        self.write(&[(SYNC_KEY.to_vec(), Some(Vec::new()))], true)
    }

    fn flush(&self) -> BackendResult<()> {
        self.engine.flush().map_err(|e| self.err(e))?;
        self.sync()
    }

    fn stats(&self) -> Vec<(String, String)> {
        let mut v = vec![("engine".to_string(), self.name.to_string())];
        if let Some(serde_json::Value::Object(m)) = self.engine.stats_json() {
            for (k, val) in m {
                v.push((k.replace(['-', '.'], "_"), val.to_string()));
            }
        }
        v
    }

    fn max_key(&self) -> usize {
        1 << 20
    }

    fn max_batch(&self) -> usize {
        64 << 20
    }

    fn close(self: Box<Self>) -> BackendResult<()> {
        let name = self.name;
        self.engine.close().map_err(|e| BackendError::Engine {
            engine: name.into(),
            message: e.to_string(),
        })
    }
}
