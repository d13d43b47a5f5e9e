//! [`CEngine`]: the one adapter over either library, as a [`crate::KvEngine`].

use super::*;

/// An open database of library `L`, configured to the shared memory budget: write buffer,
/// LRU block cache, Bloom filter bits per key from [`EngineOptions`], no compression.
pub(crate) struct CEngine<L: CLib> {
    lib: L,
    db: *mut L::Db,
    opts: *mut L::Options,
    cache: *mut L::Cache,
    wo: *mut L::WriteOptions,
    wo_sync: *mut L::WriteOptions,
    ro: *mut L::ReadOptions,
    /// Unsynced writes skip the log (RocksDB's `disableWAL`).
    disable_wal: bool,
}

// SAFETY: RocksDB's and LevelDB's `DB*` are safe for concurrent use from several threads; the
// option objects are only read after `open` and are destroyed in `Drop` once no thread uses
// the engine.
unsafe impl<L: CLib> Send for CEngine<L> {}
unsafe impl<L: CLib> Sync for CEngine<L> {}

/// The current pair of an iterator as `csrc/kv_shim.h` hands it out (`struct KvShimEntry`).
#[repr(C)]
#[derive(Debug)]
pub struct KvShimEntry {
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
}

impl Default for KvShimEntry {
    fn default() -> Self {
        KvShimEntry {
            key: ptr::null(),
            keylen: 0,
            val: ptr::null(),
            vallen: 0,
        }
    }
}

/// `len` bytes at `p` (an empty slice when `len` is 0).
///
/// # Safety
///
/// `p` points at `len` readable bytes that outlive the returned slice (it may be anything
/// when `len` is 0).
#[inline]
unsafe fn raw_slice<'a>(p: *const c_char, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p as *const u8, len)
    }
}

/// Takes ownership of a C error string of library `L`, if any, and turns it into an error.
#[inline]
fn check<L: CLib>(err: *mut c_char, what: &str) -> Result<()> {
    match take_string::<L>(err) {
        None => Ok(()),
        Some(msg) => Err(Error::engine(format!("{} {what}", L::NAME), msg)),
    }
}

/// Takes ownership of a `malloc`ed C string returned by library `L`.
#[inline]
pub(crate) fn take_string<L: CLib>(p: *mut c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is a NUL-terminated string allocated by the library; freed exactly once.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    unsafe { L::free(p.cast()) };
    Some(s)
}

impl<L: CLib> CEngine<L> {
    /// Opens (creating) the database in `dir`; with `fresh`, destroys what was there first
    /// with the library's own `DestroyDB`.
    pub(crate) fn open(dir: &Path, o: &EngineOptions, fresh: bool) -> Result<Self> {
        let name = CString::new(dir.to_string_lossy().as_bytes())
            .map_err(|_| Error::invalid("database path contains a NUL byte"))?;
        // SAFETY: constructor and setter calls on objects created here; `Drop` destroys them
        // (the database first), also when opening fails below.
        unsafe {
            let mut e = CEngine {
                lib: L::default(),
                db: ptr::null_mut(),
                opts: L::options_create(),
                cache: L::cache_create_lru(o.cache_size as usize),
                wo: L::writeoptions_create(),
                wo_sync: L::writeoptions_create(),
                ro: L::readoptions_create(),
                disable_wal: o.disable_wal,
            };
            L::options_set_create_if_missing(e.opts, 1);
            L::options_set_write_buffer_size(e.opts, o.write_buffer_size as usize);
            L::options_set_no_compression(e.opts);
            L::writeoptions_set_sync(e.wo_sync, 1);
            L::readoptions_set_verify_checksums(e.ro, u8::from(o.verify_checksums));
            e.lib.configure(e.opts, e.cache, e.wo, o);
            if fresh {
                let mut err = ptr::null_mut();
                L::destroy_db(e.opts, name.as_ptr(), &mut err);
                check::<L>(err, "destroy")?;
            }
            let mut err = ptr::null_mut();
            e.db = L::open(e.opts, name.as_ptr(), &mut err);
            check::<L>(err, "open")?;
            if e.db.is_null() {
                return Err(Error::engine(
                    format!("{} open", L::NAME),
                    format!("opening {} failed", dir.display()),
                ));
            }
            Ok(e)
        }
    }

    /// The library's state ([`CLib`] implementation).
    pub(crate) fn lib(&self) -> &L {
        &self.lib
    }

    /// The options the database was opened with.
    pub(crate) fn options_ptr(&self) -> *mut L::Options {
        self.opts
    }

    /// The open database.
    pub(crate) fn db_ptr(&self) -> *mut L::Db {
        self.db
    }

