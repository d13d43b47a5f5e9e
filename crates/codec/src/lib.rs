//! tegula's one codec and one checksummed frame, shared by every on-disk format of the stack.
//!
//! * [`Enc`] / [`Dec`]: little-endian integers, LEB128 varints and length-prefixed byte
//!   strings, encoded by explicit call (never `usize` on disk); the decoder checks every read
//!   against the bytes left and never panics on bad bytes.
//! * [`frame`]: every checksummed structure's framing, so that each format only describes its
//!   fields: magic, version, length, sequence and CRC-32C around a payload
//!   ([`frame::Format`], in the layouts of state slots, log records and manifest copies), a
//!   checksum suffix after a structure's own fields ([`frame::Suffix`]), and a header that
//!   checks itself and carries its payload's checksum ([`frame::SealedHeader`]); plain or
//!   masked CRC-32C ([`frame::Crc`]).
//! * [`checksum`]: CRC-32C, plain and masked, for data checksums carried as fields.
//! * [`text_header`]: the header of an image that carries its configuration as text.
//! * [`FormatError`]: what every decoder of an on-disk structure returns.
//!
//! ```
//! use tegula_codec::{Dec, Enc};
//! let mut e = Enc::new();
//! e.u32(7);
//! e.bytes_varint(b"key");
//! let mut d = Dec::new(e.as_bytes());
//! assert_eq!(d.u32(), Ok(7));
//! assert_eq!(d.bytes_varint(), Ok(&b"key"[..]));
//! assert!(d.u8().is_err());
//! ```

pub mod checksum;
mod dec;
mod enc;
mod error;
mod format;
pub mod frame;
pub mod text_header;

pub use dec::Dec;
pub use enc::{varint_len, Enc};
pub use error::DecodeError;
pub use format::FormatError;
