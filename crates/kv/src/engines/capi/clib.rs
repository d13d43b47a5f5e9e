//! [`CLib`]: one C key-value library as the adapter calls it.

use super::*;

/// One C key-value library: its opaque types, the functions [`CEngine`] calls (each a thin
/// `unsafe` wrapper of the C function of the same name) and its own settings and statistics.
///
/// # Safety
///
/// Implementations forward to the C library with the C API's contracts: every pointer
/// argument is one the same library returned and has not been freed.
#[allow(missing_docs, clippy::missing_safety_doc, clippy::too_many_arguments)]
pub(crate) unsafe trait CLib: Default + Send + Sync + Sized + 'static {
    /// Engine name in results (`rocksdb`, `leveldb`).
    const NAME: &'static str;
    /// The engine.
    const KIND: crate::EngineKind;
    type Db;
    type Options;
    type Cache;
    type WriteOptions;
    type ReadOptions;
    type Batch;
    type Iter;

    unsafe fn free(p: *mut c_void);
    unsafe fn options_create() -> *mut Self::Options;
    unsafe fn options_destroy(o: *mut Self::Options);
    unsafe fn options_set_create_if_missing(o: *mut Self::Options, v: c_uchar);
    unsafe fn options_set_write_buffer_size(o: *mut Self::Options, v: usize);
    /// Turns compression off (`kNoCompression`).
    unsafe fn options_set_no_compression(o: *mut Self::Options);
    unsafe fn cache_create_lru(capacity: usize) -> *mut Self::Cache;
    unsafe fn cache_destroy(c: *mut Self::Cache);
    unsafe fn writeoptions_create() -> *mut Self::WriteOptions;
    unsafe fn writeoptions_destroy(o: *mut Self::WriteOptions);
    unsafe fn writeoptions_set_sync(o: *mut Self::WriteOptions, v: c_uchar);
    unsafe fn readoptions_create() -> *mut Self::ReadOptions;
    unsafe fn readoptions_destroy(o: *mut Self::ReadOptions);
    unsafe fn readoptions_set_verify_checksums(o: *mut Self::ReadOptions, v: c_uchar);
    unsafe fn open(
        o: *const Self::Options,
        name: *const c_char,
        err: *mut *mut c_char,
    ) -> *mut Self::Db;
    unsafe fn close(db: *mut Self::Db);
    unsafe fn destroy_db(o: *const Self::Options, name: *const c_char, err: *mut *mut c_char);
    /// `csrc/kv_shim.h`: reads `k` into holder `h`; 1 found (the value at `v`, `vl` until
    /// the holder's next use), 0 not found, -1 error (`err` set).
    unsafe fn shim_get(
        db: *mut Self::Db,
        o: *const Self::ReadOptions,
        k: *const c_char,
        kl: usize,
        h: *mut c_void,
        v: *mut *const c_char,
        vl: *mut usize,
        err: *mut *mut c_char,
    ) -> c_int;
    /// `csrc/kv_shim.h`: lets go of what holder `h` holds (a pinned block) once its value
    /// was read, so that no pin outlives the database.
    unsafe fn holder_release(h: *mut c_void);
    unsafe fn write(
        db: *mut Self::Db,
        o: *const Self::WriteOptions,
        b: *mut Self::Batch,
        err: *mut *mut c_char,
    );
    unsafe fn writebatch_create() -> *mut Self::Batch;
    unsafe fn writebatch_destroy(b: *mut Self::Batch);
    unsafe fn writebatch_put(
        b: *mut Self::Batch,
        k: *const c_char,
        kl: usize,
        v: *const c_char,
        vl: usize,
    );
    unsafe fn writebatch_delete(b: *mut Self::Batch, k: *const c_char, kl: usize);
    /// `csrc/kv_shim.h`: a new iterator (the C++ object).
    unsafe fn iter_create(db: *mut Self::Db, o: *const Self::ReadOptions) -> *mut Self::Iter;
    unsafe fn iter_destroy(it: *mut Self::Iter);
    /// Seeks; whether the iterator is valid, and then its pair in `e`.
    unsafe fn iter_seek(
        it: *mut Self::Iter,
        k: *const c_char,
        kl: usize,
        e: *mut KvShimEntry,
    ) -> c_int;
    /// Steps; whether the iterator is still valid, and then its pair in `e`.
    unsafe fn iter_next(it: *mut Self::Iter, e: *mut KvShimEntry) -> c_int;
    /// The iterator's error, if any.
    unsafe fn iter_error(it: *const Self::Iter, err: *mut *mut c_char);
    unsafe fn property_value(db: *mut Self::Db, name: *const c_char) -> *mut c_char;

    /// Attaches `cache` and the settings only this library has to the options (and to the
    /// unsynced write options `wo`); keeps in `self` what must outlive the database.
    unsafe fn configure(
        &mut self,
        o: *mut Self::Options,
        cache: *mut Self::Cache,
        wo: *mut Self::WriteOptions,
        opts: &EngineOptions,
    );
    /// Frees what [`CLib::configure`] kept, after the database and options are gone.
    unsafe fn release(&mut self) {}
    /// Per-thread settings, in each benchmark thread before its first operation.
    fn thread_started(&self) {}
    /// Runs `f` with this thread's reusable write batch, cleared ([`thread_batch!`]).
    fn with_thread_batch(f: &mut dyn FnMut(*mut Self::Batch));
    /// This thread's reusable value holder for gets ([`thread_batch!`]; null if it could not
    /// be allocated).
    fn thread_holder() -> *mut c_void;
    /// Counts `bytes` of keys and values the user wrote (for a write amplification the
    /// library does not report itself).
    fn user_bytes(&self, _bytes: u64) {}
    /// Writes the memtable to table files.
    fn flush(e: &CEngine<Self>) -> Result<()>;
    /// The library's statistics as JSON.
    fn stats_json(e: &CEngine<Self>) -> Option<serde_json::Value>;
    /// (flush + compaction bytes written) / user bytes written, the log excluded.
    fn write_amp(e: &CEngine<Self>) -> Option<f64>;
    /// Bytes written by compaction since open.
    fn compaction_bytes(e: &CEngine<Self>) -> Option<u64>;
    /// Waits until no flush or compaction is running or due ([`KvEngine::wait_for_background`]).
    fn wait_for_background(e: &CEngine<Self>) -> Result<()>;
}
