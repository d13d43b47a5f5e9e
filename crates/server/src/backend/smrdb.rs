//! SMRDB behind the server: an SMRDB [`Db`] on any zoned device (an emulated drive's image,
//! a banded plain file or block device).

use super::{Backend, Op, SYNC_KEY};
use crate::error::{BackendError, BackendResult};
use tegula_smrdb::{Db, WriteBatch, WriteOptions};

/// SMRDB as a [`Backend`].
#[derive(Debug)]
pub struct SmrdbBackend {
    db: Db,
    max_batch: usize,
}

impl SmrdbBackend {
    /// Serves `db`. A batch may use up to an eighth of a band (SMRDB refuses batches of more
    /// than a quarter band; the margin covers per-record overheads).
    pub fn new(db: Db) -> Self {
        let info = db.device().info();
        let zone = info.zone_sectors * u64::from(info.sector_size);
        SmrdbBackend {
            db,
            max_batch: (zone / 8).clamp(4 << 10, 64 << 20) as usize,
        }
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }
}

impl Backend for SmrdbBackend {
    fn name(&self) -> &str {
        "smrdb"
    }

    fn get(&self, key: &[u8]) -> BackendResult<Option<Vec<u8>>> {
        Ok(self.db.get(key)?)
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
        for kv in self.db.scan(start, end)? {
            out.push(kv?);
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    fn write(&self, ops: &[Op], sync: bool) -> BackendResult<()> {
        let bytes: usize = ops
            .iter()
            .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len) + 16)
            .sum();
        let mut b = WriteBatch::with_capacity(bytes);
        for (k, v) in ops {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        let wo = WriteOptions {
            sync,
            ..WriteOptions::default()
        };
        Ok(self.db.write(b, wo)?)
    }

    fn sync(&self) -> BackendResult<()> {
        self.write(&[(SYNC_KEY.to_vec(), Some(Vec::new()))], true)
    }

    fn flush(&self) -> BackendResult<()> {
        self.db.flush()?;
        self.sync()
    }

    fn stats(&self) -> Vec<(String, String)> {
        let s = self.db.stats();
        let mut v = vec![
            ("engine".into(), "smrdb".into()),
            ("mode".into(), s.mode.clone()),
            ("user_bytes".into(), s.user_bytes.to_string()),
            ("puts".into(), s.puts.to_string()),
            ("deletes".into(), s.deletes.to_string()),
            ("gets".into(), s.gets.to_string()),
            ("log_bytes".into(), s.log_bytes.to_string()),
            ("log_tail_bytes".into(), s.log_tail_bytes.to_string()),
            ("flush_bytes".into(), s.flush_bytes.to_string()),
            (
                "compaction_bytes_written".into(),
                s.compaction_bytes_written.to_string(),
            ),
            (
                "write_amplification".into(),
                format!("{:.3}", s.write_amplification),
            ),
            ("flushes".into(), s.flushes.to_string()),
            ("compactions".into(), s.compactions.to_string()),
            ("trivial_moves".into(), s.trivial_moves.to_string()),
            ("free_bands".into(), s.free_bands.to_string()),
            ("log_bands".into(), s.log_bands.to_string()),
            ("memtable_bytes".into(), s.memtable_bytes.to_string()),
            (
                "memtable_index_bytes".into(),
                s.memtable_index_bytes.to_string(),
            ),
            ("stalls".into(), s.stalls.to_string()),
            ("syncs".into(), s.syncs.to_string()),
            ("grouped_syncs".into(), s.grouped_syncs.to_string()),
            ("write_groups".into(), s.write_groups.to_string()),
            (
                "flushes_beside_compaction".into(),
                s.flushes_beside_compaction.to_string(),
            ),
            ("grouped_writes".into(), s.grouped_writes.to_string()),
            (
                "avg_bands_probed_per_get".into(),
                format!("{:.3}", s.avg_bands_probed_per_get),
            ),
        ];
        for (i, n) in s.bands_per_level.iter().enumerate() {
            v.push((format!("bands_l{i}"), n.to_string()));
        }
        v
    }

    fn max_key(&self) -> usize {
        tegula_smrdb::db::MAX_KEY_LEN
    }

    fn max_batch(&self) -> usize {
        self.max_batch
    }

    fn close(self: Box<Self>) -> BackendResult<()> {
        self.db.close().map_err(BackendError::from)
    }
}
