//! The metadata frame: magic, version, kind, generation, length and CRC-32C around a payload
//! (both versions), and its encoder and decoders.

use super::*;

/// Magic of every metadata frame.
pub const FRAME_MAGIC: [u8; 4] = *b"TGLM";
/// Current frame format version: payloads carry the media's damage (see `damage.rs`).
pub const FRAME_VERSION: u8 = 2;
/// The first frame format version (payloads without damage), still read.
pub const FRAME_VERSION_V1: u8 = 1;
/// Frame kind: a checkpoint of the whole layer state.
pub const KIND_CHECKPOINT: u8 = 1;
/// Frame kind: one committed record.
pub const KIND_RECORD: u8 = 2;
/// Frame kind: a copy of the last record, written right after it (the next record is written
/// over it). It tells a damaged last record, written whole, from one a crash tore, and
/// recovers it.
pub const KIND_TAIL_COPY: u8 = 3;
/// Frame kind: a seal, written after the old slot's records once the next generation's
/// checkpoint is synced; its payload is that generation (u64 LE). It proves the checkpoint
/// complete, so a damaged one is corruption, never a torn write to fall back from.
pub const KIND_SEAL: u8 = 4;
/// The metadata frame as written: a record frame (magic, version, kind, generation, length,
/// CRC-32C) of version 2.
pub const FRAME_FORMAT: Format = Format::record(
    "frame",
    &FRAME_MAGIC,
    FRAME_VERSION,
    &[KIND_CHECKPOINT, KIND_RECORD, KIND_TAIL_COPY, KIND_SEAL],
);
/// The same frame of version 1 (written by builds before the damage moved into the log).
pub const FRAME_FORMAT_V1: Format = Format::record(
    "frame",
    &FRAME_MAGIC,
    FRAME_VERSION_V1,
    &[KIND_CHECKPOINT, KIND_RECORD],
);
/// Bytes of a frame before its payload.
pub const FRAME_HEADER: usize = FRAME_FORMAT.header_len();
/// Largest record payload appended; a record that would be larger is folded into a new
/// checkpoint instead, so that a generation's records end within a known distance of its
/// checkpoint (the window the loader searches for records after a damaged frame).
pub const MAX_RECORD_PAYLOAD: usize = 1 << 20;
/// Records are compacted into a new checkpoint once they exceed this many bytes and the size
/// of the last checkpoint.
pub(super) const COMPACT_MIN: u64 = 1 << 20;
/// Bytes read at a time when searching a slot for frames.
pub(super) const SCAN_CHUNK: usize = 1 << 20;

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Frame format version ([`FRAME_VERSION_V1`] or [`FRAME_VERSION`]).
    pub version: u8,
    /// [`KIND_CHECKPOINT`], [`KIND_RECORD`], [`KIND_TAIL_COPY`] or [`KIND_SEAL`].
    pub kind: u8,
    /// Generation: the checkpoint's, shared by the records after it.
    pub gen: u64,
    /// Payload bytes.
    pub len: u32,
}

impl FrameHeader {
    fn from(version: u8, h: Header) -> Self {
        FrameHeader {
            version,
            kind: h.kind,
            gen: h.seq,
            len: h.len,
        }
    }
}

/// The format of the frame starting at `b` (by its version byte; the current one when the
/// bytes are too short to tell, so that decoding reports the real problem).
pub(super) fn format_of(b: &[u8]) -> (u8, Format) {
    match b.get(FRAME_MAGIC.len()) {
        Some(&FRAME_VERSION_V1) => (FRAME_VERSION_V1, FRAME_FORMAT_V1),
        _ => (FRAME_VERSION, FRAME_FORMAT),
    }
}

/// Encodes one frame of the current version: header, payload, CRC-32C over both.
pub fn encode_frame(kind: u8, gen: u64, payload: &[u8]) -> Vec<u8> {
    FRAME_FORMAT.encode(kind, gen, payload)
}

/// Decodes a frame header of either version (no checksum yet: the payload is needed for that).
pub fn decode_frame_header(b: &[u8]) -> std::result::Result<FrameHeader, FrameError> {
    let (v, f) = format_of(b);
    Ok(FrameHeader::from(v, f.decode_header(b)?))
}

/// Decodes a whole frame of either version from `b` (which may hold more bytes after it):
/// returns the header, the payload and the frame's total length.
pub fn decode_frame(b: &[u8]) -> std::result::Result<(FrameHeader, &[u8], usize), FrameError> {
    let (v, f) = format_of(b);
    let fr = f.decode(b)?;
    Ok((FrameHeader::from(v, fr.header), fr.payload, fr.total))
}
