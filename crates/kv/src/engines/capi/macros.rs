//! The macros that declare one C library's functions for [`super::CLib`]: opaque types, the
//! functions both C APIs share, the C++ shim's, a thread's reused batch and the common
//! wrappers.

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
