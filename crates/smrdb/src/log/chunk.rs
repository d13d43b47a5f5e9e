//! Log chunks: one per device write, framing a run of batch records. Version 2 (written):
//!
//! `magic "SLG2" | len u32 | payload crc u32 | header crc u32 | payload (len bytes) | zero
//! padding to a sector`
//!
//! or, the same layout with magic "SLC2", a *continued* chunk: whole sectors whose payload
//! may end inside a record, which goes on in the band's next chunk (or, until that is
//! written, in a log tail slot naming the sector after it). A record larger than a sector
//! then costs its bytes in the band, not a padded sector more.
//!
//! where the header crc (masked crc32c) covers the 12 bytes before it and the payload crc the
//! payload: the codec's sealed header [`CHUNK_FRAME`], with the length as its one field.
//! Version 1 (read only; written before the header had its own checksum):
//!
//! `magic "SLOG" | crc u32 (of len and payload) | len u32 | payload | padding`
//!
//! whose crc, stored before the bytes it covers, is checked by the suffix [`CHUNK_V1_CRC`].
//!
//! With the header checked on its own, a chunk that claims to run past the zone's write pointer
//! is known to be one a power cut tore (its header sector reached the media intact), never a
//! damaged length field; see [`super::replay`].

use tegula_codec::frame::{FrameError, SealedHeader, Suffix};
use tegula_codec::{Dec, Enc, FormatError};

/// Magic of a version 2 chunk (the one written).
pub const LOG_MAGIC: u32 = u32::from_le_bytes(*b"SLG2");
/// Magic of a version 1 chunk (still read).
pub const LOG_MAGIC_V1: u32 = u32::from_le_bytes(*b"SLOG");
/// The header of a version 2 chunk: magic "SLG2", len u32, payload crc, header crc (masked).
pub const CHUNK_FRAME: SealedHeader = SealedHeader::new("log chunk", b"SLG2", 4).masked();
/// Magic of a continued version 2 chunk (its last record may go on in the next chunk).
pub const LOG_MAGIC_CONTINUED: u32 = u32::from_le_bytes(*b"SLC2");
/// The header of a continued chunk: [`CHUNK_FRAME`]'s layout with magic "SLC2".
pub const CONTINUED_FRAME: SealedHeader =
    SealedHeader::new("continued log chunk", b"SLC2", 4).masked();
/// The checksum of a version 1 chunk (masked, of its length and payload).
pub const CHUNK_V1_CRC: Suffix = Suffix::masked("log chunk");
/// Bytes of a version 2 chunk header.
pub const CHUNK_HEADER: usize = CHUNK_FRAME.header_len();
/// Bytes of a version 1 chunk header.
pub const CHUNK_HEADER_V1: usize = 12;

/// What the bytes at a chunk boundary hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// No chunk magic (an unwritten sector reads as zeros).
    Missing,
    /// A chunk magic whose header is damaged (version 2: its checksum fails) or cut short.
    Damaged(FrameError),
    /// A chunk header: format version, payload length and the bytes before the payload.
    Chunk {
        /// 1 or 2.
        version: u32,
        /// Payload bytes.
        len: u32,
        /// Header bytes before the payload.
        header: usize,
        /// A continued chunk ("SLC2"): its payload may end inside a record.
        continued: bool,
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
    for (frame, continued) in [(CHUNK_FRAME, false), (CONTINUED_FRAME, true)] {
        if frame.has_magic(b) {
            return match frame.open(b).and_then(|h| Ok(h.dec().u32()?)) {
                Ok(len) => Head::Chunk {
                    version: 2,
                    len,
                    header: CHUNK_HEADER,
                    continued,
                },
                Err(e) => Head::Damaged(e),
            };
        }
    }
    if b.starts_with(&LOG_MAGIC_V1.to_le_bytes()) {
        let mut r = Dec::new(b);
        return match r.take(8).and_then(|_| r.u32()) {
            Ok(len) => Head::Chunk {
                version: 1,
                len,
                header: CHUNK_HEADER_V1,
                continued: false,
            },
            Err(e) => Head::Damaged(e.into()),
        };
    }
    Head::Missing
}

/// Fills the header of a version 2 chunk whose payload follows at `buf[CHUNK_HEADER..]`
/// (a continued one, "SLC2", when `continued`).
pub fn seal(buf: &mut [u8], continued: bool) {
    let len = buf.len().saturating_sub(CHUNK_HEADER) as u32;
    frame_of(continued).seal_in_place(buf, &len.to_le_bytes());
}

/// The sealed header of a version 2 chunk of either kind.
fn frame_of(continued: bool) -> SealedHeader {
    if continued {
        CONTINUED_FRAME
    } else {
        CHUNK_FRAME
    }
}

/// Frames a payload as a version 2 chunk padded to whole sectors of `ss` bytes.
pub fn frame(payload: &[u8], ss: u64) -> Vec<u8> {
    frame_as(payload, ss, false)
}

/// Frames a payload as a continued chunk ("SLC2"; tests and fuzzing: the engine frames its
/// continued chunks in place, whole sectors without padding).
pub fn frame_continued(payload: &[u8], ss: u64) -> Vec<u8> {
    frame_as(payload, ss, true)
}

