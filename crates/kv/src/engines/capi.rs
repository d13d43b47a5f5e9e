//! What RocksDB and LevelDB adapters share: both C APIs (`rocksdb/c.h`, `leveldb/c.h`) have
//! the same shape — options, an LRU cache, read and write options, `open`/`destroy_db`,
//! put/delete, write batches, properties, and errors returned as `malloc`ed strings. Gets and
//! iterators go through `csrc/kv_shim.h` instead (the C++ API, as the libraries' db_bench
//! tools read: a value holder reused by every get of a thread, iterators without a wrapper
//! allocated around each; [`shim_extern!`]). [`CLib`] names one library's functions;
//! [`CEngine`] is the one adapter over either: it opens and destroys the database, maps
//! errors, hands values out, runs scans over the iterator and frees everything in order. What only one library has (RocksDB's
//! table options, statistics and `disableWAL`; LevelDB's filter policy object and the absence
//! of a flush call) lives in its [`CLib`] implementation.

use crate::error::{Error, Result};
use crate::{BatchOp, EngineOptions, KvEngine};
use std::ffi::{c_void, CStr, CString};
use std::os::raw::{c_char, c_int, c_uchar};
use std::path::Path;
use std::ptr;

/// Declares opaque C types.
macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        /// An opaque C type.
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
pub(crate) use opaque;

/// Declares, in an ffi module, the functions both C APIs have with the same signature, under
/// the shared names (the C name without its `$prefix`, `"leveldb_"` or `"rocksdb_"`); the
/// module declares the opaque types they take and its own extra functions.
macro_rules! shared_extern {
    ($prefix:literal) => {
        extern "C" {
            #[link_name = concat!($prefix, "options_create")]
            pub fn options_create() -> *mut Options;
            #[link_name = concat!($prefix, "options_destroy")]
            pub fn options_destroy(o: *mut Options);
            #[link_name = concat!($prefix, "options_set_create_if_missing")]
            pub fn options_set_create_if_missing(o: *mut Options, v: c_uchar);
            #[link_name = concat!($prefix, "options_set_write_buffer_size")]
            pub fn options_set_write_buffer_size(o: *mut Options, v: usize);
            #[link_name = concat!($prefix, "options_set_compression")]
            pub fn options_set_compression(o: *mut Options, v: c_int);
            #[link_name = concat!($prefix, "cache_create_lru")]
            pub fn cache_create_lru(capacity: usize) -> *mut Cache;
            #[link_name = concat!($prefix, "cache_destroy")]
            pub fn cache_destroy(c: *mut Cache);
            #[link_name = concat!($prefix, "open")]
            pub fn open(
                o: *const Options,
                name: *const c_char,
                errptr: *mut *mut c_char,
            ) -> *mut Db;
            #[link_name = concat!($prefix, "close")]
            pub fn close(db: *mut Db);
            #[link_name = concat!($prefix, "destroy_db")]
            pub fn destroy_db(o: *const Options, name: *const c_char, errptr: *mut *mut c_char);
            #[link_name = concat!($prefix, "write")]
            pub fn write(
                db: *mut Db,
                o: *const WriteOptions,
                batch: *mut WriteBatch,
                errptr: *mut *mut c_char,
            );
            #[link_name = concat!($prefix, "property_value")]
            pub fn property_value(db: *mut Db, name: *const c_char) -> *mut c_char;
            #[link_name = concat!($prefix, "free")]
            pub fn free(p: *mut c_void);
            #[link_name = concat!($prefix, "writeoptions_create")]
            pub fn writeoptions_create() -> *mut WriteOptions;
            #[link_name = concat!($prefix, "writeoptions_destroy")]
            pub fn writeoptions_destroy(o: *mut WriteOptions);
            #[link_name = concat!($prefix, "writeoptions_set_sync")]
            pub fn writeoptions_set_sync(o: *mut WriteOptions, v: c_uchar);
            #[link_name = concat!($prefix, "readoptions_create")]
            pub fn readoptions_create() -> *mut ReadOptions;
            #[link_name = concat!($prefix, "readoptions_destroy")]
            pub fn readoptions_destroy(o: *mut ReadOptions);
            #[link_name = concat!($prefix, "readoptions_set_verify_checksums")]
            pub fn readoptions_set_verify_checksums(o: *mut ReadOptions, v: c_uchar);
            #[link_name = concat!($prefix, "writebatch_create")]
            pub fn writebatch_create() -> *mut WriteBatch;
            #[link_name = concat!($prefix, "writebatch_destroy")]
            pub fn writebatch_destroy(b: *mut WriteBatch);
            #[link_name = concat!($prefix, "writebatch_clear")]
            pub fn writebatch_clear(b: *mut WriteBatch);
            #[link_name = concat!($prefix, "writebatch_put")]
            pub fn writebatch_put(
                b: *mut WriteBatch,
                key: *const c_char,
                klen: usize,
                val: *const c_char,
                vlen: usize,
            );
            #[link_name = concat!($prefix, "writebatch_delete")]
            pub fn writebatch_delete(b: *mut WriteBatch, key: *const c_char, klen: usize);
        }
    };
}
pub(crate) use shared_extern;

