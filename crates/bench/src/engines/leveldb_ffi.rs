//! The part of LevelDB's C API (`leveldb/c.h`, Debian's libleveldb-dev) the benchmarks use,
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
    leveldb_t,
    leveldb_options_t,
    leveldb_cache_t,
    leveldb_filterpolicy_t,
    leveldb_readoptions_t,
    leveldb_writeoptions_t,
    leveldb_writebatch_t,
    leveldb_iterator_t,
);

/// `leveldb_no_compression`.
pub const LEVELDB_NO_COMPRESSION: c_int = 0;

extern "C" {
    pub fn leveldb_options_create() -> *mut leveldb_options_t;
    pub fn leveldb_options_destroy(o: *mut leveldb_options_t);
    pub fn leveldb_options_set_create_if_missing(o: *mut leveldb_options_t, v: c_uchar);
    pub fn leveldb_options_set_write_buffer_size(o: *mut leveldb_options_t, v: usize);
    pub fn leveldb_options_set_cache(o: *mut leveldb_options_t, c: *mut leveldb_cache_t);
    pub fn leveldb_options_set_filter_policy(
        o: *mut leveldb_options_t,
        f: *mut leveldb_filterpolicy_t,
    );
    pub fn leveldb_options_set_compression(o: *mut leveldb_options_t, v: c_int);
    pub fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t;
    pub fn leveldb_cache_destroy(c: *mut leveldb_cache_t);
    pub fn leveldb_filterpolicy_create_bloom(bits_per_key: c_int) -> *mut leveldb_filterpolicy_t;
    pub fn leveldb_filterpolicy_destroy(f: *mut leveldb_filterpolicy_t);

    pub fn leveldb_open(
        o: *const leveldb_options_t,
        name: *const c_char,
        errptr: *mut *mut c_char,
    ) -> *mut leveldb_t;
    pub fn leveldb_close(db: *mut leveldb_t);
    pub fn leveldb_destroy_db(
        o: *const leveldb_options_t,
        name: *const c_char,
        errptr: *mut *mut c_char,
    );
    pub fn leveldb_put(
        db: *mut leveldb_t,
        o: *const leveldb_writeoptions_t,
        key: *const c_char,
        keylen: usize,
        val: *const c_char,
        vallen: usize,
        errptr: *mut *mut c_char,
    );
    pub fn leveldb_delete(
        db: *mut leveldb_t,
        o: *const leveldb_writeoptions_t,
        key: *const c_char,
        keylen: usize,
        errptr: *mut *mut c_char,
    );
    pub fn leveldb_write(
        db: *mut leveldb_t,
        o: *const leveldb_writeoptions_t,
        batch: *mut leveldb_writebatch_t,
        errptr: *mut *mut c_char,
    );
    pub fn leveldb_get(
        db: *mut leveldb_t,
        o: *const leveldb_readoptions_t,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut c_char;
    pub fn leveldb_property_value(db: *mut leveldb_t, name: *const c_char) -> *mut c_char;
    pub fn leveldb_compact_range(
        db: *mut leveldb_t,
        start: *const c_char,
        start_len: usize,
        limit: *const c_char,
        limit_len: usize,
    );
    pub fn leveldb_free(p: *mut std::ffi::c_void);

    pub fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t;
    pub fn leveldb_writeoptions_destroy(o: *mut leveldb_writeoptions_t);
    pub fn leveldb_writeoptions_set_sync(o: *mut leveldb_writeoptions_t, v: c_uchar);
    pub fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t;
    pub fn leveldb_readoptions_destroy(o: *mut leveldb_readoptions_t);

    pub fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t;
    pub fn leveldb_writebatch_destroy(b: *mut leveldb_writebatch_t);
    pub fn leveldb_writebatch_put(
        b: *mut leveldb_writebatch_t,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    pub fn leveldb_writebatch_delete(b: *mut leveldb_writebatch_t, key: *const c_char, klen: usize);

    pub fn leveldb_create_iterator(
        db: *mut leveldb_t,
        o: *const leveldb_readoptions_t,
    ) -> *mut leveldb_iterator_t;
    pub fn leveldb_iter_destroy(it: *mut leveldb_iterator_t);
    pub fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> c_uchar;
    pub fn leveldb_iter_seek(it: *mut leveldb_iterator_t, k: *const c_char, klen: usize);
    pub fn leveldb_iter_next(it: *mut leveldb_iterator_t);
    pub fn leveldb_iter_key(it: *const leveldb_iterator_t, klen: *mut usize) -> *const c_char;
    pub fn leveldb_iter_value(it: *const leveldb_iterator_t, vlen: *mut usize) -> *const c_char;
    pub fn leveldb_iter_get_error(it: *const leveldb_iterator_t, errptr: *mut *mut c_char);
}
