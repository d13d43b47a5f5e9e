//! The engine thread's view of the data: the backend plus an overlay of the writes of the
//! current round. Commands read through the overlay, so a round sees its own writes; at the
//! end of the round the overlay becomes one atomic engine batch (synced under
//! `appendfsync always`), and only then are the round's replies sent. This is the group
//! commit: every write of every client in a round shares one engine write and one sync.
//!
//! The store also keeps, in memory, the set of keys stored as several records (field-record
//! hashes and sorted sets: a mirror of the engine's `'b'` registry, see [`crate::keys`]):
//! every other key can be overwritten by a string without reading it first.

use crate::backend::{Backend, Op, OP_OVERHEAD};
use crate::error::{BackendError, BackendResult};
use crate::keys::{self, Record};
use std::collections::{HashMap, HashSet};

/// Key-value pairs in key order.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The backend and the current round's writes.
pub struct Store {
    backend: Box<dyn Backend>,
    /// This round's writes: a hash map, since reads look keys up far more often than scans
    /// walk them in order (a scan sorts the part of it in its range).
    overlay: HashMap<Vec<u8>, Option<Vec<u8>>>,
    overlay_bytes: usize,
    /// Writes were handed to the engine without a sync since the last sync.
    unsynced: bool,
    /// Keys found expired and deleted.
    pub expired_keys: u64,
    /// Puts and deletes so far (a command wrote if it changed).
    writes: u64,
    /// The names in the engine's `'b'` registry, this round's writes included: the keys
    /// stored as several records. `None` while unknown (after a failed commit, until
    /// reloaded): every key may then be one.
    composite: Option<HashSet<Vec<u8>>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend.name())
            .field("pending", &self.overlay.len())
            .finish()
    }
}

