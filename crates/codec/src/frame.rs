//! The checksummed frame around every record tegula persists: magic, version, a sequence (or
//! generation) number, the payload length, the payload, and a CRC-32C over everything before
//! it. Two header layouts exist on disk, both described by a [`Format`]:
//!
//! ```text
//! slot   (state slots of disk and dm-smr images, 8-byte magic):
//!  0  m  magic    m  4  version u32   m+4  4  payload length u32   m+8  8  sequence u64
//! record (metadata log frames, 4-byte magic):
//!  0  m  magic    m  1  version u8    m+1  1  kind u8   m+2  2  reserved 0
//!                 m+4  8  generation u64   m+12  4  payload length u32
//! both: header, payload, then crc32c u32 over [0, header + payload length)
//! ```
//!
//! The frame reports *what* failed ([`FrameError`]); whether a failing frame is a torn tail to
//! stop at or corruption to refuse is the caller's decision, since it depends on where the
//! frame sits (a log's last record, one of two alternating slots).

use crate::checksum::crc32c;
use crate::dec::Dec;
use crate::enc::Enc;
use crate::error::DecodeError;

/// The header layout of a [`Format`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// magic, version u32, payload length u32, sequence u64.
    Slot,
    /// magic, version u8, kind u8 (one of `kinds`), 2 reserved bytes, generation u64,
    /// payload length u32.
    Record {
        /// The kinds a decoder accepts.
        kinds: &'static [u8],
    },
}

/// One framed structure: its name (for messages), magic, version and header layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    name: &'static str,
    magic: &'static [u8],
    version: u32,
    layout: Layout,
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Kind of a record frame (0 for slots, which have none).
    pub kind: u8,
    /// Sequence number (slots) or generation (records).
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
}

/// A decoded, checksum-verified frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Its header.
    pub header: Header,
    /// The payload.
    pub payload: &'a [u8],
    /// Bytes of the whole frame (header, payload, checksum): where the next frame starts.
    pub total: usize,
}

/// Why a frame did not decode. The decoder stops at the first check that fails, in the order
/// magic, version, kind, length (truncation), checksum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The bytes ended inside the frame (a short read or a torn write).
    #[error(transparent)]
    Truncated(#[from] DecodeError),
    /// The magic is wrong (not this structure, or never written).
    #[error("bad {name} magic")]
    Magic {
        /// The structure's name.
        name: &'static str,
    },
    /// A version this build does not read.
    #[error("unsupported {name} version {found}")]
    Version {
        /// The structure's name.
        name: &'static str,
        /// The version found.
        found: u32,
    },
    /// A record kind the format does not define.
    #[error("unknown {name} kind {kind}")]
    Kind {
        /// The structure's name.
        name: &'static str,
        /// The kind found.
        kind: u8,
    },
    /// The stored checksum does not match the bytes.
    #[error("{name} checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        /// The structure's name.
        name: &'static str,
        /// Checksum stored in the frame.
        stored: u32,
        /// Checksum of the bytes read.
        computed: u32,
    },
}

/// Bytes of the checksum that ends every frame.
pub const CHECKSUM_LEN: usize = 4;

impl Format {
    /// A slot format: `magic`, then version, payload length and sequence.
    pub const fn slot(name: &'static str, magic: &'static [u8], version: u32) -> Self {
        Format {
            name,
            magic,
            version,
            layout: Layout::Slot,
        }
    }

    /// A record format: `magic`, then version, kind (one of `kinds`), reserved, generation and
    /// payload length.
    pub const fn record(
        name: &'static str,
        magic: &'static [u8],
        version: u8,
        kinds: &'static [u8],
    ) -> Self {
        Format {
            name,
            magic,
            version: version as u32,
            layout: Layout::Record { kinds },
        }
    }

    /// The name used in error messages.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The header layout.
    pub const fn layout(&self) -> Layout {
        self.layout
    }