    /// Reads `key` into this thread's value holder and hands the value to `f` where it lies
    /// (RocksDB: pinned in the block cache, or copied once from the memtable; LevelDB: copied
    /// once into the holder), as the libraries' db_bench tools read; whether the key exists.
    pub(crate) fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let h = L::thread_holder();
        if h.is_null() {
            return Err(Error::Internal(format!(
                "out of memory for a {} value holder",
                L::NAME
            )));
        }
        let mut err = ptr::null_mut();
        let (mut p, mut len) = (ptr::null(), 0usize);
        // SAFETY: valid slices for the call; `db` is open; the holder is this thread's and
        // what it holds is read by `f` before the thread's next get.
        let r = unsafe {
            L::shim_get(
                self.db,
                self.ro,
                key.as_ptr().cast(),
                key.len(),
                h,
                &mut p,
                &mut len,
                &mut err,
            )
        };
        check::<L>(err, "get")?;
        if r <= 0 {
            return Ok(false);
        }
        // SAFETY: `len` bytes at `p`, held by the holder until its next use.
        f(unsafe { raw_slice(p, len) });
        // SAFETY: this thread's holder, whose value `f` has finished reading.
        unsafe { L::holder_release(h) };
        Ok(true)
    }

    /// Maps a C error string of an operation.
    pub(crate) fn check(&self, err: *mut c_char, what: &str) -> Result<()> {
        check::<L>(err, what)
    }

    /// A database property (`rocksdb.num-files-at-level0`, `leveldb.stats`).
    pub(crate) fn property(&self, name: &str) -> Option<String> {
        let c = CString::new(name).ok()?;
        // SAFETY: `db` is open; the returned string is ours to free.
        take_string::<L>(unsafe { L::property_value(self.db, c.as_ptr()) })
    }
}

impl<L: CLib> KvEngine for CEngine<L> {
    fn name(&self) -> &str {
        L::NAME
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: valid slices for the duration of the calls; `db` is open; the batch is this
        // thread's.
        L::with_thread_batch(&mut |b| unsafe {
            L::writebatch_put(
                b,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            );
            L::write(self.db, self.wo, b, &mut err);
        });
        self.lib.user_bytes((key.len() + value.len()) as u64);
        check::<L>(err, "put")
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut v = Vec::new();
        Ok(self.get_into(key, &mut v)?.then_some(v))
    }

    fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        CEngine::get_with(self, key, &mut |v| out.extend_from_slice(v))
    }

    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        CEngine::get_with(self, key, f)
    }

    fn thread_started(&self) {
        self.lib.thread_started()
    }

    fn storage(&self) -> crate::StorageLabel {
        crate::StorageLabel::Dir
    }

    fn durability(&self, sync: crate::durability::SyncPolicy) -> crate::durability::Durability {
        crate::durability::Durability::of(
            L::KIND,
            self.storage(),
            sync,
            self.disable_wal,
            None,
            false,
        )
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: as in `put`.
        L::with_thread_batch(&mut |b| unsafe {
            L::writebatch_delete(b, key.as_ptr().cast(), key.len());
            L::write(self.db, self.wo, b, &mut err);
        });
        self.lib.user_bytes(key.len() as u64);
        check::<L>(err, "delete")
    }

    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        let mut bytes = 0u64;
        // SAFETY: the batch is created, filled from valid slices, written and destroyed here.
        unsafe {
            let b = L::writebatch_create();
            for op in ops {
                match op {
                    BatchOp::Put(k, v) => {
                        bytes += (k.len() + v.len()) as u64;
                        L::writebatch_put(b, k.as_ptr().cast(), k.len(), v.as_ptr().cast(), v.len())
                    }
                    BatchOp::Delete(k) => {
                        bytes += k.len() as u64;
                        L::writebatch_delete(b, k.as_ptr().cast(), k.len())
                    }
                }
            }
            let mut err = ptr::null_mut();
            let wo = if sync { self.wo_sync } else { self.wo };
            L::write(self.db, wo, b, &mut err);
            L::writebatch_destroy(b);
            self.lib.user_bytes(bytes);
            check::<L>(err, "write")
        }
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
        // SAFETY: the iterator lives only in this block; key/value slices are valid until the
        // next move of the iterator, and `visit` does not keep them.
        unsafe {
            let it = L::iter_create(self.db, self.ro);
            // No `Next` after the last pair wanted: a seek with no nexts moves the iterator
            // once, as db_bench's seekrandom does.
            let mut e = KvShimEntry::default();
            let mut valid = L::iter_seek(it, start.as_ptr().cast(), start.len(), &mut e) != 0;
            while valid {
                n += 1;
                if !visit(raw_slice(e.key, e.keylen), raw_slice(e.val, e.vallen)) || n >= limit {
                    break;
                }
                valid = L::iter_next(it, &mut e) != 0;
            }
            // An iterator that failed is no longer valid: its status needs a look only then
            // (db_bench looks at none).
            let mut err = ptr::null_mut();
            if !valid {
                L::iter_error(it, &mut err);
            }
            L::iter_destroy(it);
            check::<L>(err, "iterator")?;
        }
        Ok(n)
    }

    fn flush(&self) -> Result<()> {
        L::flush(self)
    }

    fn stats_json(&self) -> Option<serde_json::Value> {
        L::stats_json(self)
    }

    fn write_amp(&self) -> Option<f64> {
        L::write_amp(self)
    }

    fn compaction_bytes(&self) -> Option<u64> {
        L::compaction_bytes(self)
    }

    fn wait_for_background(&self) -> Result<()> {
        L::wait_for_background(self)
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl<L: CLib> Drop for CEngine<L> {
    fn drop(&mut self) {
        // SAFETY: every pointer was created in `open` and is destroyed exactly once, the
        // database first (it uses the cache and whatever `configure` attached).
        unsafe {
            if !self.db.is_null() {
                L::close(self.db);
            }
            L::writeoptions_destroy(self.wo);
            L::writeoptions_destroy(self.wo_sync);
            L::readoptions_destroy(self.ro);
            L::options_destroy(self.opts);
            L::cache_destroy(self.cache);
            self.lib.release();
        }
    }
}
