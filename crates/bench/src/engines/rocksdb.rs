//! RocksDB through its C API, configured to the shared memory budget: write buffer = band
//! size (256 MiB), 8 MiB LRU block cache, 10 bits/key full Bloom filters, no compression.
//! Everything else stays at RocksDB's defaults (which are also db_bench's for these flags).

use super::rocksdb_ffi as ffi;
use crate::engine::{BatchOp, EngineOptions, KvEngine};
use anyhow::{bail, Context, Result};
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::path::Path;
use std::ptr;

/// Takes ownership of a C error string, if any, and turns it into an error.
fn check(err: *mut c_char, what: &str) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: RocksDB sets `err` to a malloc()ed NUL-terminated string; we free it once.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    unsafe { ffi::rocksdb_free(err.cast()) };
    bail!("rocksdb {what}: {msg}")
}

/// Takes ownership of a malloc()ed C string returned by RocksDB.
fn take_string(p: *mut c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is a NUL-terminated string allocated by RocksDB; freed exactly once here.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    unsafe { ffi::rocksdb_free(p.cast()) };
    Some(s)
}

/// An open RocksDB database.
pub struct RocksEngine {
    db: *mut ffi::rocksdb_t,
    opts: *mut ffi::rocksdb_options_t,
    cache: *mut ffi::rocksdb_cache_t,
    wo: *mut ffi::rocksdb_writeoptions_t,
    wo_sync: *mut ffi::rocksdb_writeoptions_t,
    ro: *mut ffi::rocksdb_readoptions_t,
    statistics: bool,
}

// SAFETY: a RocksDB `DB*` is safe for concurrent use from several threads; the option objects
// are only read after `open` and are destroyed in `Drop` once no thread uses the engine.
unsafe impl Send for RocksEngine {}
unsafe impl Sync for RocksEngine {}

impl RocksEngine {
    /// Opens (creating) the database in `dir`; with `fresh`, destroys what was there first.
    pub fn open(dir: &Path, o: &EngineOptions, fresh: bool) -> Result<Self> {
        let name = CString::new(dir.to_string_lossy().as_bytes())
            .context("database path contains a NUL byte")?;
        // SAFETY: plain constructor/setter calls on objects we own; ownership of the filter
        // policy passes to the table options, the table options are copied by the options.
        unsafe {
            let opts = ffi::rocksdb_options_create();
            ffi::rocksdb_options_set_create_if_missing(opts, 1);
            ffi::rocksdb_options_set_write_buffer_size(opts, o.write_buffer_size as usize);
            ffi::rocksdb_options_set_compression(opts, ffi::ROCKSDB_NO_COMPRESSION);
            if let Some(t) = o.l0_compaction_trigger {
                ffi::rocksdb_options_set_level0_file_num_compaction_trigger(opts, t as i32);
            }
            if let Some(t) = o.l0_slowdown {
                ffi::rocksdb_options_set_level0_slowdown_writes_trigger(opts, t as i32);
            }
            if let Some(t) = o.l0_stop {
                ffi::rocksdb_options_set_level0_stop_writes_trigger(opts, t as i32);
            }
            let table = ffi::rocksdb_block_based_options_create();
            let cache = ffi::rocksdb_cache_create_lru(o.cache_size as usize);
            ffi::rocksdb_block_based_options_set_block_cache(table, cache);
            if o.bloom_bits > 0 {
                ffi::rocksdb_block_based_options_set_filter_policy(
                    table,
                    ffi::rocksdb_filterpolicy_create_bloom_full(o.bloom_bits as f64),
                );
            }
            ffi::rocksdb_options_set_block_based_table_factory(opts, table);
            ffi::rocksdb_block_based_options_destroy(table);
            if o.statistics {
                ffi::rocksdb_options_enable_statistics(opts);
            }
            let mut engine = RocksEngine {
                db: ptr::null_mut(),
                opts,
                cache,
                wo: ffi::rocksdb_writeoptions_create(),
                wo_sync: ffi::rocksdb_writeoptions_create(),
                ro: ffi::rocksdb_readoptions_create(),
                statistics: o.statistics,
            };
            ffi::rocksdb_writeoptions_set_sync(engine.wo_sync, 1);
            if o.disable_wal {
                // Unsynced writes only: RocksDB refuses a synced write without the WAL.
                ffi::rocksdb_writeoptions_disable_WAL(engine.wo, 1);
            }
            let mut err = ptr::null_mut();
            if fresh {
                ffi::rocksdb_destroy_db(opts, name.as_ptr(), &mut err);
                check(err, "destroy")?;
            }
            let mut err = ptr::null_mut();
            engine.db = ffi::rocksdb_open(opts, name.as_ptr(), &mut err);
            check(err, "open")?;
            if engine.db.is_null() {
                bail!("rocksdb open of {} failed", dir.display());
            }
            Ok(engine)
        }
    }