/// Declares, in an ffi module, the functions of `csrc/kv_shim.h` for the library whose shim
/// prefix is `$prefix` (`"tegula_rocksdb_"`, `"tegula_leveldb_"`) under the shared names; the
/// iterator is the C++ object itself (the module's opaque `Iterator`), the value holder an
/// untyped pointer.
macro_rules! shim_extern {
    ($prefix:literal) => {
        extern "C" {
            #[link_name = concat!($prefix, "holder_create")]
            pub fn holder_create() -> *mut c_void;
            #[link_name = concat!($prefix, "holder_destroy")]
            pub fn holder_destroy(h: *mut c_void);
            #[link_name = concat!($prefix, "holder_release")]
            pub fn holder_release(h: *mut c_void);
            #[link_name = concat!($prefix, "get")]
            pub fn shim_get(
                db: *mut Db,
                o: *const ReadOptions,
                key: *const c_char,
                keylen: usize,
                holder: *mut c_void,
                val: *mut *const c_char,
                vallen: *mut usize,
                errptr: *mut *mut c_char,
            ) -> c_int;
            #[link_name = concat!($prefix, "iter_create")]
            pub fn iter_create(db: *mut Db, o: *const ReadOptions) -> *mut Iterator;
            #[link_name = concat!($prefix, "iter_destroy")]
            pub fn iter_destroy(it: *mut Iterator);
            #[link_name = concat!($prefix, "iter_seek")]
            pub fn iter_seek(
                it: *mut Iterator,
                k: *const c_char,
                klen: usize,
                e: *mut $crate::engines::capi::KvShimEntry,
            ) -> c_int;
            #[link_name = concat!($prefix, "iter_next")]
            pub fn iter_next(
                it: *mut Iterator,
                e: *mut $crate::engines::capi::KvShimEntry,
            ) -> c_int;
            #[link_name = concat!($prefix, "iter_error")]
            pub fn iter_error(it: *const Iterator, errptr: *mut *mut c_char);
        }
    };
}
pub(crate) use shim_extern;

/// A write batch and a get's value holder per thread and library, reused by every single put
/// and delete and every get of that thread (as db_bench's loops reuse one `WriteBatch` and one
/// value): the C API's `put` builds and frees a batch per call. Expands, in an engine module,
/// to the thread-locals and the bodies of `with_thread_batch` and `thread_holder` for the ffi
/// module `$ffi`.
macro_rules! thread_batch {
    ($ffi:ident) => {
        /// This thread's reusable batch and value holder, destroyed when the thread ends.
        struct ThreadState {
            batch: *mut $ffi::WriteBatch,
            holder: *mut std::ffi::c_void,
        }

        impl Drop for ThreadState {
            fn drop(&mut self) {
                // SAFETY: created in `THREAD_STATE`'s initialiser, destroyed once here (the
                // holder may be null: out of memory, checked at use; deleting null is a no-op).
                unsafe {
                    $ffi::writebatch_destroy(self.batch);
                    $ffi::holder_destroy(self.holder);
                }
            }
        }

        thread_local! {
            // SAFETY: constructors without arguments.
            static THREAD_STATE: ThreadState = ThreadState {
                batch: unsafe { $ffi::writebatch_create() },
                holder: unsafe { $ffi::holder_create() },
            };
        }

        /// Runs `f` with this thread's batch, cleared.
        fn with_thread_batch(f: &mut dyn FnMut(*mut $ffi::WriteBatch)) {
            THREAD_STATE.with(|t| {
                // SAFETY: the batch is this thread's and alive.
                unsafe { $ffi::writebatch_clear(t.batch) };
                f(t.batch)
            })
        }

        /// This thread's value holder (null if it could not be allocated).
        fn thread_holder() -> *mut std::ffi::c_void {
            THREAD_STATE.with(|t| t.holder)
        }
    };
}
pub(crate) use thread_batch;