fn frame_as(payload: &[u8], ss: u64, continued: bool) -> Vec<u8> {
    let mut b = Vec::with_capacity(payload.len() + CHUNK_HEADER + ss as usize);
    b.resize(CHUNK_HEADER, 0);
    b.extend_from_slice(payload);
    seal(&mut b, continued);
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
    let c = CHUNK_V1_CRC.crc().of(&b[8..]);
    b[4..8].copy_from_slice(&c.to_le_bytes());
    let n = (b.len() as u64).div_ceil(ss.max(1)) * ss.max(1);
    b.resize(n as usize, 0);
    b
}

/// The payload of the chunk at the start of `buf`, checked: `Ok(None)` when `buf` holds no
/// chunk magic, `Err` when a chunk is there but damaged ([`FrameError::HeaderChecksum`],
/// [`FrameError::Checksum`]) or cut short ([`FrameError::Truncated`]).
pub fn chunk_payload(buf: &[u8]) -> Result<Option<&[u8]>, FormatError> {
    let (version, len, header, continued) = match read_head(buf) {
        Head::Missing => return Ok(None),
        Head::Damaged(e) => return Err(e.into()),
        Head::Chunk {
            version,
            len,
            header,
            continued,
        } => (version, len, header, continued),
    };
    let mut d = Dec::new(buf);
    d.take(header).map_err(FrameError::from)?;
    let payload = d.take(len as usize).map_err(FrameError::from)?;
    if version == 2 {
        let frame = frame_of(continued);
        let h = frame.open(buf)?;
        frame.check_payload(&h, payload)?;
    } else {
        let mut r = Dec::new(buf);
        r.take(4).map_err(FrameError::from)?;
        let stored = r.u32().map_err(FrameError::from)?;
        CHUNK_V1_CRC.verify(&buf[8..header + payload.len()], stored)?;
    }
    Ok(Some(payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_versions_frame_and_every_header_flip_is_detected() {
        let payload = b"some records".to_vec();
        for (f, version, header) in [
            (frame(&payload, 512), 2, CHUNK_HEADER),
            (frame_continued(&payload, 512), 2, CHUNK_HEADER),
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
        assert!(matches!(
            read_head(&frame_continued(&payload, 512)),
            Head::Chunk {
                continued: true,
                ..
            }
        ));
        // The magic is under the header checksum: a chunk cannot pass for the other kind.
        let mut swapped = frame(&payload, 512);
        swapped[1] = b'L';
        swapped[2] = b'C';
        assert!(matches!(read_head(&swapped), Head::Damaged(_)));
        assert!(matches!(
            chunk_payload(&frame(&payload, 512)[..20]),
            Err(FormatError::Frame(FrameError::Truncated(_)))
        ));
    }

    /// The bytes of the documented layouts (`docs/formats/smrdb.md`): a version 2 chunk, and
    /// a version 1 chunk as engines before it wrote it, which still decodes.
    #[test]
    fn bytes_follow_the_documented_layouts() {
        let crc = |b: &[u8]| tegula_codec::frame::Crc::Masked.of(b);
        let f = frame(b"abc", 512);
        let mut want = b"SLG2".to_vec();
        want.extend_from_slice(&3u32.to_le_bytes());
        want.extend_from_slice(&crc(b"abc").to_le_bytes());
        let hc = crc(&want);
        want.extend_from_slice(&hc.to_le_bytes());
        want.extend_from_slice(b"abc");
        want.resize(512, 0);
        assert_eq!(f, want);
        let mut v1 = b"SLOG".to_vec();
        let mut covered = 3u32.to_le_bytes().to_vec();
        covered.extend_from_slice(b"abc");
        v1.extend_from_slice(&crc(&covered).to_le_bytes());
        v1.extend_from_slice(&covered);
        v1.resize(512, 0);
        assert_eq!(frame_v1(b"abc", 512), v1);
        assert_eq!(chunk_payload(&v1), Ok(Some(&b"abc"[..])));
        let mut c = f.clone();
        c[..4].copy_from_slice(b"SLC2");
        let hc = crc(&c[..12]);
        c[12..16].copy_from_slice(&hc.to_le_bytes());
        assert_eq!(frame_continued(b"abc", 512), c);
        assert_eq!(read_head(&v1).sectors(512), 1);
    }

    #[test]
    fn damage_is_typed() {
        let f = frame(b"records", 512);
        let mut b = f.clone();
        b[5] ^= 1;
        assert!(matches!(
            read_head(&b),
            Head::Damaged(FrameError::HeaderChecksum {
                name: "log chunk",
                ..
            })
        ));
        let mut b = f.clone();
        b[CHUNK_HEADER] ^= 1;
        assert!(matches!(
            chunk_payload(&b),
            Err(FormatError::Frame(FrameError::Checksum { .. }))
        ));
        assert!(matches!(
            read_head(b"SLG2\x01"),
            Head::Damaged(FrameError::Truncated(_))
        ));
        assert!(matches!(
            read_head(b"SLOG\x01\x02"),
            Head::Damaged(FrameError::Truncated(_))
        ));
        assert_eq!(read_head(b"SLG"), Head::Missing);
    }
}
