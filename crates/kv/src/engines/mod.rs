//! Engine adapters behind [`crate::KvEngine`].

pub mod counted;
pub mod memory;

#[cfg(feature = "smrdb")]
pub mod smrdb;

#[cfg(feature = "compare")]
mod capi;
#[cfg(feature = "compare")]
pub(crate) mod leveldb;
#[cfg(feature = "compare")]
mod leveldb_ffi;
#[cfg(feature = "compare")]
pub(crate) mod rocksdb;
#[cfg(feature = "compare")]
mod rocksdb_ffi;
