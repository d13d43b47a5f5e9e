//! Engine adapters behind [`crate::KvEngine`].

pub mod memory;

#[cfg(feature = "smrdb")]
pub mod smrdb;

#[cfg(feature = "compare")]
pub mod leveldb;
#[cfg(feature = "compare")]
mod leveldb_ffi;
#[cfg(feature = "compare")]
pub mod rocksdb;
#[cfg(feature = "compare")]
mod rocksdb_ffi;