    /// Bytes before the payload.
    pub const fn header_len(&self) -> usize {
        self.magic.len()
            + match self.layout {
                Layout::Slot => 4 + 4 + 8,
                Layout::Record { .. } => 1 + 1 + 2 + 8 + 4,
            }
    }

    /// Bytes of a whole frame with `payload_len` payload bytes.
    pub const fn frame_len(&self, payload_len: usize) -> usize {
        self.header_len() + payload_len + CHECKSUM_LEN
    }

    /// Encodes one frame. `kind` is the record kind; slots have none and take 0.
    pub fn encode(&self, kind: u8, seq: u64, payload: &[u8]) -> Vec<u8> {
        let mut e = Enc::with_capacity(self.frame_len(payload.len()));
        e.raw(self.magic);
        match self.layout {
            Layout::Slot => {
                debug_assert_eq!(kind, 0, "slots have no kind");
                e.u32(self.version);
                e.u32(payload.len() as u32);
                e.u64(seq);
            }
            Layout::Record { .. } => {
                e.u8(self.version as u8);
                e.u8(kind);
                e.u16(0);
                e.u64(seq);
                e.u32(payload.len() as u32);
            }
        }
        e.raw(payload);
        seal(&mut e);
        e.into_bytes()
    }

    /// Decodes and checks a header (magic, version, kind) from the start of `b`; the checksum
    /// needs the payload and is checked by [`Self::decode`].
    pub fn decode_header(&self, b: &[u8]) -> Result<Header, FrameError> {
        self.read_header(&mut Dec::new(b))
    }

    fn read_header(&self, d: &mut Dec<'_>) -> Result<Header, FrameError> {
        let name = self.name;
        if d.take(self.magic.len())? != self.magic {
            return Err(FrameError::Magic { name });
        }
        match self.layout {
            Layout::Slot => {
                let version = d.u32()?;
                if version != self.version {
                    return Err(FrameError::Version {
                        name,
                        found: version,
                    });
                }
                let len = d.u32()?;
                let seq = d.u64()?;
                Ok(Header { kind: 0, seq, len })
            }
            Layout::Record { kinds } => {
                let version = d.u8()?;
                if u32::from(version) != self.version {
                    return Err(FrameError::Version {
                        name,
                        found: version.into(),
                    });
                }
                let kind = d.u8()?;
                if !kinds.contains(&kind) {
                    return Err(FrameError::Kind { name, kind });
                }
                // Reserved: covered by the checksum, not interpreted.
                d.take(2)?;
                let seq = d.u64()?;
                let len = d.u32()?;
                Ok(Header { kind, seq, len })
            }
        }
    }

    /// Decodes one frame from the start of `b` (which may hold more bytes after it), checking
    /// magic, version, kind, length and checksum.
    pub fn decode<'a>(&self, b: &'a [u8]) -> Result<Frame<'a>, FrameError> {
        let mut d = Dec::new(b);
        let header = self.read_header(&mut d)?;
        let payload = d.take(header.len as usize)?;
        let stored = d.u32()?;
        let total = d.pos();
        let computed = crc32c(&b[..total - CHECKSUM_LEN]);
        if stored != computed {
            return Err(FrameError::Checksum {
                name: self.name,
                stored,
                computed,
            });
        }
        Ok(Frame {
            header,
            payload,
            total,
        })
    }
}

