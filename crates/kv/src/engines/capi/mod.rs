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

mod clib;
mod engine;
mod macros;

pub(crate) use clib::CLib;
pub use engine::KvShimEntry;
pub(crate) use engine::{take_string, CEngine};
pub(crate) use macros::{common_api, opaque, shared_extern, shim_extern, thread_batch};
