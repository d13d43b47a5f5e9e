//! LevelDB through its C API, configured to the shared memory budget: write buffer = band
//! size (256 MiB), 8 MiB LRU block cache, 10 bits/key Bloom filter, no compression.

use super::leveldb_ffi as ffi;
use crate::engine::{BatchOp, EngineOptions, KvEngine};
use anyhow::{bail, Context, Result};
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

fn check(err: *mut c_char, what: &str) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB sets `err` to a malloc()ed NUL-terminated string; we free it once.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    unsafe { ffi::leveldb_free(err.cast()) };
    bail!("leveldb {what}: {msg}")
}

/// An open LevelDB database.
pub struct LevelEngine {
    db: *mut ffi::leveldb_t,
    opts: *mut ffi::leveldb_options_t,
    cache: *mut ffi::leveldb_cache_t,
    filter: *mut ffi::leveldb_filterpolicy_t,
    wo: *mut ffi::leveldb_writeoptions_t,
    wo_sync: *mut ffi::leveldb_writeoptions_t,
    ro: *mut ffi::leveldb_readoptions_t,
    user_bytes: AtomicU64,
}

// SAFETY: a LevelDB `DB*` is safe for concurrent use from several threads; the option objects
// are only read after `open` and are destroyed in `Drop` once no thread uses the engine.
unsafe impl Send for LevelEngine {}
unsafe impl Sync for LevelEngine {}

impl LevelEngine {
    /// Opens (creating) the database in `dir`; with `fresh`, destroys what was there first.
    pub fn open(dir: &Path, o: &EngineOptions, fresh: bool) -> Result<Self> {
        let name = CString::new(dir.to_string_lossy().as_bytes())
            .context("database path contains a NUL byte")?;
        // SAFETY: constructor/setter calls on objects we own; LevelDB's options keep raw
        // pointers to the cache and filter, which we destroy only after closing the database.
        unsafe {
            let opts = ffi::leveldb_options_create();
            ffi::leveldb_options_set_create_if_missing(opts, 1);
            ffi::leveldb_options_set_write_buffer_size(opts, o.write_buffer_size as usize);
            ffi::leveldb_options_set_compression(opts, ffi::LEVELDB_NO_COMPRESSION);
            let cache = ffi::leveldb_cache_create_lru(o.cache_size as usize);
            ffi::leveldb_options_set_cache(opts, cache);
            let filter = if o.bloom_bits > 0 {
                let f = ffi::leveldb_filterpolicy_create_bloom(o.bloom_bits as i32);
                ffi::leveldb_options_set_filter_policy(opts, f);
                f
            } else {
                ptr::null_mut()
            };
            let mut engine = LevelEngine {
                db: ptr::null_mut(),
                opts,
                cache,
                filter,
                wo: ffi::leveldb_writeoptions_create(),
                wo_sync: ffi::leveldb_writeoptions_create(),
                ro: ffi::leveldb_readoptions_create(),
                user_bytes: AtomicU64::new(0),
            };
            ffi::leveldb_writeoptions_set_sync(engine.wo_sync, 1);
            if fresh {
                let mut err = ptr::null_mut();
                ffi::leveldb_destroy_db(opts, name.as_ptr(), &mut err);
                check(err, "destroy")?;
            }
            let mut err = ptr::null_mut();
            engine.db = ffi::leveldb_open(opts, name.as_ptr(), &mut err);
            check(err, "open")?;
            if engine.db.is_null() {
                bail!("leveldb open of {} failed", dir.display());
            }
            Ok(engine)
        }
    }

    fn property(&self, name: &str) -> Option<String> {
        let c = CString::new(name).ok()?;
        // SAFETY: `db` is open; the returned string is malloc()ed and ours to free.
        unsafe {
            let p = ffi::leveldb_property_value(self.db, c.as_ptr());
            if p.is_null() {
                return None;
            }
            let s = CStr::from_ptr(p).to_string_lossy().into_owned();
            ffi::leveldb_free(p.cast());
            Some(s)
        }
    }

    /// Per level (files, MB written) from `leveldb.stats`; the written column counts memtable
    /// flushes ("memtable compactions") and compactions alike.
    fn level_stats(&self) -> Option<Vec<(u32, u64, f64)>> {
        let s = self.property("leveldb.stats")?;
        Some(
            s.lines()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    if f.len() != 6 {
                        return None;
                    }
                    Some((f[0].parse().ok()?, f[1].parse().ok()?, f[5].parse().ok()?))
                })
                .collect(),
        )
    }
}