/// The part of a [`CLib`] implementation that only forwards to the C library: the associated
/// types and every function both libraries have, from an ffi module that declares them under
/// the shared names (`put`, `iter_seek`, …).
macro_rules! common_api {
    ($ffi:ident) => {
        type Db = $ffi::Db;
        type Options = $ffi::Options;
        type Cache = $ffi::Cache;
        type WriteOptions = $ffi::WriteOptions;
        type ReadOptions = $ffi::ReadOptions;
        type Batch = $ffi::WriteBatch;
        type Iter = $ffi::Iterator;

        fn with_thread_batch(f: &mut dyn FnMut(*mut Self::Batch)) {
            // The engine module's own, from [`thread_batch!`].
            with_thread_batch(f)
        }
        fn thread_holder() -> *mut std::ffi::c_void {
            thread_holder()
        }
        unsafe fn free(p: *mut std::ffi::c_void) {
            $ffi::free(p)
        }
        unsafe fn options_create() -> *mut Self::Options {
            $ffi::options_create()
        }
        unsafe fn options_destroy(o: *mut Self::Options) {
            $ffi::options_destroy(o)
        }
        unsafe fn options_set_create_if_missing(o: *mut Self::Options, v: std::os::raw::c_uchar) {
            $ffi::options_set_create_if_missing(o, v)
        }
        unsafe fn options_set_write_buffer_size(o: *mut Self::Options, v: usize) {
            $ffi::options_set_write_buffer_size(o, v)
        }
        unsafe fn options_set_no_compression(o: *mut Self::Options) {
            $ffi::options_set_compression(o, $ffi::NO_COMPRESSION)
        }
        unsafe fn cache_create_lru(capacity: usize) -> *mut Self::Cache {
            $ffi::cache_create_lru(capacity)
        }
        unsafe fn cache_destroy(c: *mut Self::Cache) {
            $ffi::cache_destroy(c)
        }
        unsafe fn writeoptions_create() -> *mut Self::WriteOptions {
            $ffi::writeoptions_create()
        }
        unsafe fn writeoptions_destroy(o: *mut Self::WriteOptions) {
            $ffi::writeoptions_destroy(o)
        }
        unsafe fn writeoptions_set_sync(o: *mut Self::WriteOptions, v: std::os::raw::c_uchar) {
            $ffi::writeoptions_set_sync(o, v)
        }
        unsafe fn readoptions_create() -> *mut Self::ReadOptions {
            $ffi::readoptions_create()
        }
        unsafe fn readoptions_destroy(o: *mut Self::ReadOptions) {
            $ffi::readoptions_destroy(o)
        }
        unsafe fn readoptions_set_verify_checksums(
            o: *mut Self::ReadOptions,
            v: std::os::raw::c_uchar,
        ) {
            $ffi::readoptions_set_verify_checksums(o, v)
        }
        unsafe fn open(
            o: *const Self::Options,
            name: *const std::os::raw::c_char,
            err: *mut *mut std::os::raw::c_char,
        ) -> *mut Self::Db {
            $ffi::open(o, name, err)
        }
        unsafe fn close(db: *mut Self::Db) {
            $ffi::close(db)
        }
        unsafe fn destroy_db(
            o: *const Self::Options,
            name: *const std::os::raw::c_char,
            err: *mut *mut std::os::raw::c_char,
        ) {
            $ffi::destroy_db(o, name, err)
        }
        unsafe fn shim_get(
            db: *mut Self::Db,
            o: *const Self::ReadOptions,
            k: *const std::os::raw::c_char,
            kl: usize,
            h: *mut std::ffi::c_void,
            v: *mut *const std::os::raw::c_char,
            vl: *mut usize,
            err: *mut *mut std::os::raw::c_char,
        ) -> std::os::raw::c_int {
            $ffi::shim_get(db, o, k, kl, h, v, vl, err)
        }
        unsafe fn holder_release(h: *mut std::ffi::c_void) {
            $ffi::holder_release(h)
        }
        unsafe fn write(
            db: *mut Self::Db,
            o: *const Self::WriteOptions,
            b: *mut Self::Batch,
            err: *mut *mut std::os::raw::c_char,
        ) {
            $ffi::write(db, o, b, err)
        }
        unsafe fn writebatch_create() -> *mut Self::Batch {
            $ffi::writebatch_create()
        }
        unsafe fn writebatch_destroy(b: *mut Self::Batch) {
            $ffi::writebatch_destroy(b)
        }
        unsafe fn writebatch_put(
            b: *mut Self::Batch,
            k: *const std::os::raw::c_char,
            kl: usize,
            v: *const std::os::raw::c_char,
            vl: usize,
        ) {
            $ffi::writebatch_put(b, k, kl, v, vl)
        }
        unsafe fn writebatch_delete(
            b: *mut Self::Batch,
            k: *const std::os::raw::c_char,
            kl: usize,
        ) {
            $ffi::writebatch_delete(b, k, kl)
        }
        unsafe fn iter_create(db: *mut Self::Db, o: *const Self::ReadOptions) -> *mut Self::Iter {
            $ffi::iter_create(db, o)
        }
        unsafe fn iter_destroy(it: *mut Self::Iter) {
            $ffi::iter_destroy(it)
        }
        unsafe fn iter_seek(
            it: *mut Self::Iter,
            k: *const std::os::raw::c_char,
            kl: usize,
            e: *mut $crate::engines::capi::KvShimEntry,
        ) -> std::os::raw::c_int {
            $ffi::iter_seek(it, k, kl, e)
        }
        unsafe fn iter_next(
            it: *mut Self::Iter,
            e: *mut $crate::engines::capi::KvShimEntry,
        ) -> std::os::raw::c_int {
            $ffi::iter_next(it, e)
        }
        unsafe fn iter_error(it: *const Self::Iter, err: *mut *mut std::os::raw::c_char) {
            $ffi::iter_error(it, err)
        }
        unsafe fn property_value(
            db: *mut Self::Db,
            name: *const std::os::raw::c_char,
        ) -> *mut std::os::raw::c_char {
            $ffi::property_value(db, name)
        }
    };
}
pub(crate) use common_api;

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
        crate::durability::Durability::of(L::KIND, self.storage(), sync, self.disable_wal, None)
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
