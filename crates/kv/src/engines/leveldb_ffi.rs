//! The part of LevelDB's C API (`leveldb/c.h`, Debian's libleveldb-dev) the benchmarks use,
//! declared by hand. Linked by build.rs only with the `compare` feature. The functions both
//! C libraries share are declared by `capi::shared_extern!` (the C name without its
//! `leveldb_` prefix); only LevelDB's own are here.

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

super::capi::shared_extern!("leveldb_");
super::capi::shim_extern!("tegula_leveldb_");

extern "C" {
    #[link_name = "leveldb_options_set_cache"]
    pub fn options_set_cache(o: *mut Options, c: *mut Cache);
    #[link_name = "leveldb_options_set_filter_policy"]
    pub fn options_set_filter_policy(o: *mut Options, f: *mut FilterPolicy);
    #[link_name = "leveldb_filterpolicy_create_bloom"]
    pub fn filterpolicy_create_bloom(bits_per_key: c_int) -> *mut FilterPolicy;
    #[link_name = "leveldb_filterpolicy_destroy"]
    pub fn filterpolicy_destroy(f: *mut FilterPolicy);

    #[link_name = "leveldb_compact_range"]
    pub fn compact_range(
        db: *mut Db,
        start: *const c_char,
        start_len: usize,
        limit: *const c_char,
        limit_len: usize,
    );
}