impl KvEngine for LevelEngine {
    fn name(&self) -> &str {
        "leveldb"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: valid slices for the duration of the call; `db` is open.
        unsafe {
            ffi::leveldb_put(
                self.db,
                self.wo,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            )
        };
        self.user_bytes
            .fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        check(err, "put")
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut err = ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: as in `put`; the returned buffer is malloc()ed and freed below.
        let p = unsafe {
            ffi::leveldb_get(
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
        unsafe { ffi::leveldb_free(p.cast()) };
        Ok(Some(v))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: as in `put`.
        unsafe { ffi::leveldb_delete(self.db, self.wo, key.as_ptr().cast(), key.len(), &mut err) };
        self.user_bytes
            .fetch_add(key.len() as u64, Ordering::Relaxed);
        check(err, "delete")
    }

    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        let mut bytes = 0u64;
        // SAFETY: the batch is created, filled from valid slices, written and destroyed here.
        unsafe {
            let b = ffi::leveldb_writebatch_create();
            for op in ops {
                match op {
                    BatchOp::Put(k, v) => {
                        bytes += (k.len() + v.len()) as u64;
                        ffi::leveldb_writebatch_put(
                            b,
                            k.as_ptr().cast(),
                            k.len(),
                            v.as_ptr().cast(),
                            v.len(),
                        )
                    }
                    BatchOp::Delete(k) => {
                        bytes += k.len() as u64;
                        ffi::leveldb_writebatch_delete(b, k.as_ptr().cast(), k.len())
                    }
                }
            }
            let mut err = ptr::null_mut();
            let wo = if sync { self.wo_sync } else { self.wo };
            ffi::leveldb_write(self.db, wo, b, &mut err);
            ffi::leveldb_writebatch_destroy(b);
            self.user_bytes.fetch_add(bytes, Ordering::Relaxed);
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
            let it = ffi::leveldb_create_iterator(self.db, self.ro);
            ffi::leveldb_iter_seek(it, start.as_ptr().cast(), start.len());
            while n < limit && ffi::leveldb_iter_valid(it) != 0 {
                let (mut kl, mut vl) = (0usize, 0usize);
                let k = ffi::leveldb_iter_key(it, &mut kl);
                let v = ffi::leveldb_iter_value(it, &mut vl);
                n += 1;
                let go = visit(
                    std::slice::from_raw_parts(k as *const u8, kl),
                    std::slice::from_raw_parts(v as *const u8, vl),
                );
                if !go {
                    break;
                }
                ffi::leveldb_iter_next(it);
            }
            let mut err = ptr::null_mut();
            ffi::leveldb_iter_get_error(it, &mut err);
            ffi::leveldb_iter_destroy(it);
            check(err, "iterator")?;
        }
        Ok(n)
    }

    /// LevelDB has no flush call; a compaction of the empty range `[k, k)` with an empty key
    /// flushes the memtable (what `CompactRange` does first) without compacting files.
    fn flush(&self) -> Result<()> {
        // SAFETY: `db` is open; empty key slices. A null range would compact everything, so
        // give a non-null empty range.
        let k = [0u8; 1];
        unsafe { ffi::leveldb_compact_range(self.db, k.as_ptr().cast(), 0, k.as_ptr().cast(), 0) };
        Ok(())
    }

    fn stats_json(&self) -> Option<serde_json::Value> {
        let levels = self.level_stats()?;
        Some(serde_json::json!({
            "user_bytes": self.user_bytes.load(Ordering::Relaxed),
            "levels": levels
                .iter()
                .map(|(l, files, mb)| serde_json::json!({"level": l, "files": files, "written_mb": mb}))
                .collect::<Vec<_>>(),
        }))
    }

    /// (memtable flush + compaction bytes written, from `leveldb.stats`) / user bytes written;
    /// the log is not counted. LevelDB reports whole megabytes, so small runs read coarsely.
    fn write_amp(&self) -> Option<f64> {
        let user = self.user_bytes.load(Ordering::Relaxed);
        let written = self.compaction_bytes()?;
        (user > 0).then(|| written as f64 / user as f64)
    }

    fn compaction_bytes(&self) -> Option<u64> {
        let levels = self.level_stats()?;
        Some((levels.iter().map(|l| l.2).sum::<f64>() * 1_048_576.0) as u64)
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl Drop for LevelEngine {
    fn drop(&mut self) {
        // SAFETY: every pointer was created in `open` and is destroyed exactly once, the
        // database first (it uses the cache and filter).
        unsafe {
            if !self.db.is_null() {
                ffi::leveldb_close(self.db);
            }
            ffi::leveldb_writeoptions_destroy(self.wo);
            ffi::leveldb_writeoptions_destroy(self.wo_sync);
            ffi::leveldb_readoptions_destroy(self.ro);
            ffi::leveldb_options_destroy(self.opts);
            ffi::leveldb_cache_destroy(self.cache);
            if !self.filter.is_null() {
                ffi::leveldb_filterpolicy_destroy(self.filter);
            }
        }
    }
}