/// Appends the CRC-32C of everything `e` holds (the trailer of a frame, or of a header that
/// frames itself).
pub fn seal(e: &mut Enc) {
    let crc = crc32c(e.as_bytes());
    e.u32(crc);
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOT: Format = Format::slot("state", b"TESTSLOT", 3);
    const REC: Format = Format::record("frame", b"TREC", 1, &[1, 2]);

    #[test]
    fn header_lengths_match_the_layouts() {
        assert_eq!(SLOT.header_len(), 24);
        assert_eq!(REC.header_len(), 20);
        assert_eq!(REC.frame_len(5), 29);
    }

    #[test]
    fn slot_bytes_follow_the_layout() {
        let f = SLOT.encode(0, 9, b"ab");
        let mut want = b"TESTSLOT".to_vec();
        want.extend_from_slice(&3u32.to_le_bytes());
        want.extend_from_slice(&2u32.to_le_bytes());
        want.extend_from_slice(&9u64.to_le_bytes());
        want.extend_from_slice(b"ab");
        let crc = crc32c(&want);
        want.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(f, want);
    }

    #[test]
    fn record_bytes_follow_the_layout() {
        let f = REC.encode(2, 7, b"hello");
        let mut want = b"TREC".to_vec();
        want.extend_from_slice(&[1, 2, 0, 0]);
        want.extend_from_slice(&7u64.to_le_bytes());
        want.extend_from_slice(&5u32.to_le_bytes());
        want.extend_from_slice(b"hello");
        let crc = crc32c(&want);
        want.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(f, want);
    }

    #[test]
    fn frames_round_trip_with_trailing_bytes() {
        for (fmt, kind) in [(SLOT, 0), (REC, 1)] {
            let mut f = fmt.encode(kind, 42, b"payload");
            let n = f.len();
            f.extend_from_slice(&[0xaa; 17]);
            let got = fmt.decode(&f).expect("decode");
            assert_eq!(
                got.header,
                Header {
                    kind,
                    seq: 42,
                    len: 7
                }
            );
            assert_eq!(got.payload, b"payload");
            assert_eq!(got.total, n);
            assert_eq!(fmt.decode_header(&f), Ok(got.header));
        }
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        for (fmt, kind) in [(SLOT, 0), (REC, 2)] {
            let f = fmt.encode(kind, 5, b"some payload");
            for i in 0..f.len() {
                for bit in [0x01, 0x10, 0x80] {
                    let mut bad = f.clone();
                    bad[i] ^= bit;
                    assert!(
                        fmt.decode(&bad).is_err(),
                        "{}: flip {bit:#x} at {i}",
                        fmt.name()
                    );
                }
            }
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        for (fmt, kind) in [(SLOT, 0), (REC, 1)] {
            let f = fmt.encode(kind, 5, b"xyz");
            for n in 0..f.len() {
                assert!(
                    matches!(fmt.decode(&f[..n]), Err(FrameError::Truncated(_))),
                    "{}: {n} bytes",
                    fmt.name()
                );
            }
        }
    }

    #[test]
    fn checks_run_in_order_and_name_the_structure() {
        let f = REC.encode(1, 1, b"x");
        let mut bad = f.clone();
        bad[0] ^= 1;
        assert_eq!(REC.decode(&bad), Err(FrameError::Magic { name: "frame" }));
        let mut bad = f.clone();
        bad[4] = 9;
        assert_eq!(
            REC.decode(&bad).unwrap_err().to_string(),
            "unsupported frame version 9"
        );
        let mut bad = f.clone();
        bad[5] = 3;
        assert_eq!(
            REC.decode(&bad),
            Err(FrameError::Kind {
                name: "frame",
                kind: 3
            })
        );
        let mut bad = f.clone();
        bad[20] ^= 1;
        assert!(matches!(
            REC.decode(&bad),
            Err(FrameError::Checksum { name: "frame", .. })
        ));
        let s = SLOT.encode(0, 1, b"");
        assert_eq!(
            SLOT.decode(&s[..10]).unwrap_err().to_string(),
            "truncated at offset 8: need 4 bytes, 2 left"
        );
        // An all-zero (never written) region is a bad magic, not a panic.
        assert_eq!(
            SLOT.decode(&[0u8; 64]),
            Err(FrameError::Magic { name: "state" })
        );
    }

    #[test]
    fn a_huge_length_is_truncation_not_an_allocation() {
        let mut f = SLOT.encode(0, 1, b"");
        f[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(SLOT.decode(&f), Err(FrameError::Truncated(_))));
    }
}
