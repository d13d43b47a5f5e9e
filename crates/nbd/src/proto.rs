//! NBD protocol constants and wire helpers (fixed newstyle negotiation, simple replies).
//! All integers on the wire are big-endian.

use std::io::{self, Read, Write};

/// `NBDMAGIC`.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: newstyle negotiation and every option request.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Magic of an option reply.
pub const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic of a transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// Handshake flag: fixed newstyle.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
/// Handshake flag: no 124 zero bytes after NBD_OPT_EXPORT_NAME.
pub const FLAG_NO_ZEROES: u16 = 2;
/// Client flag: fixed newstyle.
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1;
/// Client flag: no zeroes.
pub const FLAG_C_NO_ZEROES: u32 = 2;

/// Transmission flags.
pub mod tflag {
    /// Flags are valid.
    pub const HAS_FLAGS: u16 = 1 << 0;
    /// Export is read-only.
    pub const READ_ONLY: u16 = 1 << 1;
    /// FLUSH is supported.
    pub const SEND_FLUSH: u16 = 1 << 2;
    /// FUA is supported.
    pub const SEND_FUA: u16 = 1 << 3;
    /// The export is a rotational device.
    pub const ROTATIONAL: u16 = 1 << 4;
    /// TRIM is supported.
    pub const SEND_TRIM: u16 = 1 << 5;
    /// WRITE_ZEROES is supported.
    pub const SEND_WRITE_ZEROES: u16 = 1 << 6;
    /// Several connections may be used at once (flush covers all).
    pub const CAN_MULTI_CONN: u16 = 1 << 8;
}

/// Option numbers.
pub mod opt {
    /// Choose an export and start transmission (old style).
    pub const EXPORT_NAME: u32 = 1;
    /// Abort negotiation.
    pub const ABORT: u32 = 2;
    /// List exports.
    pub const LIST: u32 = 3;
    /// TLS (unsupported).
    pub const STARTTLS: u32 = 5;
    /// Export information.
    pub const INFO: u32 = 6;
    /// Export information, then transmission.
    pub const GO: u32 = 7;
}

/// Option reply types.
pub mod rep {
    /// Acknowledged.
    pub const ACK: u32 = 1;
    /// An export name (LIST).
    pub const SERVER: u32 = 2;
    /// Export information.
    pub const INFO: u32 = 3;
    /// Option not supported.
    pub const ERR_UNSUP: u32 = (1 << 31) + 1;
    /// Refused by policy.
    pub const ERR_POLICY: u32 = (1 << 31) + 2;
    /// Invalid option data.
    pub const ERR_INVALID: u32 = (1 << 31) + 3;
    /// Option data too large.
    pub const ERR_TOO_BIG: u32 = (1 << 31) + 9;
}

/// Information types of NBD_REP_INFO.
pub mod info {
    /// Size and transmission flags.
    pub const EXPORT: u16 = 0;
    /// Block size constraints.
    pub const BLOCK_SIZE: u16 = 3;
}

/// Command types.
pub mod cmd {
    /// Read.
    pub const READ: u16 = 0;
    /// Write.
    pub const WRITE: u16 = 1;
    /// Disconnect.
    pub const DISC: u16 = 2;
    /// Flush.
    pub const FLUSH: u16 = 3;
    /// Trim.
    pub const TRIM: u16 = 4;
    /// Write zeroes.
    pub const WRITE_ZEROES: u16 = 6;
}

/// Command flag: force unit access.
pub const CMD_FLAG_FUA: u16 = 1;

/// Error numbers in replies.
pub mod errno {
    /// Operation not permitted (write to a read-only export).
    pub const EPERM: u32 = 1;
    /// I/O error.
    pub const EIO: u32 = 5;
    /// Invalid argument.
    pub const EINVAL: u32 = 22;
    /// No space (past the end of the export).
    pub const ENOSPC: u32 = 28;
    /// Not supported.
    pub const ENOTSUP: u32 = 95;
}

/// Reads a big-endian `u16`.
pub fn get_u16(r: &mut impl Read) -> io::Result<u16> {
    let mut b = [0u8; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}

/// Reads a big-endian `u32`.
pub fn get_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

/// Reads a big-endian `u64`.
pub fn get_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

/// Writes an option reply header and data.
pub fn option_reply(w: &mut impl Write, option: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    w.write_all(&b)
}

/// A transmission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// Command flags.
    pub flags: u16,
    /// Command type.
    pub kind: u16,
    /// Client cookie echoed in the reply.
    pub handle: u64,
    /// Byte offset.
    pub offset: u64,
    /// Byte length.
    pub length: u32,
}

/// Reads a request header; `Ok(None)` when the magic is wrong (the caller disconnects).
pub fn read_request(r: &mut impl Read) -> io::Result<Option<RequestHeader>> {
    let mut b = [0u8; 28];
    r.read_exact(&mut b)?;
    let be32 = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let be16 = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
    let be64 = |i: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[i..i + 8]);
        u64::from_be_bytes(x)
    };
    if be32(0) != REQUEST_MAGIC {
        return Ok(None);
    }
    Ok(Some(RequestHeader {
        flags: be16(4),
        kind: be16(6),
        handle: be64(8),
        offset: be64(16),
        length: be32(24),
    }))
}

/// Writes a simple reply header.
pub fn simple_reply(w: &mut impl Write, error: u32, handle: u64) -> io::Result<()> {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&handle.to_be_bytes());
    w.write_all(&b)
}