/// The current time in Unix milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Store {
    /// A store over `backend`: checks the data's format version, upgrades a database of
    /// format 1 (every hash as field records, no registry: each is registered) or 2 (the same
    /// records; only the version changes), and loads the registry of composite keys.
    pub fn open(backend: Box<dyn Backend>) -> BackendResult<Self> {
        let mut s = Store {
            backend,
            overlay: HashMap::new(),
            overlay_bytes: 0,
            unsynced: false,
            expired_keys: 0,
            writes: 0,
            composite: Some(HashSet::new()),
        };
        let version = match s.backend.get(keys::FORMAT_KEY)? {
            Some(v) => <[u8; 4]>::try_from(v.as_slice())
                .map(u32::from_le_bytes)
                .map_err(|_| BackendError::Format("the format record is damaged".into()))?,
            // No record: a database of format 1, or an empty one.
            None => 1,
        };
        if version > keys::FORMAT_VERSION {
            return Err(BackendError::Format(format!(
                "the data is in format {version}; this server reads formats 1 to {}",
                keys::FORMAT_VERSION
            )));
        }
        if version < keys::FORMAT_VERSION {
            s.upgrade()?;
        }
        s.load_registry()?;
        Ok(s)
    }

    /// Format 1 or 2 to 3: registers every field-record hash (all hashes are field records in
    /// format 1; format 2 registered them already, and re-registering one changes nothing),
    /// then writes the version, last, so that an upgrade cut short is done again at the next
    /// start.
    fn upgrade(&mut self) -> BackendResult<()> {
        let end = [keys::KEY + 1];
        let mut from = vec![keys::KEY];
        loop {
            let part = self.backend.scan(&from, Some(&end), 4096)?;
            let Some((last, _)) = part.last() else { break };
            from = last.clone();
            from.push(0);
            for (ek, v) in &part {
                let (Some(k), Some(rec)) = (keys::user_key(ek), Record::decode(v)) else {
                    continue;
                };
                if rec.kind == keys::TYPE_HASH {
                    self.put(keys::registry(k), Vec::new())?;
                }
            }
        }
        self.put(
            keys::FORMAT_KEY.to_vec(),
            keys::FORMAT_VERSION.to_le_bytes().to_vec(),
        )?;
        self.commit(true)
    }

    /// Reads the registry of composite keys into memory.
    fn load_registry(&mut self) -> BackendResult<()> {
        self.composite = None;
        let mut set = HashSet::new();
        let end = [keys::REGISTRY + 1];
        let mut from = vec![keys::REGISTRY];
        loop {
            let part = self.scan(&from, Some(&end), 4096)?;
            let Some((last, _)) = part.last() else { break };
            from = last.clone();
            from.push(0);
            for (ek, _) in part {
                if let Some(k) = keys::registry_user_key(&ek) {
                    set.insert(k.to_vec());
                }
            }
        }
        self.composite = Some(set);
        Ok(())
    }

    /// Whether `k` may be stored as several records (a string written over it must then
    /// delete them): false proves it is not.
    pub fn may_be_composite(&self, k: &[u8]) -> bool {
        self.composite.as_ref().is_none_or(|s| s.contains(k))
    }

    /// How many keys are stored as several records (`None` while unknown).
    pub fn composite_count(&self) -> Option<usize> {
        self.composite.as_ref().map(HashSet::len)
    }

    /// Keeps the in-memory registry in step with a write of engine key `k`.
    fn track(&mut self, k: &[u8], present: bool) {
        if let (Some(set), Some(name)) = (self.composite.as_mut(), keys::registry_user_key(k)) {
            if present {
                set.insert(name.to_vec());
            } else {
                set.remove(name);
            }
        }
    }

    /// The backend.
    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// Gives the backend back (pending writes must have been committed).
    pub fn into_backend(self) -> Box<dyn Backend> {
        self.backend
    }

    /// The value of engine key `k`, this round's writes included.
    pub fn get(&self, k: &[u8]) -> BackendResult<Option<Vec<u8>>> {
        if let Some(v) = self.overlay.get(k) {
            return Ok(v.clone());
        }
        self.backend.get(k)
    }

    /// Stores `v` under engine key `k` in this round. A round whose writes outgrow the
    /// engine's batch limit hands them to the engine early (unsynced; the round's commit
    /// syncs them).
    pub fn put(&mut self, k: Vec<u8>, v: Vec<u8>) -> BackendResult<()> {
        self.track(&k, true);
        self.writes += 1;
        self.overlay_bytes += k.len() + v.len() + OP_OVERHEAD;
        self.overlay.insert(k, Some(v));
        self.spill()
    }

    /// Deletes engine key `k` in this round.
    pub fn delete(&mut self, k: Vec<u8>) -> BackendResult<()> {
        self.track(&k, false);
        self.writes += 1;
        self.overlay_bytes += k.len() + OP_OVERHEAD;
        self.overlay.insert(k, None);
        self.spill()
    }

    fn spill(&mut self) -> BackendResult<()> {
        if self.overlay_bytes >= self.backend.max_batch() {
            self.commit(false)?;
        }
        Ok(())
    }

    /// Puts and deletes made through this store so far.
    pub fn write_count(&self) -> u64 {
        self.writes
    }

    /// Whether this round has writes not yet handed to the engine.
    pub fn is_dirty(&self) -> bool {
        !self.overlay.is_empty()
    }

    /// Whether writes handed to the engine still wait for a sync.
    pub fn needs_sync(&self) -> bool {
        self.unsynced || self.is_dirty()
    }

    /// Hands this round's writes to the engine as one atomic batch; with `sync`, everything
    /// written so far is durable when it returns. On failure the round's writes are dropped
    /// (and the in-memory registry, which had followed them, is read again from the engine).
    pub fn commit(&mut self, sync: bool) -> BackendResult<()> {
        let overlay = std::mem::take(&mut self.overlay);
        self.overlay_bytes = 0;
        if overlay.is_empty() {
            if sync && self.unsynced {
                self.backend.sync()?;
                self.unsynced = false;
            }
            return Ok(());
        }
        let ops: Vec<Op> = overlay.into_iter().collect();
        if let Err(e) = self.backend.write(&ops, sync) {
            // Until the registry is read again every key counts as possibly composite.
            let _ = self.load_registry();
            return Err(e);
        }
        self.unsynced = !sync;
        Ok(())
    }

    /// Flushes the engine's memory to its persistent structures and syncs (`SAVE`).
    pub fn save(&mut self) -> BackendResult<()> {
        self.commit(false)?;
        self.backend.flush()?;
        self.unsynced = false;
        Ok(())
    }

    /// Up to `limit` pairs with engine keys in `[start, end)`, this round's writes included.
    pub fn scan(&self, start: &[u8], end: Option<&[u8]>, limit: usize) -> BackendResult<Pairs> {
        let mut out = Vec::new();
        // This round's writes in the range, in key order.
        let mut pending: Vec<(&Vec<u8>, &Option<Vec<u8>>)> = self
            .overlay
            .iter()
            .filter(|(k, _)| k.as_slice() >= start && end.is_none_or(|e| k.as_slice() < e))
            .collect();
        pending.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut pending = pending.into_iter().peekable();
        let mut from = start.to_vec();
        while out.len() < limit {
            let want = limit - out.len();
            let chunk = self.backend.scan(&from, end, want)?;
            let full = chunk.len() == want;
            // Pending writes that belong to this chunk's part of the range: up to the last
            // key the engine returned (inclusive) when it filled the chunk, else all.
            let last = chunk.last().map(|(k, _)| k.clone());
            let in_chunk = |k: &[u8]| match (&last, full) {
                (Some(l), true) => k <= l.as_slice(),
                _ => true,
            };
            let mut it = chunk.into_iter().peekable();
            loop {
                let ov = pending.peek().filter(|(k, _)| in_chunk(k));
                let take_ov = match (it.peek(), ov) {
                    (None, None) => break,
                    (Some(_), None) => false,
                    (None, Some(_)) => true,
                    (Some((bk, _)), Some((ok, _))) => ok.as_slice() <= bk.as_slice(),
                };
                if take_ov {
                    let Some((ok, ov_v)) = pending.next() else {
                        break;
                    };
                    if it.peek().is_some_and(|(bk, _)| bk == ok) {
                        it.next();
                    }
                    if let Some(v) = ov_v {
                        out.push((ok.clone(), v.clone()));
                    }
                } else if let Some(kv) = it.next() {
                    out.push(kv);
                }
            }
            if !full {
                break;
            }
            match last {
                Some(mut l) => {
                    l.push(0);
                    from = l;
                }
                None => break,
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    /// The record of Redis key `k`, or `None` if there is none or it has expired (an
    /// expired key is deleted, with its fields).
    pub fn load(&mut self, k: &[u8], now: u64) -> BackendResult<Option<Record>> {
        let ek = keys::key(k);
        let Some(v) = self.get(&ek)? else {
            return Ok(None);
        };
        let rec = match Record::decode_owned(v) {
            Ok(rec) => rec,
            // Not a record this server wrote (e.g. the sync marker's namespace is elsewhere,
            // so this is damage): treat as a string holding the raw bytes.
            Err(v) => return Ok(Some(Record::string(v, None))),
        };
        if rec.expired(now) {
            self.remove(k, &rec)?;
            self.expired_keys += 1;
            return Ok(None);
        }
        Ok(Some(rec))
    }

    /// Deletes Redis key `k` whose record is `rec` (a field-record hash's fields, a sorted
    /// set's member and index records, and the registry record too).
    pub fn remove(&mut self, k: &[u8], rec: &Record) -> BackendResult<()> {
        let prefixes = match rec.kind {
            keys::TYPE_HASH => vec![keys::field_prefix(k)],
            keys::TYPE_ZSET => vec![keys::member_prefix(k), keys::score_prefix(k)],
            _ => Vec::new(),
        };
        for prefix in &prefixes {
            self.delete_prefix(prefix)?;
        }
        if rec.has_records() {
            self.delete(keys::registry(k))?;
        }
        self.delete(keys::key(k))
    }

    /// Deletes every engine key starting with `prefix`, a chunk at a time.
    fn delete_prefix(&mut self, prefix: &[u8]) -> BackendResult<()> {
        let end = keys::prefix_end(prefix);
        let mut from = prefix.to_vec();
        loop {
            let part = self.scan(&from, end.as_deref(), 4096)?;
            let Some((last, _)) = part.last() else {
                return Ok(());
            };
            from = last.clone();
            from.push(0);
            for (ek, _) in part {
                self.delete(ek)?;
            }
        }
    }

    /// Up to `limit` (engine field key, value) pairs of hash `k`.
    pub fn fields(&self, k: &[u8], limit: usize) -> BackendResult<Pairs> {
        let prefix = keys::field_prefix(k);
        let end = keys::prefix_end(&prefix);
        self.scan(&prefix, end.as_deref(), limit)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::backend::SmrdbBackend;
    use std::sync::Arc;

    fn store() -> Store {
        let mut cfg = tegula_device::profile("hm-smr").unwrap();
        cfg.zones.zone_size = 1 << 20;
        cfg.capacity = 64 << 20;
        let dev = Arc::new(tegula_device::Disk::in_memory(cfg).unwrap());
        let db = tegula_smrdb::Db::create(dev, Default::default(), Default::default()).unwrap();
        Store::open(Box::new(SmrdbBackend::new(db))).unwrap()
    }

    #[test]
    fn scans_merge_the_round_with_the_engine_in_order() {
        let mut s = store();
        for k in ["a", "c", "e", "g"] {
            s.put(k.into(), b"old".to_vec()).unwrap();
        }
        s.commit(true).unwrap();
        s.put("b".into(), b"new".to_vec()).unwrap();
        s.put("c".into(), b"new".to_vec()).unwrap();
        s.delete("e".into()).unwrap();
        s.put("h".into(), b"new".to_vec()).unwrap();
        // From "a": the server's own records (the format version) sort before.
        let all = s.scan(b"a", None, usize::MAX).unwrap();
        let keys: Vec<_> = all.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(
            keys,
            vec![
                (b"a".to_vec(), b"old".to_vec()),
                (b"b".to_vec(), b"new".to_vec()),
                (b"c".to_vec(), b"new".to_vec()),
                (b"g".to_vec(), b"old".to_vec()),
                (b"h".to_vec(), b"new".to_vec()),
            ]
        );
        // Every limit and start gives the same order, in pieces.
        for limit in 1..6 {
            let mut got = Vec::new();
            let mut from = b"a".to_vec();
            loop {
                let part = s.scan(&from, Some(b"z"), limit).unwrap();
                if part.is_empty() {
                    break;
                }
                from = part.last().unwrap().0.clone();
                from.push(0);
                got.extend(part);
            }
            assert_eq!(got, all, "limit {limit}");
        }
        s.commit(false).unwrap();
        assert_eq!(s.scan(b"a", None, 100).unwrap(), all);
    }
}
