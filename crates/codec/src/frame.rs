//! The checksummed frames of every structure tegula persists. Three shapes exist on disk:
//!
//! * [`Format`]: magic, version, a sequence (or generation) number, the payload length, the
//!   payload, and a CRC-32C (plain or masked, [`Crc`]) over everything before it, in one of
//!   three header layouts:
//!
//! ```text
//! slot   (state slots of disk and dm-smr images, 8-byte magic):
//!  0  m  magic    m  4  version u32   m+4  4  payload length u32   m+8  8  sequence u64
//! record (metadata log frames, 4-byte magic):
//!  0  m  magic    m  1  version u8    m+1  1  kind u8   m+2  2  reserved 0
//!                 m+4  8  generation u64   m+12  4  payload length u32
//! copy   (SMRDB's manifest copies, 8-byte magic):
//!  0  m  magic    m  4  version u32   m+4  8  generation u64   m+12  4  payload length u32
//! all: header, payload, then crc u32 over [0, header + payload length)
//! ```
//!
//! * [`Suffix`]: `body | crc u32` for a structure whose header is its own (a superblock at
//!   fixed offsets, a block whose counts place the checksum): the structure encodes its
//!   fields and checks its magic and version, the suffix seals and opens.
//! * [`SealedHeader`]: `magic | fields | payload crc u32 | header crc u32 | payload`, a header
//!   checked on its own before its payload.
//!
//! Each reports *what* failed ([`FrameError`]); whether a failing frame is a torn tail to
//! stop at or corruption to refuse is the caller's decision, since it depends on where the
//! frame sits (a log's last record, one of two alternating slots).

use crate::dec::Dec;
use crate::enc::Enc;
use crate::error::DecodeError;

mod sealed;
mod suffix;

pub use sealed::{Sealed, SealedHeader};
pub use suffix::{Crc, Suffix};

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
    /// magic, version u32, generation u64, payload length u32.
    Copy,
}

/// One framed structure: its name (for messages), magic, the version it writes and the
/// oldest it reads, header layout and checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    name: &'static str,
    magic: &'static [u8],
    version: u32,
    min_version: u32,
    layout: Layout,
    crc: Crc,
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Format version.
    pub version: u32,
    /// Kind of a record frame (0 for slots and copies, which have none).
    pub kind: u8,
    /// Sequence number (slots) or generation (records, copies).
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
    /// The checksum of a [`SealedHeader`] does not match the header: the header itself is
    /// damaged (its payload is not looked at).
    #[error("{name} header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    HeaderChecksum {
        /// The structure's name.
        name: &'static str,
        /// Checksum stored in the header.
        stored: u32,
        /// Checksum of the header read.
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
            min_version: version,
            layout: Layout::Slot,
            crc: Crc::Plain,
        }
    }

    /// A copy format: `magic`, then version, generation and payload length.
    pub const fn copy(name: &'static str, magic: &'static [u8], version: u32) -> Self {
        Format {
            name,
            magic,
            version,
            min_version: version,
            layout: Layout::Copy,
            crc: Crc::Plain,
        }
    }

    /// The same format, also reading versions `min_version` up to the one it writes (their
    /// frames are alike; what differs is the caller's to tell by [`Header::version`]).
    pub const fn reading_from(self, min_version: u32) -> Self {
        Format {
            min_version,
            ..self
        }
    }

    /// The same format with a masked CRC-32C ([`Crc::Masked`]).
    pub const fn masked(self) -> Self {
        Format {
            crc: Crc::Masked,
            ..self
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
            min_version: version as u32,
            layout: Layout::Record { kinds },
            crc: Crc::Plain,
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

    /// The version it writes.
    pub const fn version(&self) -> u32 {
        self.version
    }

    /// The checksum it stores.
    pub const fn crc(&self) -> Crc {
        self.crc
    }

    /// Bytes before the payload.
    pub const fn header_len(&self) -> usize {
        self.magic.len()
            + match self.layout {
                Layout::Slot | Layout::Copy => 4 + 4 + 8,
                Layout::Record { .. } => 1 + 1 + 2 + 8 + 4,
            }
    }

    /// Bytes of a whole frame with `payload_len` payload bytes.
    pub const fn frame_len(&self, payload_len: usize) -> usize {
        self.header_len() + payload_len + CHECKSUM_LEN
    }

    /// Encodes one frame. `kind` is the record kind; slots and copies have none and take 0.
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
            Layout::Copy => {
                debug_assert_eq!(kind, 0, "copies have no kind");
                e.u32(self.version);
                e.u64(seq);
                e.u32(payload.len() as u32);
            }
        }
        e.raw(payload);
        self.suffix().seal(&mut e);
        e.into_bytes()
    }

    fn suffix(&self) -> Suffix {
        match self.crc {
            Crc::Plain => Suffix::plain(self.name),
            Crc::Masked => Suffix::masked(self.name),
        }
    }

    /// Decodes and checks a header (magic, version, kind) from the start of `b`; the checksum
    /// needs the payload and is checked by [`Self::decode`].
    pub fn decode_header(&self, b: &[u8]) -> Result<Header, FrameError> {
        self.read_header(&mut Dec::new(b), true)
    }

    /// The header at the start of `b` as written, checked for its magic only (not version,
    /// kind nor checksum): how many bytes to read before [`Self::decode`] judges them.
    pub fn peek_header(&self, b: &[u8]) -> Result<Header, FrameError> {
        self.read_header(&mut Dec::new(b), false)
    }

    fn read_header(&self, d: &mut Dec<'_>, check: bool) -> Result<Header, FrameError> {
        let name = self.name;
        if d.take(self.magic.len())? != self.magic {
            return Err(FrameError::Magic { name });
        }
        let check_version = |version: u32| {
            if check && !(self.min_version..=self.version).contains(&version) {
                return Err(FrameError::Version {
                    name,
                    found: version,
                });
            }
            Ok(version)
        };
        match self.layout {
            Layout::Slot => {
                let version = check_version(d.u32()?)?;
                let len = d.u32()?;
                let seq = d.u64()?;
                Ok(Header {
                    version,
                    kind: 0,
                    seq,
                    len,
                })
            }
            Layout::Copy => {
                let version = check_version(d.u32()?)?;
                let seq = d.u64()?;
                let len = d.u32()?;
                Ok(Header {
                    version,
                    kind: 0,
                    seq,
                    len,
                })
            }
            Layout::Record { kinds } => {
                let version = check_version(d.u8()?.into())?;
                let kind = d.u8()?;
                if check && !kinds.contains(&kind) {
                    return Err(FrameError::Kind { name, kind });
                }
                // Reserved: covered by the checksum, not interpreted.
                d.take(2)?;
                let seq = d.u64()?;
                let len = d.u32()?;
                Ok(Header {
                    version,
                    kind,
                    seq,
                    len,
                })
            }
        }
    }

    /// Decodes one frame from the start of `b` (which may hold more bytes after it), checking
    /// magic, version, kind, length and checksum.
    pub fn decode<'a>(&self, b: &'a [u8]) -> Result<Frame<'a>, FrameError> {
        let mut d = Dec::new(b);
        let header = self.read_header(&mut d, true)?;
        let payload = d.take(header.len as usize)?;
        let at = d.pos();
        self.suffix().open_at(b, at)?;
        let total = at + CHECKSUM_LEN;
        Ok(Frame {
            header,
            payload,
            total,
        })
    }
}

