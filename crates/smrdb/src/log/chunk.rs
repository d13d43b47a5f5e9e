//! Log chunks: one per device write, framing a run of batch records. Version 2 (written):
//!
//! `magic "SLG2" | len u32 | payload crc u32 | header crc u32 | payload (len bytes) | zero
//! padding to a sector`
//!
//! where the header crc (masked crc32c) covers the 12 bytes before it and the payload crc the
//! payload. Version 1 (read only; written before the header had its own checksum):
//!
//! `magic "SLOG" | crc u32 (of len and payload) | len u32 | payload | padding`
//!
//! With the header checked on its own, a chunk that claims to run past the zone's write pointer
//! is known to be one a power cut tore (its header sector reached the media intact), never a
//! damaged length field; see [`super::replay`].

use tegula_codec::checksum::masked_crc32c as crc;
use tegula_codec::{Dec, Enc};

/// Magic of a version 2 chunk (the one written).
pub const LOG_MAGIC: u32 = u32::from_le_bytes(*b"SLG2");
/// Magic of a version 1 chunk (still read).
pub const LOG_MAGIC_V1: u32 = u32::from_le_bytes(*b"SLOG");
/// Bytes of a version 2 chunk header.
pub const CHUNK_HEADER: usize = 16;
/// Bytes of a version 1 chunk header.
pub const CHUNK_HEADER_V1: usize = 12;

/// What the bytes at a chunk boundary hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// No chunk magic (an unwritten sector reads as zeros).
    Missing,
    /// A chunk magic whose header is damaged (version 2: its checksum fails).
    Damaged(String),
    /// A chunk header: format version, payload length and the bytes before the payload.
    Chunk {
        /// 1 or 2.
        version: u32,
        /// Payload bytes.
        len: u32,
        /// Header bytes before the payload.
        header: usize,
    },
}

impl Head {
    /// Sectors of `ss` bytes the chunk occupies, padding included (0 unless a chunk).
    pub fn sectors(&self, ss: u64) -> u64 {
        match self {
            Head::Chunk { len, header, .. } => ((*len as u64) + *header as u64).div_ceil(ss.max(1)),
            _ => 0,
        }
    }
}

/// Reads the chunk header at the start of `b` (at least [`CHUNK_HEADER`] bytes for a
/// version 2 chunk, else it is [`Head::Damaged`]).
pub fn read_head(b: &[u8]) -> Head {
    let mut r = Dec::new(b);
    match r.u32() {
        Ok(LOG_MAGIC) => {
            let (Ok(len), Ok(_), Ok(stored)) = (r.u32(), r.u32(), r.u32()) else {
                return Head::Damaged("chunk header cut short".into());
            };
            if crc(&b[..12]) != stored {
                return Head::Damaged("log chunk header checksum mismatch".into());
            }
            Head::Chunk {
                version: 2,
                len,
                header: CHUNK_HEADER,
            }
        }
        Ok(LOG_MAGIC_V1) => {
            let (Ok(_), Ok(len)) = (r.u32(), r.u32()) else {
                return Head::Damaged("chunk header cut short".into());
            };
            Head::Chunk {
                version: 1,
                len,
                header: CHUNK_HEADER_V1,
            }
        }
        _ => Head::Missing,
    }
}

/// Fills the header of a version 2 chunk whose payload follows at `buf[CHUNK_HEADER..]`.
pub fn seal(buf: &mut [u8]) {
    if buf.len() < CHUNK_HEADER {
        return;
    }
    let len = (buf.len() - CHUNK_HEADER) as u32;
    let pc = crc(&buf[CHUNK_HEADER..]);
    buf[..4].copy_from_slice(&LOG_MAGIC.to_le_bytes());
    buf[4..8].copy_from_slice(&len.to_le_bytes());
    buf[8..12].copy_from_slice(&pc.to_le_bytes());
    let hc = crc(&buf[..12]);
    buf[12..16].copy_from_slice(&hc.to_le_bytes());
}

/// Frames a payload as a version 2 chunk padded to whole sectors of `ss` bytes.
pub fn frame(payload: &[u8], ss: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(payload.len() + CHUNK_HEADER + ss as usize);
    b.resize(CHUNK_HEADER, 0);
    b.extend_from_slice(payload);
    seal(&mut b);
    let n = (b.len() as u64).div_ceil(ss.max(1)) * ss.max(1);
    b.resize(n as usize, 0);
    b
}

/// Frames a payload as a version 1 chunk (what engines before version 2 wrote; kept to make
/// old-format fixtures in tests).
pub fn frame_v1(payload: &[u8], ss: u64) -> Vec<u8> {
    let mut e = Enc::with_capacity(payload.len() + CHUNK_HEADER_V1 + ss as usize);
    e.u32(LOG_MAGIC_V1);
    e.u32(0);
    e.u32(payload.len() as u32);
    e.raw(payload);
    let mut b = e.into_bytes();
    let c = crc(&b[8..]);
    b[4..8].copy_from_slice(&c.to_le_bytes());
    let n = (b.len() as u64).div_ceil(ss.max(1)) * ss.max(1);
    b.resize(n as usize, 0);
    b
}

/// The payload of the chunk at the start of `buf`, checked: `Ok(None)` when `buf` holds no
/// chunk magic, `Err` when a chunk is there but damaged or cut short.
pub fn chunk_payload(buf: &[u8]) -> Result<Option<&[u8]>, String> {
    let (version, len, header) = match read_head(buf) {
        Head::Missing => return Ok(None),
        Head::Damaged(w) => return Err(w),
        Head::Chunk {
            version,
            len,
            header,
        } => (version, len, header),
    };
    let end = header
        .checked_add(len as usize)
        .filter(|&e| e <= buf.len())
        .ok_or_else(|| format!("chunk of {len} bytes runs past the data"))?;
    let (covered, stored) = if version == 2 {
        (
            &buf[header..end],
            u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]),
        )
    } else {
        (
            &buf[8..end],
            u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]),
        )
    };
    if crc(covered) != stored {
        return Err("log chunk checksum mismatch".into());
    }
    Ok(Some(&buf[header..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_versions_frame_and_every_header_flip_is_detected() {
        let payload = b"some records".to_vec();
        for (f, version, header) in [
            (frame(&payload, 512), 2, CHUNK_HEADER),
            (frame_v1(&payload, 512), 1, CHUNK_HEADER_V1),
        ] {
            assert_eq!(f.len(), 512);
            assert_eq!(chunk_payload(&f).unwrap(), Some(&payload[..]));
            assert!(matches!(read_head(&f), Head::Chunk { version: v, .. } if v == version));
            // Every byte of header and payload (the padding after them is not covered).
            for i in 0..header + payload.len() {
                let mut b = f.clone();
                b[i] ^= 0x10;
                let r = chunk_payload(&b);
                assert!(!matches!(r, Ok(Some(_))), "v{version} flip at {i}");
                if version == 2 && i < CHUNK_HEADER {
                    // Any damage to a version 2 header is seen in the header itself.
                    assert!(!matches!(read_head(&b), Head::Chunk { .. }), "flip at {i}");
                }
            }
        }
        assert_eq!(chunk_payload(&[0u8; 512]), Ok(None));
        assert!(chunk_payload(&frame(&payload, 512)[..20]).is_err());
    }
}