    fn property(&self, name: &str) -> Option<String> {
        let c = CString::new(name).ok()?;
        // SAFETY: `db` is open; the returned string is ours to free.
        take_string(unsafe { ffi::rocksdb_property_value(self.db, c.as_ptr()) })
    }

    /// RocksDB's statistics counters (only with `statistics` on).
    fn tickers(&self) -> Option<std::collections::HashMap<String, u64>> {
        if !self.statistics {
            return None;
        }
        // SAFETY: options with statistics enabled; the string is ours to free.
        let s = take_string(unsafe { ffi::rocksdb_options_statistics_get_string(self.opts) })?;
        Some(
            s.lines()
                .filter_map(|l| {
                    let (name, rest) = l.split_once(" COUNT : ")?;
                    Some((name.trim().to_string(), rest.trim().parse().ok()?))
                })
                .collect(),
        )
    }
}

impl KvEngine for RocksEngine {
    fn name(&self) -> &str {
        "rocksdb"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: valid slices for the duration of the call; `db` is open.
        unsafe {
            ffi::rocksdb_put(
                self.db,
                self.wo,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            )
        };
        check(err, "put")
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut err = ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: as in `put`; the returned buffer is malloc()ed and freed below.
        let p = unsafe {
            ffi::rocksdb_get(
                self.db,
                self.ro,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            )
        };
        check(err, "get")?;
        if p.is_null() {
            return Ok(None);
        }
        // SAFETY: `p` points at `len` bytes owned by us.
        let v = unsafe { std::slice::from_raw_parts(p as *const u8, len) }.to_vec();
        unsafe { ffi::rocksdb_free(p.cast()) };
        Ok(Some(v))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: as in `put`.
        unsafe { ffi::rocksdb_delete(self.db, self.wo, key.as_ptr().cast(), key.len(), &mut err) };
        check(err, "delete")
    }

    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        // SAFETY: the batch is created, filled from valid slices, written and destroyed here.
        unsafe {
            let b = ffi::rocksdb_writebatch_create();
            for op in ops {
                match op {
                    BatchOp::Put(k, v) => ffi::rocksdb_writebatch_put(
                        b,
                        k.as_ptr().cast(),
                        k.len(),
                        v.as_ptr().cast(),
                        v.len(),
                    ),
                    BatchOp::Delete(k) => {
                        ffi::rocksdb_writebatch_delete(b, k.as_ptr().cast(), k.len())
                    }
                }
            }
            let mut err = ptr::null_mut();
            let wo = if sync { self.wo_sync } else { self.wo };
            ffi::rocksdb_write(self.db, wo, b, &mut err);
            ffi::rocksdb_writebatch_destroy(b);
            check(err, "write")
        }
    }

    fn scan(
        &self,
        start: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let mut n = 0;
        // SAFETY: the iterator lives only in this block; key/value slices are valid until the
        // next move of the iterator, and `visit` does not keep them.
        unsafe {
            let it = ffi::rocksdb_create_iterator(self.db, self.ro);
            ffi::rocksdb_iter_seek(it, start.as_ptr().cast(), start.len());
            while n < limit && ffi::rocksdb_iter_valid(it) != 0 {
                let (mut kl, mut vl) = (0usize, 0usize);
                let k = ffi::rocksdb_iter_key(it, &mut kl);
                let v = ffi::rocksdb_iter_value(it, &mut vl);
                n += 1;
                let go = visit(
                    std::slice::from_raw_parts(k as *const u8, kl),
                    std::slice::from_raw_parts(v as *const u8, vl),
                );
                if !go {
                    break;
                }
                ffi::rocksdb_iter_next(it);
            }
            let mut err = ptr::null_mut();
            ffi::rocksdb_iter_get_error(it, &mut err);
            ffi::rocksdb_iter_destroy(it);
            check(err, "iterator")?;
        }
        Ok(n)
    }

    fn flush(&self) -> Result<()> {
        // SAFETY: flush options created and destroyed here.
        unsafe {
            let fo = ffi::rocksdb_flushoptions_create();
            ffi::rocksdb_flushoptions_set_wait(fo, 1);
            let mut err = ptr::null_mut();
            ffi::rocksdb_flush(self.db, fo, &mut err);
            ffi::rocksdb_flushoptions_destroy(fo);
            check(err, "flush")
        }
    }

    fn stats_json(&self) -> Option<serde_json::Value> {
        let mut m = serde_json::Map::new();
        for p in [
            "rocksdb.num-files-at-level0",
            "rocksdb.num-files-at-level1",
            "rocksdb.num-files-at-level2",
            "rocksdb.num-files-at-level3",
            "rocksdb.estimate-num-keys",
            "rocksdb.total-sst-files-size",
        ] {
            if let Some(v) = self.property(p) {
                let v = v.trim();
                m.insert(
                    p.trim_start_matches("rocksdb.").to_string(),
                    v.parse::<u64>()
                        .map(serde_json::Value::from)
                        .unwrap_or_else(|_| v.into()),
                );
            }
        }
        if let Some(t) = self.tickers() {
            for k in [
                "rocksdb.bytes.written",
                "rocksdb.wal.bytes",
                "rocksdb.flush.write.bytes",
                "rocksdb.compact.write.bytes",
                "rocksdb.compact.read.bytes",
                "rocksdb.stall.micros",
            ] {
                if let Some(v) = t.get(k) {
                    m.insert(k.trim_start_matches("rocksdb.").to_string(), (*v).into());
                }
            }
        }
        Some(serde_json::Value::Object(m))
    }

    /// (flush + compaction bytes written) / user bytes written, from RocksDB's statistics;
    /// the WAL is not counted (as in RocksDB's own W-Amp column).
    fn write_amp(&self) -> Option<f64> {
        let t = self.tickers()?;
        let user = *t.get("rocksdb.bytes.written")?;
        (user > 0).then(|| {
            (t.get("rocksdb.flush.write.bytes").copied().unwrap_or(0)
                + t.get("rocksdb.compact.write.bytes").copied().unwrap_or(0)) as f64
                / user as f64
        })
    }

    fn compaction_bytes(&self) -> Option<u64> {
        self.tickers()?.get("rocksdb.compact.write.bytes").copied()
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl Drop for RocksEngine {
    fn drop(&mut self) {
        // SAFETY: every pointer was created in `open` and is destroyed exactly once, the
        // database first (it holds references to the cache).
        unsafe {
            if !self.db.is_null() {
                ffi::rocksdb_close(self.db);
            }
            ffi::rocksdb_writeoptions_destroy(self.wo);
            ffi::rocksdb_writeoptions_destroy(self.wo_sync);
            ffi::rocksdb_readoptions_destroy(self.ro);
            ffi::rocksdb_options_destroy(self.opts);
            ffi::rocksdb_cache_destroy(self.cache);
        }
    }
}