/// Appends the CRC-32C of everything `e` holds (the trailer of a frame, or of a header that
/// frames itself): [`Suffix::seal`] of a plain suffix.
pub fn seal(e: &mut Enc) {
    Suffix::plain("").seal(e);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::{crc32c, masked_crc32c};

    const SLOT: Format = Format::slot("state", b"TESTSLOT", 3);
    const REC: Format = Format::record("frame", b"TREC", 1, &[1, 2]);
    const COPY: Format = Format::copy("manifest", b"TESTCOPY", 3)
        .reading_from(1)
        .masked();

    #[test]
    fn header_lengths_match_the_layouts() {
        assert_eq!(SLOT.header_len(), 24);
        assert_eq!(REC.header_len(), 20);
        assert_eq!(REC.frame_len(5), 29);
        assert_eq!(COPY.header_len(), 24);
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
    fn copy_bytes_follow_the_layout_with_a_masked_crc() {
        let f = COPY.encode(0, 7, b"body");
        let mut want = b"TESTCOPY".to_vec();
        want.extend_from_slice(&3u32.to_le_bytes());
        want.extend_from_slice(&7u64.to_le_bytes());
        want.extend_from_slice(&4u32.to_le_bytes());
        want.extend_from_slice(b"body");
        let crc = masked_crc32c(&want);
        want.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(f, want);
    }

    /// `COPY`'s frame with version `v`, checksum recomputed.
    fn copy_of_version(v: u32) -> Vec<u8> {
        let mut f = COPY.encode(0, 7, b"body");
        f[8..12].copy_from_slice(&v.to_le_bytes());
        let n = f.len() - CHECKSUM_LEN;
        let crc = masked_crc32c(&f[..n]);
        f[n..].copy_from_slice(&crc.to_le_bytes());
        f
    }

    #[test]
    fn a_version_range_is_read_and_the_header_names_the_version() {
        for v in 1..=3 {
            let f = copy_of_version(v);
            assert_eq!(COPY.decode(&f).expect("decodes").header.version, v);
        }
        for v in [0, 4] {
            let f = copy_of_version(v);
            assert_eq!(
                COPY.decode(&f),
                Err(FrameError::Version {
                    name: "manifest",
                    found: v
                })
            );
            // A peek reads the header as written.
            let h = COPY.peek_header(&f).expect("peeks");
            assert_eq!((h.version, h.seq, h.len), (v, 7, 4));
        }
        assert!(matches!(
            COPY.peek_header(b"TESTCOP"),
            Err(FrameError::Truncated(_))
        ));
        assert_eq!(
            COPY.peek_header(&[0; 32]),
            Err(FrameError::Magic { name: "manifest" })
        );
        // A record's kind is not checked by a peek either.
        let mut r = REC.encode(1, 1, b"");
        r[5] = 9;
        assert_eq!(REC.peek_header(&r).map(|h| h.kind), Ok(9));
        assert_eq!(SLOT.version(), 3);
        assert_eq!((SLOT.crc(), COPY.crc()), (Crc::Plain, Crc::Masked));
    }

    #[test]
    fn frames_round_trip_with_trailing_bytes() {
        for (fmt, kind) in [(SLOT, 0), (REC, 1), (COPY, 0)] {
            let mut f = fmt.encode(kind, 42, b"payload");
            let n = f.len();
            f.extend_from_slice(&[0xaa; 17]);
            let got = fmt.decode(&f).expect("decode");
            assert_eq!(
                got.header,
                Header {
                    version: fmt.version(),
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
        for (fmt, kind) in [(SLOT, 0), (REC, 2), (COPY, 0)] {
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
        for (fmt, kind) in [(SLOT, 0), (REC, 1), (COPY, 0)] {
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
