//! Bands: one sorted table per zone, written once, sequentially:
//! `data blocks | index | Bloom filter | histogram | padding | footer` (see
//! `docs/formats/smrdb.md`). Each part carries its own checksum.

pub mod block;
pub mod bloom;
pub mod footer;
pub mod histogram;
pub mod index;
pub mod reader;
#[cfg(test)]
pub(crate) mod test_util;
pub mod writer;

pub use reader::{Band, BandIter};
pub use writer::{BandWriter, WriterConfig};
