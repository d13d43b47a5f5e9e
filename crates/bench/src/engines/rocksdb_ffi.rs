//! The part of RocksDB's C API (`rocksdb/c.h`, Debian's librocksdb-dev) the benchmarks use,
//! declared by hand. Linked by build.rs only with the `compare` feature. The functions both
//! C libraries share are declared under the same Rust names as in `leveldb_ffi.rs` (the C
//! name without its `rocksdb_` prefix), so that one macro, `capi::common_api!`, forwards
//! both to the shared adapter.

#![allow(missing_docs)]

use std::ffi::c_void;
use std::os::raw::{c_char, c_int, c_uchar};

super::capi::opaque!(
    Db,
    Options,
    BlockBasedTableOptions,
    Cache,
    FilterPolicy,
    ReadOptions,
    WriteOptions,
    FlushOptions,
    WriteBatch,
    Iterator,
    PinnableSlice,
);

/// `rocksdb::PerfLevel::kDisable`: no per-operation perf counters (db_bench's default
/// `--perf_level=1`; RocksDB's own default, `kEnableCount`, bumps thread-local counters on
/// every key comparison).
pub const PERF_LEVEL_DISABLE: c_int = 1;

/// `rocksdb_no_compression` of c.h's compression enum.
pub const NO_COMPRESSION: c_int = 0;

