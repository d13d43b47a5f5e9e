//! The part of LevelDB's C API (`leveldb/c.h`, Debian's libleveldb-dev) the benchmarks use,
//! declared by hand. Linked by build.rs only with the `compare` feature. The functions both
//! C libraries share are declared under the same Rust names as in `rocksdb_ffi.rs` (the C
//! name without its `leveldb_` prefix); see there.

#![allow(missing_docs)]

use std::ffi::c_void;
use std::os::raw::{c_char, c_int, c_uchar};

super::capi::opaque!(
    Db,
    Options,
    Cache,
    FilterPolicy,
    ReadOptions,
    WriteOptions,
    WriteBatch,
    Iterator,
);

/// `leveldb_no_compression`.
pub const NO_COMPRESSION: c_int = 0;

extern "C" {
    #[link_name = "leveldb_options_create"]
    pub fn options_create() -> *mut Options;
    #[link_name = "leveldb_options_destroy"]
    pub fn options_destroy(o: *mut Options);
    #[link_name = "leveldb_options_set_create_if_missing"]
    pub fn options_set_create_if_missing(o: *mut Options, v: c_uchar);
    #[link_name = "leveldb_options_set_write_buffer_size"]
    pub fn options_set_write_buffer_size(o: *mut Options, v: usize);
    #[link_name = "leveldb_options_set_cache"]
    pub fn options_set_cache(o: *mut Options, c: *mut Cache);
    #[link_name = "leveldb_options_set_filter_policy"]
    pub fn options_set_filter_policy(o: *mut Options, f: *mut FilterPolicy);
    #[link_name = "leveldb_options_set_compression"]
    pub fn options_set_compression(o: *mut Options, v: c_int);
    #[link_name = "leveldb_cache_create_lru"]
    pub fn cache_create_lru(capacity: usize) -> *mut Cache;
    #[link_name = "leveldb_cache_destroy"]
    pub fn cache_destroy(c: *mut Cache);
    #[link_name = "leveldb_filterpolicy_create_bloom"]
    pub fn filterpolicy_create_bloom(bits_per_key: c_int) -> *mut FilterPolicy;
    #[link_name = "leveldb_filterpolicy_destroy"]
    pub fn filterpolicy_destroy(f: *mut FilterPolicy);

    #[link_name = "leveldb_open"]
    pub fn open(o: *const Options, name: *const c_char, errptr: *mut *mut c_char) -> *mut Db;
    #[link_name = "leveldb_close"]
    pub fn close(db: *mut Db);
    #[link_name = "leveldb_destroy_db"]
    pub fn destroy_db(o: *const Options, name: *const c_char, errptr: *mut *mut c_char);
    #[link_name = "leveldb_write"]
    pub fn write(
        db: *mut Db,
        o: *const WriteOptions,
        batch: *mut WriteBatch,
        errptr: *mut *mut c_char,
    );
    #[link_name = "leveldb_get"]
    pub fn get(
        db: *mut Db,
        o: *const ReadOptions,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut c_char;
    #[link_name = "leveldb_property_value"]
    pub fn property_value(db: *mut Db, name: *const c_char) -> *mut c_char;
    #[link_name = "leveldb_compact_range"]
    pub fn compact_range(
        db: *mut Db,
        start: *const c_char,
        start_len: usize,
        limit: *const c_char,
        limit_len: usize,
    );
    #[link_name = "leveldb_free"]
    pub fn free(p: *mut c_void);

    #[link_name = "leveldb_writeoptions_create"]
    pub fn writeoptions_create() -> *mut WriteOptions;
    #[link_name = "leveldb_writeoptions_destroy"]
    pub fn writeoptions_destroy(o: *mut WriteOptions);
    #[link_name = "leveldb_writeoptions_set_sync"]
    pub fn writeoptions_set_sync(o: *mut WriteOptions, v: c_uchar);
    #[link_name = "leveldb_readoptions_create"]
    pub fn readoptions_create() -> *mut ReadOptions;
    #[link_name = "leveldb_readoptions_destroy"]
    pub fn readoptions_destroy(o: *mut ReadOptions);

    #[link_name = "leveldb_writebatch_create"]
    pub fn writebatch_create() -> *mut WriteBatch;
    #[link_name = "leveldb_writebatch_destroy"]
    pub fn writebatch_destroy(b: *mut WriteBatch);
    #[link_name = "leveldb_writebatch_clear"]
    pub fn writebatch_clear(b: *mut WriteBatch);
    #[link_name = "leveldb_writebatch_put"]
    pub fn writebatch_put(
        b: *mut WriteBatch,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    #[link_name = "leveldb_writebatch_delete"]
    pub fn writebatch_delete(b: *mut WriteBatch, key: *const c_char, klen: usize);

    #[link_name = "leveldb_create_iterator"]
    pub fn create_iterator(db: *mut Db, o: *const ReadOptions) -> *mut Iterator;
    #[link_name = "leveldb_iter_destroy"]
    pub fn iter_destroy(it: *mut Iterator);
    #[link_name = "leveldb_iter_valid"]
    pub fn iter_valid(it: *const Iterator) -> c_uchar;
    #[link_name = "leveldb_iter_seek"]
    pub fn iter_seek(it: *mut Iterator, k: *const c_char, klen: usize);
    #[link_name = "leveldb_iter_next"]
    pub fn iter_next(it: *mut Iterator);
    #[link_name = "leveldb_iter_key"]
    pub fn iter_key(it: *const Iterator, klen: *mut usize) -> *const c_char;
    #[link_name = "leveldb_iter_value"]
    pub fn iter_value(it: *const Iterator, vlen: *mut usize) -> *const c_char;
    #[link_name = "leveldb_iter_get_error"]
    pub fn iter_get_error(it: *const Iterator, errptr: *mut *mut c_char);
}
