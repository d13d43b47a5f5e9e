//! The reference engine: a `BTreeMap` behind a lock. It checks the harness end to end in
//! tests and, run as `--engine memory`, shows what the harness itself costs per operation.

use crate::error::{Error, Result};
use crate::{BatchOp, KvEngine};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::RwLock;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// A `BTreeMap`-backed [`KvEngine`].
#[derive(Debug, Default)]
pub struct MemoryEngine {
    map: RwLock<Map>,
}

impl MemoryEngine {
    /// An empty engine.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.map.read().map(|m| m.len()).unwrap_or(0)
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn write(&self) -> Result<std::sync::RwLockWriteGuard<'_, Map>> {
        self.map
            .write()
            .map_err(|_| Error::Internal("memory engine lock poisoned".into()))
    }

    fn read(&self) -> Result<std::sync::RwLockReadGuard<'_, Map>> {
        self.map
            .read()
            .map_err(|_| Error::Internal("memory engine lock poisoned".into()))
    }
}

impl KvEngine for MemoryEngine {
    fn name(&self) -> &str {
        "memory"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.write()?.insert(key.to_vec(), value.to_vec());
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.read()?.get(key).cloned())
    }

    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let m = self.read()?;
        let v = m.get(key);
        if let Some(v) = v {
            f(v);
        }
        Ok(v.is_some())
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.write()?.remove(key);
        Ok(())
    }

    fn write_batch(&self, ops: &[BatchOp], _sync: bool) -> Result<()> {
        let mut m = self.write()?;
        for op in ops {
            match op {
                BatchOp::Put(k, v) => {
                    m.insert(k.clone(), v.clone());
                }
                BatchOp::Delete(k) => {
                    m.remove(k);
                }
            }
        }
        Ok(())
    }

    fn scan(
        &self,
        start: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let m = self.read()?;
        let mut n = 0;
        for (k, v) in m.range::<[u8], _>((Bound::Included(start), Bound::Unbounded)) {
            if n >= limit {
                break;
            }
            n += 1;
            if !visit(k, v) {
                break;
            }
        }
        Ok(n)
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn stats_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "keys": self.len() }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_scan_and_batches_behave_like_a_map() {
        let e = MemoryEngine::new();
        e.put(b"b", b"2").expect("put");
        e.put(b"a", b"1").expect("put");
        e.write_batch(
            &[
                BatchOp::Put(b"c".to_vec(), b"3".to_vec()),
                BatchOp::Delete(b"a".to_vec()),
            ],
            true,
        )
        .expect("batch");
        assert_eq!(e.get(b"a").expect("get"), None);
        assert_eq!(e.get(b"b").expect("get"), Some(b"2".to_vec()));
        let mut seen = Vec::new();
        let n = e
            .scan(b"b", 10, &mut |k, _| {
                seen.push(k.to_vec());
                true
            })
            .expect("scan");
        assert_eq!(n, 2);
        assert_eq!(seen, vec![b"b".to_vec(), b"c".to_vec()]);
        let n = e.scan(b"", 1, &mut |_, _| true).expect("scan");
        assert_eq!(n, 1);
        e.delete(b"b").expect("delete");
        assert_eq!(e.len(), 1);
    }
}