extern "C" {
    #[link_name = "rocksdb_options_create"]
    pub fn options_create() -> *mut Options;
    #[link_name = "rocksdb_options_destroy"]
    pub fn options_destroy(o: *mut Options);
    #[link_name = "rocksdb_options_set_create_if_missing"]
    pub fn options_set_create_if_missing(o: *mut Options, v: c_uchar);
    #[link_name = "rocksdb_options_set_write_buffer_size"]
    pub fn options_set_write_buffer_size(o: *mut Options, v: usize);
    #[link_name = "rocksdb_options_set_compression"]
    pub fn options_set_compression(o: *mut Options, v: c_int);
    #[link_name = "rocksdb_options_set_level0_file_num_compaction_trigger"]
    pub fn options_set_level0_file_num_compaction_trigger(o: *mut Options, v: c_int);
    #[link_name = "rocksdb_options_set_level0_slowdown_writes_trigger"]
    pub fn options_set_level0_slowdown_writes_trigger(o: *mut Options, v: c_int);
    #[link_name = "rocksdb_options_set_level0_stop_writes_trigger"]
    pub fn options_set_level0_stop_writes_trigger(o: *mut Options, v: c_int);
    #[link_name = "rocksdb_options_set_block_based_table_factory"]
    pub fn options_set_block_based_table_factory(o: *mut Options, t: *mut BlockBasedTableOptions);
    #[link_name = "rocksdb_options_set_enable_pipelined_write"]
    pub fn options_set_enable_pipelined_write(o: *mut Options, v: c_uchar);
    #[link_name = "rocksdb_options_set_table_cache_numshardbits"]
    pub fn options_set_table_cache_numshardbits(o: *mut Options, v: c_int);
    #[link_name = "rocksdb_options_set_hard_pending_compaction_bytes_limit"]
    pub fn options_set_hard_pending_compaction_bytes_limit(o: *mut Options, v: usize);
    #[link_name = "rocksdb_set_perf_level"]
    pub fn set_perf_level(level: c_int);
    #[link_name = "rocksdb_options_enable_statistics"]
    pub fn options_enable_statistics(o: *mut Options);
    #[link_name = "rocksdb_options_statistics_get_string"]
    pub fn options_statistics_get_string(o: *mut Options) -> *mut c_char;

    #[link_name = "rocksdb_block_based_options_create"]
    pub fn block_based_options_create() -> *mut BlockBasedTableOptions;
    #[link_name = "rocksdb_block_based_options_destroy"]
    pub fn block_based_options_destroy(t: *mut BlockBasedTableOptions);
    #[link_name = "rocksdb_block_based_options_set_block_cache"]
    pub fn block_based_options_set_block_cache(t: *mut BlockBasedTableOptions, c: *mut Cache);
    #[link_name = "rocksdb_block_based_options_set_filter_policy"]
    pub fn block_based_options_set_filter_policy(
        t: *mut BlockBasedTableOptions,
        f: *mut FilterPolicy,
    );
    #[link_name = "rocksdb_cache_create_lru"]
    pub fn cache_create_lru(capacity: usize) -> *mut Cache;
    #[link_name = "rocksdb_cache_destroy"]
    pub fn cache_destroy(c: *mut Cache);
    #[link_name = "rocksdb_filterpolicy_create_bloom_full"]
    pub fn filterpolicy_create_bloom_full(bits_per_key: f64) -> *mut FilterPolicy;

    #[link_name = "rocksdb_open"]
    pub fn open(o: *const Options, name: *const c_char, errptr: *mut *mut c_char) -> *mut Db;
    #[link_name = "rocksdb_close"]
    pub fn close(db: *mut Db);
    #[link_name = "rocksdb_destroy_db"]
    pub fn destroy_db(o: *const Options, name: *const c_char, errptr: *mut *mut c_char);

    #[link_name = "rocksdb_write"]
    pub fn write(
        db: *mut Db,
        o: *const WriteOptions,
        batch: *mut WriteBatch,
        errptr: *mut *mut c_char,
    );
    #[link_name = "rocksdb_get"]
    pub fn get(
        db: *mut Db,
        o: *const ReadOptions,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut c_char;
    #[link_name = "rocksdb_get_pinned"]
    pub fn get_pinned(
        db: *mut Db,
        o: *const ReadOptions,
        key: *const c_char,
        keylen: usize,
        errptr: *mut *mut c_char,
    ) -> *mut PinnableSlice;
    #[link_name = "rocksdb_pinnableslice_value"]
    pub fn pinnableslice_value(v: *const PinnableSlice, vlen: *mut usize) -> *const c_char;
    #[link_name = "rocksdb_pinnableslice_destroy"]
    pub fn pinnableslice_destroy(v: *mut PinnableSlice);
    #[link_name = "rocksdb_flush"]
    pub fn flush(db: *mut Db, o: *const FlushOptions, errptr: *mut *mut c_char);
    #[link_name = "rocksdb_property_value"]
    pub fn property_value(db: *mut Db, name: *const c_char) -> *mut c_char;
    #[link_name = "rocksdb_free"]
    pub fn free(p: *mut c_void);

    #[link_name = "rocksdb_writeoptions_create"]
    pub fn writeoptions_create() -> *mut WriteOptions;
    #[link_name = "rocksdb_writeoptions_destroy"]
    pub fn writeoptions_destroy(o: *mut WriteOptions);
    #[link_name = "rocksdb_writeoptions_set_sync"]
    pub fn writeoptions_set_sync(o: *mut WriteOptions, v: c_uchar);
    #[link_name = "rocksdb_writeoptions_disable_WAL"]
    pub fn writeoptions_disable_wal(o: *mut WriteOptions, disable: c_int);
    #[link_name = "rocksdb_readoptions_create"]
    pub fn readoptions_create() -> *mut ReadOptions;
    #[link_name = "rocksdb_readoptions_destroy"]
    pub fn readoptions_destroy(o: *mut ReadOptions);
    #[link_name = "rocksdb_flushoptions_create"]
    pub fn flushoptions_create() -> *mut FlushOptions;
    #[link_name = "rocksdb_flushoptions_destroy"]
    pub fn flushoptions_destroy(o: *mut FlushOptions);
    #[link_name = "rocksdb_flushoptions_set_wait"]
    pub fn flushoptions_set_wait(o: *mut FlushOptions, v: c_uchar);

    #[link_name = "rocksdb_writebatch_create"]
    pub fn writebatch_create() -> *mut WriteBatch;
    #[link_name = "rocksdb_writebatch_destroy"]
    pub fn writebatch_destroy(b: *mut WriteBatch);
    #[link_name = "rocksdb_writebatch_clear"]
    pub fn writebatch_clear(b: *mut WriteBatch);
    #[link_name = "rocksdb_writebatch_put"]
    pub fn writebatch_put(
        b: *mut WriteBatch,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    #[link_name = "rocksdb_writebatch_delete"]
    pub fn writebatch_delete(b: *mut WriteBatch, key: *const c_char, klen: usize);

    #[link_name = "rocksdb_create_iterator"]
    pub fn create_iterator(db: *mut Db, o: *const ReadOptions) -> *mut Iterator;
    #[link_name = "rocksdb_iter_destroy"]
    pub fn iter_destroy(it: *mut Iterator);
    #[link_name = "rocksdb_iter_valid"]
    pub fn iter_valid(it: *const Iterator) -> c_uchar;
    #[link_name = "rocksdb_iter_seek"]
    pub fn iter_seek(it: *mut Iterator, k: *const c_char, klen: usize);
    #[link_name = "rocksdb_iter_next"]
    pub fn iter_next(it: *mut Iterator);
    #[link_name = "rocksdb_iter_key"]
    pub fn iter_key(it: *const Iterator, klen: *mut usize) -> *const c_char;
    #[link_name = "rocksdb_iter_value"]
    pub fn iter_value(it: *const Iterator, vlen: *mut usize) -> *const c_char;
    #[link_name = "rocksdb_iter_get_error"]
    pub fn iter_get_error(it: *const Iterator, errptr: *mut *mut c_char);
}
