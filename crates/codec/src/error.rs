//! The decoder's typed error: where the bytes ran out or stopped making sense.

/// Why a [`crate::Dec`] read failed. Every variant names the byte offset where it applies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer bytes were left than the value needs (a torn or short record).
    #[error("truncated at offset {at}: need {need} bytes, {left} left")]
    Truncated {
        /// Offset of the read.
        at: usize,
        /// Bytes the read needed.
        need: usize,
        /// Bytes that were left.
        left: usize,
    },
    /// A varint ran over its 10-byte maximum.
    #[error("malformed varint at offset {at}")]
    Varint {
        /// Offset where the varint starts.
        at: usize,
    },
    /// A value that decodes but cannot be right (an unknown tag, a count larger than the
    /// record, trailing bytes): the format's decoder names what.
    #[error("malformed record at byte {at}: {what}")]
    Invalid {
        /// Offset of the decoder when the value was judged.
        at: usize,
        /// What was wrong.
        what: &'static str,
    },
    /// A length prefix does not fit this machine's address space.
    #[error("length {len} at offset {at} is too large")]
    Length {
        /// Offset of the length prefix.
        at: usize,
        /// The decoded length.
        len: u64,
    },
}
