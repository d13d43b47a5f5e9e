//! The part of RocksDB's C API (`rocksdb/c.h`, Debian's librocksdb-dev) the benchmarks use,
//! declared by hand. Linked by build.rs only with the `compare` feature. The functions both
//! C libraries share are declared by `capi::shared_extern!` under the same Rust names for
//! both (the C name without its `rocksdb_` prefix), so that one macro, `capi::common_api!`,
//! forwards both to the shared adapter; only RocksDB's own are here.

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
);

/// `rocksdb::PerfLevel::kDisable`: no per-operation perf counters (db_bench's default
/// `--perf_level=1`; RocksDB's own default, `kEnableCount`, bumps thread-local counters on
/// every key comparison).
pub const PERF_LEVEL_DISABLE: c_int = 1;

/// `rocksdb_no_compression` of c.h's compression enum.
pub const NO_COMPRESSION: c_int = 0;

super::capi::shared_extern!("rocksdb_");
super::capi::shim_extern!("tegula_rocksdb_");

extern "C" {
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
    #[link_name = "rocksdb_filterpolicy_create_bloom_full"]
    pub fn filterpolicy_create_bloom_full(bits_per_key: f64) -> *mut FilterPolicy;

    #[link_name = "rocksdb_flush"]
    pub fn flush(db: *mut Db, o: *const FlushOptions, errptr: *mut *mut c_char);

    #[link_name = "rocksdb_writeoptions_disable_WAL"]
    pub fn writeoptions_disable_wal(o: *mut WriteOptions, disable: c_int);
    #[link_name = "rocksdb_flushoptions_create"]
    pub fn flushoptions_create() -> *mut FlushOptions;
    #[link_name = "rocksdb_flushoptions_destroy"]
    pub fn flushoptions_destroy(o: *mut FlushOptions);
    #[link_name = "rocksdb_flushoptions_set_wait"]
    pub fn flushoptions_set_wait(o: *mut FlushOptions, v: c_uchar);

}
