//! The part of RocksDB's C API (`rocksdb/c.h`, Debian's librocksdb-dev) the benchmarks use,
//! declared by hand. Linked by build.rs only with the `compare` feature.

#![allow(non_camel_case_types, missing_docs)]

use std::os::raw::{c_char, c_int, c_uchar};

macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}

opaque!(
    rocksdb_t,
    rocksdb_options_t,
    rocksdb_block_based_table_options_t,
    rocksdb_cache_t,
    rocksdb_filterpolicy_t,
    rocksdb_readoptions_t,
    rocksdb_writeoptions_t,
    rocksdb_flushoptions_t,
    rocksdb_writebatch_t,
    rocksdb_iterator_t,
);

/// `rocksdb_no_compression` of c.h's compression enum.
pub const ROCKSDB_NO_COMPRESSION: c_int = 0;

extern "C" {
    pub fn rocksdb_options_create() -> *mut rocksdb_options_t;
    pub fn rocksdb_options_destroy(o: *mut rocksdb_options_t);
    pub fn rocksdb_options_set_create_if_missing(o: *mut rocksdb_options_t, v: c_uchar);
    pub fn rocksdb_options_set_write_buffer_size(o: *mut rocksdb_options_t, v: usize);
    pub fn rocksdb_options_set_compression(o: *mut rocksdb_options_t, v: c_int);
    pub fn rocksdb_options_set_level0_file_num_compaction_trigger(
        o: *mut rocksdb_options_t,
        v: c_int,
    );
    pub fn rocksdb_options_set_level0_slowdown_writes_trigger(o: *mut rocksdb_options_t, v: c_int);
    pub fn rocksdb_options_set_level0_stop_writes_trigger(o: *mut rocksdb_options_t, v: c_int);
    pub fn rocksdb_options_set_block_based_table_factory(
        o: *mut rocksdb_options_t,
        t: *mut rocksdb_block_based_table_options_t,
    );
    pub fn rocksdb_options_enable_statistics(o: *mut rocksdb_options_t);
    pub fn rocksdb_options_statistics_get_string(o: *mut rocksdb_options_t) -> *mut c_char;

    pub fn rocksdb_block_based_options_create() -> *mut rocksdb_block_based_table_options_t;
    pub fn rocksdb_block_based_options_destroy(t: *mut rocksdb_block_based_table_options_t);
    pub fn rocksdb_block_based_options_set_block_cache(
        t: *mut rocksdb_block_based_table_options_t,
        c: *mut rocksdb_cache_t,
    );
    pub fn rocksdb_block_based_options_set_filter_policy(
        t: *mut rocksdb_block_based_table_options_t,
        f: *mut rocksdb_filterpolicy_t,
    );
    pub fn rocksdb_cache_create_lru(capacity: usize) -> *mut rocksdb_cache_t;
    pub fn rocksdb_cache_destroy(c: *mut rocksdb_cache_t);
    pub fn rocksdb_filterpolicy_create_bloom_full(bits_per_key: f64)
        -> *mut rocksdb_filterpolicy_t;

    pub fn rocksdb_open(
        o: *const rocksdb_options_t,
        name: *const c_char,
        errptr: *mut *mut c_char,
    ) -> *mut rocksdb_t;
    pub fn rocksdb_close(db: *mut rocksdb_t);
    pub fn rocksdb_destroy_db(
        o: *const rocksdb_options_t,
        name: *const c_char,
        errptr: *mut *mut c_char,
    );

    pub fn rocksdb_put(
        db: *mut rocksdb_t,
        o: *const rocksdb_writeoptions_t,
        key: *const c_char,
        keylen: usize,
        val: *const c_char,
        vallen: usize,
        errptr: *mut *mut c_char,
    );
    pub fn rocksdb_delete(
        db: *mut rocksdb_t,
        o: *const rocksdb_writeoptions_t,
        key: *const c_char,
        keylen: usize,
        errptr: *mut *mut c_char,
    );
    pub fn rocksdb_write(
        db: *mut rocksdb_t,
        o: *const rocksdb_writeoptions_t,
        batch: *mut rocksdb_writebatch_t,
        errptr: *mut *mut c_char,
    );
    pub fn rocksdb_get(
        db: *mut rocksdb_t,
        o: *const rocksdb_readoptions_t,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut c_char;
    pub fn rocksdb_flush(
        db: *mut rocksdb_t,
        o: *const rocksdb_flushoptions_t,
        errptr: *mut *mut c_char,
    );
    pub fn rocksdb_property_value(db: *mut rocksdb_t, name: *const c_char) -> *mut c_char;
    pub fn rocksdb_free(p: *mut std::ffi::c_void);

    pub fn rocksdb_writeoptions_create() -> *mut rocksdb_writeoptions_t;
    pub fn rocksdb_writeoptions_destroy(o: *mut rocksdb_writeoptions_t);
    pub fn rocksdb_writeoptions_set_sync(o: *mut rocksdb_writeoptions_t, v: c_uchar);
    #[allow(non_snake_case)] // the C API's own name
    pub fn rocksdb_writeoptions_disable_WAL(o: *mut rocksdb_writeoptions_t, disable: c_int);
    pub fn rocksdb_readoptions_create() -> *mut rocksdb_readoptions_t;
    pub fn rocksdb_readoptions_destroy(o: *mut rocksdb_readoptions_t);
    pub fn rocksdb_flushoptions_create() -> *mut rocksdb_flushoptions_t;
    pub fn rocksdb_flushoptions_destroy(o: *mut rocksdb_flushoptions_t);
    pub fn rocksdb_flushoptions_set_wait(o: *mut rocksdb_flushoptions_t, v: c_uchar);

    pub fn rocksdb_writebatch_create() -> *mut rocksdb_writebatch_t;
    pub fn rocksdb_writebatch_destroy(b: *mut rocksdb_writebatch_t);
    pub fn rocksdb_writebatch_put(
        b: *mut rocksdb_writebatch_t,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    pub fn rocksdb_writebatch_delete(b: *mut rocksdb_writebatch_t, key: *const c_char, klen: usize);

    pub fn rocksdb_create_iterator(
        db: *mut rocksdb_t,
        o: *const rocksdb_readoptions_t,
    ) -> *mut rocksdb_iterator_t;
    pub fn rocksdb_iter_destroy(it: *mut rocksdb_iterator_t);
    pub fn rocksdb_iter_valid(it: *const rocksdb_iterator_t) -> c_uchar;
    pub fn rocksdb_iter_seek(it: *mut rocksdb_iterator_t, k: *const c_char, klen: usize);
    pub fn rocksdb_iter_next(it: *mut rocksdb_iterator_t);
    pub fn rocksdb_iter_key(it: *const rocksdb_iterator_t, klen: *mut usize) -> *const c_char;
    pub fn rocksdb_iter_value(it: *const rocksdb_iterator_t, vlen: *mut usize) -> *const c_char;
    pub fn rocksdb_iter_get_error(it: *const rocksdb_iterator_t, errptr: *mut *mut c_char);
}
